//! The layers of the service configuration before the `config` crate merges them: every key of a
//! file or an `AUTOFIX__*` variable checked against the defaults, typed, and `…_FILE` secrets read.

use std::collections::HashMap;
use std::path::PathBuf;

use super::{ConfigError, ENV_PREFIX};

/// What the environment sets, sorted for the `config` crate: scalar keys as the strings its
/// `Environment` source reads, lists (which it would split without trimming) as values.
#[derive(Debug, Default)]
pub(super) struct EnvLayer {
    /// `AUTOFIX__LLM__MODEL` → `"gpt-4.1"`, with the prefix kept (the `Environment` source strips it).
    pub scalars: HashMap<String, String>,
    /// `github.webhook_secrets` → the comma-separated items, trimmed, blanks dropped.
    pub lists: Vec<(String, Vec<String>)>,
    /// The `…_FILE` files read, to be hidden from sandboxed commands.
    pub files: Vec<PathBuf>,
    /// Other variables the configuration reads (`HOME`, `XDG_DATA_HOME`) for the data directory.
    pub home: Option<String>,
    pub xdg_data_home: Option<String>,
}

/// Refuses a key of `overlay` (a configuration file) that the defaults do not have, by its path.
pub(super) fn check_file_keys(
    defaults: &toml::Table,
    overlay: &toml::Table,
    prefix: &str,
) -> Result<(), ConfigError> {
    for (key, value) in overlay {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match (defaults.get(key), value) {
            (Some(toml::Value::Table(inner)), toml::Value::Table(overlay_inner)) => {
                check_file_keys(inner, overlay_inner, &path)?
            }
            (Some(toml::Value::Table(_)), _) => {
                return Err(ConfigError(format!("`{path}` is a section, not a key")));
            }
            (Some(_), _) => {}
            (None, _) => return Err(ConfigError(format!("unknown key `{path}`"))),
        }
    }
    Ok(())
}

/// Reads the `AUTOFIX__*` variables of `vars`: each must name a key of `defaults` (or
/// `KEY_FILE` for a string key), with a value of the key's type.
pub(super) fn read_environment(
    defaults: &toml::Table,
    vars: impl IntoIterator<Item = (String, String)>,
) -> Result<EnvLayer, ConfigError> {
    let mut layer = EnvLayer::default();
    let mut seen: HashMap<String, String> = HashMap::new();
    for (name, value) in vars {
        match name.as_str() {
            "HOME" => layer.home = Some(value.clone()),
            "XDG_DATA_HOME" => layer.xdg_data_home = Some(value.clone()),
            _ => {}
        }
        let Some(key) = name.strip_prefix(ENV_PREFIX) else {
            continue;
        };
        let (key, value) = match secret_file_key(defaults, key) {
            Some(secret_key) => {
                layer.files.push(PathBuf::from(&value));
                (secret_key.to_owned(), read_secret_file(&name, &value)?)
            }
            None => (key.to_owned(), value),
        };
        if let Some(other) = seen.insert(key.to_ascii_lowercase(), name.clone()) {
            return Err(ConfigError(format!(
                "{other} and {name} set the same key: keep one"
            )));
        }
        let path = dotted(&key);
        match default_at(defaults, &key) {
            None => {
                return Err(ConfigError(format!("{name} names no configuration key")));
            }
            Some(toml::Value::Table(_)) => {
                return Err(ConfigError(format!("{name} names a section, not a key")));
            }
            Some(toml::Value::Array(_)) => layer.lists.push((path, comma_separated_list(&value))),
            Some(toml::Value::Integer(_)) => {
                check_parses::<i64>(&name, &value, "a whole number")?;
                layer.scalars.insert(format!("{ENV_PREFIX}{key}"), value);
            }
            Some(toml::Value::Float(_)) => {
                check_parses::<f64>(&name, &value, "a number")?;
                layer.scalars.insert(format!("{ENV_PREFIX}{key}"), value);
            }
            Some(toml::Value::Boolean(_)) => {
                check_parses::<bool>(&name, &value, "true or false")?;
                layer.scalars.insert(format!("{ENV_PREFIX}{key}"), value);
            }
            Some(_) => {
                layer.scalars.insert(format!("{ENV_PREFIX}{key}"), value);
            }
        }
    }
    Ok(layer)
}

/// `LLM__MAX_RETRIES` → `llm.max_retries`, the key the `config` crate uses.
fn dotted(key: &str) -> String {
    key.split("__")
        .map(str::to_ascii_lowercase)
        .collect::<Vec<_>>()
        .join(".")
}

/// The default value at `LLM__MODEL`, if the defaults have such a key.
fn default_at<'t>(table: &'t toml::Table, key: &str) -> Option<&'t toml::Value> {
    let parts: Vec<String> = key.split("__").map(str::to_ascii_lowercase).collect();
    let (last, sections) = parts.split_last()?;
    let mut current = table;
    for section in sections {
        current = current.get(section)?.as_table()?;
    }
    current.get(last)
}

/// Numbers and booleans are checked here, so the error names the variable (and the value: a
/// number or a boolean is never a secret).
fn check_parses<T: std::str::FromStr>(
    variable: &str,
    raw: &str,
    what: &str,
) -> Result<(), ConfigError> {
    raw.trim()
        .parse::<T>()
        .map(drop)
        .map_err(|_| ConfigError(format!("{variable} must be {what}, not `{raw}`")))
}

/// `GITHUB__TOKEN_FILE` → `GITHUB__TOKEN` when that key exists and holds a string or a list:
/// the Docker and Kubernetes convention of giving a secret as a file rather than in the environment.
fn secret_file_key<'k>(table: &toml::Table, key: &'k str) -> Option<&'k str> {
    let base = key
        .strip_suffix("_FILE")
        .or_else(|| key.strip_suffix("_file"))?;
    matches!(
        default_at(table, base),
        Some(toml::Value::String(_) | toml::Value::Array(_))
    )
    .then_some(base)
}

/// The content of a secret file, without the line break editors leave at its end.
fn read_secret_file(variable: &str, path: &str) -> Result<String, ConfigError> {
    let text = std::fs::read_to_string(path)
        .map_err(|err| ConfigError(format!("{variable}: cannot read `{path}`: {err}")))?;
    Ok(text.trim_end_matches(['\n', '\r']).to_string())
}

/// `a, b,,c` → `["a", "b", "c"]`: blanks around and between commas are dropped, so an empty
/// variable means an empty list. (The value never appears in an error: it may be a secret.)
fn comma_separated_list(raw: &str) -> Vec<String> {
    raw.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(str::to_owned)
        .collect()
}
