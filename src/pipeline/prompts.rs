//! The edit stage's prompt: issue, plan, context files with their hashes, the repository's
//! instructions, and on repair rounds the validation failure or the reviewer's must-fix items;
//! all within the stage's budget (`super::budget`).

use super::budget::{Keep, Part, bounded_list, fit, fit_with_files, thousands};
use super::context::Context;
use super::issue::Issue;
use super::plan::{FileChange, Operation, Plan};
use super::sections::{instructions_part, issue_part};
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

/// The edit prompt within `budget_tokens`; any of the four edit formats is accepted in the
/// answer, the prompt asks for SEARCH/REPLACE blocks (or whole files for new ones).
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
    budget_tokens: usize,
) -> String {
    let mut parts = edit_parts(issue, plan, instructions, proof, feedback);
    parts[FILES_SLOT] = Part::fixed(context_section(context));
    fit(&parts, budget_tokens)
}

/// The edit prompt within `budget_tokens` with the context `build_context` makes within the
/// tokens the rest of the prompt leaves; the prompt and that context.
pub fn edit_prompt_within(
    issue: &Issue,
    plan: &Plan,
    instructions: &str,
    proof: Option<&ProofShown>,
    feedback: Option<&Feedback>,
    budget_tokens: usize,
    mut build_context: impl FnMut(usize) -> Context,
) -> (String, Context) {
    let parts = edit_parts(issue, plan, instructions, proof, feedback);
    fit_with_files(parts, FILES_SLOT, budget_tokens, |tokens| {
        let context = build_context(tokens);
        (context_section(&context), context)
    })
}

/// Where the edit prompt's files go among its parts.
const FILES_SLOT: usize = 4;

