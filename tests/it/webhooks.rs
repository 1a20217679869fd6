//! The webhook edge of each forge, on the deliveries GitHub and GitLab really send: who may
//! knock (signatures and tokens), and what a delivery means to the bot (`BotEvent`).

use std::path::PathBuf;

use autofix::forge::{
    BotEvent, Command, CommentId, ForgeKind, ForgeUser, IssueNumber, MAX_NESTING_DEPTH, Remark,
    RepoRef, Said, Thread, Triggers, WebhookAuthError, WebhookError, WebhookParseError, github,
    gitlab,
};
use hmac::{Hmac, KeyInit, Mac};
use reqwest::header::{HeaderMap, HeaderValue};
use secrecy::SecretString;
use sha2::Sha256;

// GitHub's published test vector (validating-webhook-deliveries.md, see headers.md).
const VECTOR_SECRET: &str = "It's a Secret to Everybody";
const VECTOR_BODY: &[u8] = b"Hello, World!";
const VECTOR_SIGNATURE: &str =
    "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";

fn fixture(path: &str) -> Vec<u8> {
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/webhooks")
        .join(path);
    std::fs::read(&file).unwrap_or_else(|error| panic!("{}: {error}", file.display()))
}

fn secrets(values: &[&str]) -> Vec<SecretString> {
    values
        .iter()
        .map(|value| SecretString::from(*value))
        .collect()
}

fn sign(secret: &str, body: &[u8]) -> String {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.insert(*name, HeaderValue::from_str(value).unwrap());
    }
    map
}

fn json(bytes: &[u8]) -> serde_json::Value {
    serde_json::from_slice(bytes).unwrap()
}

fn ignored_reason(event: BotEvent) -> String {
    match event {
        BotEvent::Ignored { reason } => reason,
        other => panic!("expected Ignored, got {other:?}"),
    }
}

// ---- GitHub: who may knock ----

#[test]
fn githubs_published_test_vector_is_accepted() {
    let result = github::verify_signature(
        &secrets(&[VECTOR_SECRET]),
        VECTOR_BODY,
        Some(VECTOR_SIGNATURE),
    );
    assert_eq!(result, Ok(()));
}

#[test]
fn the_test_vector_signature_in_capitals_is_still_the_same_signature() {
    let upper = format!(
        "sha256={}",
        VECTOR_SIGNATURE["sha256=".len()..].to_uppercase()
    );
    assert_eq!(
        github::verify_signature(&secrets(&[VECTOR_SECRET]), VECTOR_BODY, Some(&upper)),
        Ok(())
    );
}

#[test]
fn a_body_changed_by_one_byte_no_longer_matches_its_signature() {
    let result = github::verify_signature(
        &secrets(&[VECTOR_SECRET]),
        b"Hello, World?",
        Some(VECTOR_SIGNATURE),
    );
    assert_eq!(result, Err(WebhookAuthError::SignatureMismatch));
}

#[test]
fn a_signature_made_with_another_secret_is_refused() {
    let result = github::verify_signature(
        &secrets(&["not the secret"]),
        VECTOR_BODY,
        Some(VECTOR_SIGNATURE),
    );
    assert_eq!(result, Err(WebhookAuthError::SignatureMismatch));
}

#[test]
fn during_a_secret_rotation_the_second_secret_also_verifies() {
    let body = fixture("github/issues/labeled.payload.json");
    let signature = sign("new-secret", &body);
    let both = secrets(&["old-secret", "new-secret"]);
    assert_eq!(
        github::verify_signature(&both, &body, Some(&signature)),
        Ok(())
    );
    assert_eq!(
        github::verify_signature(&secrets(&["old-secret"]), &body, Some(&signature)),
        Err(WebhookAuthError::SignatureMismatch)
    );
}

#[test]
fn an_unsigned_delivery_is_refused_as_missing_its_signature() {
    let error =
        github::verify_signature(&secrets(&[VECTOR_SECRET]), VECTOR_BODY, None).unwrap_err();
    assert_eq!(error, WebhookAuthError::MissingSignature);
    assert!(error.to_string().contains("X-Hub-Signature-256"));
}

#[test]
fn a_sha1_signature_in_the_sha256_header_is_refused_as_sha1_only() {
    let result = github::verify_signature(
        &secrets(&[VECTOR_SECRET]),
        VECTOR_BODY,
        Some("sha1=7d38cdd689735b008b3c702edd92eea23791c5f6"),
    );
    assert_eq!(result, Err(WebhookAuthError::Sha1Only));
}

#[test]
fn a_delivery_signed_only_with_x_hub_signature_is_refused_as_sha1_only() {
    let sha1_only = headers(&[(
        "X-Hub-Signature",
        "sha1=7d38cdd689735b008b3c702edd92eea23791c5f6",
    )]);
    let error =
        github::verify_request(&secrets(&[VECTOR_SECRET]), VECTOR_BODY, &sha1_only).unwrap_err();
    assert_eq!(error, WebhookAuthError::Sha1Only);
    assert!(error.to_string().contains("SHA-1"), "{error}");
}

#[test]
fn verify_request_reads_the_sha256_header_even_when_sha1_is_also_sent() {
    let both = headers(&[
        (
            "X-Hub-Signature",
            "sha1=7d38cdd689735b008b3c702edd92eea23791c5f6",
        ),
        ("X-Hub-Signature-256", VECTOR_SIGNATURE),
    ]);
    assert_eq!(
        github::verify_request(&secrets(&[VECTOR_SECRET]), VECTOR_BODY, &both),
        Ok(())
    );
    assert_eq!(
        github::verify_request(&secrets(&[VECTOR_SECRET]), VECTOR_BODY, &HeaderMap::new()),
        Err(WebhookAuthError::MissingSignature)
    );
}

#[test]
fn a_signature_without_the_sha256_prefix_names_the_scheme_it_found() {
    let result = github::verify_signature(
        &secrets(&[VECTOR_SECRET]),
        VECTOR_BODY,
        Some("md5=757107ea0eb2509fc211221cce984b8a"),
    );
    assert_eq!(
        result,
        Err(WebhookAuthError::UnknownScheme {
            found: "md5".into()
        })
    );
    let bare_hex = &VECTOR_SIGNATURE["sha256=".len()..];
    assert!(matches!(
        github::verify_signature(&secrets(&[VECTOR_SECRET]), VECTOR_BODY, Some(bare_hex)),
        Err(WebhookAuthError::UnknownScheme { .. })
    ));
}

#[test]
fn a_signature_with_a_non_hex_digit_says_where() {
    let mut bad = VECTOR_SIGNATURE.to_owned();
    bad.replace_range(10..11, "g");
    let error =
        github::verify_signature(&secrets(&[VECTOR_SECRET]), VECTOR_BODY, Some(&bad)).unwrap_err();
    assert_eq!(
        error,
        WebhookAuthError::MalformedHex {
            position: 3,
            found: 'g'
        }
    );
    assert_eq!(
        error.to_string(),
        "X-Hub-Signature-256 is not hexadecimal: 'g' at digit 3"
    );
}

