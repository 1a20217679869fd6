//! Stories about judging a change by what it makes worse: tests that already failed, tests
//! that flake, tests deleted or skipped, new tests, and the failing tests the issue is about.

use super::*;
use crate::pipeline::test_report::{CommandReport, TestCounts};

fn run(passed: bool, counts: Option<(u64, u64, u64, &[&str])>) -> CommandReport {
    let tests = counts.map(|(passed, failed, skipped, names)| TestCounts {
        passed,
        failed,
        skipped,
        failures: names.iter().map(|name| name.to_string()).collect(),
        ..TestCounts::default()
    });
    CommandReport::pytest_run("test", passed, tests)
}

fn failing(names: &[&str], passed: u64) -> CommandReport {
    run(false, Some((passed, names.len() as u64, 0, names)))
}

/// A run whose runner names its passing tests too (`pytest -v`, `go test -v`, …).
fn naming(failing_names: &[&str], passing: &[&str]) -> CommandReport {
    let mut report = run(
        failing_names.is_empty(),
        Some((
            passing.len() as u64,
            failing_names.len() as u64,
            0,
            failing_names,
        )),
    );
    if let Some(tests) = report.tests.as_mut() {
        tests.passes = passing.iter().map(|name| name.to_string()).collect();
    }
    report
}

fn why(comparison: &Comparison) -> &str {
    match &comparison.verdict {
        Verdict::Worse { why } => why,
        _ => panic!("accepted: {comparison:?}"),
    }
}

/// An issue about something else, a change to `calc.py`.
fn unrelated() -> Relevance {
    Relevance::new(
        "The parser drops the last line.",
        &["src/calc.py".to_string()],
    )
}

fn consistently(report: CommandReport) -> CheckRun {
    CheckRun::new(report.clone(), Some(report))
}

#[test]
fn a_test_that_already_failed_on_the_base_does_not_count_against_the_change() {
    let base = consistently(failing(&["test_old"], 9));
    let change = consistently(failing(&["test_old"], 10));
    let comparison = compare(Some(&base), change, &unrelated());
    assert!(comparison.acceptable(), "{comparison:?}");
    assert_eq!(comparison.still_failing, vec!["test_old"]);
    assert!(comparison.new_failures.is_empty());
}

#[test]
fn a_test_that_passed_on_the_base_and_fails_now_makes_the_change_worse() {
    let base = consistently(failing(&["test_old"], 9));
    let change = consistently(failing(&["test_old", "test_new"], 8));
    let comparison = compare(Some(&base), change, &unrelated());
    assert!(!comparison.acceptable());
    assert_eq!(comparison.new_failures, vec!["test_new"]);
    let Verdict::Worse { why } = &comparison.verdict else {
        unreachable!()
    };
    assert!(why.contains("test_new"), "{why}");
}

#[test]
fn a_command_that_passed_on_the_base_must_pass_on_the_change() {
    let base = CheckRun::new(run(true, Some((10, 0, 0, &[]))), None);
    let change = consistently(failing(&["test_a"], 9));
    assert!(!compare(Some(&base), change, &unrelated()).acceptable());
    let unparsed = consistently(run(false, None));
    assert!(!compare(Some(&base), unparsed, &unrelated()).acceptable());
}

#[test]
fn without_a_base_run_any_failure_is_the_change_s_fault() {
    let change = consistently(failing(&["test_a"], 9));
    assert!(!compare(None, change, &unrelated()).acceptable());
}

#[test]
fn deleting_the_failing_test_is_not_a_fix() {
    let base = consistently(failing(&["test_old"], 9));
    let change = CheckRun::new(run(true, Some((9, 0, 0, &[]))), None);
    let comparison = compare(Some(&base), change, &unrelated());
    let Verdict::Worse { why } = &comparison.verdict else {
        panic!("deleting a test was accepted: {comparison:?}")
    };
    assert!(why.contains("10 → 9"), "{why}");
}

#[test]
fn skipping_the_failing_test_is_not_a_fix() {
    let base = consistently(failing(&["test_old"], 9));
    let change = CheckRun::new(run(true, Some((9, 0, 1, &[]))), None);
    let comparison = compare(Some(&base), change, &unrelated());
    let Verdict::Worse { why } = &comparison.verdict else {
        panic!("skipping a test was accepted: {comparison:?}")
    };
    assert!(why.contains("skip"), "{why}");
}

