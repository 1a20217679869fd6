//! Service configuration: `config/default.toml` holds every key with its default, a file and
//! `AUTOFIX__SECTION__KEY` variables override them (merged by the `config` crate) into one typed struct.

pub mod data_dir;
mod layers;
pub mod placeholders;
pub mod repo;

use std::path::{Path, PathBuf};
use std::time::Duration;

use secrecy::SecretString;
use serde::{Deserialize, Serialize};

use crate::exec::{Limits, Sandbox, SandboxMode};
use crate::forge::PushTo;
use crate::llm::{ProviderConfig, ProviderKind};

/// The defaults, compiled in so the binary needs no file beside it.
pub const DEFAULT_TOML: &str = include_str!("../../config/default.toml");
/// The prefix of every configuration variable.
pub const ENV_PREFIX: &str = "AUTOFIX__";

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceConfig {
    /// The data directory: as configured, or the default [`data_dir::default_data_dir`] chose.
    pub workdir: String,
    pub log: LogSection,
    pub llm: LlmSection,
    pub budget: BudgetSection,
    pub exec: ExecSection,
    pub git: GitSection,
    pub pipeline: PipelineSection,
    pub ci: CiSection,
    pub server: ServerSection,
    pub database: DatabaseSection,
    pub forge: ForgeSection,
    pub github: GitHubSection,
    pub gitlab: GitLabSection,
    pub bot: BotSection,
    pub candidates: CandidatesSection,
    /// The files the configuration was read from (the `--config` file and every `…_FILE`
    /// secret): never visible to a sandboxed command.
    #[serde(skip)]
    pub source_files: Vec<PathBuf>,
    /// Where `workdir` came from: "configured", or the rule that chose the default.
    #[serde(skip)]
    pub workdir_origin: String,
    /// Set when the GitHub App credentials come from the setup page's stored App.
    #[serde(skip)]
    pub github_app_origin: Option<PathBuf>,
}

/// How `autofix serve` logs: the format of each line and the level (`RUST_LOG`, when set, wins).
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LogSection {
    #[serde(deserialize_with = "one_of")]
    pub format: LogFormat,
    pub level: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSection {
    pub listen: String,
    pub body_limit_bytes: usize,
    pub read_timeout_secs: u64,
    pub header_read_timeout_ms: u64,
    pub idle_timeout_ms: u64,
    pub max_connections: usize,
    /// Bearer token of the setup and jobs pages (and of `/metrics`, unless `metrics_public`);
    /// empty: they answer on loopback only.
    #[serde(serialize_with = "masked")]
    pub admin_token: SecretString,
    /// `/metrics` answers anyone who reaches the port, token or not.
    pub metrics_public: bool,
    /// The address the forges reach this server at (for the GitHub App's webhook URL).
    pub public_url: String,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DatabaseSection {
    #[serde(serialize_with = "password_masked")]
    pub url: String,
}

/// What the bot does on every forge: where it pushes its branches.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ForgeSection {
    #[serde(deserialize_with = "one_of")]
    pub push_to: PushTo,
}

/// GitHub: the webhook secrets (every one accepted, so one can be rotated in) and the API
/// credentials — a personal token, or a GitHub App (id + private key file).
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GitHubSection {
    pub api_url: String,
    pub web_url: String,
    #[serde(serialize_with = "masked")]
    pub token: SecretString,
    pub app_id: u64,
    pub private_key_path: String,
    #[serde(serialize_with = "masked")]
    pub webhook_secret: SecretString,
    #[serde(serialize_with = "masked_list")]
    pub webhook_secrets: Vec<SecretString>,
    pub request_timeout_secs: u64,
}

/// GitLab: the webhook secret tokens and the REST v4 API with a token.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GitLabSection {
    pub api_url: String,
    #[serde(serialize_with = "masked")]
    pub token: SecretString,
    #[serde(serialize_with = "masked")]
    pub webhook_secret: SecretString,
    #[serde(serialize_with = "masked_list")]
    pub webhook_secrets: Vec<SecretString>,
    pub request_timeout_secs: u64,
}