#[test]
fn a_truncated_signature_is_refused_for_its_length() {
    let truncated = &VECTOR_SIGNATURE[..VECTOR_SIGNATURE.len() - 2];
    let result = github::verify_signature(&secrets(&[VECTOR_SECRET]), VECTOR_BODY, Some(truncated));
    assert_eq!(result, Err(WebhookAuthError::WrongLength { found: 62 }));
}

#[test]
fn an_empty_secret_never_authenticates_anything() {
    let signed_with_empty_key = sign("", VECTOR_BODY);
    assert_eq!(
        github::verify_signature(&secrets(&[""]), VECTOR_BODY, Some(&signed_with_empty_key)),
        Err(WebhookAuthError::NoSecretConfigured)
    );
    assert_eq!(
        github::verify_signature(&[], VECTOR_BODY, Some(VECTOR_SIGNATURE)),
        Err(WebhookAuthError::NoSecretConfigured)
    );
    assert_eq!(
        github::verify_signature(
            &secrets(&["", "real"]),
            VECTOR_BODY,
            Some(&signed_with_empty_key)
        ),
        Err(WebhookAuthError::SignatureMismatch)
    );
}

#[test]
fn every_authentication_error_asks_for_a_401_and_every_parse_error_for_a_400() {
    let auth: WebhookError = WebhookAuthError::SignatureMismatch.into();
    let parse: WebhookError = WebhookParseError::EmptyBody.into();
    assert!(auth.is_auth_failure());
    assert!(!parse.is_auth_failure());
    assert!(WebhookAuthError::TokenMismatch.is_auth_failure());
    assert!(!WebhookParseError::MissingField { field: "x".into() }.is_auth_failure());
}

#[test]
fn the_github_delivery_id_comes_from_x_github_delivery() {
    let with_id = headers(&[("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")]);
    assert_eq!(
        github::delivery_id(&with_id).unwrap().as_str(),
        "72d3162e-cc78-11e3-81ab-4c9367dc0958"
    );
    assert_eq!(
        github::delivery_id(&HeaderMap::new()),
        Err(WebhookParseError::MissingHeader {
            header: "X-GitHub-Delivery"
        })
    );
    let too_long = "a".repeat(200);
    assert!(matches!(
        github::delivery_id(&headers(&[("X-GitHub-Delivery", &too_long)])),
        Err(WebhookParseError::InvalidHeader { .. })
    ));
}

// ---- GitHub: what a delivery means ----

#[test]
fn an_issue_labeled_with_the_trigger_label_becomes_issue_labeled() {
    // The fixture's own label is `bug`; here it is the trigger.
    let event = github::parse_event(
        "issues",
        &fixture("github/issues/labeled.payload.json"),
        "bug",
    )
    .unwrap();
    let BotEvent::IssueLabeled {
        repo,
        issue,
        label_added,
        actor,
        ..
    } = &event
    else {
        panic!("expected IssueLabeled, got {event:?}");
    };
    assert_eq!(repo.forge, ForgeKind::GitHub);
    assert_eq!(repo.owner_path, "Codertocat/Hello-World");
    assert_eq!(*issue, IssueNumber(1));
    assert_eq!(label_added, "bug");
    assert_eq!(actor.login, "Codertocat");
    assert!(!actor.is_bot);
    insta::assert_debug_snapshot!("github_issues_labeled", event);
}

#[test]
fn the_trigger_label_matches_whatever_its_case() {
    let event = github::parse_event(
        "issues",
        &fixture("github/issues/labeled.payload.json"),
        "BUG",
    )
    .unwrap();
    assert!(matches!(event, BotEvent::IssueLabeled { label_added, .. } if label_added == "bug"));
}

#[test]
fn an_issue_labeled_with_another_label_is_ignored() {
    let event = github::parse_event(
        "issues",
        &fixture("github/issues/labeled.payload.json"),
        "auto-fix",
    )
    .unwrap();
    assert_eq!(
        ignored_reason(event),
        "label `bug` is not the trigger label `auto-fix`"
    );
}

#[test]
fn a_labeled_issue_from_github_enterprise_server_parses() {
    let event = github::parse_event(
        "issues",
        &fixture("github/issues/labeled.ghes-35.json"),
        "bug",
    )
    .unwrap();
    let BotEvent::IssueLabeled { repo, .. } = &event else {
        panic!("expected IssueLabeled, got {event:?}");
    };
    assert_eq!(
        repo.clone_url,
        "https://octocoders.github.io/Codertocat/Hello-World.git"
    );
    insta::assert_debug_snapshot!("github_issues_labeled_ghes_35", event);
}

#[test]
fn a_labeled_issue_in_an_organization_repository_parses() {
    let event = github::parse_event(
        "issues",
        &fixture("github/issues/labeled.with-organization.payload.json"),
        "bug",
    )
    .unwrap();
    assert!(matches!(event, BotEvent::IssueLabeled { .. }));
    insta::assert_debug_snapshot!("github_issues_labeled_with_organization", event);
}

#[test]
fn removing_the_trigger_label_is_ignored() {
    let event = github::parse_event(
        "issues",
        &fixture("github/issues/unlabeled.payload.json"),
        "bug",
    )
    .unwrap();
    insta::assert_debug_snapshot!("github_issues_unlabeled", event);
    assert!(ignored_reason(event).contains("`unlabeled`"));
}

#[test]
fn opening_or_editing_an_issue_already_labelled_is_ignored() {
    for (file, action) in [
        ("github/issues/opened.payload.json", "opened"),
        (
            "github/issues/opened.with-empty-body.payload.json",
            "opened",
        ),
        ("github/issues/edited.payload.json", "edited"),
    ] {
        let event = github::parse_event("issues", &fixture(file), "bug").unwrap();
        assert_eq!(
            ignored_reason(event),
            format!("issues event with action `{action}`; only `labeled` starts a job"),
            "{file}"
        );
    }
}

#[test]
fn a_ping_is_ignored() {
    let event = github::parse_event("ping", &fixture("github/ping/payload.json"), "bug").unwrap();
    insta::assert_debug_snapshot!("github_ping", event);
    assert!(ignored_reason(event).starts_with("ping"));
}

#[test]
fn an_issue_comment_without_the_command_is_ignored() {
    let event = github::parse_event(
        "issue_comment",
        &fixture("github/issue_comment/created.payload.json"),
        "bug",
    )
    .unwrap();
    assert_eq!(
        ignored_reason(event),
        "a comment without the command `/autofix`"
    );
}

#[test]
fn an_issue_without_a_body_gets_an_empty_body() {
    let mut payload = json(&fixture("github/issues/labeled.payload.json"));
    payload["issue"]["body"] = serde_json::Value::Null;
    let event = github::parse_event("issues", payload.to_string().as_bytes(), "bug").unwrap();
    assert!(matches!(event, BotEvent::IssueLabeled { body, .. } if body.is_empty()));
}

