//! `autofix apply` end to end: the real binary reads a model's response on stdin and applies it
//! to a directory in full, or refuses it in full and says why.

use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use sha2::{Digest, Sha256};

const LIB: &str = "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n";

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("src")).unwrap();
    fs::write(dir.path().join("src/lib.rs"), LIB).unwrap();
    dir
}

fn apply(dir: &Path, args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_autofix"))
        .arg("apply")
        .arg("--dir")
        .arg(dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn lib(dir: &Path) -> String {
    fs::read_to_string(dir.join("src/lib.rs")).unwrap()
}

#[test]
fn a_fenced_response_is_applied_with_one_line_per_file() {
    let dir = project();
    let response = "^^^src/lib.rs\npub fn add(a: i64, b: i64) -> i64 {\n    a + b\n}\n^^^end\n^^^src/util.rs\npub fn one() -> i32 { 1 }\n^^^end\n";

    let output = apply(dir.path(), &[], response.as_bytes());

    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(
        text(&output.stdout),
        "modified src/lib.rs (3 → 3 lines)\ncreated src/util.rs (1 line)\n"
    );
    assert!(lib(dir.path()).contains("i64"));
}

#[test]
fn a_json_proposal_with_a_stale_hash_changes_nothing() {
    let dir = project();
    let stale = hex::encode(Sha256::digest(b"some older content\n"));
    let response = format!(
        r#"{{"summary": "widen", "writes": [{{"path": "src/lib.rs", "base_sha256": "{stale}", "content": "changed\n"}}]}}"#
    );

    let output = apply(dir.path(), &[], response.as_bytes());

    assert_eq!(output.status.code(), Some(1));
    let err = text(&output.stderr);
    assert!(
        err.starts_with("autofix apply: refused, nothing changed: stale context for `src/lib.rs`"),
        "{err}"
    );
    assert_eq!(lib(dir.path()), LIB);
}

#[test]
fn a_json_proposal_with_the_right_hash_is_applied() {
    let dir = project();
    let base = hex::encode(Sha256::digest(LIB.as_bytes()));
    let response = format!(
        "```json\n{{\"summary\": \"s\", \"writes\": [{{\"path\": \"src/lib.rs\", \"base_sha256\": \"{base}\", \"content\": \"changed\\n\"}}]}}\n```"
    );

    let output = apply(dir.path(), &[], response.as_bytes());

    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(lib(dir.path()), "changed\n");
}

#[test]
fn check_mode_reports_without_writing() {
    let dir = project();
    let output = apply(dir.path(), &["--check"], b"^^^src/lib.rs\nnew\n^^^end\n");
    assert!(output.status.success());
    assert_eq!(text(&output.stdout), "modified src/lib.rs (3 → 1 line)\n");
    assert_eq!(lib(dir.path()), LIB);
}

#[test]
fn an_escaping_path_refuses_the_whole_response() {
    let dir = project();
    let response =
        "^^^src/lib.rs\nnew\n^^^end\n^^^../../etc/cron.d/evil\n* * * * * root sh\n^^^end\n";

    let output = apply(dir.path(), &[], response.as_bytes());

    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        text(&output.stderr),
        "autofix apply: refused, nothing changed: refused `../../etc/cron.d/evil`: the path climbs out with `..`\n"
    );
    assert_eq!(lib(dir.path()), LIB);
}

#[test]
fn extra_protected_patterns_are_refused() {
    let dir = project();
    let output = apply(
        dir.path(),
        &["--protect", ".github/workflows/**"],
        b"^^^.github/workflows/ci.yml\non: push\n^^^end\n",
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(text(&output.stderr).contains("rule `.github/workflows/**`"));
}

#[test]
fn a_response_without_edits_says_what_it_looked_for() {
    let dir = project();
    let output = apply(dir.path(), &[], b"The code looks correct to me.");
    assert_eq!(output.status.code(), Some(1));
    assert!(text(&output.stderr).contains("no edits in any known format"));
}

#[test]
fn a_response_that_is_not_utf8_is_bad_input() {
    let dir = project();
    let output = apply(dir.path(), &[], b"^^^src/lib.rs\n\xff\xfe\n^^^end\n");
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        text(&output.stderr),
        "autofix apply: the response is not UTF-8 text (invalid byte at offset 14)\n"
    );
    assert_eq!(lib(dir.path()), LIB);
}

#[test]
fn a_forced_format_that_does_not_match_is_refused() {
    let dir = project();
    let output = apply(
        dir.path(),
        &["--format", "json"],
        b"^^^src/lib.rs\nnew\n^^^end\n",
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(text(&output.stderr).contains("not a JSON object"));
}

#[test]
fn a_missing_directory_is_bad_input() {
    let output = apply(Path::new("/nonexistent/project"), &[], b"^^^a\nb\n^^^end\n");
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("cannot open /nonexistent/project"));
}

#[test]
fn a_sloppy_unified_diff_is_detected_and_applied() {
    let dir = project();
    // Wrong line numbers and a blank context line that lost its leading space.
    let diff = "Here is the fix:\n```diff\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -40,3 +40,3 @@\n pub fn add(a: i32, b: i32) -> i32 {\n-    a + b\n+    a.saturating_add(b)\n }\n```\n";

    let output = apply(dir.path(), &[], diff.as_bytes());

    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "modified src/lib.rs (3 → 3 lines)\n");
    assert!(lib(dir.path()).contains("a.saturating_add(b)"));
}

#[test]
fn a_diff_whose_context_matches_nowhere_names_the_hunk_and_the_closest_lines() {
    let dir = project();
    let diff = "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,3 +1,3 @@\n pub fn subtract(a: i32, b: i32) -> i32 {\n-    a - b\n+    a.saturating_sub(b)\n }\n";

    let output = apply(dir.path(), &["--format", "udiff"], diff.as_bytes());

    assert_eq!(output.status.code(), Some(1));
    let err = text(&output.stderr);
    assert!(err.contains("hunk 1 (@@ -1,3 +1,3 @@)"), "{err}");
    assert!(err.contains("closest real lines"), "{err}");
    assert_eq!(lib(dir.path()), LIB);
}

#[test]
fn search_replace_blocks_are_detected_and_applied() {
    let dir = project();
    let response = "src/lib.rs\n```rust\n<<<<<<< SEARCH\n    a + b\n=======\n    a.wrapping_add(b)\n>>>>>>> REPLACE\n```\n";

    let output = apply(dir.path(), &[], response.as_bytes());

    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(lib(dir.path()).contains("a.wrapping_add(b)"));
}

#[test]
fn a_search_found_in_two_places_is_refused() {
    let dir = project();
    fs::write(
        dir.path().join("src/lib.rs"),
        "fn a() -> i32 {\n    1\n}\nfn b() -> i32 {\n    1\n}\n",
    )
    .unwrap();
    let response = "src/lib.rs\n```\n<<<<<<< SEARCH\n    1\n=======\n    2\n>>>>>>> REPLACE\n```\n";

    let output = apply(dir.path(), &[], response.as_bytes());

    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("block 1"),
        "{}",
        text(&output.stderr)
    );
    assert!(lib(dir.path()).contains("    1\n}\nfn b"));
}
