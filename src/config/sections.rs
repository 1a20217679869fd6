//! The sections of the service configuration, one typed struct per `[section]` of
//! `config/default.toml`, with how each key is read and how it shows in the effective file.

use secrecy::SecretString;
use serde::{Deserialize, Serialize};

use super::values::{masked, masked_list, one_of, optional_usd, password_masked, usd_or_empty};
use crate::exec::SandboxMode;
use crate::forge::PushTo;
use crate::llm::ProviderKind;

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
