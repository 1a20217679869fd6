//! Service configuration: `config/default.toml` holds every key with its default, and any key
//! can be overridden by `AUTOFIX__SECTION__KEY`; the result is one typed, checked struct.

pub mod repo;

use std::path::{Path, PathBuf};
use std::time::Duration;

use secrecy::SecretString;
use serde::Deserialize;

use crate::exec::{Limits, Sandbox, SandboxMode};
use crate::llm::{ProviderConfig, ProviderKind};

/// The defaults, compiled in so the binary needs no file beside it.
pub const DEFAULT_TOML: &str = include_str!("../../config/default.toml");
/// The prefix of every configuration variable.
pub const ENV_PREFIX: &str = "AUTOFIX__";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceConfig {
    pub workdir: String,
    pub llm: LlmSection,
    pub exec: ExecSection,
    pub git: GitSection,
    pub pipeline: PipelineSection,
    pub server: ServerSection,
    pub database: DatabaseSection,
    pub github: GitHubSection,
    pub gitlab: GitLabSection,
    pub bot: BotSection,
    /// The files the configuration was read from (the `--config` file and every `…_FILE`
    /// secret): never visible to a sandboxed command.
    #[serde(skip)]
    pub source_files: Vec<PathBuf>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSection {
    pub listen: String,
    pub body_limit_bytes: usize,
    pub read_timeout_secs: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatabaseSection {
    pub url: String,
}

/// GitHub: the webhook secrets (every one accepted, so one can be rotated in) and the API
/// credentials — a personal token, or a GitHub App (id + private key file).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GitHubSection {
    pub api_url: String,
    pub token: SecretString,
    pub app_id: u64,
    pub private_key_path: String,
    pub webhook_secret: SecretString,
    pub webhook_secrets: Vec<SecretString>,
    pub request_timeout_secs: u64,
}

/// GitLab: the webhook secret tokens and the REST v4 API with a token.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GitLabSection {
    pub api_url: String,
    pub token: SecretString,
    pub webhook_secret: SecretString,
    pub webhook_secrets: Vec<SecretString>,
    pub request_timeout_secs: u64,
}

/// How the bot behaves on the forges and how its workers run jobs.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BotSection {
    pub trigger_label: String,
    pub failed_label: String,
    pub workers: usize,
    pub lease_secs: u64,
    pub poll_interval_ms: u64,
    pub max_attempts: u32,
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
    pub max_output_tokens_triage: u32,
    pub max_output_tokens_plan: u32,
    pub max_output_tokens_audit: u32,
    pub max_output_tokens_edit: u32,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecSection {
    pub default_timeout_secs: u64,
    pub output_limit_bytes: usize,
    pub sandbox: SandboxMode,
    pub bwrap: String,
    pub toolchain_paths: Vec<String>,
    pub max_processes: u64,
    pub max_memory_bytes: u64,
    pub max_file_size_bytes: u64,
    pub core_dumps: bool,
}

impl GitHubSection {
    /// `webhook_secret` (when set) and every entry of `webhook_secrets`.
    pub fn all_webhook_secrets(&self) -> Vec<SecretString> {
        with_single(&self.webhook_secret, &self.webhook_secrets)
    }
}

impl GitLabSection {
    /// `webhook_secret` (when set) and every entry of `webhook_secrets`.
    pub fn all_webhook_secrets(&self) -> Vec<SecretString> {
        with_single(&self.webhook_secret, &self.webhook_secrets)
    }
}

