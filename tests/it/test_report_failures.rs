//! Why a test failed and which test files could not be loaded, read from real captured runner
//! output (`tests/data/test_reports/`, whose README says how each file was made).

use autofix::pipeline::test_report::{failure_line, load_failure, parse_output};

use crate::support::reports;

use reports::captured;

fn why(recording: &str, test: &str) -> Option<String> {
    failure_line(&captured(recording), test)
}

fn files(paths: &[&str]) -> Vec<String> {
    paths.iter().map(|path| path.to_string()).collect()
}

fn unloadable(recording: &str, paths: &[&str]) -> Option<String> {
    load_failure(&captured(recording), &files(paths))
}

// ---- why a test failed ----

#[test]
fn pytest_says_why_with_the_error_under_the_test_s_header_in_every_form() {
    for recording in [
        "pytest_mixed.txt",
        "pytest_mixed_quiet.txt",
        "pytest_mixed_color.txt",
        "pytest_mixed_verbose.txt",
        "pytest_mixed_all.txt",
    ] {
        let why = |test| failure_line(&captured(recording), test);
        assert_eq!(
            why("test_demo.py::test_adds_wrongly").as_deref(),
            Some("assert 4 == 5"),
            "{recording}"
        );
        assert_eq!(
            why("test_demo.py::test_parametrized[2-3-6]").as_deref(),
            Some("assert 5 == 6"),
            "{recording}"
        );
        assert_eq!(
            why("test_demo.py::TestInClass::test_method_fails").as_deref(),
            Some("ValueError: bad value"),
            "{recording}"
        );
        assert_eq!(
            why("test_demo.py::test_uses_broken_fixture").as_deref(),
            Some("RuntimeError: fixture setup failed"),
            "{recording}"
        );
    }
}

#[test]
fn a_passing_or_unknown_test_has_no_failure_line() {
    assert_eq!(why("pytest_mixed.txt", "test_demo.py::test_adds"), None);
    assert_eq!(why("pytest_mixed_all.txt", "test_demo.py::test_adds"), None);
    assert_eq!(
        why("unittest_mixed.txt", "tests.test_calc.CalcTest.test_mul"),
        None
    );
    assert_eq!(
        why("cargo_test_failing.txt", "tests::adds_small_numbers"),
        None
    );
    assert_eq!(why("go_test_verbose.txt", "TestAdd"), None);
    assert_eq!(why("tap_node_mixed.txt", "adds"), None);
    assert_eq!(
        why("jest_mixed.txt", "src/math.test.js > top level passes"),
        None
    );
    assert_eq!(why("vitest_mixed.txt", "no such test"), None);
}

#[test]
fn a_syntax_error_the_code_under_test_raises_is_shown_by_its_exception_not_its_file_line() {
    assert_eq!(
        why(
            "pytest_load_errors_continue.txt",
            "tests/test_parser.py::test_parses_a_broken_line"
        )
        .as_deref(),
        Some("SyntaxError: invalid syntax")
    );
    assert_eq!(
        why(
            "unittest_load_errors.txt",
            "tests.test_parser.ParserTest.test_parses_a_broken_line"
        )
        .as_deref(),
        Some("SyntaxError: invalid syntax")
    );
}

#[test]
fn a_test_s_captured_output_holding_another_run_is_not_taken_for_its_failure() {
    let failing = parse_output(&captured("pytest_nested_run.txt"))
        .unwrap()
        .1
        .failures;
    assert_eq!(
        failing,
        vec!["test_outer.py::test_nested_run_reports_a_failure"]
    );
    let why = why("pytest_nested_run.txt", &failing[0]).unwrap();
    assert!(
        why.starts_with("AssertionError: the outer test fails"),
        "{why}"
    );
    assert_eq!(
        failure_line(
            &captured("pytest_nested_run.txt"),
            "test_constant_not_picked_as_module_docstring.py::test_inner_fails"
        ),
        None,
        "the inner run's failing test is output, not a result"
    );
}

