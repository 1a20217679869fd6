//! TEST_REPORT.json's Python `unittest` and TAP readers against real captured output
//! (`tests/data/test_reports/`, whose README says how each file was made), and through the judge.

use std::time::{Duration, SystemTime};

use autofix::exec::CommandOutcome;
use autofix::pipeline::checks::{CheckRun, Relevance, Verdict, compare};
use autofix::pipeline::test_report::{TestCounts, parse_output, report_for};

use crate::support::reports;

use reports::{captured, counts, data_dir, parsed, without_passes};

// ---- Python unittest ----

const UNITTEST_FAILURES: &[&str] = &[
    "tests.test_broken",
    "tests.test_calc.CalcTest.test_divide",
    "tests.test_calc.SetupFails.test_never_runs",
    "tests.test_calc.CalcTest.test_add",
];

#[test]
fn unittest_counts_failures_and_errors_as_failed_and_names_each_by_its_dotted_path() {
    let (parser, tests) = parsed("unittest_mixed.txt");
    assert_eq!(parser, "unittest");
    // Ran 8: failures=1 + errors=3 failed, skipped=1; the expected failure, the unexpected
    // success and test_mul passed.
    assert_eq!(tests, counts(3, 4, 1, UNITTEST_FAILURES));
}

#[test]
fn the_verbose_form_of_unittest_gives_the_same_report() {
    assert_eq!(
        parsed("unittest_mixed_verbose.txt"),
        parsed("unittest_mixed.txt")
    );
}

#[test]
fn a_module_unittest_cannot_import_is_a_failure_named_by_the_module() {
    assert_eq!(
        parsed("unittest_import_error.txt"),
        (
            "unittest".to_string(),
            counts(1, 1, 0, &["tests.test_broken"])
        )
    );
}

#[test]
fn a_passing_unittest_run_with_a_skip_names_no_failures() {
    assert_eq!(
        parsed("unittest_ok.txt"),
        ("unittest".to_string(), counts(2, 0, 1, &[]))
    );
}

#[test]
fn the_headers_of_python_3_10_and_3_13_give_the_same_names() {
    // 3.10 prints `FAIL: test_add (tests.test_calc.CalcTest)`, 3.11 and later add the method.
    assert_eq!(
        parsed("unittest_mixed_py310.txt"),
        parsed("unittest_mixed.txt")
    );
    assert_eq!(
        parsed("unittest_mixed_py313.txt"),
        parsed("unittest_mixed.txt")
    );
}

#[test]
fn a_unittest_run_that_found_no_tests_is_recognised_with_zero_counts() {
    assert_eq!(
        parsed("unittest_no_tests_py313.txt"),
        ("unittest".to_string(), TestCounts::default())
    );
}

#[test]
fn a_failing_subtest_is_named_with_its_parameters() {
    let output = "F\n\
                  ======================================================================\n\
                  FAIL: test_even (tests.test_num.NumTest.test_even) (n=3)\n\
                  ----------------------------------------------------------------------\n\
                  AssertionError: 1 != 0\n\
                  \n\
                  ----------------------------------------------------------------------\n\
                  Ran 1 test in 0.001s\n\
                  \n\
                  FAILED (failures=1)\n";
    assert_eq!(
        parse_output(output),
        Some((
            "unittest".to_string(),
            counts(0, 1, 0, &["tests.test_num.NumTest.test_even (n=3)"])
        ))
    );
}

#[test]
fn a_bare_ok_or_a_ran_line_that_no_closing_line_follows_is_not_unittest() {
    assert_eq!(parse_output("OK\n"), None);
    assert_eq!(parse_output("FAILED (failures=1)\n"), None);
    assert_eq!(parse_output("Ran 3 tests in 0.004s\n"), None);
    assert_eq!(
        parse_output("Ran 3 tests in 0.004s\nuploading results\nOK\n"),
        None
    );
    assert_eq!(
        parse_output("Ran 3 tests in 0.004s\n\nOK (warnings=2)\n"),
        None
    );
}

