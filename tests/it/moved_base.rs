//! The default branch moves under autofix's change request, on both forges: nothing happens
//! while it still merges cleanly; when it no longer does, the change is made again on the new
//! base (its own commits replayed when they still apply), and a person's commits are never
//! rewritten.

use crate::support::bot::{
    BotTester, accepted, fixed_issue, on_each_forge, plan, python_project, triage,
};
use crate::support::posted::stable;

const PROJECT: &str = "acme/widgets";
const ISSUE: u64 = 7;
const BRANCH: &str = "fix/7-clamp-ignores-its-bounds";

/// `calc.py` as a person changed it on `main` after the change request was opened.
const RENAMED_PY: &str = "def clamp(value, lowest, highest):\n    return value\n";
/// The fix made again on the renamed `calc.py`.
const REDONE_PY: &str =
    "def clamp(value, lowest, highest):\n    return max(lowest, min(value, highest))\n";

async fn a_conflicting_base_gets_the_change_made_again_on_it(t: BotTester) {
    let remote = t.repo(PROJECT, &python_project());
    let number = fixed_issue(&t, PROJECT, ISSUE).await;
    let bob = t.maintainer(PROJECT, "bob");
    let moved = remote.commit(
        "main",
        &[("calc.py", RENAMED_PY)],
        "refactor: name the bounds",
    );
    t.llm.reply_text_for_stage("triage", triage());
    t.llm.reply_text_for_stage("plan", plan());
    t.llm.reply_text_for_stage(
        "edit",
        format!(
            "calc.py\n```\n<<<<<<< SEARCH\n{RENAMED_PY}=======\n{REDONE_PY}>>>>>>> REPLACE\n```\n"
        ),
    );
    t.llm.reply_text_for_stage("audit", accepted());

    let sent = t.pushed_to_default_branch(PROJECT, &moved, &bob).await;
    assert_eq!(sent.status.as_u16(), 202, "{:?}", sent.answer);
    t.run_until_idle().await;

    assert_eq!(
        t.change_requests(PROJECT).len(),
        1,
        "the same change request"
    );
    assert_eq!(
        remote.git(&["rev-parse", &format!("{BRANCH}~1")]).trim(),
        moved,
        "one commit on the new base"
    );
    assert_eq!(remote.read(BRANCH, "calc.py"), REDONE_PY);
    let replies = t.replies_on_change_request(PROJECT, number);
    assert_eq!(replies.len(), 1, "{replies:#?}");
    // The change was made again on the new `main`; job 2's status says it opened the fix.
    let forge = t.forge_name();
    insta::assert_snapshot!(format!("made_again_reply_{forge}"), stable(&replies[0]));
    let status: Vec<String> = t.comments_marked(PROJECT, ISSUE, "<!-- autofix:status job=2 -->");
    assert_eq!(status.len(), 1);
    insta::assert_snapshot!(format!("made_again_status_{forge}"), stable(&status[0]));
}

on_each_forge!(
    a_conflicting_base_gets_the_change_made_again_on_it:
    a_conflicting_base_gets_the_change_made_again_on_it_on_github,
    a_conflicting_base_gets_the_change_made_again_on_it_on_gitlab
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_base_that_still_merges_cleanly_changes_nothing() {
    let t = BotTester::github().await;
    let remote = t.repo(PROJECT, &python_project());
    let number = fixed_issue(&t, PROJECT, ISSUE).await;
    let tip = remote.tip(BRANCH).unwrap();
    let bob = t.maintainer(PROJECT, "bob");
    let before = t.llm.requests().len();
    let moved = remote.commit("main", &[("README.md", "# widgets\n")], "docs: a readme");

    t.pushed_to_default_branch(PROJECT, &moved, &bob).await;
    t.run_until_idle().await;

    assert_eq!(remote.tip(BRANCH).unwrap(), tip);
    assert_eq!(t.llm.requests().len(), before);
    assert!(t.replies_on_change_request(PROJECT, number).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_branch_holding_a_persons_commit_is_not_rewritten_and_says_why() {
    let t = BotTester::github().await;
    let remote = t.repo(PROJECT, &python_project());
    let number = fixed_issue(&t, PROJECT, ISSUE).await;
    let theirs = remote.commit(BRANCH, &[("NOTES.md", "tested by hand\n")], "docs: a note");
    let bob = t.maintainer(PROJECT, "bob");
    let before = t.llm.requests().len();
    let moved = remote.commit(
        "main",
        &[("calc.py", RENAMED_PY)],
        "refactor: name the bounds",
    );

    t.pushed_to_default_branch(PROJECT, &moved, &bob).await;
    t.run_until_idle().await;

    assert_eq!(remote.tip(BRANCH).unwrap(), theirs, "nothing rewritten");
    assert_eq!(t.llm.requests().len(), before);
    let replies = t.replies_on_change_request(PROJECT, number);
    assert_eq!(replies.len(), 1, "{replies:#?}");
    // No rebase: 1 of the branch's commits is a person's.
    insta::assert_snapshot!("persons_commit_not_rebased_reply", stable(&replies[0]));
}
