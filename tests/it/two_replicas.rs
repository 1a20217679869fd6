//! Two real `autofix serve` processes on one real PostgreSQL, as a Deployment with two replicas
//! runs them: deliveries spread over both, one replica killed mid-job or stopped with SIGTERM,
//! and still exactly one branch, one pull request and one status comment per issue.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::bot::{BotTester, python_project, script_python_fix, triage};
use crate::support::scripted_llm::Reply;
use crate::support::serve::ServeProcess;
use autofix::store::{JobDetail, JobState, Store};

const ISSUE: u64 = 7;
const TITLE: &str = "clamp ignores its bounds";
const BRANCH: &str = "fix/7-clamp-ignores-its-bounds";

/// How a replica is started: its lease, and how long SIGTERM lets its jobs run on.
struct Timing {
    lease_secs: u64,
    drain_secs: u64,
}

/// A lease so short that a killed replica's job is taken over within seconds.
const QUICK_TAKEOVER: Timing = Timing {
    lease_secs: 3,
    drain_secs: 30,
};

/// One replica of the bot: its own data directory (as a pod has), the shared database.
fn replica(t: &BotTester, dir: &Path, name: &str, database: &str, timing: &Timing) -> ServeProcess {
    let data = dir.join(name);
    std::fs::create_dir_all(&data).unwrap();
    let mut vars = t.serve_env(&data.join("work"));
    vars.extend([
        ("AUTOFIX__DATABASE__URL", database.to_owned()),
        ("AUTOFIX__BOT__WORKERS", "1".to_owned()),
        ("AUTOFIX__BOT__LEASE_SECS", timing.lease_secs.to_string()),
        ("AUTOFIX__BOT__DRAIN_SECS", timing.drain_secs.to_string()),
        ("AUTOFIX__EXEC__SANDBOX", "bwrap".to_owned()),
        (
            "AUTOFIX__GIT__AUTHOR_EMAIL",
            "autofix@example.com".to_owned(),
        ),
        ("RUST_LOG", "info".to_owned()),
    ]);
    ServeProcess::start(&data, name, &vars)
}

