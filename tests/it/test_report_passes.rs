//! The passing tests each runner names, read from real captured output
//! (`tests/data/test_reports/`, whose README says how each file was made).

use autofix::pipeline::test_report::{TestCounts, parse_junit_xml, parse_output};

use crate::support::reports;

use reports::{captured, parsed, passes};

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|name| name.to_string()).collect()
}

/// Every passing test is named, and as the failing ones are: each runner's verbose recording
/// names exactly as many passing tests as it counts, and none of them is also failing.
fn names_every_passing_test(recording: &str) {
    let (_, counts) = parse_output(&captured(recording)).expect("recognised");
    assert_eq!(
        counts.passes.len() as u64,
        counts.passed,
        "{recording}: {:?}",
        counts.passes
    );
    for name in &counts.passes {
        assert!(!counts.failures.contains(name), "{recording}: {name}");
    }
}

#[test]
fn pytest_names_its_passing_tests_with_v_or_ra_as_it_names_its_failures() {
    let expected = names(&[
        "sub/test_other.py::test_other_passes",
        "test_demo.py::test_adds",
        "test_demo.py::test_parametrized[1-1-2]",
        "test_demo.py::test_fixed_already",
        "test_demo.py::TestInClass::test_method_passes",
    ]);
    let mut verbose = passes("pytest_mixed_verbose.txt");
    let mut all = passes("pytest_mixed_all.txt");
    verbose.sort();
    all.sort();
    let mut sorted = expected.clone();
    sorted.sort();
    assert_eq!(verbose, sorted);
    assert_eq!(all, sorted);
    names_every_passing_test("pytest_mixed_verbose.txt");
    names_every_passing_test("pytest_mixed_all.txt");
    // The same counts and failing names, however verbose (`-rA` lists errors first).
    let sorted_failures = |recording| {
        let (parser, mut counts) = parsed(recording);
        counts.failures.sort();
        (parser, counts)
    };
    assert_eq!(
        sorted_failures("pytest_mixed_verbose.txt"),
        sorted_failures("pytest_mixed.txt")
    );
    assert_eq!(
        sorted_failures("pytest_mixed_all.txt"),
        sorted_failures("pytest_mixed.txt")
    );
}

#[test]
fn pytest_without_v_or_ra_names_no_passing_test_nor_one_from_a_run_in_a_test_s_output() {
    assert!(passes("pytest_mixed.txt").is_empty());
    assert!(passes("pytest_mixed_quiet.txt").is_empty());
    assert!(passes("pytest_nested_run.txt").is_empty());
}

#[test]
fn unittest_v_names_its_passing_tests_by_their_dotted_paths() {
    // `test_mul` passed; the expected failure and the unexpected success count as passed.
    assert_eq!(
        passes("unittest_mixed_verbose.txt"),
        names(&[
            "tests.test_calc.CalcTest.test_fixed_already",
            "tests.test_calc.CalcTest.test_known_bug",
            "tests.test_calc.CalcTest.test_mul",
        ])
    );
    names_every_passing_test("unittest_mixed_verbose.txt");
    assert_eq!(
        passes("unittest_load_errors_verbose.txt"),
        names(&["tests.test_fine.FineTest.test_adds"])
    );
    assert!(passes("unittest_mixed.txt").is_empty());
}

#[test]
fn unittest_v_names_a_test_with_a_docstring_from_the_line_above_its_outcome() {
    let output = "test_add (tests.test_calc.CalcTest.test_add)\nAdds two numbers. ... ok\n\n\
                  ----------------------------------------------------------------------\n\
                  Ran 1 test in 0.000s\n\nOK\n";
    let (_, counts) = parse_output(output).expect("recognised");
    assert_eq!(counts.passes, names(&["tests.test_calc.CalcTest.test_add"]));
}

#[test]
fn cargo_test_names_its_ok_tests_but_quiet_prints_none() {
    assert_eq!(
        passes("cargo_test_failing.txt"),
        names(&[
            "tests::adds_small_numbers",
            "integration_passes",
            "second_binary_passes",
            "src/lib.rs - add (line 5)",
        ])
    );
    names_every_passing_test("cargo_test_failing.txt");
    assert!(passes("cargo_test_quiet.txt").is_empty());
}

