//! How a run of the pipeline ended, as `RESULT.json` records it: the commit or the failure,
//! the checks before and after, the reproduction, the candidates, the tokens and the cost.

use std::path::PathBuf;

use serde::Serialize;

use super::{CandidateReport, ProposedPlan};
use crate::detect::{DetectedCommand, LeftOut};
use crate::failure::{Failure, FailureCode, Stage};
use crate::pipeline::checks::Comparison;
use crate::pipeline::proof::Reproduction;
use crate::pipeline::test_report::CommandReport;

/// How the run ended, as written to `RESULT.json`.
#[derive(Debug, Clone, Serialize)]
pub struct FixSummary {
    pub committed: bool,
    /// Why the run ended without its change; `None` when it did not fail.
    #[serde(flatten, serialize_with = "failure_fields")]
    pub failure: Option<Failure>,
    pub branch: Option<String>,
    pub commit: Option<String>,
    pub subject: Option<String>,
    pub repairs: u32,
    pub reviews: u32,
    /// Answers that could not be used and were asked for once more.
    pub corrections: u32,
    pub validated: bool,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// What this run's model calls cost, in US dollars (0 with `price_unknown`).
    pub cost_usd: f64,
    /// The model has no known price: its calls counted as $0.
    pub price_unknown: bool,
    /// The plan's steps, the change's summary for people.
    pub plan_steps: Vec<String>,
    /// The files the commit changed, in path order.
    pub changed_files: Vec<String>,
    /// The last run of the validation commands (the rerun, for a command that failed once).
    pub validation: Vec<CommandReport>,
    /// Each validation command on the base commit and on the change, compared.
    pub checks: Vec<Comparison>,
    /// Tests that failed and then passed on an immediate rerun of the same tree.
    pub flaky: Vec<String>,
    /// The end of the output of the command that failed last (secrets redacted): what a
    /// failure of the run quotes.
    #[serde(skip)]
    pub last_failing_output: Option<String>,
    /// Commands that ran with network: every `[[setup]]` step and `network = true` validation,
    /// each as "name (`argv`)", or "`argv`" when its name is the command itself.
    pub networked_commands: Vec<String>,
    /// The checks found in the repository and used because it configures no `[[validate]]`,
    /// each with why; empty when the configuration's own checks ran.
    pub detected: Vec<DetectedCommand>,
    /// What detection saw but did not use, and why.
    pub detected_left_out: Vec<LeftOut>,
    pub artifacts: PathBuf,
    /// The triage and plan that wait for a maintainer's approval; nothing was edited.
    pub proposed: Option<ProposedPlan>,
    /// The tests that show the issue and how they fared, or why there are none; `None` when the
    /// run ended before the reproduce stage.
    pub reproduction: Option<Reproduction>,
    /// The candidates, when the job asked for several: each one's verdict, and which was chosen.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<CandidateReport>,
    /// The choice in one line for people ("3 candidates: #2 chosen — …").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub candidates_line: Option<String>,
    /// The service's `candidates.max`, when the repository asked for more.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub candidates_lowered_to: Option<u32>,
    /// How long the candidates took side by side, and the sum of their validations' times.
    #[serde(skip_serializing_if = "is_zero")]
    pub candidates_wall_ms: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub candidates_validation_ms: u64,
    /// Time the validation commands took on the change, every round included.
    pub validation_ms: u64,
    /// Why the committed change is not proven: set only when `[candidates] on_unproven =
    /// "draft"` keeps it for a draft (the bot), instead of failing the job.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unproven: Option<String>,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

/// How `RESULT.json` shows the failure, as it always has: `failure_code`, `failure_stage`,
/// `reason` and `failure_output_tail`, each null when the run did not fail.
fn failure_fields<S: serde::Serializer>(
    failure: &Option<Failure>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct FailureFields<'a> {
        failure_code: Option<FailureCode>,
        failure_stage: Option<Stage>,
        reason: Option<&'a str>,
        failure_output_tail: Option<&'a str>,
    }
    let failure = failure.as_ref();
    FailureFields {
        failure_code: failure.map(|failure| failure.code),
        failure_stage: failure.map(|failure| failure.stage),
        reason: failure.map(|failure| failure.reason.as_str()),
        failure_output_tail: failure.and_then(|failure| failure.output_tail.as_deref()),
    }
    .serialize(serializer)
}

impl FixSummary {
    /// Nothing done yet, artifacts in `artifacts`.
    pub(super) fn new(artifacts: PathBuf) -> FixSummary {
        FixSummary {
            committed: false,
            failure: None,
            branch: None,
            commit: None,
            subject: None,
            repairs: 0,
            corrections: 0,
            reviews: 0,
            validated: false,
            input_tokens: 0,
            output_tokens: 0,
            cost_usd: 0.0,
            price_unknown: false,
            plan_steps: Vec::new(),
            changed_files: Vec::new(),
            validation: Vec::new(),
            checks: Vec::new(),
            flaky: Vec::new(),
            last_failing_output: None,
            networked_commands: Vec::new(),
            detected: Vec::new(),
            detected_left_out: Vec::new(),
            artifacts,
            proposed: None,
            reproduction: None,
            candidates: Vec::new(),
            candidates_line: None,
            candidates_lowered_to: None,
            candidates_wall_ms: 0,
            candidates_validation_ms: 0,
            validation_ms: 0,
            unproven: None,
        }
    }
}
