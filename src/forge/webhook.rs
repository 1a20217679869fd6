//! What every forge's webhook edge shares: the error types the server turns into 401 or 400,
//! constant-time secret checks, delivery ids, and reading raw JSON with named fields.

use hmac::{Hmac, KeyInit, Mac};
use reqwest::header::HeaderMap;
use secrecy::{ExposeSecret, SecretString};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use std::borrow::Cow;
use std::cell::Cell;
use std::fmt;

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

/// Which parts of a payload an edge reads: the keys kept at each level of an object, and what is
/// kept of each item of an array. Everything else is checked to be JSON and then skipped, so a
/// ~10 KB delivery costs a scan instead of a tree of maps and strings.
#[derive(Debug)]
pub(crate) struct Wanted {
    pub(crate) keys: &'static [(&'static str, Wanted)],
    pub(crate) items: Option<&'static Wanted>,
}

impl Wanted {
    /// A value read whole when it is a scalar; of an object or array only its kind is kept (as
    /// the root: a body checked to be a JSON object, nothing of it read).
    pub(crate) const VALUE: Wanted = Wanted {
        keys: &[],
        items: None,
    };

    fn key(&self, name: &str) -> Option<&(&'static str, Wanted)> {
        self.keys.iter().find(|(key, _)| *key == name)
    }
}

/// The wanted parts of a payload, borrowing its strings where they hold no escapes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node<'a> {
    Null,
    Bool(bool),
    /// Any JSON number; `unsigned` holds it when it is a non-negative integer.
    Number {
        unsigned: Option<u64>,
    },
    Str(Cow<'a, str>),
    /// The wanted items only (none when the items were not wanted).
    Array(Vec<Node<'a>>),
    /// The wanted keys only, in payload order; a repeated key's last value wins, as in serde_json.
    Object(Vec<(&'static str, Node<'a>)>),
}

impl<'a> Node<'a> {
    fn get(&self, key: &str) -> Option<&Node<'a>> {
        match self {
            Node::Object(entries) => entries
                .iter()
                .rev()
                .find(|(name, _)| *name == key)
                .map(|(_, value)| value),
            _ => None,
        }
    }

    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Node::Str(text) => Some(text),
            _ => None,
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Node::Null => "null",
            Node::Bool(_) => "boolean",
            Node::Number { .. } => "number",
            Node::Str(_) => "string",
            Node::Array(_) => "array",
            Node::Object(_) => "object",
        }
    }
}

/// Reads the `wanted` parts of a body that must be one JSON object. Nesting deeper than
/// [`MAX_NESTING_DEPTH`] is refused as it is met, before anything is allocated for it.
pub(crate) fn parse_object<'a>(
    body: &'a [u8],
    wanted: &'static Wanted,
) -> Result<Node<'a>, WebhookParseError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(WebhookParseError::EmptyBody);
    }
    // Checked whole up front because skipped strings are not decoded: a stored payload is text.
    let text = std::str::from_utf8(body).map_err(|error| WebhookParseError::NotJson {
        message: format!("invalid UTF-8 at byte {}", error.valid_up_to()),
    })?;
    let too_deep = Cell::new(false);
    let seed = Pick {
        wanted,
        depth: 1,
        too_deep: &too_deep,
    };
    let mut reader = serde_json::Deserializer::from_str(text);
    let node = seed
        .deserialize(&mut reader)
        .and_then(|node| reader.end().map(|()| node))
        .map_err(|error| {
            if too_deep.get() {
                WebhookParseError::TooDeep {
                    limit: MAX_NESTING_DEPTH,
                }
            } else {
                WebhookParseError::NotJson {
                    message: error.to_string(),
                }
            }
        })?;
    match node {
        Node::Object(_) => Ok(node),
        other => Err(WebhookParseError::NotAnObject {
            found: other.kind(),
        }),
    }
}

/// Reads one value at `depth` (the level an array or object here would open), keeping what
/// `wanted` names and skipping the rest.
#[derive(Clone, Copy)]
struct Pick<'s> {
    wanted: &'static Wanted,
    depth: usize,
    too_deep: &'s Cell<bool>,
}

