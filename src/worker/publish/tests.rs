//! Stories about the texts the bot writes on a forge: the status comment, the change request
//! body and the refusals, most of them checked against a snapshot of the whole text.

use super::status::what_a_maintainer_can_do;
use super::*;
use crate::config::repo::ReproduceMode;
use crate::failure::{Failure, FailureCode, Stage};
use crate::forge::ForgeKind;
use crate::pipeline::checks::CheckRun;
use crate::pipeline::proof::{BaseFailure, MAX_FAILURE_LINE, Reproduction, TestOutcome};
use crate::pipeline::test_report::CommandReport;

fn command(name: &str, passed: bool, millis: u64) -> CommandReport {
    serde_json::from_value(serde_json::json!({
        "name": name,
        "command": ["cargo", name],
        "exit_code": if passed { 0 } else { 101 },
        "timed_out": false,
        "passed": passed,
        "duration_ms": millis,
        "warnings": 0,
        "output_truncated": false,
        "parser": null,
        "tests": null,
    }))
    .expect("a command report")
}

#[test]
fn a_running_job_shows_what_is_done_and_what_runs_now() {
    let view = StatusView {
        job: JobId(3),
        requested_by: "octocat".into(),
        forge: Some(ForgeKind::GitHub),
        done: vec![(Step::Authorized, String::new())],
        current: Some(Step::Fetched),
        notes: vec![],
        outcome: None,
        reproduction: None,
        detected: vec![],
        cost: None,
    };
    insta::assert_snapshot!(status_comment(&view));
}

#[test]
fn a_job_on_gitlab_names_the_merge_request_it_will_open() {
    let mut view = fixing_view(None);
    view.forge = Some(ForgeKind::GitLab);
    let text = status_comment(&view);
    assert!(text.contains("- [ ] Merge request opened\n"), "{text}");
    assert!(text.contains("no autofix MR yet"), "{text}");
    // A status saved before the forge was recorded keeps the word it had.
    view.forge = None;
    let text = status_comment(&view);
    assert!(text.contains("- [ ] Pull request opened\n"), "{text}");
}

#[test]
fn a_failed_job_says_where_why_and_how_to_retry() {
    let view = StatusView {
        job: JobId(4),
        requested_by: "octocat".into(),
        forge: Some(ForgeKind::GitHub),
        done: vec![
            (Step::Authorized, String::new()),
            (Step::Fetched, "`main` at 0123456".into()),
        ],
        current: Some(Step::Fixed),
        notes: vec!["No `.autofix.toml` on the default branch: the defaults apply.".into()],
        outcome: Some(StatusOutcome::Failed(FailureReport {
            failure: Failure {
                code: FailureCode::ValidationFailed,
                stage: Stage::Validate,
                reason: "`cargo test` failed".into(),
                output_tail: Some("test parse ... FAILED\n```\nnot a fence end".into()),
            },
            trigger_label: "auto-fix".into(),
            branch_kept: None,
        })),
        reproduction: None,
        detected: vec![],
        cost: Some(Cost {
            usd: 0.0123,
            tokens: 12_345,
            price_unknown: false,
        }),
    };
    let text = status_comment(&view);
    assert!(text.contains("\nCost: $0.0123 (12,345 tokens)\n"), "{text}");
    assert!(
        text.contains("````text"),
        "the fence outlasts the output's own: {text}"
    );
    insta::assert_snapshot!(text);
}

#[test]
fn the_body_carries_summary_fixes_files_validation_repairs_and_tokens() {
    let facts = ChangeRequestFacts {
        job: JobId(9),
        issue: 7,
        subject: "fix(lib): handle empty input in parse (#7)",
        plan_steps: &["Return an error for empty input".into()],
        changed_files: &["src/lib.rs".into()],
        validation: &[command("build", true, 840), command("test", true, 2_310)],
        checks: &[],
        repairs: 1,
        input_tokens: 1200,
        output_tokens: 300,
        notes: &[],
        reproduction: None,
        detected: &[],
        cost: Some(Cost {
            usd: 0.0,
            tokens: 1500,
            price_unknown: true,
        }),
        candidates: None,
        unproven: None,
    };
    let body = change_request_body(&facts);
    assert!(body.contains("Fixes #7"));
    assert!(
        body.contains("\nCost: price unknown (1,500 tokens)\n"),
        "{body}"
    );
    insta::assert_snapshot!(body);
}

