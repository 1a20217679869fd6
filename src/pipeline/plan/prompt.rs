//! The planner's prompt, fitted to its budget (the issue, the triage, the map, what look-ups
//! showed), and the JSON Schema of the answer it must give.

use serde_json::json;

use super::{ANSWER, INTRO, LOOKUP, MAX_NEEDED_NAMES, STAGE, SUMMARY_MAX_CHARS};
use crate::llm::ResponseSchema;
use crate::pipeline::budget::{self, Keep, Part};
use crate::pipeline::issue::Issue;
use crate::pipeline::repo_map::{LookedUp, looked_up_parts, map_part};
use crate::pipeline::sections::{instructions_part, issue_part};
use crate::pipeline::triage::Triage;
use crate::quote::one_line;

/// The plan prompt within `budget_tokens`: the issue, the triage, the instructions, the
/// repository map (`map`, as rendered for the planner) and what earlier look-ups showed; while
/// `lookups_left` is above zero the planner may answer with names to see instead of a plan.
/// Should it not fit, the largest of the issue, the map and the look-ups are cut first; room is
/// left for a corrective round ([`budget::first_ask`]).
pub fn prompt(
    issue: &Issue,
    triage: &Triage,
    map: &str,
    looked_up: &[LookedUp],
    instructions: &str,
    lookups_left: usize,
    budget_tokens: usize,
) -> String {
    let mut parts = vec![
        Part::fixed(INTRO),
        issue_part(issue),
        Part::cuttable(triage_section(triage), Keep::Head, "the triage"),
        instructions_part(instructions),
        map_part(map),
    ];
    parts.extend(looked_up_parts(looked_up));
    let mut answer = format!("\n## Answer\n{ANSWER}");
    answer.push_str(&format!(
        "- The commit subject will read `{}(<scope>): <commit_summary>`.\n",
        triage.classification
    ));
    if lookups_left > 0 {
        answer.push_str(LOOKUP);
        answer.push_str(&format!(
            "  you may ask {lookups_left} more time{}, and should plan as soon as you can.\n",
            if lookups_left == 1 { "" } else { "s" }
        ));
    }
    parts.push(Part::fixed(answer));
    budget::fit(&parts, budget::first_ask(budget_tokens))
}

fn triage_section(triage: &Triage) -> String {
    let likely = if triage.affected_files.is_empty() {
        "(none named)".to_string()
    } else {
        let files: Vec<String> = triage.affected_files.iter().map(|f| one_line(f)).collect();
        files.join(", ")
    };
    format!(
        "\n## Triage\nKind: {}. Risk: {}. Likely files: {likely}.\n{}\n",
        triage.classification,
        triage.risk.as_str(),
        one_line(&triage.reason)
    )
}

/// The JSON Schema of the answer [`parse`] reads, sent to providers that enforce one.
/// With `may_ask`, `need` (names to look up) is allowed beside the plan.
///
/// [`parse`]: super::parse
pub fn schema(may_ask: bool) -> ResponseSchema {
    let text = json!({"type": "string"});
    let mut schema = ResponseSchema {
        name: STAGE.as_str().into(),
        schema: json!({
            "type": "object",
            "properties": {
                "plan_steps": {"type": "array", "items": text},
                "file_changes": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "properties": {
                            "path": text,
                            "operation": {"type": "string", "enum": ["CREATE", "MODIFY", "DELETE"]},
                            "line_range": {
                                "type": "array",
                                "items": {"type": "integer", "minimum": 1},
                                "minItems": 2,
                                "maxItems": 2
                            }
                        },
                        "required": ["path", "operation"]
                    }
                },
                "commit_summary": {"type": "string", "maxLength": SUMMARY_MAX_CHARS},
                "scope": text,
                "branch_name": text
            },
            "required": ["file_changes"]
        }),
    };
    if may_ask {
        schema.schema["properties"]["need"] = json!({
            "type": "array",
            "items": {"type": "string"},
            "maxItems": MAX_NEEDED_NAMES
        });
    }
    schema
}
