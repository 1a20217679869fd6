//! What shows that a change fixes its issue: the reproduction — tests written before the fix
//! that fail on the base commit — and how they fared with the change, as `RESULT.json` says it.

use serde::{Deserialize, Serialize};

use crate::config::repo::ReproduceMode;

/// A job's reproduction of its issue, or why it has none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reproduction {
    pub mode: ReproduceMode,
    /// The tests that reproduce the issue: they fail on the base commit. Empty when none does.
    pub tests: Vec<String>,
    /// `failed` when `tests` failed on the base commit; `None` without a reproduction.
    pub base: Option<TestOutcome>,
    /// How `tests` fared with the change; `None` without a reproduction or before the change
    /// was judged.
    pub change: Option<TestOutcome>,
    /// How many reproduce answers were asked for.
    pub attempts: u32,
    /// Each reproducing test's failure on the base commit, in `tests` order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<BaseFailure>,
    /// The test files the reproduce stage wrote; the fix may not change them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// Why there is no reproduction, one line (when `tests` is empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unproven: Option<String>,
}

/// How the reproducing tests ran on one tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TestOutcome {
    Passed,
    Failed,
}

/// One reproducing test and the line that shows its failure on the base commit (the assertion,
/// secrets redacted, cut to [`MAX_FAILURE_LINE`] characters).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BaseFailure {
    pub test: String,
    pub line: String,
}

/// Most characters of a failure line shown as proof.
pub const MAX_FAILURE_LINE: usize = 200;

impl Reproduction {
    /// No reproduction was tried, or none was found: `unproven` says why.
    pub fn none(mode: ReproduceMode, attempts: u32, unproven: impl Into<String>) -> Reproduction {
        Reproduction {
            mode,
            tests: Vec::new(),
            base: None,
            change: None,
            attempts,
            failures: Vec::new(),
            files: Vec::new(),
            unproven: Some(unproven.into()),
        }
    }

    /// Tests failed on the base commit and pass with the change: the issue is shown fixed.
    pub fn proven(&self) -> bool {
        !self.tests.is_empty()
            && self.base == Some(TestOutcome::Failed)
            && self.change == Some(TestOutcome::Passed)
    }
}
