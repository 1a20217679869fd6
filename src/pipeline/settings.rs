//! What the service's configuration says about running the pipeline, read once into typed
//! values and shared by the bot's workers and the local commands (`autofix fix`).

use std::path::PathBuf;
use std::time::Duration;

use super::dep_cache::DepCacheOptions;
use super::fix::CandidateLimits;
use super::json_stage::OutputCaps;
use crate::config::ServiceConfig;
use crate::exec::Sandbox;
use crate::llm::price::Pricing;
use crate::llm::spend::ServiceCaps;

/// The pipeline's settings from the service configuration, the same for every job.
#[derive(Debug, Clone)]
pub struct PipelineSettings {
    /// A validation command's time limit when `.autofix.toml` gives none (`exec.default_timeout_secs`).
    pub default_validate_timeout: Duration,
    /// Output kept of each command (`exec.output_limit_bytes`).
    pub output_limit: usize,
    /// The model's context, which every stage's prompt budget derives from.
    pub context_tokens: usize,
    /// The output-token cap of each stage's requests.
    pub output_caps: OutputCaps,
    /// Where the repository's commands run.
    pub sandbox: Sandbox,
    /// Bound of the dependency caches (`exec.cache_max_bytes`; 0: none).
    pub cache_max_bytes: u64,
    /// Most candidates per job (`candidates.max`) and how many are validated at once
    /// (`exec.parallel_candidates`).
    pub max_candidates: u32,
    pub parallel_candidates: usize,
    /// The configured model's price (`[llm.price]` over the built-in table).
    pub pricing: Pricing,
    /// The service's spending caps (`[budget]`).
    pub caps: ServiceCaps,
}

impl PipelineSettings {
    pub fn from_config(config: &ServiceConfig) -> PipelineSettings {
        PipelineSettings {
            default_validate_timeout: Duration::from_secs(config.exec.default_timeout_secs),
            output_limit: config.exec.output_limit_bytes,
            context_tokens: config.pipeline.context_tokens,
            output_caps: OutputCaps::from_config(&config.llm),
            sandbox: config.sandbox(),
            cache_max_bytes: config.exec.cache_max_bytes,
            max_candidates: config.candidates.max,
            parallel_candidates: config.exec.parallel_candidates,
            pricing: config.pricing(),
            caps: ServiceCaps {
                per_job: config.budget.max_usd_per_job,
                per_repository_per_day: config.budget.max_usd_per_repository_per_day,
                per_day: config.budget.max_usd_per_day,
            },
        }
    }

    /// The dependency caches of `repository` (`github/acme/widgets`) in `pool` (`None`: the
    /// repository's own `.git/autofix/cache`).
    pub fn dep_cache(&self, pool: Option<PathBuf>, repository: String) -> DepCacheOptions {
        DepCacheOptions {
            pool,
            repository,
            max_bytes: self.cache_max_bytes,
        }
    }

    /// The limits on a job's candidates, their work trees made in `scratch` (`None`: the
    /// system's temporary folder); `drafts`: the caller can open a draft for an unproven change.
    pub fn candidate_limits(&self, scratch: Option<PathBuf>, drafts: bool) -> CandidateLimits {
        CandidateLimits {
            max: self.max_candidates,
            parallel: self.parallel_candidates,
            scratch,
            drafts,
        }
    }
}
