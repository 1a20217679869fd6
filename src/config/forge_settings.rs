//! The settings the forge clients are built from, read from `[github]` and `[gitlab]`: which
//! credentials the keys name, and the refusals of keys that contradict each other.

use std::path::PathBuf;
use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};

use super::{GitHubSection, GitLabSection};
use crate::forge::ForgeError;
use crate::forge::github_api::{DEFAULT_API_URL, GitHubClientSettings, GitHubCredentials};
use crate::forge::gitlab_api::GitLabClientSettings;

impl GitHubSection {
    /// What the GitHub client is built from: the App when `app_id` or `private_key_path` is
    /// set, else the token; no credentials when neither is. An App with only one of the two
    /// is refused by name.
    pub fn client_settings(&self) -> Result<GitHubClientSettings, ForgeError> {
        let api_url = match self.api_url.trim() {
            "" => DEFAULT_API_URL.to_owned(),
            url => url.to_owned(),
        };
        let request_timeout =
            (self.request_timeout_secs > 0).then(|| Duration::from_secs(self.request_timeout_secs));
        Ok(GitHubClientSettings {
            api_url,
            credentials: self.credentials()?,
            request_timeout,
        })
    }

    fn credentials(&self) -> Result<Option<GitHubCredentials>, ForgeError> {
        let key_path = self.private_key_path.trim();
        match (self.app_id, key_path.is_empty()) {
            (0, true) => {}
            (0, false) => {
                return Err(ForgeError::Configuration(
                    "github.private_key_path is set but github.app_id is not: set the App's id"
                        .into(),
                ));
            }
            (_, true) => {
                return Err(ForgeError::Configuration(
                    "github.app_id is set but github.private_key_path is not: point it at the App's PEM key"
                        .into(),
                ));
            }
            (app_id, false) => {
                return Ok(Some(GitHubCredentials::App {
                    app_id,
                    private_key_path: PathBuf::from(key_path),
                }));
            }
        }
        let token = self.token.expose_secret().trim();
        Ok((!token.is_empty())
            .then(|| GitHubCredentials::Token(SecretString::from(token.to_owned()))))
    }
}

impl GitLabSection {
    /// What the GitLab client is built from: no token when none is set; with one, a request
    /// timeout of zero is refused by its key.
    pub fn client_settings(&self) -> Result<GitLabClientSettings, ForgeError> {
        let token = (!self.token.expose_secret().trim().is_empty()).then(|| self.token.clone());
        if token.is_some() && self.request_timeout_secs == 0 {
            return Err(ForgeError::Configuration(
                "gitlab.request_timeout_secs must be at least 1".into(),
            ));
        }
        Ok(GitLabClientSettings {
            api_url: self.api_url.clone(),
            token,
            request_timeout: Duration::from_secs(self.request_timeout_secs),
        })
    }
}
