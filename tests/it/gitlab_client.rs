//! The GitLab REST client against the fake GitLab over HTTP: every `Forge` method, merge-request
//! adoption and drafts, rate limits, error statuses, retries, timeouts and the recorded docs examples.

use std::time::{Duration, Instant};

use crate::support::fake_gitlab::{FakeGitLab, FakeNote, gitlab_fixture};
use autofix::config::{GitLabSection, ServiceConfig};
use autofix::forge::gitlab_api::{GitLabClient, RetryPolicy};
use autofix::forge::{
    CommentId, Forge, ForgeError, ForgeKind, ForgeUser, IssueNumber, NewChangeRequest, Opened,
    Permission, RepoRef,
};
use chrono::Utc;
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};

const PROJECT: &str = "acme/tools/widgets";
const TIMEOUT: Duration = Duration::from_millis(500);

fn fast_retries() -> RetryPolicy {
    RetryPolicy {
        max_retries: 2,
        initial_backoff: Duration::from_millis(10),
        max_backoff: Duration::from_millis(40),
        max_rate_limit_wait: Duration::from_secs(2),
    }
}

fn gitlab() -> FakeGitLab {
    let gitlab = FakeGitLab::start(axum::Router::new());
    gitlab.project(PROJECT);
    gitlab
}

fn client(gitlab: &FakeGitLab) -> GitLabClient {
    GitLabClient::new(&gitlab.api_url(), gitlab.token(), TIMEOUT, fast_retries())
        .expect("a client for the fake")
}

fn repo() -> RepoRef {
    RepoRef {
        forge: ForgeKind::GitLab,
        owner_path: PROJECT.into(),
        clone_url: format!("https://gitlab.example.com/{PROJECT}.git"),
        default_branch: None,
    }
}

fn person(gitlab: &FakeGitLab, username: &str) -> ForgeUser {
    ForgeUser {
        login: username.into(),
        id: gitlab.user(username),
        is_bot: false,
    }
}

fn change_request(head: &str) -> NewChangeRequest {
    NewChangeRequest {
        title: "fix(parser): accept empty input (#7)".into(),
        body: "Fixes #7".into(),
        head: head.into(),
        head_repo: None,
        base: "main".into(),
        draft: false,
        reviewers: vec![],
        labels: vec![],
    }
}

fn fixture(name: &str) -> Value {
    serde_json::from_str(&gitlab_fixture(&format!("api/{name}"))).expect("the fixture is JSON")
}

// --- the trait, method by method ----------------------------------------------------------

#[tokio::test]
async fn the_bot_user_is_the_account_the_token_belongs_to() {
    let gitlab = gitlab();

    let bot = client(&gitlab).bot_user().await.unwrap();

    assert_eq!(bot.login, "autofix-bot");
    assert_eq!(bot.id, gitlab.bot().id);
    assert!(bot.is_bot);
    let request = &gitlab.requests()[0];
    assert_eq!(request.path, "/api/v4/user");
    assert_eq!(
        request.header("private-token"),
        Some(gitlab.token().expose_secret())
    );
}

#[tokio::test]
async fn a_user_without_the_bot_field_is_a_bot_when_named_like_a_project_token() {
    let gitlab = gitlab();
    let user =
        json!({"id": 41, "username": "project_5_bot_3f2a", "name": "autofix", "state": "active"});
    gitlab.fail_next("GET", "/api/v4/user", 200, user, &[], 1);

    let bot = client(&gitlab).bot_user().await.unwrap();

    assert_eq!((bot.id, bot.is_bot), (41, true));
}

#[tokio::test]
async fn developers_and_above_may_push_and_reporters_may_not() {
    let gitlab = gitlab();
    gitlab
        .project(PROJECT)
        .member("devon", 30)
        .member("rita", 20)
        .member("olga", 50);
    let client = client(&gitlab);

    let devon = client
        .permission(&repo(), &person(&gitlab, "devon"))
        .await
        .unwrap();
    let rita = client
        .permission(&repo(), &person(&gitlab, "rita"))
        .await
        .unwrap();
    let olga = client
        .permission(&repo(), &person(&gitlab, "olga"))
        .await
        .unwrap();

    assert_eq!(
        (devon, rita, olga),
        (Permission::Write, Permission::Read, Permission::Admin)
    );
    assert!(devon.may_push() && !rita.may_push());
    let asked = gitlab.requests_to("GET", "/members/all/");
    assert_eq!(
        asked[0].path,
        format!(
            "/api/v4/projects/acme%2Ftools%2Fwidgets/members/all/{}",
            gitlab.user("devon")
        )
    );
}

#[tokio::test]
async fn someone_who_is_not_a_member_has_no_permission() {
    let gitlab = gitlab();

    let stranger = client(&gitlab)
        .permission(&repo(), &person(&gitlab, "stranger"))
        .await
        .unwrap();

    assert_eq!(stranger, Permission::None);
}

