//! The operator commands (`autofix jobs list|show`, `autofix replay`) run as the real binary
//! against an SQLite job store prepared through the library.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use autofix::failure::{FailureCode, Stage};
use autofix::forge::{ForgeKind, Triggers, parse_delivery};
use autofix::store::{Delivery, EnqueueOutcome, Finish, JobId, JobKey, Store};
use chrono::{DateTime, TimeZone, Utc};

const LEASE: Duration = Duration::from_secs(600);
/// The recorded GitHub `labeled` delivery adds `bug` to Codertocat/Hello-World#1.
const LABELED_ISSUE: &str = "github:Codertocat/Hello-World#1";

/// A job store file and a configuration naming it, in a temp dir.
struct Operator {
    dir: tempfile::TempDir,
    store: Store,
}

impl Operator {
    async fn new() -> Operator {
        Self::with_trigger("bug").await
    }

    async fn with_trigger(trigger_label: &str) -> Operator {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("autofix.db");
        let store = Store::open_sqlite(&db).await.unwrap();
        std::fs::write(
            dir.path().join("autofix.toml"),
            format!(
                "workdir = {:?}\n[database]\nurl = {:?}\n[bot]\ntrigger_label = {trigger_label:?}\n",
                dir.path().display().to_string(),
                db.display().to_string()
            ),
        )
        .unwrap();
        Operator { dir, store }
    }

    fn config(&self) -> PathBuf {
        self.dir.path().join("autofix.toml")
    }

    /// Runs `autofix ARGS --config FILE` with no `AUTOFIX__*` variable from the caller's shell.
    fn run(&self, args: &[&str]) -> Run {
        run_with_config(args, &self.config())
    }
}

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn run_with_config(args: &[&str], config: &Path) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_autofix"));
    command.args(args).arg("--config").arg(config);
    for (name, _) in std::env::vars() {
        if name.starts_with("AUTOFIX__") {
            command.env_remove(name);
        }
    }
    let Output {
        status,
        stdout,
        stderr,
    } = command.output().expect("run autofix");
    Run {
        code: status.code(),
        stdout: String::from_utf8(stdout).unwrap(),
        stderr: String::from_utf8(stderr).unwrap(),
    }
}

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 22, 9, 0, 0).unwrap()
}

fn after(seconds: i64) -> DateTime<Utc> {
    t0() + chrono::TimeDelta::seconds(seconds)
}

fn fixture(path: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/webhooks")
            .join(path),
    )
    .unwrap()
}

/// A delivery as the server records it: its payload, and what the forge's parser read in it
/// with the default triggers.
fn recorded(id: &str, forge: ForgeKind, event: &str, payload: Vec<u8>) -> Delivery {
    let triggers = Triggers {
        label: "auto-fix",
        command: "autofix",
    };
    let parsed = parse_delivery(forge, event, &payload, &triggers).expect("a readable fixture");
    Delivery {
        id: id.to_owned(),
        forge,
        event: event.to_owned(),
        received_at: t0(),
        payload,
        parsed,
    }
}

fn github_labeled(id: &str) -> Delivery {
    recorded(
        id,
        ForgeKind::GitHub,
        "issues",
        fixture("github/issues/labeled.payload.json"),
    )
}

fn labeled_key() -> JobKey {
    JobKey::new(ForgeKind::GitHub, "Codertocat/Hello-World", 1)
}

async fn enqueue(store: &Store, delivery: &Delivery, key: &JobKey) -> JobId {
    match store
        .record_delivery_and_enqueue(delivery, key, t0())
        .await
        .unwrap()
    {
        EnqueueOutcome::NewJob(job) => job,
        other => panic!("expected a new job, got {other:?}"),
    }
}