fn pytest(failures: &[&str], passed: u64) -> CommandReport {
    let mut report = command("test", failures.is_empty(), 1_500);
    report.command = vec!["pytest".into(), "-q".into()];
    report.tests = Some(crate::pipeline::test_report::TestCounts {
        passed,
        failed: failures.len() as u64,
        skipped: 0,
        failures: failures.iter().map(|name| name.to_string()).collect(),
        ..Default::default()
    });
    report
}

#[test]
fn the_body_shows_the_checks_before_and_after_the_change() {
    use crate::pipeline::checks::{Relevance, compare};
    let base = CheckRun::new(
        pytest(&["test_legacy", "test_clamp", "test_race"], 7),
        Some(pytest(&["test_legacy", "test_clamp"], 8)),
    );
    let change = CheckRun::new(
        pytest(&["test_legacy"], 9),
        Some(pytest(&["test_legacy"], 9)),
    );
    let checks = [compare(Some(&base), change, &Relevance::default())];
    let facts = ChangeRequestFacts {
        job: JobId(9),
        issue: 7,
        subject: "fix(calc): clamp values to both ends of the range (#7)",
        plan_steps: &[],
        changed_files: &["calc.py".into()],
        validation: &[],
        checks: &checks,
        repairs: 0,
        input_tokens: 1200,
        output_tokens: 300,
        notes: &[],
        reproduction: None,
        detected: &[],
        cost: None,
        candidates: None,
        unproven: None,
    };
    let body = change_request_body(&facts);
    assert!(
        body.contains("| `pytest -q` | failed: 2 of 10 tests | failed: 1 of 10 tests, no worse |"),
        "{body}"
    );
    assert!(
        body.contains("**Already failing on the base commit**"),
        "{body}"
    );
    assert!(
        body.contains("**Fixed by this change** (failing on the base commit): `test_clamp`"),
        "{body}"
    );
    assert!(
        body.contains(
            "**Flaky** (failed, then passed on an immediate rerun of the same tree): `test_race`"
        ),
        "{body}"
    );
    insta::assert_snapshot!(body);
}

fn reproduction(change: Option<TestOutcome>) -> Reproduction {
    Reproduction {
        mode: ReproduceMode::Preferred,
        tests: vec!["test_clamp_low".into(), "test_clamp_high".into()],
        base: Some(TestOutcome::Failed),
        change,
        attempts: 1,
        failures: vec![
            BaseFailure {
                test: "test_clamp_low".into(),
                line: "assert clamp(-5, 0, 3) == 0 ` @alice </details> [x](http://e.vil)".into(),
            },
            BaseFailure {
                test: "test_clamp_high".into(),
                line: "y".repeat(MAX_FAILURE_LINE + 50),
            },
        ],
        files: vec!["test_calc.py".into()],
        unproven: None,
    }
}

fn facts_with<'a>(reproduction: Option<&'a Reproduction>) -> ChangeRequestFacts<'a> {
    ChangeRequestFacts {
        job: JobId(9),
        issue: 7,
        subject: "fix(calc): clamp values to both ends of the range (#7)",
        plan_steps: &[],
        changed_files: &[],
        validation: &[],
        checks: &[],
        repairs: 0,
        input_tokens: 1,
        output_tokens: 1,
        notes: &[],
        reproduction,
        detected: &[],
        cost: None,
        candidates: None,
        unproven: None,
    }
}

