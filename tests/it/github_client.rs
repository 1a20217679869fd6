//! Stories of the real GitHub client (`forge::github_api`) against the stateful fake GitHub:
//! every `Forge` method, token and App auth, 422 adoption, rate limits, faults and secrets.

use std::time::{Duration, Instant};

use crate::support::fake_github::{FakeGitHub, github_fixture, test_app_private_key};
use autofix::config::GitHubSection;
use autofix::forge::github_api::{GitHubAuth, GitHubClient, GitHubClientConfig, RetryPolicy};
use autofix::forge::{
    CommentId, Forge, ForgeError, ForgeKind, ForgeUser, IssueNumber, NewChangeRequest, Opened,
    Permission, RepoRef,
};
use secrecy::{ExposeSecret, SecretSlice, SecretString};
use serde_json::json;

const TOKEN: &str = "ghp_storytoken0123456789abcdef";
const REPO: &str = "octo/hello";
const APP_ID: u64 = 1717;

/// A fake with one repository, issue #7 by alice (who may push) and a personal token.
fn github() -> FakeGitHub {
    let github = FakeGitHub::start(axum::Router::new());
    github.set_token(TOKEN, "autofix-bot");
    github.repo(REPO, "main", "http://127.0.0.1:9/octo/hello.git");
    github.issue(REPO, 7, "Crash on empty input", "It panics.", "alice");
    github.collaborator(REPO, "alice", "write");
    github
}

fn repo() -> RepoRef {
    RepoRef {
        forge: ForgeKind::GitHub,
        owner_path: REPO.into(),
        clone_url: "http://127.0.0.1:9/octo/hello.git".into(),
        default_branch: None,
    }
}

fn quick_retries() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 3,
        initial_backoff: Duration::from_millis(10),
        max_backoff: Duration::from_millis(40),
        max_rate_limit_wait: Duration::from_secs(3),
        secondary_rate_limit_wait: Duration::from_millis(20),
    }
}

fn config(github: &FakeGitHub, auth: GitHubAuth) -> GitHubClientConfig {
    GitHubClientConfig {
        timeout: Duration::from_secs(5),
        retry: quick_retries(),
        ..GitHubClientConfig::new(github.api_url(), auth)
    }
}

fn token_client(github: &FakeGitHub) -> GitHubClient {
    GitHubClient::new(config(github, GitHubAuth::Token(TOKEN.into()))).expect("a token client")
}

fn app_auth() -> GitHubAuth {
    GitHubAuth::App {
        app_id: APP_ID,
        private_key_pem: SecretSlice::from(test_app_private_key()),
    }
}

fn app_client(github: &FakeGitHub) -> GitHubClient {
    github.set_app(APP_ID, "autofix-app");
    GitHubClient::new(config(github, app_auth())).expect("an App client")
}

fn user(login: &str) -> ForgeUser {
    ForgeUser {
        login: login.into(),
        id: 1,
        is_bot: false,
    }
}

fn new_pull(head: &str) -> NewChangeRequest {
    NewChangeRequest {
        title: "fix: accept empty input".into(),
        body: "Fixes #7".into(),
        head: head.into(),
        head_repo: None,
        base: "main".into(),
        draft: true,
        reviewers: vec![],
        labels: vec![],
    }
}

// --- every trait method, with a personal token ---

#[tokio::test]
async fn the_bot_is_the_user_the_personal_token_belongs_to() {
    let github = github();
    let bot = token_client(&github).bot_user().await.unwrap();
    assert_eq!(bot.login, "autofix-bot");
    assert!(!bot.is_bot);
}

#[tokio::test]
async fn the_bot_user_is_asked_for_once() {
    let github = github();
    let client = token_client(&github);
    client.bot_user().await.unwrap();
    client.bot_user().await.unwrap();
    assert_eq!(github.count("GET", "/user"), 1);
}

#[tokio::test]
async fn a_writer_may_push_and_a_stranger_has_no_permission() {
    let github = github();
    github.collaborator(REPO, "mara", "maintain");
    let client = token_client(&github);
    let alice = client.permission(&repo(), &user("alice")).await.unwrap();
    let mara = client.permission(&repo(), &user("mara")).await.unwrap();
    let stranger = client.permission(&repo(), &user("mallory")).await.unwrap();
    assert_eq!(
        (alice, mara, stranger),
        (Permission::Write, Permission::Maintain, Permission::None)
    );
}