/// Job 1 failed at `validate` on issue 1; job 2 runs on issue 2 with a checkpoint.
async fn two_jobs(store: &Store) -> (JobId, JobId) {
    let failed = enqueue(store, &github_labeled("d-1"), &labeled_key()).await;
    store.claim("worker-a", LEASE, after(1)).await.unwrap();
    store
        .record_stage(
            failed,
            "worker-a",
            Stage::Validate,
            "cargo test failed",
            after(2),
        )
        .await
        .unwrap();
    let failure = Finish::failed(
        FailureCode::ValidationFailed,
        Stage::Validate,
        "cargo test failed twice",
    );
    store
        .finish(failed, "worker-a", &failure, after(3))
        .await
        .unwrap();
    let running = enqueue(
        store,
        &github_labeled("d-2"),
        &JobKey::new(ForgeKind::GitHub, "acme/widgets", 2),
    )
    .await;
    store.claim("worker-b", LEASE, after(4)).await.unwrap();
    store
        .record_stage(
            running,
            "worker-b",
            Stage::Edit,
            "edited src/lib.rs",
            after(5),
        )
        .await
        .unwrap();
    store
        .save_checkpoint(running, "worker-b", r#"{"comment_id":77}"#, after(6))
        .await
        .unwrap();
    (failed, running)
}

#[tokio::test]
async fn jobs_list_prints_one_line_per_job_newest_first() {
    let operator = Operator::new().await;
    let (failed, running) = two_jobs(&operator.store).await;

    let listed = operator.run(&["jobs", "list"]);
    let limited = operator.run(&["jobs", "list", "--limit", "1"]);

    assert_eq!(listed.code, Some(0), "{}", listed.stderr);
    let lines: Vec<Vec<&str>> = listed
        .stdout
        .lines()
        .map(|line| line.split_whitespace().collect())
        .collect();
    assert_eq!(
        lines,
        [
            vec![
                "ID", "STATE", "ISSUE", "STAGE", "ATTEMPTS", "FAILURE", "UPDATED", "CAUSE"
            ],
            vec![
                &running.to_string(),
                "running",
                "github:acme/widgets#2",
                "edit",
                "1",
                "-",
                "2026-11-22T09:00:06Z",
                "-"
            ],
            vec![
                &failed.to_string(),
                "failed",
                LABELED_ISSUE,
                "validate",
                "1",
                "VALIDATION_FAILED",
                "2026-11-22T09:00:03Z",
                "cargo",
                "test",
                "failed",
                "twice"
            ],
        ]
    );
    assert_eq!(limited.stdout.lines().count(), 2, "{}", limited.stdout);
    assert!(limited.stdout.contains("acme/widgets#2"));
}

#[tokio::test]
async fn jobs_list_on_an_empty_store_says_so() {
    let operator = Operator::new().await;

    let listed = operator.run(&["jobs", "list"]);

    assert_eq!(
        (listed.code, listed.stdout.as_str()),
        (Some(0), "no jobs\n")
    );
}

#[tokio::test]
async fn jobs_show_prints_the_record_the_checkpoint_and_the_events_oldest_first() {
    let operator = Operator::new().await;
    let (_, running) = two_jobs(&operator.store).await;

    let shown = operator.run(&["jobs", "show", &running.to_string()]);

    assert_eq!(shown.code, Some(0), "{}", shown.stderr);
    let expected = format!(
        "job {running}: github:acme/widgets#2\n\
         state: running after 1 attempt(s)\n\
         stage: edit\n\
         lease: worker-b until 2026-11-22T09:10:04Z\n\
         run after: 2026-11-22T09:00:00Z\n\
         created: 2026-11-22T09:00:00Z\n\
         updated: 2026-11-22T09:00:06Z\n\
         checkpoint: {{\"comment_id\":77}}\n\
         events:\n  \
         2026-11-22T09:00:00Z  queued     delivery d-2 (issues)\n  \
         2026-11-22T09:00:04Z  claimed    attempt 1 by worker-b\n  \
         2026-11-22T09:00:05Z  edit       edited src/lib.rs\n"
    );
    assert_eq!(shown.stdout, expected);
}

#[tokio::test]
async fn jobs_show_of_a_failed_job_names_its_failure() {
    let operator = Operator::new().await;
    let (failed, _) = two_jobs(&operator.store).await;

    let shown = operator.run(&["jobs", "show", &failed.to_string()]);

    assert_eq!(shown.code, Some(0), "{}", shown.stderr);
    assert!(
        shown.stdout.contains("\nfailure: VALIDATION_FAILED\n"),
        "{}",
        shown.stdout
    );
    assert!(
        shown
            .stdout
            .contains("\nlast error: cargo test failed twice\n"),
        "{}",
        shown.stdout
    );
    assert!(
        shown.stdout.contains("\ncheckpoint: none\n"),
        "{}",
        shown.stdout
    );
}

#[tokio::test]
async fn jobs_show_of_an_unknown_id_fails_with_one_clear_line() {
    let operator = Operator::new().await;
    two_jobs(&operator.store).await;

    let shown = operator.run(&["jobs", "show", "99"]);

    assert_eq!(shown.code, Some(1));
    assert_eq!(shown.stdout, "");
    assert_eq!(shown.stderr, "autofix jobs: job 99 does not exist\n");
}

#[tokio::test]
async fn replaying_a_delivery_whose_job_finished_queues_a_new_job_and_keeps_the_original() {
    let operator = Operator::new().await;
    let (failed, _) = two_jobs(&operator.store).await;

    let first = operator.run(&["replay", "d-1"]);
    let store = &operator.store;
    let new_job = store.jobs_list(1).await.unwrap()[0].id;

    assert_eq!(first.code, Some(0), "{}", first.stderr);
    assert_eq!(
        first.stdout,
        format!("job {new_job} queued for {LABELED_ISSUE} (delivery d-1.replay-1)\n")
    );
    assert_ne!(new_job, failed);
    let original = store
        .delivery("d-1")
        .await
        .unwrap()
        .expect("the original stays");
    assert_eq!(original.job_id, Some(failed));
    let replayed = store
        .delivery("d-1.replay-1")
        .await
        .unwrap()
        .expect("stored");
    assert_eq!(replayed.job_id, Some(new_job));
    assert_eq!(replayed.payload, original.payload);
    assert_eq!(replayed.event, "issues");
    assert_eq!(
        store.job_delivery(new_job).await.unwrap().map(|d| d.id),
        Some("d-1.replay-1".to_owned()),
        "the worker re-reads the replayed delivery"
    );
}

#[tokio::test]
async fn replaying_while_the_issue_has_an_active_job_joins_it() {
    let operator = Operator::new().await;
    let job = enqueue(&operator.store, &github_labeled("d-1"), &labeled_key()).await;

    let first = operator.run(&["replay", "d-1"]);
    let second = operator.run(&["replay", "d-1"]);

    assert_eq!(first.code, Some(0), "{}", first.stderr);
    assert_eq!(
        first.stdout,
        format!(
            "job {job} is already active for {LABELED_ISSUE}; delivery d-1.replay-1 joined it\n"
        )
    );
    assert_eq!(
        second.stdout,
        format!(
            "job {job} is already active for {LABELED_ISSUE}; delivery d-1.replay-2 joined it\n"
        ),
        "each replay is a delivery of its own"
    );
    assert_eq!(operator.store.jobs_list(10).await.unwrap().len(), 1);
}

#[tokio::test]
async fn replaying_a_delivery_that_is_no_longer_a_trigger_queues_nothing() {
    let operator = Operator::with_trigger("auto-fix").await;
    operator
        .store
        .record_delivery_and_enqueue(&github_labeled("d-1"), &labeled_key(), t0())
        .await
        .unwrap();

    let replayed = operator.run(&["replay", "d-1"]);

    assert_eq!(replayed.code, Some(1));
    assert_eq!(
        replayed.stderr,
        "autofix replay: delivery d-1 is not a trigger event: label `bug` is not the trigger label `auto-fix`; nothing queued\n"
    );
    assert_eq!(operator.store.delivery("d-1.replay-1").await.unwrap(), None);
    assert_eq!(operator.store.jobs_list(10).await.unwrap().len(), 1);
}

#[tokio::test]
async fn replaying_a_gitlab_delivery_uses_the_gitlab_parser() {
    let operator = Operator::with_trigger("platform").await;
    let delivery = recorded(
        "gl-1",
        ForgeKind::GitLab,
        "Issue Hook",
        fixture("gitlab/issue_hook.json"),
    );
    let key = JobKey::new(ForgeKind::GitLab, "gitlabhq/gitlab-test", 23);
    let job = enqueue(&operator.store, &delivery, &key).await;

    let replayed = operator.run(&["replay", "gl-1"]);

    assert_eq!(
        replayed.stdout,
        format!(
            "job {job} is already active for gitlab:gitlabhq/gitlab-test#23; delivery gl-1.replay-1 joined it\n"
        ),
        "{}",
        replayed.stderr
    );
}

#[tokio::test]
async fn replaying_a_delivery_that_is_not_stored_fails() {
    let operator = Operator::new().await;

    let replayed = operator.run(&["replay", "never-sent"]);

    assert_eq!(replayed.code, Some(1));
    assert_eq!(
        replayed.stderr,
        "autofix replay: no delivery \"never-sent\" is stored\n"
    );
}

#[tokio::test]
async fn replaying_a_stored_delivery_that_cannot_be_parsed_names_the_reason() {
    let operator = Operator::new().await;
    let mut garbled = github_labeled("d-garbled");
    garbled.payload = b"{\"action\": ".to_vec();
    operator
        .store
        .record_delivery_and_enqueue(&garbled, &labeled_key(), t0())
        .await
        .unwrap();

    let replayed = operator.run(&["replay", "d-garbled"]);

    assert_eq!(replayed.code, Some(1));
    assert!(
        replayed.stderr.starts_with(
            "autofix replay: delivery \"d-garbled\" cannot be read: the request body is not JSON"
        ),
        "{}",
        replayed.stderr
    );
    assert!(
        replayed.stderr.ends_with("; nothing queued\n"),
        "{}",
        replayed.stderr
    );
}

#[test]
fn an_operator_command_refuses_to_create_a_store_at_a_missing_path() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("typo.db");
    let config = dir.path().join("autofix.toml");
    std::fs::write(
        &config,
        format!("[database]\nurl = {:?}\n", missing.display().to_string()),
    )
    .unwrap();

    let listed = run_with_config(&["jobs", "list"], &config);

    assert_eq!(listed.code, Some(1));
    assert_eq!(
        listed.stderr,
        format!(
            "autofix jobs: database.url: no job store at {}: the SQLite file does not exist (`autofix serve` creates it on first start)\n",
            missing.display()
        )
    );
    assert!(!missing.exists(), "no empty store is created");
}