#[test]
fn unittest_says_why_with_the_exception_its_traceback_ends_with() {
    for recording in [
        "unittest_mixed.txt",
        "unittest_mixed_verbose.txt",
        "unittest_mixed_py310.txt",
        "unittest_mixed_py313.txt",
    ] {
        let why = |test| failure_line(&captured(recording), test);
        assert_eq!(
            why("tests.test_calc.CalcTest.test_add").as_deref(),
            Some("AssertionError: 4 != 5"),
            "{recording}"
        );
        assert_eq!(
            why("tests.test_calc.CalcTest.test_divide").as_deref(),
            Some("ZeroDivisionError: division by zero on purpose"),
            "{recording}"
        );
        assert_eq!(
            why("tests.test_calc.SetupFails.test_never_runs").as_deref(),
            Some("RuntimeError: setUp failed"),
            "{recording}"
        );
        assert_eq!(
            why("tests.test_broken").as_deref(),
            Some("ModuleNotFoundError: No module named 'module_that_does_not_exist'"),
            "{recording}"
        );
    }
}

#[test]
fn cargo_test_says_why_with_the_panic_message_and_an_assert_eq_s_two_sides() {
    assert_eq!(
        why("cargo_test_failing.txt", "tests::adds_wrongly_on_purpose").as_deref(),
        Some("assertion `left == right` failed (left: 4, right: 5)")
    );
    assert_eq!(
        why("cargo_test_failing.txt", "tests::nested::panics_on_purpose").as_deref(),
        Some("boom")
    );
    assert_eq!(
        why("cargo_test_failing.txt", "integration_fails").as_deref(),
        Some("double(3) should be 7")
    );
    assert_eq!(
        why("cargo_test_failing.txt", "src/lib.rs - double (line 14)").as_deref(),
        Some("assertion `left == right` failed (left: 4, right: 5)")
    );
}

#[test]
fn nextest_says_why_with_the_panic_in_the_failing_test_s_output() {
    assert_eq!(
        why("nextest_failing.txt", "tiny tests::adds_wrongly_on_purpose").as_deref(),
        Some("assertion `left == right` failed (left: 4, right: 5)")
    );
    assert_eq!(
        why("nextest_failing.txt", "tiny::integration integration_fails").as_deref(),
        Some("double(3) should be 7")
    );
}

#[test]
fn go_test_says_why_with_the_line_the_test_logged_with_or_without_v() {
    for recording in ["go_test_verbose.txt", "go_test_plain.txt"] {
        assert_eq!(
            why(recording, "TestSubtract").as_deref(),
            Some("calc_test.go:14: Subtract(5, 3) = 3, want 2"),
            "{recording}"
        );
        assert_eq!(
            why(recording, "TestDivide/by_zero").as_deref(),
            Some("calc_test.go:27: Divide(1, 0) returned no error"),
            "{recording}"
        );
    }
}

#[test]
fn tap_says_why_with_node_s_yaml_error_or_test_more_s_diagnostic() {
    assert_eq!(
        why("tap_node_mixed.txt", "adds wrongly").as_deref(),
        Some("AssertionError: Expected values to be strictly equal: 2 !== 3")
    );
    assert_eq!(why("tap_node_mixed.txt", "throws").as_deref(), Some("boom"));
    assert_eq!(
        why("tap_node_mixed.txt", "math > nested > deep failure").as_deref(),
        Some("AssertionError: The expression evaluated to a falsy value: assert.ok(false)")
    );
    assert_eq!(
        why("tap_prove_mixed.txt", "t/basic.t > adds wrongly").as_deref(),
        Some("Failed test 'adds wrongly' at t/basic.t line 6.")
    );
    assert_eq!(
        why("tap_prove_mixed.txt", "t/basic.t > math > divides wrongly").as_deref(),
        Some("Failed test 'divides wrongly' at t/basic.t line 18.")
    );
}

#[test]
fn jest_says_why_with_the_expectation_and_what_it_received() {
    for recording in [
        "jest_mixed.txt",
        "jest_mixed_color.txt",
        "jest_mixed_verbose.txt",
    ] {
        assert_eq!(
            why(
                recording,
                "src/math.test.js > add > adds wrongly on purpose"
            )
            .as_deref(),
            Some(
                "expect(received).toBe(expected) // Object.is equality \
                 (Expected: 5, Received: 4)"
            ),
            "{recording}"
        );
    }
    assert_eq!(
        why("jest_mixed.txt", "src/broken.test.js").as_deref(),
        Some("Cannot find module './does-not-exist' from 'src/broken.test.js'")
    );
}

