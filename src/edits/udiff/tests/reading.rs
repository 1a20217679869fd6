//! Stories about reading diffs out of a model's reply: headers, hunks with or without numbers,
//! new files and deletions, and the replies refused because they name nothing to change.

use super::*;
#[test]
fn a_git_diff_becomes_a_patch_for_its_path_without_the_a_b_prefixes() {
    let edit = only_edit(
        "diff --git a/src/config.rs b/src/config.rs
index 3f2a1b0..9c8d7e6 100644
--- a/src/config.rs
+++ b/src/config.rs
@@ -16,3 +16,3 @@ impl Config {
     pub fn with_retries(mut self, n: u32) -> Self {
-        self.retries = n;
+        self.retries = n.min(10);
         self
",
    );
    assert_eq!(edit.path, "src/config.rs");
    let Change::Patch { hunks } = edit.change else {
        panic!("expected a patch")
    };
    assert_eq!(
        hunks,
        vec![Hunk {
            header: "@@ -16,3 +16,3 @@ impl Config {".to_string(),
            old_start: Some(16),
            lines: vec![
                ctx("    pub fn with_retries(mut self, n: u32) -> Self {"),
                rem("        self.retries = n;"),
                add("        self.retries = n.min(10);"),
                ctx("        self"),
            ],
        }]
    );
}

#[test]
fn chatter_and_a_diff_fence_around_the_diff_are_ignored() {
    let reply = "Sure! Here is the fix:\n\n```diff\n--- a/app.py\n+++ b/app.py\n@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 2\n```\n\nThis makes `f` return 2.\n";
    let hunks = hunks_of(reply);
    assert_eq!(
        hunks[0].lines,
        vec![ctx("def f():"), rem("    return 1"), add("    return 2")]
    );
}

#[test]
fn bare_paths_and_tab_separated_timestamps_are_cleaned_from_headers() {
    let edit = only_edit(
        "--- lib/util.js\t2024-05-01 10:00:00.000000000 +0200\n\
         +++ lib/util.js\t2024-05-01 10:05:00.000000000 +0200\n\
         @@ -1 +1 @@\n-a\n+b\n",
    );
    assert_eq!(edit.path, "lib/util.js");
}

#[test]
fn a_diff_from_dev_null_is_a_new_file_made_of_its_added_lines() {
    let edit = only_edit(
        "diff --git a/docs/NOTES.md b/docs/NOTES.md\n\
         new file mode 100644\n\
         index 0000000..e69de29\n\
         --- /dev/null\n\
         +++ b/docs/NOTES.md\n\
         @@ -0,0 +1,3 @@\n\
         +# Notes\n\
         +\n\
         +Keep it short.\n",
    );
    assert_eq!(edit.path, "docs/NOTES.md");
    assert_eq!(
        edit.change,
        Change::Write {
            content: "# Notes\n\nKeep it short.\n".to_string(),
            base_sha256: None
        }
    );
}

#[test]
fn a_new_file_whose_plus_was_lost_on_a_blank_line_still_gets_that_blank_line() {
    let edit = only_edit("--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1,3 @@\n+one\n\n+three\n");
    assert!(matches!(edit.change, Change::Write { content, .. } if content == "one\n\nthree\n"));
}

#[test]
fn a_new_file_marked_no_newline_at_end_is_written_without_one() {
    let edit = only_edit(
        "--- /dev/null\n+++ b/VERSION\n@@ -0,0 +1 @@\n+1.2.3\n\\ No newline at end of file\n",
    );
    assert!(matches!(edit.change, Change::Write { content, .. } if content == "1.2.3"));
}

#[test]
fn a_diff_to_dev_null_deletes_the_file() {
    let edit = only_edit(
        "diff --git a/old.sh b/old.sh\ndeleted file mode 100755\n--- a/old.sh\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-#!/bin/sh\n-echo hi\n",
    );
    assert_eq!(edit.path, "old.sh");
    assert_eq!(edit.change, Change::Delete);
}

#[test]
fn several_files_in_one_reply_come_back_in_order() {
    let edits = parse(
        "--- a/one.txt\n+++ b/one.txt\n@@ -1 +1 @@\n-a\n+b\n\
         --- a/two.txt\n+++ b/two.txt\n@@ -1 +1 @@\n-c\n+d\n",
    )
    .unwrap();
    let paths: Vec<&str> = edits.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(paths, ["one.txt", "two.txt"]);
}

#[test]
fn two_sections_for_the_same_file_merge_their_hunks_in_order() {
    let hunks = hunks_of(
        "```diff\n--- a/x.txt\n+++ b/x.txt\n@@ -1 +1 @@\n-a\n+b\n```\nAnd then:\n\
         ```diff\n--- a/x.txt\n+++ b/x.txt\n@@ -9 +9 @@\n-y\n+z\n```\n",
    );
    assert_eq!(hunks.len(), 2);
    assert_eq!(hunks[1].lines, vec![rem("y"), add("z")]);
}

#[test]
fn several_hunks_under_one_header_are_read_one_by_one() {
    let hunks = hunks_of(
        "--- a/x.txt\n+++ b/x.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n@@ -10,2 +10,2 @@\n j\n-k\n+K\n",
    );
    assert_eq!(hunks.len(), 2);
    assert_eq!(hunks[0].lines, vec![ctx("a"), rem("b"), add("B")]);
    assert_eq!(hunks[1].old_start, Some(10));
}

#[test]
fn hunk_headers_without_counts_or_numbers_are_all_accepted() {
    let starts: Vec<Option<usize>> = [
        "@@ -16 +16 @@",
        "@@ -3,0 +4,2 @@",
        "@@ ... @@",
        "@@ @@",
        "@@",
    ]
    .iter()
    .map(|header| hunks_of(&format!("--- a/x\n+++ b/x\n{header}\n-a\n+b\n"))[0].old_start)
    .collect();
    assert_eq!(starts, [Some(16), Some(3), None, None, None]);
}

#[test]
fn wrong_counts_do_not_cut_a_hunk_short_or_make_it_swallow_prose() {
    let hunks = hunks_of("--- a/x\n+++ b/x\n@@ -1,1 +1,1 @@\n a\n b\n-c\n+C\n d\nThat's all.\n");
    assert_eq!(
        hunks[0].lines,
        vec![ctx("a"), ctx("b"), rem("c"), add("C"), ctx("d")]
    );
}

#[test]
fn an_empty_line_inside_a_hunk_is_a_blank_context_line_but_trailing_ones_are_not() {
    let hunks = hunks_of("--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n\n-b\n+B\n\n\n");
    assert_eq!(hunks[0].lines, vec![ctx("a"), ctx(""), rem("b"), add("B")]);
}

#[test]
fn the_no_newline_marker_is_kept_after_the_line_it_belongs_to() {
    let hunks = hunks_of("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+a\n");
    assert_eq!(
        hunks[0].lines,
        vec![rem("a"), HunkLine::NoNewlineAtEnd, add("a")]
    );
}

#[test]
fn a_crlf_reply_reads_like_an_lf_one() {
    let lf = "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n";
    assert_eq!(parse(&lf.replace('\n', "\r\n")), parse(lf));
}

#[test]
fn a_removed_line_that_looks_like_a_file_header_stays_a_removed_line() {
    let hunks = hunks_of(
        "--- a/q.sql\n+++ b/q.sql\n@@ -1,3 +1,2 @@\n SELECT 1;\n--- old comment\n-- kept?\n SELECT 2;\n",
    );
    assert_eq!(
        hunks[0].lines,
        vec![
            ctx("SELECT 1;"),
            rem("-- old comment"),
            rem("- kept?"),
            ctx("SELECT 2;")
        ]
    );
}

#[test]
fn hunk_lines_right_under_the_header_count_even_without_an_at_at_line() {
    let hunks = hunks_of("--- a/x\n+++ b/x\n a\n-b\n+B\n");
    assert_eq!(hunks[0].header, "");
    assert_eq!(hunks[0].lines, vec![ctx("a"), rem("b"), add("B")]);
}

#[test]
fn a_reply_without_any_diff_is_refused() {
    let message = parse_error("I think the bug is in config.rs, you should cap retries.");
    assert!(message.contains("no unified diff found"), "{message}");
}

#[test]
fn a_file_header_without_hunks_is_refused_naming_the_file() {
    let message = parse_error("--- a/src/main.rs\n+++ b/src/main.rs\nI changed main.\n");
    assert!(message.contains("`src/main.rs`"), "{message}");
    assert!(message.contains("no `@@` hunk"), "{message}");
}

#[test]
fn a_hunk_that_changes_nothing_is_refused_naming_the_hunk() {
    let message =
        parse_error("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n@@ -5,2 +5,2 @@ fn main\n e\n f\n");
    assert!(
        message.contains("hunk 2 (@@ -5,2 +5,2 @@ fn main) of `x` changes nothing"),
        "{message}"
    );
}

#[test]
fn a_hunk_before_any_file_header_is_refused() {
    let message = parse_error("@@ -1 +1 @@\n-a\n+b\n");
    assert!(message.contains("before any `--- a/path`"), "{message}");
}

#[test]
fn a_header_with_dev_null_on_both_sides_is_refused() {
    let message = parse_error("--- /dev/null\n+++ /dev/null\n@@ -0,0 +1 @@\n+a\n");
    assert!(message.contains("`/dev/null` on both sides"), "{message}");
}

#[test]
fn a_new_file_hunk_with_removed_lines_is_refused() {
    let message = parse_error("--- /dev/null\n+++ b/new.txt\n@@ -1 +1 @@\n-a\n+b\n");
    assert!(message.contains("`new.txt` is a new file"), "{message}");
}

#[test]
fn a_new_file_and_a_patch_for_the_same_path_are_refused() {
    let message = parse_error(
        "--- /dev/null\n+++ b/x\n@@ -0,0 +1 @@\n+a\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n",
    );
    assert!(
        message.contains("two diff sections that cannot be combined"),
        "{message}"
    );
}
