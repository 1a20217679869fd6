//! Every text the bot writes on a forge: the status comment (a checklist edited in place), the
//! pull/merge request body, the failure report and the polite refusals. Pure functions of data;
//! whatever in them the model (or anyone but the engine) wrote goes through `crate::quote`.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::detect::{DetectedCommand, Stage as DetectStage};
use crate::failure::FailureCode;
use crate::llm::price::dollars;
use crate::pipeline::checks::{CheckRun, Comparison, Verdict};
use crate::pipeline::fix::FixSummary;
use crate::pipeline::proof::{ProofLine, Reproduction};
use crate::pipeline::test_report::CommandReport;
use crate::quote::{code_span, fenced, inert};
use crate::store::JobId;

/// The hidden line that marks the status comment of a job, so a restarted job finds it again
/// among the bot's own comments (see `own_marks`: the line alone makes no comment the bot's).
pub fn status_marker(job: JobId) -> String {
    format!("<!-- autofix:status job={job} -->")
}

/// The hidden line in a pull request body naming the issue and job it belongs to, for people
/// and tools reading it; autofix knows its own change requests by the store and their author.
pub fn change_request_marker(job: JobId, issue: u64) -> String {
    format!("<!-- autofix:change-request job={job} issue={issue} -->")
}

/// The stages of a job as the status comment lists them, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Step {
    Authorized,
    Fetched,
    Fixed,
    Pushed,
    Opened,
}

impl Step {
    pub const ALL: [Step; 5] = [
        Step::Authorized,
        Step::Fetched,
        Step::Fixed,
        Step::Pushed,
        Step::Opened,
    ];

    fn label(self) -> &'static str {
        match self {
            Step::Authorized => "Request checked (who asked, issue open, no autofix PR yet)",
            Step::Fetched => "Repository fetched and `.autofix.toml` read from the default branch",
            Step::Fixed => "Change written and validated by the repository's own commands",
            Step::Pushed => "Branch pushed",
            Step::Opened => "Pull request opened",
        }
    }
}

/// What the job's model calls cost, as the status comment and the change request show it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    pub usd: f64,
    pub tokens: u64,
    /// The model has no known price: its calls counted as $0.
    pub price_unknown: bool,
}

impl Cost {
    /// The cost of one pipeline run.
    pub fn of(summary: &FixSummary) -> Cost {
        Cost {
            usd: summary.cost_usd,
            tokens: summary.input_tokens + summary.output_tokens,
            price_unknown: summary.price_unknown,
        }
    }

    /// `Cost: $0.0123 (12,345 tokens)`, or `Cost: price unknown (12,345 tokens)`.
    pub fn line(&self) -> String {
        let amount = if self.price_unknown {
            "price unknown".to_owned()
        } else {
            dollars(self.usd)
        };
        format!("Cost: {amount} ({} tokens)", grouped(self.tokens))
    }
}

/// `12345` → `12,345`.
fn grouped(number: u64) -> String {
    let digits = number.to_string();
    let mut text = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            text.push(',');
        }
        text.push(digit);
    }
    text
}

/// Everything the status comment shows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StatusView {
    pub job: JobId,
    pub requested_by: String,
    /// Steps completed, each with a short detail shown after it.
    pub done: Vec<(Step, String)>,
    /// The step running now.
    pub current: Option<Step>,
    /// Notes shown under the checklist (e.g. "no .autofix.toml: defaults apply").
    pub notes: Vec<String>,
    pub outcome: Option<StatusOutcome>,
    /// Whether a test reproduced the issue on the base commit, once the run says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reproduction: Option<ReproductionStatus>,
    /// The checks found in the repository, when it configures none: listed with why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub detected: Vec<DetectedCommand>,
    /// What the model calls cost, once a pipeline run ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Cost>,
}

/// The "Reproduced on the base commit" line of the checklist.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReproductionStatus {
    /// These tests failed on the base commit: ticked, with their names.
    Reproduced { tests: Vec<String> },
    /// A reproduction was tried and none was found, for this reason.
    NotReproduced { why: String },
    /// None was tried (mode `off`, or an issue no test shows): no line, a note instead.
    NotTried { why: String },
}