#[tokio::test]
async fn the_issue_is_read_as_it_is_now_with_labels_state_and_lock() {
    let github = github();
    github.edit_issue(REPO, 7, |issue| {
        issue.labels = vec!["auto-fix".into(), "bug".into()];
        issue.locked = true;
    });
    let issue = token_client(&github)
        .issue(&repo(), IssueNumber(7))
        .await
        .unwrap();
    assert_eq!(issue.title, "Crash on empty input");
    assert_eq!(issue.body, "It panics.");
    assert_eq!(issue.labels, ["auto-fix", "bug"]);
    assert!(issue.open && issue.locked);
    assert_eq!(issue.author.login, "alice");
}

#[tokio::test]
async fn an_issue_without_a_description_reads_with_an_empty_body() {
    let github = github();
    github.issue(REPO, 8, "Terse", "", "alice");
    let issue = token_client(&github)
        .issue(&repo(), IssueNumber(8))
        .await
        .unwrap();
    assert_eq!(issue.body, "");
}

#[tokio::test]
async fn the_default_branch_comes_from_the_repository() {
    let github = github();
    let branch = token_client(&github).default_branch(&repo()).await.unwrap();
    assert_eq!(branch, "main");
}

#[tokio::test]
async fn a_comment_is_created_then_edited_in_place() {
    let github = github();
    let client = token_client(&github);
    let id = client
        .create_comment(&repo(), IssueNumber(7), "- [ ] plan")
        .await
        .unwrap();
    client
        .update_comment(&repo(), IssueNumber(7), id, "- [x] plan")
        .await
        .unwrap();
    let comments = github.comments(REPO, 7);
    assert_eq!(comments.len(), 1);
    assert_eq!(CommentId(comments[0].id), id);
    assert_eq!(comments[0].body, "- [x] plan");
    assert_eq!(comments[0].edits, 1);
    assert_eq!(comments[0].author.login, "autofix-bot");
}

#[tokio::test]
async fn comments_are_read_oldest_first_across_every_page() {
    let github = github();
    github.set_max_page_size(2);
    let client = token_client(&github);
    for n in 1..=5 {
        client
            .create_comment(&repo(), IssueNumber(7), &format!("comment {n}"))
            .await
            .unwrap();
    }
    let comments = client.comments(&repo(), IssueNumber(7)).await.unwrap();
    let bodies: Vec<&str> = comments.iter().map(|c| c.body.as_str()).collect();
    assert_eq!(
        bodies,
        [
            "comment 1",
            "comment 2",
            "comment 3",
            "comment 4",
            "comment 5"
        ]
    );
    // The first page by name, then the next links verbatim (GitHub's /repositories/{id} form).
    assert_eq!(github.count("GET", "/comments"), 3);
    assert_eq!(github.count("GET", "/repositories/"), 2);
    github.assert_no_unexpected();
}

#[tokio::test]
async fn adding_a_label_twice_keeps_one_and_removing_an_absent_label_is_fine() {
    let github = github();
    let client = token_client(&github);
    client
        .add_label(&repo(), IssueNumber(7), "automation failed")
        .await
        .unwrap();
    client
        .add_label(&repo(), IssueNumber(7), "automation failed")
        .await
        .unwrap();
    assert_eq!(github.labels(REPO, 7), ["automation failed"]);
    client
        .remove_label(&repo(), IssueNumber(7), "automation failed")
        .await
        .unwrap();
    client
        .remove_label(&repo(), IssueNumber(7), "automation failed")
        .await
        .unwrap();
    assert!(github.labels(REPO, 7).is_empty());
    assert_eq!(github.count("DELETE", "/labels/automation%20failed"), 2);
}

#[tokio::test]
async fn a_pull_request_opens_with_its_reviewers_teams_and_labels() {
    let github = github();
    github.collaborator(REPO, "bob", "write");
    let client = token_client(&github);
    let request = NewChangeRequest {
        reviewers: vec!["bob".into(), "octo/core".into()],
        labels: vec!["autofix".into()],
        ..new_pull("autofix/issue-7")
    };
    let opened = client.open_change_request(&repo(), &request).await.unwrap();
    let Opened::Created(pull) = opened else {
        panic!("expected a new pull request, got {opened:?}");
    };
    assert_eq!(pull.head, "autofix/issue-7");
    assert_eq!(pull.base, "main");
    assert!(pull.draft);
    assert_eq!(
        pull.url,
        format!("{}/octo/hello/pull/{}", github.url(), pull.number)
    );
    let stored = &github.pull_requests(REPO)[0];
    assert_eq!(stored.requested_reviewers, ["bob"]);
    assert_eq!(stored.requested_teams, ["core"]);
    assert_eq!(stored.labels, ["autofix"]);
    assert_eq!(stored.body, "Fixes #7");
}