#[test]
fn nextest_names_its_passing_tests_and_a_flaky_one_by_its_last_verdict() {
    assert_eq!(
        passes("nextest_failing.txt"),
        names(&[
            "tiny tests::adds_small_numbers",
            "tiny::integration integration_passes",
            "tiny::second second_binary_passes",
        ])
    );
    names_every_passing_test("nextest_failing.txt");
    names_every_passing_test("nextest_retries_and_timeout.txt");
    assert!(
        passes("nextest_retries_and_timeout.txt")
            .contains(&"flaky tests::flaky_first_attempt_fails".to_string())
    );
}

#[test]
fn go_test_v_names_its_passing_subtests_and_tests_but_not_the_parents_that_sum_them() {
    assert_eq!(
        passes("go_test_verbose.txt"),
        names(&[
            "TestAdd",
            "TestDivide/by_one",
            "TestRound/halves",
            "TestRound/negative",
            "TestParse",
        ])
    );
    names_every_passing_test("go_test_verbose.txt");
    let (_, plain) = parse_output(&captured("go_test_plain.txt")).expect("recognised");
    assert!(plain.passes.is_empty() && plain.only_failures_listed);
}

#[test]
fn junit_names_its_testcases_without_a_failure_as_passing() {
    let counts = parse_junit_xml(&captured("junit_pytest_mixed.xml")).expect("junit");
    assert_eq!(
        counts.passes,
        names(&[
            "sub.test_other.test_other_passes",
            "test_demo.test_adds",
            "test_demo.test_parametrized[1-1-2]",
            "test_demo.test_fixed_already",
            "test_demo.TestInClass.test_method_passes",
        ])
    );
}

#[test]
fn tap_names_its_passing_test_points_under_their_parents() {
    assert_eq!(
        passes("tap_node_mixed.txt"),
        names(&["adds", "math > multiplies", "math > nested > deep pass"])
    );
    names_every_passing_test("tap_node_mixed.txt");
    assert_eq!(
        passes("tap_prove_mixed.txt"),
        names(&[
            "t/basic.t > adds",
            "t/basic.t > math > multiplies",
            "t/basic.t > doubles",
            "t/other.t > other passes",
        ])
    );
    names_every_passing_test("tap_prove_mixed.txt");
}

#[test]
fn jest_names_the_passing_tests_of_the_trees_it_prints() {
    assert_eq!(
        passes("jest_mixed_verbose.txt"),
        names(&[
            "src/math.test.js > top level passes",
            "src/math.test.js > add > adds small numbers",
            "src/nested/other.test.js > other passes",
        ])
    );
    names_every_passing_test("jest_mixed_verbose.txt");
    assert_eq!(
        passes("jest_passing.txt"),
        names(&["src/nested/other.test.js > other passes"])
    );
    assert!(
        passes("jest_mixed.txt").is_empty(),
        "without --verbose Jest prints no tree for several files"
    );
    assert_eq!(
        parsed("jest_mixed_verbose.txt"),
        parsed("jest_mixed.txt"),
        "the same counts and failing names, however verbose"
    );
}

#[test]
fn vitest_names_the_passing_tests_listed_under_a_failing_file() {
    assert_eq!(
        passes("vitest_mixed.txt"),
        names(&[
            "src/math.test.js > add > adds small numbers",
            "src/math.test.js > top level passes",
        ])
    );
    assert_eq!(passes("vitest_mixed_color.txt"), passes("vitest_mixed.txt"));
    assert!(passes("vitest_passing.txt").is_empty());
}

#[test]
fn passing_names_read_back_from_json_and_are_left_out_when_there_are_none() {
    let (_, counts) = parse_output(&captured("go_test_verbose.txt")).expect("recognised");
    let json = serde_json::to_string(&counts).expect("json");
    assert_eq!(
        serde_json::from_str::<TestCounts>(&json).expect("read"),
        counts
    );
    let (_, plain) = parse_output(&captured("go_test_plain.txt")).expect("recognised");
    let json = serde_json::to_string(&plain).expect("json");
    assert!(!json.contains("passes"), "{json}");
    let older: TestCounts =
        serde_json::from_str(r#"{"passed":1,"failed":0,"skipped":0,"failures":[]}"#)
            .expect("a report written before passing names were kept");
    assert!(older.passes.is_empty());
}
