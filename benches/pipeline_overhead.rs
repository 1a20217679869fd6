//! Benchmark (not a test): the engine's own overhead per `autofix fix` attempt on a repository
//! of 10,000 files — everything but LLM latency and validation commands — against the time the
//! `git` CLI takes for the same branch and commit operations, printed as a ratio.

use std::path::Path;
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use autofix::git::Identity;
use autofix::llm::{LlmError, LlmProvider, LlmRequest, LlmResponse, TokenUsage};
use autofix::pipeline::fix::{FixOptions, IssueInput, fix};

const FILES: usize = 10_000;
const RUNS: usize = 11;

/// Answers each stage at once from memory and records how long callers spent inside it.
struct InstantLlm {
    spent: Mutex<Duration>,
}

#[async_trait::async_trait]
impl LlmProvider for InstantLlm {
    fn describe(&self) -> String {
        "in-process canned answers".into()
    }

    fn model(&self) -> &str {
        "canned"
    }

    async fn models(&self) -> Result<Vec<String>, LlmError> {
        Ok(vec!["canned".into()])
    }

    async fn complete(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        let started = Instant::now();
        let text = match request.stage.as_str() {
            "triage" => r#"{"actionable": true, "classification": "fix", "risk": "LOW", "affected_files": ["src/d00/f0000.rs"], "reason": "off by one"}"#.to_string(),
            "plan" => r#"{"plan_steps": ["return the right value"], "file_changes": [{"path": "src/d00/f0000.rs", "operation": "MODIFY"}], "commit_summary": "return the value the caller asked for", "scope": "core"}"#.to_string(),
            "edit" => "src/d00/f0000.rs\n```\n<<<<<<< SEARCH\n    0\n=======\n    1\n>>>>>>> REPLACE\n```\n".to_string(),
            _ => r#"{"decision": "accepted", "reasons": ["ok"], "must_fixes": [], "nice_to_haves": []}"#.to_string(),
        };
        let response = LlmResponse {
            raw_json: String::new(),
            usage: TokenUsage {
                input_tokens: (request.prompt.len() / 4) as u64,
                output_tokens: (text.len() / 4) as u64,
                cached_input_tokens: 0,
                total_tokens: ((request.prompt.len() + text.len()) / 4) as u64,
            },
            text,
            model: None,
            finish_reason: None,
        };
        *self.spent.lock().unwrap() += started.elapsed();
        Ok(response)
    }
}

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .stdout(std::process::Stdio::null())
        .status()
        .expect("git runs");
    assert!(status.success(), "git {args:?}");
}

/// A repository with `FILES` small source files in 100 folders, committed once.
fn make_repository(dir: &Path) {
    for index in 0..FILES {
        let folder = dir.join(format!("src/d{:02}", index / 100));
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(
            folder.join(format!("f{index:04}.rs")),
            format!("/// file {index}\npub fn value_{index}() -> u32 {{\n    0\n}}\n"),
        )
        .unwrap();
    }
    std::fs::write(
        dir.join(".autofix.toml"),
        "[[validate]]\nname = \"noop\"\nrun = [\"true\"]\n",
    )
    .unwrap();
    std::fs::write(dir.join(".gitignore"), "/target\n").unwrap();
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["config", "user.name", "bench"]);
    git(dir, &["config", "user.email", "bench@example.com"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "initial"]);
}

/// Back to main with the feature branch gone, for the next run.
fn reset(dir: &Path, branch: &str) {
    git(dir, &["checkout", "-q", "main"]);
    git(dir, &["branch", "-q", "-D", branch]);
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    let repo = tempfile::tempdir().unwrap();
    let artifacts = tempfile::tempdir().unwrap();
    make_repository(repo.path());
    let issue_file = artifacts.path().join("issue.json");
    std::fs::write(
        &issue_file,
        r#"{"number": 1, "title": "value_0 returns the wrong value", "body": "src/d00/f0000.rs returns 0"}"#,
    )
    .unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let branch = "fix/1-value-0-returns-the-wrong-value";

    let file = repo.path().join("src/d00/f0000.rs");
    let original = std::fs::read_to_string(&file).unwrap();
    // Engine and git runs alternate, so a slow moment of the machine hits both alike.
    let mut engine = Vec::new();
    let mut plain_git = Vec::new();
    for run in 0..RUNS {
        let llm = InstantLlm {
            spent: Mutex::new(Duration::ZERO),
        };
        let options = FixOptions {
            repo: repo.path().to_path_buf(),
            issue: IssueInput::File(issue_file.clone()),
            issue_number: None,
            job_id: None,
            artifacts: Some(artifacts.path().join(format!("run-{run}"))),
            identity: Identity::new("autofix", "autofix@localhost").unwrap(),
            settings: autofix::pipeline::settings::PipelineSettings {
                default_validate_timeout: Duration::from_secs(60),
                output_limit: 1 << 20,
                context_tokens: 60_000,
                output_caps: Default::default(),
                sandbox: autofix::exec::Sandbox::unconfined(),
                cache_max_bytes: autofix::pipeline::dep_cache::DEFAULT_MAX_BYTES,
                max_candidates: autofix::config::repo::MAX_CANDIDATES,
                parallel_candidates: 2,
                pricing: autofix::llm::price::pricing("bench", &Default::default()),
                caps: Default::default(),
            },
            redactor: autofix::redact::Redactor::new(),
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
        };
        let started = Instant::now();
        let summary = runtime.block_on(fix(&options, &llm)).unwrap();
        let total = started.elapsed();
        assert!(
            summary.committed,
            "the benchmark run must succeed: {:?}",
            summary.failure
        );
        let report: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(summary.artifacts.join("TEST_REPORT.json")).unwrap(),
        )
        .unwrap();
        let validation = Duration::from_millis(
            report["commands"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["duration_ms"].as_u64().unwrap_or(0))
                .sum(),
        );
        let llm_time = *llm.spent.lock().unwrap();
        engine.push(total.saturating_sub(validation).saturating_sub(llm_time));
        reset(repo.path(), branch);

        let started = Instant::now();
        git(repo.path(), &["status", "--porcelain"]);
        git(repo.path(), &["checkout", "-q", "-b", branch]);
        std::fs::write(&file, original.replace("    0\n", "    1\n")).unwrap();
        git(repo.path(), &["diff"]);
        git(repo.path(), &["add", "-A"]);
        git(
            repo.path(),
            &[
                "commit",
                "-q",
                "-m",
                "fix(core): return the value the caller asked for",
            ],
        );
        plain_git.push(started.elapsed());
        reset(repo.path(), branch);
    }

    let last_log = artifacts.path().join(format!("run-{}/run.log", RUNS - 1));
    println!("where the last run spent its time (run.log):");
    print!("{}", std::fs::read_to_string(last_log).unwrap_or_default());
    let engine = median(engine);
    let plain_git = median(plain_git);
    println!("pipeline overhead benchmark: {FILES} files, median of {RUNS} runs");
    println!(
        "engine overhead per attempt:   {:>8.1} ms (everything but LLM and validation time)",
        engine.as_secs_f64() * 1e3
    );
    println!(
        "git CLI, same operations:      {:>8.1} ms (status, checkout -b, diff, add -A, commit)",
        plain_git.as_secs_f64() * 1e3
    );
    println!(
        "ratio engine / git:            {:>8.2}x (aim: <= 1.5x)",
        engine.as_secs_f64() / plain_git.as_secs_f64()
    );
}