#[tokio::test]
async fn a_branch_that_already_has_an_open_pull_request_adopts_it() {
    let github = github();
    let client = token_client(&github);
    let first = client
        .open_change_request(&repo(), &new_pull("autofix/issue-7"))
        .await
        .unwrap();
    let second = client
        .open_change_request(&repo(), &new_pull("autofix/issue-7"))
        .await
        .unwrap();
    assert!(matches!(first, Opened::Created(_)));
    assert!(matches!(second, Opened::Adopted(_)), "{second:?}");
    assert_eq!(first.change_request(), second.change_request());
    assert_eq!(github.pull_requests(REPO).len(), 1);
    assert_eq!(github.count("GET", "/pulls"), 1);
}

#[tokio::test]
async fn a_reviewer_who_cannot_review_is_logged_and_the_pull_request_still_opens() {
    let github = github();
    let client = token_client(&github);
    let request = NewChangeRequest {
        reviewers: vec!["nobody-here".into()],
        labels: vec!["autofix".into()],
        ..new_pull("autofix/issue-7")
    };
    let opened = client.open_change_request(&repo(), &request).await.unwrap();
    assert!(matches!(opened, Opened::Created(_)));
    let stored = &github.pull_requests(REPO)[0];
    assert!(stored.requested_reviewers.is_empty());
    assert_eq!(stored.labels, ["autofix"]);
}

#[tokio::test]
async fn a_pull_request_from_the_base_onto_itself_is_rejected_with_githubs_words() {
    let github = github();
    let err = token_client(&github)
        .open_change_request(&repo(), &new_pull("main"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, ForgeError::Rejected { status: 422, .. }),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("Validation Failed: No commits between main and main"),
        "{err}"
    );
}

#[tokio::test]
async fn a_head_branch_that_does_not_exist_is_rejected() {
    let github = github();
    github.set_branch_lookup(|_, branch| branch != "autofix/missing");
    let err = token_client(&github)
        .open_change_request(&repo(), &new_pull("autofix/missing"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, ForgeError::Rejected { status: 422, .. }),
        "{err:?}"
    );
    assert!(github.pull_requests(REPO).is_empty());
}

#[tokio::test]
async fn every_open_pull_request_is_listed_across_pages_and_closed_ones_are_not() {
    let github = github();
    github.set_max_page_size(2);
    let client = token_client(&github);
    for n in 1..=3 {
        client
            .open_change_request(&repo(), &new_pull(&format!("autofix/issue-{n}")))
            .await
            .unwrap();
    }
    github
        .state()
        .repos
        .get_mut(REPO)
        .unwrap()
        .pulls
        .values_mut()
        .next()
        .unwrap()
        .open = false;
    let open = client.open_change_requests(&repo()).await.unwrap();
    let heads: Vec<&str> = open.iter().map(|pull| pull.head.as_str()).collect();
    assert_eq!(heads, ["autofix/issue-2", "autofix/issue-3"]);
}

#[tokio::test]
async fn git_presents_the_personal_token_as_x_access_token() {
    let github = github();
    let credentials = token_client(&github)
        .git_credentials(&repo())
        .await
        .unwrap();
    assert_eq!(credentials.username, "x-access-token");
    assert_eq!(credentials.token.expose_secret(), TOKEN);
}

// --- GitHub App ---

#[tokio::test]
async fn an_app_acts_as_its_slug_bot() {
    let github = github();
    let bot = app_client(&github).bot_user().await.unwrap();
    assert_eq!(
        bot,
        ForgeUser {
            login: "autofix-app[bot]".into(),
            id: APP_ID,
            is_bot: true,
        }
    );
}

#[tokio::test]
async fn an_app_fetches_one_installation_token_and_reuses_it() {
    let github = github();
    let client = app_client(&github);
    client.issue(&repo(), IssueNumber(7)).await.unwrap();
    let id = client
        .create_comment(&repo(), IssueNumber(7), "working on it")
        .await
        .unwrap();
    let credentials = client.git_credentials(&repo()).await.unwrap();
    assert_eq!(github.count("GET", "/installation"), 1);
    assert_eq!(github.count("POST", "/access_tokens"), 1);
    let issued = github.issued_tokens();
    assert_eq!(credentials.username, "x-access-token");
    assert_eq!(credentials.token.expose_secret(), issued[0].token);
    let comment = &github.comments(REPO, 7)[0];
    assert_eq!(CommentId(comment.id), id);
    assert_eq!(comment.author.login, "autofix-app[bot]");
}

