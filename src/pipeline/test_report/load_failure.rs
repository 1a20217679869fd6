//! Test files that could not be loaded at all (not collected, imported, compiled or parsed),
//! told apart from tests in them that ran and failed, from each runner's output.

use super::{go_test, jest, libtest, pytest, strip_ansi, tap, unittest, vitest};

/// One runner's reading: the file that could not be loaded, and what the runner said of it.
type FileReader = fn(&str, &[String]) -> Option<(String, String)>;

/// When the runner says one of `files` (repository-relative test file paths) could not be
/// loaded — pytest's `ERROR collecting`, unittest's failed import, a Jest suite that failed to
/// run, a Vitest file that failed to load, node's error for the file, go's `[build failed]` or
/// `[setup failed]`, a Rust compiler error in it — the runner's words for it, on one line:
/// `tests/test_x.py: ImportError: cannot import name …`, or `tests/x.rs:3:26: error[E0425]: …`
/// where the runner gave a position. A test that ran and failed (even on a `SyntaxError` the
/// code under test raised) is no load failure: None.
pub fn load_failure(output: &str, files: &[String]) -> Option<String> {
    if files.is_empty() {
        return None;
    }
    let text = strip_ansi(output);
    let readers: [FileReader; 7] = [
        pytest::load_failure,
        unittest::load_failure,
        libtest::load_failure,
        go_test::load_failure,
        tap::load_failure,
        jest::load_failure,
        vitest::load_failure,
    ];
    let (file, said) = readers.iter().find_map(|reader| reader(&text, files))?;
    Some(if said.starts_with(file.as_str()) {
        said
    } else {
        format!("{file}: {said}")
    })
}
