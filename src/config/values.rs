//! How single configuration values are read and shown: enumerations checked against their
//! valid names, amounts of money, secrets masked, and the password taken out of a database URL.

use secrecy::SecretString;
use serde::Deserialize;

/// An enumeration's value read as text, then matched by serde, so that a wrong one is refused
/// with the valid values listed (the `config` crate's own enum reading names a Rust type).
pub(super) fn one_of<'de, D, T>(value: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    use serde::de::Error;
    use serde::de::value::{Error as ValueError, StrDeserializer};
    let text = String::deserialize(value)?;
    T::deserialize(StrDeserializer::<ValueError>::new(&text)).map_err(|err| {
        D::Error::custom(
            err.to_string()
                .replacen("unknown variant", "unknown value", 1),
        )
    })
}

/// A price: a number, or empty (`""`) for the built-in one. The environment gives text, a file
/// a number.
pub(super) fn optional_usd<'de, D>(value: D) -> Result<Option<f64>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    use serde::de::Error;
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Given {
        Number(f64),
        Text(String),
    }
    match Given::deserialize(value)? {
        Given::Number(number) => Ok(Some(number)),
        Given::Text(text) if text.trim().is_empty() => Ok(None),
        Given::Text(text) => text.trim().parse().map(Some).map_err(|_| {
            D::Error::custom(format!(
                "a price must be US dollars per million tokens, or empty, not `{text}`"
            ))
        }),
    }
}

pub(super) fn usd_or_empty<S: serde::Serializer>(
    usd: &Option<f64>,
    out: S,
) -> Result<S::Ok, S::Error> {
    match usd {
        Some(usd) => out.serialize_f64(*usd),
        None => out.serialize_str(""),
    }
}

/// How a secret shows in the effective configuration: whether it is set, never its value.
pub(super) fn masked<S: serde::Serializer>(
    secret: &SecretString,
    out: S,
) -> Result<S::Ok, S::Error> {
    use secrecy::ExposeSecret;
    out.serialize_str(mask(secret.expose_secret()))
}

pub(super) fn masked_list<S: serde::Serializer>(
    secrets: &[SecretString],
    out: S,
) -> Result<S::Ok, S::Error> {
    use secrecy::ExposeSecret;
    out.collect_seq(secrets.iter().map(|secret| mask(secret.expose_secret())))
}

fn mask(value: &str) -> &'static str {
    if value.is_empty() { "" } else { "(set)" }
}

pub(super) fn password_masked<S: serde::Serializer>(url: &str, out: S) -> Result<S::Ok, S::Error> {
    out.serialize_str(&without_password(url))
}

/// `url` with its password, if any, shown as `(set)`.
pub fn without_password(url: &str) -> String {
    match url_password(url) {
        Some(password) => url.replacen(password, "(set)", 1),
        None => url.to_owned(),
    }
}

/// The password of `postgres://user:password@host/db`, a secret like any other.
pub fn url_password(url: &str) -> Option<&str> {
    let (_, rest) = url.split_once("://")?;
    let credentials = rest.split('/').next()?.rsplit_once('@')?.0;
    credentials
        .split_once(':')
        .map(|(_, password)| password)
        .filter(|p| !p.is_empty())
}
