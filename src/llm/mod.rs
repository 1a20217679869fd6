//! LLM providers behind one trait: Gemini generateContent, OpenAI-compatible chat
//! completions and Anthropic Messages, each with timeouts, retries and token accounting.

mod anthropic;
mod gemini;
mod http;
pub mod metered;
mod openai;
pub mod price;
mod retry;
pub mod spend;

use std::time::Duration;

use secrecy::SecretString;
use serde::{Deserialize, Serialize};

pub use anthropic::ANTHROPIC_DEFAULT_MAX_TOKENS;
pub(crate) use http::error_chain;

/// The header that tells a log reader (and the scripted test server) which stage asked.
pub const STAGE_HEADER: &str = "X-Autofix-Stage";

/// The header that says which of a job's candidates asked (1-based), when it asks for several.
pub const CANDIDATE_HEADER: &str = "X-Autofix-Candidate";

/// One prompt for one pipeline stage (`initial`, `repair`, `triage`, `plan`, `edit`, `audit`, …).
#[derive(Debug, Clone, Default)]
pub struct LlmRequest {
    /// Sent as the `X-Autofix-Stage` header.
    pub stage: String,
    pub system: Option<String>,
    pub prompt: String,
    pub temperature: Option<f32>,
    pub max_output_tokens: Option<u32>,
    /// The JSON Schema the answer must follow, sent the way the vendor enforces one.
    pub schema: Option<ResponseSchema>,
    /// Sent as the `X-Autofix-Candidate` header: which of the job's candidates asks.
    pub candidate: Option<u32>,
}

/// A JSON answer's schema and its name (`triage`, `plan`, …): OpenAI's `json_schema.name`,
/// Anthropic's tool name.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponseSchema {
    pub name: String,
    pub schema: serde_json::Value,
}

/// How firmly a provider is asked for a schema: each vendor's strongest form first, then
/// weaker ones for servers that refuse it, then none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum SchemaForm {
    /// OpenAI `json_schema`, Gemini `responseSchema`, Anthropic a forced tool call.
    Strict,
    /// OpenAI `json_object` with a `schema` beside it (llama.cpp's Python server), Gemini
    /// `responseMimeType` alone.
    Loose,
    /// The prompt alone asks for JSON.
    None,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub total_tokens: u64,
    /// The part of `input_tokens` the provider read from its prompt cache (billed lower):
    /// OpenAI `prompt_tokens_details.cached_tokens`, Anthropic `cache_read_input_tokens`,
    /// Gemini `cachedContentTokenCount`; 0 when it says nothing.
    #[serde(default)]
    pub cached_input_tokens: u64,
}

/// The model's answer: its text, the raw JSON body as received, and what it cost.
#[derive(Debug, Clone)]
pub struct LlmResponse {
    pub text: String,
    pub raw_json: String,
    pub usage: TokenUsage,
    pub model: Option<String>,
    pub finish_reason: Option<String>,
}

impl LlmResponse {
    /// Whether the answer stopped at the output-token cap: OpenAI `length`, Gemini
    /// `MAX_TOKENS`, Anthropic `max_tokens`.
    pub fn truncated(&self) -> bool {
        self.finish_reason.as_deref().is_some_and(|reason| {
            reason.eq_ignore_ascii_case("length") || reason.eq_ignore_ascii_case("max_tokens")
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    Openai,
    Anthropic,
    Gemini,
}

/// How to reach one provider.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    /// OpenAI-compatible: ends in `/v1`; Anthropic and Gemini: the host root.
    pub base_url: String,
    pub model: String,
    pub api_key: SecretString,
    /// Limit for one HTTP exchange.
    pub request_timeout: Duration,
    /// Further tries after the first, on 429/5xx/529, timeouts and connection faults.
    pub max_retries: u32,
    /// First backoff delay when the server gives no `retry-after`; doubles each retry.
    pub initial_backoff: Duration,
    /// Longest wait the client accepts; a longer `retry-after` ends the retries.
    pub max_backoff: Duration,
}

/// Why a provider gave no usable answer. `raw_body` keeps what the server said.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error("the LLM provider rejected the API key (HTTP {status}): {message}")]
    Unauthorized {
        status: u16,
        message: String,
        raw_body: String,
    },
    #[error("the LLM provider is rate limiting (HTTP {status}): {message}")]
    RateLimited {
        status: u16,
        message: String,
        retry_after: Option<Duration>,
        raw_body: String,
    },
    #[error("the prompt is too long for the model: {message}")]
    ContextTooLong { message: String, raw_body: String },
    #[error("the LLM provider refused the request (HTTP {status}): {message}")]
    BadRequest {
        status: u16,
        message: String,
        raw_body: String,
    },
    #[error("the LLM provider failed (HTTP {status}): {message}")]
    Server {
        status: u16,
        message: String,
        raw_body: String,
    },
    #[error("the LLM provider did not answer within {0:?}")]
    Timeout(Duration),
    #[error("cannot reach the LLM provider: {0}")]
    Transport(String),
    #[error("the LLM provider's answer is not what its API returns: {message}")]
    InvalidResponse { message: String, raw_body: String },
    #[error("the model returned no text (finish reason: {finish_reason})")]
    EmptyResponse {
        finish_reason: String,
        raw_body: String,
    },
    /// The configuration or the request cannot be turned into an HTTP call at all.
    #[error("the LLM provider is not set up correctly: {0}")]
    Config(String),
}

impl LlmError {
    /// What the server said, if it said anything (kept for the `.json` log files).
    pub fn raw_body(&self) -> Option<&str> {
        match self {
            LlmError::Unauthorized { raw_body, .. }
            | LlmError::RateLimited { raw_body, .. }
            | LlmError::ContextTooLong { raw_body, .. }
            | LlmError::BadRequest { raw_body, .. }
            | LlmError::Server { raw_body, .. }
            | LlmError::InvalidResponse { raw_body, .. }
            | LlmError::EmptyResponse { raw_body, .. } => Some(raw_body),
            LlmError::Timeout(_) | LlmError::Transport(_) | LlmError::Config(_) => None,
        }
    }

    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            LlmError::RateLimited { .. }
                | LlmError::Server { .. }
                | LlmError::Timeout(_)
                | LlmError::Transport(_)
        )
    }
}