#[test]
fn a_github_app_sender_is_a_bot_by_type_or_by_login() {
    let mut payload = json(&fixture("github/issues/labeled.payload.json"));
    payload["sender"]["type"] = "Bot".into();
    let event = github::parse_event("issues", payload.to_string().as_bytes(), "bug").unwrap();
    assert!(matches!(event, BotEvent::IssueLabeled { actor, .. } if actor.is_bot));

    payload["sender"]["type"] = "User".into();
    payload["sender"]["login"] = "renovate[bot]".into();
    let event = github::parse_event("issues", payload.to_string().as_bytes(), "bug").unwrap();
    assert!(matches!(event, BotEvent::IssueLabeled { actor, .. } if actor.is_bot));
}

#[test]
fn a_labeled_payload_missing_its_issue_number_names_the_field() {
    let mut payload = json(&fixture("github/issues/labeled.payload.json"));
    payload["issue"].as_object_mut().unwrap().remove("number");
    let error = github::parse_event("issues", payload.to_string().as_bytes(), "bug").unwrap_err();
    assert_eq!(error.to_string(), "missing required field `issue.number`");
}

#[test]
fn a_labeled_payload_missing_its_top_level_label_names_the_field() {
    let mut payload = json(&fixture("github/issues/labeled.payload.json"));
    payload.as_object_mut().unwrap().remove("label");
    let error = github::parse_event("issues", payload.to_string().as_bytes(), "bug").unwrap_err();
    assert_eq!(
        error,
        WebhookParseError::MissingField {
            field: "label.name".into()
        }
    );
}

#[test]
fn a_label_without_a_name_in_the_issue_names_its_index() {
    let mut payload = json(&fixture("github/issues/labeled.payload.json"));
    payload["issue"]["labels"][0]["name"] = 7.into();
    let error = github::parse_event("issues", payload.to_string().as_bytes(), "bug").unwrap_err();
    assert_eq!(
        error.to_string(),
        "field `issue.labels[0].name` should be a string, found number"
    );
}

#[test]
fn an_issue_number_that_is_a_string_is_a_type_error() {
    let mut payload = json(&fixture("github/issues/labeled.payload.json"));
    payload["issue"]["number"] = "1".into();
    let error = github::parse_event("issues", payload.to_string().as_bytes(), "bug").unwrap_err();
    assert_eq!(
        error,
        WebhookParseError::WrongType {
            field: "issue.number".into(),
            expected: "a non-negative integer",
            found: "string"
        }
    );
}

#[test]
fn a_missing_event_header_is_a_bad_request() {
    let error = github::parse_event(" ", &fixture("github/ping/payload.json"), "bug").unwrap_err();
    assert_eq!(
        error,
        WebhookParseError::MissingHeader {
            header: "X-GitHub-Event"
        }
    );
}

// ---- bodies that are not payloads (both forges share the reader) ----

#[test]
fn an_empty_body_is_refused() {
    assert_eq!(
        github::parse_event("issues", b"", "bug"),
        Err(WebhookParseError::EmptyBody)
    );
    assert_eq!(
        gitlab::parse_event("Issue Hook", b"  \n", "bug"),
        Err(WebhookParseError::EmptyBody)
    );
}

#[test]
fn a_body_that_is_not_json_is_refused_with_where_it_broke() {
    let error = github::parse_event("issues", b"action=labeled&label=bug", "bug").unwrap_err();
    let WebhookParseError::NotJson { message } = &error else {
        panic!("expected NotJson, got {error:?}");
    };
    assert!(message.contains("line 1 column 1"), "{message}");
}

#[test]
fn a_truncated_payload_is_refused_as_not_json() {
    let body = fixture("github/issues/labeled.payload.json");
    let error = github::parse_event("issues", &body[..body.len() / 2], "bug").unwrap_err();
    assert!(
        matches!(error, WebhookParseError::NotJson { .. }),
        "{error:?}"
    );
}

#[test]
fn a_json_array_is_not_a_payload() {
    let error = github::parse_event("ping", b"[1, 2, 3]", "bug").unwrap_err();
    assert_eq!(error, WebhookParseError::NotAnObject { found: "array" });
    assert_eq!(
        error.to_string(),
        "the request body is a JSON array, a JSON object was expected"
    );
}

#[test]
fn a_deeply_nested_body_is_refused_before_it_is_parsed() {
    let depth = 100_000;
    let body = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let error = gitlab::parse_event("Issue Hook", body.as_bytes(), "bug").unwrap_err();
    assert_eq!(
        error,
        WebhookParseError::TooDeep {
            limit: MAX_NESTING_DEPTH
        }
    );
}

