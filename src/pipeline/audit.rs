//! Audit: a strict-JSON review of the finished change (coder-workflow.md's reviewer) that can
//! send the work back with must-fix items; it cannot accept a change whose validation failed.

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::StageOutputError;
use super::answer::{self, Fields};
use super::budget::{Keep, Part, first_ask, fit};
use super::checks::{Comparison, Judgement, Verdict};
use super::issue::Issue;
use super::plan::Plan;
use super::prompts::plan_part;
use super::sections::issue_part;
use super::test_report::CommandReport;
use crate::failure::Stage;
use crate::llm::ResponseSchema;
use crate::quote::one_line;

const INTRO: &str = include_str!("prompts/audit.md");
const ANSWER: &str = include_str!("prompts/audit_answer.md");

const STAGE: Stage = Stage::Audit;

/// Failing test names shown per command; the rest are counted.
const MAX_FAILURES_SHOWN: usize = 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    Accepted,
    Rejected,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Review {
    pub decision: Decision,
    pub reasons: Vec<String>,
    pub must_fixes: Vec<String>,
    pub nice_to_haves: Vec<String>,
}

impl Review {
    /// Whether the change may be committed: the reviewer accepted it AND no validation
    /// command is worse than on the base commit. The model's word never outweighs a red report.
    pub fn accepts(&self, judgement: &Judgement) -> bool {
        self.decision == Decision::Accepted && judgement.acceptable()
    }
}

/// The review prompt within `budget_tokens`: the issue, the plan, the unified diff of the
/// change, the test report (with what already failed on the base commit). Should it not fit,
/// the largest of the issue, the report and the diff are cut first, each from its end; room is
/// left for a corrective round ([`first_ask`]).
pub fn prompt(
    issue: &Issue,
    plan: &Plan,
    diff: &str,
    judgement: &Judgement,
    budget_tokens: usize,
) -> String {
    let change = if diff.trim().is_empty() {
        Part::fixed("\n## The change\n(The diff is empty: nothing was changed.)\n")
    } else {
        Part::fenced(diff, Keep::Head, "the diff")
            .fence_info("diff")
            .before("\n## The change\n")
    };
    let parts = [
        Part::fixed(INTRO),
        issue_part(issue),
        plan_part(plan),
        Part::fixed(format!(
            "\nCommit summary: {}\n",
            one_line(&plan.commit_summary)
        )),
        Part::cuttable(report_section(judgement), Keep::Head, "the test report"),
        change,
        Part::fixed(format!("\n## Answer\n{ANSWER}")),
    ];
    fit(&parts, first_ask(budget_tokens))
}

fn report_section(judgement: &Judgement) -> String {
    let mut section = String::from("\n## Validation\n");
    if judgement.comparisons.is_empty() {
        section.push_str("(The repository configures no validation commands.)\n");
        return section;
    }
    for comparison in &judgement.comparisons {
        section.push_str(&describe_command(comparison.change.last()));
        section.push_str(&against_the_base(comparison));
    }
    if !judgement.acceptable() {
        section.push_str("Validation FAILED: this change cannot be accepted.\n");
    }
    section
}

/// What the base commit says about a command's result: failures it already had, tests the
/// change fixed, tests that flaked.
fn against_the_base(comparison: &Comparison) -> String {
    let mut lines = String::new();
    if comparison.verdict == Verdict::NoWorse {
        lines.push_str(&format!(
            "  already failing on the base commit, not caused by this change: {}\n",
            names(&comparison.still_failing)
        ));
    }
    if !comparison.fixed.is_empty() {
        lines.push_str(&format!(
            "  failing on the base commit, passing with this change: {}\n",
            names(&comparison.fixed)
        ));
    }
    if !comparison.flaky.is_empty() {
        lines.push_str(&format!(
            "  flaky (failed, then passed on an immediate rerun): {}\n",
            names(&comparison.flaky)
        ));
    }
    lines
}