/// A model behind some vendor's API.
#[async_trait::async_trait]
pub trait LlmProvider: Send + Sync {
    /// `openai`, `anthropic` or `gemini`, and the model, for logs.
    fn describe(&self) -> String;
    /// One completion, with the provider's own retries already spent.
    async fn complete(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError>;
    /// The model requests name.
    fn model(&self) -> &str;
    /// The models the vendor says this key may use (one request, no retries): how
    /// `config check --online` verifies the key and the model without spending tokens.
    async fn models(&self) -> Result<Vec<String>, LlmError>;
}

impl std::fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ProviderKind::Openai => "openai",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Gemini => "gemini",
        })
    }
}

/// Whether `model` takes a sampling temperature: OpenAI's reasoning models (`o1`, `o3`, `o4-mini`,
/// `gpt-5`…) accept only their default, so their candidates differ by instructions instead.
pub fn accepts_temperature(model: &str) -> bool {
    let name = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    let reasoning = ["o1", "o3", "o4", "gpt-5"]
        .iter()
        .any(|family| name == *family || name.starts_with(&format!("{family}-")));
    !reasoning
}

/// Builds the provider `config` names.
///
/// Fails when the base URL is not an absolute http(s) URL, when the model is empty, or when
/// the HTTP client cannot be built; nothing is sent over the network here.
pub fn provider(config: ProviderConfig) -> Result<Box<dyn LlmProvider>, LlmError> {
    match config.kind {
        ProviderKind::Gemini => http::HttpProvider::boxed(gemini::Gemini, config),
        ProviderKind::Openai => http::HttpProvider::boxed(openai::OpenAi, config),
        ProviderKind::Anthropic => http::HttpProvider::boxed(anthropic::Anthropic, config),
    }
}

/// Hosts of vendors whose API always needs a key (a local or self-hosted server may not).
const HOSTED_VENDOR_HOSTS: [&str; 11] = [
    "api.openai.com",
    "api.anthropic.com",
    "generativelanguage.googleapis.com",
    "openai.azure.com",
    "api.mistral.ai",
    "api.groq.com",
    "openrouter.ai",
    "api.together.xyz",
    "api.deepseek.com",
    "api.x.ai",
    "api.fireworks.ai",
];

/// Whether `base_url` is a hosted vendor's API (or a subdomain of one), which refuses every
/// request without an API key.
pub fn is_hosted_vendor(base_url: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(base_url.trim()) else {
        return false;
    };
    let Some(host) = url.host_str() else {
        return false;
    };
    let host = host.to_ascii_lowercase();
    HOSTED_VENDOR_HOSTS
        .iter()
        .any(|vendor| host == *vendor || host.ends_with(&format!(".{vendor}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasoning_models_are_not_given_a_temperature_and_the_others_are() {
        for model in [
            "o1",
            "o3-mini",
            "o4-mini",
            "gpt-5",
            "gpt-5-mini",
            "openai/o3",
        ] {
            assert!(!accepts_temperature(model), "{model}");
        }
        for model in [
            "gpt-4o",
            "gpt-4.1-mini",
            "claude-sonnet-4-5",
            "gemini-2.5-flash",
            "smollm2",
            "o",
        ] {
            assert!(accepts_temperature(model), "{model}");
        }
    }

    #[test]
    fn hosted_vendors_are_told_from_local_and_self_hosted_servers() {
        for hosted in [
            "https://api.openai.com/v1",
            "https://API.Anthropic.com",
            "https://generativelanguage.googleapis.com",
            "https://my-resource.openai.azure.com/openai/v1",
        ] {
            assert!(is_hosted_vendor(hosted), "{hosted}");
        }
        for local in [
            "http://127.0.0.1:8000/v1",
            "http://localhost:11434/v1",
            "https://llm.internal.example.com/v1",
            "https://api.openai.com.attacker.net/v1",
            "not a url",
        ] {
            assert!(!is_hosted_vendor(local), "{local}");
        }
    }
}
