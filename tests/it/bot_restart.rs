//! The real `autofix serve` process killed with SIGKILL between two stages of a job and started
//! again: the restarted server finishes the job with exactly one branch, one pull request and one
//! status comment, whatever the forge did with the request the dead server left in flight.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::bot::{
    BotTester, GITHUB_TOKEN, WEBHOOK_SECRET, accepted, clamp_edit, plan, python_project,
    script_python_fix, script_revision, triage,
};
use crate::support::scripted_llm::Reply;
use autofix::store::{JobRecord, Store};

const REPO: &str = "acme/widgets";
const ISSUE: u64 = 7;
const BRANCH: &str = "fix/7-clamp-ignores-its-bounds";
/// Short, so the restarted server takes the dead one's job over within seconds.
const LEASE_SECS: &str = "3";

/// One `autofix serve` process with its state in `dir`.
struct Serve {
    child: Child,
    base: String,
}

impl Serve {
    /// Starts the server, on another free port if the one picked was taken in between.
    fn start(t: &BotTester, dir: &Path, run: usize) -> Serve {
        for _ in 0..5 {
            if let Some(serve) = Self::try_start(t, dir, run) {
                return serve;
            }
        }
        panic!("autofix serve did not start: {}", logs(dir));
    }

    fn try_start(t: &BotTester, dir: &Path, run: usize) -> Option<Serve> {
        let port = free_port();
        let log = std::fs::File::create(dir.join(format!("serve-{run}.log"))).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_autofix"))
            .arg("serve")
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", dir)
            .env("AUTOFIX__WORKDIR", dir.join("work"))
            .env("AUTOFIX__DATABASE__URL", dir.join("autofix.db"))
            .env("AUTOFIX__SERVER__LISTEN", format!("127.0.0.1:{port}"))
            .env("AUTOFIX__GITHUB__API_URL", t.github_fake().api_url())
            .env("AUTOFIX__GITHUB__TOKEN", GITHUB_TOKEN)
            .env("AUTOFIX__GITHUB__WEBHOOK_SECRET", WEBHOOK_SECRET)
            .env("AUTOFIX__LLM__PROVIDER", "anthropic")
            .env("AUTOFIX__LLM__BASE_URL", t.llm.base_url())
            .env("AUTOFIX__LLM__MODEL", "claude-story")
            .env("AUTOFIX__LLM__API_KEY", "sk-ant-story-key")
            .env("AUTOFIX__LLM__MAX_RETRIES", "0")
            .env("AUTOFIX__BOT__LEASE_SECS", LEASE_SECS)
            .env("AUTOFIX__BOT__POLL_INTERVAL_MS", "100")
            .env("AUTOFIX__BOT__WORKERS", "1")
            // The hanging validation reports its pid through files beside the test, outside any
            // work tree: only an unconfined command reaches them. (The sandbox's own kill chain
            // is proven in tests/confinement.rs.)
            .env(
                "AUTOFIX__EXEC__SANDBOX",
                if dir.join("validation-hangs").exists() {
                    "none"
                } else {
                    "bwrap"
                },
            )
            .env("AUTOFIX__GIT__AUTHOR_EMAIL", "autofix@example.com")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("autofix serve starts");
        let mut serve = Serve {
            child,
            base: format!("http://127.0.0.1:{port}"),
        };
        serve.healthy().then_some(serve)
    }

