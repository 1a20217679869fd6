//! Service configuration: `config/default.toml` holds every key with its default, and any key
//! can be overridden by `AUTOFIX__SECTION__KEY`; the result is one typed, checked struct.

pub mod repo;

use std::time::Duration;

use secrecy::SecretString;
use serde::Deserialize;

use crate::llm::{ProviderConfig, ProviderKind};

/// The defaults, compiled in so the binary needs no file beside it.
pub const DEFAULT_TOML: &str = include_str!("../../config/default.toml");
const ENV_PREFIX: &str = "AUTOFIX__";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceConfig {
    pub workdir: String,
    pub llm: LlmSection,
    pub exec: ExecSection,
    pub git: GitSection,
    pub pipeline: PipelineSection,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GitSection {
    pub author_name: String,
    pub author_email: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineSection {
    pub context_tokens: usize,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmSection {
    pub provider: ProviderKind,
    pub base_url: String,
    pub model: String,
    pub api_key: SecretString,
    pub request_timeout_secs: u64,
    pub max_retries: u32,
    pub initial_backoff_ms: u64,
    pub max_backoff_secs: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecSection {
    pub default_timeout_secs: u64,
    pub output_limit_bytes: usize,
}

/// A configuration that cannot be used, naming the key at fault.
#[derive(Debug, thiserror::Error)]
#[error("configuration: {0}")]
pub struct ConfigError(String);

impl ServiceConfig {
    /// The defaults, then an optional file (`path`), then `AUTOFIX__*` variables from `vars`.
    pub fn load(
        file: Option<(&str, &str)>,
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> Result<ServiceConfig, ConfigError> {
        let mut merged: toml::Table = DEFAULT_TOML
            .parse()
            .map_err(|err| ConfigError(format!("the built-in defaults do not parse: {err}")))?;
        if let Some((name, text)) = file {
            let overlay: toml::Table = text
                .parse()
                .map_err(|err| ConfigError(format!("{name} is not valid TOML: {err}")))?;
            merge(&mut merged, overlay, "")?;
        }
        for (name, value) in vars {
            if let Some(key) = name.strip_prefix(ENV_PREFIX) {
                set_from_env(&mut merged, &name, key, &value)?;
            }
        }
        ServiceConfig::deserialize(toml::Value::Table(merged))
            .map_err(|err| ConfigError(err.message().to_string()))
    }

    /// The provider this configuration names.
    pub fn provider_config(&self) -> ProviderConfig {
        let llm = &self.llm;
        ProviderConfig {
            kind: llm.provider,
            base_url: llm.base_url.clone(),
            model: llm.model.clone(),
            api_key: llm.api_key.clone(),
            request_timeout: Duration::from_secs(llm.request_timeout_secs),
            max_retries: llm.max_retries,
            initial_backoff: Duration::from_millis(llm.initial_backoff_ms),
            max_backoff: Duration::from_secs(llm.max_backoff_secs),
        }
    }
}

/// Lays `overlay` over `base`; a key the defaults do not have is refused by name.
fn merge(base: &mut toml::Table, overlay: toml::Table, prefix: &str) -> Result<(), ConfigError> {
    for (key, value) in overlay {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(inner)), toml::Value::Table(overlay_inner)) => {
                merge(inner, overlay_inner, &path)?
            }
            (Some(slot), value) => *slot = value,
            (None, _) => return Err(ConfigError(format!("unknown key `{path}`"))),
        }
    }
    Ok(())
}

/// `AUTOFIX__LLM__MODEL=x` sets `llm.model`, typed like the default it replaces.
fn set_from_env(
    table: &mut toml::Table,
    variable: &str,
    key: &str,
    raw: &str,
) -> Result<(), ConfigError> {
    let parts: Vec<String> = key.split("__").map(str::to_ascii_lowercase).collect();
    let (last, sections) = parts.split_last().expect("split yields at least one part");
    let mut current = table;
    for section in sections {
        current = match current.get_mut(section) {
            Some(toml::Value::Table(inner)) => inner,
            _ => {
                return Err(ConfigError(format!(
                    "{variable} names no configuration key"
                )));
            }
        };
    }
    let Some(slot) = current.get_mut(last) else {
        return Err(ConfigError(format!(
            "{variable} names no configuration key"
        )));
    };
    let typed = match slot {
        toml::Value::Integer(_) => {
            raw.trim().parse().map(toml::Value::Integer).map_err(|_| {
                ConfigError(format!("{variable} must be a whole number, not `{raw}`"))
            })?
        }
        toml::Value::Boolean(_) => {
            raw.trim().parse().map(toml::Value::Boolean).map_err(|_| {
                ConfigError(format!("{variable} must be true or false, not `{raw}`"))
            })?
        }
        toml::Value::Table(_) => {
            return Err(ConfigError(format!(
                "{variable} names a section, not a key"
            )));
        }
        _ => toml::Value::String(raw.to_string()),
    };
    *slot = typed;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use secrecy::ExposeSecret;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_shipped_defaults_parse_into_the_typed_config() {
        let config = ServiceConfig::load(None, vec![]).unwrap();
        assert_eq!(config.llm.provider, ProviderKind::Openai);
        assert_eq!(config.llm.max_retries, 3);
        assert_eq!(config.exec.output_limit_bytes, 1_048_576);
    }

    #[test]
    fn environment_variables_override_keys_with_their_types() {
        let config = ServiceConfig::load(
            None,
            vars(&[
                ("AUTOFIX__LLM__PROVIDER", "anthropic"),
                ("AUTOFIX__LLM__MAX_RETRIES", "5"),
                ("AUTOFIX__LLM__API_KEY", "sk-test"),
                ("PATH", "/bin"),
            ]),
        )
        .unwrap();
        assert_eq!(config.llm.provider, ProviderKind::Anthropic);
        assert_eq!(config.llm.max_retries, 5);
        assert_eq!(config.llm.api_key.expose_secret(), "sk-test");
    }

    #[test]
    fn a_wrong_key_or_value_fails_with_its_name() {
        let unknown = ServiceConfig::load(None, vars(&[("AUTOFIX__LLM__MODLE", "x")])).unwrap_err();
        assert_eq!(
            unknown.to_string(),
            "configuration: AUTOFIX__LLM__MODLE names no configuration key"
        );
        let typed =
            ServiceConfig::load(None, vars(&[("AUTOFIX__LLM__MAX_RETRIES", "many")])).unwrap_err();
        assert_eq!(
            typed.to_string(),
            "configuration: AUTOFIX__LLM__MAX_RETRIES must be a whole number, not `many`"
        );
        let provider =
            ServiceConfig::load(None, vars(&[("AUTOFIX__LLM__PROVIDER", "bard")])).unwrap_err();
        assert!(provider.to_string().contains("bard"), "{provider}");
        let file = ServiceConfig::load(Some(("autofix.toml", "[llm]\ntemperature = 1\n")), vec![])
            .unwrap_err();
        assert_eq!(
            file.to_string(),
            "configuration: unknown key `llm.temperature`"
        );
    }
}
