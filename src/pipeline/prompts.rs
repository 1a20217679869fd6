//! The edit stage's prompt: issue, plan, context files with their hashes, the repository's
//! instructions, and on repair rounds the validation failure or the reviewer's must-fix items.

use super::context::Context;
use super::issue::Issue;
use super::plan::{FileChange, Operation, Plan};
use super::sections::{instructions_section, issue_section};
use crate::quote::{fenced, one_line};

const EDIT_INTRO: &str = include_str!("prompts/edit.md");
const SEARCH_REPLACE_CONTRACT: &str = include_str!("prompts/edit_search_replace.md");
const UDIFF_CONTRACT: &str = include_str!("prompts/edit_udiff.md");

/// What the previous round is telling this one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Feedback {
    /// A validation command failed in a way it does not on the base commit: its argv, why it
    /// counts against the change, the tests already failing on the base, its output's tail.
    ValidationFailed {
        command: String,
        why: String,
        already_failing: Vec<String>,
        output_tail: String,
    },
    /// The reviewer sent the work back.
    ReviewRejected {
        must_fixes: Vec<String>,
        reasons: Vec<String>,
    },
    /// The previous answer could not be applied: why.
    EditRefused { reason: String },
}

/// The reproduction an edit must make pass: its section of the prompt, and the files that hold
/// it, which the edit may not change.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProofShown {
    pub section: String,
    pub files: Vec<String>,
}

