//! What a job has done so far, saved after every stage so a rerun resumes instead of repeating.

use serde::{Deserialize, Serialize};

use crate::config::repo::PullRequestSection;
use crate::pipeline::checks::Comparison;
use crate::pipeline::issue::Issue;
use crate::pipeline::test_report::CommandReport;
use crate::worker::publish::{FailureReport, StatusView};

/// What a job has done so far, saved after every stage (the store's opaque checkpoint).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(super) struct Checkpoint {
    /// The request was checked and accepted.
    pub(super) authorized: bool,
    /// The issue as the API reported it when the request was accepted.
    pub(super) issue: Option<Issue>,
    pub(super) status: StatusView,
    pub(super) status_comment: Option<u64>,
    pub(super) default_branch: Option<String>,
    pub(super) fixed: Option<FixedChange>,
    /// The commit a push was started with: a tip equal to it on the remote is this job's own.
    pub(super) push_intent: Option<String>,
    pub(super) pushed: Option<String>,
    pub(super) change_request: Option<(u64, String)>,
    /// A failure decided but perhaps not yet published.
    pub(super) failure: Option<FailureReport>,
}

/// The committed change, with everything the change request needs once the worktree is gone.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct FixedChange {
    pub(super) branch: String,
    pub(super) commit: String,
    pub(super) subject: String,
    pub(super) plan_steps: Vec<String>,
    pub(super) changed_files: Vec<String>,
    pub(super) validation: Vec<CommandReport>,
    /// Each validation command on the base commit and on the change (none in checkpoints
    /// written before base runs existed).
    #[serde(default)]
    pub(super) checks: Vec<Comparison>,
    pub(super) repairs: u32,
    pub(super) input_tokens: u64,
    pub(super) output_tokens: u64,
    pub(super) pull_request: PullRequestSection,
    pub(super) keep_on_failure: bool,
}