impl Pick<'_> {
    fn enter<E: de::Error>(&self) -> Result<(), E> {
        if self.depth > MAX_NESTING_DEPTH {
            self.too_deep.set(true);
            return Err(E::custom("nesting too deep"));
        }
        Ok(())
    }

    fn skip(&self) -> Skip<'_> {
        Skip {
            depth: self.depth + 1,
            too_deep: self.too_deep,
        }
    }
}

impl<'de> DeserializeSeed<'de> for Pick<'_> {
    type Value = Node<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Node<'de>, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Pick<'_> {
    type Value = Node<'de>;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<Node<'de>, E> {
        Ok(Node::Null)
    }

    fn visit_none<E>(self) -> Result<Node<'de>, E> {
        Ok(Node::Null)
    }

    fn visit_bool<E>(self, value: bool) -> Result<Node<'de>, E> {
        Ok(Node::Bool(value))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Node<'de>, E> {
        Ok(Node::Number {
            unsigned: Some(value),
        })
    }

    fn visit_i64<E>(self, value: i64) -> Result<Node<'de>, E> {
        Ok(Node::Number {
            unsigned: u64::try_from(value).ok(),
        })
    }

    fn visit_f64<E>(self, _: f64) -> Result<Node<'de>, E> {
        Ok(Node::Number { unsigned: None })
    }

    fn visit_borrowed_str<E>(self, value: &'de str) -> Result<Node<'de>, E> {
        Ok(Node::Str(Cow::Borrowed(value)))
    }

    fn visit_str<E>(self, value: &str) -> Result<Node<'de>, E> {
        Ok(Node::Str(Cow::Owned(value.to_owned())))
    }

    fn visit_string<E>(self, value: String) -> Result<Node<'de>, E> {
        Ok(Node::Str(Cow::Owned(value)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node<'de>, A::Error> {
        self.enter()?;
        let mut items = Vec::new();
        match self.wanted.items {
            Some(wanted) => {
                let item = Pick {
                    wanted,
                    depth: self.depth + 1,
                    ..self
                };
                while let Some(node) = seq.next_element_seed(item)? {
                    items.push(node);
                }
            }
            None => while seq.next_element_seed(self.skip())?.is_some() {},
        }
        Ok(Node::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node<'de>, A::Error> {
        self.enter()?;
        let mut entries = Vec::with_capacity(self.wanted.keys.len());
        while let Some(key) = map.next_key_seed(WantedKey(self.wanted))? {
            match key {
                Some((name, wanted)) => {
                    let value = Pick {
                        wanted,
                        depth: self.depth + 1,
                        ..self
                    };
                    entries.push((*name, map.next_value_seed(value)?));
                }
                None => map.next_value_seed(self.skip())?,
            }
        }
        Ok(Node::Object(entries))
    }
}

/// An object key, matched against the wanted ones without being copied.
struct WantedKey(&'static Wanted);

impl<'de> DeserializeSeed<'de> for WantedKey {
    type Value = Option<&'static (&'static str, Wanted)>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for WantedKey {
    type Value = Option<&'static (&'static str, Wanted)>;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("an object key")
    }

    fn visit_str<E>(self, key: &str) -> Result<Self::Value, E> {
        Ok(self.0.key(key))
    }
}

/// Checks and skips one unwanted value, counting its nesting: serde_json's own skipping
/// (`IgnoredAny`) accepts any depth.
#[derive(Clone, Copy)]
struct Skip<'s> {
    depth: usize,
    too_deep: &'s Cell<bool>,
}

impl<'de> DeserializeSeed<'de> for Skip<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Skip<'_> {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.enter()?;
        let item = self.inner();
        while seq.next_element_seed(item)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.enter()?;
        let value = self.inner();
        while map.next_key::<de::IgnoredAny>()?.is_some() {
            map.next_value_seed(value)?;
        }
        Ok(())
    }
}

impl Skip<'_> {
    fn enter<E: de::Error>(&self) -> Result<(), E> {
        if self.depth > MAX_NESTING_DEPTH {
            self.too_deep.set(true);
            return Err(E::custom("nesting too deep"));
        }
        Ok(())
    }

    fn inner(&self) -> Self {
        Skip {
            depth: self.depth + 1,
            ..*self
        }
    }
}

/// Named access into a payload, so every missing or mistyped field is reported by its path.
pub(crate) struct Fields<'a> {
    root: &'a Node<'a>,
}

