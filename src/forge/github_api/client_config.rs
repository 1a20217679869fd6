//! What a GitHub client is built from: how it proves who it is, how patient it is, its
//! timeouts, and the client the settings read from the service configuration ask for.

use std::path::{Path, PathBuf};
use std::time::Duration;

use secrecy::{SecretSlice, SecretString};

use super::GitHubClient;
use crate::forge::{ForgeError, ForkWait};

/// How the client proves who it is.
pub enum GitHubAuth {
    /// A personal access token (classic or fine-grained).
    Token(SecretString),
    /// A GitHub App: its id and its private key (PEM, as GitHub hands it out).
    App {
        app_id: u64,
        private_key_pem: SecretSlice<u8>,
    },
}

/// How patient the client is on its own before handing a failure back to the caller.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    /// Attempts per request, the first included, for 5xx, timeouts, dead connections and
    /// rate limits it waits out.
    pub max_attempts: u32,
    /// The first wait after a transient fault; doubled after each further one.
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
    /// A rate limit asking for a longer wait than this is returned as `RateLimited`.
    pub max_rate_limit_wait: Duration,
    /// The wait after a secondary rate limit that names no time (GitHub's docs: at least 1 min).
    pub secondary_rate_limit_wait: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 4,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            max_rate_limit_wait: crate::forge::client::MAX_RATE_LIMIT_WAIT,
            secondary_rate_limit_wait: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The wait after the `attempt`-th (1-based) failed attempt.
    pub(super) fn backoff(&self, attempt: u32) -> Duration {
        let doublings = attempt.saturating_sub(1).min(16);
        self.initial_backoff
            .saturating_mul(1 << doublings)
            .min(self.max_backoff)
    }
}

/// Everything a [`GitHubClient`] is built from.
pub struct GitHubClientConfig {
    /// `https://api.github.com`, `https://HOST/api/v3`, or a test server's `/api/v3`.
    pub api_url: String,
    pub auth: GitHubAuth,
    /// Limit for one HTTP exchange, body included.
    pub timeout: Duration,
    pub retry: RetryPolicy,
    /// An installation token is fetched again once it is this close to its `expires_at`.
    pub token_refresh_margin: Duration,
    /// How long the bot's fork may take to become ready after GitHub accepted it.
    pub fork_wait: ForkWait,
}

impl GitHubClientConfig {
    /// `api_url` and `auth` with the default timeout (30 s), retries and 5 min token margin.
    pub fn new(api_url: impl Into<String>, auth: GitHubAuth) -> Self {
        GitHubClientConfig {
            api_url: api_url.into(),
            auth,
            timeout: Duration::from_secs(30),
            retry: RetryPolicy::default(),
            token_refresh_margin: Duration::from_secs(5 * 60),
            fork_wait: ForkWait::default(),
        }
    }
}

/// What the service configuration says of the GitHub client, its keys already read and
/// checked (`config` builds it from `[github]`).
#[derive(Debug, Clone)]
pub struct GitHubClientSettings {
    /// `https://api.github.com`, or a GitHub Enterprise Server's `https://HOST/api/v3`.
    pub api_url: String,
    /// How the client proves who it is; `None` when neither a token nor an App is configured.
    pub credentials: Option<GitHubCredentials>,
    /// Limit for one HTTP exchange; `None` keeps the client's default.
    pub request_timeout: Option<Duration>,
}

/// The credentials the configuration names: a token, or a GitHub App and its key file.
#[derive(Debug, Clone)]
pub enum GitHubCredentials {
    /// A personal access token (classic or fine-grained).
    Token(SecretString),
    /// A GitHub App: its id and the file holding its private key (PEM).
    App {
        app_id: u64,
        private_key_path: PathBuf,
    },
}

impl GitHubClient {
    /// The client the settings ask for, an App's key read from its file; `None` when they name
    /// no credentials.
    pub fn from_settings(
        settings: GitHubClientSettings,
    ) -> Result<Option<GitHubClient>, ForgeError> {
        let auth = match settings.credentials {
            None => return Ok(None),
            Some(GitHubCredentials::Token(token)) => GitHubAuth::Token(token),
            Some(GitHubCredentials::App {
                app_id,
                private_key_path,
            }) => GitHubAuth::App {
                app_id,
                private_key_pem: read_private_key(&private_key_path)?,
            },
        };
        let mut config = GitHubClientConfig::new(settings.api_url, auth);
        if let Some(timeout) = settings.request_timeout {
            config.timeout = timeout;
        }
        GitHubClient::new(config).map(Some)
    }
}

fn read_private_key(path: &Path) -> Result<SecretSlice<u8>, ForgeError> {
    let bytes = std::fs::read(path).map_err(|err| {
        ForgeError::Configuration(format!(
            "github.private_key_path `{}` cannot be read: {err}",
            path.display()
        ))
    })?;
    if !bytes.windows(10).any(|window| window == b"-----BEGIN") {
        return Err(ForgeError::Configuration(format!(
            "github.private_key_path `{}` is not a PEM file (expected -----BEGIN RSA PRIVATE KEY-----)",
            path.display()
        )));
    }
    Ok(SecretSlice::from(bytes))
}