#[test]
fn config_check_refuses_what_serve_refuses_with_the_key_at_fault() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("autofix.toml");
    std::fs::write(
        &config,
        format!(
            "workdir = {:?}\n[github]\nwebhook_secret = \"s3cret-hook\"\n",
            dir.path().display().to_string()
        ),
    )
    .unwrap();

    let checked = run_with_config(&["config", "check"], &config);

    assert_eq!(checked.code, Some(22), "invalid input: {}", checked.stderr);
    assert_eq!(
        checked.stderr,
        "autofix config check: github.token or github.app_id: a GitHub webhook secret is set but \
         no API credentials, so no job could run\n"
    );
    assert!(checked.stdout.is_empty(), "{}", checked.stdout);
}

#[test]
fn config_check_prints_the_forges_the_sandbox_and_the_effective_configuration_without_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("autofix.toml");
    std::fs::write(
        &config,
        format!(
            "workdir = {:?}\n[gitlab]\ntoken = \"glpat-very-secret\"\nwebhook_secret = \"hook-secret\"\n\
             [database]\nurl = \"postgres://bot:db-password@127.0.0.1:9/autofix\"\n{LOCAL_MODEL}",
            dir.path().display().to_string()
        ),
    )
    .unwrap();

    let checked = run_with_config(&["config", "check"], &config);

    assert_eq!(checked.code, Some(0), "{}", checked.stderr);
    let out = &checked.stdout;
    assert!(
        out.starts_with("configuration is valid: `autofix serve` would start\n"),
        "{out}"
    );
    assert!(out.contains("\ngithub: missing: not configured"), "{out}");
    assert!(
        out.contains("\ngitlab: configured, not verified: a token at https://gitlab.com/api/v4"),
        "{out}"
    );
    assert!(out.contains("\nsandbox: verified: bwrap works"), "{out}");
    assert!(out.contains("token = \"(set)\""), "{out}");
    assert!(
        out.contains("url = \"postgres://bot:(set)@127.0.0.1:9/autofix\""),
        "{out}"
    );
    for secret in ["glpat-very-secret", "hook-secret", "db-password"] {
        assert!(!out.contains(secret), "{secret} leaked: {out}");
    }
}