#[test]
fn nesting_up_to_the_limit_is_fine_and_brackets_inside_strings_do_not_count() {
    let inner = format!(
        "{}{}",
        "[".repeat(MAX_NESTING_DEPTH - 1),
        "]".repeat(MAX_NESTING_DEPTH - 1)
    );
    let at_limit = format!(
        r#"{{"deep": {inner}, "text": "{}\"{}"}}"#,
        "[".repeat(500),
        "{".repeat(500)
    );
    let event = github::parse_event("watch", at_limit.as_bytes(), "bug").unwrap();
    assert!(matches!(event, BotEvent::Ignored { .. }));

    let one_more = format!(r#"{{"deep": [{inner}]}}"#);
    assert_eq!(
        github::parse_event("watch", one_more.as_bytes(), "bug"),
        Err(WebhookParseError::TooDeep {
            limit: MAX_NESTING_DEPTH
        })
    );
}

// ---- GitLab: who may knock ----

#[test]
fn the_gitlab_token_must_equal_a_configured_secret() {
    let configured = secrets(&["s3cret-token"]);
    assert_eq!(
        gitlab::verify_token(&configured, Some("s3cret-token")),
        Ok(())
    );
    assert_eq!(
        gitlab::verify_token(&configured, Some("s3cret-tokem")),
        Err(WebhookAuthError::TokenMismatch)
    );
    assert_eq!(
        gitlab::verify_token(&configured, Some("s3cret-token-and-more")),
        Err(WebhookAuthError::TokenMismatch)
    );
    assert_eq!(
        gitlab::verify_token(&configured, Some("")),
        Err(WebhookAuthError::TokenMismatch)
    );
}

#[test]
fn a_gitlab_delivery_without_a_token_is_refused() {
    let error = gitlab::verify_token(&secrets(&["s3cret-token"]), None).unwrap_err();
    assert_eq!(error, WebhookAuthError::MissingToken);
    assert!(error.to_string().contains("X-Gitlab-Token"));
    assert_eq!(
        gitlab::verify_request(&secrets(&["s3cret-token"]), &HeaderMap::new()),
        Err(WebhookAuthError::MissingToken)
    );
}

#[test]
fn during_a_token_rotation_either_gitlab_token_is_accepted() {
    let both = secrets(&["old-token", "new-token"]);
    let from_headers = headers(&[("X-Gitlab-Token", "new-token")]);
    assert_eq!(gitlab::verify_request(&both, &from_headers), Ok(()));
    assert_eq!(gitlab::verify_token(&both, Some("old-token")), Ok(()));
}

#[test]
fn an_empty_gitlab_secret_does_not_accept_an_empty_token() {
    assert_eq!(
        gitlab::verify_token(&secrets(&[""]), Some("")),
        Err(WebhookAuthError::NoSecretConfigured)
    );
}

#[test]
fn the_gitlab_delivery_id_prefers_the_idempotency_key() {
    let both = headers(&[
        ("Idempotency-Key", "f5e5f430-f57b-4e6e-9fac-d9128cd7232f"),
        (
            "X-Gitlab-Event-UUID",
            "13792a34-cac6-4fda-95a8-c58e00a3954e",
        ),
    ]);
    assert_eq!(
        gitlab::delivery_id(&both).unwrap().as_str(),
        "f5e5f430-f57b-4e6e-9fac-d9128cd7232f"
    );
    let older_gitlab = headers(&[(
        "X-Gitlab-Event-UUID",
        "13792a34-cac6-4fda-95a8-c58e00a3954e",
    )]);
    assert_eq!(
        gitlab::delivery_id(&older_gitlab).unwrap().as_str(),
        "13792a34-cac6-4fda-95a8-c58e00a3954e"
    );
    assert!(matches!(
        gitlab::delivery_id(&HeaderMap::new()),
        Err(WebhookParseError::MissingHeader { .. })
    ));
}

// ---- GitLab: what a delivery means ----

// The fixture's label change: previous [API] → current [Platform].

#[test]
fn a_gitlab_issue_whose_label_change_adds_the_trigger_becomes_issue_labeled() {
    let event =
        gitlab::parse_event("Issue Hook", &fixture("gitlab/issue_hook.json"), "platform").unwrap();
    let BotEvent::IssueLabeled {
        repo,
        issue,
        labels,
        label_added,
        actor,
        state_open,
        locked,
        ..
    } = &event
    else {
        panic!("expected IssueLabeled, got {event:?}");
    };
    assert_eq!(repo.forge, ForgeKind::GitLab);
    assert_eq!(repo.owner_path, "gitlabhq/gitlab-test");
    assert_eq!(
        repo.clone_url,
        "http://example.com/gitlabhq/gitlab-test.git"
    );
    assert_eq!(*issue, IssueNumber(23));
    assert_eq!(labels, &["Platform"]);
    assert_eq!(label_added, "Platform");
    assert_eq!(actor.login, "root");
    assert!(*state_open);
    assert!(*locked);
    insta::assert_debug_snapshot!("gitlab_issue_hook", event);
}

#[test]
fn a_confidential_gitlab_issue_hook_is_read_the_same_way() {
    let event = gitlab::parse_event(
        "Confidential Issue Hook",
        &fixture("gitlab/issue_hook.json"),
        "Platform",
    )
    .unwrap();
    assert!(matches!(event, BotEvent::IssueLabeled { .. }));
}

#[test]
fn a_gitlab_label_that_was_removed_does_not_trigger() {
    let event =
        gitlab::parse_event("Issue Hook", &fixture("gitlab/issue_hook.json"), "API").unwrap();
    assert_eq!(
        ignored_reason(event),
        "the label change does not add the trigger label `API`"
    );
}

#[test]
fn a_gitlab_trigger_label_that_was_already_there_does_not_trigger_again() {
    let mut payload = json(&fixture("gitlab/issue_hook.json"));
    let platform = payload["changes"]["labels"]["current"][0].clone();
    payload["changes"]["labels"]["previous"]
        .as_array_mut()
        .unwrap()
        .push(platform);
    let event =
        gitlab::parse_event("Issue Hook", payload.to_string().as_bytes(), "Platform").unwrap();
    assert_eq!(
        ignored_reason(event),
        "the trigger label `Platform` was already on the issue"
    );
}

#[test]
fn a_gitlab_issue_hook_without_a_label_change_is_ignored() {
    let mut payload = json(&fixture("gitlab/issue_hook.json"));
    payload["changes"].as_object_mut().unwrap().remove("labels");
    let event =
        gitlab::parse_event("Issue Hook", payload.to_string().as_bytes(), "Platform").unwrap();
    assert_eq!(ignored_reason(event), "issue hook without a label change");
}

#[test]
fn a_gitlab_task_work_item_is_ignored() {
    let mut payload = json(&fixture("gitlab/issue_hook.json"));
    payload["object_attributes"]["type"] = "Task".into();
    let event =
        gitlab::parse_event("Issue Hook", payload.to_string().as_bytes(), "Platform").unwrap();
    assert!(ignored_reason(event).contains("`Task`"));
}

#[test]
fn a_gitlab_issue_never_locked_has_a_null_discussion_locked() {
    let mut payload = json(&fixture("gitlab/issue_hook.json"));
    payload["object_attributes"]["discussion_locked"] = serde_json::Value::Null;
    payload["object_attributes"]["description"] = serde_json::Value::Null;
    let event =
        gitlab::parse_event("Issue Hook", payload.to_string().as_bytes(), "Platform").unwrap();
    assert!(matches!(
        event,
        BotEvent::IssueLabeled { locked: false, ref body, .. } if body.is_empty()
    ));
}

#[test]
fn a_gitlab_project_access_token_user_is_a_bot() {
    let mut payload = json(&fixture("gitlab/issue_hook.json"));
    payload["user"]["username"] = "project_14_bot_4f3c2a".into();
    let event =
        gitlab::parse_event("Issue Hook", payload.to_string().as_bytes(), "Platform").unwrap();
    assert!(matches!(event, BotEvent::IssueLabeled { actor, .. } if actor.is_bot));
}

#[test]
fn a_gitlab_issue_hook_without_its_project_path_names_the_field() {
    let mut payload = json(&fixture("gitlab/issue_hook.json"));
    payload["project"]
        .as_object_mut()
        .unwrap()
        .remove("path_with_namespace");
    let error =
        gitlab::parse_event("Issue Hook", payload.to_string().as_bytes(), "Platform").unwrap_err();
    assert_eq!(
        error.to_string(),
        "missing required field `project.path_with_namespace`"
    );
}

#[test]
fn a_gitlab_label_change_that_is_not_a_list_is_a_type_error() {
    let mut payload = json(&fixture("gitlab/issue_hook.json"));
    payload["changes"]["labels"]["current"] = "Platform".into();
    let error =
        gitlab::parse_event("Issue Hook", payload.to_string().as_bytes(), "Platform").unwrap_err();
    assert_eq!(
        error.to_string(),
        "field `changes.labels.current` should be an array, found string"
    );
}

#[test]
fn a_gitlab_comment_without_the_command_is_ignored() {
    let event = gitlab::parse_event(
        "Note Hook",
        &fixture("gitlab/note_hook_issue.json"),
        "Platform",
    )
    .unwrap();
    insta::assert_debug_snapshot!("gitlab_note_hook_issue", event);
    assert_eq!(
        ignored_reason(event),
        "a comment without the command `/autofix`"
    );
}

// ---- Conversation: what is said to the bot after the label ----

/// A recorded payload with only the fields a case needs rewritten.
fn rewritten(path: &str, edit: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
    let mut payload = json(&fixture(path));
    edit(&mut payload);
    payload.to_string().into_bytes()
}

fn remark(event: BotEvent) -> Remark {
    match event {
        BotEvent::Remark(remark) => remark,
        other => panic!("expected Remark, got {other:?}"),
    }
}

fn said(event: BotEvent) -> Said {
    remark(event).said
}

fn parse_github(event: &str, body: &[u8]) -> BotEvent {
    github::parse_event(event, body, "bug").unwrap()
}

fn parse_gitlab(event: &str, body: &[u8]) -> BotEvent {
    gitlab::parse_event(event, body, "Platform").unwrap()
}

fn with_word(command: &str) -> Triggers<'_> {
    Triggers {
        label: "bug",
        command,
    }
}