#[tokio::test]
async fn an_installation_token_near_its_expiry_is_fetched_again() {
    let github = github();
    let client = app_client(&github);
    // Four minutes left is inside the five-minute margin: every use fetches a fresh token.
    github.set_token_lifetime(Duration::from_secs(4 * 60));
    client.issue(&repo(), IssueNumber(7)).await.unwrap();
    client.issue(&repo(), IssueNumber(7)).await.unwrap();
    assert_eq!(github.count("POST", "/access_tokens"), 2);
    assert_eq!(github.count("GET", "/installation"), 1);
}

#[tokio::test]
async fn a_revoked_installation_token_is_dropped_and_the_next_call_gets_a_new_one() {
    let github = github();
    let client = app_client(&github);
    client.issue(&repo(), IssueNumber(7)).await.unwrap();
    github.state().issued_tokens.clear();
    let err = client.issue(&repo(), IssueNumber(7)).await.unwrap_err();
    assert!(matches!(err, ForgeError::Unauthorized { .. }), "{err:?}");
    client.issue(&repo(), IssueNumber(7)).await.unwrap();
    assert_eq!(github.count("POST", "/access_tokens"), 2);
}

#[tokio::test]
async fn an_app_not_installed_on_the_repository_is_not_found() {
    let github = github();
    let client = app_client(&github);
    let elsewhere = RepoRef {
        owner_path: "octo/elsewhere".into(),
        ..repo()
    };
    let err = client.issue(&elsewhere, IssueNumber(1)).await.unwrap_err();
    assert!(matches!(err, ForgeError::NotFound { .. }), "{err:?}");
    assert!(
        err.to_string().contains("installation of octo/elsewhere"),
        "{err}"
    );
}

#[tokio::test]
async fn a_jwt_signed_with_another_key_is_refused() {
    let github = github();
    github.set_app(APP_ID, "autofix-app");
    let other_key = std::process::Command::new("openssl")
        .args(["genrsa", "-traditional", "2048"])
        .output()
        .expect("openssl is installed");
    let client = GitHubClient::new(config(
        &github,
        GitHubAuth::App {
            app_id: APP_ID,
            private_key_pem: SecretSlice::from(other_key.stdout),
        },
    ))
    .unwrap();
    let err = client.bot_user().await.unwrap_err();
    assert!(matches!(err, ForgeError::Unauthorized { .. }), "{err:?}");
    assert!(err.to_string().contains("Bad credentials"), "{err}");
}

// --- rate limits ---

#[tokio::test]
async fn a_retry_after_is_waited_out_and_the_request_then_succeeds() {
    let github = github();
    github.fail_next(
        "GET",
        "/issues/7",
        429,
        github_fixture("error-403-secondary-rate-limit.json"),
        &[("retry-after", "1")],
        1,
    );
    let started = Instant::now();
    token_client(&github)
        .issue(&repo(), IssueNumber(7))
        .await
        .unwrap();
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert_eq!(github.count("GET", "/issues/7"), 2);
}

#[tokio::test]
async fn an_exhausted_quota_waits_until_the_reset_time() {
    let github = github();
    let reset = (chrono::Utc::now().timestamp() + 1).to_string();
    github.fail_next(
        "GET",
        "/issues/7",
        403,
        github_fixture("error-403-primary-rate-limit.json"),
        &[
            ("x-ratelimit-remaining", "0"),
            ("x-ratelimit-reset", &reset),
        ],
        1,
    );
    token_client(&github)
        .issue(&repo(), IssueNumber(7))
        .await
        .unwrap();
    assert_eq!(github.count("GET", "/issues/7"), 2);
}

#[tokio::test]
async fn a_reset_beyond_the_longest_wait_is_returned_as_rate_limited_at_once() {
    let github = github();
    let reset_epoch = chrono::Utc::now().timestamp() + 3600;
    github.fail_next(
        "GET",
        "/issues/7",
        403,
        github_fixture("error-403-primary-rate-limit.json"),
        &[
            ("x-ratelimit-remaining", "0"),
            ("x-ratelimit-reset", &reset_epoch.to_string()),
        ],
        1,
    );
    let err = token_client(&github)
        .issue(&repo(), IssueNumber(7))
        .await
        .unwrap_err();
    let ForgeError::RateLimited { reset_at, .. } = &err else {
        panic!("expected RateLimited, got {err:?}");
    };
    assert!(
        (reset_at.timestamp() - reset_epoch).abs() <= 2,
        "{reset_at}"
    );
    assert!(err.is_retryable());
    assert_eq!(github.count("GET", "/issues/7"), 1);
}