/// How the bot behaves on the forges and how its workers run jobs.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BotSection {
    pub trigger_label: String,
    pub command_word: String,
    pub remark_wait_ms: u64,
    pub failed_label: String,
    pub workers: usize,
    pub lease_secs: u64,
    pub poll_interval_ms: u64,
    pub max_attempts: u32,
    pub drain_secs: u64,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GitSection {
    pub author_name: String,
    pub author_email: String,
}

/// Repairs of failed checks on autofix's own change requests.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CiSection {
    pub max_repairs: u32,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineSection {
    pub context_tokens: usize,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LlmSection {
    #[serde(deserialize_with = "one_of")]
    pub provider: ProviderKind,
    pub base_url: String,
    pub model: String,
    #[serde(serialize_with = "masked")]
    pub api_key: SecretString,
    pub request_timeout_secs: u64,
    pub max_retries: u32,
    pub initial_backoff_ms: u64,
    pub max_backoff_secs: u64,
    pub max_output_tokens_triage: u32,
    pub max_output_tokens_plan: u32,
    pub max_output_tokens_audit: u32,
    pub max_output_tokens_edit: u32,
    pub price: PriceSection,
}

/// `[llm.price]`: the configured model's price in US dollars per million tokens; a key left
/// empty takes the built-in price (see [`crate::llm::price`]).
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PriceSection {
    #[serde(deserialize_with = "optional_usd", serialize_with = "usd_or_empty")]
    pub input: Option<f64>,
    #[serde(deserialize_with = "optional_usd", serialize_with = "usd_or_empty")]
    pub cached_input: Option<f64>,
    #[serde(deserialize_with = "optional_usd", serialize_with = "usd_or_empty")]
    pub output: Option<f64>,
}

/// `[budget]`: the service's spending caps in US dollars; 0 is none.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetSection {
    pub max_usd_per_job: f64,
    pub max_usd_per_repository_per_day: f64,
    pub max_usd_per_day: f64,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ExecSection {
    pub default_timeout_secs: u64,
    pub output_limit_bytes: usize,
    #[serde(deserialize_with = "one_of")]
    pub sandbox: SandboxMode,
    pub bwrap: String,
    pub toolchain_paths: Vec<String>,
    pub max_processes: u64,
    pub max_memory_bytes: u64,
    pub max_file_size_bytes: u64,
    pub core_dumps: bool,
    /// Bound of the dependency caches (`0`: none).
    pub cache_max_bytes: u64,
    /// Candidates of one job validated at the same time (each in its own sandbox).
    pub parallel_candidates: usize,
}

/// The service's bound on the candidates a repository may ask for.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CandidatesSection {
    /// Most candidate changes per job; a repository's `[candidates] count` above it is lowered.
    pub max: u32,
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
    /// The defaults, then an optional file (`(name, text)`), then `AUTOFIX__*` variables from
    /// `vars` (with `…_FILE` secrets); an empty `workdir` becomes the default data directory.
    pub fn load(
        file: Option<(&str, &str)>,
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> Result<ServiceConfig, ConfigError> {
        let defaults: toml::Table = DEFAULT_TOML
            .parse()
            .map_err(|err| ConfigError(format!("the built-in defaults do not parse: {err}")))?;
        let mut source_files = Vec::new();
        let mut builder = config::Config::builder().add_source(config::File::from_str(
            DEFAULT_TOML,
            config::FileFormat::Toml,
        ));
        if let Some((name, text)) = file {
            let overlay: toml::Table = text
                .parse()
                .map_err(|err| ConfigError(format!("{name} is not valid TOML: {err}")))?;
            layers::check_file_keys(&defaults, &overlay, "")?;
            builder = builder.add_source(config::File::from_str(text, config::FileFormat::Toml));
            source_files.push(PathBuf::from(name));
        }
        let env = layers::read_environment(&defaults, vars)?;
        builder = builder.add_source(
            config::Environment::with_prefix(ENV_PREFIX.trim_end_matches('_'))
                .prefix_separator("__")
                .separator("__")
                .source(Some(env.scalars.into_iter().collect())),
        );
        for (key, items) in env.lists {
            builder = builder
                .set_override(key.as_str(), items)
                .map_err(|err| ConfigError(format!("{key}: {err}")))?;
        }
        let mut config: ServiceConfig = builder
            .build()
            .and_then(config::Config::try_deserialize)
            .map_err(|err| ConfigError(err.to_string()))?;
        source_files.extend(env.files);
        config.source_files = source_files;
        config.workdir_origin = "configured".into();
        if config.workdir.trim().is_empty() {
            let (dir, rule) =
                data_dir::default_data_dir(env.xdg_data_home.as_deref(), env.home.as_deref());
            config.workdir = dir.display().to_string();
            config.workdir_origin = format!("default: {rule}");
        }
        config.check_money()?;
        config.adopt_stored_github_app()?;
        Ok(config)
    }

    /// Prices and caps are amounts of money: a negative one (or one that is not a number) is
    /// refused by its key.
    fn check_money(&self) -> Result<(), ConfigError> {
        let price = &self.llm.price;
        let budget = &self.budget;
        let amounts = [
            ("llm.price.input", price.input),
            ("llm.price.cached_input", price.cached_input),
            ("llm.price.output", price.output),
            ("budget.max_usd_per_job", Some(budget.max_usd_per_job)),
            (
                "budget.max_usd_per_repository_per_day",
                Some(budget.max_usd_per_repository_per_day),
            ),
            ("budget.max_usd_per_day", Some(budget.max_usd_per_day)),
        ];
        for (key, amount) in amounts {
            if let Some(amount) = amount
                && !(amount.is_finite() && amount >= 0.0)
            {
                return Err(ConfigError(format!(
                    "{key} must be 0 or more US dollars, not {amount}"
                )));
            }
        }
        Ok(())
    }

    /// The configured model's price: `[llm.price]` over the built-in table.
    pub fn pricing(&self) -> crate::llm::price::Pricing {
        let price = &self.llm.price;
        crate::llm::price::pricing(
            &self.llm.model,
            &crate::llm::price::PriceOverride {
                input: price.input,
                cached_input: price.cached_input,
                output: price.output,
            },
        )
    }

    /// With no GitHub credentials configured, the App the setup page stored in the data directory.
    fn adopt_stored_github_app(&mut self) -> Result<(), ConfigError> {
        use secrecy::ExposeSecret;
        let github = &mut self.github;
        let configured = github.app_id != 0 || !github.token.expose_secret().trim().is_empty();
        if configured {
            return Ok(());
        }
        let data_dir = PathBuf::from(&self.workdir);
        let Some(app) = data_dir::StoredGitHubApp::load(&data_dir)
            .map_err(|err| ConfigError(format!("the stored GitHub App: {err}")))?
        else {
            return Ok(());
        };
        github.app_id = app.id;
        github.private_key_path = data_dir::StoredGitHubApp::key_file(&data_dir)
            .display()
            .to_string();
        if github.all_webhook_secrets().is_empty() {
            github.webhook_secret = SecretString::from(app.webhook_secret);
        }
        self.github_app_origin = Some(data_dir::StoredGitHubApp::file(&data_dir));
        Ok(())
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

    /// The configuration as it is in effect, as TOML, with every secret shown only as `(set)`.
    pub fn effective_toml(&self) -> String {
        toml::to_string(self).expect("the configuration serialises")
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

/// An enumeration's value read as text, then matched by serde, so that a wrong one is refused
/// with the valid values listed (the `config` crate's own enum reading names a Rust type).
fn one_of<'de, D, T>(value: D) -> Result<T, D::Error>
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
fn optional_usd<'de, D>(value: D) -> Result<Option<f64>, D::Error>
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

fn usd_or_empty<S: serde::Serializer>(usd: &Option<f64>, out: S) -> Result<S::Ok, S::Error> {
    match usd {
        Some(usd) => out.serialize_f64(*usd),
        None => out.serialize_str(""),
    }
}

/// How a secret shows in the effective configuration: whether it is set, never its value.
fn masked<S: serde::Serializer>(secret: &SecretString, out: S) -> Result<S::Ok, S::Error> {
    use secrecy::ExposeSecret;
    out.serialize_str(mask(secret.expose_secret()))
}

fn masked_list<S: serde::Serializer>(secrets: &[SecretString], out: S) -> Result<S::Ok, S::Error> {
    use secrecy::ExposeSecret;
    out.collect_seq(secrets.iter().map(|secret| mask(secret.expose_secret())))
}

fn mask(value: &str) -> &'static str {
    if value.is_empty() { "" } else { "(set)" }
}

fn password_masked<S: serde::Serializer>(url: &str, out: S) -> Result<S::Ok, S::Error> {
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
    fn the_dependency_caches_hold_ten_gibibytes_unless_told_otherwise_and_zero_turns_them_off() {
        let default = ServiceConfig::load(None, vec![]).unwrap();
        assert_eq!(default.exec.cache_max_bytes, 10 * 1024 * 1024 * 1024);
        let off =
            ServiceConfig::load(None, vars(&[("AUTOFIX__EXEC__CACHE_MAX_BYTES", "0")])).unwrap();
        assert_eq!(off.exec.cache_max_bytes, 0);
        let wrong = ServiceConfig::load(None, vars(&[("AUTOFIX__EXEC__CACHE_MAX_BYTES", "10G")]))
            .unwrap_err();
        assert_eq!(
            wrong.to_string(),
            "configuration: AUTOFIX__EXEC__CACHE_MAX_BYTES must be a whole number, not `10G`"
        );
    }

    #[test]
    fn the_server_defaults_listen_on_loopback_with_no_webhook_secrets() {
        let config = ServiceConfig::load(None, vec![]).unwrap();
        assert_eq!(config.server.listen, "127.0.0.1:8080");
        assert_eq!(config.server.body_limit_bytes, 5 * 1024 * 1024);
        assert_eq!(config.server.header_read_timeout_ms, 10_000);
        assert_eq!(config.server.idle_timeout_ms, 60_000);
        assert_eq!(config.server.max_connections, 1024);
        assert!(config.github.webhook_secrets.is_empty());
        assert!(config.gitlab.webhook_secrets.is_empty());
        assert_eq!(config.bot.trigger_label, "auto-fix");
        assert_eq!(config.database.url, "autofix.db");
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
        let connections =
            ServiceConfig::load(None, vars(&[("AUTOFIX__SERVER__MAX_CONNECTIONS", "lots")]))
                .unwrap_err();
        assert_eq!(
            connections.to_string(),
            "configuration: AUTOFIX__SERVER__MAX_CONNECTIONS must be a whole number, not `lots`"
        );
        let timeout = ServiceConfig::load(
            None,
            vars(&[("AUTOFIX__SERVER__HEADER_READ_TIMEOUT_MS", "10s")]),
        )
        .unwrap_err();
        assert_eq!(
            timeout.to_string(),
            "configuration: AUTOFIX__SERVER__HEADER_READ_TIMEOUT_MS must be a whole number, not `10s`"
        );
        let unknown =
            ServiceConfig::load(Some(("autofix.toml", "[github]\nsecret = \"x\"\n")), vec![])
                .unwrap_err();
        assert_eq!(
            unknown.to_string(),
            "configuration: unknown key `github.secret`"
        );
    }

    #[test]
    fn every_secret_and_the_database_url_can_come_from_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let url = dir.path().join("database-url");
        std::fs::write(&url, "postgres://autofix:pw@db/autofix\n").unwrap();
        let secret = dir.path().join("webhook-secret");
        std::fs::write(&secret, "0123\n").unwrap();
        let config = ServiceConfig::load(
            None,
            vars(&[
                ("AUTOFIX__DATABASE__URL_FILE", url.to_str().unwrap()),
                (
                    "AUTOFIX__GITHUB__WEBHOOK_SECRET_FILE",
                    secret.to_str().unwrap(),
                ),
                ("AUTOFIX__SERVER__ADMIN_TOKEN", "0042"),
            ]),
        )
        .unwrap();
        assert_eq!(config.database_url(), "postgres://autofix:pw@db/autofix");
        // Read as text, never as a number: leading zeros stay.
        assert_eq!(config.github.webhook_secret.expose_secret(), "0123");
        assert_eq!(config.server.admin_token.expose_secret(), "0042");
        assert!(config.source_files.contains(&url));
        let both = ServiceConfig::load(
            None,
            vars(&[
                ("AUTOFIX__DATABASE__URL", "x.db"),
                ("AUTOFIX__DATABASE__URL_FILE", url.to_str().unwrap()),
            ]),
        )
        .unwrap_err();
        assert_eq!(
            both.to_string(),
            "configuration: AUTOFIX__DATABASE__URL and AUTOFIX__DATABASE__URL_FILE set the same key: keep one"
        );
    }

    #[test]
    fn with_no_workdir_the_data_directory_is_one_the_user_can_write() {
        let config =
            ServiceConfig::load(None, vars(&[("HOME", "/home/ann"), ("USER", "ann")])).unwrap();
        assert_eq!(config.workdir, "/home/ann/.local/share/autofix");
        assert_eq!(config.workdir_origin, "default: $HOME/.local/share/autofix");
        assert_eq!(
            config.database_url(),
            "/home/ann/.local/share/autofix/autofix.db"
        );
        let configured =
            ServiceConfig::load(None, vars(&[("AUTOFIX__WORKDIR", "/srv/autofix")])).unwrap();
        assert_eq!(configured.database_url(), "/srv/autofix/autofix.db");
        assert_eq!(configured.workdir_origin, "configured");
    }

    #[test]
    fn the_app_the_setup_page_stored_is_used_when_no_credentials_are_configured() {
        let data = tempfile::tempdir().unwrap();
        let workdir = data.path().to_str().unwrap();
        data_dir::StoredGitHubApp {
            id: 7,
            slug: "autofix-acme".into(),
            html_url: "https://github.com/apps/autofix-acme".into(),
            webhook_secret: "from-github".into(),
            client_id: "Iv1".into(),
            client_secret: "cs".into(),
        }
        .save(data.path(), "PEM")
        .unwrap();
        let config = ServiceConfig::load(None, vars(&[("AUTOFIX__WORKDIR", workdir)])).unwrap();
        assert_eq!(config.github.app_id, 7);
        assert!(
            config
                .github
                .private_key_path
                .ends_with("github-app/private-key.pem")
        );
        assert_eq!(config.github.webhook_secret.expose_secret(), "from-github");
        let token = ServiceConfig::load(
            None,
            vars(&[
                ("AUTOFIX__WORKDIR", workdir),
                ("AUTOFIX__GITHUB__TOKEN", "ghp"),
            ]),
        )
        .unwrap();
        assert_eq!(token.github.app_id, 0, "configured credentials win");
    }

    #[test]
    fn a_section_given_a_value_in_a_file_is_refused_by_name() {
        let err =
            ServiceConfig::load(Some(("autofix.toml", "log = \"json\"\n")), vec![]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "configuration: `log` is a section, not a key"
        );
        let format =
            ServiceConfig::load(None, vars(&[("AUTOFIX__LOG__FORMAT", "xml")])).unwrap_err();
        assert!(format.to_string().contains("xml"), "{format}");
        assert!(format.to_string().contains("log.format"), "{format}");
    }
    #[test]
    fn the_bot_pushes_to_the_repository_unless_told_to_use_its_fork() {
        let config = ServiceConfig::load(None, vec![]).unwrap();
        assert_eq!(config.forge.push_to, PushTo::Base);
        let fork = ServiceConfig::load(None, vars(&[("AUTOFIX__FORGE__PUSH_TO", "fork")])).unwrap();
        assert_eq!(fork.forge.push_to, PushTo::Fork);
        let file = ServiceConfig::load(
            Some(("autofix.toml", "[forge]\npush_to = \"fork\"\n")),
            vec![],
        )
        .unwrap();
        assert_eq!(file.forge.push_to, PushTo::Fork);
        assert!(
            file.effective_toml()
                .contains("[forge]\npush_to = \"fork\"")
        );
    }

    #[test]
    fn the_push_target_can_come_from_a_file_like_every_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("push-to");
        std::fs::write(&path, "fork\n").unwrap();
        let config = ServiceConfig::load(
            None,
            vars(&[("AUTOFIX__FORGE__PUSH_TO_FILE", path.to_str().unwrap())]),
        )
        .unwrap();
        assert_eq!(config.forge.push_to, PushTo::Fork);
    }

    #[test]
    fn a_push_target_that_is_neither_base_nor_fork_is_refused_with_the_valid_ones() {
        let err = ServiceConfig::load(None, vars(&[("AUTOFIX__FORGE__PUSH_TO", "upstream")]))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "configuration: \"upstream\" is not a push target (valid: \"base\", \"fork\") for key `forge.push_to`"
        );
        let file = ServiceConfig::load(
            Some(("autofix.toml", "[forge]\npush_to = \"Fork\"\n")),
            vec![],
        )
        .unwrap_err();
        assert!(
            file.to_string().contains("(valid: \"base\", \"fork\")"),
            "{file}"
        );
        assert!(file.to_string().contains("forge.push_to"), "{file}");
    }

    #[test]
    fn a_well_known_model_is_priced_from_the_table_until_the_operator_sets_a_price() {
        let default =
            ServiceConfig::load(None, vars(&[("AUTOFIX__LLM__MODEL", "gpt-4o")])).unwrap();
        let pricing = default.pricing();
        assert_eq!(pricing.origin, crate::llm::price::PriceOrigin::Table);
        assert_eq!(pricing.price.input, 2.5);
        let file = ServiceConfig::load(
            Some((
                "autofix.toml",
                "[llm]\nmodel = \"gpt-4o\"\n[llm.price]\ninput = 1\noutput = 4.5\n",
            )),
            vec![],
        )
        .unwrap();
        assert_eq!(file.pricing().price.input, 1.0);
        assert_eq!(file.pricing().price.output, 4.5);
        assert_eq!(
            file.pricing().price.cached_input,
            1.25,
            "the table's, not set"
        );
        let env = ServiceConfig::load(
            None,
            vars(&[
                ("AUTOFIX__LLM__MODEL", "qwen2.5-coder"),
                ("AUTOFIX__LLM__PRICE__OUTPUT", "0.8"),
            ]),
        )
        .unwrap();
        assert_eq!(env.pricing().price.output, 0.8);
        assert!(env.pricing().known());
        assert!(env.effective_toml().contains("[llm.price]\ninput = \"\""));
    }

    #[test]
    fn a_price_or_a_cap_that_is_not_an_amount_of_money_is_refused_by_its_key() {
        let word = ServiceConfig::load(None, vars(&[("AUTOFIX__LLM__PRICE__INPUT", "cheap")]))
            .unwrap_err();
        assert!(word.to_string().contains("not `cheap`"), "{word}");
        let negative = ServiceConfig::load(
            Some(("autofix.toml", "[budget]\nmax_usd_per_day = -1.0\n")),
            vec![],
        )
        .unwrap_err();
        assert_eq!(
            negative.to_string(),
            "configuration: budget.max_usd_per_day must be 0 or more US dollars, not -1"
        );
        let cap = ServiceConfig::load(None, vars(&[("AUTOFIX__BUDGET__MAX_USD_PER_JOB", "2.5$")]))
            .unwrap_err();
        assert_eq!(
            cap.to_string(),
            "configuration: AUTOFIX__BUDGET__MAX_USD_PER_JOB must be a number, not `2.5$`"
        );
        let set = ServiceConfig::load(None, vars(&[("AUTOFIX__BUDGET__MAX_USD_PER_JOB", "2.5")]))
            .unwrap();
        assert_eq!(set.budget.max_usd_per_job, 2.5);
    }
}
