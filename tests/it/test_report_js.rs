//! TEST_REPORT.json's Jest and Vitest readers against their real default output
//! (`tests/data/test_reports/`, whose README says how each file was made).

use std::fs;

use autofix::pipeline::test_report::parse_output;

use crate::support::reports;

use reports::{captured, counts, data_dir, parsed, without_passes};

/// The two failing tests of `math.test.js`, as both readers name them.
const MATH_FAILURES: [&str; 2] = [
    "src/math.test.js > add > adds wrongly on purpose",
    "src/math.test.js > add > with negatives > fails deep inside",
];

// ---- Jest ----

#[test]
fn jest_counts_come_from_its_tests_line_with_todo_as_skipped_and_a_file_that_failed_to_run_as_one_failure()
 {
    let (parser, tests) = parsed("jest_mixed.txt");
    assert_eq!(parser, "jest");
    // Tests: 2 failed, 1 skipped, 1 todo, 3 passed; broken.test.js ran no test.
    let [wrongly, deep] = MATH_FAILURES;
    assert_eq!(
        tests,
        counts(3, 3, 2, &[wrongly, deep, "src/broken.test.js"])
    );
}

#[test]
fn colour_codes_in_jest_output_are_looked_through() {
    assert_eq!(parsed("jest_mixed_color.txt"), parsed("jest_mixed.txt"));
}

#[test]
fn a_jest_file_that_fails_to_load_is_a_failure_named_by_its_path() {
    assert_eq!(
        parsed("jest_suite_error.txt"),
        ("jest".to_string(), counts(0, 1, 0, &["src/broken.test.js"]))
    );
}

#[test]
fn a_passing_jest_run_names_no_failures() {
    assert_eq!(
        parsed("jest_passing.txt"),
        ("jest".to_string(), counts(1, 0, 0, &[]))
    );
}

#[test]
fn jest_repeating_a_failure_in_its_closing_summary_counts_it_once() {
    let summary_again = "\nSummary of all failing tests\nFAIL src/broken.test.js\n  ● Test suite failed to run\n\n    Cannot find module\n";
    let output = captured("jest_suite_error.txt").replacen(
        "\nTest Suites:",
        &format!("{summary_again}\nTest Suites:"),
        1,
    );
    assert_eq!(
        parse_output(&output),
        Some(("jest".to_string(), counts(0, 1, 0, &["src/broken.test.js"])))
    );
}

#[test]
fn two_jest_runs_in_one_output_are_summed() {
    let output = format!(
        "{}\n{}",
        captured("jest_mixed.txt"),
        captured("jest_passing.txt")
    );
    let (parser, tests) = parse_output(&output).expect("recognised");
    assert_eq!(parser, "jest");
    assert_eq!((tests.passed, tests.failed, tests.skipped), (4, 3, 2));
}

#[test]
fn a_jest_tests_line_with_an_outcome_jest_never_prints_is_not_read() {
    assert_eq!(
        parse_output("Tests:       2 flaky, 3 passed, 5 total\n"),
        None
    );
}

// ---- Vitest ----

#[test]
fn vitest_counts_come_from_its_tests_line_with_todo_as_skipped_and_a_file_that_failed_to_load_as_one_failure()
 {
    let (parser, tests) = parsed("vitest_mixed.txt");
    assert_eq!(parser, "vitest");
    // Tests 2 failed | 3 passed | 1 skipped | 1 todo; broken.test.js collected no test.
    let [wrongly, deep] = MATH_FAILURES;
    assert_eq!(
        tests,
        counts(3, 3, 2, &["src/broken.test.js", wrongly, deep])
    );
}

#[test]
fn colour_codes_in_vitest_output_are_looked_through() {
    assert_eq!(parsed("vitest_mixed_color.txt"), parsed("vitest_mixed.txt"));
}

#[test]
fn a_vitest_file_that_fails_to_load_is_a_failure_named_by_its_path() {
    assert_eq!(
        parsed("vitest_suite_error.txt"),
        (
            "vitest".to_string(),
            counts(0, 1, 0, &["src/broken.test.js"])
        )
    );
}