/// A model server on loopback: configured, so that no check fails for want of a vendor's key.
const LOCAL_MODEL: &str = "[llm]\nbase_url = \"http://127.0.0.1:9/v1\"\n";

/// A configuration with `[forge] push_to` and what `extra` adds, in `dir`.
fn push_to_config(dir: &Path, push_to: &str, extra: &str) -> PathBuf {
    let config = dir.join("autofix.toml");
    std::fs::write(
        &config,
        format!(
            "workdir = {:?}\n{LOCAL_MODEL}[forge]\npush_to = {push_to:?}\n{extra}",
            dir.display().to_string()
        ),
    )
    .unwrap();
    config
}

fn github_app(dir: &Path) -> String {
    let key = dir.join("app.pem");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/github/test-app-key.pem"),
        &key,
    )
    .unwrap();
    format!(
        "[github]\napp_id = 424242\nprivate_key_path = {:?}\nwebhook_secret = \"s3cret-hook\"\n",
        key.display().to_string()
    )
}

const APP_CANNOT_FORK: &str = "forge.push_to = \"fork\": a GitHub App's installation token \
    cannot create or own a fork: the App's bot account has no user account for one; give \
    autofix a bot user's token (github.token, and no github.app_id) to push to its fork, or keep \
    push_to = \"base\" and require approval for the workflows that use secrets (see the setup page)";