fn with_single(single: &SecretString, list: &[SecretString]) -> Vec<SecretString> {
    use secrecy::ExposeSecret;
    let single = (!single.expose_secret().trim().is_empty()).then(|| single.clone());
    single.into_iter().chain(list.iter().cloned()).collect()
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
        let mut source_files = Vec::new();
        let mut merged: toml::Table = DEFAULT_TOML
            .parse()
            .map_err(|err| ConfigError(format!("the built-in defaults do not parse: {err}")))?;
        if let Some((name, text)) = file {
            let overlay: toml::Table = text
                .parse()
                .map_err(|err| ConfigError(format!("{name} is not valid TOML: {err}")))?;
            merge(&mut merged, overlay, "")?;
            source_files.push(PathBuf::from(name));
        }
        for (name, value) in vars {
            let Some(key) = name.strip_prefix(ENV_PREFIX) else {
                continue;
            };
            match secret_file_key(&merged, key) {
                Some(secret_key) => {
                    let secret = read_secret_file(&name, &value)?;
                    set_from_env(&mut merged, &name, secret_key, &secret)?;
                    source_files.push(PathBuf::from(value));
                }
                None => set_from_env(&mut merged, &name, key, &value)?,
            }
        }
        let mut config = ServiceConfig::deserialize(toml::Value::Table(merged))
            .map_err(|err| ConfigError(err.message().to_string()))?;
        config.source_files = source_files;
        Ok(config)
    }

    /// The sandbox for commands on repository content: the configured mode and limits, the
    /// toolchains on PATH and `exec.toolchain_paths` visible, and the bot's own state hidden
    /// (the workdir, the job store, the configuration and key files).
    pub fn sandbox(&self) -> Sandbox {
        let exec = &self.exec;
        let mut hidden: Vec<PathBuf> = self.source_files.clone();
        hidden.push(PathBuf::from(&self.workdir));
        if !self.github.private_key_path.trim().is_empty() {
            hidden.push(PathBuf::from(&self.github.private_key_path));
        }
        if let Some(file) = self.database_file() {
            hidden.push(file);
        }
        let extra: Vec<PathBuf> = exec.toolchain_paths.iter().map(PathBuf::from).collect();
        Sandbox::new(
            exec.sandbox,
            exec.bwrap.clone(),
            &extra,
            &hidden,
            Limits {
                processes: exec.max_processes,
                address_space_bytes: exec.max_memory_bytes,
                file_size_bytes: exec.max_file_size_bytes,
                core_dumps: exec.core_dumps,
            },
        )
    }

    /// The SQLite file of the job store, when the store is one.
    fn database_file(&self) -> Option<PathBuf> {
        let url = self.database_url();
        if url.contains("://") && !url.starts_with("sqlite:") {
            return None;
        }
        let path = url
            .trim_start_matches("sqlite://")
            .trim_start_matches("sqlite:");
        let path = path.split('?').next().unwrap_or(path);
        (!path.is_empty()).then(|| PathBuf::from(path))
    }

    /// The job store's URL: a plain relative path is taken relative to `workdir`, so the
    /// database lives with the rest of the bot's state wherever `workdir` points.
    pub fn database_url(&self) -> String {
        let url = self.database.url.trim();
        let is_url = url.starts_with("sqlite:") || url.contains("://");
        if is_url || Path::new(url).is_absolute() {
            url.to_owned()
        } else {
            Path::new(&self.workdir).join(url).display().to_string()
        }
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

/// `GITHUB__TOKEN_FILE` → `GITHUB__TOKEN` when that key exists and holds a string: the
/// Docker and Kubernetes convention of giving a secret as a file rather than in the environment.
fn secret_file_key<'k>(table: &toml::Table, key: &'k str) -> Option<&'k str> {
    let base = key
        .strip_suffix("_FILE")
        .or_else(|| key.strip_suffix("_file"))?;
    let mut current = table;
    let parts: Vec<String> = base.split("__").map(str::to_ascii_lowercase).collect();
    let (last, sections) = parts.split_last()?;
    for section in sections {
        current = current.get(section)?.as_table()?;
    }
    matches!(
        current.get(last),
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

/// `AUTOFIX__LLM__MODEL=x` sets `llm.model`, typed like the default it replaces; a list of
/// strings is given comma-separated (`AUTOFIX__GITHUB__WEBHOOK_SECRETS=old,new`).
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
        toml::Value::Array(_) => comma_separated_list(raw),
        _ => toml::Value::String(raw.to_string()),
    };
    *slot = typed;
    Ok(())
}

