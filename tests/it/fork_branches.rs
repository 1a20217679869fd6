//! `forge.push_to = "fork"` on both forges: the bot's branches live only in a fork owned by the
//! bot's user, made once and reused, and every later push of a change request goes back there,
//! so the repository's own CI never runs the model's code as one of its branches.

use crate::support::bot::{
    BotTester, FIXED_PY, REVISED_PY, accepted, on_each_forge, plan, python_project,
    script_python_fix, script_revision, triage,
};
use crate::support::deliveries::On;
use crate::support::git_http::GitHttpRequest;
use crate::support::posted::stable;

const PROJECT: &str = "acme/widgets";
/// The bot's fork of it: the bot's user is `autofix-bot` on both fake forges.
const FORK: &str = "autofix-bot/widgets";
const BRANCH: &str = "fix/7-clamp-ignores-its-bounds";
const SECOND_BRANCH: &str = "fix/8-clamp-also-ignores-its-lower-bound";

/// How many times the bot asked the forge to create a fork.
fn fork_requests(t: &BotTester) -> usize {
    match &t.forge {
        crate::support::bot::FakeForge::GitHub(fake) => fake.count("POST", "/forks"),
        crate::support::bot::FakeForge::GitLab(fake) => fake.requests_to("POST", "/fork").len(),
    }
}

fn forks(t: &BotTester) -> Vec<String> {
    match &t.forge {
        crate::support::bot::FakeForge::GitHub(fake) => fake.forks_of(PROJECT),
        crate::support::bot::FakeForge::GitLab(fake) => fake.forks_of(PROJECT),
    }
}

/// The pushes (`git-receive-pack`) the remote of `path` received.
fn pushes_to(t: &BotTester, path: &str) -> Vec<GitHttpRequest> {
    let prefix = format!("/{path}.git/");
    t.git
        .requests()
        .into_iter()
        .filter(|request| {
            request.path.starts_with(&prefix) && request.path.contains("receive-pack")
        })
        .collect()
}