#[tokio::test]
async fn the_recorded_secondary_limit_without_headers_is_backed_off_and_retried() {
    let github = github();
    github.fail_next(
        "POST",
        "/comments",
        403,
        github_fixture("error-403-secondary-rate-limit.json"),
        &[],
        1,
    );
    token_client(&github)
        .create_comment(&repo(), IssueNumber(7), "hello")
        .await
        .unwrap();
    assert_eq!(github.count("POST", "/comments"), 2);
    assert_eq!(github.comments(REPO, 7).len(), 1);
}

#[tokio::test]
async fn a_rate_limit_that_never_lifts_ends_as_rate_limited_after_the_attempts() {
    let github = github();
    github.fail_next(
        "GET",
        "/issues/7",
        429,
        json!({"message": "slow down"}),
        &[("retry-after", "0")],
        10,
    );
    let err = token_client(&github)
        .issue(&repo(), IssueNumber(7))
        .await
        .unwrap_err();
    assert!(matches!(err, ForgeError::RateLimited { .. }), "{err:?}");
    assert_eq!(github.count("GET", "/issues/7"), 3);
}

// --- other faults ---

#[tokio::test]
async fn a_wrong_token_is_unauthorized_with_githubs_message_and_not_retried() {
    let github = github();
    let client = GitHubClient::new(config(&github, GitHubAuth::Token("ghp_wrong".into()))).unwrap();
    let err = client.issue(&repo(), IssueNumber(7)).await.unwrap_err();
    assert!(matches!(err, ForgeError::Unauthorized { .. }), "{err:?}");
    assert!(err.to_string().contains("Bad credentials"), "{err}");
    assert!(!err.is_retryable());
    assert_eq!(github.count("GET", "/issues/7"), 1);
}

#[tokio::test]
async fn a_plain_403_is_forbidden_and_not_retried() {
    let github = github();
    github.fail_next(
        "POST",
        "/labels",
        403,
        json!({"message": "Resource not accessible by personal access token"}),
        &[("x-ratelimit-remaining", "4999")],
        5,
    );
    let err = token_client(&github)
        .add_label(&repo(), IssueNumber(7), "automation-failed")
        .await
        .unwrap_err();
    assert!(matches!(err, ForgeError::Forbidden { .. }), "{err:?}");
    assert!(err.to_string().contains("Resource not accessible"), "{err}");
    assert_eq!(github.count("POST", "/labels"), 1);
}

