//! Service configuration: `config/default.toml` holds every key with its default, a file and
//! `AUTOFIX__SECTION__KEY` variables override them (merged by the `config` crate) into one typed struct.
//!
//! `sections` holds the typed `[section]`s, `values` how single values are read and shown, and
//! `forge_settings` what the forge clients are built from; loading, checking and what the rest
//! of the service derives from the whole are here.

pub mod data_dir;
mod forge_settings;
mod layers;
pub mod placeholders;
pub mod repo;
mod sections;
#[cfg(test)]
mod tests;
mod values;

use std::path::{Path, PathBuf};
use std::time::Duration;

use secrecy::SecretString;
use serde::{Deserialize, Serialize};

use crate::exec::{Limits, Sandbox};
use crate::llm::ProviderConfig;

pub use sections::{
    BotSection, BudgetSection, CandidatesSection, CiSection, DatabaseSection, ExecSection,
    ForgeSection, GitHubSection, GitLabSection, GitSection, LlmSection, LogFormat, LogSection,
    PipelineSection, PriceSection, ServerSection,
};
pub use values::{url_password, without_password};

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
            .map_err(|err| ConfigError(format!("the stored GitHub App: {err:#}")))?
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