impl<'a> Fields<'a> {
    pub(crate) fn new(root: &'a Node<'a>) -> Self {
        Fields { root }
    }

    /// The value at a dotted path; `None` when it or a parent is absent or null.
    pub(crate) fn optional(&self, path: &str) -> Result<Option<&'a Node<'a>>, WebhookParseError> {
        let mut current = self.root;
        let mut walked = String::new();
        for key in path.split('.') {
            if !walked.is_empty() {
                if !matches!(current, Node::Object(_)) {
                    return Err(wrong_type(&walked, "an object", current));
                }
                walked.push('.');
            }
            walked.push_str(key);
            match current.get(key) {
                None | Some(Node::Null) => return Ok(None),
                Some(next) => current = next,
            }
        }
        Ok(Some(current))
    }

    pub(crate) fn required(&self, path: &str) -> Result<&'a Node<'a>, WebhookParseError> {
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
        match self.required(path)? {
            Node::Number {
                unsigned: Some(number),
            } => Ok(*number),
            other => Err(wrong_type(path, "a non-negative integer", other)),
        }
    }

    /// A non-negative integer that may be absent or null, such as a line number.
    pub(crate) fn optional_u64(&self, path: &str) -> Result<Option<u64>, WebhookParseError> {
        match self.optional(path)? {
            None => Ok(None),
            Some(Node::Number {
                unsigned: Some(number),
            }) => Ok(Some(*number)),
            Some(other) => Err(wrong_type(path, "a non-negative integer", other)),
        }
    }

    /// The `key` of the first object in the array at `path`, e.g. the first pull request's
    /// number; `None` when the array is empty.
    pub(crate) fn first_u64(
        &self,
        path: &str,
        key: &str,
    ) -> Result<Option<u64>, WebhookParseError> {
        let value = self.required(path)?;
        let Node::Array(items) = value else {
            return Err(wrong_type(path, "an array", value));
        };
        items
            .first()
            .map(|item| {
                Fields::new(item)
                    .u64(key)
                    .map_err(|error| error.under(&format!("{path}[0]")))
            })
            .transpose()
    }

    pub(crate) fn bool(&self, path: &str) -> Result<bool, WebhookParseError> {
        match self.required(path)? {
            Node::Bool(value) => Ok(*value),
            other => Err(wrong_type(path, "a boolean", other)),
        }
    }

    pub(crate) fn optional_bool(&self, path: &str) -> Result<Option<bool>, WebhookParseError> {
        match self.optional(path)? {
            None => Ok(None),
            Some(Node::Bool(value)) => Ok(Some(*value)),
            Some(other) => Err(wrong_type(path, "a boolean", other)),
        }
    }