impl ReproductionStatus {
    /// How the checklist shows `reproduction`.
    pub fn of(reproduction: &Reproduction) -> ReproductionStatus {
        if !reproduction.tests.is_empty() {
            ReproductionStatus::Reproduced {
                tests: reproduction.tests.clone(),
            }
        } else if reproduction.tried() {
            ReproductionStatus::NotReproduced {
                why: reproduction.why_unproven(),
            }
        } else {
            ReproductionStatus::NotTried {
                why: reproduction.why_unproven(),
            }
        }
    }

    /// The checklist line, or `None` when no reproduction was tried.
    fn checklist_line(&self) -> Option<String> {
        let label = "Reproduced on the base commit";
        match self {
            ReproductionStatus::Reproduced { tests } => {
                let names: Vec<String> = tests.iter().map(|test| code_span(test)).collect();
                Some(format!("- [x] {label}: {}", names.join(", ")))
            }
            ReproductionStatus::NotReproduced { why } => {
                Some(format!("- [ ] {label}: not reproduced — {}", inert(why)))
            }
            ReproductionStatus::NotTried { .. } => None,
        }
    }

    /// The note said instead of a line when no reproduction was tried.
    fn note(&self) -> Option<String> {
        match self {
            ReproductionStatus::NotTried { why } => Some(format!(
                "No test was asked to reproduce the issue first: {}.",
                inert(why.trim_end_matches('.'))
            )),
            _ => None,
        }
    }
}

/// Said under the checklist when the checks were found rather than configured.
const PIN_NOTE: &str = "The repository has no `[[validate]]` in `.autofix.toml`, so autofix ran \
the checks it found in the repository, listed above with where each was found. To pin or \
change them, run `autofix config init --repo .` in a checkout and commit the `.autofix.toml` \
it writes.";

/// The checklist's "Checks found in the repository" line and one item per command.
fn found_checks_lines(detected: &[DetectedCommand]) -> String {
    let mut text = String::from("- [x] Checks found in the repository:\n");
    for command in detected {
        let _ = writeln!(text, "  {}", found_check_item(command));
    }
    text
}

/// `- setup: `npm ci` in `web` — `package-lock.json``: one found command, its stage, folder
/// and why, safe to show (the why quotes the repository's own files).
fn found_check_item(command: &DetectedCommand) -> String {
    let stage = match command.stage {
        DetectStage::Setup => "setup",
        DetectStage::Validate => "check",
    };
    let run = command.shown();
    let place = if command.cwd == "." {
        String::new()
    } else {
        format!(" in {}", code_span(&command.cwd))
    };
    format!(
        "- {stage}: {}{place} — {}",
        code_span(&run),
        inert(&command.why)
    )
}

/// How the job ended, as the status comment reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum StatusOutcome {
    Succeeded {
        change_request_url: String,
        change_request_word: String,
    },
    Failed(FailureReport),
    /// Triage and plan wait for a maintainer's `approve` (or `plan <changes>`).
    AwaitingApproval {
        summary: String,
        plan_steps: Vec<String>,
        files: Vec<String>,
        word: String,
    },
    /// A maintainer answered the plan (`how`: approved it, or asked for another); job `next`
    /// goes on from here.
    PlanAnswered {
        by: String,
        how: String,
        next: JobId,
    },
    /// A maintainer cancelled the job, which stopped during `stage`; `word` is the command word.
    Cancelled {
        by: String,
        stage: String,
        word: String,
    },
}

/// The facts of a failure a person needs to act on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailureReport {
    pub stage: String,
    pub code: FailureCode,
    pub reason: String,
    /// The end of the failing command's output, secrets already redacted.
    pub output_tail: Option<String>,
    pub trigger_label: String,
    pub branch_kept: Option<String>,
}