fn edit_parts(
    issue: &Issue,
    plan: &Plan,
    instructions: &str,
    proof: Option<&ProofShown>,
    feedback: Option<&Feedback>,
) -> Vec<Part> {
    let mut parts = vec![
        Part::fixed(EDIT_INTRO),
        issue_part(issue),
        plan_part(plan),
        instructions_part(instructions),
        Part::fixed(""),
    ];
    let untouchable: &[String] = match proof {
        Some(proof) => {
            parts.push(Part::fixed(proof.section.clone()));
            &proof.files
        }
        None => &[],
    };
    if let Some(feedback) = feedback {
        parts.push(feedback_part(feedback));
    }
    let mut answer = String::from("\n## Answer format\n");
    answer.push_str(edit_contract(plan));
    answer.push_str(&format!(
        "- Change only these files: {}.\n",
        plan.file_changes
            .iter()
            .filter(|change| !untouchable.contains(&change.path))
            .map(|change| format!("`{}`", one_line(&change.path)))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    parts.push(Part::fixed(answer));
    parts
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

/// [`plan_section`] as a prompt part, kept from its start when cut.
pub(super) fn plan_part(plan: &Plan) -> Part {
    Part::cuttable(plan_section(plan), Keep::Head, "the plan")
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
        section.push_str("\nNot shown, best ranked first:\n");
        let omitted: Vec<String> = context
            .omitted
            .iter()
            .map(|(path, reason)| format!("{}: {}", one_line(path), one_line(reason)))
            .collect();
        section.push_str(&bounded_list(&omitted, "files"));
    }
    section
}

/// The repair framing of iterative-fix-cycle.md: the last attempt failed, here is why. The
/// command's output is kept from its end, what the model wrote from its start, when cut.
fn feedback_part(feedback: &Feedback) -> Part {
    let mut before = String::from("\n## Your previous attempt failed; fix it\n");
    let after = "The files above show the repository as it is now. Find the cause and answer with \
         the edits that fix it.\n";
    let part = match feedback {
        Feedback::ValidationFailed {
            command,
            why,
            already_failing,
            output_tail,
        } => {
            before.push_str(&format!(
                "The validation command `{}` failed",
                one_line(command)
            ));
            if why.is_empty() {
                before.push_str(".\n");
            } else {
                before.push_str(&format!(": {}.\n", one_line(why)));
            }
            if !already_failing.is_empty() {
                before.push_str(&format!(
                    "These tests already fail on the base commit, before any change; leave them \
                     as they are: {}\n",
                    named_then_counted(already_failing)
                ));
            }
            before.push_str("The end of its output:\n");
            Part::fenced(output_tail.trim_end(), Keep::Tail, "the command's output")
        }
        Feedback::ReviewRejected {
            must_fixes,
            reasons,
        } => {
            let mut items = String::from("The reviewer rejected the change. It must fix:\n");
            for item in must_fixes {
                items.push_str(&format!("- {}\n", one_line(item)));
            }
            if !reasons.is_empty() {
                items.push_str("Because:\n");
                for reason in reasons {
                    items.push_str(&format!("- {}\n", one_line(reason)));
                }
            }
            Part::cuttable(items, Keep::Head, "the review")
        }
        Feedback::EditRefused { reason } => {
            before.push_str("Your edits could not be applied, so nothing was changed: ");
            Part::cuttable(
                format!("{}\n", reason.trim_end()),
                Keep::Head,
                "why they were refused",
            )
        }
    };
    part.before(before).after(after)
}

/// Names, comma-separated: at most [`MAX_NAMED`](super::budget::MAX_NAMED), then how many more.
fn named_then_counted(names: &[String]) -> String {
    let mut shown: Vec<String> = names
        .iter()
        .take(super::budget::MAX_NAMED)
        .map(|name| one_line(name))
        .collect();
    if names.len() > super::budget::MAX_NAMED {
        shown.push(format!(
            "and {} more",
            thousands(names.len() - super::budget::MAX_NAMED)
        ));
    }
    shown.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edits::{Change, EditFormat, detect, search_replace, udiff};
    use crate::index::Span;
    use crate::pipeline::context::{ContextFile, Piece};
    use regex::Regex;

    fn plan(changes: &[(&str, Operation)]) -> Plan {
        Plan {
            branch_name: None,
            plan_steps: vec!["Do the thing".into()],
            commit_summary: "do the thing properly".into(),
            ..Plan::changing(changes)
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
            60_000,
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
            60_000,
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
            60_000,
        );
        assert!(
            prompt.contains("Only lines 10-11 of its 90 are shown"),
            "{prompt}"
        );
        assert!(prompt.contains("Lines 10-11:\n```\na\nb\n```\n"));
        assert!(prompt.contains("Not shown, best ranked first:\n- huge.bin: binary file\n"));
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
                60_000,
            );
            assert!(
                prompt.contains("## Your previous attempt failed; fix it\n"),
                "{prompt}"
            );
        }
    }

    /// A repository of `files` Python files, each of `lines` lines, on disk.
    fn repository(files: usize, lines: usize) -> (tempfile::TempDir, Vec<String>) {
        let dir = tempfile::tempdir().unwrap();
        let mut paths = Vec::new();
        for n in 0..files {
            let path = format!("pkg/module_{n:04}.py");
            let text: String = (0..lines)
                .map(|line| format!("def function_{n}_{line}(value):  # parse the value\n"))
                .collect();
            std::fs::create_dir_all(dir.path().join("pkg")).unwrap();
            std::fs::write(dir.path().join(&path), text).unwrap();
            paths.push(path);
        }
        (dir, paths)
    }

    /// The edit prompt, as the edit stage builds it, for a plan naming the first file, the
    /// files ranked by the repository index.
    fn edit_prompt_for(
        issue: &Issue,
        instructions: &str,
        feedback: Option<&Feedback>,
        budget: usize,
    ) -> String {
        let (dir, paths) = repository(5_000, 12);
        let root = crate::edits::paths::ProjectRoot::new(dir.path()).unwrap();
        let protected = crate::config::repo::RepoConfig::default()
            .protected_paths(&root)
            .unwrap();
        let index = crate::index::RepoIndex::build(dir.path(), &paths);
        let query = crate::index::query::IssueQuery::parse("parse the value", "function fails");
        let ranking =
            crate::index::retrieve::rank(&index, &query, crate::index::retrieve::Method::Full);
        assert!(ranking.files.len() > 1_000, "the files are ranked");
        let plan = plan(&[("pkg/module_0000.py", Operation::Modify)]);
        let (prompt, _) = edit_prompt_within(
            issue,
            &plan,
            instructions,
            None,
            feedback,
            budget,
            |tokens| crate::pipeline::context::build(&root, &protected, &plan, &ranking, tokens),
        );
        prompt
    }

    #[test]
    fn a_five_thousand_file_repository_names_thirty_files_it_cannot_show_and_counts_the_rest() {
        let prompt = edit_prompt_for(&issue(), "", None, 20_000);
        assert!(crate::pipeline::budget::estimate_tokens(&prompt) <= 20_000);
        assert!(
            prompt.contains("### pkg/module_0000.py\n"),
            "the planned file is shown"
        );
        let not_shown = &prompt[prompt.find("Not shown, best ranked first:\n").unwrap()..];
        let named = not_shown
            .lines()
            .filter(|line| line.starts_with("- pkg/"))
            .count();
        assert_eq!(named, 30, "{not_shown}");
        assert!(
            Regex::new(r"… and \d,\d{3} more files\n")
                .unwrap()
                .is_match(not_shown),
            "{not_shown}"
        );
    }

    #[test]
    fn a_megabyte_issue_and_instructions_are_cut_so_the_edit_prompt_keeps_its_budget_and_its_files()
    {
        let issue = Issue {
            body: "The parser fails on this input:\n".to_owned() + &"x = 1\n".repeat(200_000),
            ..issue()
        };
        let instructions = "Keep functions small.\n".repeat(20_000);
        let prompt = edit_prompt_for(&issue, &instructions, None, 20_000);
        assert!(crate::pipeline::budget::estimate_tokens(&prompt) <= 20_000);
        assert!(
            prompt.contains("bytes of the issue's text left out here"),
            "marked"
        );
        assert!(prompt.contains("bytes of the repository's instructions left out here"));
        assert!(
            prompt.contains("The parser fails on this input:\n"),
            "its start is kept"
        );
        assert!(
            prompt.contains("### pkg/module_0000.py\n"),
            "files still have room"
        );
        assert!(prompt.contains("- Change only these files: `pkg/module_0000.py`.\n"));
    }

    #[test]
    fn a_repair_after_two_megabytes_of_output_keeps_the_failure_at_its_end() {
        let output = "collecting ... ok\n".repeat(120_000) + "E   AssertionError: 1 != 2\n";
        let feedback = Feedback::ValidationFailed {
            command: "pytest".into(),
            why: "tests that pass on the base commit fail".into(),
            already_failing: (0..500).map(|n| format!("test_{n}")).collect(),
            output_tail: output,
        };
        let prompt = edit_prompt_for(&issue(), "", Some(&feedback), 20_000);
        assert!(crate::pipeline::budget::estimate_tokens(&prompt) <= 20_000);
        assert!(prompt.contains("bytes of the command's output left out here"));
        assert!(
            prompt.contains("E   AssertionError: 1 != 2\n```\n"),
            "the end is kept"
        );
        assert!(
            prompt.contains("test_29, and 470 more\n"),
            "failing names are counted"
        );
        assert!(prompt.contains("### pkg/module_0000.py\n"));
    }
}