async fn the_bots_branches_live_only_in_its_fork(t: BotTester) {
    let base = t.repo(PROJECT, &python_project());
    let alice = t.maintainer(PROJECT, "alice");
    script_python_fix(&t.llm);

    t.label_issue_and_wait(PROJECT, 7, "clamp ignores its bounds", &alice)
        .await;

    let change_requests = t.change_requests(PROJECT);
    assert_eq!(change_requests.len(), 1, "{:?}", t.comments(PROJECT, 7));
    let first = &change_requests[0];
    assert_eq!(first.head, BRANCH);
    assert_eq!(
        first.head_repo.as_deref(),
        Some(FORK),
        "opened from the fork"
    );
    assert_eq!(forks(&t), [FORK]);
    let fork = t.git.bare(FORK);
    assert_eq!(fork.read(BRANCH, "calc.py"), FIXED_PY);
    assert_eq!(
        base.branches(),
        ["main"],
        "the repository never gets the branch"
    );
    assert!(
        pushes_to(&t, PROJECT).is_empty(),
        "nothing was pushed to the repository"
    );
    assert!(!pushes_to(&t, FORK).is_empty());
    assert!(
        t.git
            .requests()
            .iter()
            .all(|request| !request.token_outside_basic_auth),
        "the token reaches git only as HTTP Basic credentials"
    );
    let status = t.comments(PROJECT, 7);
    assert_eq!(status.len(), 1, "{status:#?}");
    // The branch was pushed to the bot's fork, the change request opened from there.
    insta::assert_snapshot!(
        format!("status_pushed_to_the_fork_{}", t.forge_name()),
        stable(&status[0])
    );

    // A second issue reuses the fork.
    script_python_fix(&t.llm);
    t.label_issue_and_wait(PROJECT, 8, "clamp also ignores its lower bound", &alice)
        .await;
    let change_requests = t.change_requests(PROJECT);
    assert_eq!(change_requests.len(), 2, "{:?}", t.comments(PROJECT, 8));
    assert_eq!(change_requests[1].head, SECOND_BRANCH);
    assert_eq!(change_requests[1].head_repo.as_deref(), Some(FORK));
    assert_eq!(fork_requests(&t), 1, "the fork is made once");
    assert_eq!(forks(&t), [FORK]);
    assert!(fork.tip(SECOND_BRANCH).is_some());
    assert_eq!(base.branches(), ["main"]);

    // A revision asked on the first change request is pushed to the fork, on top.
    let fixed_tip = fork.tip(BRANCH).unwrap();
    script_revision(&t.llm, FIXED_PY, REVISED_PY, None);
    t.comment(
        PROJECT,
        On::ChangeRequest(first.number),
        &alice,
        "/autofix add a docstring to clamp",
    )
    .await;
    t.run_until_idle().await;

    assert_eq!(
        fork.git(&["rev-list", "--count", &format!("{fixed_tip}..{BRANCH}")])
            .trim(),
        "1",
        "one more commit: {:?}",
        t.replies_on_change_request(PROJECT, first.number)
    );
    assert_eq!(fork.read(BRANCH, "calc.py"), REVISED_PY);
    assert_eq!(
        t.change_requests(PROJECT).len(),
        2,
        "the same change request"
    );
    assert_eq!(base.branches(), ["main"]);
    assert!(pushes_to(&t, PROJECT).is_empty());
    assert_eq!(fork_requests(&t), 1);
    let replies = t.replies_on_change_request(PROJECT, first.number);
    assert_eq!(replies.len(), 1, "{replies:#?}");
    insta::assert_snapshot!(
        format!("revision_in_the_fork_reply_{}", t.forge_name()),
        stable(&replies[0])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bots_branches_live_only_in_its_fork_on_github() {
    let t = BotTester::github_pushing_to_fork().await;
    the_bots_branches_live_only_in_its_fork(t).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bots_branches_live_only_in_its_fork_on_gitlab() {
    let t = BotTester::gitlab_pushing_to_fork().await;
    the_bots_branches_live_only_in_its_fork(t).await;
}

/// A change request opened from the repository (before `push_to` became `fork`) keeps its
/// branch there: its revision goes to the repository, no fork is made for it.
async fn a_change_request_opened_from_the_repository_stays_there(mut t: BotTester) {
    let base = t.repo(PROJECT, &python_project());
    let alice = t.maintainer(PROJECT, "alice");
    script_python_fix(&t.llm);
    t.label_issue_and_wait(PROJECT, 7, "clamp ignores its bounds", &alice)
        .await;
    let number = t.change_requests(PROJECT)[0].number;
    let fixed_tip = base.tip(BRANCH).expect("pushed to the repository");

    t.push_to(autofix::forge::PushTo::Fork);
    script_revision(&t.llm, FIXED_PY, REVISED_PY, None);
    t.comment(
        PROJECT,
        On::ChangeRequest(number),
        &alice,
        "/autofix add a docstring to clamp",
    )
    .await;
    t.run_until_idle().await;

    assert_eq!(
        base.git(&["rev-list", "--count", &format!("{fixed_tip}..{BRANCH}")])
            .trim(),
        "1",
        "{:?}",
        t.replies_on_change_request(PROJECT, number)
    );
    assert!(
        forks(&t).is_empty(),
        "no fork for a branch that lives elsewhere"
    );
}

on_each_forge!(
    a_change_request_opened_from_the_repository_stays_there:
    a_change_request_opened_from_the_repository_stays_there_on_github,
    a_change_request_opened_from_the_repository_stays_there_on_gitlab
);

/// `calc.py` as a person changed it on `main` after the change request was opened.
const RENAMED_PY: &str = "def clamp(value, lowest, highest):\n    return value\n";
/// The fix made again on the renamed `calc.py`.
const REDONE_PY: &str =
    "def clamp(value, lowest, highest):\n    return max(lowest, min(value, highest))\n";

/// The default branch moves under a change request from the fork: the change made again on
/// the new base replaces the fork's branch (its earlier commit known to be autofix's own).
async fn a_moved_base_is_followed_in_the_fork(t: BotTester) {
    let base = t.repo(PROJECT, &python_project());
    let alice = t.maintainer(PROJECT, "alice");
    script_python_fix(&t.llm);
    t.label_issue_and_wait(PROJECT, 7, "clamp ignores its bounds", &alice)
        .await;
    let number = t.change_requests(PROJECT)[0].number;
    let fork = t.git.bare(FORK);
    assert!(fork.tip(BRANCH).is_some());
    let moved = base.commit(
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

    t.pushed_to_default_branch(PROJECT, &moved, &alice).await;
    t.run_until_idle().await;

    assert_eq!(
        fork.read(BRANCH, "calc.py"),
        REDONE_PY,
        "{:?}",
        t.comments(PROJECT, 7)
    );
    assert_eq!(
        fork.git(&["rev-parse", &format!("{BRANCH}~1")]).trim(),
        moved,
        "one commit on the new base"
    );
    assert_eq!(
        t.change_requests(PROJECT).len(),
        1,
        "the same change request"
    );
    assert_eq!(base.branches(), ["main"]);
    assert!(pushes_to(&t, PROJECT).is_empty());
    let replies = t.replies_on_change_request(PROJECT, number);
    assert_eq!(replies.len(), 1, "{replies:#?}");
    insta::assert_snapshot!(
        format!("made_again_in_the_fork_reply_{}", t.forge_name()),
        stable(&replies[0])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_moved_base_is_followed_in_the_fork_on_github() {
    a_moved_base_is_followed_in_the_fork(BotTester::github_pushing_to_fork().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_moved_base_is_followed_in_the_fork_on_gitlab() {
    a_moved_base_is_followed_in_the_fork(BotTester::gitlab_pushing_to_fork().await).await;
}
