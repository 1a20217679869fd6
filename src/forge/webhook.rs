//! What every forge's webhook edge shares: the error types the server turns into 401 or 400,
//! constant-time secret checks, delivery ids, and reading raw JSON with named fields.
//!
//! `payload` reads only the wanted parts of a JSON delivery, `fields` gives named access into
//! them; the errors, delivery ids and secret checks are here.

mod fields;
mod payload;
#[cfg(test)]
mod tests;

use hmac::{Hmac, KeyInit, Mac};
use reqwest::header::HeaderMap;
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

pub(crate) use fields::Fields;
pub(crate) use payload::{Wanted, parse_object};

/// Deepest `{`/`[` nesting a delivery may have. Real payloads stay under 10; serde_json's own
/// limit (128) does not apply to the parts it skips, so the reader counts levels itself.
pub const MAX_NESTING_DEPTH: usize = 64;

/// Longest delivery id accepted; GitHub and GitLab send 36-character UUIDs.
pub const MAX_DELIVERY_ID_LEN: usize = 128;

/// A delivery that did not prove it came from the forge. The server answers 401.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebhookAuthError {
    #[error("no non-empty webhook secret is configured, so no delivery can be authenticated")]
    NoSecretConfigured,
    #[error(
        "missing X-Hub-Signature-256 header: the GitHub webhook has no secret, or the request is not from GitHub"
    )]
    MissingSignature,
    #[error(
        "only a SHA-1 signature was sent; autofix accepts only X-Hub-Signature-256 (`sha256=<hex>`)"
    )]
    Sha1Only,
    #[error("X-Hub-Signature-256 must start with `sha256=`, found {found:?}")]
    UnknownScheme { found: String },
    #[error("X-Hub-Signature-256 is not hexadecimal: {found:?} at digit {position}")]
    MalformedHex { position: usize, found: char },
    #[error("X-Hub-Signature-256 has {found} hex digits, a SHA-256 HMAC has 64")]
    WrongLength { found: usize },
    #[error("X-Hub-Signature-256 does not match the body under any configured secret")]
    SignatureMismatch,
    #[error(
        "missing X-Gitlab-Token header: the GitLab webhook has no secret token, or the request is not from GitLab"
    )]
    MissingToken,
    #[error("X-Gitlab-Token does not match any configured secret")]
    TokenMismatch,
}

impl WebhookAuthError {
    /// Always true: kept so the server can ask any webhook error the same question.
    pub fn is_auth_failure(&self) -> bool {
        true
    }
}

/// An authenticated delivery the bot cannot read. The server answers 400.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebhookParseError {
    #[error("missing {header} header")]
    MissingHeader { header: &'static str },
    #[error("invalid {header} header: {reason}")]
    InvalidHeader {
        header: &'static str,
        reason: &'static str,
    },
    #[error("the request body is empty, a JSON object was expected")]
    EmptyBody,
    #[error("the request body nests deeper than {limit} levels")]
    TooDeep { limit: usize },
    #[error("the request body is not JSON: {message}")]
    NotJson { message: String },
    #[error("the request body is a JSON {found}, a JSON object was expected")]
    NotAnObject { found: &'static str },
    #[error("missing required field `{field}`")]
    MissingField { field: String },
    #[error("field `{field}` should be {expected}, found {found}")]
    WrongType {
        field: String,
        expected: &'static str,
        found: &'static str,
    },
}

impl WebhookParseError {
    /// Always false: a bad body is the sender's mistake, not an impostor.
    pub fn is_auth_failure(&self) -> bool {
        false
    }
}

/// Either failure of a webhook edge, for callers that handle both in one place.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebhookError {
    #[error(transparent)]
    Auth(#[from] WebhookAuthError),
    #[error(transparent)]
    Parse(#[from] WebhookParseError),
}

impl WebhookError {
    /// True for 401 (not from the forge), false for 400 (from the forge but unreadable).
    pub fn is_auth_failure(&self) -> bool {
        match self {
            WebhookError::Auth(error) => error.is_auth_failure(),
            WebhookError::Parse(error) => error.is_auth_failure(),
        }
    }
}

/// The forge's id for one delivery; a redelivery of the same event carries the same id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DeliveryId(pub String);

impl DeliveryId {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Reads one delivery-id header: `None` when absent, an error when present but unusable.
pub(crate) fn delivery_id_header(
    headers: &HeaderMap,
    header: &'static str,
) -> Result<Option<DeliveryId>, WebhookParseError> {
    let Some(value) = headers.get(header) else {
        return Ok(None);
    };
    let invalid = |reason| WebhookParseError::InvalidHeader { header, reason };
    let text = value
        .to_str()
        .map_err(|_| invalid("it holds characters other than visible ASCII"))?
        .trim();
    if text.is_empty() {
        return Err(invalid("it is empty"));
    }
    if text.len() > MAX_DELIVERY_ID_LEN {
        return Err(invalid("it is longer than 128 characters"));
    }
    Ok(Some(DeliveryId(text.to_owned())))
}

/// The configured secrets that can authenticate anything: an empty secret would let anyone
/// compute a valid HMAC or send a matching empty token, so it never counts.
pub(crate) fn usable_secrets(secrets: &[SecretString]) -> Result<Vec<&[u8]>, WebhookAuthError> {
    let usable: Vec<&[u8]> = secrets
        .iter()
        .map(|secret| secret.expose_secret().as_bytes())
        .filter(|secret| !secret.is_empty())
        .collect();
    if usable.is_empty() {
        return Err(WebhookAuthError::NoSecretConfigured);
    }
    Ok(usable)
}

fn keyed_hmac(key: &[u8]) -> Hmac<Sha256> {
    // HMAC accepts keys of every length (long ones are hashed), so this cannot fail.
    <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC-SHA256 takes any key length")
}

/// Whether `expected` is the HMAC-SHA256 of `message` under `key`, compared in constant time.
pub(crate) fn hmac_sha256_matches(key: &[u8], message: &[u8], expected: &[u8]) -> bool {
    let mut mac = keyed_hmac(key);
    mac.update(message);
    mac.verify_slice(expected).is_ok()
}

/// Whether a presented token equals a secret, without a timing signal on where they differ:
/// both sides go through the same HMAC and only the fixed-length tags are compared.
pub(crate) fn token_matches(secret: &[u8], presented: &[u8]) -> bool {
    let mut own = keyed_hmac(secret);
    own.update(secret);
    hmac_sha256_matches(secret, presented, &own.finalize().into_bytes())
}

/// Labels are compared as the forges store them: case-insensitively.
pub(crate) fn same_label(a: &str, b: &str) -> bool {
    a.to_lowercase() == b.to_lowercase()
}

/// Forge-supplied names reach log lines through ignore reasons: keep them short and free of
/// control characters.
pub(crate) fn printable(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).take(80).collect()
}