/// The repository and sender of every octokit example.
fn hello_world() -> RepoRef {
    RepoRef {
        forge: ForgeKind::GitHub,
        owner_path: "Codertocat/Hello-World".into(),
        clone_url: "https://github.com/Codertocat/Hello-World.git".into(),
        default_branch: Some("master".into()),
    }
}

fn codertocat() -> ForgeUser {
    ForgeUser {
        login: "Codertocat".into(),
        id: 21031067,
        is_bot: false,
    }
}

/// The project and user of GitLab's comment examples.
fn gitlab_test() -> RepoRef {
    RepoRef {
        forge: ForgeKind::GitLab,
        owner_path: "gitlab-org/gitlab-test".into(),
        clone_url: "http://example.com/gitlab-org/gitlab-test.git".into(),
        default_branch: Some("master".into()),
    }
}

fn root() -> ForgeUser {
    ForgeUser {
        login: "root".into(),
        id: 1,
        is_bot: false,
    }
}

const ISSUE_COMMENT: &str = "github/issue_comment/created.payload.json";
const REVIEW: &str = "github/pull_request_review/submitted.payload.json";
const REVIEW_COMMENT: &str = "github/pull_request_review_comment/created.payload.json";
const FAILED_CHECK_RUN: &str = "github/check_run/completed.1.payload.json";
const CHECK_SUITE: &str = "github/check_suite/completed.payload.json";
const NOTE_ON_ISSUE: &str = "gitlab/note_hook_issue.json";
const NOTE_ON_MERGE_REQUEST: &str = "gitlab/note_hook_merge_request.json";
const PIPELINE: &str = "gitlab/pipeline_hook.json";

fn issue_comment_saying(body: &str) -> Vec<u8> {
    rewritten(ISSUE_COMMENT, |p| p["comment"]["body"] = body.into())
}

#[test]
fn a_github_issue_comment_with_the_command_becomes_a_command_remark() {
    let event = parse_github("issue_comment", &issue_comment_saying("/autofix retry"));
    assert_eq!(
        remark(event),
        Remark {
            repo: hello_world(),
            thread: Thread::Issue(IssueNumber(1)),
            actor: codertocat(),
            said: Said::Command {
                command: Command::Retry,
                comment: CommentId(492700400),
            },
        }
    );
}

#[test]
fn a_github_comment_in_a_pull_request_conversation_is_on_the_change_request() {
    // octokit's schema: a PR's issue carries `pull_request: {url, html_url, …}`.
    let body = rewritten(ISSUE_COMMENT, |p| {
        p["comment"]["body"] = "/autofix status".into();
        p["issue"]["pull_request"] = serde_json::json!({
            "url": "https://api.github.com/repos/Codertocat/Hello-World/pulls/1"
        });
    });
    assert_eq!(
        remark(parse_github("issue_comment", &body)).thread,
        Thread::ChangeRequest(1)
    );
    let null_pull_request = rewritten(ISSUE_COMMENT, |p| {
        p["comment"]["body"] = "/autofix status".into();
        p["issue"]["pull_request"] = serde_json::Value::Null;
    });
    assert_eq!(
        remark(parse_github("issue_comment", &null_pull_request)).thread,
        Thread::Issue(IssueNumber(1))
    );
}

#[test]
fn an_edited_github_comment_is_ignored_even_with_the_command() {
    let body = rewritten("github/issue_comment/edited.payload.json", |p| {
        p["comment"]["body"] = "/autofix retry".into()
    });
    assert_eq!(
        ignored_reason(parse_github("issue_comment", &body)),
        "issue_comment event with action `edited`; only `created` is read"
    );
}

#[test]
fn the_command_word_is_the_configured_one() {
    let bot = with_word("bot");
    let event =
        github::parse_event_with("issue_comment", &issue_comment_saying("/bot retry"), &bot)
            .unwrap();
    assert!(matches!(
        said(event),
        Said::Command {
            command: Command::Retry,
            ..
        }
    ));
    let event = github::parse_event_with(
        "issue_comment",
        &issue_comment_saying("/autofix retry"),
        &bot,
    )
    .unwrap();
    assert_eq!(
        ignored_reason(event),
        "a comment without the command `/bot`"
    );

    let note = rewritten(NOTE_ON_ISSUE, |p| {
        p["object_attributes"]["note"] = "/bot retry".into()
    });
    let event = gitlab::parse_event_with("Note Hook", &note, &bot).unwrap();
    assert!(matches!(
        said(event),
        Said::Command {
            command: Command::Retry,
            ..
        }
    ));
    let note = rewritten(NOTE_ON_ISSUE, |p| {
        p["object_attributes"]["note"] = "/autofix retry".into()
    });
    let event = gitlab::parse_event_with("Note Hook", &note, &bot).unwrap();
    assert_eq!(
        ignored_reason(event),
        "a comment without the command `/bot`"
    );
}

#[test]
fn a_github_command_comment_without_its_id_names_the_field() {
    let body = rewritten(ISSUE_COMMENT, |p| {
        p["comment"]["body"] = "/autofix retry".into();
        p["comment"].as_object_mut().unwrap().remove("id");
    });
    assert_eq!(
        github::parse_event("issue_comment", &body, "bug"),
        Err(WebhookParseError::MissingField {
            field: "comment.id".into()
        })
    );
}

#[test]
fn a_github_commented_review_without_a_body_is_context_for_the_change_request() {
    // The recorded review: `state: commented`, `body: null`, on pull request #2.
    assert_eq!(
        remark(parse_github("pull_request_review", &fixture(REVIEW))),
        Remark {
            repo: hello_world(),
            thread: Thread::ChangeRequest(2),
            actor: codertocat(),
            said: Said::Review {
                changes_requested: false,
                body: String::new(),
            },
        }
    );
}

#[test]
fn a_github_review_requesting_changes_is_a_change_request_review_whatever_its_case() {
    for state in ["changes_requested", "CHANGES_REQUESTED"] {
        let body = rewritten(REVIEW, |p| {
            p["review"]["state"] = state.into();
            p["review"]["body"] = "Keep the old signature.".into();
        });
        assert_eq!(
            said(parse_github("pull_request_review", &body)),
            Said::Review {
                changes_requested: true,
                body: "Keep the old signature.".into(),
            },
            "{state}"
        );
    }
}

#[test]
fn a_github_commented_review_with_the_command_is_a_command_from_the_review() {
    let body = rewritten(REVIEW, |p| {
        p["review"]["body"] = "/autofix plan keep it small".into()
    });
    assert_eq!(
        said(parse_github("pull_request_review", &body)),
        Said::Command {
            command: Command::Plan("keep it small".into()),
            comment: CommentId(237895671),
        }
    );
}

