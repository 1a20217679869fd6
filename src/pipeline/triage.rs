//! Triage: is the issue actionable, what kind of change is it, how risky, which files does it
//! likely touch. The model answers strict JSON (code-agent-contract.md's `triage_result`).

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::StageOutputError;
use super::answer::{self, Fields};
use super::budget::{Part, first_ask, fit};
use super::issue::Issue;
use super::repo_map::map_part;
use super::sections::{instructions_part, issue_part};
use crate::failure::Stage;
use crate::git::CommitKind;
use crate::llm::ResponseSchema;

const INTRO: &str = include_str!("prompts/triage.md");
const ANSWER: &str = include_str!("prompts/triage_answer.md");

const STAGE: Stage = Stage::Triage;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Risk {
    Low,
    Medium,
    High,
}

impl Risk {
    pub fn as_str(self) -> &'static str {
        match self {
            Risk::Low => "LOW",
            Risk::Medium => "MEDIUM",
            Risk::High => "HIGH",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Triage {
    pub actionable: bool,
    /// fix | feat | docs | chore | refactor
    pub classification: CommitKind,
    pub risk: Risk,
    pub affected_files: Vec<String>,
    /// Why (especially when not actionable).
    pub reason: String,
}

/// The triage prompt within `budget_tokens`: the issue, the instructions files, and the
/// repository map (`map`, as [`repo_map_section`](super::repo_map::repo_map_section) renders
/// it), the issue and the map cut first should they not fit; room is left for a corrective
/// round ([`first_ask`]).
pub fn prompt(issue: &Issue, map: &str, instructions: &str, budget_tokens: usize) -> String {
    let parts = [
        Part::fixed(INTRO),
        issue_part(issue),
        instructions_part(instructions),
        map_part(map),
        Part::fixed(format!("\n## Answer\n{ANSWER}")),
    ];
    fit(&parts, first_ask(budget_tokens))
}

/// The share of the triage budget its repository map is built within.
pub fn map_tokens(budget_tokens: usize) -> usize {
    budget_tokens / 2
}

/// What the reason of a refusal says when the model gave none.
pub const NO_REASON: &str = "the model gave no reason";

/// Reads what the pipeline acts on, `actionable` and `classification`; the fields that only
/// explain (`risk`, `affected_files`, `reason`) may be left out or `null` (risk then MEDIUM).
/// Tolerates unknown fields and one code fence; enumerations are read without regard to case.
pub fn parse(text: &str) -> Result<Triage, StageOutputError> {
    let object = answer::object(STAGE, text)?;
    let fields = Fields::new(STAGE, &object);
    let actionable = fields.bool("actionable")?;
    let classification = fields.one_of("classification", &commit_kinds())?;
    let risk = fields.optional_one_of(
        "risk",
        &[
            ("LOW", Risk::Low),
            ("MEDIUM", Risk::Medium),
            ("HIGH", Risk::High),
        ],
        Risk::Medium,
    )?;
    let affected_files = fields.optional_texts("affected_files")?;
    let mut reason = fields
        .optional_string("reason")?
        .unwrap_or_default()
        .trim()
        .to_string();
    if !actionable && reason.is_empty() {
        reason = NO_REASON.to_string();
    }
    Ok(Triage {
        actionable,
        classification,
        risk,
        affected_files,
        reason,
    })
}

/// The JSON Schema of the answer [`parse`] reads, sent to providers that enforce one.
pub fn schema() -> ResponseSchema {
    let kinds: Vec<&str> = commit_kinds().iter().map(|(name, _)| *name).collect();
    ResponseSchema {
        name: STAGE.as_str().into(),
        schema: json!({
            "type": "object",
            "properties": {
                "actionable": {"type": "boolean"},
                "classification": {"type": "string", "enum": kinds},
                "risk": {"type": "string", "enum": ["LOW", "MEDIUM", "HIGH"]},
                "affected_files": {"type": "array", "items": {"type": "string"}},
                "reason": {"type": "string"}
            },
            "required": ["actionable", "classification"]
        }),
    }
}

/// The contract's order: fix, feat, docs, chore, refactor.
fn commit_kinds() -> [(&'static str, CommitKind); 5] {
    [
        CommitKind::Fix,
        CommitKind::Feat,
        CommitKind::Docs,
        CommitKind::Chore,
        CommitKind::Refactor,
    ]
    .map(|kind| (kind.as_str(), kind))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ANSWER: &str = r#"{"actionable": true, "classification": "fix", "risk": "LOW",
        "affected_files": ["src/parser.rs"], "reason": "A length check is missing."}"#;

    fn error(text: &str) -> String {
        parse(text).unwrap_err().to_string()
    }

    /// The documented answer with one field replaced (or removed, with `None`).
    fn with(key: &str, value: Option<&str>) -> String {
        let mut object: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(ANSWER).unwrap();
        match value {
            Some(value) => object.insert(key.into(), serde_json::from_str(value).unwrap()),
            None => object.remove(key),
        };
        serde_json::Value::Object(object).to_string()
    }

    fn expected() -> Triage {
        Triage {
            actionable: true,
            classification: CommitKind::Fix,
            risk: Risk::Low,
            affected_files: vec!["src/parser.rs".into()],
            reason: "A length check is missing.".into(),
        }
    }

    #[test]
    fn the_documented_answer_is_read_bare_or_in_a_fence() {
        assert_eq!(parse(ANSWER).unwrap(), expected());
        assert_eq!(
            parse(&format!("```json\n{ANSWER}\n```")).unwrap(),
            expected()
        );
        assert_eq!(parse(&format!("```\n{ANSWER}\n```")).unwrap(), expected());
    }

    #[test]
    fn the_example_in_the_prompt_is_an_answer_we_accept() {
        let example = super::ANSWER.lines().find(|l| l.starts_with('{')).unwrap();
        assert_eq!(parse(example).unwrap().classification, CommitKind::Fix);
    }

    #[test]
    fn the_schema_says_what_the_parser_reads() {
        let full: serde_json::Value = serde_json::from_str(ANSWER).unwrap();
        crate::pipeline::json_stage::assert_schema_matches_parser(&schema().schema, &full, parse);
    }

    #[test]
    fn unknown_fields_are_tolerated() {
        let answer = with("confidence", Some("0.9"));
        assert_eq!(parse(&answer).unwrap(), expected());
    }

    #[test]
    fn risk_and_classification_are_read_in_any_case() {
        let answer = with("risk", Some("\"medium\""));
        assert_eq!(parse(&answer).unwrap().risk, Risk::Medium);
        let answer = with("classification", Some("\"Refactor\""));
        assert_eq!(parse(&answer).unwrap().classification, CommitKind::Refactor);
    }

    #[test]
    fn chatter_around_the_answer_is_refused() {
        assert_eq!(
            error(&format!("Here you go:\n{ANSWER}")),
            "triage: the answer must be one JSON object and nothing else (one code fence \
             allowed), but it starts with \"Here you go:\""
        );
    }

    #[test]
    fn invalid_json_is_refused() {
        assert_eq!(
            error(r#"{"actionable": true"#),
            "triage: the answer is not valid JSON: EOF while parsing an object at line 1 column 19"
        );
    }

    #[test]
    fn each_missing_field_the_pipeline_acts_on_is_named() {
        for key in ["actionable", "classification"] {
            assert_eq!(
                error(&with(key, None)),
                format!("triage: \"{key}\" is missing")
            );
        }
    }

    #[test]
    fn fields_that_only_explain_may_be_left_out_or_null() {
        let answer = r#"{"actionable": true, "classification": "fix", "risk": null}"#;
        let triage = parse(answer).unwrap();
        assert_eq!(triage.risk, Risk::Medium);
        assert_eq!(triage.affected_files, Vec::<String>::new());
        assert_eq!(triage.reason, "");
        let refusal = parse(r#"{"actionable": false, "classification": "chore"}"#).unwrap();
        assert_eq!(refusal.reason, NO_REASON);
    }

    #[test]
    fn mistyped_fields_are_named_with_what_was_expected() {
        let cases = [
            (
                "actionable",
                "\"yes\"",
                "\"actionable\" must be true or false, not \"yes\"",
            ),
            (
                "classification",
                "\"bugfix\"",
                "\"classification\" must be one of fix, feat, docs, chore, refactor, not \"bugfix\"",
            ),
            (
                "risk",
                "\"urgent\"",
                "\"risk\" must be one of LOW, MEDIUM, HIGH, not \"urgent\"",
            ),
            (
                "risk",
                "3",
                "\"risk\" must be one of LOW, MEDIUM, HIGH, not 3",
            ),
            (
                "affected_files",
                "\"src/a.rs\"",
                "\"affected_files\" must be a list of strings, not \"src/a.rs\"",
            ),
            (
                "affected_files",
                "[\"src/a.rs\", 2]",
                "\"affected_files[1]\" must be a string, not 2",
            ),
            ("reason", "3", "\"reason\" must be a string, not 3"),
        ];
        for (key, value, message) in cases {
            assert_eq!(
                error(&with(key, Some(value))),
                format!("triage: {message}"),
                "{key} = {value}"
            );
        }
    }

    #[test]
    fn a_not_actionable_issue_without_a_reason_says_the_model_gave_none() {
        let answer = with("actionable", Some("false")).replace("A length check is missing.", " ");
        assert_eq!(parse(&answer).unwrap().reason, NO_REASON);
    }

    #[test]
    fn the_prompt_shows_the_issue_the_map_and_the_contract() {
        let issue = Issue {
            number: Some(3),
            title: "Crash".into(),
            body: "Boom".into(),
            labels: vec!["bug".into()],
        };
        let map = "\n## Repository map\nsrc/lib.rs\n  1: pub fn run()\n";
        let prompt = prompt(&issue, map, "Use tabs.", 7_500);
        assert!(prompt.contains("## Issue #3: Crash\nLabels: bug\n```\nBoom\n```\n"));
        assert!(prompt.contains(map));
        assert!(prompt.contains("Use tabs."));
        assert!(prompt.contains("\"classification\": \"fix\""));
    }
}
