//! Stories told the same way on GitHub and GitLab: failing tests end in a report, a label from
//! someone who may not push is declined, and redeliveries never make a second change request.

mod support;

use support::bot::{
    BotTester, FAILED_LABEL, TRIGGER, clamp_edit, plan, python_project, script_python_fix, triage,
};

const PROJECT: &str = "acme/widgets";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_tests_end_in_a_failure_report_a_label_and_no_branch_on_github() {
    failing_tests_end_in_a_failure_report_a_label_and_no_branch(BotTester::github().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_tests_end_in_a_failure_report_a_label_and_no_branch_on_gitlab() {
    failing_tests_end_in_a_failure_report_a_label_and_no_branch(BotTester::gitlab().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn someone_who_may_not_push_gets_a_polite_no_and_nothing_runs_on_github() {
    someone_who_may_not_push_gets_a_polite_no_and_nothing_runs(BotTester::github().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn someone_who_may_not_push_gets_a_polite_no_and_nothing_runs_on_gitlab() {
    someone_who_may_not_push_gets_a_polite_no_and_nothing_runs(BotTester::gitlab().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redelivery_and_a_second_label_make_one_change_request_on_github() {
    a_redelivery_and_a_second_label_make_one_change_request(BotTester::github().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redelivery_and_a_second_label_make_one_change_request_on_gitlab() {
    a_redelivery_and_a_second_label_make_one_change_request(BotTester::gitlab().await).await;
}

async fn failing_tests_end_in_a_failure_report_a_label_and_no_branch(t: BotTester) {
    let remote = t.repo(
        PROJECT,
        &[
            ("calc.py", support::bot::BUGGY_PY),
            ("test_calc.py", support::bot::PY_TEST),
            (".gitignore", "__pycache__/\n"),
            (
                ".autofix.toml",
                &format!("{}[repair]\nmax_attempts = 1\n", support::bot::PY_CONFIG),
            ),
        ],
    );
    let alice = t.maintainer(PROJECT, "alice");
    let still_wrong = "def clamp(value, low, high):\n    return min(value, high)\n";
    t.llm.reply_text_for_stage("triage", triage());
    t.llm.reply_text_for_stage("plan", plan());
    t.llm.reply_text_for_stage("edit", clamp_edit(still_wrong));
    t.llm.reply_text_for_stage(
        "repair",
        format!(
            "calc.py\n```\n<<<<<<< SEARCH\n{still_wrong}=======\n{still_wrong}>>>>>>> REPLACE\n```\n"
        ),
    );

    t.label_issue(PROJECT, 8, "clamp ignores its lower bound", &alice)
        .await;
    t.run_until_idle().await;

    assert!(t.change_requests(PROJECT).is_empty());
    assert_eq!(remote.branches(), ["main"], "no branch is left behind");
    let comments = t.comments(PROJECT, 8);
    assert_eq!(comments.len(), 1, "{comments:#?}");
    let report = &comments[0];
    assert!(
        report.contains("autofix could not fix this issue"),
        "{report}"
    );
    assert!(report.contains("`VALIDATION_FAILED`"), "{report}");
    assert!(
        report.contains("assert"),
        "the output tail is quoted: {report}"
    );
    assert!(
        report.contains(&format!("remove the `{TRIGGER}` label and add it again")),
        "{report}"
    );
    assert!(t.labels(PROJECT, 8).contains(&FAILED_LABEL.to_owned()));
    let jobs = t.jobs().await;
    assert_eq!(jobs[0].failure_code.as_deref(), Some("VALIDATION_FAILED"));
}

async fn someone_who_may_not_push_gets_a_polite_no_and_nothing_runs(t: BotTester) {
    t.repo(PROJECT, &python_project());
    let bob = t.reporter(PROJECT, "bob");

    t.label_issue(PROJECT, 9, "clamp ignores its bounds", &bob)
        .await;
    t.run_until_idle().await;

    let comments = t.comments(PROJECT, 9);
    assert_eq!(comments.len(), 1, "{comments:#?}");
    assert!(
        comments[0].contains("someone who can push"),
        "{}",
        comments[0]
    );
    assert!(t.change_requests(PROJECT).is_empty());
    assert!(
        t.llm.requests().is_empty(),
        "no LLM work for a refused request"
    );
    assert!(!t.workdir().join("mirrors").exists(), "no git work either");
    let jobs = t.jobs().await;
    assert_eq!(jobs[0].failure_code.as_deref(), Some("PERMISSION_DENIED"));
}

async fn a_redelivery_and_a_second_label_make_one_change_request(t: BotTester) {
    t.repo(PROJECT, &python_project());
    let alice = t.maintainer(PROJECT, "alice");
    script_python_fix(&t.llm);

    let first = t
        .label_issue(PROJECT, 7, "clamp ignores its bounds", &alice)
        .await;
    let again = t.redeliver(&first).await;
    let second_label = t
        .label_issue(PROJECT, 7, "clamp ignores its bounds", &alice)
        .await;
    assert_eq!(first.answer["status"], "queued");
    assert_eq!(again.answer["status"], "duplicate");
    assert_eq!(second_label.answer["status"], "already_queued");
    t.run_until_idle().await;

    assert_eq!(t.change_requests(PROJECT).len(), 1);
    assert_eq!(t.comments(PROJECT, 7).len(), 1);
    assert_eq!(t.jobs().await.len(), 1);
}