#[test]
fn an_approved_or_dismissed_github_review_is_ignored() {
    for state in ["approved", "dismissed"] {
        let body = rewritten(REVIEW, |p| p["review"]["state"] = state.into());
        assert_eq!(
            ignored_reason(parse_github("pull_request_review", &body)),
            format!(
                "a review with state `{state}`; only `changes_requested` and `commented` are read"
            )
        );
    }
}

#[test]
fn a_github_review_comment_is_a_line_comment() {
    assert_eq!(
        remark(parse_github(
            "pull_request_review_comment",
            &fixture(REVIEW_COMMENT)
        )),
        Remark {
            repo: hello_world(),
            thread: Thread::ChangeRequest(2),
            actor: codertocat(),
            said: Said::LineComment {
                comment: CommentId(284312630),
                body: "Maybe you should use more emoji on this line.".into(),
                path: "README.md".into(),
                line: Some(265),
            },
        }
    );
}

#[test]
fn a_github_review_comment_on_a_removed_or_outdated_line_has_no_line() {
    // On the `LEFT` side `line` counts lines of the old file; an outdated comment has none.
    let removed = rewritten(REVIEW_COMMENT, |p| p["comment"]["side"] = "LEFT".into());
    let outdated = rewritten(REVIEW_COMMENT, |p| {
        p["comment"]["line"] = serde_json::Value::Null
    });
    for body in [removed, outdated] {
        assert!(matches!(
            said(parse_github("pull_request_review_comment", &body)),
            Said::LineComment { line: None, .. }
        ));
    }
}

#[test]
fn a_github_review_comment_without_its_path_names_the_field() {
    let body = rewritten(REVIEW_COMMENT, |p| {
        p["comment"].as_object_mut().unwrap().remove("path");
    });
    assert_eq!(
        github::parse_event("pull_request_review_comment", &body, "bug"),
        Err(WebhookParseError::MissingField {
            field: "comment.path".into()
        })
    );
}

#[test]
fn a_failed_github_check_run_is_failed_checks_on_its_pull_request() {
    // Recorded with `conclusion: failure` on pull request #2.
    assert_eq!(
        remark(parse_github("check_run", &fixture(FAILED_CHECK_RUN))),
        Remark {
            repo: hello_world(),
            thread: Thread::ChangeRequest(2),
            actor: codertocat(),
            said: Said::ChecksFailed {
                head_branch: "changes".into(),
                head_sha: "ec26c3e57ca3a959ca5aad62de7213c562f8c821".into(),
                runs: vec![128620228],
            },
        }
    );
    for conclusion in ["timed_out", "startup_failure"] {
        let body = rewritten(FAILED_CHECK_RUN, |p| {
            p["check_run"]["conclusion"] = conclusion.into()
        });
        assert!(
            matches!(
                said(parse_github("check_run", &body)),
                Said::ChecksFailed { .. }
            ),
            "{conclusion}"
        );
    }
}

#[test]
fn a_successful_github_check_run_is_ignored() {
    let event = parse_github(
        "check_run",
        &fixture("github/check_run/completed.payload.json"),
    );
    assert_eq!(
        ignored_reason(event),
        "a check run that concluded `success`, not a failure"
    );
}

#[test]
fn a_failed_github_check_run_without_a_pull_request_is_ignored() {
    let body = rewritten(FAILED_CHECK_RUN, |p| {
        p["check_run"]["pull_requests"] = serde_json::json!([])
    });
    assert_eq!(
        ignored_reason(parse_github("check_run", &body)),
        "checks of a commit with no pull request"
    );
}

#[test]
fn a_failed_github_check_run_whose_pull_request_has_no_number_names_the_field() {
    let body = rewritten(FAILED_CHECK_RUN, |p| {
        p["check_run"]["pull_requests"][0]
            .as_object_mut()
            .unwrap()
            .remove("number");
    });
    assert_eq!(
        github::parse_event("check_run", &body, "bug"),
        Err(WebhookParseError::MissingField {
            field: "check_run.pull_requests[0].number".into()
        })
    );
}

#[test]
fn a_failed_github_check_suite_is_failed_checks_without_run_ids() {
    // Recorded as a success; a failure is the same delivery with another conclusion.
    let event = parse_github("check_suite", &fixture(CHECK_SUITE));
    assert_eq!(
        ignored_reason(event),
        "a check suite that concluded `success`, not a failure"
    );
    let body = rewritten(CHECK_SUITE, |p| {
        p["check_suite"]["conclusion"] = "failure".into()
    });
    assert_eq!(
        remark(parse_github("check_suite", &body)),
        Remark {
            repo: hello_world(),
            thread: Thread::ChangeRequest(2),
            actor: codertocat(),
            said: Said::ChecksFailed {
                head_branch: "changes".into(),
                head_sha: "ec26c3e57ca3a959ca5aad62de7213c562f8c821".into(),
                runs: vec![],
            },
        }
    );
}

fn note_saying(path: &str, note: &str) -> Vec<u8> {
    rewritten(path, |p| p["object_attributes"]["note"] = note.into())
}

#[test]
fn a_gitlab_issue_note_with_the_command_becomes_a_command_remark() {
    let body = note_saying(NOTE_ON_ISSUE, "/autofix retry");
    // The thread is the issue's project-scoped iid (17), not its global id (92).
    assert_eq!(
        remark(parse_gitlab("Note Hook", &body)),
        Remark {
            repo: gitlab_test(),
            thread: Thread::Issue(IssueNumber(17)),
            actor: root(),
            said: Said::Command {
                command: Command::Retry,
                comment: CommentId(1241),
            },
        }
    );
    let confidential = parse_gitlab("Confidential Note Hook", &body);
    assert_eq!(remark(confidential).thread, Thread::Issue(IssueNumber(17)));
}

#[test]
fn a_gitlab_merge_request_note_with_the_command_is_on_the_change_request() {
    let body = note_saying(NOTE_ON_MERGE_REQUEST, "/autofix cancel");
    assert_eq!(
        remark(parse_gitlab("Note Hook", &body)),
        Remark {
            repo: gitlab_test(),
            thread: Thread::ChangeRequest(1),
            actor: root(),
            said: Said::Command {
                command: Command::Cancel,
                comment: CommentId(1244),
            },
        }
    );
}

#[test]
fn a_plain_gitlab_merge_request_note_is_ignored() {
    assert_eq!(
        ignored_reason(parse_gitlab("Note Hook", &fixture(NOTE_ON_MERGE_REQUEST))),
        "a comment without the command `/autofix`"
    );
}

/// GitLab's webhook docs have no diff-note example: the note hook's `object_attributes` carry
/// the note's `type` and `position` (lib/gitlab/hook_data/note_builder.rb), and this position is
/// the one in GitLab's discussions API docs ("Diff comments also contain position").
fn as_diff_note(payload: &mut serde_json::Value) {
    payload["object_attributes"]["type"] = "DiffNote".into();
    payload["object_attributes"]["position"] = serde_json::json!({
        "base_sha": "b5d6e7b1613fca24d250fa8e5bc7bcc3dd6002ef",
        "start_sha": "7c9c2ead8a320fb7ba0b4e234bd9529a2614e306",
        "head_sha": "4803c71e6b1833ca72b8b26ef2ecd5adc8a38031",
        "old_path": "package.json",
        "new_path": "package.json",
        "position_type": "text",
        "old_line": 27,
        "new_line": 27,
        "line_range": {
            "start": {
                "line_code": "588440f66559714280628a4f9799f0c4eb880a4a_10_10",
                "type": "new"
            },
            "end": {
                "line_code": "588440f66559714280628a4f9799f0c4eb880a4a_11_11",
                "type": "old"
            }
        }
    });
}

