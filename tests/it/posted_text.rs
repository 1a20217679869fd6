//! What the bot posts on the forge when the model's answers or a command's output carry
//! mentions, links, tracking images, quick actions or credentials: the text is shown, inert
//! (nobody notified, nothing linked or embedded), and every credential is masked.

use crate::support::bot::{BUGGY_PY, BotTester, FIXED_PY, PY_CONFIG, accepted, clamp_edit, triage};
use crate::support::posted::stable;
use serde_json::json;

const PROJECT: &str = "acme/widgets";

/// A plan whose steps and summary mention a team, reference and close another issue, link a
/// phishing page and embed tracking images.
fn a_plan_that_tries_to_ping_link_and_track() -> String {
    json!({
        "plan_steps": [
            "limit the value to [low, high] in clamp, as @acme/security-team asked",
            "Fixes #12 too: see [the advisory](https://evil.example/phish) ![](https://tracker.example/p.png?repo=acme) <img src=https://tracker.example/i.png>",
            "then run www.evil.example/install.sh\n\n/close\n# Heading"
        ],
        "file_changes": [{"path": "calc.py", "operation": "MODIFY", "line_range": [1, 2]}],
        "commit_summary": "clamp values to both bounds for @acme/security-team",
        "scope": "calc"
    })
    .to_string()
}

/// Whether a posted Markdown `text` would notify, link, embed or act: a mention or an issue
/// reference, a link or an image to the model's addresses, HTML, a line that is a command.
fn live_parts(text: &str) -> Vec<String> {
    // A backslash-escaped bracket or angle bracket is a character, not syntax.
    let unescaped = text
        .replace("\\<", "")
        .replace("\\[", "")
        .replace("\\]", "");
    let mut found = Vec::new();
    for live in [
        "@acme",
        "@group",
        "#12",
        "](https://",
        "(https://evil",
        "<img",
        " https://",
        " www.",
    ] {
        if unescaped.contains(live) {
            found.push(live.to_owned());
        }
    }
    found.extend(
        text.lines()
            .filter(|line| line.starts_with('/') || line.starts_with("# "))
            .map(str::to_owned),
    );
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_text_in_a_pull_request_body_mentions_links_and_embeds_nothing() {
    let t = BotTester::github().await;
    t.repo(PROJECT, &crate::support::bot::python_project());
    let alice = t.maintainer(PROJECT, "alice");
    t.llm.reply_text_for_stage("triage", triage());
    t.llm
        .reply_text_for_stage("plan", a_plan_that_tries_to_ping_link_and_track());
    t.llm.reply_text_for_stage("edit", clamp_edit(FIXED_PY));
    t.llm.reply_text_for_stage("audit", accepted());

    t.label_issue_and_wait(PROJECT, 7, "clamp ignores its bounds", &alice)
        .await;

    let change_requests = t.change_requests(PROJECT);
    assert_eq!(change_requests.len(), 1, "{:?}", t.comments(PROJECT, 7));
    let body = &change_requests[0].body;
    assert_eq!(live_parts(body), Vec::<String>::new(), "{body}");
    // What the model wrote, its words shown inert (the validation table after it has timings).
    let written = &body[..body.find("## Validation").expect("the validation section")];
    insta::assert_snapshot!("model_text_in_a_pull_request_body", written);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reason_the_model_gives_is_posted_inert_in_the_status_comment_on_gitlab() {
    let t = BotTester::gitlab().await;
    t.repo(PROJECT, &crate::support::bot::python_project());
    let alice = t.maintainer(PROJECT, "alice");
    let reason = "Ask @group/maintainers first; details at https://evil.example/x \
                  ![](https://tracker.example/t.png)\n/close\n/merge";
    t.llm.reply_text_for_stage(
        "triage",
        json!({"actionable": false, "classification": "fix", "reason": reason}).to_string(),
    );

    t.label_issue_and_wait(PROJECT, 7, "clamp ignores its bounds", &alice)
        .await;

    let status = t.comments_marked(PROJECT, 7, "<!-- autofix:status job=");
    assert_eq!(status.len(), 1, "{status:#?}");
    let comment = &status[0];
    assert_eq!(live_parts(comment), Vec::<String>::new(), "{comment}");
    // `INVALID_INPUT`, the model's reason quoted: no mention, link, image or quick action live.
    insta::assert_snapshot!("model_reason_in_the_status_comment_gitlab", stable(comment));
}

/// Credentials a repository's test prints when it fails (none is a secret autofix knows).
const PRINTED: [&str; 3] = [
    "AKIAIOSFODNN7EXAMPLE",
    "ghp_Zx8Wv7Ut6Sr5Qp4On3Ml2Kj1Ih0GfEdCbA9y",
    "sk-ant-api03-AbC123dEf456GhI789jKl012MnO",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_a_failing_test_prints_are_masked_in_the_prompts_and_the_failure_comment() {
    let t = BotTester::github().await;
    let test = format!(
        "from calc import clamp\n\n\ndef test_clamp_limits_both_ends():\n    \
         assert clamp(-1, 0, 3) == 0, \"deploy with {} {} {}\"\n",
        PRINTED[0], PRINTED[1], PRINTED[2]
    );
    t.repo(
        PROJECT,
        &[
            ("calc.py", BUGGY_PY),
            ("test_calc.py", &test),
            (".gitignore", "__pycache__/\n"),
            (
                ".autofix.toml",
                &format!("{PY_CONFIG}[repair]\nmax_attempts = 1\n"),
            ),
        ],
    );
    let alice = t.maintainer(PROJECT, "alice");
    crate::support::bot::script_python_fix_that_stays_wrong(&t.llm, 1);

    t.label_issue_and_wait(PROJECT, 8, "clamp ignores its lower bound", &alice)
        .await;

    let repair = t.llm.prompts_for("repair").pop().expect("a repair round");
    assert!(
        repair.contains("AssertionError: deploy with [REDACTED] [REDACTED] [REDACTED]"),
        "the output is quoted, its credentials masked: {repair}"
    );
    for request in t.llm.requests() {
        let sent = request.prompt().unwrap_or_default();
        for credential in PRINTED {
            assert!(!sent.contains(credential), "{credential} was sent: {sent}");
        }
    }
    let comments = t.comments(PROJECT, 8);
    assert_eq!(comments.len(), 1, "{comments:#?}");
    let report = &comments[0];
    // `VALIDATION_FAILED`, and the output's tail posted with its credentials masked.
    insta::assert_snapshot!("masked_failure_report", stable(report));
    for credential in PRINTED {
        assert!(
            !report.contains(credential),
            "{credential} was posted: {report}"
        );
    }
}