#[tokio::test]
async fn a_missing_issue_is_not_found_and_not_retried() {
    let github = github();
    let err = token_client(&github)
        .issue(&repo(), IssueNumber(404))
        .await
        .unwrap_err();
    assert!(matches!(err, ForgeError::NotFound { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "GitHub found nothing when autofix tried to read issue #404 of octo/hello (404)"
    );
    assert_eq!(github.count("GET", "/issues/404"), 1);
}

#[tokio::test]
async fn a_missing_repository_is_not_found() {
    let github = github();
    let err = token_client(&github)
        .default_branch(&RepoRef {
            owner_path: "octo/gone".into(),
            ..repo()
        })
        .await
        .unwrap_err();
    assert!(matches!(err, ForgeError::NotFound { .. }), "{err:?}");
}

#[tokio::test]
async fn a_422_on_a_comment_is_rejected_and_not_retried() {
    let github = github();
    github.fail_next(
        "POST",
        "/comments",
        422,
        github_fixture("error-422-validation-failed-missing-field.json"),
        &[],
        1,
    );
    let err = token_client(&github)
        .create_comment(&repo(), IssueNumber(7), "x")
        .await
        .unwrap_err();
    assert!(
        matches!(err, ForgeError::Rejected { status: 422, .. }),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("Validation Failed: missing_field title"),
        "{err}"
    );
    assert_eq!(github.count("POST", "/comments"), 1);
}

#[tokio::test]
async fn server_errors_are_retried_until_one_succeeds() {
    let github = github();
    github.fail_next(
        "GET",
        "/issues/7",
        502,
        json!({"message": "Server Error"}),
        &[],
        2,
    );
    token_client(&github)
        .issue(&repo(), IssueNumber(7))
        .await
        .unwrap();
    assert_eq!(github.count("GET", "/issues/7"), 3);
}

#[tokio::test]
async fn server_errors_that_persist_become_transient_after_the_attempts() {
    let github = github();
    github.fail_next(
        "GET",
        "/issues/7",
        503,
        json!({"message": "Unavailable"}),
        &[],
        10,
    );
    let err = token_client(&github)
        .issue(&repo(), IssueNumber(7))
        .await
        .unwrap_err();
    assert!(matches!(err, ForgeError::Transient { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("HTTP 503: Unavailable (after 3 attempts)"),
        "{err}"
    );
    assert!(err.is_retryable());
    assert_eq!(github.count("GET", "/issues/7"), 3);
}

#[tokio::test]
async fn a_server_that_does_not_answer_in_time_is_transient() {
    let github = github();
    github.delay_next("GET", "/issues/7", Duration::from_secs(2), 5);
    let client = GitHubClient::new(GitHubClientConfig {
        timeout: Duration::from_millis(200),
        ..config(&github, GitHubAuth::Token(TOKEN.into()))
    })
    .unwrap();
    let err = client.issue(&repo(), IssueNumber(7)).await.unwrap_err();
    assert!(matches!(err, ForgeError::Transient { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("no answer within 200 ms (after 3 attempts)"),
        "{err}"
    );
}

#[tokio::test]
async fn a_comment_that_timed_out_is_not_posted_a_second_time() {
    let github = github();
    github.delay_next("POST", "/comments", Duration::from_millis(600), 1);
    let client = GitHubClient::new(GitHubClientConfig {
        timeout: Duration::from_millis(200),
        ..config(&github, GitHubAuth::Token(TOKEN.into()))
    })
    .unwrap();
    let err = client
        .create_comment(&repo(), IssueNumber(7), "once")
        .await
        .unwrap_err();
    assert!(matches!(err, ForgeError::Transient { .. }), "{err:?}");
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(github.count("POST", "/comments"), 1);
}

#[tokio::test]
async fn an_api_nobody_listens_on_is_transient() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let client = GitHubClient::new(GitHubClientConfig {
        retry: quick_retries(),
        ..GitHubClientConfig::new(
            format!("http://127.0.0.1:{port}/api/v3"),
            GitHubAuth::Token(TOKEN.into()),
        )
    })
    .unwrap();
    let err = client.default_branch(&repo()).await.unwrap_err();
    assert!(matches!(err, ForgeError::Transient { .. }), "{err:?}");
    assert!(
        err.to_string().contains("no connection to the API"),
        "{err}"
    );
}

#[tokio::test]
async fn a_success_whose_body_is_not_the_expected_json_is_an_invalid_response() {
    let github = github();
    github.fail_next("GET", "/issues/7", 200, json!({"unexpected": true}), &[], 1);
    let err = token_client(&github)
        .issue(&repo(), IssueNumber(7))
        .await
        .unwrap_err();
    assert!(matches!(err, ForgeError::InvalidResponse { .. }), "{err:?}");
    assert!(
        err.to_string().contains("read issue #7 of octo/hello"),
        "{err}"
    );
}

#[tokio::test]
async fn the_token_never_appears_in_an_error_even_when_github_echoes_it() {
    let github = github();
    github.fail_next(
        "*",
        "/issues/7",
        401,
        json!({"message": format!("token {TOKEN} was revoked")}),
        &[],
        1,
    );
    let err = token_client(&github)
        .issue(&repo(), IssueNumber(7))
        .await
        .unwrap_err();
    assert!(!err.to_string().contains(TOKEN), "{err}");
    assert!(!format!("{err:?}").contains(TOKEN), "{err:?}");
    assert!(err.to_string().contains("[redacted] was revoked"), "{err}");
}

// --- configuration ---

fn section(token: &str, app_id: u64, private_key_path: &str) -> GitHubSection {
    GitHubSection {
        api_url: "http://127.0.0.1:9/api/v3".into(),
        web_url: "http://127.0.0.1:9".into(),
        token: SecretString::from(token),
        app_id,
        private_key_path: private_key_path.into(),
        webhook_secret: SecretString::from(""),
        webhook_secrets: vec![],
        request_timeout_secs: 10,
    }
}

fn key_file() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.pem");
    std::fs::write(&path, test_app_private_key()).unwrap();
    let path = path.display().to_string();
    (dir, path)
}

/// The client `[github]` asks for: its settings read by `config`, the client built from them.
fn from_section(section: &GitHubSection) -> Result<Option<GitHubClient>, ForgeError> {
    section
        .client_settings()
        .and_then(GitHubClient::from_settings)
}

fn configuration_error(result: Result<Option<GitHubClient>, ForgeError>) -> String {
    match result {
        Err(ForgeError::Configuration(message)) => message,
        Err(other) => panic!("expected a configuration error, got {other:?}"),
        Ok(_) => panic!("expected a configuration error, got a client"),
    }
}

#[test]
fn no_token_and_no_app_configure_no_client() {
    assert!(from_section(&section("", 0, "")).unwrap().is_none());
}

#[tokio::test]
async fn the_app_wins_when_both_a_token_and_an_app_are_configured() {
    let github = github();
    github.set_app(APP_ID, "autofix-app");
    let (_dir, path) = key_file();
    let mut both = section(TOKEN, APP_ID, &path);
    both.api_url = github.api_url();
    let client = from_section(&both).unwrap().expect("a client");
    assert_eq!(client.bot_user().await.unwrap().login, "autofix-app[bot]");
}

#[test]
fn an_empty_token_is_refused_by_name() {
    let err = GitHubClient::new(GitHubClientConfig::new(
        "http://127.0.0.1:9/api/v3",
        GitHubAuth::Token(" ".into()),
    ))
    .err()
    .expect("an empty token is refused");
    assert!(
        err.to_string().starts_with("github.token is empty"),
        "{err}"
    );
}

#[test]
fn an_unreadable_key_file_is_named_in_the_error() {
    let message = configuration_error(from_section(&section("", APP_ID, "/nonexistent/app.pem")));
    assert!(
        message.starts_with("github.private_key_path `/nonexistent/app.pem` cannot be read"),
        "{message}"
    );
}

#[test]
fn a_key_file_that_is_not_pem_is_named_in_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.pem");
    std::fs::write(&path, "not a key").unwrap();
    let message = configuration_error(from_section(&section(
        "",
        APP_ID,
        &path.display().to_string(),
    )));
    assert!(message.contains("is not a PEM file"), "{message}");
}

#[test]
fn a_pem_that_is_not_an_rsa_key_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.pem");
    std::fs::write(
        &path,
        "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n",
    )
    .unwrap();
    let message = configuration_error(from_section(&section(
        "",
        APP_ID,
        &path.display().to_string(),
    )));
    assert!(
        message.contains("is not an RSA private key in PEM form"),
        "{message}"
    );
}

#[test]
fn an_app_id_without_a_key_path_is_refused_by_name() {
    let message = configuration_error(from_section(&section("", APP_ID, "")));
    assert!(
        message.starts_with("github.app_id is set but github.private_key_path is not"),
        "{message}"
    );
}

#[test]
fn a_key_path_without_an_app_id_is_refused_by_name() {
    let (_dir, path) = key_file();
    let message = configuration_error(from_section(&section("", 0, &path)));
    assert!(
        message.starts_with("github.private_key_path is set but github.app_id is not"),
        "{message}"
    );
}

#[test]
fn an_api_url_that_is_not_a_url_is_refused_by_name() {
    let mut bad = section(TOKEN, 0, "");
    bad.api_url = "api.github.com".into();
    let message = configuration_error(from_section(&bad));
    assert!(
        message.starts_with("github.api_url `api.github.com`"),
        "{message}"
    );
}

// --- the fake itself ---

#[tokio::test]
async fn a_route_the_fake_does_not_serve_is_recorded_as_unexpected() {
    let github = github();
    let status = reqwest::Client::new()
        .get(format!("{}/repos/octo/hello/branches", github.api_url()))
        .header("authorization", format!("token {TOKEN}"))
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, 404);
    let requests = github.requests();
    assert!(requests[0].unexpected, "{}", requests[0]);
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        github.assert_no_unexpected()
    }));
    assert!(caught.is_err());
    github.state().requests.clear();
}