#[tokio::test]
async fn an_issue_is_read_with_its_labels_state_lock_and_author() {
    let gitlab = gitlab();
    gitlab
        .project(PROJECT)
        .issue(7, "Parser rejects empty input")
        .labels(&["bug", "auto-fix"])
        .author("alice");

    let issue = client(&gitlab)
        .issue(&repo(), IssueNumber(7))
        .await
        .unwrap();

    assert_eq!(issue.number, IssueNumber(7));
    assert_eq!(issue.title, "Parser rejects empty input");
    assert_eq!(
        issue.body,
        "Parser rejects empty input: steps to reproduce follow."
    );
    assert_eq!(issue.labels, ["bug", "auto-fix"]);
    assert!(issue.open && !issue.locked);
    assert_eq!(issue.author.login, "alice");
    assert_eq!(issue.author.id, gitlab.user("alice"));
}

#[tokio::test]
async fn a_closed_locked_issue_without_description_reads_as_such() {
    let gitlab = gitlab();
    gitlab
        .project(PROJECT)
        .issue(8, "Old")
        .description(None)
        .closed()
        .locked();

    let issue = client(&gitlab)
        .issue(&repo(), IssueNumber(8))
        .await
        .unwrap();

    assert_eq!(issue.body, "");
    assert!(!issue.open);
    assert!(issue.locked);
}

#[tokio::test]
async fn the_default_branch_comes_from_the_project() {
    let gitlab = gitlab();
    gitlab.project(PROJECT).default_branch(Some("trunk"));

    let branch = client(&gitlab).default_branch(&repo()).await.unwrap();

    assert_eq!(branch, "trunk");
}

#[tokio::test]
async fn an_empty_project_has_no_default_branch_and_says_so() {
    let gitlab = gitlab();
    gitlab.project(PROJECT).default_branch(None);

    let err = client(&gitlab).default_branch(&repo()).await.unwrap_err();

    assert!(matches!(err, ForgeError::InvalidResponse { .. }), "{err:?}");
    assert!(err.to_string().contains("default_branch"), "{err}");
}

#[tokio::test]
async fn comments_come_from_every_page_oldest_first_without_system_notes() {
    let gitlab = gitlab();
    let mut issue = gitlab.project(PROJECT).issue(7, "Many comments");
    for n in 0..230 {
        issue = if n % 10 == 0 {
            issue.system_note(&format!("changed the description {n}"))
        } else {
            issue.comment("alice", &format!("comment {n}"))
        };
    }

    let comments = client(&gitlab)
        .comments(&repo(), IssueNumber(7))
        .await
        .unwrap();

    assert_eq!(comments.len(), 207);
    assert_eq!(comments.first().unwrap().body, "comment 1");
    assert_eq!(comments.last().unwrap().body, "comment 229");
    assert_eq!(comments[0].author.login, "alice");
    let pages = gitlab.requests_to("GET", "/issues/7/notes");
    let asked: Vec<_> = pages
        .iter()
        .map(|r| r.query_param("page").unwrap())
        .collect();
    assert_eq!(asked, ["1", "2", "3"]);
    assert_eq!(pages[0].query_param("sort").as_deref(), Some("asc"));
    assert_eq!(pages[0].query_param("per_page").as_deref(), Some("100"));
}

#[tokio::test]
async fn a_status_comment_is_created_and_then_edited_in_place() {
    let gitlab = gitlab();
    gitlab.project(PROJECT).issue(7, "Fix me");
    let client = client(&gitlab);

    let id = client
        .create_comment(&repo(), IssueNumber(7), "- [ ] checkout")
        .await
        .unwrap();
    client
        .update_comment(&repo(), IssueNumber(7), id, "- [x] checkout")
        .await
        .unwrap();

    let notes = gitlab.notes(PROJECT, 7);
    assert_eq!(
        notes,
        [FakeNote {
            id: id.0,
            body: "- [x] checkout".into(),
            author: gitlab.bot().id,
            system: false,
            edits: 1,
        }]
    );
}

#[tokio::test]
async fn editing_a_note_that_is_not_the_bots_is_forbidden() {
    let gitlab = gitlab();
    gitlab
        .project(PROJECT)
        .issue(7, "Fix me")
        .comment("alice", "hello");
    let alice_note = CommentId(gitlab.notes(PROJECT, 7)[0].id);

    let err = client(&gitlab)
        .update_comment(&repo(), IssueNumber(7), alice_note, "mine now")
        .await
        .unwrap_err();

    assert!(matches!(err, ForgeError::Forbidden { .. }), "{err:?}");
    assert!(err.to_string().contains("403 Forbidden"), "{err}");
}