#[test]
fn a_failing_test_made_to_pass_is_listed_as_fixed() {
    let base = consistently(failing(&["test_old"], 9));
    let change = CheckRun::new(run(true, Some((10, 0, 0, &[]))), None);
    let comparison = compare(Some(&base), change, &unrelated());
    assert_eq!(comparison.verdict, Verdict::Passed);
    assert_eq!(comparison.fixed, vec!["test_old"]);
}

#[test]
fn a_test_that_fails_then_passes_on_the_rerun_is_flaky_and_not_blamed() {
    let base = CheckRun::new(run(true, Some((10, 0, 0, &[]))), None);
    let change = CheckRun::new(
        failing(&["test_race"], 9),
        Some(run(true, Some((10, 0, 0, &[])))),
    );
    let comparison = compare(Some(&base), change, &unrelated());
    assert_eq!(comparison.verdict, Verdict::Passed);
    assert_eq!(comparison.flaky, vec!["test_race"]);
    assert!(comparison.new_failures.is_empty());
}

#[test]
fn a_flaky_test_on_the_base_is_neither_fixed_nor_new() {
    let base = CheckRun::new(
        failing(&["test_old", "test_race"], 8),
        Some(failing(&["test_old"], 9)),
    );
    let change = CheckRun::new(
        failing(&["test_old", "test_race"], 8),
        Some(failing(&["test_old", "test_race"], 8)),
    );
    let comparison = compare(Some(&base), change, &unrelated());
    assert!(comparison.acceptable(), "{comparison:?}");
    assert_eq!(comparison.flaky, vec!["test_race"]);
    assert!(comparison.fixed.is_empty() && comparison.new_failures.is_empty());
}

#[test]
fn a_failing_command_whose_results_cannot_be_read_on_either_tree_is_never_accepted() {
    let base = consistently(run(false, None));
    let same = compare(Some(&base), consistently(run(false, None)), &unrelated());
    assert_eq!(
        same.verdict,
        Verdict::Worse {
            why: CANNOT_TELL.into()
        }
    );
    assert!(!CANNOT_TELL.contains('\n'), "one line");
    // Passing on the change is enough, whatever its output.
    let passes = CheckRun::new(run(true, None), None);
    assert_eq!(
        compare(Some(&base), passes, &unrelated()).verdict,
        Verdict::Passed
    );
}

#[test]
fn a_runner_that_lists_only_its_failures_never_runs_fewer_tests() {
    // `go test ./...` without -v: one failure on the base, `ok` lines only on the change.
    let mut base_report = failing(&["TestClamp"], 0);
    base_report.tests.as_mut().unwrap().only_failures_listed = true;
    let mut clean = run(true, Some((0, 0, 0, &[])));
    clean.tests.as_mut().unwrap().only_failures_listed = true;
    let comparison = compare(
        Some(&consistently(base_report)),
        CheckRun::new(clean, None),
        &unrelated(),
    );
    assert_eq!(comparison.verdict, Verdict::Passed, "{comparison:?}");
    assert_eq!(comparison.fixed, vec!["TestClamp"]);
}

#[test]
fn tests_that_no_longer_run_at_all_make_it_worse() {
    let base = consistently(failing(&["test_old"], 9));
    let broken_build = consistently(run(false, None));
    assert!(!compare(Some(&base), broken_build, &unrelated()).acceptable());
}

#[test]
fn a_timeout_is_never_acceptable_even_when_the_base_timed_out_too() {
    let base = consistently(failing(&["test_old"], 9));
    let mut slow = failing(&["test_old"], 9);
    slow.timed_out = true;
    assert!(!compare(Some(&base), consistently(slow.clone()), &unrelated()).acceptable());
    let slow_base = consistently(slow.clone());
    assert!(!compare(Some(&slow_base), consistently(slow), &unrelated()).acceptable());
}

#[test]
fn a_failing_test_the_issue_is_about_must_pass() {
    let base = consistently(failing(&["test_calc.py::test_clamp_limits_both_ends"], 3));
    let change = consistently(failing(&["test_calc.py::test_clamp_limits_both_ends"], 3));
    let relevance = Relevance::new("clamp ignores its bounds", &["src/calc.py".to_string()]);
    let comparison = compare(Some(&base), change, &relevance);
    let Verdict::Worse { why } = &comparison.verdict else {
        panic!("the issue's own test was left failing: {comparison:?}")
    };
    assert!(why.contains("test_clamp_limits_both_ends"), "{why}");
    assert_eq!(
        comparison.demanded,
        vec!["test_calc.py::test_clamp_limits_both_ends"]
    );
    assert!(
        comparison.left_alone().is_empty(),
        "a demanded test is never also to be left alone"
    );
}