#[test]
fn a_gitlab_diff_note_on_a_merge_request_is_a_line_comment_without_the_word() {
    let body = rewritten(NOTE_ON_MERGE_REQUEST, as_diff_note);
    assert_eq!(
        remark(parse_gitlab("Note Hook", &body)),
        Remark {
            repo: gitlab_test(),
            thread: Thread::ChangeRequest(1),
            actor: root(),
            said: Said::LineComment {
                comment: CommentId(1244),
                body: "This MR needs work.".into(),
                path: "package.json".into(),
                line: Some(27),
            },
        }
    );
}

#[test]
fn a_gitlab_diff_note_on_a_removed_line_has_no_line() {
    let body = rewritten(NOTE_ON_MERGE_REQUEST, |p| {
        as_diff_note(p);
        p["object_attributes"]["position"]["new_line"] = serde_json::Value::Null;
    });
    assert!(matches!(
        said(parse_gitlab("Note Hook", &body)),
        Said::LineComment { line: None, .. }
    ));
}

#[test]
fn a_gitlab_diff_note_with_the_command_is_the_command() {
    let body = rewritten(NOTE_ON_MERGE_REQUEST, |p| {
        as_diff_note(p);
        p["object_attributes"]["note"] = "/autofix rename it".into();
    });
    assert_eq!(
        said(parse_gitlab("Note Hook", &body)),
        Said::Command {
            command: Command::Revise("rename it".into()),
            comment: CommentId(1244),
        }
    );
}

#[test]
fn a_system_note_is_ignored_even_with_the_command() {
    let body = rewritten(NOTE_ON_MERGE_REQUEST, |p| {
        p["object_attributes"]["note"] = "/autofix retry".into();
        p["object_attributes"]["system"] = true.into();
    });
    assert_eq!(
        ignored_reason(parse_gitlab("Note Hook", &body)),
        "a system note"
    );
}

#[test]
fn an_edited_gitlab_note_is_ignored() {
    let body = rewritten(NOTE_ON_ISSUE, |p| {
        p["object_attributes"]["note"] = "/autofix retry".into();
        p["object_attributes"]["action"] = "update".into();
    });
    assert_eq!(
        ignored_reason(parse_gitlab("Note Hook", &body)),
        "note event with action `update`; only `create` is read"
    );
}

#[test]
fn a_gitlab_note_without_an_action_is_read_as_new() {
    // GitLab before 16.11 sends no `object_attributes.action`.
    let body = rewritten(NOTE_ON_ISSUE, |p| {
        p["object_attributes"]["note"] = "/autofix retry".into();
        p["object_attributes"]
            .as_object_mut()
            .unwrap()
            .remove("action");
    });
    assert!(matches!(
        parse_gitlab("Note Hook", &body),
        BotEvent::Remark(_)
    ));
}

#[test]
fn a_gitlab_note_on_a_commit_or_snippet_is_ignored() {
    for kind in ["Commit", "Snippet"] {
        let body = rewritten(NOTE_ON_MERGE_REQUEST, |p| {
            p["object_attributes"]["note"] = "/autofix retry".into();
            p["object_attributes"]["noteable_type"] = kind.into();
        });
        assert_eq!(
            ignored_reason(parse_gitlab("Note Hook", &body)),
            format!("a note on a `{kind}`; only issue and merge request notes are read")
        );
    }
}

#[test]
fn a_gitlab_command_note_without_its_id_names_the_field() {
    let body = rewritten(NOTE_ON_ISSUE, |p| {
        p["object_attributes"]["note"] = "/autofix retry".into();
        p["object_attributes"].as_object_mut().unwrap().remove("id");
    });
    assert_eq!(
        gitlab::parse_event("Note Hook", &body, "Platform"),
        Err(WebhookParseError::MissingField {
            field: "object_attributes.id".into()
        })
    );
}

fn failed_pipeline() -> Vec<u8> {
    rewritten(PIPELINE, |p| {
        p["object_attributes"]["status"] = "failed".into()
    })
}

#[test]
fn a_failed_gitlab_merge_request_pipeline_is_failed_checks() {
    assert_eq!(
        remark(parse_gitlab("Pipeline Hook", &failed_pipeline())),
        Remark {
            repo: RepoRef {
                clone_url: "http://192.168.64.1:3005/gitlab-org/gitlab-test.git".into(),
                ..gitlab_test()
            },
            thread: Thread::ChangeRequest(1),
            actor: root(),
            said: Said::ChecksFailed {
                // GitLab's example pipeline: `ref` "master", merge request from "test".
                head_branch: "master".into(),
                head_sha: "bcbb5ec396a2c0f828686f14fac9b80b780504f2".into(),
                runs: vec![31],
            },
        }
    );
}

#[test]
fn a_successful_gitlab_pipeline_is_ignored() {
    assert_eq!(
        ignored_reason(parse_gitlab("Pipeline Hook", &fixture(PIPELINE))),
        "a pipeline with status `success`, not a failure"
    );
}

#[test]
fn a_failed_gitlab_pipeline_without_a_merge_request_is_ignored() {
    let body = rewritten(PIPELINE, |p| {
        p["object_attributes"]["status"] = "failed".into();
        p["merge_request"] = serde_json::Value::Null;
    });
    assert_eq!(
        ignored_reason(parse_gitlab("Pipeline Hook", &body)),
        "a failed pipeline with no merge request"
    );
}

#[test]
fn a_failed_gitlab_pipeline_without_its_sha_names_the_field() {
    let mut payload = json(&failed_pipeline());
    payload["object_attributes"]
        .as_object_mut()
        .unwrap()
        .remove("sha");
    assert_eq!(
        gitlab::parse_event("Pipeline Hook", payload.to_string().as_bytes(), "Platform"),
        Err(WebhookParseError::MissingField {
            field: "object_attributes.sha".into()
        })
    );
}

// ---- Default branch: pushes that move the base ----

/// octokit's push example: it deletes the tag `simple-tag` (`deleted: true`, `after` all zeros).
const PUSH: &str = "github/push/payload.json";
/// GitLab's push example: `refs/heads/master`, the project's default branch, to `da15608…`.
const PUSH_HOOK: &str = "gitlab/push_hook.json";
/// The commit octokit's push example deleted the tag at (its `before`); octokit's
/// `with-new-branch` example pushes this same commit to `master`.
const HELLO_WORLD_HEAD: &str = "6113728f27ae82c7b1a177c8d03f9e96e0adf246";
/// The `after` of GitLab's push example.
const DIASPORA_HEAD: &str = "da1560886d4f094c3e6c9ef40349f7d38b5d27d7";
/// The "no commit" sha both forges send as `after` when a push deletes a ref.
const NO_COMMIT: &str = "0000000000000000000000000000000000000000";

