//! `autofix fix` as the stories run it: the real binary against a scripted model, its artifacts
//! in a temp folder; and the options of an in-process revalidation that never asks a model.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use autofix::exec::{Limits, Sandbox, SandboxMode};
use autofix::git::Identity;
use autofix::llm::price::{PriceOverride, pricing};
use autofix::llm::spend::SpendGuard;
use autofix::llm::{LlmProvider, ProviderConfig, ProviderKind};
use autofix::pipeline::fix::{FixOptions, IssueInput};
use autofix::pipeline::issue::Issue;
use autofix::pipeline::json_stage::OutputCaps;
use autofix::pipeline::settings::PipelineSettings;
use autofix::redact::Redactor;
use autofix::telemetry::Stages;
use secrecy::SecretString;
use serde_json::Value;

use super::scripted_llm::ScriptedLlm;

/// One `autofix fix` run: what it printed, and its artifacts (under `run/`).
pub struct Fix {
    pub output: Output,
    pub artifacts: tempfile::TempDir,
}

impl Fix {
    /// Runs `autofix fix` on `repo` for `issue`, answered by `llm`.
    pub fn run(repo: &Path, llm: &ScriptedLlm, issue: &Value) -> Fix {
        Fix::run_with(repo, llm, issue, |_| {})
    }

    /// [`Fix::run`], with `adjust` setting more on the command (a working folder, variables).
    pub fn run_with(
        repo: &Path,
        llm: &ScriptedLlm,
        issue: &Value,
        adjust: impl FnOnce(&mut Command),
    ) -> Fix {
        let artifacts = tempfile::tempdir().unwrap();
        let issue_file = artifacts.path().join("issue.json");
        fs::write(&issue_file, issue.to_string()).unwrap();
        let mut command = fix_command(repo, llm, &issue_file);
        command.arg("--out").arg(artifacts.path().join("run"));
        adjust(&mut command);
        let output = command.output().unwrap();
        Fix { output, artifacts }
    }

    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.output.stdout).into_owned()
    }

    pub fn dir(&self) -> PathBuf {
        self.artifacts.path().join("run")
    }

    pub fn json(&self, name: &str) -> Value {
        let text = fs::read_to_string(self.dir().join(name))
            .unwrap_or_else(|err| panic!("{name}: {err}; stdout: {}", self.stdout()));
        serde_json::from_str(&text).unwrap()
    }

    pub fn result(&self) -> Value {
        self.json("RESULT.json")
    }

    pub fn run_log(&self) -> String {
        fs::read_to_string(self.dir().join("run.log")).unwrap()
    }

    /// `RESULT.json`, once the test has checked the run failed with `code` (showing the result
    /// and the run log when it did not).
    pub fn failed_result(&self, code: &str) -> Value {
        let result = self.result();
        assert_eq!(result["failure_code"], code, "{result}\n{}", self.run_log());
        result
    }

    /// Fails the test, showing what the run printed and logged, unless it exited with `code`.
    pub fn assert_exit(&self, code: i32) {
        assert_eq!(
            self.output.status.code(),
            Some(code),
            "{}\n{}",
            self.stdout(),
            self.run_log()
        );
    }
}

/// One SEARCH/REPLACE block of `path` as a model writes it (an empty `search`: a new file).
pub fn search_replace(path: &str, search: &str, replace: &str) -> String {
    format!("{path}\n```\n<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n```\n")
}

/// `autofix fix` on `repo` for the issue in `issue_file`, answered by `llm`, its artifacts where
/// it puts them unless an `--out` is added.
pub fn fix_command(repo: &Path, llm: &ScriptedLlm, issue_file: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_autofix"));
    command
        .arg("fix")
        .arg("--repo")
        .arg(repo)
        .arg("--issue-file")
        .arg(issue_file)
        .env("AUTOFIX__LLM__PROVIDER", "anthropic")
        .env("AUTOFIX__LLM__BASE_URL", llm.base_url())
        .env("AUTOFIX__LLM__MODEL", "claude-test")
        .env("AUTOFIX__LLM__API_KEY", "sk-ant-test")
        .env("AUTOFIX__LLM__MAX_RETRIES", "0")
        .env("AUTOFIX__GIT__AUTHOR_NAME", "autofix-bot")
        .env("AUTOFIX__GIT__AUTHOR_EMAIL", "bot@autofix.example")
        .env("GIT_CONFIG_GLOBAL", "/dev/null");
    command
}

/// The options of a revalidation of issue 7 on `repo`, sandboxed, its artifacts under `out`.
pub fn revalidation_options(repo: &Path, out: &Path) -> FixOptions {
    FixOptions {
        repo: repo.to_path_buf(),
        issue: IssueInput::Given(Issue {
            number: Some(7),
            title: "clamp ignores its bounds".into(),
            body: String::new(),
            labels: Vec::new(),
        }),
        issue_number: Some(7),
        job_id: Some("autofix-job-9".into()),
        artifacts: Some(out.join("run")),
        identity: Identity::new("autofix", "autofix@example.com").unwrap(),
        settings: PipelineSettings {
            default_validate_timeout: Duration::from_secs(120),
            output_limit: 256 * 1024,
            context_tokens: 20_000,
            output_caps: OutputCaps::default(),
            sandbox: Sandbox::new(SandboxMode::Bwrap, "bwrap", &[], &[], Limits::default()),
            cache_max_bytes: autofix::pipeline::dep_cache::DEFAULT_MAX_BYTES,
            max_candidates: autofix::config::repo::MAX_CANDIDATES,
            parallel_candidates: 2,
            pricing: pricing("none", &PriceOverride::default()),
            caps: Default::default(),
        },
        redactor: Redactor::new(),
        cache_dir: Some(out.join("cache")),
        dep_cache: autofix::pipeline::fix::DepCacheOptions {
            pool: Some(out.join("deps")),
            ..Default::default()
        },
        repo_config: None,
        baseline_cache: Some(out.join("baselines")),
        stages: Stages::none(),
        revision: None,
        cancel: Default::default(),
        approval: Default::default(),
        earlier_reproduction: None,
        spend: SpendGuard::new(pricing("none", &PriceOverride::default()), Vec::new()),
        candidates: Default::default(),
    }
}

/// A model nobody listens for: a call to it fails the run with `LLM_ERROR`.
pub fn unreachable_model() -> Box<dyn LlmProvider> {
    autofix::llm::provider(ProviderConfig {
        kind: ProviderKind::Openai,
        base_url: "http://127.0.0.1:9/v1".into(),
        model: "none".into(),
        api_key: SecretString::from("sk-none"),
        request_timeout: Duration::from_secs(1),
        max_retries: 0,
        initial_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(1),
    })
    .unwrap()
}