#[test]
fn which_failing_tests_the_issue_or_the_change_may_be_about() {
    let calc = Relevance::new("`clamp` ignores its bounds", &["src/calc.py".to_string()]);
    assert!(calc.is_about("test_calc.py::test_limits"));
    assert!(calc.is_about("tests/test_calc.py::TestClamp::test_limits"));
    assert!(calc.is_about("test_other.py::test_clamp_limits_both_ends"));
    assert!(!calc.is_about("test_network.py::test_timeout"));
    let prose = Relevance::new("clamp ignores its bounds", &["src/calc.py".to_string()]);
    assert!(
        !prose.is_about("test_other.py::test_clamp_limits_both_ends"),
        "a word of prose is not an identifier"
    );
    let dotted = Relevance::new("flask.cli.load_dotenv fails", &["src/x.py".to_string()]);
    assert!(dotted.is_about("test_helpers.py::test_load_dotenv_path"));
    let named = Relevance::new("`test_timeout` hangs on CI", &["src/net.py".to_string()]);
    assert!(named.is_about("test_network.py::test_timeout"));
    let rust = Relevance::new("add subtracts", &["src/lib.rs".to_string()]);
    assert!(rust.is_about("tests::sum_of_two"));
    assert!(!rust.is_about("parser::tests::empty"));
    let module = Relevance::new("x", &["src/parser.rs".to_string()]);
    assert!(module.is_about("parser::tests::empty"));
    let go = Relevance::new("x", &["calc.go".to_string()]);
    assert!(go.is_about("calc_test.go::TestClamp"));
    let camel = Relevance::new("parseInput drops the last line", &["x.go".to_string()]);
    assert!(camel.is_about("TestParseInputKeepsTheLastLine"));
    let java = Relevance::new("x", &["src/main/java/Calc.java".to_string()]);
    assert!(java.is_about("CalcTest.java::testClamp"));
}

#[test]
fn common_words_the_issue_shares_with_unrelated_failing_tests_demand_nothing() {
    // flask's case: click moved on and three CLI tests fail on the base; the issue's prose
    // shares "error" and "loading" with their names, and the fix is in helpers.py.
    let unrelated_failures = [
        "tests/test_cli.py::test_help_echo_loading_error",
        "tests/test_cli.py::test_help_echo_exception",
        "tests/test_cli.py::test_flaskgroup_nested",
    ];
    let base = consistently(failing(&unrelated_failures, 400));
    let change = consistently(failing(&unrelated_failures, 401));
    let relevance = Relevance::new(
        "An error when loading a file from the instance folder: send_file gets the wrong path",
        &[
            "src/flask/helpers.py".to_string(),
            "tests/test_helpers.py".to_string(),
        ],
    );
    let comparison = compare(Some(&base), change, &relevance);
    assert_eq!(comparison.verdict, Verdict::NoWorse, "{comparison:?}");
    assert_eq!(comparison.still_failing.len(), 3);
}

#[test]
fn fixing_one_of_the_failing_tests_of_the_changed_file_is_enough() {
    // Every test of textkit.py failed on the base; the issue is about one of them.
    let base = consistently(failing(
        &[
            "test_textkit.py::test_clamp",
            "test_textkit.py::test_median",
        ],
        0,
    ));
    let change = consistently(failing(&["test_textkit.py::test_median"], 1));
    let relevance = Relevance::new("clamp ignores the upper bound", &["textkit.py".to_string()]);
    let comparison = compare(Some(&base), change, &relevance);
    assert!(comparison.acceptable(), "{comparison:?}");
    assert_eq!(comparison.fixed, vec!["test_textkit.py::test_clamp"]);
    assert_eq!(
        comparison.still_failing,
        vec!["test_textkit.py::test_median"]
    );
}

#[test]
fn a_failing_test_the_base_never_ran_is_reported_as_new_not_as_one_that_passed_there() {
    let base = consistently(naming(&["test_old"], &["test_a"]));
    let change = consistently(naming(&["test_old", "test_added"], &["test_a"]));
    let comparison = compare(Some(&base), change, &unrelated());
    assert_eq!(
        why(&comparison),
        "new tests fail with this change: test_added"
    );
    assert_eq!(comparison.new_tests, vec!["test_added"]);
    assert_eq!(comparison.new_failing_tests, vec!["test_added"]);
    assert!(comparison.new_failures.is_empty(), "{comparison:?}");
}