#[test]
fn a_vitest_suite_whose_before_all_hook_throws_is_one_failure_and_its_tests_are_skipped() {
    assert_eq!(
        parsed("vitest_hook_failure.txt"),
        (
            "vitest".to_string(),
            counts(1, 1, 2, &["src/hooks.test.js > database"])
        )
    );
}

#[test]
fn a_passing_vitest_run_names_no_failures() {
    assert_eq!(
        parsed("vitest_passing.txt"),
        ("vitest".to_string(), counts(1, 0, 0, &[]))
    );
}

#[test]
fn two_vitest_runs_in_one_output_are_summed() {
    let output = format!(
        "{}\n{}",
        captured("vitest_mixed.txt"),
        captured("vitest_suite_error.txt")
    );
    let (parser, tests) = parse_output(&output).expect("recognised");
    assert_eq!(parser, "vitest");
    assert_eq!((tests.passed, tests.failed, tests.skipped), (3, 4, 2));
    assert_eq!(tests.failures.len(), 3, "{:?}", tests.failures);
}

#[test]
fn a_vitest_tests_line_with_an_outcome_vitest_never_prints_is_not_read() {
    assert_eq!(parse_output("      Tests  2 flaky | 3 passed (5)\n"), None);
}

#[test]
fn a_fail_line_outside_vitest_failure_sections_names_no_failure() {
    // Jest's coloured file badge reads ` FAIL  path` once stripped, like Vitest's headers.
    let output = format!(
        " FAIL  src/other.test.js\n{}",
        captured("vitest_passing.txt")
    );
    assert_eq!(
        parse_output(&output),
        Some(("vitest".to_string(), counts(1, 0, 0, &[])))
    );
}

// ---- telling the runners apart ----

/// Every recorded output of the other runners (cargo test, nextest, pytest, go test).
fn other_runners_outputs() -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(data_dir())
        .expect("listing the recorded outputs")
        .map(|entry| entry.expect("a directory entry").file_name())
        .map(|name| name.to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".txt"))
        .filter(|name| !name.starts_with("jest_") && !name.starts_with("vitest_"))
        .collect();
    names.sort();
    assert!(
        names.len() >= 10,
        "expected the other runners' outputs, found {names:?}"
    );
    names
}

#[test]
fn no_other_runners_output_is_read_as_jest() {
    for name in other_runners_outputs() {
        let parser = parse_output(&captured(&name)).map(|(parser, _)| parser);
        assert!(
            !parser
                .iter()
                .any(|parser| parser.split('+').any(|p| p == "jest")),
            "{name} was read as jest ({parser:?})"
        );
    }
}

#[test]
fn no_other_runners_output_is_read_as_vitest() {
    for name in other_runners_outputs() {
        let parser = parse_output(&captured(&name)).map(|(parser, _)| parser);
        assert!(
            !parser
                .iter()
                .any(|parser| parser.split('+').any(|p| p == "vitest")),
            "{name} was read as vitest ({parser:?})"
        );
    }
}

#[test]
fn a_jest_run_is_never_read_as_vitest_nor_a_vitest_run_as_jest() {
    for name in [
        "jest_mixed.txt",
        "jest_mixed_color.txt",
        "jest_suite_error.txt",
        "jest_passing.txt",
    ] {
        assert_eq!(parsed(name).0, "jest", "{name}");
    }
    for name in [
        "vitest_mixed.txt",
        "vitest_mixed_color.txt",
        "vitest_suite_error.txt",
        "vitest_hook_failure.txt",
        "vitest_passing.txt",
    ] {
        assert_eq!(parsed(name).0, "vitest", "{name}");
    }
}

#[test]
fn a_script_running_jest_then_vitest_counts_both_and_names_each_failure_once() {
    let output = format!(
        "{}\n{}",
        captured("jest_mixed.txt"),
        captured("vitest_mixed.txt")
    );
    let (parser, tests) = parse_output(&output).expect("recognised");
    assert_eq!(parser, "jest+vitest");
    let [wrongly, deep] = MATH_FAILURES;
    assert_eq!(
        tests.passes,
        [
            "src/math.test.js > add > adds small numbers",
            "src/math.test.js > top level passes"
        ],
        "Vitest's tree names them; Jest printed none for several files"
    );
    assert_eq!(
        without_passes(tests),
        counts(6, 6, 4, &[wrongly, deep, "src/broken.test.js"])
    );
}
