//! What the fuzz targets share: how one fuzz input is cut into the parts a target needs, and the
//! properties every edit format's result must keep whatever the model wrote.

use std::collections::HashSet;

use autofix::edits::apply::{PlannedFile, apply_change};
use autofix::edits::paths::normalise;
use autofix::edits::{Change, EditFormat, FileEdit, detect};
use autofix::pipeline::test_report::TestCounts;

/// The input as text: libFuzzer's bytes, read as UTF-8 with replacement, as the bot reads a
/// model's answer or a command's output.
pub fn text(data: &[u8]) -> String {
    String::from_utf8_lossy(data).into_owned()
}

/// `original NUL response`: the file a response edits and the response itself. Without a NUL
/// the whole input is the response and the file does not exist yet.
pub fn original_and_response(data: &[u8]) -> (Option<String>, String) {
    match data.iter().position(|byte| *byte == 0) {
        Some(at) => (Some(text(&data[..at])), text(&data[at + 1..])),
        None => (None, text(data)),
    }
}

/// Parses `response` in `format`, applies every edit to `original` in order as the applier
/// does, and checks what must hold for any response: a path that is accepted is relative,
/// inside the tree and outside `.git`; detection never panics either.
pub fn parse_and_apply(format: EditFormat, original: Option<String>, response: &str) {
    let _ = detect::parse(response, None);
    let Ok(set) = detect::parse(response, Some(format)) else {
        return;
    };
    assert_eq!(set.format, format);
    let mut file = PlannedFile {
        path: "fuzzed.txt".into(),
        before: original.clone().map(String::into_bytes),
        after: original,
    };
    for edit in &set.edits {
        check_path(edit);
        match apply_change(&file, &edit.change) {
            Ok(after) => {
                if let (Some(after), Change::Write { content, .. }) = (&after, &edit.change) {
                    assert_eq!(after, content, "a whole-file write is written as given");
                }
                file.after = after;
            }
            Err(_) => return,
        }
    }
}

fn check_path(edit: &FileEdit) {
    let Ok(path) = normalise(&edit.path) else {
        return;
    };
    assert!(!path.is_empty(), "an accepted path names something");
    assert!(
        !path.starts_with('/'),
        "an accepted path is relative: {path:?}"
    );
    for part in path.split('/') {
        assert!(!part.is_empty(), "no empty component in {path:?}");
        assert!(part != "." && part != "..", "no dot component in {path:?}");
        assert!(
            !part.eq_ignore_ascii_case(".git"),
            "never inside .git: {path:?}"
        );
    }
    assert!(
        !path.chars().any(char::is_control),
        "no control character in {path:?}"
    );
    assert!(!path.contains('\\'), "no backslash in {path:?}");
}

/// What every test runner reader's counts keep: a total, however absurd the counts, and each
/// failing test named once.
pub fn check_counts(counts: &TestCounts) {
    let _ = counts.total();
    let names: HashSet<&String> = counts.failures.iter().collect();
    assert_eq!(
        names.len(),
        counts.failures.len(),
        "each failing test named once"
    );
}
