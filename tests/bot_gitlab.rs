//! The bot on GitLab, end to end: a labelled issue becomes a merge request proven by pytest,
//! and labels from bot accounts (or the bot itself) start nothing.

mod support;

use support::bot::{
    BotTester, FAILED_LABEL, FIXED_PY, files_containing, python_project, script_python_fix,
};
use support::deliveries;

const PROJECT: &str = "acme/widgets";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_labelled_issue_becomes_a_merge_request_with_a_checklist_comment() {
    let t = BotTester::gitlab().await;
    let remote = t.repo(PROJECT, &python_project());
    let alice = t.maintainer(PROJECT, "alice");
    script_python_fix(&t.llm);

    let sent = t
        .label_issue(PROJECT, 7, "clamp ignores its bounds", &alice)
        .await;
    assert_eq!(sent.status.as_u16(), 202, "{:?}", sent.answer);
    t.run_until_idle().await;

    let merge_requests = t.change_requests(PROJECT);
    assert_eq!(merge_requests.len(), 1, "{merge_requests:#?}");
    let mr = &merge_requests[0];
    assert_eq!(mr.head, "fix/7-clamp-ignores-its-bounds");
    assert_eq!(mr.base, "main");
    assert_eq!(
        mr.title,
        "Draft: fix(calc): clamp values to both of their bounds"
    );
    assert!(mr.draft, "draft unless `.autofix.toml` says ready");
    assert!(mr.body.contains("Fixes #7"), "{}", mr.body);
    assert!(
        mr.body
            .contains("| `python3 -m pytest -q -p no:cacheprovider` | passed |"),
        "{}",
        mr.body
    );
    assert_eq!(remote.read(&mr.head, "calc.py"), FIXED_PY);
    let message = remote.git(&["log", "-1", "--format=%B", &mr.head]);
    assert!(
        message.starts_with("fix(calc): clamp values to both of their bounds"),
        "{message}"
    );
    assert!(message.contains("Fixes #7"), "{message}");
    assert!(
        message.contains("Signed-off-by: autofix <autofix@example.com>"),
        "{message}"
    );

    let comments = t.comments(PROJECT, 7);
    assert_eq!(
        comments.len(),
        1,
        "one status comment, edited in place: {comments:#?}"
    );
    assert!(
        comments[0].contains("- [x] Merge request opened"),
        "{}",
        comments[0]
    );
    assert!(!t.labels(PROJECT, 7).contains(&FAILED_LABEL.to_owned()));

    let jobs = t.jobs().await;
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].state.as_str(), "succeeded");
    let token = t.token();
    assert!(
        files_containing(&t.workdir(), &token).is_empty(),
        "the token must never reach the disk"
    );
    assert!(
        t.git
            .requests()
            .iter()
            .all(|request| !request.token_outside_basic_auth)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bot_account_is_refused_and_the_bot_itself_is_ignored() {
    let t = BotTester::gitlab().await;
    t.repo(PROJECT, &python_project());
    let renovate = deliveries::bot_account("project_7_bot_3f9a", 4242);
    let own = t.gitlab_fake().bot();
    let itself = deliveries::bot_account(&own.username, own.id);

    t.label_issue(PROJECT, 10, "clamp ignores its bounds", &renovate)
        .await;
    t.label_issue(PROJECT, 11, "clamp ignores its bounds", &itself)
        .await;
    t.run_until_idle().await;

    let to_bot = t.comments(PROJECT, 10);
    assert_eq!(to_bot.len(), 1);
    assert!(to_bot[0].contains("is a bot account"), "{}", to_bot[0]);
    assert!(
        t.comments(PROJECT, 11).is_empty(),
        "the bot never answers itself"
    );
    assert!(t.llm.requests().is_empty());
}