#[tokio::test]
async fn the_fake_refuses_a_repeated_api_version_as_github_does() {
    let github = github();
    let status = reqwest::Client::new()
        .get(format!("{}/repos/octo/hello", github.api_url()))
        .header("authorization", format!("token {TOKEN}"))
        .header("user-agent", "story")
        .header("x-github-api-version", "2022-11-28")
        .header("x-github-api-version", "2022-11-28")
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, 400);
}

/// A token client that waits briefly for forks, and a fake that lets its user fork.
fn forking_client(github: &FakeGitHub) -> GitHubClient {
    github.set_forker(std::sync::Arc::new(|_: &str, _: &str| {}));
    GitHubClient::new(GitHubClientConfig {
        fork_wait: autofix::forge::ForkWait {
            poll: Duration::from_millis(10),
            limit: Duration::from_secs(5),
        },
        ..config(github, GitHubAuth::Token(TOKEN.into()))
    })
    .expect("a token client")
}

fn posted_to(github: &FakeGitHub, path_end: &str) -> Vec<serde_json::Value> {
    github
        .requests()
        .into_iter()
        .filter(|request| request.method.as_str() == "POST" && request.path.ends_with(path_end))
        .map(|request| request.body.unwrap_or_default())
        .collect()
}

#[tokio::test]
async fn the_bots_fork_is_made_once_waited_for_and_found_again() {
    let github = github();
    let client = forking_client(&github);

    let fork = client.bot_fork(&repo()).await.unwrap();

    assert_eq!(fork.owner_path, "autofix-bot/hello");
    assert_eq!(fork.clone_url, "http://127.0.0.1:9/autofix-bot/hello.git");
    assert_eq!(fork.default_branch.as_deref(), Some("main"));
    assert_eq!(
        posted_to(&github, "/repos/octo/hello/forks"),
        [json!({"default_branch_only": true})]
    );
    // GitHub copies a fork in the background: its branch was looked up until it was there.
    assert_eq!(
        github.count("GET", "/repos/autofix-bot/hello/git/ref/heads/main"),
        3
    );
    let again = client.bot_fork(&repo()).await.unwrap();
    assert_eq!(again, fork);
    assert_eq!(github.count("POST", "/forks"), 1, "found, not made again");
}