#[test]
fn a_test_that_passed_on_the_base_and_a_new_one_failing_are_each_named_for_what_they_are() {
    let base = consistently(naming(&["test_old"], &["test_a"]));
    let change = consistently(naming(&["test_old", "test_a", "test_added"], &[]));
    let comparison = compare(Some(&base), change, &unrelated());
    assert_eq!(
        why(&comparison),
        "tests that pass on the base commit fail with this change: test_a; \
             new tests fail with this change: test_added"
    );
    assert_eq!(comparison.new_failures, vec!["test_a"]);
}

#[test]
fn a_new_failing_test_on_a_base_that_passed_is_named_as_new() {
    let base = CheckRun::new(naming(&[], &["test_a", "test_b"]), None);
    let change = consistently(naming(&["test_added"], &["test_a", "test_b"]));
    let comparison = compare(Some(&base), change, &unrelated());
    assert_eq!(
        why(&comparison),
        "new tests fail with this change: test_added"
    );
}

#[test]
fn without_passing_names_on_the_base_a_test_failing_only_now_keeps_today_s_wording() {
    let base = consistently(failing(&["test_old"], 9));
    let change = consistently(naming(&["test_old", "test_added"], &["test_a"]));
    let comparison = compare(Some(&base), change, &unrelated());
    assert_eq!(
        why(&comparison),
        "tests that pass on the base commit fail with this change: test_added"
    );
    assert!(comparison.new_tests.is_empty() && comparison.new_failing_tests.is_empty());
    let json = serde_json::to_value(&comparison).expect("json");
    assert!(json.get("new_tests").is_none(), "{json}");
}

#[test]
fn a_new_passing_test_is_the_evidence_a_change_about_still_failing_tests_needs() {
    let about = "test_calc.py::test_clamp_limits_both_ends";
    let base = consistently(naming(&[about], &["test_calc.py::test_add"]));
    let change = consistently(naming(
        &[about],
        &[
            "test_calc.py::test_add",
            "test_calc.py::test_clamp_keeps_the_upper_bound",
        ],
    ));
    let relevance = Relevance::new("`clamp` ignores its bounds", &["src/calc.py".to_string()]);
    let comparison = compare(Some(&base), change, &relevance);
    assert_eq!(comparison.verdict, Verdict::NoWorse, "{comparison:?}");
    assert!(comparison.demanded.is_empty());
    assert_eq!(
        comparison.new_tests,
        vec!["test_calc.py::test_clamp_keeps_the_upper_bound"]
    );
    assert!(comparison.new_failing_tests.is_empty());
    assert_eq!(comparison.left_alone(), vec![about]);
}

#[test]
fn a_new_test_that_flaked_on_the_change_is_no_evidence() {
    let about = "test_calc.py::test_clamp_limits_both_ends";
    let base = consistently(naming(&[about], &["test_calc.py::test_add"]));
    let change = CheckRun::new(
        naming(
            &[about, "test_calc.py::test_race"],
            &["test_calc.py::test_add"],
        ),
        Some(naming(
            &[about],
            &["test_calc.py::test_add", "test_calc.py::test_race"],
        )),
    );
    let relevance = Relevance::new("`clamp` ignores its bounds", &["src/calc.py".to_string()]);
    let comparison = compare(Some(&base), change, &relevance);
    assert_eq!(comparison.flaky, vec!["test_calc.py::test_race"]);
    assert!(comparison.new_tests.is_empty(), "{comparison:?}");
    assert_eq!(comparison.demanded, vec![about]);
}

#[test]
fn a_runner_that_lists_only_its_failures_never_makes_a_test_look_new() {
    // `go test ./...` without -v and `pytest -v` in one script: pytest names its passing
    // tests, go names none, so TestClamp failing now may well have passed on the base.
    let mut base_report = naming(&["test_x.py::test_old"], &["test_x.py::test_a"]);
    base_report.tests.as_mut().unwrap().only_failures_listed = true;
    let mut change_report = naming(
        &["test_x.py::test_old", "TestClamp"],
        &["test_x.py::test_a", "test_x.py::test_b"],
    );
    change_report.tests.as_mut().unwrap().only_failures_listed = true;
    let relevance = Relevance::new("x misbehaves", &["x.py".to_string()]);
    let comparison = compare(
        Some(&consistently(base_report)),
        consistently(change_report),
        &relevance,
    );
    assert_eq!(
        why(&comparison),
        "tests that pass on the base commit fail with this change: TestClamp"
    );
    assert!(comparison.new_tests.is_empty(), "{comparison:?}");
    assert_eq!(
        comparison.demanded,
        vec!["test_x.py::test_old"],
        "test_b proves nothing"
    );
}