/// The status comment: a heading, the checklist, notes, and the outcome once there is one.
pub fn status_comment(view: &StatusView) -> String {
    let mut text = String::new();
    let heading = match &view.outcome {
        None => "autofix is working on this issue",
        Some(StatusOutcome::Succeeded { .. }) => "autofix opened a fix for this issue",
        Some(StatusOutcome::Failed(_)) => "autofix could not fix this issue",
        Some(StatusOutcome::Cancelled { .. }) => "autofix stopped: the job was cancelled",
        Some(StatusOutcome::AwaitingApproval { .. }) => {
            "autofix planned a fix and waits for approval"
        }
        Some(StatusOutcome::PlanAnswered { .. }) => "autofix's plan was answered",
    };
    let _ = writeln!(text, "### {heading}\n");
    let _ = writeln!(
        text,
        "Requested by @{} · job {}\n",
        view.requested_by, view.job
    );
    for step in Step::ALL {
        let done = view.done.iter().find(|(finished, _)| *finished == step);
        let label = match step {
            Step::Opened => format!("{} opened", change_request_word(view)),
            _ => step.label().to_owned(),
        };
        match done {
            Some((_, detail)) if detail.is_empty() => {
                let _ = writeln!(text, "- [x] {label}");
            }
            Some((_, detail)) => {
                let _ = writeln!(text, "- [x] {label}: {detail}");
            }
            None if view.current == Some(step) && view.outcome.is_none() => {
                let _ = writeln!(text, "- [ ] {label} ← in progress");
            }
            None => {
                let _ = writeln!(text, "- [ ] {label}");
            }
        }
        if step == Step::Fetched && !view.detected.is_empty() {
            text.push_str(&found_checks_lines(&view.detected));
        }
        if step == Step::Fetched
            && let Some(line) = view
                .reproduction
                .as_ref()
                .and_then(ReproductionStatus::checklist_line)
        {
            let _ = writeln!(text, "{line}");
        }
    }
    if let Some(cost) = &view.cost {
        let _ = writeln!(text, "\n{}", cost.line());
    }
    let reproduction_note = view
        .reproduction
        .as_ref()
        .and_then(ReproductionStatus::note);
    let pin_note = (!view.detected.is_empty()).then(|| PIN_NOTE.to_string());
    for note in view.notes.iter().chain(&pin_note).chain(&reproduction_note) {
        let _ = writeln!(text, "\n> {note}");
    }
    match &view.outcome {
        None => {}
        Some(StatusOutcome::Succeeded {
            change_request_url,
            change_request_word,
        }) => {
            let _ = writeln!(
                text,
                "\n{change_request_word}: {change_request_url} — please review it like any other contribution."
            );
        }
        Some(StatusOutcome::Failed(failure)) => text.push_str(&failure_section(failure)),
        Some(StatusOutcome::AwaitingApproval {
            summary,
            plan_steps,
            files,
            word,
        }) => {
            let _ = writeln!(text, "\n**The plan** — {}:\n", code_span(summary));
            for step in plan_steps {
                let _ = writeln!(text, "1. {}", inert(step));
            }
            let files: Vec<String> = files.iter().map(|file| code_span(file)).collect();
            let _ = writeln!(
                text,
                "\nFiles it would change: {}\n\nNothing is edited until a maintainer comments \
                 `/{word} approve`, or `/{word} plan <what to change>` to plan again with those words.",
                files.join(", ")
            );
        }
        Some(StatusOutcome::PlanAnswered { by, how, next }) => {
            let _ = writeln!(text, "\n@{by} {how}; job {next} goes on from here.");
        }
        Some(StatusOutcome::Cancelled { by, stage, word }) => {
            let _ = writeln!(
                text,
                "\nCancelled by @{by} during `{stage}`. Nothing is left behind: a branch this job \
                 pushed is deleted. Comment `/{word} retry` to start again."
            );
        }
    }
    let _ = write!(text, "\n{}\n", status_marker(view.job));
    text
}

fn change_request_word(view: &StatusView) -> &str {
    match &view.outcome {
        Some(StatusOutcome::Succeeded {
            change_request_word,
            ..
        }) => change_request_word,
        _ => "Pull request",
    }
}

/// The part of the status comment that explains a failure and how to try again.
fn failure_section(failure: &FailureReport) -> String {
    let mut text = String::new();
    let _ = writeln!(
        text,
        "\n**Failed at `{}` with `{}`:** {}",
        failure.stage,
        failure.code,
        inert(&failure.reason)
    );
    if let Some(tail) = failure
        .output_tail
        .as_deref()
        .filter(|t| !t.trim().is_empty())
    {
        let _ = writeln!(
            text,
            "\n<details><summary>End of the output</summary>\n\n{}</details>",
            fenced("text", tail.trim_end())
        );
    }
    if let Some(branch) = &failure.branch_kept {
        let _ = writeln!(
            text,
            "\nThe work in progress is kept on the branch `{branch}`."
        );
    }
    if let Some(hint) = what_a_maintainer_can_do(failure.code) {
        let _ = writeln!(text, "\n{hint}");
    }
    let _ = writeln!(
        text,
        "\n**To try again:** address the cause above (for example in the issue text or the repository's \
         `.autofix.toml`), then remove the `{label}` label and add it again.",
        label = failure.trigger_label
    );
    text
}