#[test]
fn vitest_says_why_with_the_error_under_the_failed_test_s_header() {
    for recording in ["vitest_mixed.txt", "vitest_mixed_color.txt"] {
        assert_eq!(
            why(
                recording,
                "src/math.test.js > add > with negatives > fails deep inside"
            )
            .as_deref(),
            Some("AssertionError: expected -2 to be -3 // Object.is equality"),
            "{recording}"
        );
    }
    assert_eq!(
        why("vitest_hook_failure.txt", "src/hooks.test.js > database").as_deref(),
        Some("Error: cannot connect")
    );
}

#[test]
fn every_failing_test_of_every_recorded_run_with_explanations_has_a_failure_line() {
    for recording in [
        "pytest_mixed.txt",
        "pytest_mixed_verbose.txt",
        "unittest_mixed.txt",
        "cargo_test_failing.txt",
        "nextest_failing.txt",
        "go_test_verbose.txt",
        "go_test_plain.txt",
        "tap_node_mixed.txt",
        "jest_mixed.txt",
        "vitest_mixed.txt",
    ] {
        let output = captured(recording);
        for test in parse_output(&output).unwrap().1.failures {
            let line = failure_line(&output, &test);
            assert!(
                line.as_deref()
                    .is_some_and(|line| !line.contains('\n') && line == line.trim()),
                "{recording}: {test}: {line:?}"
            );
        }
    }
}

// ---- test files that could not be loaded ----

#[test]
fn pytest_could_not_collect_a_file_importing_a_missing_name_or_written_wrongly() {
    for recording in ["pytest_load_errors.txt", "pytest_load_errors_continue.txt"] {
        assert_eq!(
            unloadable(recording, &["tests/test_imports_missing_name.py"]).as_deref(),
            Some(
                "tests/test_imports_missing_name.py: ImportError: cannot import name \
                 'subtract' from 'calc' (/tmp/rdr/pyload/calc.py)"
            ),
            "{recording}"
        );
        assert_eq!(
            unloadable(recording, &["tests/test_syntax_error.py"]).as_deref(),
            Some("tests/test_syntax_error.py: SyntaxError: invalid syntax"),
            "{recording}"
        );
    }
    assert_eq!(
        unloadable("pytest_collection_error.txt", &["test_broken.py"]).as_deref(),
        Some("test_broken.py: ModuleNotFoundError: No module named 'not_a_module'")
    );
}

#[test]
fn a_test_failing_on_a_syntax_error_of_the_code_it_tests_is_not_a_load_failure() {
    let tested = ["tests/test_parser.py", "tests/test_fine.py"];
    assert_eq!(unloadable("pytest_load_errors_continue.txt", &tested), None);
    assert_eq!(unloadable("unittest_load_errors.txt", &tested), None);
    assert_eq!(
        unloadable(
            "tap_node_load_error.txt",
            &["test/parser.test.js", "test/fine.test.js"]
        ),
        None
    );
    assert_eq!(unloadable("pytest_mixed.txt", &["test_demo.py"]), None);
}

#[test]
fn unittest_could_not_import_a_test_module() {
    for recording in [
        "unittest_load_errors.txt",
        "unittest_load_errors_verbose.txt",
    ] {
        assert_eq!(
            unloadable(recording, &["tests/test_imports_missing_name.py"]).as_deref(),
            Some(
                "tests/test_imports_missing_name.py: ImportError: cannot import name \
                 'subtract' from 'calc' (/tmp/rdr/uload/calc.py)"
            ),
            "{recording}"
        );
        assert_eq!(
            unloadable(
                recording,
                &["tests/test_fine.py", "tests/test_syntax_error.py"]
            )
            .as_deref(),
            Some("tests/test_syntax_error.py: SyntaxError: '(' was never closed"),
            "{recording}"
        );
    }
    assert_eq!(
        unloadable("unittest_import_error.txt", &["tests/test_broken.py"]).as_deref(),
        Some(
            "tests/test_broken.py: ModuleNotFoundError: No module named 'module_that_does_not_exist'"
        )
    );
}

#[test]
fn node_could_not_parse_a_test_file() {
    assert_eq!(
        unloadable("tap_node_load_error.txt", &["test/broken_syntax.test.js"]).as_deref(),
        Some("test/broken_syntax.test.js:4: SyntaxError: Unexpected token ';'")
    );
}

