//! Why a test failed, in one line of its runner's output: the assertion or exception each
//! runner prints for a failing test, found by the name the readers give that test.

use super::{go_test, jest, libtest, pytest, strip_ansi, tap, unittest, vitest};

/// The one line of a runner's output that shows why `test` (a name as the readers report it)
/// failed: pytest's `E   assert 4 == 5`, unittest's `AssertionError: 4 != 5`, a Rust panic's
/// message (an `assert_eq!`'s with its `left`/`right`), go's `calc_test.go:14: …`, TAP's
/// `message:`/diagnostic, Jest's `expect(…)` with `Expected`/`Received`, Vitest's error line.
/// Trimmed; None when the output does not say.
pub fn failure_line(output: &str, test: &str) -> Option<String> {
    let text = strip_ansi(output);
    let readers: [fn(&str, &str) -> Option<String>; 7] = [
        pytest::failure_line,
        unittest::failure_line,
        libtest::failure_line,
        go_test::failure_line,
        tap::failure_line,
        jest::failure_line,
        vitest::failure_line,
    ];
    readers
        .iter()
        .find_map(|reader| reader(&text, test))
        .filter(|line| !line.is_empty())
}