#[test]
fn pytest_output_is_not_read_as_unittest_nor_unittest_as_pytest() {
    assert_eq!(parsed("pytest_mixed.txt").0, "pytest");
    assert_eq!(parsed("unittest_mixed_verbose.txt").0, "unittest");
}

// ---- TAP ----

#[test]
fn node_tap_counts_leaf_tests_and_names_nested_failures_by_their_parents() {
    let (parser, tests) = parsed("tap_node_mixed.txt");
    assert_eq!(parser, "tap");
    // Leaves: adds, multiplies, deep pass pass; adds wrongly, throws, divides wrongly, deep
    // failure fail; the skip and the failing todo are skipped. `math` and `nested` only sum.
    assert_eq!(
        tests,
        counts(
            3,
            4,
            2,
            &[
                "adds wrongly",
                "throws",
                "math > divides wrongly",
                "math > nested > deep failure"
            ]
        )
    );
}

#[test]
fn prove_verbose_tap_is_read_per_file_with_the_file_in_each_name() {
    // basic.t: adds, multiplies, doubles pass, a skip and a failing todo; other.t: one pass.
    assert_eq!(
        parsed("tap_prove_mixed.txt"),
        (
            "tap".to_string(),
            counts(
                4,
                2,
                2,
                &[
                    "t/basic.t > adds wrongly",
                    "t/basic.t > math > divides wrongly"
                ]
            )
        )
    );
}

#[test]
fn prove_without_v_prints_only_a_summary_which_is_left_unread() {
    assert_eq!(parse_output(&captured("tap_prove_summary.txt")), None);
}

#[test]
fn a_parent_that_fails_itself_while_its_subtests_pass_is_a_failure() {
    let output = "TAP version 14\n# Subtest: table\n    ok 1 - a\n    ok 2 - b\n    1..2\n\
                  not ok 1 - table\n  ---\n  error: 'cleanup left files behind'\n  ...\n1..1\n";
    let (parser, tests) = parse_output(output).expect("recognised");
    assert_eq!(parser, "tap");
    assert_eq!(tests.passes, ["table > a", "table > b"]);
    assert_eq!(without_passes(tests), counts(2, 1, 0, &["table"]));
}

#[test]
fn directives_escapes_and_missing_descriptions_are_read_as_tap_means_them() {
    let output = "1..5\nnot ok 1 - counts \\# of lines # TODO later\nok 2 - fast # skipped: slow\n\
                  not ok 3\nok 4 - uses a \\\\ path\nnot ok 5 - parses # Skip no parser\n";
    let (_, tests) = parse_output(output).expect("recognised");
    assert_eq!(tests.passes, ["uses a \\ path"]);
    assert_eq!(without_passes(tests), counts(1, 1, 3, &["test 3"]));
    let named = "1..1\nnot ok 1 - counts \\# of lines\n";
    assert_eq!(
        parse_output(named),
        Some(("tap".to_string(), counts(0, 1, 0, &["counts # of lines"])))
    );
}

#[test]
fn a_bail_out_is_a_failure() {
    let output = "1..3\nok 1 - connects\nBail out! no database\n";
    let (_, tests) = parse_output(output).expect("recognised");
    assert_eq!(tests.passes, ["connects"]);
    assert_eq!(
        without_passes(tests),
        counts(1, 1, 0, &["Bail out! no database"])
    );
}

#[test]
fn test_points_in_other_text_without_a_plan_are_not_tap() {
    assert_eq!(
        parse_output("ok 1 - looks like tap\nnot ok 2 - so does this\n"),
        None
    );
    assert_eq!(parsed("go_test_verbose.txt").0, "go-test");
    assert_eq!(parsed("cargo_test_failing.txt").0, "cargo-test");
    assert_eq!(parsed("unittest_mixed_verbose.txt").0, "unittest");
}

#[test]
fn lines_inside_a_yaml_block_are_not_test_points() {
    let output = "1..1\nnot ok 1 - prints tap\n  ---\n  output: |-\n    ok 1 - inner\n    1..1\n  \
                  ...\n";
    assert_eq!(
        parse_output(output),
        Some(("tap".to_string(), counts(0, 1, 0, &["prints tap"])))
    );
}