/// The edit prompt; any of the four edit formats is accepted in the answer, the prompt asks
/// for SEARCH/REPLACE blocks (or whole files for new ones).
///
/// SEARCH/REPLACE blocks cannot delete a file, so a plan with a DELETE asks for a unified
/// diff instead (a deletion is then just its `--- a/x` / `+++ /dev/null` header); whole-file
/// blocks could delete too, but would lose the part of a file the context budget cut off.
pub fn edit_prompt(
    issue: &Issue,
    plan: &Plan,
    context: &Context,
    instructions: &str,
    proof: Option<&ProofShown>,
    feedback: Option<&Feedback>,
) -> String {
    let mut prompt = String::new();
    prompt.push_str(EDIT_INTRO);
    prompt.push_str(&issue_section(issue));
    prompt.push_str(&plan_section(plan));
    prompt.push_str(&instructions_section(instructions));
    prompt.push_str(&context_section(context));
    let untouchable: &[String] = match proof {
        Some(proof) => {
            prompt.push_str(&proof.section);
            &proof.files
        }
        None => &[],
    };
    if let Some(feedback) = feedback {
        prompt.push_str(&feedback_section(feedback));
    }
    prompt.push_str("\n## Answer format\n");
    prompt.push_str(edit_contract(plan));
    prompt.push_str(&format!(
        "- Change only these files: {}.\n",
        plan.file_changes
            .iter()
            .filter(|change| !untouchable.contains(&change.path))
            .map(|change| format!("`{}`", one_line(&change.path)))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    prompt
}

fn edit_contract(plan: &Plan) -> &'static str {
    let deletes = plan
        .file_changes
        .iter()
        .any(|change| change.operation == Operation::Delete);
    if deletes {
        UDIFF_CONTRACT
    } else {
        SEARCH_REPLACE_CONTRACT
    }
}

/// The plan: its steps, numbered, one line each, and the file changes it announced.
pub(super) fn plan_section(plan: &Plan) -> String {
    let mut section = String::from("\n## Plan\n");
    for (index, step) in plan.plan_steps.iter().enumerate() {
        section.push_str(&format!("{}. {}\n", index + 1, one_line(step)));
    }
    section.push_str("\nFiles to change:\n");
    for change in &plan.file_changes {
        section.push_str(&format!("- {}\n", describe_change(change)));
    }
    section
}

fn describe_change(change: &FileChange) -> String {
    let operation = match change.operation {
        Operation::Create => "CREATE",
        Operation::Modify => "MODIFY",
        Operation::Delete => "DELETE",
    };
    let path = one_line(&change.path);
    match change.line_range {
        Some((start, end)) if start == end => format!("{operation} {path} (line {start})"),
        Some((start, end)) => format!("{operation} {path} (lines {start}-{end})"),
        None => format!("{operation} {path}"),
    }
}

pub(super) fn context_section(context: &Context) -> String {
    let mut section = String::from("\n## Current files\n");
    if context.files.is_empty() {
        section.push_str("(No existing file is shown.)\n");
    }
    for file in &context.files {
        section.push_str(&format!(
            "\n### {}\nsha256: {}\n",
            one_line(&file.path),
            file.sha256
        ));
        if file.whole() {
            section.push_str(&fenced("", &file.pieces[0].text));
            continue;
        }
        let shown: Vec<String> = file
            .pieces
            .iter()
            .map(|piece| format!("{}-{}", piece.span.start, piece.span.end))
            .collect();
        section.push_str(&format!(
            "Only lines {} of its {} are shown; change only those lines, with SEARCH/REPLACE \
             blocks or a diff (never the whole file).\n",
            shown.join(", "),
            file.total_lines
        ));
        for piece in &file.pieces {
            section.push_str(&format!("Lines {}-{}:\n", piece.span.start, piece.span.end));
            section.push_str(&fenced("", &piece.text));
        }
    }
    if !context.omitted.is_empty() {
        section.push_str("\nNot shown:\n");
        for (path, reason) in &context.omitted {
            section.push_str(&format!("- {}: {}\n", one_line(path), one_line(reason)));
        }
    }
    section
}

/// The repair framing of iterative-fix-cycle.md: the last attempt failed, here is why.
fn feedback_section(feedback: &Feedback) -> String {
    let mut section = String::from("\n## Your previous attempt failed; fix it\n");
    match feedback {
        Feedback::ValidationFailed {
            command,
            why,
            already_failing,
            output_tail,
        } => {
            section.push_str(&format!(
                "The validation command `{}` failed",
                one_line(command)
            ));
            if why.is_empty() {
                section.push_str(".\n");
            } else {
                section.push_str(&format!(": {}.\n", one_line(why)));
            }
            if !already_failing.is_empty() {
                section.push_str(&format!(
                    "These tests already fail on the base commit, before any change; leave them \
                     as they are: {}\n",
                    already_failing
                        .iter()
                        .map(|name| one_line(name))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            section.push_str("The end of its output:\n");
            section.push_str(&fenced("", output_tail.trim_end()));
        }
        Feedback::ReviewRejected {
            must_fixes,
            reasons,
        } => {
            section.push_str("The reviewer rejected the change. It must fix:\n");
            for item in must_fixes {
                section.push_str(&format!("- {}\n", one_line(item)));
            }
            if !reasons.is_empty() {
                section.push_str("Because:\n");
                for reason in reasons {
                    section.push_str(&format!("- {}\n", one_line(reason)));
                }
            }
        }
        Feedback::EditRefused { reason } => {
            section.push_str(&format!(
                "Your edits could not be applied, so nothing was changed: {}\n",
                reason.trim_end()
            ));
        }
    }
    section.push_str(
        "The files above show the repository as it is now. Find the cause and answer with the \
         edits that fix it.\n",
    );
    section
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edits::{Change, EditFormat, detect, search_replace, udiff};
    use crate::index::Span;
    use crate::pipeline::context::{ContextFile, Piece};

    fn plan(changes: &[(&str, Operation)]) -> Plan {
        Plan {
            branch_name: None,
            plan_steps: vec!["Do the thing".into()],
            file_changes: changes
                .iter()
                .map(|(path, operation)| FileChange {
                    path: path.to_string(),
                    operation: *operation,
                    line_range: None,
                })
                .collect(),
            commit_summary: "do the thing properly".into(),
            scope: None,
        }
    }

    fn issue() -> Issue {
        Issue {
            number: Some(7),
            title: "Thing is broken".into(),
            body: "It breaks.".into(),
            labels: vec![],
        }
    }

    #[test]
    fn a_plan_that_deletes_asks_for_a_unified_diff_instead_of_search_replace() {
        let context = Context::default();
        let modify = edit_prompt(
            &issue(),
            &plan(&[("a.rs", Operation::Modify)]),
            &context,
            "",
            None,
            None,
        );
        assert!(modify.contains("<<<<<<< SEARCH"));
        assert!(!modify.contains("+++ /dev/null"));
        let delete = edit_prompt(
            &issue(),
            &plan(&[("a.rs", Operation::Modify), ("old.rs", Operation::Delete)]),
            &context,
            "",
            None,
            None,
        );
        assert!(delete.contains("then `+++ /dev/null`, no hunk"));
        assert!(!delete.contains("<<<<<<< SEARCH"));
        assert!(delete.ends_with("- Change only these files: `a.rs`, `old.rs`.\n"));
    }

    /// The lines of `contract` from the first one starting with `first` to the first blank one.
    fn example(contract: &str, first: &str) -> String {
        let start = contract.find(first).unwrap();
        let end = contract[start..].find("\n\n").unwrap();
        format!("{}\n", &contract[start..start + end])
    }

    const PARSER_RS: &str = "use crate::ParseError;\n\
        pub fn first(input: &[u8]) -> Result<u8, ParseError> {\n\
        \x20   let first = input[0];\n\
        \x20   Ok(first)\n\
        }\n";

    const PARSER_RS_AFTER: &str = "use crate::ParseError;\n\
        pub fn first(input: &[u8]) -> Result<u8, ParseError> {\n\
        \x20   let Some(&first) = input.first() else {\n\
        \x20       return Err(ParseError::Empty);\n\
        \x20   };\n\
        \x20   Ok(first)\n\
        }\n";

    #[test]
    fn the_search_replace_example_is_read_and_applied_by_the_engine() {
        let answer = example(SEARCH_REPLACE_CONTRACT, "src/parser.rs\n");
        let set = detect::parse(&answer, None).unwrap();
        assert_eq!(set.format, EditFormat::SearchReplace);
        let Change::Replace { blocks } = &set.edits[0].change else {
            panic!("{:?}", set.edits[0].change);
        };
        assert_eq!(set.edits[0].path, "src/parser.rs");
        assert_eq!(
            search_replace::apply(PARSER_RS, blocks).unwrap(),
            PARSER_RS_AFTER
        );
    }

    #[test]
    fn the_unified_diff_example_is_read_and_applied_by_the_engine() {
        let answer = example(UDIFF_CONTRACT, "--- a/src/parser.rs");
        let set = detect::parse(&answer, None).unwrap();
        assert_eq!(set.format, EditFormat::Udiff);
        let Change::Patch { hunks } = &set.edits[0].change else {
            panic!("{:?}", set.edits[0].change);
        };
        assert_eq!(udiff::apply(PARSER_RS, hunks).unwrap(), PARSER_RS_AFTER);
        let deletion = detect::parse("--- a/README.md\n+++ /dev/null\n", None).unwrap();
        assert_eq!(deletion.edits[0].change, Change::Delete);
    }

    #[test]
    fn a_file_shown_in_part_says_which_lines_and_how_to_edit_them() {
        let context = Context {
            files: vec![ContextFile {
                path: "big.rs".into(),
                sha256: "00".into(),
                total_lines: 90,
                pieces: vec![Piece {
                    span: Span::new(10, 11),
                    text: "a\nb\n".into(),
                }],
                rank: Some(1),
                why: vec!["planned".into()],
            }],
            omitted: vec![("huge.bin".into(), "binary file".into())],
            max_tokens: 100,
        };
        let prompt = edit_prompt(
            &issue(),
            &plan(&[("big.rs", Operation::Modify)]),
            &context,
            "",
            None,
            None,
        );
        assert!(
            prompt.contains("Only lines 10-11 of its 90 are shown"),
            "{prompt}"
        );
        assert!(prompt.contains("Lines 10-11:\n```\na\nb\n```\n"));
        assert!(prompt.contains("Not shown:\n- huge.bin: binary file\n"));
    }

    #[test]
    fn every_kind_of_feedback_opens_with_the_repair_framing() {
        let feedbacks = [
            Feedback::ValidationFailed {
                command: "cargo test".into(),
                why: "tests that pass on the base commit fail with this change: parse_empty".into(),
                already_failing: vec!["parse_legacy".into()],
                output_tail: "test parse_empty ... FAILED\n".into(),
            },
            Feedback::ReviewRejected {
                must_fixes: vec!["trim the input".into()],
                reasons: vec![],
            },
            Feedback::EditRefused {
                reason: "block 1 SEARCH starting `fn x` was not found".into(),
            },
        ];
        for feedback in &feedbacks {
            let prompt = edit_prompt(
                &issue(),
                &plan(&[("a.rs", Operation::Modify)]),
                &Context::default(),
                "",
                None,
                Some(feedback),
            );
            assert!(
                prompt.contains("## Your previous attempt failed; fix it\n"),
                "{prompt}"
            );
        }
    }
}