/// What a maintainer can do about a failure of this code, beyond addressing its reason.
fn what_a_maintainer_can_do(code: FailureCode) -> Option<&'static str> {
    match code {
        FailureCode::ReproductionFailed => Some(
            "**No test reproduced the issue.** This repository asks for a test that fails on \
             the base commit before any fix is written (`[reproduce] mode = \"required\"` in \
             `.autofix.toml`), and none of the tests the model wrote did. Describe in the issue \
             the exact steps that show the problem (the input or command, what happens, what \
             should happen), so that a test can follow them; or set \
             `[reproduce] mode = \"preferred\"` to let a fix through without one, opened as a \
             draft that says it is not proven.",
        ),
        _ => None,
    }
}

/// Why the bot will not work on a labelled issue; each becomes one polite comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The label was added by a bot account.
    Bot {
        login: String,
    },
    /// The person who added the label may not push to the repository.
    NoPushRights {
        login: String,
        permission: String,
    },
    Closed,
    Locked,
    /// An autofix pull request for this issue is already open.
    AlreadyOpen {
        url: String,
    },
}

impl Refusal {
    /// A short reason for the job record.
    pub fn summary(&self) -> String {
        match self {
            Refusal::Bot { login } => format!("the label was added by the bot account @{login}"),
            Refusal::NoPushRights { login, permission } => {
                format!("@{login} may not push (permission: {permission})")
            }
            Refusal::Closed => "the issue is closed".into(),
            Refusal::Locked => "the issue is locked".into(),
            Refusal::AlreadyOpen { url } => format!("an autofix change is already open: {url}"),
        }
    }
}

/// The comment posted once when the bot declines a request.
pub fn refusal_comment(refusal: &Refusal, trigger_label: &str, job: JobId) -> String {
    let body = match refusal {
        Refusal::Bot { login } => format!(
            "Thanks for the label, but autofix only starts work when a person adds `{trigger_label}`; \
             @{login} is a bot account, so nothing was done."
        ),
        Refusal::NoPushRights { login, .. } => format!(
            "Thanks, @{login}! autofix only starts work when someone who can push to this repository \
             adds `{trigger_label}`, and your account cannot. A maintainer can add the label to ask for a fix."
        ),
        Refusal::Closed => format!(
            "autofix did not start: this issue is closed. Reopen it and add `{trigger_label}` again to ask for a fix."
        ),
        Refusal::Locked => format!(
            "autofix did not start: this issue is locked. Unlock it and add `{trigger_label}` again to ask for a fix."
        ),
        Refusal::AlreadyOpen { url } => format!(
            "autofix did not start another fix: {url} is already open for this issue. \
             Close it first if you want a new attempt."
        ),
    };
    format!("{body}\n\n<!-- autofix:refusal job={job} -->\n")
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::repo::ReproduceMode;
    use crate::pipeline::proof::{BaseFailure, MAX_FAILURE_LINE, TestOutcome};

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
    fn a_failed_job_says_where_why_and_how_to_retry() {
        let view = StatusView {
            job: JobId(4),
            requested_by: "octocat".into(),
            done: vec![
                (Step::Authorized, String::new()),
                (Step::Fetched, "`main` at 0123456".into()),
            ],
            current: Some(Step::Fixed),
            notes: vec!["No `.autofix.toml` on the default branch: the defaults apply.".into()],
            outcome: Some(StatusOutcome::Failed(FailureReport {
                stage: "validate".into(),
                code: FailureCode::ValidationFailed,
                reason: "`cargo test` failed".into(),
                output_tail: Some("test parse ... FAILED\n```\nnot a fence end".into()),
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
            body.contains(
                "| `pytest -q` | failed: 2 of 10 tests | failed: 1 of 10 tests, no worse |"
            ),
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
        assert!(body.contains("**Flaky** (failed, then passed on an immediate rerun of the same tree): `test_race`"), "{body}");
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
                    line: "assert clamp(-5, 0, 3) == 0 ` @alice </details> [x](http://e.vil)"
                        .into(),
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
                stage: "reproduce".into(),
                code: FailureCode::ReproductionFailed,
                reason: "the test the model wrote passes on the base commit".into(),
                output_tail: None,
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
}
