//! The pull/merge request body: the proof, the plan, the files, the checks before and after the
//! change, repairs, tokens and cost, written from the facts of a finished job.

use std::fmt::Write as _;

use super::status::found_check_item;
use super::{Cost, change_request_marker};
use crate::detect::DetectedCommand;
use crate::pipeline::checks::{CheckRun, Comparison, Verdict};
use crate::pipeline::proof::{ProofLine, Reproduction};
use crate::pipeline::test_report::CommandReport;
use crate::quote::{code_span, inert};
use crate::store::JobId;

/// The facts a pull request body is written from.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeRequestFacts<'a> {
    pub job: JobId,
    pub issue: u64,
    pub subject: &'a str,
    pub plan_steps: &'a [String],
    pub changed_files: &'a [String],
    pub validation: &'a [CommandReport],
    /// Each validation command on the base commit and on the change; when empty, the plain
    /// `validation` results are shown.
    pub checks: &'a [Comparison],
    pub repairs: u32,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub notes: &'a [String],
    /// The tests that reproduce the issue, or why there are none; `None` (a change made before
    /// reproductions existed) shows no proof section.
    pub reproduction: Option<&'a Reproduction>,
    /// The checks found in the repository and run because it configures none.
    pub detected: &'a [DetectedCommand],
    /// What the job's model calls cost.
    pub cost: Option<Cost>,
    /// The choice among the job's candidates, when it asked for several.
    pub candidates: Option<&'a str>,
    /// Why the change is not proven, when the repository asked for a draft rather than nothing.
    pub unproven: Option<&'a str>,
}

/// The pull/merge request body: summary, `Fixes #N`, files, validation table, repairs, tokens.
pub fn change_request_body(facts: &ChangeRequestFacts<'_>) -> String {
    let mut text = String::new();
    let _ = writeln!(text, "{}\n", inert(facts.subject));
    if let Some(why) = facts.unproven {
        let _ = writeln!(
            text,
            "## Not proven\n\n**This change is not proven to fix the issue:** {}\n\nNone of the \
             candidates passed its evidence, and the repository asks for the best one as a draft \
             (`[candidates] on_unproven = \"draft\"`) rather than nothing. Do not merge it as it \
             is: read it as a starting point.\n",
            inert(why)
        );
    }
    if let Some(reproduction) = facts.reproduction {
        text.push_str(&proof_section(reproduction));
    }
    if let Some(candidates) = facts.candidates {
        let _ = writeln!(text, "## Candidates\n\n{}\n", inert(candidates));
    }
    if !facts.plan_steps.is_empty() {
        let _ = writeln!(text, "## Summary\n");
        for step in facts.plan_steps {
            let _ = writeln!(text, "- {}", inert(step));
        }
        text.push('\n');
    }
    let _ = writeln!(text, "Fixes #{}\n", facts.issue);
    let _ = writeln!(text, "## Changed files\n");
    for file in facts.changed_files {
        let _ = writeln!(text, "- {}", code_span(file));
    }
    let _ = writeln!(text, "\n## Validation\n");
    if !facts.detected.is_empty() {
        let _ = writeln!(
            text,
            "The repository configures no `[[validate]]`, so these checks were **detected** in \
             it and run (`autofix config init` writes them to `.autofix.toml` to pin them):\n"
        );
        for command in facts.detected {
            let _ = writeln!(text, "{}", found_check_item(command));
        }
        text.push('\n');
    }
    if facts.validation.is_empty() && facts.checks.is_empty() {
        let _ = writeln!(
            text,
            "The repository configures no validation commands (`[[validate]]` in `.autofix.toml`): \
             this change was **not** checked by its own build or tests."
        );
    } else if !facts.checks.is_empty() {
        text.push_str(&checks_section(facts.checks));
    } else {
        let _ = writeln!(text, "| command | result | duration |");
        let _ = writeln!(text, "| --- | --- | --- |");
        for command in facts.validation {
            let _ = writeln!(
                text,
                "| `{}` | {} | {} |",
                table_cell(&command.command.join(" ")),
                if command.passed { "passed" } else { "failed" },
                duration(command.duration_ms)
            );
        }
    }
    let _ = writeln!(
        text,
        "\nRepair attempts: {} · Tokens used: {} in, {} out",
        facts.repairs, facts.input_tokens, facts.output_tokens
    );
    if let Some(cost) = &facts.cost {
        let _ = writeln!(text, "\n{}", cost.line());
    }
    for note in facts.notes {
        let _ = writeln!(text, "\n> {note}");
    }
    let _ = writeln!(
        text,
        "\n---\nOpened by autofix (job {}). Review it as you would any contribution.\n{}",
        facts.job,
        change_request_marker(facts.job, facts.issue)
    );
    text
}