/// Every job of the store once each has ended (succeeded or failed).
async fn ended_jobs(database: &str, count: usize, logs: impl Fn() -> String) -> Vec<JobDetail> {
    let store = Store::open_existing(database)
        .await
        .expect("the shared store");
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let jobs = store.jobs_list(50).await.expect("jobs");
        let ended = jobs
            .iter()
            .filter(|job| matches!(job.state, JobState::Succeeded | JobState::Failed))
            .count();
        if jobs.len() == count && ended == count {
            let mut details = Vec::new();
            for job in jobs.iter().rev() {
                details.push(store.job_show(job.id).await.expect("a job"));
            }
            store.close().await;
            return details;
        }
        assert!(
            Instant::now() < deadline,
            "the jobs never ended: {jobs:#?}\n{}",
            logs()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The lease owner of the running job of `repo`, once a worker holds it.
async fn holder(database: &str, repo: &str) -> String {
    let store = Store::open_existing(database)
        .await
        .expect("the shared store");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let jobs = store.jobs_list(50).await.expect("jobs");
        if let Some(owner) = jobs
            .iter()
            .find(|job| job.key.repo.path.as_str() == repo && job.state == JobState::Running)
            .and_then(|job| job.lease_owner.clone())
        {
            store.close().await;
            return owner;
        }
        assert!(
            Instant::now() < deadline,
            "no worker took {repo}: {jobs:#?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Exactly one pull request from the fix branch, that branch on the remote, and one status
/// comment saying the fix is open.
fn assert_one_of_everything(
    t: &BotTester,
    repo: &str,
    remote: &crate::support::git_http::BareRepo,
) {
    let pulls = t.github_fake().pull_requests(repo);
    assert_eq!(
        pulls.len(),
        1,
        "{repo}: exactly one pull request: {pulls:#?}"
    );
    assert_eq!(pulls[0].head, BRANCH);
    assert_eq!(remote.branches(), [BRANCH, "main"], "{repo}");
    let status: Vec<String> = t
        .comments(repo, ISSUE)
        .into_iter()
        .filter(|body| body.contains("<!-- autofix:status job="))
        .collect();
    assert_eq!(status.len(), 1, "{repo}: one status comment: {status:#?}");
    assert!(
        status[0].contains("autofix opened a fix for this issue"),
        "{repo}: {}",
        status[0]
    );
}

fn events(job: &JobDetail) -> String {
    job.events
        .iter()
        .map(|event| format!("{}: {}", event.stage, event.message))
        .collect::<Vec<_>>()
        .join("\n")
}

async fn metrics(base: &str) -> String {
    reqwest::get(format!("{base}/metrics"))
        .await
        .expect("/metrics answers")
        .text()
        .await
        .expect("a text body")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_killed_mid_job_leaves_exactly_one_pull_request_per_issue() {
    let mut t = BotTester::github().await;
    let database = crate::support::postgres::fresh_database().await;
    let dir = tempfile::tempdir().unwrap();
    let repos = ["acme/widgets", "acme/gadgets", "acme/gizmos"];
    let remotes: Vec<_> = repos
        .iter()
        .map(|repo| t.repo(repo, &python_project()))
        .collect();
    for _ in &repos {
        script_python_fix(&t.llm);
    }
    // Whichever replica opens gadgets' pull request dies while the forge still opens it.
    t.github_fake()
        .delay_next("POST", "acme/gadgets/pulls", Duration::from_secs(2), 1);

    let mut replicas = vec![
        replica(&t, dir.path(), "a", &database, &QUICK_TAKEOVER),
        replica(&t, dir.path(), "b", &database, &QUICK_TAKEOVER),
    ];
    for (index, repo) in repos.iter().enumerate() {
        let alice = t.maintainer(repo, "alice");
        t.send_deliveries_to(replicas[index % 2].base.clone());
        let sent = t.label_issue(repo, ISSUE, TITLE, &alice).await;
        assert_eq!(sent.status.as_u16(), 202, "{:?}", sent.answer);
    }
    wait_for("gadgets' pull request in flight", || {
        t.github_fake().pending_delays() == 0
    })
    .await;
    let owner = holder(&database, "acme/gadgets").await;
    let killed = replicas
        .iter()
        .position(|replica| owner.contains(&format!("-{}-", replica.pid())))
        .expect("the owner names one of the replicas");
    replicas.remove(killed).kill();
    let survivor = replicas.pop().unwrap();

    let jobs = ended_jobs(&database, repos.len(), || survivor.logs()).await;

    for job in &jobs {
        assert_eq!(job.job.state, JobState::Succeeded, "{}", events(job));
    }
    for (repo, remote) in repos.iter().zip(&remotes) {
        assert_one_of_everything(&t, repo, remote);
    }
    let gadgets = jobs
        .iter()
        .find(|job| job.job.key.repo.path.as_str() == "acme/gadgets")
        .unwrap();
    assert!(
        events(gadgets).contains(&format!("taken over from {owner}")),
        "the survivor took the dead replica's job over: {}",
        events(gadgets)
    );
    assert_eq!(
        t.github_fake().count("POST", "acme/gadgets/pulls"),
        2,
        "the survivor asked again, was told the pull request exists, and adopted it"
    );
    let text = metrics(&survivor.base).await;
    for line in [
        "autofix_lease_takeovers_total 1\n",
        "autofix_jobs{state=\"succeeded\"} 3\n",
        "autofix_queue_depth 0\n",
    ] {
        assert!(text.contains(line), "/metrics lacks {line:?}:\n{text}");
    }
    for series in [
        "autofix_jobs_finished_total{outcome=\"succeeded\",code=\"\"}",
        "autofix_stage_duration_seconds_count{stage=\"open\",outcome=\"ok\"}",
        "autofix_stage_duration_seconds_count{stage=\"validate\",outcome=\"ok\"}",
        "autofix_llm_tokens_total{provider=\"anthropic\",model=\"claude-story\",direction=\"input\"}",
        "autofix_llm_request_duration_seconds_count{provider=\"anthropic\",model=\"claude-story\"}",
    ] {
        assert!(
            text.lines()
                .any(|line| line.starts_with(series) && !line.ends_with(" 0")),
            "/metrics has no {series} above 0:\n{text}"
        );
    }
}

/// A lease so long that only a released job can be taken over while the story runs.
const SLOW_TAKEOVER: Timing = Timing {
    lease_secs: 300,
    drain_secs: 20,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_the_stage_finish_and_hands_the_job_to_the_other_replica_at_once() {
    let t = BotTester::github().await;
    let database = crate::support::postgres::fresh_database().await;
    let dir = tempfile::tempdir().unwrap();
    let remote = t.repo("acme/widgets", &python_project());
    let alice = t.maintainer("acme/widgets", "alice");
    script_python_fix(&t.llm);
    // The status comment is slow to post: SIGTERM arrives in the middle of that stage.
    t.github_fake()
        .delay_next("POST", "/issues/7/comments", Duration::from_secs(2), 1);

    let first = replica(&t, dir.path(), "a", &database, &SLOW_TAKEOVER);
    let mut t = t;
    t.send_deliveries_to(first.base.clone());
    let sent = t.label_issue("acme/widgets", ISSUE, TITLE, &alice).await;
    assert_eq!(sent.status.as_u16(), 202, "{:?}", sent.answer);
    wait_for("the status comment in flight", || {
        t.github_fake().pending_delays() == 0
    })
    .await;
    let second = replica(&t, dir.path(), "b", &database, &SLOW_TAKEOVER);
    let first_logs = first.log.clone();
    let took = first.terminate(Duration::from_secs(SLOW_TAKEOVER.drain_secs + 15));

    let jobs = ended_jobs(&database, 1, || second.logs()).await;

    let logs = std::fs::read_to_string(&first_logs).unwrap_or_default();
    assert!(
        took < Duration::from_secs(SLOW_TAKEOVER.drain_secs),
        "the stopping replica exited once its stage ended, after {took:?}:\n{logs}"
    );
    let job = &jobs[0];
    assert_eq!(job.job.state, JobState::Succeeded, "{}", events(job));
    let history = events(job);
    assert!(
        history.contains("authorize: request accepted; status comment posted")
            && history.contains("released by ")
            && history.contains("the server is stopping"),
        "the stage ended, then the job went back to the queue: {history}"
    );
    assert!(
        !history.contains("taken over"),
        "released, not left for its lease to run out: {history}"
    );
    assert_eq!(job.job.attempts, 1, "a release is not a failed attempt");
    assert_eq!(
        t.github_fake().count("POST", "/issues/7/comments"),
        1,
        "the other replica used the status comment the first one posted"
    );
    assert_one_of_everything(&t, "acme/widgets", &remote);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stage_longer_than_the_drain_time_is_handed_back_when_the_time_is_up() {
    let t = BotTester::github().await;
    let database = crate::support::postgres::fresh_database().await;
    let dir = tempfile::tempdir().unwrap();
    let remote = t.repo("acme/widgets", &python_project());
    let alice = t.maintainer("acme/widgets", "alice");
    // The first replica's model never answers in time; the second one's does.
    t.llm.reply_for_stage(
        "triage",
        Reply::text(triage()).after(Duration::from_secs(60)),
    );
    script_python_fix(&t.llm);
    let impatient = Timing {
        lease_secs: 300,
        drain_secs: 1,
    };

    let first = replica(&t, dir.path(), "a", &database, &impatient);
    let mut t = t;
    t.send_deliveries_to(first.base.clone());
    let sent = t.label_issue("acme/widgets", ISSUE, TITLE, &alice).await;
    assert_eq!(sent.status.as_u16(), 202, "{:?}", sent.answer);
    wait_for("the triage question", || !t.llm.requests().is_empty()).await;
    let first_logs = first.log.clone();
    let took = first.terminate(Duration::from_secs(30));
    let logs = std::fs::read_to_string(&first_logs).unwrap_or_default();
    assert!(
        took < Duration::from_secs(30),
        "the replica exited on its own once the drain time was up, after {took:?}:\n{logs}"
    );
    assert!(
        logs.contains("put back in the queue for another worker"),
        "{logs}"
    );

    let second = replica(&t, dir.path(), "b", &database, &impatient);
    let jobs = ended_jobs(&database, 1, || second.logs()).await;

    let job = &jobs[0];
    assert_eq!(job.job.state, JobState::Succeeded, "{}", events(job));
    assert!(
        events(job).contains("the server stopped before the stage ended"),
        "{}",
        events(job)
    );
    assert_one_of_everything(&t, "acme/widgets", &remote);
}
