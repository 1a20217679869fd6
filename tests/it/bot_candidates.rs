//! The bot with several candidates, on GitHub and GitLab: the pull request names the chosen
//! candidate and why; with none proven there is no pull request but the evidence on the issue,
//! or, when the repository asks for it, a draft titled `[unproven]` that says why.

use crate::support::bot::{BUGGY_PY, BotTester, FAILED_LABEL, FIXED_PY, clamp_edit, plan, triage};
use crate::support::posted::stable;

const PROJECT: &str = "acme/widgets";
const ISSUE: u64 = 31;

/// Passes the reproduction (5 → 3) but breaks the test of values inside the range.
const BROKEN_PY: &str = "def clamp(value, low, high):\n    return high\n";
/// Still ignores the upper bound: the reproduction fails.
const WRONG_PY: &str = "def clamp(value, low, high):\n    return max(low, value)\n";

fn project(extra: &'static str) -> Vec<(&'static str, String)> {
    vec![
        ("calc.py", BUGGY_PY.to_string()),
        (
            "test_calc.py",
            "from calc import clamp\n\n\ndef test_clamp_inside():\n    assert clamp(2, 0, 3) == 2\n"
                .to_string(),
        ),
        (".gitignore", "__pycache__/\n.pytest_cache/\n".to_string()),
        (
            ".autofix.toml",
            format!(
                "[[validate]]\nname = \"pytest\"\nrun = [\"python3\", \"-m\", \"pytest\", \"-q\", \"-p\", \
                 \"no:cacheprovider\"]\ntimeout_secs = 120\n\n[reproduce]\nmode = \"preferred\"\n\n\
                 [repair]\nmax_attempts = 0\n\n[audit]\nenabled = false\n\n[candidates]\ncount = 2\n{extra}"
            ),
        ),
    ]
}

const REPRODUCING_TEST: &str = "test_clamp.py\n```\n<<<<<<< SEARCH\n=======\nfrom calc import clamp\n\n\ndef test_clamp_upper_bound():\n    assert clamp(5, 0, 3) == 3\n>>>>>>> REPLACE\n```\n";

/// Candidate 1 answers `first`, candidate 2 `second` (each a new `calc.py`).
fn script(t: &BotTester, first: &str, second: &str) {
    t.llm.reply_text_for_stage("triage", triage());
    t.llm.reply_text_for_stage("plan", plan());
    t.llm.reply_text_for_stage("reproduce", REPRODUCING_TEST);
    t.llm.reply_for_candidate(
        "edit",
        1,
        crate::support::scripted_llm::Reply::text(clamp_edit(first)),
    );
    t.llm.reply_for_candidate(
        "edit",
        2,
        crate::support::scripted_llm::Reply::text(clamp_edit(second)),
    );
}

async fn label(t: &BotTester, extra: &'static str) {
    let owned = project(extra);
    let borrowed: Vec<(&str, &str)> = owned.iter().map(|(p, c)| (*p, c.as_str())).collect();
    t.repo(PROJECT, &borrowed);
    let alice = t.maintainer(PROJECT, "alice");
    t.label_issue_and_wait(PROJECT, ISSUE, "clamp ignores its upper bound", &alice)
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pull_request_names_the_chosen_candidate_and_why_on_github() {
    let t = BotTester::github().await;
    script(&t, WRONG_PY, FIXED_PY);

    label(&t, "").await;

    let requests = t.change_requests(PROJECT);
    assert_eq!(requests.len(), 1, "{:#?}", t.comments(PROJECT, ISSUE));
    let body = &requests[0].body;
    // `#` before a number is kept from linking to another issue; candidate 1 is either judged
    // or stopped, whichever the two running side by side make first.
    assert!(
        body.contains("## Candidates\n\n2 candidates: #&#8203;2 chosen — the only one that passes `test_clamp.py::test_clamp_upper_bound`; #&#8203;1 "),
        "{body}"
    );
    assert!(!requests[0].title.contains("[unproven]"));
    t.llm.assert_done();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_no_candidate_proven_the_issue_gets_the_evidence_and_no_pull_request_on_github() {
    let t = BotTester::github().await;
    script(&t, WRONG_PY, BROKEN_PY);

    label(&t, "").await;

    assert!(t.change_requests(PROJECT).is_empty());
    assert!(t.labels(PROJECT, ISSUE).contains(&FAILED_LABEL.to_owned()));
    let comments = t.comments(PROJECT, ISSUE);
    assert_eq!(comments.len(), 1, "{comments:#?}");
    // VALIDATION_FAILED, with both candidates' evidence: the best, though not proven, first.
    insta::assert_snapshot!("no_candidate_proven_report_github", stable(&comments[0]));
    t.llm.assert_done();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_on_unproven_draft_the_best_candidate_opens_as_an_unproven_draft_on_gitlab() {
    let t = BotTester::gitlab().await;
    script(&t, WRONG_PY, BROKEN_PY);

    label(&t, "on_unproven = \"draft\"\n").await;

    let requests = t.change_requests(PROJECT);
    assert_eq!(requests.len(), 1, "{:#?}", t.comments(PROJECT, ISSUE));
    let request = &requests[0];
    assert!(request.title.contains("[unproven] "), "{}", request.title);
    assert!(request.draft, "an unproven change is a draft");
    // The body opens with why it is not proven: both candidates' evidence.
    insta::assert_snapshot!("unproven_draft_body_gitlab", stable(&request.body));
    assert!(!t.labels(PROJECT, ISSUE).contains(&FAILED_LABEL.to_owned()));
    t.llm.assert_done();
}
