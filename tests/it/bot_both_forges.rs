//! Stories told the same way on GitHub and GitLab: a labelled issue becomes a change request,
//! failing tests end in a report, someone who may not push is declined, redeliveries do nothing
//! twice, and what only looks like the bot's (a fork's change request, a comment with its hidden
//! line) is never taken for it.

use crate::support::bot::{
    BotTester, ChangeRequestSeen, FAILED_LABEL, FIXED_PY, FakeForge, files_containing,
    on_each_forge, python_project, script_python_fix, script_python_fix_that_stays_wrong,
};
use crate::support::posted::stable;

const PROJECT: &str = "acme/widgets";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_labelled_issue_becomes_a_pull_request_on_github() {
    let t = BotTester::github().await;
    let title = "fix(calc): clamp values to both of their bounds";
    a_labelled_issue_becomes_a_change_request(t, title).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_labelled_issue_becomes_a_draft_merge_request_on_gitlab() {
    let t = BotTester::gitlab().await;
    let title = "Draft: fix(calc): clamp values to both of their bounds";
    a_labelled_issue_becomes_a_change_request(t, title).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_test_already_failing_on_the_base_is_named_in_the_pull_request_on_github() {
    let t = BotTester::github().await;
    let mut files = python_project();
    files.push((
        "test_legacy.py",
        "def test_legacy_report_format():\n    assert \"v1\" == \"v2\"\n",
    ));
    t.repo(PROJECT, &files);
    let alice = t.maintainer(PROJECT, "alice");
    script_python_fix(&t.llm);

    t.label_issue_and_wait(PROJECT, 7, "clamp ignores its bounds", &alice)
        .await;

    let pull_requests = t.change_requests(PROJECT);
    assert_eq!(pull_requests.len(), 1, "{:?}", t.comments(PROJECT, 7));
    insta::assert_snapshot!(stable(&pull_requests[0].body));
    // The status comment counts the test failing as on the base commit.
    let comments = t.comments(PROJECT, 7);
    assert_eq!(comments.len(), 1, "{comments:#?}");
    insta::assert_snapshot!(
        "a_test_already_failing_on_the_base_is_counted_in_the_status_comment_on_github",
        stable(&comments[0])
    );
}

on_each_forge!(
    a_change_that_breaks_a_passing_unittest_is_refused:
    a_change_that_breaks_a_passing_unittest_is_refused_on_github,
    a_change_that_breaks_a_passing_unittest_is_refused_on_gitlab
);

on_each_forge!(
    failing_tests_end_in_a_failure_report_a_label_and_no_branch:
    failing_tests_end_in_a_failure_report_a_label_and_no_branch_on_github,
    failing_tests_end_in_a_failure_report_a_label_and_no_branch_on_gitlab
);

on_each_forge!(
    someone_who_may_not_push_gets_a_polite_no_and_nothing_runs:
    someone_who_may_not_push_gets_a_polite_no_and_nothing_runs_on_github,
    someone_who_may_not_push_gets_a_polite_no_and_nothing_runs_on_gitlab
);

on_each_forge!(
    a_redelivery_and_a_second_label_make_one_change_request:
    a_redelivery_and_a_second_label_make_one_change_request_on_github,
    a_redelivery_and_a_second_label_make_one_change_request_on_gitlab
);

on_each_forge!(
    a_branch_an_earlier_run_left_behind_is_replaced:
    a_branch_an_earlier_run_left_behind_is_replaced_on_github,
    a_branch_an_earlier_run_left_behind_is_replaced_on_gitlab
);

on_each_forge!(
    someone_elses_commit_on_the_branch_is_never_overwritten:
    someone_elses_commit_on_the_branch_is_never_overwritten_on_github,
    someone_elses_commit_on_the_branch_is_never_overwritten_on_gitlab
);

/// The branch the next fix of issue 7 is pushed to.
const ISSUE_7_BRANCH: &str = "fix/7-clamp-ignores-its-bounds";

async fn a_branch_an_earlier_run_left_behind_is_replaced(t: BotTester) {
    let remote = t.repo(PROJECT, &python_project());
    let stale = remote.commit(
        ISSUE_7_BRANCH,
        &[("calc.py", "# an earlier attempt\n")],
        "fix(calc): an earlier attempt\n\nAutofix-Job: 3\n",
    );
    let alice = t.maintainer(PROJECT, "alice");
    script_python_fix(&t.llm);

    t.label_issue_and_wait(PROJECT, 7, "clamp ignores its bounds", &alice)
        .await;

    let change_requests = t.change_requests(PROJECT);
    assert_eq!(change_requests.len(), 1, "{change_requests:#?}");
    assert_eq!(change_requests[0].head, ISSUE_7_BRANCH);
    assert_eq!(remote.read(ISSUE_7_BRANCH, "calc.py"), FIXED_PY);
    // The body says which branch was replaced, and at which commit the earlier run left it.
    let body = change_requests[0].body.replace(&stale, "<stale commit>");
    insta::assert_snapshot!(
        format!("replaced_branch_change_request_body_{}", t.forge_name()),
        stable(&body)
    );
}

async fn someone_elses_commit_on_the_branch_is_never_overwritten(t: BotTester) {
    let remote = t.repo(PROJECT, &python_project());
    let theirs = remote.commit(
        ISSUE_7_BRANCH,
        &[("NOTES.md", "my own notes on the fix\n")],
        "docs: notes on the clamp fix",
    );
    let alice = t.maintainer(PROJECT, "alice");
    script_python_fix(&t.llm);

    t.label_issue_and_wait(PROJECT, 7, "clamp ignores its bounds", &alice)
        .await;

    assert!(t.change_requests(PROJECT).is_empty());
    assert_eq!(
        remote.tip(ISSUE_7_BRANCH),
        Some(theirs),
        "their branch is untouched"
    );
    let comments = t.comments(PROJECT, 7);
    assert_eq!(comments.len(), 1, "{comments:#?}");
    // Failed at `push` with `BRANCH_EXISTS`: the report says so, and leaves the branch alone.
    insta::assert_snapshot!(
        format!("branch_exists_report_{}", t.forge_name()),
        stable(&comments[0])
    );
    assert!(t.labels(PROJECT, 7).contains(&FAILED_LABEL.to_owned()));
}

async fn failing_tests_end_in_a_failure_report_a_label_and_no_branch(t: BotTester) {
    let remote = t.repo(
        PROJECT,
        &[
            ("calc.py", crate::support::bot::BUGGY_PY),
            ("test_calc.py", crate::support::bot::PY_TEST),
            (".gitignore", "__pycache__/\n"),
            (
                ".autofix.toml",
                &format!(
                    "{}[repair]\nmax_attempts = 1\n",
                    crate::support::bot::PY_CONFIG
                ),
            ),
        ],
    );
    let alice = t.maintainer(PROJECT, "alice");
    script_python_fix_that_stays_wrong(&t.llm, 1);

    t.label_issue_and_wait(PROJECT, 8, "clamp ignores its lower bound", &alice)
        .await;

    assert!(t.change_requests(PROJECT).is_empty());
    assert_eq!(remote.branches(), ["main"], "no branch is left behind");
    assert_the_working_copy_is_removed_and_the_artifacts_stay(&t).await;
    let comments = t.comments(PROJECT, 8);
    assert_eq!(comments.len(), 1, "{comments:#?}");
    // Where, why, the failing output's tail, and how to try again.
    insta::assert_snapshot!(
        format!("validation_failure_report_{}", t.forge_name()),
        stable(&comments[0])
    );
    assert!(t.labels(PROJECT, 8).contains(&FAILED_LABEL.to_owned()));
    let jobs = t.jobs().await;
    assert_eq!(
        jobs[0].failure_code.map(|code| code.as_str()),
        Some("VALIDATION_FAILED")
    );
}

/// A project tested by Python's unittest: `add` subtracts (its test already fails on the base),
/// `mul` works.
fn unittest_project() -> Vec<(&'static str, &'static str)> {
    vec![
        (
            "calc.py",
            "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n",
        ),
        ("tests/__init__.py", ""),
        (
            "tests/test_calc.py",
            "import unittest\n\nfrom calc import add, mul\n\n\nclass CalcTest(unittest.TestCase):\n    \
             def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n    \
             def test_mul(self):\n        self.assertEqual(mul(2, 3), 6)\n",
        ),
        (".gitignore", "__pycache__/\n"),
        (
            ".autofix.toml",
            "[[validate]]\nname = \"unittest\"\nrun = [\"python3\", \"-m\", \"unittest\", \
             \"discover\", \"-s\", \"tests\", \"-t\", \".\"]\ntimeout_secs = 120\n\
             [repair]\nmax_attempts = 1\n",
        ),
    ]
}

/// The suite already fails on the base (`test_add`, the bug); the model leaves it failing and
/// breaks `test_mul`, which passed. Both runs exit 1: only reading the results per test tells.
async fn a_change_that_breaks_a_passing_unittest_is_refused(t: BotTester) {
    let remote = t.repo(PROJECT, &unittest_project());
    let alice = t.maintainer(PROJECT, "alice");
    let breaks_mul = "calc.py\n```\n<<<<<<< SEARCH\n    return a * b\n=======\n    return a ** b\n>>>>>>> REPLACE\n```\n";
    let still_broken = "calc.py\n```\n<<<<<<< SEARCH\n    return a ** b\n=======\n    return a ** b\n>>>>>>> REPLACE\n```\n";
    t.llm
        .reply_text_for_stage("triage", crate::support::bot::triage());
    t.llm
        .reply_text_for_stage("plan", crate::support::bot::plan());
    t.llm.reply_text_for_stage("edit", breaks_mul);
    t.llm.reply_text_for_stage("repair", still_broken);

    t.label_issue_and_wait(PROJECT, 12, "add subtracts", &alice)
        .await;

    assert!(
        t.change_requests(PROJECT).is_empty(),
        "no pull or merge request"
    );
    assert_eq!(remote.branches(), ["main"], "no branch is pushed");
    let jobs = t.jobs().await;
    assert_eq!(
        jobs[0].failure_code.map(|code| code.as_str()),
        Some("VALIDATION_FAILED")
    );
    // The report names `test_mul`, which passes on the base commit and fails with the change.
    insta::assert_snapshot!(
        format!("newly_failing_unittest_report_{}", t.forge_name()),
        stable(&t.comments(PROJECT, 12)[0])
    );
}

async fn someone_who_may_not_push_gets_a_polite_no_and_nothing_runs(t: BotTester) {
    t.repo(PROJECT, &python_project());
    let bob = t.reporter(PROJECT, "bob");

    t.label_issue_and_wait(PROJECT, 9, "clamp ignores its bounds", &bob)
        .await;

    let comments = t.comments(PROJECT, 9);
    assert_eq!(comments.len(), 1, "{comments:#?}");
    insta::assert_snapshot!(
        format!("no_push_rights_reply_{}", t.forge_name()),
        stable(&comments[0])
    );
    assert!(t.change_requests(PROJECT).is_empty());
    assert!(
        t.llm.requests().is_empty(),
        "no LLM work for a refused request"
    );
    assert!(!t.workdir().join("mirrors").exists(), "no git work either");
    let jobs = t.jobs().await;
    assert_eq!(
        jobs[0].failure_code.map(|code| code.as_str()),
        Some("PERMISSION_DENIED")
    );
}

async fn a_redelivery_and_a_second_label_make_one_change_request(t: BotTester) {
    let alice = t.python_project_kept_by_alice(PROJECT);
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

/// The happy path: a draft change request titled `title` fixes the issue, and one status comment
/// says how it went.
async fn a_labelled_issue_becomes_a_change_request(t: BotTester, title: &str) {
    let remote = t.repo(PROJECT, &python_project());
    let alice = t.maintainer(PROJECT, "alice");
    script_python_fix(&t.llm);

    let sent = t
        .label_issue(PROJECT, 7, "clamp ignores its bounds", &alice)
        .await;
    assert_eq!(sent.status.as_u16(), 202, "{:?}", sent.answer);
    t.run_until_idle().await;

    let pull_requests = t.change_requests(PROJECT);
    assert_eq!(pull_requests.len(), 1, "{pull_requests:#?}");
    let pr = &pull_requests[0];
    assert_eq!(pr.head, "fix/7-clamp-ignores-its-bounds");
    assert_eq!(pr.base, "main");
    assert_eq!(pr.title, title);
    assert!(pr.draft, "draft unless `.autofix.toml` says ready");
    // Fixes #7, and the validation command failing on the base and passing with the change.
    insta::assert_snapshot!(
        format!("change_request_body_{}", t.forge_name()),
        stable(&pr.body)
    );
    assert_eq!(remote.read(&pr.head, "calc.py"), FIXED_PY);
    // The conventional subject, `Fixes #7` and the sign-off.
    insta::assert_snapshot!(
        format!("commit_message_{}", t.forge_name()),
        remote.git(&["log", "-1", "--format=%B", &pr.head])
    );

    assert_the_working_copy_is_removed_and_the_artifacts_stay(&t).await;
    let comments = t.comments(PROJECT, 7);
    assert_eq!(
        comments.len(),
        1,
        "one status comment, edited in place: {comments:#?}"
    );
    // Every step ticked, down to the pull or merge request opened.
    insta::assert_snapshot!(
        format!("status_comment_after_success_{}", t.forge_name()),
        stable(&comments[0])
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

/// A finished job leaves no working copy (nor what its validation built) in the workdir.
async fn assert_the_working_copy_is_removed_and_the_artifacts_stay(t: &BotTester) {
    let jobs = t.jobs().await;
    assert_eq!(jobs.len(), 1, "{jobs:#?}");
    let job_dir = t.workdir().join("jobs").join(jobs[0].id.to_string());
    assert!(
        !job_dir.join("worktree").exists(),
        "the finished job's working copy is removed"
    );
    assert!(job_dir.join("artifacts").is_dir(), "its artifacts stay");
}

/// The part of a change request's address that names `number` on the story's forge.
fn change_request_link(t: &BotTester, number: u64) -> String {
    match t.forge {
        FakeForge::GitHub(_) => format!("/pull/{number}"),
        FakeForge::GitLab(_) => format!("/merge_requests/{number}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forks_pull_request_carrying_autofixs_line_is_not_taken_for_the_bots_on_github() {
    a_forks_change_request_carrying_autofixs_line_is_not_taken_for_the_bots(
        BotTester::github().await,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forks_merge_request_carrying_autofixs_line_is_not_taken_for_the_bots_on_gitlab() {
    a_forks_change_request_carrying_autofixs_line_is_not_taken_for_the_bots(
        BotTester::gitlab().await,
    )
    .await;
}

on_each_forge!(
    an_outsiders_comment_carrying_the_status_line_is_never_edited:
    an_outsiders_comment_carrying_the_status_line_is_never_edited_on_github,
    an_outsiders_note_carrying_the_status_line_is_never_edited_on_gitlab
);

async fn a_forks_change_request_carrying_autofixs_line_is_not_taken_for_the_bots(t: BotTester) {
    let alice = t.python_project_kept_by_alice(PROJECT);
    script_python_fix(&t.llm);
    // Mallory asks to merge a branch of her fork, its description ending in the hidden line
    // autofix writes into its own change requests for issue 7.
    let forked = t.change_request_from_fork(
        PROJECT,
        "mallory",
        "patch-1",
        "Fix clamp",
        "The fix for #7.\n\n<!-- autofix:change-request job=1 issue=7 -->\n",
    );

    t.label_issue_and_wait(PROJECT, 7, "clamp ignores its bounds", &alice)
        .await;

    let comments = t.comments(PROJECT, 7);
    let change_requests = t.change_requests(PROJECT);
    let own: Vec<&ChangeRequestSeen> = change_requests
        .iter()
        .filter(|change| change.number != forked)
        .collect();
    assert_eq!(
        own.len(),
        1,
        "the bot opened its own: {change_requests:#?}\n{comments:#?}"
    );
    assert_eq!(own[0].author, t.bot_login());
    assert_eq!(own[0].head, "fix/7-clamp-ignores-its-bounds");
    assert_eq!(comments.len(), 1, "the status comment alone: {comments:#?}");
    assert!(
        !comments[0].contains("already open"),
        "no refusal: {}",
        comments[0]
    );
    assert!(
        !comments[0].contains(&change_request_link(&t, forked)),
        "the fork's change request is never linked: {}",
        comments[0]
    );
    // The status comment links the bot's own change request.
    insta::assert_snapshot!(
        format!("status_beside_a_forks_change_request_{}", t.forge_name()),
        stable(&comments[0])
    );
}

async fn an_outsiders_comment_carrying_the_status_line_is_never_edited(t: BotTester) {
    let alice = t.python_project_kept_by_alice(PROJECT);
    script_python_fix(&t.llm);
    t.label_issue(PROJECT, 7, "clamp ignores its bounds", &alice)
        .await;
    // Before the bot says anything, Mallory writes the hidden line of job 1's status comment.
    let planted = "autofix is on it, see below.\n\n<!-- autofix:status job=1 -->\n";
    let mallorys = t.outsider_comments(PROJECT, 7, "mallory", planted);
    // The bot's first status comment meets a forge having a bad moment: the job goes back to
    // the queue and its second attempt looks for the comment it may have posted.
    t.comment_posts_fail(3);

    t.run_until_idle().await;
    t.let_backoffs_pass();
    t.run_until_idle().await;

    let jobs = t.jobs().await;
    assert_eq!(
        (jobs[0].state.as_str(), jobs[0].attempts),
        ("succeeded", 2),
        "{jobs:#?}"
    );
    let comments = t.comments_seen(PROJECT, 7);
    let theirs = comments.iter().find(|c| c.id == mallorys).unwrap();
    assert_eq!(
        (theirs.body.as_str(), theirs.edits),
        (planted, 0),
        "Mallory's comment is never edited"
    );
    let own: Vec<_> = comments
        .iter()
        .filter(|c| c.author == t.bot_login())
        .collect();
    assert_eq!(own.len(), 1, "the bot's own status comment: {comments:#?}");
    assert_eq!(t.change_requests(PROJECT).len(), 1);
    // Job 1's own hidden line, and the link to the change request it opened.
    insta::assert_snapshot!(
        format!("own_status_beside_a_planted_one_{}", t.forge_name()),
        stable(&own[0].body)
    );
}

on_each_forge!(
    a_reproduced_fix_opens_with_its_proof:
    a_reproduced_fix_opens_with_its_proof_on_github,
    a_reproduced_fix_opens_with_its_proof_on_gitlab
);

on_each_forge!(
    an_unproven_fix_is_a_draft_that_says_so:
    an_unproven_fix_is_a_draft_that_says_so_on_github,
    an_unproven_fix_is_a_draft_that_says_so_on_gitlab
);

/// `clamp` ignores its bounds and no test says so; the repository asks for a reproduction
/// when it can get one, and for pull requests that are not drafts.
fn unproven_project() -> Vec<(&'static str, &'static str)> {
    vec![
        ("calc.py", crate::support::bot::BUGGY_PY),
        (
            "tests/test_calc.py",
            "def test_nothing_yet():\n    assert True\n",
        ),
        (".gitignore", "__pycache__/\n"),
        (
            ".autofix.toml",
            "[[validate]]\nname = \"pytest\"\nrun = [\"python3\", \"-m\", \"pytest\", \"-q\", \"-p\", \
             \"no:cacheprovider\"]\ntimeout_secs = 120\n\n[reproduce]\nmode = \"preferred\"\n\n\
             [pull_request]\ndraft = false\n",
        ),
    ]
}

fn new_test_file(body: &str) -> String {
    format!("tests/test_clamp.py\n```\n<<<<<<< SEARCH\n=======\n{body}>>>>>>> REPLACE\n```\n")
}

const REPRODUCING_TEST: &str =
    "from calc import clamp\n\n\ndef test_clamp_upper_bound():\n    assert clamp(5, 0, 3) == 3\n";
const PASSING_TEST: &str =
    "from calc import clamp\n\n\ndef test_clamp_inside():\n    assert clamp(2, 0, 3) == 2\n";

fn script_fix_after(t: &BotTester, reproductions: &[&str]) {
    t.llm
        .reply_text_for_stage("triage", crate::support::bot::triage());
    t.llm
        .reply_text_for_stage("plan", crate::support::bot::plan());
    for body in reproductions {
        t.llm.reply_text_for_stage("reproduce", new_test_file(body));
    }
    t.llm
        .reply_text_for_stage("edit", crate::support::bot::clamp_edit(FIXED_PY));
    t.llm
        .reply_text_for_stage("audit", crate::support::bot::accepted());
}

/// A test that fails on the base commit, then the fix: one commit holds both, and the change
/// request opens with the test, how it failed, and that it passes now.
async fn a_reproduced_fix_opens_with_its_proof(t: BotTester) {
    let remote = t.repo(PROJECT, &unproven_project());
    let alice = t.maintainer(PROJECT, "alice");
    script_fix_after(&t, &[REPRODUCING_TEST]);

    t.label_issue_and_wait(PROJECT, 14, "clamp ignores its upper bound", &alice)
        .await;

    let requests = t.change_requests(PROJECT);
    assert_eq!(requests.len(), 1, "{requests:#?}");
    let request = &requests[0];
    assert!(!request.draft, "a proven change follows pull_request.draft");
    // The body opens with the proof: the test, how it failed on the base, that it passes now.
    insta::assert_snapshot!(
        format!("proven_change_request_body_{}", t.forge_name()),
        stable(&request.body)
    );
    let files = remote.files_at(&request.head);
    assert!(
        files.iter().any(|file| file == "tests/test_clamp.py"),
        "the reproduction is committed with the fix: {files:?}"
    );
    insta::assert_snapshot!(
        format!("reproduced_status_comment_{}", t.forge_name()),
        stable(&t.comments(PROJECT, 14)[0])
    );
}

/// The model's tests pass on the base twice: the fix goes on, as a draft whatever the
/// repository's `pull_request.draft`, saying plainly that nothing proves it.
async fn an_unproven_fix_is_a_draft_that_says_so(t: BotTester) {
    t.repo(PROJECT, &unproven_project());
    let alice = t.maintainer(PROJECT, "alice");
    script_fix_after(&t, &[PASSING_TEST, PASSING_TEST]);

    t.label_issue_and_wait(PROJECT, 15, "clamp ignores its upper bound", &alice)
        .await;

    let requests = t.change_requests(PROJECT);
    assert_eq!(requests.len(), 1, "{requests:#?}");
    assert!(requests[0].draft, "an unproven change is a draft");
    let body = &requests[0].body;
    // **Not proven**, because the model's tests pass on the base commit; only `calc.py` changed.
    insta::assert_snapshot!(
        format!("unproven_change_request_body_{}", t.forge_name()),
        stable(body)
    );
    assert!(
        !body.contains("- `tests/test_clamp.py`"),
        "the refused test is not part of the change: {body}"
    );
}

/// A revision asked of a proven change request runs the reproduction's tests again: they still
/// pass, and the reply says so in the proof's own words.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revision_reports_the_proof_again_on_github() {
    let t = BotTester::github().await;
    let remote = t.repo(PROJECT, &unproven_project());
    let alice = t.maintainer(PROJECT, "alice");
    script_fix_after(&t, &[REPRODUCING_TEST]);
    t.label_issue_and_wait(PROJECT, 16, "clamp ignores its upper bound", &alice)
        .await;
    let number = t.change_requests(PROJECT)[0].number;
    let branch = t.change_requests(PROJECT)[0].head.clone();
    crate::support::bot::script_revision(&t.llm, FIXED_PY, crate::support::bot::REVISED_PY, None);

    t.line_comment(
        PROJECT,
        number,
        &alice,
        ("calc.py", 1),
        "say what clamp does",
    )
    .await;
    t.run_until_idle().await;

    assert_eq!(
        remote.read(&branch, "calc.py"),
        crate::support::bot::REVISED_PY
    );
    assert!(
        t.llm.prompts_for("reproduce").len() == 1,
        "no new reproduction is asked for"
    );
    let revision_edit = t.llm.prompts_for("edit").pop().unwrap();
    assert!(
        revision_edit.contains("## The tests that prove this change")
            && revision_edit.contains("tests/test_clamp.py::test_clamp_upper_bound"),
        "the revision is told the proof must keep passing: {revision_edit}"
    );
    let replies = t.replies_on_change_request(PROJECT, number);
    assert_eq!(replies.len(), 1, "{replies:#?}");
    // The reply repeats the proof: the reproducing test still passes with this change.
    insta::assert_snapshot!("revision_reply_with_proof_github", stable(&replies[0]));
}