/// Test names as the repository's own reports give them, each kept on its line.
fn names(names: &[String]) -> String {
    names
        .iter()
        .map(|name| one_line(name))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `- test (`cargo test`): passed; tests: 12 passed, 0 failed, 1 skipped`, then failing names.
fn describe_command(command: &CommandReport) -> String {
    let argv = shlex::try_join(command.command.iter().map(String::as_str))
        .unwrap_or_else(|_| command.command.join(" "));
    let verdict = if command.passed {
        "passed".to_string()
    } else if command.timed_out {
        "FAILED (timed out)".to_string()
    } else {
        match command.exit_code {
            Some(code) => format!("FAILED (exit code {code})"),
            None => "FAILED".to_string(),
        }
    };
    let mut line = format!(
        "- {} (`{}`): {verdict}",
        one_line(&command.name),
        one_line(&argv)
    );
    if let Some(tests) = &command.tests {
        line.push_str(&format!(
            "; tests: {} passed, {} failed, {} skipped",
            tests.passed, tests.failed, tests.skipped
        ));
        if !tests.failures.is_empty() {
            let shown = names(&tests.failures[..tests.failures.len().min(MAX_FAILURES_SHOWN)]);
            line.push_str(&format!("\n  failing: {shown}"));
            if tests.failures.len() > MAX_FAILURES_SHOWN {
                line.push_str(&format!(
                    " and {} more",
                    tests.failures.len() - MAX_FAILURES_SHOWN
                ));
            }
        }
    }
    line.push('\n');
    line
}

/// The JSON Schema of the answer [`parse`] reads, sent to providers that enforce one.
pub fn schema() -> ResponseSchema {
    let texts = json!({"type": "array", "items": {"type": "string"}});
    ResponseSchema {
        name: STAGE.as_str().into(),
        schema: json!({
            "type": "object",
            "properties": {
                "decision": {"type": "string", "enum": ["accepted", "rejected"]},
                "reasons": texts,
                "must_fixes": texts,
                "nice_to_haves": texts
            },
            "required": ["decision"]
        }),
    }
}

/// Reads the review's `decision`; `reasons`, `must_fixes` and `nice_to_haves` may be left out.
///
/// A rejection must say what to fix: in `must_fixes`, or else its `reasons` stand in for them.
/// An acceptance that still lists must-fix items is taken as the rejection it amounts to.
/// `decision` is read without regard to case.
pub fn parse(text: &str) -> Result<Review, StageOutputError> {
    let object = answer::object(STAGE, text)?;
    let fields = Fields::new(STAGE, &object);
    let mut decision = fields.one_of(
        "decision",
        &[
            ("accepted", Decision::Accepted),
            ("rejected", Decision::Rejected),
        ],
    )?;
    let reasons = fields.optional_texts("reasons")?;
    let mut must_fixes = fields.optional_texts("must_fixes")?;
    let nice_to_haves = fields.optional_texts("nice_to_haves")?;
    if !must_fixes.is_empty() {
        decision = Decision::Rejected;
    }
    if decision == Decision::Rejected && must_fixes.is_empty() {
        if reasons.is_empty() {
            return Err(fields.error(format!(
                "a rejection must say what to fix: {} (or at least \"reasons\") must list an item",
                fields.name("must_fixes")
            )));
        }
        must_fixes = reasons.clone();
    }
    Ok(Review {
        decision,
        reasons,
        must_fixes,
        nice_to_haves,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::checks::{self, CheckRun};
    use crate::pipeline::test_report::{TestCounts, TestReport};

    const ACCEPTED: &str = r#"{"decision": "accepted", "reasons": ["Resolves the issue."],
        "must_fixes": [], "nice_to_haves": ["A doc comment would help."]}"#;
    const REJECTED: &str = r#"{"decision": "rejected", "reasons": ["Still panics."],
        "must_fixes": ["src/parser.rs: trim before the check"], "nice_to_haves": []}"#;

    fn error(text: &str) -> String {
        parse(text).unwrap_err().to_string()
    }

    fn with(key: &str, value: Option<&str>) -> String {
        let mut object: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(REJECTED).unwrap();
        match value {
            Some(value) => object.insert(key.into(), serde_json::from_str(value).unwrap()),
            None => object.remove(key),
        };
        serde_json::Value::Object(object).to_string()
    }

    #[test]
    fn an_acceptance_and_a_rejection_are_read_bare_or_in_a_fence() {
        let accepted = parse(ACCEPTED).unwrap();
        assert_eq!(accepted.decision, Decision::Accepted);
        assert_eq!(accepted.nice_to_haves, ["A doc comment would help."]);
        let rejected = parse(&format!("```json\n{REJECTED}\n```")).unwrap();
        assert_eq!(
            rejected,
            Review {
                decision: Decision::Rejected,
                reasons: vec!["Still panics.".into()],
                must_fixes: vec!["src/parser.rs: trim before the check".into()],
                nice_to_haves: vec![],
            }
        );
    }

    #[test]
    fn unknown_fields_are_tolerated_and_the_decision_is_read_in_any_case() {
        let answer = with("score", Some("7")).replace("\"rejected\"", "\"REJECTED\"");
        assert_eq!(parse(&answer).unwrap().decision, Decision::Rejected);
    }

    #[test]
    fn chatter_and_invalid_json_are_refused() {
        assert_eq!(
            error(&format!("LGTM!\n{ACCEPTED}")),
            "audit: the answer must be one JSON object and nothing else (one code fence \
             allowed), but it starts with \"LGTM!\""
        );
        assert_eq!(
            error(r#"{"decision": accepted}"#),
            "audit: the answer is not valid JSON: expected value at line 1 column 14"
        );
    }

    #[test]
    fn the_schema_says_what_the_parser_reads() {
        let full: serde_json::Value = serde_json::from_str(REJECTED).unwrap();
        crate::pipeline::json_stage::assert_schema_matches_parser(&schema().schema, &full, parse);
    }

    #[test]
    fn only_the_decision_is_required() {
        assert_eq!(
            error(&with("decision", None)),
            "audit: \"decision\" is missing"
        );
        let accepted = parse(r#"{"decision": "accepted"}"#).unwrap();
        assert_eq!(accepted.decision, Decision::Accepted);
        assert!(accepted.reasons.is_empty() && accepted.must_fixes.is_empty());
    }

    #[test]
    fn mistyped_fields_are_refused() {
        let cases = [
            (
                "decision",
                "\"approved\"",
                "\"decision\" must be one of accepted, rejected, not \"approved\"",
            ),
            (
                "decision",
                "true",
                "\"decision\" must be one of accepted, rejected, not true",
            ),
            (
                "reasons",
                "\"fine\"",
                "\"reasons\" must be a list of strings, not \"fine\"",
            ),
            (
                "must_fixes",
                "[\"\"]",
                "\"must_fixes[0]\" must not be empty",
            ),
            (
                "nice_to_haves",
                "[null]",
                "\"nice_to_haves[0]\" must be a string, not null",
            ),
        ];
        for (key, value, message) in cases {
            assert_eq!(
                error(&with(key, Some(value))),
                format!("audit: {message}"),
                "{key} = {value}"
            );
        }
    }

    #[test]
    fn a_rejection_without_must_fixes_sends_its_reasons_back_and_without_either_is_refused() {
        let review = parse(&with("must_fixes", Some("[]"))).unwrap();
        assert_eq!(review.must_fixes, ["Still panics."]);
        let bare = r#"{"decision": "rejected", "must_fixes": [], "reasons": []}"#;
        assert_eq!(
            error(bare),
            "audit: a rejection must say what to fix: \"must_fixes\" (or at least \"reasons\") \
             must list an item"
        );
    }

    #[test]
    fn an_acceptance_that_lists_must_fixes_is_a_rejection() {
        let answer = ACCEPTED.replace("\"must_fixes\": []", "\"must_fixes\": [\"x\"]");
        let review = parse(&answer).unwrap();
        assert_eq!(review.decision, Decision::Rejected);
        assert_eq!(review.must_fixes, ["x"]);
    }

    fn judgement(passed: bool) -> Judgement {
        let run = CheckRun::new(report(passed).commands[0].clone(), None);
        Judgement {
            comparisons: vec![checks::compare(None, run, &Default::default())],
        }
    }

    fn report(passed: bool) -> TestReport {
        TestReport {
            commands: vec![CommandReport {
                name: "test".into(),
                command: vec!["cargo".into(), "test".into()],
                exit_code: Some(if passed { 0 } else { 101 }),
                timed_out: false,
                passed,
                duration_ms: 1200,
                warnings: 0,
                output_truncated: false,
                parser: Some("cargo-test".into()),
                tests: Some(TestCounts {
                    passed: 3,
                    failed: u64::from(!passed),
                    skipped: 0,
                    failures: if passed {
                        vec![]
                    } else {
                        vec!["parse_empty".into()]
                    },
                    ..TestCounts::default()
                }),
            }],
        }
    }

    #[test]
    fn the_example_in_the_prompt_is_an_answer_we_accept() {
        let example = super::ANSWER.lines().find(|l| l.starts_with('{')).unwrap();
        assert_eq!(parse(example).unwrap().decision, Decision::Rejected);
    }

    #[test]
    fn an_acceptance_does_not_outweigh_a_failed_validation() {
        let accepted = parse(ACCEPTED).unwrap();
        assert!(accepted.accepts(&judgement(true)));
        assert!(!accepted.accepts(&judgement(false)));
        assert!(!parse(REJECTED).unwrap().accepts(&judgement(true)));
    }

    #[test]
    fn a_failure_already_on_the_base_is_named_as_such_to_the_reviewer() {
        let base = CheckRun::new(report(false).commands[0].clone(), None);
        let change = CheckRun::new(report(false).commands[0].clone(), None);
        let comparison = checks::compare(Some(&base), change, &Default::default());
        assert_eq!(
            against_the_base(&comparison),
            "  already failing on the base commit, not caused by this change: parse_empty\n"
        );
        let judgement = Judgement {
            comparisons: vec![comparison],
        };
        assert!(parse(ACCEPTED).unwrap().accepts(&judgement));
        assert!(!report_section(&judgement).contains("Validation FAILED"));
    }

    #[test]
    fn a_command_is_described_with_its_verdict_counts_and_failures() {
        assert_eq!(
            describe_command(&report(false).commands[0]),
            "- test (`cargo test`): FAILED (exit code 101); tests: 3 passed, 1 failed, 0 skipped\n  failing: parse_empty\n"
        );
        let mut timed_out = report(false).commands[0].clone();
        timed_out.timed_out = true;
        timed_out.tests = None;
        timed_out.command = vec!["sh".into(), "-c".into(), "sleep 9; echo hi".into()];
        assert_eq!(
            describe_command(&timed_out),
            "- test (`sh -c 'sleep 9; echo hi'`): FAILED (timed out)\n"
        );
    }

    #[test]
    fn many_failing_tests_are_counted_past_the_first_twenty() {
        let mut command = report(false).commands[0].clone();
        command.tests.as_mut().unwrap().failures = (0..25).map(|i| format!("t{i}")).collect();
        let line = describe_command(&command);
        assert!(line.contains("t19 and 5 more\n"), "{line}");
        assert!(!line.contains("t20"));
    }
}
