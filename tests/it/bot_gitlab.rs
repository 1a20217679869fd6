//! The bot on GitLab only: labels from bot accounts or the bot itself start nothing (the stories
//! both forges share, the labelled issue becoming a merge request among them: bot_both_forges).

use crate::support::bot::{BotTester, python_project};
use crate::support::deliveries;
use crate::support::posted::stable;

const PROJECT: &str = "acme/widgets";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bot_account_is_refused_and_the_bot_itself_is_ignored() {
    let t = BotTester::gitlab().await;
    t.repo(PROJECT, &python_project());
    let renovate = deliveries::bot_account("project_7_bot_3f9a", 4242);
    let own = t.gitlab_fake().bot();
    let itself = deliveries::bot_account(&own.username, own.id);

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
