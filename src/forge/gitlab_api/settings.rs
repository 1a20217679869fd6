//! What the service configuration says of the GitLab client, its keys already read and checked
//! by `config`, and the client built from it.

use std::time::Duration;

use secrecy::SecretString;

use super::{GitLabClient, RetryPolicy};
use crate::forge::ForgeError;

/// What a [`GitLabClient`] is built from (`config` builds it from `[gitlab]`).
#[derive(Debug, Clone)]
pub struct GitLabClientSettings {
    /// `https://gitlab.com/api/v4`, or a self-managed instance's `/api/v4`.
    pub api_url: String,
    /// The token sent as `PRIVATE-TOKEN`; `None` when none is configured.
    pub token: Option<SecretString>,
    /// Limit for one HTTP exchange.
    pub request_timeout: Duration,
}

impl GitLabClient {
    /// The client the settings describe, with the default retry policy; `None` without a token.
    pub fn from_settings(
        settings: GitLabClientSettings,
    ) -> Result<Option<GitLabClient>, ForgeError> {
        let Some(token) = settings.token else {
            return Ok(None);
        };
        GitLabClient::new(
            &settings.api_url,
            token,
            settings.request_timeout,
            RetryPolicy::default(),
        )
        .map(Some)
        .map_err(|err| ForgeError::Configuration(format!("[gitlab]: {err}")))
    }
}
