//! Audit: a strict-JSON review of the finished change (coder-workflow.md's reviewer) that can
//! send the work back with must-fix items; it cannot accept a change whose validation failed.

use serde::{Deserialize, Serialize};

use super::StageOutputError;
use super::issue::Issue;
use super::plan::Plan;
use super::test_report::TestReport;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    Accepted,
    Rejected,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Review {
    pub decision: Decision,
    pub reasons: Vec<String>,
    pub must_fixes: Vec<String>,
    pub nice_to_haves: Vec<String>,
}

/// The review prompt: the issue, the plan, the unified diff of the change, the test report.
pub fn prompt(_issue: &Issue, _plan: &Plan, _diff: &str, _report: &TestReport) -> String {
    String::new()
}

/// Strictly parses the review; `rejected` without any must-fix item is invalid.
pub fn parse(_text: &str) -> Result<Review, StageOutputError> {
    Err(StageOutputError::new("audit", "not supported yet"))
}
