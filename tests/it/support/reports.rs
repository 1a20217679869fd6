//! The recorded runner outputs of `tests/data/test_reports/` (its README says how each was made),
//! read as TEST_REPORT.json reads them; shared by the reader stories.
#![allow(dead_code)] // each story file uses its own part

use std::path::{Path, PathBuf};

use autofix::pipeline::test_report::{TestCounts, parse_output};

pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/test_reports")
}

/// One recorded output, whole.
pub fn captured(name: &str) -> String {
    std::fs::read_to_string(data_dir().join(name)).unwrap_or_else(|e| panic!("reading {name}: {e}"))
}

/// The parser names and counts the recorded output `name` reads as, the passing names aside
/// (see [`passes`]): they depend on how verbose the run was, the counts do not.
pub fn parsed(name: &str) -> (String, TestCounts) {
    let (parser, counts) =
        parse_output(&captured(name)).unwrap_or_else(|| panic!("{name} was not recognised"));
    (parser, without_passes(counts))
}

/// The passing tests the recorded output `name` names.
pub fn passes(name: &str) -> Vec<String> {
    parse_output(&captured(name))
        .unwrap_or_else(|| panic!("{name} was not recognised"))
        .1
        .passes
}

/// `counts` without its passing names.
pub fn without_passes(counts: TestCounts) -> TestCounts {
    TestCounts {
        passes: Vec::new(),
        ..counts
    }
}

/// Counts as a runner that names its passing tests' number states them.
pub fn counts(passed: u64, failed: u64, skipped: u64, failures: &[&str]) -> TestCounts {
    TestCounts {
        passed,
        failed,
        skipped,
        failures: failures.iter().map(|name| name.to_string()).collect(),
        ..TestCounts::default()
    }
}
