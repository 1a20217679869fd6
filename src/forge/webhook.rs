//! What every forge's webhook edge shares: the error types the server turns into 401 or 400,
//! constant-time secret checks, delivery ids, and reading raw JSON with named fields.

use hmac::{Hmac, KeyInit, Mac};
use reqwest::header::HeaderMap;
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::Sha256;

/// Deepest `{`/`[` nesting a delivery may have. Real payloads stay under 10; serde_json's own
/// limit (128) would refuse deeper bodies too, but only after allocating the levels above it.
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

/// Parses a body that must be one JSON object, refusing deep nesting before serde sees it.
pub(crate) fn parse_object(body: &[u8]) -> Result<Value, WebhookParseError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(WebhookParseError::EmptyBody);
    }
    check_nesting(body, MAX_NESTING_DEPTH)?;
    let value: Value =
        serde_json::from_slice(body).map_err(|error| WebhookParseError::NotJson {
            message: error.to_string(),
        })?;
    if !value.is_object() {
        return Err(WebhookParseError::NotAnObject {
            found: kind_of(&value),
        });
    }
    Ok(value)
}

/// One pass over the bytes counting brackets outside strings; no allocation, stops at the limit.
fn check_nesting(body: &[u8], limit: usize) -> Result<(), WebhookParseError> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for &byte in body {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                if depth > limit {
                    return Err(WebhookParseError::TooDeep { limit });
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Named access into a payload, so every missing or mistyped field is reported by its path.
pub(crate) struct Fields<'a> {
    root: &'a Value,
}

impl<'a> Fields<'a> {
    pub(crate) fn new(root: &'a Value) -> Self {
        Fields { root }
    }

    /// The value at a dotted path; `None` when it or a parent is absent or null.
    pub(crate) fn optional(&self, path: &str) -> Result<Option<&'a Value>, WebhookParseError> {
        let mut current = self.root;
        let mut walked = String::new();
        for key in path.split('.') {
            if !walked.is_empty() {
                if !current.is_object() {
                    return Err(wrong_type(&walked, "an object", current));
                }
                walked.push('.');
            }
            walked.push_str(key);
            match current.get(key) {
                None | Some(Value::Null) => return Ok(None),
                Some(next) => current = next,
            }
        }
        Ok(Some(current))
    }

    pub(crate) fn required(&self, path: &str) -> Result<&'a Value, WebhookParseError> {
        self.optional(path)?
            .ok_or_else(|| WebhookParseError::MissingField {
                field: path.to_owned(),
            })
    }

    pub(crate) fn str(&self, path: &str) -> Result<&'a str, WebhookParseError> {
        let value = self.required(path)?;
        value
            .as_str()
            .ok_or_else(|| wrong_type(path, "a string", value))
    }

    pub(crate) fn optional_str(&self, path: &str) -> Result<Option<&'a str>, WebhookParseError> {
        match self.optional(path)? {
            None => Ok(None),
            Some(value) => value
                .as_str()
                .map(Some)
                .ok_or_else(|| wrong_type(path, "a string", value)),
        }
    }

    pub(crate) fn u64(&self, path: &str) -> Result<u64, WebhookParseError> {
        let value = self.required(path)?;
        value
            .as_u64()
            .ok_or_else(|| wrong_type(path, "a non-negative integer", value))
    }

    pub(crate) fn bool(&self, path: &str) -> Result<bool, WebhookParseError> {
        let value = self.required(path)?;
        value
            .as_bool()
            .ok_or_else(|| wrong_type(path, "a boolean", value))
    }

    pub(crate) fn optional_bool(&self, path: &str) -> Result<Option<bool>, WebhookParseError> {
        match self.optional(path)? {
            None => Ok(None),
            Some(value) => value
                .as_bool()
                .map(Some)
                .ok_or_else(|| wrong_type(path, "a boolean", value)),
        }
    }

    /// The `name_key` of every object in the array at `path`, e.g. each label's name.
    pub(crate) fn names(
        &self,
        path: &str,
        name_key: &str,
    ) -> Result<Vec<String>, WebhookParseError> {
        let value = self.required(path)?;
        let items = value
            .as_array()
            .ok_or_else(|| wrong_type(path, "an array", value))?;
        items
            .iter()
            .enumerate()
            .map(|(index, item)| {
                let item_path = format!("{path}[{index}]");
                Fields::new(item)
                    .str(name_key)
                    .map(str::to_owned)
                    .map_err(|error| error.under(&item_path))
            })
            .collect()
    }
}

impl WebhookParseError {
    /// Re-roots a field error found inside a nested value at that value's own path.
    fn under(self, prefix: &str) -> Self {
        match self {
            WebhookParseError::MissingField { field } => WebhookParseError::MissingField {
                field: format!("{prefix}.{field}"),
            },
            WebhookParseError::WrongType {
                field,
                expected,
                found,
            } => WebhookParseError::WrongType {
                field: format!("{prefix}.{field}"),
                expected,
                found,
            },
            other => other,
        }
    }
}

fn wrong_type(path: &str, expected: &'static str, found: &Value) -> WebhookParseError {
    WebhookParseError::WrongType {
        field: path.to_owned(),
        expected,
        found: kind_of(found),
    }
}