/// `## Proof`: each reproducing test, its failure on the base commit and how it fares with
/// the change; or, without one, that the change is not proven and why.
fn proof_section(reproduction: &Reproduction) -> String {
    let mut text = String::from("## Proof\n\n");
    for line in proof_lines(reproduction) {
        let _ = writeln!(text, "{line}");
    }
    if reproduction.forces_draft() {
        let _ = writeln!(
            text,
            "\nIt is opened as a draft: mark it ready for review once a person has checked that \
             it fixes the issue."
        );
    }
    text.push('\n');
    text
}

/// The proof as Markdown lines, in the words `autofix fix` prints: a list item per reproducing
/// test (names and failure lines as code spans), or the **Not proven** sentence and its reason.
pub fn proof_lines(reproduction: &Reproduction) -> Vec<String> {
    let why = inert(&reproduction.why_unproven());
    reproduction
        .proof()
        .iter()
        .map(|line| match line {
            ProofLine::NotProven => {
                format!("**Not proven:** no test reproduces the issue — {why}")
            }
            ProofLine::Test { .. } => format!("- {}", line.words(code_span, &why)),
        })
        .collect()
}

/// The before/after table of the validation commands, then what already failed, what the
/// change fixed and what flaked.
fn checks_section(checks: &[Comparison]) -> String {
    let mut text = String::new();
    let _ = writeln!(
        text,
        "| command | on the base commit | with this change | duration |"
    );
    let _ = writeln!(text, "| --- | --- | --- | --- |");
    for check in checks {
        let base = check
            .base
            .as_ref()
            .map_or_else(|| "not run".to_string(), check_cell);
        let mut change = check_cell(&check.change);
        if matches!(check.verdict, Verdict::NoWorse) {
            change.push_str(", no worse");
        }
        let _ = writeln!(
            text,
            "| `{}` | {base} | {change} | {} |",
            table_cell(&check.command.join(" ")),
            duration(check.change.first.duration_ms)
        );
    }
    let named = |names: &[String]| {
        names
            .iter()
            .map(|name| format!("`{}`", table_cell(name)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for check in checks {
        let command = table_cell(&check.command.join(" "));
        if !check.still_failing.is_empty() {
            let _ = writeln!(
                text,
                "\n**Already failing on the base commit**, before this change, and left as they \
                 are (`{command}`): {}",
                named(&check.still_failing)
            );
        }
        if !check.fixed.is_empty() {
            let _ = writeln!(
                text,
                "\n**Fixed by this change** (failing on the base commit): {}",
                named(&check.fixed)
            );
        }
        if !check.flaky.is_empty() {
            let _ = writeln!(
                text,
                "\n**Flaky** (failed, then passed on an immediate rerun of the same tree): {}",
                named(&check.flaky)
            );
        }
    }
    text
}

/// `passed (12 tests)`, `failed: 1 of 12 tests`, `timed out`.
fn check_cell(run: &CheckRun) -> String {
    let last = run.last();
    if last.timed_out {
        return "timed out".to_string();
    }
    let verdict = if last.passed { "passed" } else { "failed" };
    match &last.tests {
        Some(tests) if last.passed => format!("{verdict} ({} tests)", tests.passed),
        Some(tests) => format!(
            "{verdict}: {} of {} tests",
            tests.failed,
            tests.passed + tests.failed
        ),
        None => verdict.to_string(),
    }
}

fn duration(millis: u64) -> String {
    if millis < 1_000 {
        format!("{millis} ms")
    } else {
        format!("{:.1} s", millis as f64 / 1_000.0)
    }
}

fn table_cell(text: &str) -> String {
    text.replace('|', "\\|").replace('`', "'")
}