/// octokit's push example made a push of `HELLO_WORLD_HEAD` to `branch`.
fn github_push_to(branch: &str) -> Vec<u8> {
    rewritten(PUSH, |p| {
        p["ref"] = format!("refs/heads/{branch}").into();
        p["deleted"] = false.into();
        p["after"] = HELLO_WORLD_HEAD.into();
    })
}

/// The project of GitLab's push example.
fn diaspora() -> RepoRef {
    RepoRef {
        forge: ForgeKind::GitLab,
        owner_path: "mike/diaspora".into(),
        clone_url: "http://example.com/mike/diaspora.git".into(),
        default_branch: Some("master".into()),
    }
}

#[test]
fn a_github_push_to_the_default_branch_is_base_moved() {
    assert_eq!(
        parse_github("push", &github_push_to("master")),
        BotEvent::BaseMoved {
            repo: hello_world(),
            branch: "master".into(),
            after: HELLO_WORLD_HEAD.into(),
        }
    );
}

#[test]
fn a_github_push_to_another_branch_is_ignored() {
    assert_eq!(
        ignored_reason(parse_github("push", &github_push_to("feature"))),
        "a push to `feature` is not to the default branch `master`"
    );
}

#[test]
fn the_recorded_github_tag_push_is_ignored() {
    assert_eq!(
        ignored_reason(parse_github("push", &fixture(PUSH))),
        "a push to `refs/tags/simple-tag` is not to the default branch `master`"
    );
    let created_tag = rewritten(PUSH, |p| {
        p["deleted"] = false.into();
        p["after"] = HELLO_WORLD_HEAD.into();
    });
    assert!(matches!(
        parse_github("push", &created_tag),
        BotEvent::Ignored { .. }
    ));
}

#[test]
fn a_github_push_deleting_the_default_branch_is_ignored() {
    // As recorded: `deleted: true` and `after` all zeros, here on `master`.
    let body = rewritten(PUSH, |p| p["ref"] = "refs/heads/master".into());
    assert_eq!(
        ignored_reason(parse_github("push", &body)),
        "a push deleting the default branch `master`"
    );
}

#[test]
fn a_github_push_without_a_default_branch_is_ignored() {
    let body = rewritten(PUSH, |p| {
        p["ref"] = "refs/heads/master".into();
        p["deleted"] = false.into();
        p["repository"]
            .as_object_mut()
            .unwrap()
            .remove("default_branch");
    });
    assert_eq!(
        ignored_reason(parse_github("push", &body)),
        "a push to `master` in a repository whose default branch is not given"
    );
}

#[test]
fn a_github_push_missing_a_field_it_needs_names_the_field() {
    for (field, edit) in [
        (
            "ref",
            (|p: &mut serde_json::Value| {
                p.as_object_mut().unwrap().remove("ref");
            }) as fn(&mut serde_json::Value),
        ),
        ("after", |p| {
            p.as_object_mut().unwrap().remove("after");
        }),
        ("repository.clone_url", |p| {
            p["repository"].as_object_mut().unwrap().remove("clone_url");
        }),
    ] {
        let mut payload = json(&github_push_to("master"));
        edit(&mut payload);
        assert_eq!(
            github::parse_event("push", payload.to_string().as_bytes(), "bug"),
            Err(WebhookParseError::MissingField {
                field: field.into()
            }),
            "{field}"
        );
    }
}

#[test]
fn a_github_push_whose_deleted_flag_is_not_a_boolean_is_a_type_error() {
    let body = rewritten(PUSH, |p| {
        p["ref"] = "refs/heads/master".into();
        p["deleted"] = "true".into();
    });
    assert_eq!(
        github::parse_event("push", &body, "bug"),
        Err(WebhookParseError::WrongType {
            field: "deleted".into(),
            expected: "a boolean",
            found: "string"
        })
    );
}

#[test]
fn the_recorded_gitlab_push_to_the_default_branch_is_base_moved() {
    let moved = BotEvent::BaseMoved {
        repo: diaspora(),
        branch: "master".into(),
        after: DIASPORA_HEAD.into(),
    };
    assert_eq!(parse_gitlab("Push Hook", &fixture(PUSH_HOOK)), moved);
    // `after` is read, not `checkout_sha`, which may be null.
    let without_checkout = rewritten(PUSH_HOOK, |p| p["checkout_sha"] = serde_json::Value::Null);
    assert_eq!(parse_gitlab("Push Hook", &without_checkout), moved);
}

#[test]
fn a_gitlab_push_to_another_branch_is_ignored() {
    let body = rewritten(PUSH_HOOK, |p| p["ref"] = "refs/heads/feature".into());
    assert_eq!(
        ignored_reason(parse_gitlab("Push Hook", &body)),
        "a push to `feature` is not to the default branch `master`"
    );
}

#[test]
fn a_gitlab_tag_push_is_ignored() {
    assert_eq!(
        ignored_reason(parse_gitlab("Tag Push Hook", &fixture(PUSH_HOOK))),
        "a tag push: only a branch push moves the default branch"
    );
    let tag_ref = rewritten(PUSH_HOOK, |p| p["ref"] = "refs/tags/v1.0.0".into());
    assert_eq!(
        ignored_reason(parse_gitlab("Push Hook", &tag_ref)),
        "a push to `refs/tags/v1.0.0` is not to the default branch `master`"
    );
}

#[test]
fn a_gitlab_push_deleting_the_default_branch_is_ignored() {
    // GitLab sends the all-zero sha as `after` and a null `checkout_sha` (DataBuilder::Push).
    let body = rewritten(PUSH_HOOK, |p| {
        p["after"] = NO_COMMIT.into();
        p["checkout_sha"] = serde_json::Value::Null;
    });
    assert_eq!(
        ignored_reason(parse_gitlab("Push Hook", &body)),
        "a push deleting the default branch `master`"
    );
}

#[test]
fn a_gitlab_push_to_a_project_without_a_default_branch_is_ignored() {
    let body = rewritten(PUSH_HOOK, |p| {
        p["project"]["default_branch"] = serde_json::Value::Null
    });
    assert_eq!(
        ignored_reason(parse_gitlab("Push Hook", &body)),
        "a push to `master` in a project whose default branch is not given"
    );
}

#[test]
fn a_gitlab_push_missing_a_field_it_needs_names_the_field() {
    for (field, edit) in [
        (
            "ref",
            (|p: &mut serde_json::Value| {
                p.as_object_mut().unwrap().remove("ref");
            }) as fn(&mut serde_json::Value),
        ),
        ("after", |p| {
            p.as_object_mut().unwrap().remove("after");
        }),
        ("project.git_http_url", |p| {
            p["project"].as_object_mut().unwrap().remove("git_http_url");
        }),
    ] {
        let mut payload = json(&fixture(PUSH_HOOK));
        edit(&mut payload);
        assert_eq!(
            gitlab::parse_event("Push Hook", payload.to_string().as_bytes(), "Platform"),
            Err(WebhookParseError::MissingField {
                field: field.into()
            }),
            "{field}"
        );
    }
}
