//! The bot on GitHub only: bots, closed issues and open pull requests are declined; a forbidden
//! pull request, a failing forge and a refusing model are reported (the shared stories: bot_both_forges).

use crate::support::bot::{BotTester, FAILED_LABEL, FIXED_PY, python_project, script_python_fix};
use crate::support::deliveries;
use crate::support::git_http::BareRepo;
use crate::support::posted::stable;
use crate::support::serve::ServeProcess;

const PROJECT: &str = "acme/widgets";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bot_account_is_refused_and_the_bot_itself_is_ignored() {
    let t = BotTester::github().await;
    t.repo(PROJECT, &python_project());
    let renovate = deliveries::bot_account("renovate[bot]", 4242);
    let itself = deliveries::person(crate::support::bot::GITHUB_BOT, 77);

    t.label_issue(PROJECT, 10, "clamp ignores its bounds", &renovate)
        .await;
    t.label_issue_and_wait(PROJECT, 11, "clamp ignores its bounds", &itself)
        .await;

    let to_bot = t.comments(PROJECT, 10);
    assert_eq!(to_bot.len(), 1);
    insta::assert_snapshot!("bot_account_reply", stable(&to_bot[0]));
    assert!(
        t.comments(PROJECT, 11).is_empty(),
        "the bot never answers itself"
    );
    assert!(t.llm.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_issue_closed_before_the_job_ran_is_declined_politely() {
    let t = BotTester::github().await;
    let alice = t.python_project_kept_by_alice(PROJECT);
    t.label_issue(PROJECT, 12, "clamp ignores its bounds", &alice)
        .await;
    t.github_fake()
        .edit_issue(PROJECT, 12, |issue| issue.open = false);

    t.run_until_idle().await;

    let comments = t.comments(PROJECT, 12);
    assert_eq!(comments.len(), 1, "{comments:#?}");
    insta::assert_snapshot!("closed_issue_reply", stable(&comments[0]));
    assert!(t.llm.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_issue_with_an_open_autofix_pull_request_gets_no_second_one() {
    let t = BotTester::github().await;
    let alice = t.python_project_kept_by_alice(PROJECT);
    script_python_fix(&t.llm);
    t.label_issue_and_wait(PROJECT, 7, "clamp ignores its bounds", &alice)
        .await;

    t.label_issue_and_wait(PROJECT, 7, "clamp ignores its bounds", &alice)
        .await;

    assert_eq!(t.change_requests(PROJECT).len(), 1);
    let comments = t.comments(PROJECT, 7);
    assert_eq!(
        comments.len(),
        2,
        "the status comment, then one refusal: {comments:#?}"
    );
    // The refusal links the pull request already open for this issue.
    insta::assert_snapshot!("already_open_reply", stable(&comments[1]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forbidden_pull_request_deletes_the_pushed_branch_and_reports_why() {
    let t = BotTester::github().await;
    let remote = t.repo(PROJECT, &python_project());
    let alice = t.maintainer(PROJECT, "alice");
    script_python_fix(&t.llm);
    t.github_fake().fail_next(
        "POST",
        "/pulls",
        403,
        serde_json::json!({"message": "Resource not accessible by integration",
                           "documentation_url": "https://docs.github.com/rest"}),
        &[],
        1,
    );

    t.label_issue_and_wait(PROJECT, 7, "clamp ignores its bounds", &alice)
        .await;

    assert!(t.change_requests(PROJECT).is_empty());
    assert_eq!(
        remote.branches(),
        ["main"],
        "the pushed branch is deleted again"
    );
    let comments = t.comments(PROJECT, 7);
    assert_eq!(comments.len(), 1);
    // Failed at `open` with `PERMISSION_DENIED`, in GitHub's own words.
    insta::assert_snapshot!("forbidden_pull_request_report", stable(&comments[0]));
    assert!(t.labels(PROJECT, 7).contains(&FAILED_LABEL.to_owned()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forge_that_keeps_failing_puts_the_job_back_in_the_queue_with_nothing_lost() {
    let t = BotTester::github().await;
    let alice = t.python_project_kept_by_alice(PROJECT);
    t.github_fake().fail_next(
        "GET",
        "/collaborators/alice/permission",
        503,
        serde_json::json!({"message": "Service Unavailable"}),
        &[],
        10,
    );

    t.label_issue_and_wait(PROJECT, 7, "clamp ignores its bounds", &alice)
        .await;

    let jobs = t.jobs().await;
    assert_eq!(
        jobs[0].state.as_str(),
        "queued",
        "waiting for its retry: {jobs:#?}"
    );
    assert_eq!(jobs[0].attempts, 1);
    assert!(
        jobs[0]
            .last_error
            .as_deref()
            .unwrap_or_default()
            .contains("503"),
        "{jobs:#?}"
    );
    assert!(
        t.comments(PROJECT, 7).is_empty(),
        "nothing half-done to clean up"
    );
    assert!(t.llm.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_refuses_the_key_ends_in_an_llm_error_report() {
    let t = BotTester::github().await;
    let alice = t.python_project_kept_by_alice(PROJECT);
    t.llm.reply_for_stage(
        "triage",
        crate::support::scripted_llm::Reply::json(
            401,
            r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
        ),
    );

    t.label_issue_and_wait(PROJECT, 7, "clamp ignores its bounds", &alice)
        .await;

    let comments = t.comments(PROJECT, 7);
    insta::assert_snapshot!("llm_error_report", stable(&comments[0]));
    assert!(!comments[0].contains("sk-ant-story-key"));
    assert!(t.labels(PROJECT, 7).contains(&FAILED_LABEL.to_owned()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_github_app_opens_the_pull_request_as_its_bot_with_one_installation_token() {
    let t = BotTester::github_app().await;
    let remote = t.repo(PROJECT, &python_project());
    let alice = t.maintainer(PROJECT, "alice");
    script_python_fix(&t.llm);

    t.label_issue_and_wait(PROJECT, 7, "clamp ignores its bounds", &alice)
        .await;

    let pull_requests = t.change_requests(PROJECT);
    assert_eq!(pull_requests.len(), 1, "{pull_requests:#?}");
    assert_eq!(remote.read(&pull_requests[0].head, "calc.py"), FIXED_PY);
    let github = t.github_fake();
    let comments = github.comments(PROJECT, 7);
    assert_eq!(comments.len(), 1, "{comments:#?}");
    assert_eq!(comments[0].author.login, "autofix-app[bot]");
    assert_eq!(
        github.count("POST", "/access_tokens"),
        1,
        "the installation token is fetched once and reused for the API and git"
    );
    assert!(
        t.git
            .requests()
            .iter()
            .all(|request| !request.token_outside_basic_auth),
        "the token reached git only as Basic credentials"
    );
}

/// The forge answers 503 to everything from now on (or until `forge_back`).
fn forge_down(t: &BotTester) {
    t.github_fake().fail_next(
        "*",
        "",
        503,
        serde_json::json!({"message": "unavailable"}),
        &[],
        10_000,
    );
}

fn forge_back(t: &BotTester) {
    t.github_fake().clear_faults();
}

/// Runs the worker until nothing is left to do, letting every backoff pass, at most `rounds` times.
async fn run_until_settled(t: &BotTester, rounds: usize) {
    for _ in 0..rounds {
        if t.run_until_idle().await.is_empty() {
            return;
        }
        t.let_backoffs_pass();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_whose_forge_is_unreachable_ends_failed_and_posts_its_report_when_the_forge_is_back()
{
    let t = BotTester::github().await;
    let alice = t.python_project_kept_by_alice(PROJECT);
    t.label_issue(PROJECT, 30, "clamp ignores its bounds", &alice)
        .await;
    forge_down(&t);

    // Three attempts fail on the forge; the third gives the job up and cannot post why, nor
    // can the report's second try.
    for _ in 0..4 {
        t.run_until_idle().await;
        t.let_backoffs_pass();
    }
    let job = &t.jobs().await[0];
    assert_eq!(job.state.as_str(), "failed", "{job:#?}");
    assert_eq!(
        job.failure_code.map(|code| code.as_str()),
        Some("FORGE_ERROR")
    );
    assert!(job.report_due.is_some(), "the report is owed: {job:#?}");
    let line = autofix::commands::jobs::list_line(job);
    assert!(line.contains("failed"), "{line}");
    assert!(line.contains("FORGE_ERROR (report owed)"), "{line}");
    assert!(line.contains("authorize"), "the stage is shown: {line}");
    assert!(line.contains("HTTP 503: unavailable"), "the cause: {line}");
    assert!(t.comments(PROJECT, 30).is_empty());

    forge_back(&t);
    run_until_settled(&t, 3).await;

    let job = &t.jobs().await[0];
    assert_eq!(job.state.as_str(), "failed");
    assert_eq!(job.report_due, None, "nothing is owed any more");
    assert_eq!(
        job.attempts, 3,
        "the report's tries are not the job's attempts"
    );
    let comments = t.comments(PROJECT, 30);
    assert_eq!(comments.len(), 1, "{comments:#?}");
    insta::assert_snapshot!(stable(&comments[0]));
    assert!(t.labels(PROJECT, 30).contains(&FAILED_LABEL.to_string()));
    assert!(t.llm.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_report_the_forge_never_takes_is_given_up_after_its_tries() {
    let t = BotTester::github().await;
    let alice = t.python_project_kept_by_alice(PROJECT);
    t.label_issue(PROJECT, 31, "clamp ignores its bounds", &alice)
        .await;
    forge_down(&t);

    run_until_settled(&t, 20).await;

    let jobs = t.jobs().await;
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].state.as_str(), "failed");
    assert_eq!(
        jobs[0].failure_code.map(|code| code.as_str()),
        Some("FORGE_ERROR")
    );
    assert_eq!(jobs[0].report_due, None, "given up: {:#?}", jobs[0]);
    let shown = autofix::commands::jobs::show(&t.store, jobs[0].id)
        .await
        .unwrap()
        .join("\n");
    assert!(
        shown.contains("the failure report could not be posted")
            && shown.contains("given up after 3 tries"),
        "{shown}"
    );
    assert!(t.run_until_idle().await.is_empty(), "nothing runs for ever");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_server_fetches_from_the_real_remote_whatever_the_service_users_gitconfig_says() {
    let mut t = BotTester::github().await;
    let remote = t.repo(PROJECT, &python_project());
    let alice = t.maintainer(PROJECT, "alice");
    script_python_fix(&t.llm);
    // The service user's home and XDG folder both redirect the forge's URL to a repository of
    // the attacker's, which holds the same project and one file more.
    let home = tempfile::tempdir().unwrap();
    let mut planted = python_project();
    planted.push(("planted.txt", "from the attacker's repository\n"));
    let attacker = BareRepo::create(&home.path().join("attacker.git"), "main", &planted);
    let redirect = format!(
        "[url \"{}\"]\n\tinsteadOf = {}\n",
        attacker.path().display(),
        t.git.url(PROJECT)
    );
    std::fs::write(home.path().join(".gitconfig"), &redirect).unwrap();
    let xdg = home.path().join("xdg");
    std::fs::create_dir_all(xdg.join("git")).unwrap();
    std::fs::write(xdg.join("git").join("config"), &redirect).unwrap();
    let mut vars = t.serve_env(&home.path().join("work"));
    vars.push(("XDG_CONFIG_HOME", xdg.display().to_string()));
    let serve = ServeProcess::start(home.path(), "gitconfig", &vars);
    t.send_deliveries_to(serve.base.clone());

    t.label_issue(PROJECT, 7, "clamp ignores its bounds", &alice)
        .await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while t.change_requests(PROJECT).is_empty() && t.labels(PROJECT, 7).len() < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "the job never ended: {}",
            serve.logs()
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }

    let pulls = t.change_requests(PROJECT);
    assert_eq!(
        pulls.len(),
        1,
        "{:?}\n{}",
        t.comments(PROJECT, 7),
        serve.logs()
    );
    let files = remote.git(&["ls-tree", "-r", "--name-only", &pulls[0].head]);
    assert!(
        !files.contains("planted.txt"),
        "the branch was built on the attacker's repository: {files}"
    );
    assert!(
        t.git
            .requests()
            .iter()
            .any(|request| request.method == "POST"
                && request.path.ends_with("acme/widgets.git/git-upload-pack")),
        "the mirror was fetched from the real remote: {:#?}",
        t.git.requests()
    );
}