    /// The `name_key` of every object in the array at `path`, e.g. each label's name.
    pub(crate) fn names(
        &self,
        path: &str,
        name_key: &str,
    ) -> Result<Vec<String>, WebhookParseError> {
        let value = self.required(path)?;
        let Node::Array(items) = value else {
            return Err(wrong_type(path, "an array", value));
        };
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

fn wrong_type(path: &str, expected: &'static str, found: &Node<'_>) -> WebhookParseError {
    WebhookParseError::WrongType {
        field: path.to_owned(),
        expected,
        found: found.kind(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LABEL: Wanted = Wanted {
        keys: &[(
            "label",
            Wanted {
                keys: &[("name", Wanted::VALUE)],
                items: None,
            },
        )],
        items: None,
    };

    fn label_name(body: &str) -> Result<Option<String>, WebhookParseError> {
        let node = parse_object(body.as_bytes(), &LABEL)?;
        Ok(Fields::new(&node)
            .optional_str("label.name")?
            .map(str::to_owned))
    }

    #[test]
    fn only_the_wanted_keys_are_kept_and_the_rest_is_still_checked() {
        assert_eq!(
            label_name(r#"{"other": {"a": [1, "x\n"]}, "label": {"name": "bug", "color": "f00"}}"#),
            Ok(Some("bug".to_owned()))
        );
        let error = label_name(r#"{"other": [1, 2,], "label": {"name": "bug"}}"#).unwrap_err();
        assert!(
            matches!(&error, WebhookParseError::NotJson { message } if message.contains("line 1 column 17")),
            "{error:?}"
        );
    }

    #[test]
    fn a_repeated_key_keeps_its_last_value_as_serde_json_does() {
        assert_eq!(
            label_name(r#"{"label": {"name": "first"}, "label": {"name": "last"}}"#),
            Ok(Some("last".to_owned()))
        );
    }

    #[test]
    fn an_escaped_wanted_string_is_decoded() {
        assert_eq!(
            label_name(r#"{"label": {"name": "b\u00fcg \"x\""}}"#),
            Ok(Some("büg \"x\"".to_owned()))
        );
    }

    #[test]
    fn a_body_that_is_not_utf8_is_refused_even_inside_a_skipped_string() {
        let mut body = br#"{"other": "ok ", "label": {"name": "bug"}}"#.to_vec();
        body[13] = 0xff;
        assert_eq!(
            parse_object(&body, &LABEL),
            Err(WebhookParseError::NotJson {
                message: "invalid UTF-8 at byte 13".to_owned()
            })
        );
    }

    #[test]
    fn nesting_is_counted_in_skipped_and_in_wanted_parts_alike() {
        let deep = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        let too_deep = Err(WebhookParseError::TooDeep {
            limit: MAX_NESTING_DEPTH,
        });
        // The root object is the first level.
        let skipped_at_limit = format!(r#"{{"other": {}}}"#, deep(MAX_NESTING_DEPTH - 1));
        assert_eq!(label_name(&skipped_at_limit), Ok(None));
        let skipped_too_deep = format!(r#"{{"other": {}}}"#, deep(MAX_NESTING_DEPTH));
        assert_eq!(label_name(&skipped_too_deep), too_deep);
        let wanted_too_deep = format!(
            r#"{{"label": {{"name": "bug", "x": {}}}}}"#,
            deep(MAX_NESTING_DEPTH - 1)
        );
        assert_eq!(label_name(&wanted_too_deep), too_deep);
    }

    #[test]
    fn optional_numbers_and_first_items_report_their_paths() {
        const LIST: Wanted = Wanted {
            keys: &[
                ("line", Wanted::VALUE),
                (
                    "prs",
                    Wanted {
                        keys: &[],
                        items: Some(&Wanted {
                            keys: &[("number", Wanted::VALUE)],
                            items: None,
                        }),
                    },
                ),
            ],
            items: None,
        };
        let read = |body: &str| {
            let node = parse_object(body.as_bytes(), &LIST).unwrap();
            let fields = Fields::new(&node);
            (
                fields.optional_u64("line"),
                fields.first_u64("prs", "number"),
            )
        };
        assert_eq!(
            read(r#"{"line": null, "prs": [{"number": 2}, {"number": 3}]}"#),
            (Ok(None), Ok(Some(2)))
        );
        assert_eq!(read(r#"{"line": 7, "prs": []}"#), (Ok(Some(7)), Ok(None)));
        let (line, first) = read(r#"{"line": "7", "prs": [{}]}"#);
        assert_eq!(
            line.unwrap_err().to_string(),
            "field `line` should be a non-negative integer, found string"
        );
        assert_eq!(
            first,
            Err(WebhookParseError::MissingField {
                field: "prs[0].number".to_owned()
            })
        );
        let (_, first) = read(r#"{"prs": {"number": 2}}"#);
        assert_eq!(
            first.unwrap_err().to_string(),
            "field `prs` should be an array, found object"
        );
    }

    #[test]
    fn a_number_is_unsigned_only_when_it_is_a_non_negative_integer() {
        const NUMBER: Wanted = Wanted {
            keys: &[("n", Wanted::VALUE)],
            items: None,
        };
        let read = |text: &str| {
            let body = format!(r#"{{"n": {text}}}"#);
            let node = parse_object(body.as_bytes(), &NUMBER).unwrap();
            Fields::new(&node).u64("n")
        };
        assert_eq!(read("42"), Ok(42));
        for refused in ["-1", "4.0", "1e3"] {
            assert_eq!(
                read(refused),
                Err(WebhookParseError::WrongType {
                    field: "n".to_owned(),
                    expected: "a non-negative integer",
                    found: "number"
                }),
                "{refused}"
            );
        }
    }
}