#[test]
fn the_body_names_the_chosen_candidate_and_says_plainly_when_a_change_is_not_proven() {
    let line = "3 candidates: #2 chosen — the only one that passes `t`; #1 breaks `u`";
    let chosen = change_request_body(&ChangeRequestFacts {
        candidates: Some(line),
        ..facts_with(None)
    });
    assert!(
        chosen.contains("## Candidates\n\n3 candidates: #&#8203;2 chosen"),
        "{chosen}"
    );
    assert!(!chosen.contains("Not proven"), "{chosen}");
    let unproven = change_request_body(&ChangeRequestFacts {
        candidates: Some(line),
        unproven: Some("no candidate passes `t`"),
        ..facts_with(None)
    });
    assert!(
        unproven.contains("## Not proven\n\n**This change is not proven to fix the issue:** no candidate passes `t`"),
        "{unproven}"
    );
}

#[test]
fn the_body_opens_with_the_proof_each_test_its_base_failure_and_the_change() {
    let reproduction = reproduction(Some(TestOutcome::Passed));
    let body = change_request_body(&facts_with(Some(&reproduction)));
    let subject = "fix(calc): clamp values to both ends of the range (#&#8203;7)\n\n";
    assert!(
        body.starts_with(&format!("{subject}## Proof\n\n- `test_clamp_low` failed")),
        "{body}"
    );
    assert!(
        body.contains(
            "- `test_clamp_low` failed on the base commit \
                 (``assert clamp(-5, 0, 3) == 0 ` @alice </details> [x](http://e.vil)``) \
                 and passes with this change\n"
        ),
        "the failure line stays inside its code span: {body}"
    );
    let cut = format!("{}…", "y".repeat(MAX_FAILURE_LINE - 1));
    assert!(
        body.contains(&format!(
            "- `test_clamp_high` failed on the base commit (`{cut}`) and passes with this change\n"
        )),
        "{body}"
    );
    assert!(!body.contains("Not proven"), "{body}");
    assert!(!body.contains("draft"), "{body}");
    insta::assert_snapshot!(body);
}

#[test]
fn the_body_without_a_reproduction_says_not_proven_and_why() {
    let missed = Reproduction::none(
        ReproduceMode::Preferred,
        2,
        "the test the model wrote passes on the base commit @bob",
    );
    let body = change_request_body(&facts_with(Some(&missed)));
    assert!(
        body.contains(
            "## Proof\n\n**Not proven:** no test reproduces the issue — the test the model \
                 wrote passes on the base commit @&#8203;bob\n"
        ),
        "{body}"
    );
    assert!(body.contains("It is opened as a draft"), "{body}");
    let off = Reproduction::none(
        ReproduceMode::Off,
        0,
        "reproduction is off in .autofix.toml",
    );
    let body = change_request_body(&facts_with(Some(&off)));
    assert!(
        body.contains(
            "**Not proven:** no test reproduces the issue — reproduction is off in .autofix.toml\n"
        ),
        "{body}"
    );
    assert!(!body.contains("draft"), "{body}");
}

#[test]
fn a_body_of_a_change_without_a_reproduction_record_says_nothing_of_proof() {
    let body = change_request_body(&facts_with(None));
    assert!(!body.contains("## Proof"), "{body}");
    assert!(!body.contains("Not proven"), "{body}");
    assert!(!body.contains("Reproduc"), "{body}");
}

fn fixing_view(reproduction: Option<ReproductionStatus>) -> StatusView {
    StatusView {
        job: JobId(3),
        requested_by: "octocat".into(),
        forge: Some(ForgeKind::GitHub),
        done: vec![
            (Step::Authorized, String::new()),
            (Step::Fetched, "`main` at 0123456".into()),
            (Step::Fixed, "1 command(s) passed, 0 repair(s)".into()),
        ],
        current: Some(Step::Pushed),
        notes: vec![],
        outcome: None,
        reproduction,
        detected: vec![],
        cost: None,
    }
}