#[test]
fn a_github_app_told_to_push_to_a_fork_is_refused_by_config_check_and_serve_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let config = push_to_config(dir.path(), "fork", &github_app(dir.path()));

    let checked = run_with_config(&["config", "check"], &config);
    assert_eq!(checked.code, Some(22), "{}", checked.stderr);
    assert_eq!(
        checked.stderr,
        format!("autofix config check: {APP_CANNOT_FORK}\n")
    );
    assert!(checked.stdout.is_empty(), "{}", checked.stdout);

    let served = run_with_config(&["serve"], &config);
    assert_eq!(served.code, Some(1), "{}", served.stderr);
    assert_eq!(served.stderr, format!("autofix serve: {APP_CANNOT_FORK}\n"));

    // The same App pushing to the repository itself starts.
    let base = push_to_config(dir.path(), "base", &github_app(dir.path()));
    let checked = run_with_config(&["config", "check"], &base);
    assert_eq!(checked.code, Some(0), "{}", checked.stderr);
    assert!(
        checked.stdout.contains("\npush target: verified: base: "),
        "{}",
        checked.stdout
    );
}

#[test]
fn config_check_names_the_workflows_that_give_secrets_to_the_bots_branches() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    let workflows = repo.join(".github/workflows");
    std::fs::create_dir_all(&workflows).unwrap();
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/ci");
    std::fs::copy(
        data.join("github/polars-test-coverage.yml"),
        workflows.join("test-coverage.yml"),
    )
    .unwrap();
    std::fs::copy(
        data.join("github/kaoto-chromatic.yml"),
        workflows.join("chromatic.yml"),
    )
    .unwrap();
    let base = push_to_config(dir.path(), "base", "");

    let checked = run_with_config(
        &["config", "check", "--repo", repo.to_str().unwrap()],
        &base,
    );

    assert_eq!(checked.code, Some(0), "{}", checked.stderr);
    // The warnings about secrets; those about programs the proposed checks need (`yarn` may
    // be missing on this machine) are another story's.
    let secret_warnings = |stdout: &str| -> Vec<String> {
        stdout
            .lines()
            .filter(|line| line.starts_with("warning: ") && !line.contains(" would fail: "))
            .map(String::from)
            .collect()
    };
    let warnings = secret_warnings(&checked.stdout);
    assert_eq!(
        warnings[0],
        "warning: .github/workflows/test-coverage.yml: job `upload-coverage` runs on \
         pull_request with secrets.CODECOV_TOKEN"
    );
    assert!(
        warnings[1].starts_with(
            "warning: with forge.push_to = \"base\" the bot's branches are the repository's own"
        ),
        "{warnings:#?}"
    );
    assert_eq!(warnings.len(), 2, "{warnings:#?}");

    let fork = push_to_config(dir.path(), "fork", "");
    let checked = run_with_config(
        &["config", "check", "--repo", repo.to_str().unwrap()],
        &fork,
    );
    assert_eq!(checked.code, Some(0), "{}", checked.stderr);
    assert!(
        secret_warnings(&checked.stdout).is_empty(),
        "a fork's pull request gets no secret: {}",
        checked.stdout
    );
    assert!(
        checked
            .stdout
            .contains("\npush target: verified: fork: a fork owned by the bot's user"),
        "{}",
        checked.stdout
    );
}