#[test]
fn tap_after_other_runners_output_is_counted_with_it() {
    let output = captured("unittest_ok.txt") + &captured("tap_node_mixed.txt");
    let (parser, tests) = parse_output(&output).expect("recognised");
    assert_eq!(parser, "unittest+tap");
    assert_eq!(
        (tests.passed, tests.failed, tests.skipped),
        (2 + 3, 4, 1 + 2)
    );
}

// ---- the judge ----

fn report(name: &str, exit_code: i32) -> autofix::pipeline::test_report::CommandReport {
    let outcome = CommandOutcome {
        exit_code: Some(exit_code),
        signal: None,
        timed_out: false,
        duration: Duration::from_millis(5),
        output: captured(name),
        output_bytes: 0,
        truncated: false,
    };
    let command = ["python3", "-m", "unittest"].map(String::from);
    report_for(
        "test",
        &command,
        &outcome,
        &data_dir(),
        SystemTime::now(),
        false,
    )
}

#[test]
fn a_unittest_test_that_fails_only_on_the_change_makes_the_change_worse_by_name() {
    let base = CheckRun::new(report("unittest_story_base.txt", 1), None);
    let change = CheckRun::new(report("unittest_story_change.txt", 1), None);
    let relevance = Relevance::new("The parser drops the last line.", &["calc.py".to_string()]);
    let comparison = compare(Some(&base), change, &relevance);
    assert_eq!(
        comparison.new_failures,
        ["tests.test_calc.CalcTest.test_mul"]
    );
    assert_eq!(
        comparison.still_failing,
        ["tests.test_calc.CalcTest.test_add"]
    );
    let Verdict::Worse { why } = &comparison.verdict else {
        panic!("a new failure was accepted: {comparison:?}")
    };
    assert!(why.contains("tests.test_calc.CalcTest.test_mul"), "{why}");
}

// ---- new tests, through the judge ----

fn pytest_run(name: &str) -> CheckRun {
    let mut report = report(name, 1);
    report.command = ["python3", "-m", "pytest", "-v"].map(String::from).to_vec();
    CheckRun::new(report.clone(), Some(report))
}

const CLAMP_TEST: &str = "tests/test_calc.py::test_clamp_limits_both_ends";

fn about_clamp() -> Relevance {
    Relevance::new("`clamp` ignores its upper bound", &["calc.py".to_string()])
}

#[test]
fn a_pytest_test_the_change_adds_that_fails_is_named_as_new() {
    let comparison = compare(
        Some(&pytest_run("pytest_story_base_verbose.txt")),
        pytest_run("pytest_story_new_failing_verbose.txt"),
        &about_clamp(),
    );
    assert_eq!(
        comparison.verdict,
        Verdict::Worse {
            why: "new tests fail with this change: \
                  tests/test_calc.py::test_clamp_keeps_the_upper_bound"
                .to_string()
        }
    );
    assert_eq!(
        comparison.new_failing_tests,
        ["tests/test_calc.py::test_clamp_keeps_the_upper_bound"]
    );
    assert!(comparison.new_failures.is_empty());
    assert_eq!(comparison.still_failing, [CLAMP_TEST]);
}

#[test]
fn a_pytest_test_the_change_adds_that_passes_is_the_evidence_its_issue_asks_for() {
    let base = pytest_run("pytest_story_base_verbose.txt");
    let same = compare(Some(&base), base.clone(), &about_clamp());
    assert_eq!(same.demanded, [CLAMP_TEST], "nothing new, nothing fixed");
    let comparison = compare(
        Some(&base),
        pytest_run("pytest_story_new_passing_verbose.txt"),
        &about_clamp(),
    );
    assert_eq!(comparison.verdict, Verdict::NoWorse, "{comparison:?}");
    assert_eq!(
        comparison.new_tests,
        ["tests/test_calc.py::test_clamp_keeps_the_lower_bound"]
    );
    assert!(comparison.demanded.is_empty());
}
