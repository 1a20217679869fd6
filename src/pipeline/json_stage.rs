//! The rules of a stage whose answer is JSON: its output-token cap, what makes an answer
//! unusable (unreadable or cut off at the cap), and the one corrective prompt that follows.

use serde::Serialize;

use super::StageOutputError;
use crate::config::LlmSection;
use crate::failure::{FailureCode, Stage};
use crate::llm::ResponseSchema;
use crate::quote::fenced;

/// How much of an unusable answer the corrective prompt quotes.
const QUOTED_CHARS: usize = 300;
/// Bytes per token when sizing an edit's cap from file sizes (code runs 3-4).
const BYTES_PER_TOKEN: u64 = 3;
/// Room for the edit format's markers and any prose, on top of the files.
const EDIT_OVERHEAD_TOKENS: u64 = 1024;

/// The output-token cap sent with each stage's requests. Triage, plan and review answer in a
/// few hundred tokens; an edit may rewrite its files whole, so its cap follows their size up to
/// `edit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct OutputCaps {
    pub triage: u32,
    pub plan: u32,
    pub audit: u32,
    /// The most an edit (or repair) answer may use, however large its files.
    pub edit: u32,
}

impl Default for OutputCaps {
    fn default() -> Self {
        OutputCaps {
            triage: 1024,
            plan: 2048,
            audit: 1024,
            edit: 16_384,
        }
    }
}

impl OutputCaps {
    /// The caps the service configuration's `llm.max_output_tokens_*` keys set; 0 is taken as 1.
    pub fn from_config(llm: &LlmSection) -> OutputCaps {
        OutputCaps {
            triage: llm.max_output_tokens_triage.max(1),
            plan: llm.max_output_tokens_plan.max(1),
            audit: llm.max_output_tokens_audit.max(1),
            edit: llm.max_output_tokens_edit.max(1),
        }
    }

    /// An edit's cap: the planned files' size in tokens, one and a half times (a whole-file
    /// rewrite plus growth), plus room for markers; at least 1024 tokens, at most `edit`.
    pub fn edit_for(&self, planned_bytes: u64) -> u32 {
        let files = planned_bytes.div_ceil(BYTES_PER_TOKEN);
        let wanted = files + files / 2 + EDIT_OVERHEAD_TOKENS;
        // The operator's cap wins over the floor: a configured cap below it is not a panic.
        u32::try_from(wanted)
            .unwrap_or(u32::MAX)
            .max(EDIT_OVERHEAD_TOKENS as u32)
            .min(self.edit.max(1))
    }
}

/// Why an answer cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// It is not the JSON the stage reads: the parser's one-line reason.
    Unreadable(StageOutputError),
    /// It stopped at the output-token cap (`finish_reason` `length`, `MAX_TOKENS`, `max_tokens`).
    CutOff { cap: u32, finish_reason: String },
}

impl Problem {
    /// The failure code and reason when the corrective round did not help either.
    pub fn failure(&self, stage: Stage, cap_key: &str) -> (FailureCode, String) {
        match self {
            Problem::Unreadable(error) => (
                FailureCode::LlmOutputInvalid,
                format!("{error} (also after the model was told so and asked once more)"),
            ),
            Problem::CutOff { cap, finish_reason } => (
                FailureCode::LlmOutputTruncated,
                format!(
                    "{stage}: the answer was cut off at the {cap}-token output cap (finish \
                     reason `{finish_reason}`), twice; raise `{cap_key}` or use a model that \
                     answers more briefly"
                ),
            ),
        }
    }

    /// The one line the run log gets.
    pub fn describe(&self) -> String {
        match self {
            Problem::Unreadable(error) => error.to_string(),
            Problem::CutOff { cap, finish_reason } => {
                format!("cut off at the {cap}-token cap (finish reason `{finish_reason}`)")
            }
        }
    }
}

/// The prompt of the corrective round: the original prompt, then what was wrong with the
/// answer (quoting its start) and the schema the answer must follow.
pub fn corrective_prompt(
    prompt: &str,
    problem: &Problem,
    answer: &str,
    schema: &ResponseSchema,
) -> String {
    let mut text = String::from(prompt);
    text.push_str("\n\n## Your previous answer could not be used\n");
    match problem {
        Problem::Unreadable(error) => {
            text.push_str(&format!("The problem: {}.\n", error.message));
        }
        Problem::CutOff { cap, .. } => text.push_str(&format!(
            "It was cut off after {cap} tokens, before the JSON object was complete. Answer \
             more briefly: short strings, no repetition.\n"
        )),
    }
    text.push_str("It began:\n");
    text.push_str(&fenced("", &quote_start(answer)));
    let schema_text =
        serde_json::to_string_pretty(&schema.schema).unwrap_or_else(|_| schema.schema.to_string());
    text.push_str(&format!(
        "\nAnswer again with exactly one JSON object and nothing before or after it, following \
         this JSON Schema:\n```json\n{schema_text}\n```\n"
    ));
    text
}

