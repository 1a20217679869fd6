//! GitHub App authentication: RS256 JWTs for the App's own routes, the installation of each
//! repository, and installation tokens cached until shortly before they expire.

use std::collections::HashMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use http::Method;
use octocrab::EncodingKey;
use octocrab::auth::create_jwt;
use octocrab::models::AppId;
use secrecy::{ExposeSecret, SecretSlice, SecretString};
use tokio::sync::Mutex;

use super::transport::{Call, Credential, Repeat, Transport};
use super::wire;
use crate::forge::{ForgeError, RepoRef};

/// A GitHub App's identity and what it learned about its installations.
pub(super) struct AppAuth {
    app_id: u64,
    key: EncodingKey,
    refresh_margin: Duration,
    installations: Mutex<HashMap<String, u64>>,
    tokens: Mutex<HashMap<u64, CachedToken>>,
}

struct CachedToken {
    token: SecretString,
    expires_at: DateTime<Utc>,
}

impl AppAuth {
    /// Reads the App's private key; `source` names where it came from for the error message.
    pub fn new(
        app_id: u64,
        private_key_pem: &SecretSlice<u8>,
        refresh_margin: Duration,
        source: &str,
    ) -> Result<AppAuth, ForgeError> {
        if app_id == 0 {
            return Err(ForgeError::Configuration(
                "github.app_id is 0: set the App's numeric id".into(),
            ));
        }
        let key = EncodingKey::from_rsa_pem(private_key_pem.expose_secret()).map_err(|err| {
            ForgeError::Configuration(format!(
                "{source} is not an RSA private key in PEM form ({err})"
            ))
        })?;
        Ok(AppAuth {
            app_id,
            key,
            refresh_margin,
            installations: Mutex::new(HashMap::new()),
            tokens: Mutex::new(HashMap::new()),
        })
    }

    /// A fresh JWT for the App's own routes (iat 60 s in the past, exp 9 min ahead).
    pub fn jwt(&self) -> Result<Credential, ForgeError> {
        create_jwt(AppId(self.app_id), &self.key)
            .map(|jwt| Credential::Jwt(SecretString::from(jwt)))
            .map_err(|err| {
                ForgeError::Configuration(format!("the GitHub App key cannot sign a JWT ({err})"))
            })
    }

    /// The installation token for `repo`, fetched only when none is cached or it nears expiry.
    pub async fn installation_token(
        &self,
        transport: &Transport,
        repo: &RepoRef,
    ) -> Result<SecretString, ForgeError> {
        let installation = self.installation_of(transport, repo).await?;
        let mut tokens = self.tokens.lock().await;
        if let Some(cached) = tokens
            .get(&installation)
            .filter(|cached| self.is_fresh(cached))
        {
            return Ok(cached.token.clone());
        }
        let fetched = self.fetch_token(transport, installation).await?;
        let token = fetched.token.clone();
        tokens.insert(installation, fetched);
        Ok(token)
    }

    /// Drops the cached token GitHub just refused, so the next call fetches a new one.
    pub async fn forget_token(&self, token: &SecretString) {
        self.tokens
            .lock()
            .await
            .retain(|_, cached| cached.token.expose_secret() != token.expose_secret());
    }

    fn is_fresh(&self, cached: &CachedToken) -> bool {
        let margin =
            chrono::Duration::from_std(self.refresh_margin).unwrap_or(chrono::Duration::MAX);
        Utc::now()
            .checked_add_signed(margin)
            .is_some_and(|deadline| deadline < cached.expires_at)
    }

    async fn installation_of(
        &self,
        transport: &Transport,
        repo: &RepoRef,
    ) -> Result<u64, ForgeError> {
        if let Some(id) = self.installations.lock().await.get(&repo.owner_path) {
            return Ok(*id);
        }
        let action = format!("find the GitHub App installation of {}", repo.owner_path);
        let jwt = self.jwt()?;
        let answer = transport
            .send(Call {
                method: Method::GET,
                target: format!("/repos/{}/installation", super::repo_path(repo)?),
                body: None,
                credential: &jwt,
                action: &action,
                repeat: Repeat::Safe,
            })
            .await?;
        if !answer.is_success() {
            return Err(answer.into_error(&action, &jwt));
        }
        let installation: wire::Installation = answer.json(&action)?;
        self.installations
            .lock()
            .await
            .insert(repo.owner_path.clone(), installation.id);
        Ok(installation.id)
    }

    async fn fetch_token(
        &self,
        transport: &Transport,
        installation: u64,
    ) -> Result<CachedToken, ForgeError> {
        let action = format!("create an access token for App installation {installation}");
        let jwt = self.jwt()?;
        let answer = transport
            .send(Call {
                method: Method::POST,
                target: format!("/app/installations/{installation}/access_tokens"),
                body: None,
                credential: &jwt,
                action: &action,
                repeat: Repeat::Safe,
            })
            .await?;
        if !answer.is_success() {
            return Err(answer.into_error(&action, &jwt));
        }
        let token: wire::InstallationToken = answer.json(&action)?;
        Ok(CachedToken {
            token: SecretString::from(token.token),
            expires_at: token.expires_at,
        })
    }
}