#[test]
fn jest_and_vitest_could_not_run_a_test_file() {
    assert_eq!(
        unloadable("jest_suite_error.txt", &["src/broken.test.js"]).as_deref(),
        Some("src/broken.test.js: Cannot find module './does-not-exist' from 'src/broken.test.js'")
    );
    assert_eq!(
        unloadable(
            "jest_mixed.txt",
            &["src/math.test.js", "src/broken.test.js"]
        )
        .as_deref(),
        Some("src/broken.test.js: Cannot find module './does-not-exist' from 'src/broken.test.js'")
    );
    assert_eq!(
        unloadable("vitest_suite_error.txt", &["src/broken.test.js"]).as_deref(),
        Some(
            "src/broken.test.js: Error: Cannot find module './does-not-exist' imported from \
             '/tmp/jsrec/vt/src/broken.test.js'"
        )
    );
    assert_eq!(unloadable("jest_mixed.txt", &["src/math.test.js"]), None);
    assert_eq!(unloadable("vitest_mixed.txt", &["src/math.test.js"]), None);
    assert_eq!(
        unloadable("vitest_hook_failure.txt", &["src/hooks.test.js"]),
        None,
        "a beforeAll that throws is a suite that loaded and failed"
    );
}

#[test]
fn go_could_not_build_or_set_up_a_test_file_s_package() {
    assert_eq!(
        unloadable("go_test_load_errors.txt", &["calc_test.go"]).as_deref(),
        Some("calc_test.go:12:2: undefined: Sbutract")
    );
    assert_eq!(
        unloadable("go_test_load_errors.txt", &["parse/parse_test.go"]).as_deref(),
        Some(
            "parse/parse_test.go:5:2: no required module provides package example.com/missing; \
             to add it:"
        )
    );
    assert_eq!(
        unloadable(
            "go_test_timeout_and_build_failure.txt",
            &["parse/parse_test.go"]
        ),
        None,
        "the package's code, not its test file, failed to build"
    );
    assert_eq!(unloadable("go_test_verbose.txt", &["calc_test.go"]), None);
}

#[test]
fn cargo_could_not_compile_a_test_file() {
    assert_eq!(
        unloadable("cargo_test_load_error.txt", &["tests/broken.rs"]).as_deref(),
        Some(
            "tests/broken.rs:3:26: error[E0425]: cannot find function `subtract` in crate \
             `loadfail`"
        )
    );
    assert_eq!(
        unloadable("cargo_test_load_error.txt", &["tests/fine.rs"]),
        None
    );
    assert_eq!(
        unloadable("cargo_test_compile_error.txt", &["tests/integration.rs"]),
        None,
        "the library, not the test file, failed to compile"
    );
    assert_eq!(
        unloadable("cargo_test_failing.txt", &["tests/integration.rs"]),
        None
    );
}

#[test]
fn no_files_no_load_failure() {
    assert_eq!(unloadable("pytest_load_errors.txt", &[]), None);
}

#[test]
fn an_output_cut_anywhere_is_read_without_panicking() {
    // The runner's cap drops the middle of a long output: any line may end anywhere.
    let mut recordings: Vec<_> = std::fs::read_dir(reports::data_dir())
        .expect("data dir")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "txt"))
        .collect();
    recordings.sort();
    for path in recordings {
        let output = std::fs::read_to_string(&path).expect("read");
        let names = parse_output(&output)
            .map(|(_, counts)| [counts.failures, counts.passes].concat())
            .unwrap_or_default();
        let files = files(&["tests/test_x.py", "src/broken.test.js", "calc_test.go"]);
        let cuts = (0..output.len())
            .step_by(97)
            .filter(|cut| output.is_char_boundary(*cut));
        for cut in cuts {
            let (head, tail) = output.split_at(cut);
            let middle = (tail.len() / 2..=tail.len())
                .find(|at| tail.is_char_boundary(*at))
                .expect("the end is a boundary");
            let cut_output = format!("{head}{}", &tail[middle..]);
            for name in &names {
                let _ = failure_line(&cut_output, name);
            }
            let _ = load_failure(&cut_output, &files);
        }
    }
}