#[test]
fn the_checklist_ticks_the_reproduction_with_its_tests_between_fetch_and_fix() {
    let status = ReproductionStatus::of(&reproduction(Some(TestOutcome::Passed)));
    let text = status_comment(&fixing_view(Some(status)));
    assert!(
        text.contains(
            "- [x] Repository fetched and `.autofix.toml` read from the default branch: `main` at 0123456\n\
                 - [x] Reproduced on the base commit: `test_clamp_low`, `test_clamp_high`\n\
                 - [x] Change written"
        ),
        "{text}"
    );
}

#[test]
fn the_checklist_marks_a_missed_reproduction_with_its_reason() {
    let missed = Reproduction::none(
        ReproduceMode::Preferred,
        2,
        "the test the model wrote passes on the base commit",
    );
    let text = status_comment(&fixing_view(Some(ReproductionStatus::of(&missed))));
    assert!(
        text.contains(
            "- [ ] Reproduced on the base commit: not reproduced — the test the model wrote \
                 passes on the base commit\n- [x] Change written"
        ),
        "{text}"
    );
}

#[test]
fn a_reproduction_not_tried_is_a_note_not_a_checklist_line() {
    let skipped = Reproduction::none(
        ReproduceMode::Preferred,
        0,
        "a `docs` change is not shown by a test",
    );
    let text = status_comment(&fixing_view(Some(ReproductionStatus::of(&skipped))));
    assert!(!text.contains("Reproduced on the base commit"), "{text}");
    assert!(
        text.contains(
            "\n> No test was asked to reproduce the issue first: a `docs` change is not \
                 shown by a test.\n"
        ),
        "{text}"
    );
    let before = status_comment(&fixing_view(None));
    assert!(!before.contains("eproduc"), "{before}");
}

#[test]
fn a_missing_reproduction_failure_says_what_a_maintainer_can_do() {
    let view = StatusView {
        done: vec![
            (Step::Authorized, String::new()),
            (Step::Fetched, "`main` at 0123456".into()),
        ],
        current: Some(Step::Fixed),
        outcome: Some(StatusOutcome::Failed(FailureReport {
            failure: Failure {
                code: FailureCode::ReproductionFailed,
                stage: Stage::Reproduce,
                reason: "the test the model wrote passes on the base commit".into(),
                output_tail: None,
            },
            trigger_label: "auto-fix".into(),
            branch_kept: None,
        })),
        ..fixing_view(Some(ReproductionStatus::NotReproduced {
            why: "the test the model wrote passes on the base commit".into(),
        }))
    };
    let text = status_comment(&view);
    assert!(
        text.contains(
            "**Failed at `reproduce` with `REPRODUCTION_FAILED`:** the test the model wrote \
                 passes on the base commit"
        ),
        "{text}"
    );
    assert!(
        text.contains("Describe in the issue the exact steps"),
        "{text}"
    );
    assert!(
        text.contains("`[reproduce] mode = \"preferred\"`"),
        "{text}"
    );
    assert!(
        text.contains("remove the `auto-fix` label and add it again"),
        "{text}"
    );
    insta::assert_snapshot!(text);
}

#[test]
fn other_failures_get_no_reproduction_advice() {
    assert_eq!(
        what_a_maintainer_can_do(FailureCode::ValidationFailed),
        None
    );
}

#[test]
fn each_refusal_is_one_polite_comment_naming_the_label() {
    let refusals = [
        Refusal::Bot {
            login: "dependabot[bot]".into(),
        },
        Refusal::NoPushRights {
            login: "stranger".into(),
            permission: "read".into(),
        },
        Refusal::Closed,
        Refusal::Locked,
        Refusal::AlreadyOpen {
            url: "https://github.com/o/r/pull/2".into(),
        },
    ];
    let all: Vec<String> = refusals
        .iter()
        .map(|refusal| refusal_comment(refusal, "auto-fix", JobId(5)))
        .collect();
    for text in &all {
        assert!(
            text.contains("`auto-fix`") || text.contains("already open"),
            "{text}"
        );
    }
    insta::assert_snapshot!(all.join("\n---\n"));
}
