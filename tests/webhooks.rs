//! The webhook edge of each forge, on the deliveries GitHub and GitLab really send: who may
//! knock (signatures and tokens), and what a delivery means to the bot (`BotEvent`).

use std::path::PathBuf;

use autofix::forge::{
    BotEvent, ForgeKind, IssueNumber, MAX_NESTING_DEPTH, WebhookAuthError, WebhookError,
    WebhookParseError, github, gitlab,
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
fn an_issue_comment_is_ignored_as_another_event() {
    let event = github::parse_event(
        "issue_comment",
        &fixture("github/issue_comment/created.payload.json"),
        "bug",
    )
    .unwrap();
    assert_eq!(
        ignored_reason(event),
        "`issue_comment` events do not start jobs"
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
    let event = github::parse_event("push", at_limit.as_bytes(), "bug").unwrap();
    assert!(matches!(event, BotEvent::Ignored { .. }));

    let one_more = format!(r#"{{"deep": [{inner}]}}"#);
    assert_eq!(
        github::parse_event("push", one_more.as_bytes(), "bug"),
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
fn a_gitlab_comment_is_ignored_as_another_event() {
    let event = gitlab::parse_event(
        "Note Hook",
        &fixture("gitlab/note_hook_issue.json"),
        "Platform",
    )
    .unwrap();
    insta::assert_debug_snapshot!("gitlab_note_hook_issue", event);
    assert_eq!(
        ignored_reason(event),
        "`Note Hook` events do not start jobs"
    );
}