#[tokio::test]
async fn a_repository_of_the_bots_that_is_no_fork_is_never_taken_for_one() {
    let github = github();
    github.repo(
        "autofix-bot/hello",
        "main",
        "http://127.0.0.1:9/autofix-bot/hello.git",
    );
    let client = forking_client(&github);

    let fork = client.bot_fork(&repo()).await.unwrap();

    assert_eq!(
        fork.owner_path, "autofix-bot/hello-1",
        "GitHub's name for it"
    );
    assert_eq!(github.forks_of(REPO), ["autofix-bot/hello-1"]);
}

#[tokio::test]
async fn a_fork_that_is_never_ready_is_a_fault_to_retry_later() {
    let github = github();
    github.set_forker(std::sync::Arc::new(|_: &str, _: &str| {}));
    github.state().fork_copy_looks = 1_000;
    let client = GitHubClient::new(GitHubClientConfig {
        fork_wait: autofix::forge::ForkWait {
            poll: Duration::from_millis(10),
            limit: Duration::from_millis(50),
        },
        ..config(&github, GitHubAuth::Token(TOKEN.into()))
    })
    .unwrap();

    let err = client.bot_fork(&repo()).await.unwrap_err();

    assert!(err.is_retryable(), "{err:?}");
    assert_eq!(
        err.to_string(),
        "GitHub failed when autofix tried to wait for the fork autofix-bot/hello to be ready: its \
         branch main is still missing after 50ms"
    );
}

#[tokio::test]
async fn a_pull_request_from_the_bots_fork_names_its_owner_and_is_adopted_again() {
    let github = github();
    let client = forking_client(&github);
    let fork = client.bot_fork(&repo()).await.unwrap();
    let request = NewChangeRequest {
        head_repo: Some(fork),
        ..new_pull("autofix/issue-7")
    };

    let first = client.open_change_request(&repo(), &request).await.unwrap();
    let second = client.open_change_request(&repo(), &request).await.unwrap();

    assert!(matches!(first, Opened::Created(_)), "{first:?}");
    assert!(matches!(second, Opened::Adopted(_)), "{second:?}");
    assert_eq!(first.change_request(), second.change_request());
    let sent = &posted_to(&github, "/repos/octo/hello/pulls")[0];
    assert_eq!(sent["head"], "autofix-bot:autofix/issue-7");
    assert_eq!(sent["maintainer_can_modify"], true);
    let stored = &github.pull_requests(REPO)[0];
    assert_eq!(stored.head, "autofix/issue-7");
    assert_eq!(stored.head_repo.as_deref(), Some("autofix-bot/hello"));
    assert_eq!(github.pull_requests(REPO).len(), 1);
}

#[tokio::test]
async fn a_github_app_cannot_own_a_fork_and_asks_github_nothing() {
    let github = github();
    let client = app_client(&github);
    github.set_forker(std::sync::Arc::new(|_: &str, _: &str| {}));

    let err = client.bot_fork(&repo()).await.unwrap_err();

    assert!(matches!(err, ForgeError::Configuration(_)), "{err:?}");
    assert_eq!(err.to_string(), autofix::forge::github_api::APP_CANNOT_FORK);
    assert_eq!(github.count("POST", "/forks"), 0);
}