    /// Whether this process (still running) answers `GET /healthz`.
    fn healthy(&mut self) -> bool {
        use std::io::{Read, Write};
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if self.child.try_wait().ok().flatten().is_some() {
                return false;
            }
            let address = self.base.trim_start_matches("http://");
            if let Ok(mut stream) = std::net::TcpStream::connect(address) {
                let _ = stream
                    .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
                let mut answer = String::new();
                let _ = stream.read_to_string(&mut answer);
                if answer.starts_with("HTTP/1.1 200")
                    && self.child.try_wait().ok().flatten().is_none()
                {
                    return true;
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    /// SIGKILL: no shutdown handler, no flush, exactly what a crash or an OOM kill does.
    fn kill(mut self) {
        self.child.kill().expect("SIGKILL the server");
        self.child.wait().expect("reap the server");
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn logs(dir: &Path) -> String {
    let mut text = String::new();
    for run in 1..=2 {
        if let Ok(log) = std::fs::read_to_string(dir.join(format!("serve-{run}.log"))) {
            text.push_str(&format!("\n--- serve run {run} ---\n{log}"));
        }
    }
    text
}

async fn wait_for(what: &str, dir: &Path, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}: {}",
            logs(dir)
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

async fn finished_job(dir: &Path) -> JobRecord {
    finished_job_where(dir, "the job", |_| true).await
}

/// The job `id` once it has ended.
async fn finished_job_with_id(dir: &Path, id: i64) -> JobRecord {
    finished_job_where(dir, &format!("job {id}"), |job| job.id.0 == id).await
}

/// The first ended job `wanted` accepts, waiting for it to end.
async fn finished_job_where(
    dir: &Path,
    what: &str,
    wanted: impl Fn(&JobRecord) -> bool,
) -> JobRecord {
    let deadline = Instant::now() + Duration::from_secs(90);
    let store = Store::open_existing(&dir.join("autofix.db").display().to_string())
        .await
        .expect("the server's store");
    loop {
        let jobs = store.jobs_list(10).await.expect("jobs");
        if let Some(job) = jobs
            .iter()
            .find(|job| wanted(job) && matches!(job.state.as_str(), "succeeded" | "failed"))
        {
            store.close().await;
            return job.clone();
        }
        assert!(
            Instant::now() < deadline,
            "{what} never finished: {jobs:#?}{}",
            logs(dir)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Where the first server dies, in the order a job reaches them.
enum KillPoint {
    /// While the labeller's permission is asked for (before anything is written anywhere).
    CheckingThePermission,
    /// While the status comment's POST is in flight (the forge still creates it).
    PostingTheStatusComment,
    /// While the model is asked to triage (after fetching, before any change).
    AskingTheModel,
    /// While the repository's tests run on the change (they hang until the server is killed).
    ValidatingTheChange,
    /// While the reviewer reads the change: edited and validated in the worktree, not committed.
    ReviewingTheChange,
    /// While the remote receives the branch (its `pre-receive` hook still runs, so the push may land).
    PushingTheBranch,
    /// While the pull request's POST is in flight (the forge still opens it).
    OpeningThePullRequest,
    /// While the final status update is in flight.
    ReportingSuccess,
}

async fn a_server_killed_then_restarted(point: KillPoint) {
    let mut t = BotTester::github().await;
    let dir = tempfile::tempdir().unwrap();
    let validation_hangs = dir.path().join("validation-hangs");
    let validation_pid = dir.path().join("validation-pid");
    let conftest = hanging_conftest(&validation_hangs, &validation_pid);
    let mut files = python_project();
    files.push(("conftest.py", &conftest));
    let remote = t.repo(REPO, &files);
    let alice = t.maintainer(REPO, "alice");
    let hold = Duration::from_millis(800);
    let fake = t.github_fake();
    let push_started = dir.path().join("push-started");
    match point {
        KillPoint::CheckingThePermission => {
            fake.delay_next("GET", "/collaborators/alice/permission", hold, 1)
        }
        KillPoint::AskingTheModel => {
            t.llm.reply_for_stage(
                "triage",
                Reply::text(triage()).after(Duration::from_secs(30)),
            );
        }
        KillPoint::ValidatingTheChange => {
            std::fs::write(&validation_hangs, "").unwrap();
            // The dead server's triage, plan and edit; its validation never ends.
            script_up_to_the_edit(&t);
        }
        KillPoint::ReviewingTheChange => {
            // The dead server's triage, plan and edit; its review never comes back.
            script_up_to_the_edit(&t);
            t.llm.reply_for_stage(
                "audit",
                Reply::text(accepted()).after(Duration::from_secs(30)),
            );
        }
        KillPoint::PushingTheBranch => remote.install_hook(
            "pre-receive",
            &format!(
                "#!/bin/sh\ncat >/dev/null\nif [ ! -e '{0}' ]; then : > '{0}'; sleep 1; fi\n",
                push_started.display()
            ),
        ),
        KillPoint::PostingTheStatusComment => {
            fake.delay_next("POST", "/issues/7/comments", hold, 1)
        }
        KillPoint::OpeningThePullRequest => fake.delay_next("POST", "/pulls", hold, 1),
        // The pull request is held so the last status update can be held after it.
        KillPoint::ReportingSuccess => fake.delay_next("POST", "/pulls", hold, 1),
    }
    // What the server that finishes the job is told (after what the dead one used up above).
    script_python_fix(&t.llm);

    let first = Serve::start(&t, dir.path(), 1);
    t.send_deliveries_to(first.base.clone());
    let sent = t
        .label_issue(REPO, ISSUE, "clamp ignores its bounds", &alice)
        .await;
    assert_eq!(sent.status.as_u16(), 202, "{:?}", sent.answer);
    match point {
        KillPoint::AskingTheModel => {
            wait_for("the triage request", dir.path(), || {
                !t.llm.requests().is_empty()
            })
            .await;
        }
        KillPoint::ValidatingTheChange => {
            wait_for("the validation", dir.path(), || validation_pid.exists()).await;
        }
        KillPoint::ReviewingTheChange => {
            wait_for("the review request", dir.path(), || asked(&t, "audit") == 1).await;
        }
        KillPoint::PushingTheBranch => {
            wait_for("the push", dir.path(), || push_started.exists()).await;
        }
        KillPoint::ReportingSuccess => {
            wait_for("the pull request's request", dir.path(), || {
                t.github_fake().pending_delays() == 0
            })
            .await;
            t.github_fake()
                .delay_next("PATCH", "/issues/comments/", hold, 1);
            wait_for("the last status update", dir.path(), || {
                t.github_fake().pending_delays() == 0
            })
            .await;
        }
        _ => {
            wait_for("the held request", dir.path(), || {
                t.github_fake().pending_delays() == 0
            })
            .await;
        }
    }
    first.kill();
    if let KillPoint::ValidatingTheChange = point {
        let pid = std::fs::read_to_string(&validation_pid).unwrap();
        wait_for("the orphaned validation to die", dir.path(), || {
            !process_runs(pid.trim())
        })
        .await;
    }

    let second = Serve::start(&t, dir.path(), 2);
    let job = finished_job(dir.path()).await;
    drop(second);

    assert_eq!(
        job.state.as_str(),
        "succeeded",
        "{job:#?}{}",
        logs(dir.path())
    );
    let pulls = t.github_fake().pull_requests(REPO);
    assert_eq!(pulls.len(), 1, "exactly one pull request: {pulls:#?}");
    assert_eq!(pulls[0].head, BRANCH);
    assert_eq!(
        remote.branches(),
        ["fix/7-clamp-ignores-its-bounds", "main"]
    );
    let status: Vec<String> = t
        .comments(REPO, ISSUE)
        .into_iter()
        .filter(|body| body.contains("<!-- autofix:status job="))
        .collect();
    assert_eq!(status.len(), 1, "exactly one status comment: {status:#?}");
    assert!(
        status[0].contains("autofix opened a fix for this issue"),
        "{}",
        status[0]
    );
    let fake = t.github_fake();
    match point {
        KillPoint::CheckingThePermission => {
            assert_eq!(
                fake.count("GET", "/collaborators/alice/permission"),
                2,
                "asked again by the restarted server"
            );
            assert_eq!(asked(&t, "triage"), 1, "no work before the restart");
        }
        KillPoint::PostingTheStatusComment => {
            assert_eq!(
                fake.count("POST", "/issues/7/comments"),
                1,
                "found again, not posted twice"
            );
        }
        KillPoint::AskingTheModel => {
            assert_eq!(
                asked(&t, "triage"),
                2,
                "the dead server's question and the restarted server's"
            );
        }
        KillPoint::ValidatingTheChange => {
            assert_eq!(asked(&t, "edit"), 2, "validated again after the restart");
        }
        KillPoint::ReviewingTheChange => {
            assert_eq!(
                asked(&t, "edit"),
                2,
                "the uncommitted change is made again in a fresh worktree"
            );
            assert_eq!(
                remote
                    .git(&["rev-list", "--count", &format!("main..{BRANCH}")])
                    .trim(),
                "1"
            );
        }
        KillPoint::PushingTheBranch => {
            assert_eq!(
                asked(&t, "edit"),
                1,
                "the committed change is pushed, not redone"
            );
            assert_eq!(fake.count("POST", "/pulls"), 1);
        }
        KillPoint::OpeningThePullRequest => {
            assert_eq!(
                fake.count("POST", "/pulls"),
                2,
                "the second answer is 422: adopted"
            );
        }
        KillPoint::ReportingSuccess => {
            assert_eq!(
                fake.count("POST", "/pulls"),
                1,
                "the restart goes straight to the report"
            );
        }
    }
}

/// A `conftest.py` that, while `hangs` exists and `calc.py` holds a fix, removes it, writes
/// pytest's pid to `pid` and sleeps: the first validation of the change hangs, the next one runs
/// (the run on the base commit, before any change, never hangs).
fn hanging_conftest(hangs: &Path, pid: &Path) -> String {
    format!(
        "import os, time\n\
         calc = open(os.path.join(os.path.dirname(__file__), 'calc.py')).read()\n\
         if os.path.exists({hangs:?}) and 'max(low' in calc:\n    \
         os.remove({hangs:?})\n    \
         with open({pid:?}, 'w') as f:\n        f.write(str(os.getpid()))\n    \
         time.sleep(120)\n"
    )
}

/// Whether process `pid` is alive (a zombie waiting to be reaped is not).
fn process_runs(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name in parentheses.
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z')),
        Err(_) => false,
    }
}

/// The answers a dead server used up before it got as far as validating the change.
fn script_up_to_the_edit(t: &BotTester) {
    t.llm.reply_text_for_stage("triage", triage());
    t.llm.reply_text_for_stage("plan", plan());
    t.llm
        .reply_text_for_stage("edit", clamp_edit(crate::support::bot::FIXED_PY));
}

/// How many times the model was asked for `stage`.
fn asked(t: &BotTester, stage: &str) -> usize {
    t.llm
        .requests()
        .iter()
        .filter(|request| request.stage.as_deref() == Some(stage))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_while_checking_the_labellers_permission_the_restart_asks_again() {
    a_server_killed_then_restarted(KillPoint::CheckingThePermission).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_while_posting_the_status_comment_the_restart_reuses_it() {
    a_server_killed_then_restarted(KillPoint::PostingTheStatusComment).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_while_the_model_triages_the_restart_does_the_work_once() {
    a_server_killed_then_restarted(KillPoint::AskingTheModel).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_while_validating_the_tests_die_with_the_server_and_run_again_after_the_restart() {
    a_server_killed_then_restarted(KillPoint::ValidatingTheChange).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_while_the_change_is_reviewed_the_restart_makes_it_again_in_a_fresh_worktree() {
    a_server_killed_then_restarted(KillPoint::ReviewingTheChange).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_while_pushing_the_branch_the_restart_pushes_the_same_commit_without_redoing_it() {
    a_server_killed_then_restarted(KillPoint::PushingTheBranch).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_while_opening_the_pull_request_the_restart_adopts_it() {
    a_server_killed_then_restarted(KillPoint::OpeningThePullRequest).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_before_the_last_status_update_the_restart_finishes_it() {
    a_server_killed_then_restarted(KillPoint::ReportingSuccess).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_during_a_revision_the_restart_pushes_exactly_one_new_commit_and_one_reply() {
    let mut t = BotTester::github().await;
    let dir = tempfile::tempdir().unwrap();
    let remote = t.repo(REPO, &python_project());
    let alice = t.maintainer(REPO, "alice");
    script_python_fix(&t.llm);
    // The dead server's revision, whose review never comes back; then the restarted server's.
    let (fixed, revised) = (
        crate::support::bot::FIXED_PY,
        crate::support::bot::REVISED_PY,
    );
    script_revision(&t.llm, fixed, revised, Some(Duration::from_secs(30)));
    script_revision(&t.llm, fixed, revised, None);

    let first = Serve::start(&t, dir.path(), 1);
    t.send_deliveries_to(first.base.clone());
    t.label_issue(REPO, ISSUE, "clamp ignores its bounds", &alice)
        .await;
    assert_eq!(finished_job(dir.path()).await.state.as_str(), "succeeded");
    let fixed_tip = remote.tip(BRANCH).expect("the fix is pushed");
    let number = t.github_fake().pull_requests(REPO)[0].number;
    t.comment(
        REPO,
        crate::support::deliveries::On::ChangeRequest(number),
        &alice,
        "/autofix add a docstring to clamp",
    )
    .await;
    wait_for("the revision's review", dir.path(), || {
        asked(&t, "audit") == 2
    })
    .await;
    first.kill();

    let second = Serve::start(&t, dir.path(), 2);
    let job = finished_job_with_id(dir.path(), 2).await;
    drop(second);

    assert_eq!(
        job.state.as_str(),
        "succeeded",
        "{job:#?}{}",
        logs(dir.path())
    );
    assert_eq!(
        remote
            .git(&["rev-list", "--count", &format!("{fixed_tip}..{BRANCH}")])
            .trim(),
        "1",
        "exactly one new commit"
    );
    assert_eq!(
        asked(&t, "edit"),
        3,
        "the fix, the dead revision, the revision again"
    );
    let replies: Vec<String> = t
        .github_fake()
        .comments(REPO, number)
        .into_iter()
        .map(|comment| comment.body)
        .filter(|body| body.contains("<!-- autofix:reply "))
        .collect();
    assert_eq!(replies.len(), 1, "exactly one reply: {replies:#?}");
    assert!(replies[0].starts_with("Revised in "), "{}", replies[0]);
    assert_eq!(t.github_fake().pull_requests(REPO).len(), 1);
}