#[tokio::test]
async fn labels_are_added_and_removed_and_repeating_either_changes_nothing() {
    let gitlab = gitlab();
    gitlab
        .project(PROJECT)
        .issue(7, "Fix me")
        .labels(&["auto-fix"]);
    let client = client(&gitlab);

    client
        .add_label(&repo(), IssueNumber(7), "automation-failed")
        .await
        .unwrap();
    client
        .add_label(&repo(), IssueNumber(7), "automation-failed")
        .await
        .unwrap();
    client
        .remove_label(&repo(), IssueNumber(7), "auto-fix")
        .await
        .unwrap();
    client
        .remove_label(&repo(), IssueNumber(7), "auto-fix")
        .await
        .unwrap();

    assert_eq!(gitlab.labels(PROJECT, 7), ["automation-failed"]);
    let edits = gitlab.requests_to("PUT", "/issues/7");
    assert_eq!(edits[0].body, json!({"add_labels": "automation-failed"}));
    assert_eq!(edits[2].body, json!({"remove_labels": "auto-fix"}));
}

#[tokio::test]
async fn a_label_with_a_comma_is_refused_before_asking_gitlab() {
    let gitlab = gitlab();
    gitlab.project(PROJECT).issue(7, "Fix me");

    let err = client(&gitlab)
        .add_label(&repo(), IssueNumber(7), "needs,review")
        .await
        .unwrap_err();

    assert!(err.to_string().contains("comma"), "{err}");
    assert!(gitlab.requests().is_empty());
}

#[tokio::test]
async fn open_merge_requests_are_listed_across_pages_and_closed_ones_left_out() {
    let gitlab = gitlab();
    let mut project = gitlab.project(PROJECT);
    for n in 0..120 {
        project = project.merge_request(&format!("feature/{n}"), &format!("Feature {n}"), "alice");
    }
    gitlab.state().project_mut(PROJECT).merge_requests[0].state = "merged".into();

    let open = client(&gitlab).open_change_requests(&repo()).await.unwrap();

    assert_eq!(open.len(), 119);
    assert!(open.iter().all(|mr| mr.head != "feature/0"));
    assert_eq!(gitlab.requests_to("GET", "/merge_requests").len(), 2);
    let first = open.iter().find(|mr| mr.head == "feature/1").unwrap();
    assert_eq!(first.base, "main");
    assert_eq!(
        first.url,
        format!("{}/{PROJECT}/-/merge_requests/2", gitlab.url())
    );
}

#[tokio::test]
async fn a_merge_request_opens_with_labels_and_the_reviewers_gitlab_knows() {
    let gitlab = gitlab();
    let reviewer = gitlab.user("rev");
    let mut request = change_request("autofix/issue-7");
    request.labels = vec!["autofix".into(), "bot".into()];
    request.reviewers = vec![
        "rev".into(),
        "nobody-by-that-name".into(),
        "acme/team".into(),
    ];

    let opened = client(&gitlab)
        .open_change_request(&repo(), &request)
        .await
        .unwrap();

    let Opened::Created(created) = opened else {
        panic!("expected a new merge request, got {opened:?}");
    };
    assert_eq!(created.number, 1);
    assert_eq!(created.title, request.title);
    assert_eq!(
        (created.head.as_str(), created.base.as_str()),
        ("autofix/issue-7", "main")
    );
    assert!(!created.draft);
    let stored = &gitlab.merge_requests(PROJECT)[0];
    assert_eq!(stored.labels, ["autofix", "bot"]);
    assert_eq!(stored.reviewer_ids, [reviewer]);
    assert_eq!(stored.description, "Fixes #7");
    assert_eq!(gitlab.requests_to("GET", "/api/v4/users").len(), 2);
}

#[tokio::test]
async fn a_draft_merge_request_carries_the_draft_prefix_in_its_title() {
    let gitlab = gitlab();
    let mut request = change_request("autofix/issue-7");
    request.draft = true;

    let opened = client(&gitlab)
        .open_change_request(&repo(), &request)
        .await
        .unwrap();

    let stored = &gitlab.merge_requests(PROJECT)[0];
    assert_eq!(stored.title, "Draft: fix(parser): accept empty input (#7)");
    assert!(stored.draft);
    let created = opened.change_request();
    assert!(created.draft);
    assert_eq!(created.title, "fix(parser): accept empty input (#7)");
}

#[tokio::test]
async fn a_second_merge_request_for_the_same_branch_adopts_the_open_one() {
    let gitlab = gitlab();
    gitlab
        .project(PROJECT)
        .merge_request("other", "Unrelated", "alice")
        .merge_request("autofix/issue-7", "fix: earlier attempt", "autofix-bot");

    let opened = client(&gitlab)
        .open_change_request(&repo(), &change_request("autofix/issue-7"))
        .await
        .unwrap();

    let Opened::Adopted(adopted) = opened else {
        panic!("expected the open merge request to be adopted, got {opened:?}");
    };
    assert_eq!(adopted.number, 2);
    assert_eq!(adopted.title, "fix: earlier attempt");
    assert_eq!(gitlab.merge_requests(PROJECT).len(), 2);
    let statuses: Vec<_> = gitlab.requests().iter().map(|r| r.status).collect();
    assert_eq!(statuses, [409, 200]);
    let lookup = &gitlab.requests()[1];
    assert_eq!(
        lookup.query_param("source_branch").as_deref(),
        Some("autofix/issue-7")
    );
    assert_eq!(lookup.query_param("state").as_deref(), Some("opened"));
}

