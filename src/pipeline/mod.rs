//! The bot's pipeline on a local repository (`autofix fix`): triage → plan → reproduce → context →
//! edit ⇄ validate (repair) → audit → one commit on the feature branch. One file per stage.

mod answer;
pub mod audit;
pub mod baseline_cache;
pub mod budget;
pub mod checkout;
pub mod checks;
pub mod ci_log;
pub mod context;
pub mod dep_cache;
pub mod fix;
pub mod issue;
pub mod json_stage;
pub mod plan;
mod plan_files;
pub mod prompts;
pub mod proof;
pub mod repo_map;
pub mod reproduce;
mod run_log;
pub mod sanitise;
pub mod sections;
pub mod settings;
pub mod test_report;
pub mod triage;

use crate::failure::Stage;

/// Why a model's answer for a stage could not be used: one line, naming the stage and field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{stage}: {message}")]
pub struct StageOutputError {
    pub stage: Stage,
    pub message: String,
}

impl StageOutputError {
    pub fn new(stage: Stage, message: impl Into<String>) -> Self {
        StageOutputError {
            stage,
            message: message.into(),
        }
    }
}
