//! What the real-model benchmarks share: the issues of `benches/data/real_model/`, the fixture
//! project as a fresh git repository, and the OpenAI-compatible provider on the model server.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use autofix::exec::{Limits, Sandbox, SandboxMode};
use autofix::git::Identity;
use autofix::llm::{LlmProvider, ProviderConfig, ProviderKind, provider};
use autofix::pipeline::fix::{FixOptions, IssueInput};
use autofix::pipeline::issue::Issue;
use autofix::pipeline::json_stage::OutputCaps;
use autofix::redact::Redactor;
use secrecy::SecretString;

pub const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/data/real_model");

/// The benchmark's issues; `REAL_MODEL_ISSUES=N` keeps the first N.
pub fn issues() -> Vec<Issue> {
    let text = std::fs::read_to_string(Path::new(DATA).join("issues.json")).unwrap();
    let mut issues: Vec<Issue> = serde_json::from_str(&text).expect("issues.json");
    if let Some(n) = std::env::var("REAL_MODEL_ISSUES")
        .ok()
        .and_then(|n| n.parse().ok())
    {
        issues.truncate(n);
    }
    issues
}

/// A fresh git repository in `dir` holding the fixture project, with `more_config` added to its
/// `.autofix.toml`, one commit on `main`.
pub fn fixture_repo(dir: &Path, more_config: &str) {
    let source = Path::new(DATA).join("repo");
    for entry in std::fs::read_dir(&source).expect("the fixture repository") {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
    }
    if !more_config.is_empty() {
        let config = dir.join(".autofix.toml");
        let mut text = std::fs::read_to_string(&config).unwrap();
        text.push_str(more_config);
        std::fs::write(&config, text).unwrap();
    }
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["add", "-A"],
        &[
            "-c",
            "user.name=Maintainer",
            "-c",
            "user.email=maintainer@example.com",
            "commit",
            "-q",
            "-m",
            "textkit",
        ],
    ] {
        let status = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    }
}

/// The OpenAI-compatible provider on the server at `base_url` serving `model`.
pub fn provider_at(base_url: String, model: String) -> Arc<dyn LlmProvider> {
    Arc::from(
        provider(ProviderConfig {
            kind: ProviderKind::Openai,
            base_url,
            model,
            api_key: SecretString::from("unused"),
            request_timeout: Duration::from_secs(300),
            max_retries: 0,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(1),
        })
        .expect("the OpenAI provider"),
    )
}

/// The options of one benchmark job on `repo` for `issue`, its artifacts under `artifacts`:
/// sandboxed, a small context and edit cap for the small model, no cache, no price.
pub fn options(repo: &Path, issue: &Issue, artifacts: &Path) -> FixOptions {
    FixOptions {
        repo: repo.to_path_buf(),
        issue: IssueInput::Given(issue.clone()),
        issue_number: issue.number,
        job_id: None,
        artifacts: Some(artifacts.join("run")),
        identity: Identity::new("autofix", "autofix@example.com").unwrap(),
        settings: autofix::pipeline::settings::PipelineSettings {
            default_validate_timeout: Duration::from_secs(120),
            output_limit: 256 * 1024,
            context_tokens: 3_000,
            output_caps: OutputCaps {
                edit: 768,
                ..OutputCaps::default()
            },
            sandbox: Sandbox::new(SandboxMode::Bwrap, "bwrap", &[], &[], Limits::default()),
            cache_max_bytes: autofix::pipeline::dep_cache::DEFAULT_MAX_BYTES,
            max_candidates: autofix::config::repo::MAX_CANDIDATES,
            parallel_candidates: 2,
            pricing: autofix::llm::price::pricing("bench", &Default::default()),
            caps: Default::default(),
        },
        redactor: Redactor::new(),
        cache_dir: None,
        dep_cache: Default::default(),
        repo_config: None,
        baseline_cache: None,
        stages: autofix::telemetry::Stages::none(),
        revision: None,
        cancel: Default::default(),
        approval: Default::default(),
        earlier_reproduction: None,
        spend: autofix::llm::spend::SpendGuard::new(
            autofix::llm::price::pricing("bench", &Default::default()),
            Vec::new(),
        ),
        candidates: Default::default(),
    }
}