#[tokio::test]
async fn a_merge_request_from_a_branch_that_does_not_exist_is_rejected_with_gitlabs_words() {
    let gitlab = gitlab();
    gitlab.set_branch_lookup(|_, branch| branch == "main");

    let err = client(&gitlab)
        .open_change_request(&repo(), &change_request("autofix/issue-7"))
        .await
        .unwrap_err();

    assert!(
        matches!(err, ForgeError::Rejected { status: 400, .. }),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("Source branch \"autofix/issue-7\" does not exist"),
        "{err}"
    );
    assert_eq!(gitlab.requests().len(), 1);
}

#[tokio::test]
async fn git_presents_oauth2_and_the_token() {
    let gitlab = gitlab();

    let credentials = client(&gitlab).git_credentials(&repo()).await.unwrap();

    assert_eq!(credentials.username, "oauth2");
    assert_eq!(
        credentials.token.expose_secret(),
        gitlab.token().expose_secret()
    );
    assert!(gitlab.requests().is_empty());
}

// --- rate limits, errors, retries ---------------------------------------------------------

#[tokio::test]
async fn a_rate_limit_with_retry_after_is_waited_out_and_then_succeeds() {
    let gitlab = gitlab();
    let limited = json!({"message": "Retry later"});
    gitlab.fail_next(
        "GET",
        "/api/v4/user",
        429,
        limited,
        &[("retry-after", "1")],
        1,
    );

    let started = Instant::now();
    let bot = client(&gitlab).bot_user().await.unwrap();

    assert_eq!(bot.login, "autofix-bot");
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    let statuses: Vec<_> = gitlab.requests().iter().map(|r| r.status).collect();
    assert_eq!(statuses, [429, 200]);
}

#[tokio::test]
async fn without_retry_after_the_rate_limit_reset_time_is_waited_for() {
    let gitlab = gitlab();
    let reset = (Utc::now().timestamp() + 1).to_string();
    let limited = json!({"message": "Retry later"});
    gitlab.fail_next(
        "GET",
        "/api/v4/user",
        429,
        limited,
        &[("ratelimit-reset", &reset)],
        1,
    );

    let bot = client(&gitlab).bot_user().await;

    assert!(bot.is_ok(), "{bot:?}");
    assert_eq!(gitlab.requests().len(), 2);
}

#[tokio::test]
async fn a_rate_limit_longer_than_the_client_waits_is_given_back_with_its_reset_time() {
    let gitlab = gitlab();
    let limited = json!({"message": "Retry later"});
    gitlab.fail_next(
        "GET",
        "/api/v4/user",
        429,
        limited,
        &[("retry-after", "120")],
        1,
    );

    let err = client(&gitlab).bot_user().await.unwrap_err();

    assert!(err.is_retryable());
    let ForgeError::RateLimited { reset_at, .. } = err else {
        panic!("expected RateLimited, got {err:?}");
    };
    let ahead = reset_at - Utc::now();
    assert!(ahead > chrono::Duration::seconds(110), "{ahead}");
    assert_eq!(gitlab.requests().len(), 1);
}

#[tokio::test]
async fn a_rate_limit_that_lasts_through_every_retry_becomes_rate_limited() {
    let gitlab = gitlab();
    let limited = json!({"message": "Retry later"});
    gitlab.fail_next("GET", "/api/v4/user", 429, limited, &[], 10);

    let err = client(&gitlab).bot_user().await.unwrap_err();

    assert!(matches!(err, ForgeError::RateLimited { .. }), "{err:?}");
    assert_eq!(gitlab.requests().len(), 3);
}

#[tokio::test]
async fn a_wrong_token_is_unauthorized_and_not_retried() {
    let gitlab = gitlab();
    let client = client(&gitlab);
    gitlab.set_token("glpat-another-token-entirely");

    let err = client.bot_user().await.unwrap_err();

    assert!(matches!(err, ForgeError::Unauthorized { .. }), "{err:?}");
    assert!(err.to_string().contains("401 Unauthorized"), "{err}");
    assert!(!err.is_retryable());
    assert_eq!(gitlab.requests().len(), 1);
}

#[tokio::test]
async fn forbidden_and_missing_things_are_reported_once_without_retries() {
    let gitlab = gitlab();
    gitlab.project(PROJECT).issue(7, "Fix me");
    let forbidden = json!({"message": "403 Forbidden - insufficient_scope"});
    gitlab.fail_next("POST", "/issues/7/notes", 403, forbidden, &[], 1);
    let client = client(&gitlab);

    let denied = client
        .create_comment(&repo(), IssueNumber(7), "hello")
        .await
        .unwrap_err();
    let missing = client.issue(&repo(), IssueNumber(99)).await.unwrap_err();

    assert!(matches!(denied, ForgeError::Forbidden { .. }), "{denied:?}");
    assert!(
        denied.to_string().contains("insufficient_scope"),
        "{denied}"
    );
    assert!(
        matches!(missing, ForgeError::NotFound { .. }),
        "{missing:?}"
    );
    assert!(
        missing
            .to_string()
            .contains("issue #99 of acme/tools/widgets"),
        "{missing}"
    );
    assert_eq!(gitlab.requests().len(), 2);
}