fn quote_start(answer: &str) -> String {
    let answer = answer.trim();
    if answer.is_empty() {
        return "(nothing)".to_string();
    }
    let mut start: String = answer.chars().take(QUOTED_CHARS).collect();
    if answer.chars().count() > QUOTED_CHARS {
        start.push('…');
    }
    start
}

/// Checks that a stage's schema says what its parser reads: `full` (an answer with every
/// property) parses; leaving out a property fails exactly when the schema requires it; every
/// value an `enum` allows parses.
#[cfg(test)]
pub(super) fn assert_schema_matches_parser<T>(
    schema: &serde_json::Value,
    full: &serde_json::Value,
    parse: impl Fn(&str) -> Result<T, StageOutputError>,
) {
    let properties = schema["properties"].as_object().expect("an object schema");
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|names| names.iter().filter_map(|name| name.as_str()).collect())
        .unwrap_or_default();
    let answer = full.as_object().expect("an object answer");
    let mut names: Vec<&String> = answer.keys().collect();
    names.sort();
    let mut listed: Vec<&String> = properties.keys().collect();
    listed.sort();
    assert_eq!(
        names, listed,
        "the full answer has every property of the schema"
    );
    assert!(parse(&full.to_string()).is_ok(), "the full answer parses");
    for name in properties.keys() {
        let mut without = answer.clone();
        without.remove(name);
        let parsed = parse(&serde_json::Value::Object(without).to_string());
        assert_eq!(
            parsed.is_err(),
            required.contains(&name.as_str()),
            "leaving out {name:?} fails exactly when the schema requires it"
        );
    }
    for (name, property) in properties {
        for value in property["enum"].as_array().into_iter().flatten() {
            let mut with = answer.clone();
            with.insert(name.clone(), value.clone());
            assert!(
                parse(&serde_json::Value::Object(with).to_string()).is_ok(),
                "{name} = {value} parses"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> ResponseSchema {
        ResponseSchema {
            name: "plan".into(),
            schema: serde_json::json!({"type": "object", "required": ["file_changes"]}),
        }
    }

    #[test]
    fn the_corrective_prompt_names_the_problem_quotes_the_answer_and_gives_the_schema() {
        let problem = Problem::Unreadable(StageOutputError::new(
            Stage::Plan,
            "\"file_changes\" is missing",
        ));
        let text = corrective_prompt("PROMPT", &problem, "{\"plan_steps\": []}", &schema());
        assert!(text.starts_with("PROMPT\n\n## Your previous answer could not be used\n"));
        assert!(text.contains("The problem: \"file_changes\" is missing.\n"));
        assert!(text.contains("It began:\n```\n{\"plan_steps\": []}\n```\n"));
        assert!(text.contains("\"required\": [\n    \"file_changes\"\n  ]"));
    }

    #[test]
    fn a_long_answer_is_quoted_by_its_start_and_fences_in_it_cannot_close_the_quote() {
        let answer = format!("```json\n{}", "x".repeat(1000));
        let problem = Problem::CutOff {
            cap: 1024,
            finish_reason: "length".into(),
        };
        let text = corrective_prompt("P", &problem, &answer, &schema());
        assert!(text.contains("It was cut off after 1024 tokens"));
        assert!(text.contains("It began:\n````\n```json\nxxx"), "{text}");
        assert!(text.contains("x…\n````\n"), "{text}");
    }

    #[test]
    fn the_final_failure_tells_a_cut_off_answer_from_an_unreadable_one() {
        let cut = Problem::CutOff {
            cap: 512,
            finish_reason: "MAX_TOKENS".into(),
        };
        let (code, reason) = cut.failure(Stage::Triage, "llm.max_output_tokens_triage");
        assert_eq!(code, FailureCode::LlmOutputTruncated);
        assert!(reason.contains("512-token output cap (finish reason `MAX_TOKENS`)"));
        assert!(reason.contains("`llm.max_output_tokens_triage`"));
        let unreadable =
            Problem::Unreadable(StageOutputError::new(Stage::Triage, "\"x\" is missing"));
        assert_eq!(
            unreadable.failure(Stage::Triage, "k").0,
            FailureCode::LlmOutputInvalid
        );
    }

    #[test]
    fn an_edit_cap_follows_the_files_between_a_floor_and_the_configured_most() {
        let caps = OutputCaps::default();
        assert_eq!(caps.edit_for(0), 1024);
        assert_eq!(caps.edit_for(3_000), 1_000 + 500 + 1024);
        assert_eq!(caps.edit_for(10_000_000), caps.edit);
        let small = OutputCaps {
            edit: 512,
            ..OutputCaps::default()
        };
        assert_eq!(small.edit_for(0), 512, "a cap below the floor is the cap");
        assert_eq!(small.edit_for(10_000), 512);
    }
}