/// `a, b,,c` → `["a", "b", "c"]`: blanks around and between commas are dropped, so an empty
/// variable means an empty list. (The value never appears in an error: it may be a secret.)
fn comma_separated_list(raw: &str) -> toml::Value {
    toml::Value::Array(
        raw.split(',')
            .map(str::trim)
            .filter(|item| !item.is_empty())
            .map(|item| toml::Value::String(item.to_owned()))
            .collect(),
    )
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

    #[test]
    fn the_server_defaults_listen_on_loopback_with_no_webhook_secrets() {
        let config = ServiceConfig::load(None, vec![]).unwrap();
        assert_eq!(config.server.listen, "127.0.0.1:8080");
        assert_eq!(config.server.body_limit_bytes, 5 * 1024 * 1024);
        assert!(config.github.webhook_secrets.is_empty());
        assert!(config.gitlab.webhook_secrets.is_empty());
        assert_eq!(config.bot.trigger_label, "auto-fix");
        assert_eq!(
            config.database_url(),
            "sqlite:///var/lib/autofix/autofix.db"
        );
    }

    #[test]
    fn webhook_secrets_come_from_a_comma_separated_variable() {
        let config = ServiceConfig::load(
            None,
            vars(&[
                (
                    "AUTOFIX__GITHUB__WEBHOOK_SECRETS",
                    " old-secret , new-secret,",
                ),
                ("AUTOFIX__GITLAB__WEBHOOK_SECRETS", "token"),
            ]),
        )
        .unwrap();
        let github: Vec<&str> = config
            .github
            .webhook_secrets
            .iter()
            .map(|secret| secret.expose_secret())
            .collect();
        assert_eq!(github, ["old-secret", "new-secret"]);
        assert_eq!(config.gitlab.webhook_secrets[0].expose_secret(), "token");
    }

    #[test]
    fn the_single_webhook_secret_of_the_design_joins_the_rotation_list() {
        let config = ServiceConfig::load(
            None,
            vars(&[
                ("AUTOFIX__GITHUB__WEBHOOK_SECRET", "current"),
                ("AUTOFIX__GITHUB__WEBHOOK_SECRETS", "previous"),
            ]),
        )
        .unwrap();
        let secrets: Vec<String> = config
            .github
            .all_webhook_secrets()
            .iter()
            .map(|secret| secret.expose_secret().to_owned())
            .collect();
        assert_eq!(secrets, ["current", "previous"]);
        assert!(config.gitlab.all_webhook_secrets().is_empty());
    }

    #[test]
    fn a_relative_database_path_lives_in_the_workdir() {
        let config = ServiceConfig::load(
            Some((
                "autofix.toml",
                "workdir = \"/srv/bot\"\n[database]\nurl = \"jobs.db\"\n",
            )),
            vec![],
        )
        .unwrap();
        assert_eq!(config.database_url(), "/srv/bot/jobs.db");
        let postgres = ServiceConfig::load(
            None,
            vars(&[("AUTOFIX__DATABASE__URL", "postgres://db/autofix")]),
        )
        .unwrap();
        assert_eq!(postgres.database_url(), "postgres://db/autofix");
    }

    #[test]
    fn a_mistyped_server_key_fails_with_its_name() {
        let limit =
            ServiceConfig::load(None, vars(&[("AUTOFIX__SERVER__BODY_LIMIT_BYTES", "5MiB")]))
                .unwrap_err();
        assert_eq!(
            limit.to_string(),
            "configuration: AUTOFIX__SERVER__BODY_LIMIT_BYTES must be a whole number, not `5MiB`"
        );
        let unknown =
            ServiceConfig::load(Some(("autofix.toml", "[github]\nsecret = \"x\"\n")), vec![])
                .unwrap_err();
        assert_eq!(
            unknown.to_string(),
            "configuration: unknown key `github.secret`"
        );
    }
}