#[tokio::test]
async fn validation_errors_are_rejected_with_the_field_named_and_not_retried() {
    let gitlab = gitlab();
    gitlab.project(PROJECT).issue(7, "Fix me");
    let invalid = json!({"message": {"note": ["is too long (maximum is 1000000 characters)"]}});
    gitlab.fail_next("POST", "/notes", 422, invalid, &[], 1);

    let err = client(&gitlab)
        .create_comment(&repo(), IssueNumber(7), "long")
        .await
        .unwrap_err();

    assert!(
        matches!(err, ForgeError::Rejected { status: 422, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("note is too long"), "{err}");
    assert_eq!(gitlab.requests().len(), 1);
}

#[tokio::test]
async fn server_errors_are_retried_until_one_succeeds() {
    let gitlab = gitlab();
    let broken = json!({"message": "500 Internal Server Error"});
    gitlab.fail_next("GET", "/api/v4/user", 502, broken, &[], 2);

    let bot = client(&gitlab).bot_user().await;

    assert!(bot.is_ok(), "{bot:?}");
    let statuses: Vec<_> = gitlab.requests().iter().map(|r| r.status).collect();
    assert_eq!(statuses, [502, 502, 200]);
}

#[tokio::test]
async fn server_errors_that_persist_become_transient_after_the_last_retry() {
    let gitlab = gitlab();
    let broken = json!({"message": "500 Internal Server Error"});
    gitlab.fail_next("GET", "/api/v4/user", 500, broken, &[], 5);

    let err = client(&gitlab).bot_user().await.unwrap_err();

    assert!(matches!(err, ForgeError::Transient { .. }), "{err:?}");
    assert!(err.to_string().contains("gave up after 3 tries"), "{err}");
    assert_eq!(gitlab.requests().len(), 3);
}

#[tokio::test]
async fn a_gitlab_that_does_not_answer_in_time_is_transient() {
    let gitlab = gitlab();
    gitlab.delay_next("GET", "/api/v4/user", TIMEOUT * 3, 3);

    let err = client(&gitlab).bot_user().await.unwrap_err();

    assert!(matches!(err, ForgeError::Transient { .. }), "{err:?}");
    assert!(err.to_string().contains("no answer within 500ms"), "{err}");
    assert!(err.is_retryable());
}

#[tokio::test]
async fn a_gitlab_that_refuses_connections_is_transient() {
    let closed_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let client = GitLabClient::new(
        &format!("http://127.0.0.1:{closed_port}/api/v4"),
        SecretString::from("glpat-0123456789abcdef"),
        TIMEOUT,
        fast_retries(),
    )
    .unwrap();

    let err = client.bot_user().await.unwrap_err();

    assert!(matches!(err, ForgeError::Transient { .. }), "{err:?}");
    assert!(err.to_string().contains("could not connect"), "{err}");
}

#[tokio::test]
async fn the_token_never_appears_in_an_error_even_when_gitlab_echoes_it() {
    let gitlab = gitlab();
    let token = gitlab.token().expose_secret().to_owned();
    let echo = json!({"message": format!("token {token} lacks the api scope")});
    gitlab.fail_next("GET", "/api/v4/user", 403, echo.clone(), &[], 1);
    gitlab.fail_next("GET", "/api/v4/user", 503, echo, &[], 3);
    let client = client(&gitlab);

    let forbidden = client.bot_user().await.unwrap_err();
    let unavailable = client.bot_user().await.unwrap_err();

    for err in [forbidden, unavailable] {
        let text = format!("{err} {err:?}");
        assert!(!text.contains(&token), "{text}");
        assert!(text.contains("[REDACTED] lacks the api scope"), "{text}");
    }
    for request in gitlab.requests() {
        let url = format!("{}?{}", request.path, request.query.unwrap_or_default());
        assert!(!url.contains(&token), "{url}");
    }
}

#[tokio::test]
async fn a_success_that_is_not_json_is_an_invalid_response() {
    let gitlab = gitlab();
    gitlab.project(PROJECT).issue(7, "Fix me");
    gitlab.fail_next_raw("GET", "/issues/7", 200, "<html>maintenance</html>", &[], 1);

    let err = client(&gitlab)
        .issue(&repo(), IssueNumber(7))
        .await
        .unwrap_err();

    assert!(matches!(err, ForgeError::InvalidResponse { .. }), "{err:?}");
    assert!(err.to_string().contains("the body is not JSON"), "{err}");
}

#[tokio::test]
async fn a_success_without_the_fields_the_bot_reads_names_the_missing_one() {
    let gitlab = gitlab();
    gitlab.project(PROJECT).issue(7, "Fix me");
    gitlab.fail_next("GET", "/issues/7", 200, json!({"title": "t"}), &[], 1);

    let err = client(&gitlab)
        .issue(&repo(), IssueNumber(7))
        .await
        .unwrap_err();

    assert!(matches!(err, ForgeError::InvalidResponse { .. }), "{err:?}");
    assert!(err.to_string().contains("`state` is missing"), "{err}");
}

#[tokio::test]
async fn a_next_page_header_that_is_not_a_number_is_an_invalid_response() {
    let gitlab = gitlab();
    gitlab.project(PROJECT).issue(7, "Fix me");
    gitlab.fail_next(
        "GET",
        "/issues/7/notes",
        200,
        json!([]),
        &[("x-next-page", "two")],
        1,
    );

    let err = client(&gitlab)
        .comments(&repo(), IssueNumber(7))
        .await
        .unwrap_err();

    assert!(matches!(err, ForgeError::InvalidResponse { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("`x-next-page: two` is not a page number"),
        "{err}"
    );
}

#[tokio::test]
async fn a_repository_of_another_forge_is_refused_by_name() {
    let gitlab = gitlab();
    let github = RepoRef {
        forge: ForgeKind::GitHub,
        ..repo()
    };

    let err = client(&gitlab)
        .issue(&github, IssueNumber(7))
        .await
        .unwrap_err();

    assert!(err.to_string().contains("not a GitLab project"), "{err}");
    assert!(gitlab.requests().is_empty());
}

// --- configuration ------------------------------------------------------------------------

fn config(vars: &[(&str, &str)]) -> ServiceConfig {
    let vars = vars.iter().map(|(k, v)| (k.to_string(), v.to_string()));
    ServiceConfig::load(None, vars).expect("the configuration loads")
}

/// The client `[gitlab]` asks for: its settings read by `config`, the client built from them.
fn from_section(section: &GitLabSection) -> Result<Option<GitLabClient>, ForgeError> {
    section
        .client_settings()
        .and_then(GitLabClient::from_settings)
}

#[test]
fn without_a_token_there_is_no_gitlab_client() {
    let client = from_section(&config(&[]).gitlab).unwrap();

    assert!(client.is_none());
}

#[test]
fn a_configured_token_gives_a_client_for_the_configured_instance() {
    let config = config(&[
        ("AUTOFIX__GITLAB__TOKEN", "glpat-0123456789abcdef"),
        (
            "AUTOFIX__GITLAB__API_URL",
            "https://gitlab.example.com/api/v4",
        ),
    ]);

    let client = from_section(&config.gitlab).unwrap().unwrap();

    assert_eq!(client.api_url(), "https://gitlab.example.com/api/v4");
    assert!(!format!("{client:?}").contains("glpat"));
}

#[test]
fn a_bad_api_url_is_refused_naming_the_section_and_the_url() {
    let config = config(&[
        ("AUTOFIX__GITLAB__TOKEN", "glpat-0123456789abcdef"),
        ("AUTOFIX__GITLAB__API_URL", "gitlab.example.com/api/v4"),
    ]);

    let err = from_section(&config.gitlab).unwrap_err().to_string();

    assert!(
        err.contains("[gitlab]") && err.contains("gitlab.example.com/api/v4"),
        "{err}"
    );
}

#[test]
fn a_zero_request_timeout_is_refused_by_its_key() {
    let config = config(&[
        ("AUTOFIX__GITLAB__TOKEN", "glpat-0123456789abcdef"),
        ("AUTOFIX__GITLAB__REQUEST_TIMEOUT_SECS", "0"),
    ]);

    let err = from_section(&config.gitlab).unwrap_err().to_string();

    assert!(err.contains("gitlab.request_timeout_secs"), "{err}");
}

// --- the recorded docs examples -----------------------------------------------------------

#[tokio::test]
async fn the_docs_single_issue_example_reads_as_a_closed_issue_by_root() {
    let gitlab = gitlab();
    gitlab.fail_next("GET", "/issues/1", 200, fixture("get_issue.json"), &[], 1);

    let issue = client(&gitlab)
        .issue(&repo(), IssueNumber(1))
        .await
        .unwrap();

    insta::assert_debug_snapshot!("docs_get_issue", issue);
}

#[tokio::test]
async fn the_docs_project_example_with_its_duplicate_key_gives_master() {
    let gitlab = gitlab();
    let text = gitlab_fixture("api/get_project.json");
    assert_eq!(text.matches("\"repository_storage\"").count(), 2);
    let project: Value = serde_json::from_str(&text).unwrap();
    gitlab.fail_next(
        "GET",
        "/projects/acme%2Ftools%2Fwidgets",
        200,
        project,
        &[],
        1,
    );

    let branch = client(&gitlab).default_branch(&repo()).await.unwrap();

    assert_eq!(branch, "master");
}

#[tokio::test]
async fn the_docs_notes_example_holds_only_system_notes_so_no_comments() {
    let gitlab = gitlab();
    gitlab.project(PROJECT).issue(7, "Fix me");
    gitlab.fail_next(
        "GET",
        "/notes",
        200,
        fixture("list_issue_notes.json"),
        &[],
        1,
    );

    let comments = client(&gitlab)
        .comments(&repo(), IssueNumber(7))
        .await
        .unwrap();

    assert!(comments.is_empty(), "{comments:?}");
}

#[tokio::test]
async fn the_docs_note_example_gives_the_new_comments_id() {
    let gitlab = gitlab();
    gitlab.project(PROJECT).issue(7, "Fix me");
    gitlab.fail_next("POST", "/notes", 201, fixture("note_single.json"), &[], 1);

    let id = client(&gitlab)
        .create_comment(&repo(), IssueNumber(7), "closed")
        .await
        .unwrap();

    assert_eq!(id, CommentId(302));
}

#[tokio::test]
async fn the_docs_issue_edit_example_answers_a_label_change() {
    let gitlab = gitlab();
    gitlab.project(PROJECT).issue(15, "Issues with auth");
    gitlab.fail_next(
        "PUT",
        "/issues/15",
        200,
        fixture("update_issue.json"),
        &[],
        1,
    );

    let added = client(&gitlab)
        .add_label(&repo(), IssueNumber(15), "bug")
        .await;

    assert!(added.is_ok(), "{added:?}");
}

#[tokio::test]
async fn the_docs_create_merge_request_example_reads_as_a_change_request() {
    let gitlab = gitlab();
    gitlab.fail_next(
        "POST",
        "/merge_requests",
        201,
        fixture("create_merge_request.json"),
        &[],
        1,
    );

    let opened = client(&gitlab)
        .open_change_request(&repo(), &change_request("test1"))
        .await
        .unwrap();

    insta::assert_debug_snapshot!("docs_create_merge_request", opened);
}

#[tokio::test]
async fn the_fake_answers_in_the_shapes_of_the_docs_examples() {
    let gitlab = gitlab();
    gitlab
        .project(PROJECT)
        .issue(7, "Fix me")
        .comment("alice", "hi");
    gitlab
        .project(PROJECT)
        .merge_request("feature", "Feature", "alice");

    let answers = raw_answers(&gitlab).await;
    for (name, fake) in [
        ("get_issue.json", &answers[0]),
        ("note_single.json", &answers[1][0]),
        ("create_merge_request.json", &answers[2][0]),
        ("get_project.json", &answers[3]),
    ] {
        let missing = missing_keys(&fixture(name), fake);
        assert!(missing.is_empty(), "the fake's {name} lacks {missing:?}");
    }
}

/// The bodies the fake gives for an issue, its notes, the merge requests and the project.
async fn raw_answers(gitlab: &FakeGitLab) -> Vec<Value> {
    let http = reqwest::Client::new();
    let project = "acme%2Ftools%2Fwidgets";
    let mut answers = Vec::new();
    for path in [
        format!("projects/{project}/issues/7"),
        format!("projects/{project}/issues/7/notes"),
        format!("projects/{project}/merge_requests"),
        format!("projects/{project}"),
    ] {
        let answer = http
            .get(format!("{}/{path}", gitlab.api_url()))
            .header("PRIVATE-TOKEN", gitlab.token().expose_secret())
            .send()
            .await
            .unwrap();
        answers.push(answer.json().await.unwrap());
    }
    answers
}

/// Keys the client reads that the docs example has and `fake` lacks.
fn missing_keys(docs: &Value, fake: &Value) -> Vec<String> {
    let read = [
        "id",
        "iid",
        "title",
        "description",
        "state",
        "labels",
        "author",
        "discussion_locked",
        "body",
        "system",
        "source_branch",
        "target_branch",
        "web_url",
        "draft",
        "work_in_progress",
        "default_branch",
        "path_with_namespace",
        "http_url_to_repo",
        "project_id",
        "noteable_iid",
    ];
    read.iter()
        .filter(|key| docs.get(**key).is_some() && fake.get(**key).is_none())
        .map(|key| key.to_string())
        .collect()
}

// --- the fake itself ----------------------------------------------------------------------

#[tokio::test]
async fn the_fake_refuses_requests_without_the_token_and_takes_a_bearer_one() {
    let gitlab = gitlab();
    let http = reqwest::Client::new();
    let user = format!("{}/user", gitlab.api_url());

    let anonymous = http.get(&user).send().await.unwrap();
    let bearer = http
        .get(&user)
        .bearer_auth(gitlab.token().expose_secret())
        .send()
        .await
        .unwrap();

    assert_eq!(anonymous.status(), 401);
    assert_eq!(
        anonymous.json::<Value>().await.unwrap(),
        json!({"message": "401 Unauthorized"})
    );
    assert_eq!(bearer.status(), 200);
}

#[tokio::test]
async fn the_fake_answers_a_route_gitlab_lacks_with_404_and_notes_it() {
    let gitlab = gitlab();

    let answer = reqwest::Client::new()
        .get(format!("{}/projects/1/releases", gitlab.api_url()))
        .header("PRIVATE-TOKEN", gitlab.token().expose_secret())
        .send()
        .await
        .unwrap();

    assert_eq!(answer.status(), 404);
    let unexpected = std::mem::take(&mut gitlab.state().unexpected);
    assert_eq!(unexpected.len(), 1);
    assert!(
        unexpected[0].contains("/projects/1/releases"),
        "{unexpected:?}"
    );
    assert_eq!(gitlab.requests()[0].status, 404);
}

#[test]
#[should_panic(expected = "requests it does not serve")]
fn a_request_the_fake_does_not_serve_fails_the_test() {
    let gitlab = FakeGitLab::start(axum::Router::new());
    gitlab
        .state()
        .unexpected
        .push("GET /api/v4/projects/1/pipelines".into());

    gitlab.assert_no_unexpected();
}

#[test]
fn the_fake_serves_the_git_routes_it_is_given_beside_the_api() {
    let routes = axum::Router::new().route(
        "/acme/tools/widgets.git/info/refs",
        axum::routing::get(|| async { "refs" }),
    );
    let gitlab = FakeGitLab::start(routes);
    gitlab.project(PROJECT);
    let clone_url = gitlab
        .state()
        .project(PROJECT)
        .unwrap()
        .http_url_to_repo
        .clone();

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let body = runtime.block_on(async {
        reqwest::get(format!("{clone_url}/info/refs"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    });

    assert_eq!(body, "refs");
    assert!(gitlab.requests().is_empty());
}

/// A client that waits briefly for forks, and a fake that lets the token's user fork.
fn forking_client(gitlab: &FakeGitLab) -> GitLabClient {
    gitlab.set_forker(std::sync::Arc::new(|_: &str, _: &str| {}));
    client(gitlab).with_fork_wait(autofix::forge::ForkWait {
        poll: Duration::from_millis(10),
        limit: Duration::from_secs(5),
    })
}

#[tokio::test]
async fn the_bots_fork_is_made_in_its_own_namespace_waited_for_and_found_again() {
    let gitlab = gitlab();
    let client = forking_client(&gitlab);

    let fork = client.bot_fork(&repo()).await.unwrap();

    assert_eq!(fork.owner_path, "autofix-bot/widgets");
    assert_eq!(
        fork.clone_url,
        format!("{}/autofix-bot/widgets.git", gitlab.url())
    );
    assert_eq!(fork.default_branch.as_deref(), Some("main"));
    assert_eq!(
        gitlab
            .requests_to("POST", "/acme%2Ftools%2Fwidgets/fork")
            .len(),
        1
    );
    let fork_id = gitlab.state().project("autofix-bot/widgets").unwrap().id;
    // GitLab copies a fork in a background job: its import status was read until `finished`.
    assert_eq!(
        gitlab
            .requests_to("GET", &format!("/projects/{fork_id}"))
            .len(),
        2
    );
    assert_eq!(
        gitlab
            .state()
            .project("autofix-bot/widgets")
            .unwrap()
            .import_status,
        "finished"
    );
    let again = client.bot_fork(&repo()).await.unwrap();
    assert_eq!(again, fork);
    assert_eq!(
        gitlab.requests_to("POST", "/fork").len(),
        1,
        "found, not made again"
    );
    let listed = gitlab.requests_to("GET", "/acme%2Ftools%2Fwidgets/forks");
    assert_eq!(listed[0].query_param("owned").as_deref(), Some("true"));
}

#[tokio::test]
async fn a_merge_request_from_the_bots_fork_is_made_in_the_fork_for_the_project() {
    let gitlab = gitlab();
    let client = forking_client(&gitlab);
    let fork = client.bot_fork(&repo()).await.unwrap();
    let request = NewChangeRequest {
        head_repo: Some(fork),
        ..change_request("autofix/issue-7")
    };

    let first = client.open_change_request(&repo(), &request).await.unwrap();
    let second = client.open_change_request(&repo(), &request).await.unwrap();

    assert!(matches!(first, Opened::Created(_)), "{first:?}");
    assert!(matches!(second, Opened::Adopted(_)), "{second:?}");
    let base_id = gitlab.project(PROJECT).id();
    let fork_id = gitlab.state().project("autofix-bot/widgets").unwrap().id;
    let created = gitlab.requests_to("POST", "/autofix-bot%2Fwidgets/merge_requests");
    assert_eq!(created[0].body["target_project_id"], base_id);
    let merge_requests = gitlab.merge_requests(PROJECT);
    assert_eq!(merge_requests.len(), 1);
    assert_eq!(merge_requests[0].source_project_id, Some(fork_id));
    assert_eq!(merge_requests[0].source_branch, "autofix/issue-7");
}
