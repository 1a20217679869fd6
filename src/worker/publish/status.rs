//! The status comment a job keeps up to date on the issue: the checklist of its steps, the
//! checks it found, the reproduction, notes, and how the job ended, failures with how to retry.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::{Cost, status_marker};
use crate::detect::{DetectedCommand, Stage as DetectStage};
use crate::failure::{Failure, FailureCode, Stage};
use crate::forge::ForgeKind;
use crate::pipeline::proof::Reproduction;
use crate::quote::{code_span, fenced, inert};
use crate::store::JobId;

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

    /// The step's line in the checklist, in the words of the forge.
    fn label(self, forge: ForgeKind) -> String {
        match self {
            Step::Authorized => format!(
                "Request checked (who asked, issue open, no autofix {} yet)",
                forge.change_request_abbreviation()
            ),
            Step::Fetched => {
                "Repository fetched and `.autofix.toml` read from the default branch".into()
            }
            Step::Fixed => "Change written and validated by the repository's own commands".into(),
            Step::Pushed => "Branch pushed".into(),
            Step::Opened => format!("{} opened", forge.change_request_name()),
        }
    }
}

/// Everything the status comment shows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StatusView {
    pub job: JobId,
    pub requested_by: String,
    /// The forge the issue is on, which names the change request (none in status comments
    /// saved by an earlier version: they say "Pull request").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forge: Option<ForgeKind>,
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
pub(super) fn found_check_item(command: &DetectedCommand) -> String {
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
        stage: Stage,
        word: String,
    },
}

/// The facts of a failure a person needs to act on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailureReport {
    /// The failure, its reason and output tail with secrets already redacted.
    #[serde(flatten)]
    pub failure: Failure,
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
        let label = step.label(view_forge(view));
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

/// The forge of the status: as recorded, or, in a status an earlier version saved, GitLab only
/// when its outcome named a merge request.
fn view_forge(view: &StatusView) -> ForgeKind {
    match (&view.forge, &view.outcome) {
        (Some(forge), _) => *forge,
        (
            None,
            Some(StatusOutcome::Succeeded {
                change_request_word,
                ..
            }),
        ) if change_request_word == ForgeKind::GitLab.change_request_name() => ForgeKind::GitLab,
        _ => ForgeKind::GitHub,
    }
}

/// The part of the status comment that explains a failure and how to try again.
fn failure_section(report: &FailureReport) -> String {
    let failure = &report.failure;
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
    if let Some(branch) = &report.branch_kept {
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
        label = report.trigger_label
    );
    text
}

/// What a maintainer can do about a failure of this code, beyond addressing its reason.
pub(super) fn what_a_maintainer_can_do(code: FailureCode) -> Option<&'static str> {
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
