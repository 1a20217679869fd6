//! Stories about reading and applying unified diffs, sloppy ones included.
//! Each defect a model makes has one story; each refusal has one too.

use super::*;

const CONFIG_RS: &str = "\
use std::collections::HashMap;

/// Configuration for the bot.
pub struct Config {
    pub name: String,
    pub retries: u32,
}

impl Config {
    pub fn new(name: &str) -> Self {
        // default retries
        Config { name: name.to_string(), retries: 3 }
    }

    pub fn with_retries(mut self, n: u32) -> Self {
        self.retries = n;
        self
    }
}
";

const CONFIG_RS_CAPPED: &str = "\
use std::collections::HashMap;

/// Configuration for the bot.
pub struct Config {
    pub name: String,
    pub retries: u32,
}

impl Config {
    pub fn new(name: &str) -> Self {
        // default retries
        Config { name: name.to_string(), retries: 3 }
    }

    pub fn with_retries(mut self, n: u32) -> Self {
        self.retries = n.min(10);
        self
    }
}
";

/// The one file edit a diff is expected to hold.
fn only_edit(diff: &str) -> FileEdit {
    let mut edits = parse(diff).expect("the diff parses");
    assert_eq!(edits.len(), 1, "expected one file edit, got {edits:?}");
    edits.remove(0)
}

fn hunks_of(diff: &str) -> Vec<Hunk> {
    match only_edit(diff).change {
        Change::Patch { hunks } => hunks,
        other => panic!("expected a patch, got {other:?}"),
    }
}

fn apply_diff(original: &str, diff: &str) -> Result<String, Mismatch> {
    apply(original, &hunks_of(diff))
}

fn parse_error(text: &str) -> String {
    parse(text).expect_err("the text must not parse").message
}

fn refusal(original: &str, diff: &str) -> String {
    apply_diff(original, diff)
        .expect_err("the diff must be refused")
        .message
}

fn ctx(text: &str) -> HunkLine {
    HunkLine::Context(text.to_string())
}
fn rem(text: &str) -> HunkLine {
    HunkLine::Remove(text.to_string())
}
fn add(text: &str) -> HunkLine {
    HunkLine::Add(text.to_string())
}

// ---------------------------------------------------------------------------------------
// Reading diffs
// ---------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------
// Applying diffs that fit
// ---------------------------------------------------------------------------------------

const CAP_RETRIES: &str = "\
--- a/src/config.rs
+++ b/src/config.rs
@@ -13,7 +13,7 @@ impl Config {
     }
 
     pub fn with_retries(mut self, n: u32) -> Self {
-        self.retries = n;
+        self.retries = n.min(10);
         self
     }
 }
";

#[test]
fn an_exact_diff_applies() {
    assert_eq!(
        apply_diff(CONFIG_RS, CAP_RETRIES).unwrap(),
        CONFIG_RS_CAPPED
    );
}

#[test]
fn wrong_line_numbers_do_not_matter_when_the_text_fits_one_place() {
    let diff = CAP_RETRIES.replace("@@ -13,7 +13,7 @@", "@@ -140,7 +141,9 @@");
    assert_eq!(apply_diff(CONFIG_RS, &diff).unwrap(), CONFIG_RS_CAPPED);
}

#[test]
fn a_crlf_file_keeps_its_crlf_endings_including_on_added_lines() {
    let crlf = CONFIG_RS.replace('\n', "\r\n");
    let applied = apply_diff(&crlf, CAP_RETRIES).unwrap();
    assert_eq!(applied, CONFIG_RS_CAPPED.replace('\n', "\r\n"));
}

#[test]
fn a_crlf_diff_applies_to_an_lf_file_without_bringing_its_carriage_returns() {
    let applied = apply_diff(CONFIG_RS, &CAP_RETRIES.replace('\n', "\r\n")).unwrap();
    assert_eq!(applied, CONFIG_RS_CAPPED);
}

#[test]
fn trailing_whitespace_the_model_added_to_context_is_tolerated() {
    let diff = CAP_RETRIES.replace("         self\n", "         self   \n");
    assert_eq!(apply_diff(CONFIG_RS, &diff).unwrap(), CONFIG_RS_CAPPED);
}

#[test]
fn a_context_line_written_with_tabs_instead_of_spaces_is_tolerated() {
    let diff = CAP_RETRIES.replace("         self\n", " \t\tself\n");
    assert_eq!(apply_diff(CONFIG_RS, &diff).unwrap(), CONFIG_RS_CAPPED);
}

#[test]
fn whitespace_drift_inside_a_removed_line_is_tolerated() {
    let diff = CAP_RETRIES.replace("-        self.retries = n;", "-        self.retries  =  n;");
    assert_eq!(apply_diff(CONFIG_RS, &diff).unwrap(), CONFIG_RS_CAPPED);
}

#[test]
fn a_hunk_outdented_as_a_whole_is_reindented_to_the_file() {
    let diff = "--- a/c.rs\n+++ b/c.rs\n@@ -13,6 +13,6 @@\n }\n \n pub fn with_retries(mut self, n: u32) -> Self {\n-    self.retries = n;\n+    self.retries = n.min(10);\n     self\n }\n";
    assert_eq!(apply_diff(CONFIG_RS, diff).unwrap(), CONFIG_RS_CAPPED);
}

#[test]
fn a_hunk_indented_too_deep_as_a_whole_is_outdented_to_the_file() {
    let python = "def load(path):\n    with open(path) as f:\n        return f.read()\n";
    let diff = "--- a/io.py\n+++ b/io.py\n@@ -1,3 +1,3 @@\n     def load(path):\n-        with open(path) as f:\n+        with open(path, encoding=\"utf-8\") as f:\n             return f.read()\n";
    assert_eq!(
        apply_diff(python, diff).unwrap(),
        "def load(path):\n    with open(path, encoding=\"utf-8\") as f:\n        return f.read()\n"
    );
}

#[test]
fn a_go_diff_written_with_spaces_gets_the_files_tabs() {
    let go = "func add(a, b int) int {\n\tif a < 0 {\n\t\treturn b\n\t}\n\treturn a + b\n}\n";
    let diff = "--- a/add.go\n+++ b/add.go\n@@ -1,6 +1,7 @@\n func add(a, b int) int {\n     if a < 0 {\n-        return b\n+        log.Println(\"negative\")\n+        return b\n     }\n     return a + b\n }\n";
    assert_eq!(
        apply_diff(go, diff).unwrap(),
        "func add(a, b int) int {\n\tif a < 0 {\n\t\tlog.Println(\"negative\")\n\t\treturn b\n\t}\n\treturn a + b\n}\n"
    );
}

#[test]
fn a_blank_context_line_that_lost_its_space_still_matches() {
    let diff = CAP_RETRIES.replace("\n \n", "\n\n");
    assert_eq!(apply_diff(CONFIG_RS, &diff).unwrap(), CONFIG_RS_CAPPED);
}

#[test]
fn a_blank_context_line_the_model_left_out_is_tolerated() {
    let diff = CAP_RETRIES.replace("     }\n \n", "     }\n");
    assert_eq!(apply_diff(CONFIG_RS, &diff).unwrap(), CONFIG_RS_CAPPED);
}

#[test]
fn a_blank_context_line_the_file_does_not_have_is_tolerated() {
    let diff = CAP_RETRIES.replace(
        "     pub fn with_retries(mut self, n: u32) -> Self {\n",
        "     pub fn with_retries(mut self, n: u32) -> Self {\n \n",
    );
    assert_eq!(apply_diff(CONFIG_RS, &diff).unwrap(), CONFIG_RS_CAPPED);
}

#[test]
fn an_altered_context_line_is_kept_as_the_file_has_it() {
    let diff = CAP_RETRIES.replace("(mut self, n: u32)", "(&mut self, n: u32)");
    assert_eq!(apply_diff(CONFIG_RS, &diff).unwrap(), CONFIG_RS_CAPPED);
}

#[test]
fn a_context_line_the_model_left_out_is_tolerated_when_removed_lines_pin_the_place() {
    let diff = CAP_RETRIES.replace("     pub fn with_retries(mut self, n: u32) -> Self {\n", "");
    assert_eq!(apply_diff(CONFIG_RS, &diff).unwrap(), CONFIG_RS_CAPPED);
}

#[test]
fn a_diff_with_only_a_removed_and_an_added_line_applies_where_the_removed_line_is_unique() {
    let diff = "--- a/c.rs\n+++ b/c.rs\n@@ -16 +16 @@\n-        self.retries = n;\n+        self.retries = n.min(10);\n";
    assert_eq!(apply_diff(CONFIG_RS, diff).unwrap(), CONFIG_RS_CAPPED);
}

#[test]
fn hunks_apply_in_order_against_the_content_earlier_hunks_produced() {
    let text = "a\nb\nc\nd\ne\nf\ng\nh\n";
    let diff = "--- a/t\n+++ b/t\n@@ -1,3 +1,4 @@\n a\n+a2\n b\n c\n@@ -4,3 +5,2 @@\n d\n-e\n f\n@@ @@\n a2\n-b\n+B\n";
    assert_eq!(apply_diff(text, diff).unwrap(), "a\na2\nB\nc\nd\nf\ng\nh\n");
}

#[test]
fn hunks_written_out_of_order_still_apply() {
    let text = "one\ntwo\nthree\nfour\nfive\nsix\n";
    let diff =
        "--- a/t\n+++ b/t\n@@ -5,2 +5,2 @@\n five\n-six\n+SIX\n@@ -1,2 +1,2 @@\n-one\n+ONE\n two\n";
    assert_eq!(
        apply_diff(text, diff).unwrap(),
        "ONE\ntwo\nthree\nfour\nfive\nSIX\n"
    );
}

#[test]
fn the_stated_line_picks_between_two_exact_fits_like_git_apply() {
    let text = "fn a() {\n    x();\n}\n\nfn b() {\n    x();\n}\n";
    let diff = "--- a/t.rs\n+++ b/t.rs\n@@ -6,2 +6,2 @@\n-    x();\n+    y();\n }\n";
    assert_eq!(
        apply_diff(text, diff).unwrap(),
        "fn a() {\n    x();\n}\n\nfn b() {\n    y();\n}\n"
    );
}

#[test]
fn the_stated_line_counts_lines_earlier_hunks_added() {
    let text = "top\nx\nmid\nx\nend\n";
    // The second hunk's -4 is the original line 4, now line 6 after two lines were added.
    let diff = "--- a/t\n+++ b/t\n@@ -1 +1,3 @@\n top\n+t2\n+t3\n@@ -4 +6 @@\n-x\n+y\n";
    assert_eq!(
        apply_diff(text, diff).unwrap(),
        "top\nt2\nt3\nx\nmid\ny\nend\n"
    );
}

#[test]
fn a_file_without_a_final_newline_keeps_it_that_way() {
    let text = "first\nlast";
    let diff = "--- a/t\n+++ b/t\n@@ -1,2 +1,2 @@\n first\n-last\n+LAST\n";
    assert_eq!(apply_diff(text, diff).unwrap(), "first\nLAST");
}

#[test]
fn lines_appended_to_a_file_without_a_final_newline_get_separated_from_it() {
    let text = "first\nlast";
    let diff = "--- a/t\n+++ b/t\n@@ -1,2 +1,3 @@\n first\n last\n+more\n";
    assert_eq!(apply_diff(text, diff).unwrap(), "first\nlast\nmore");
}

#[test]
fn the_no_newline_marker_on_the_old_side_only_adds_a_final_newline() {
    let text = "first\nlast";
    let diff =
        "--- a/t\n+++ b/t\n@@ -1,2 +1,2 @@\n first\n-last\n\\ No newline at end of file\n+last\n";
    assert_eq!(apply_diff(text, diff).unwrap(), "first\nlast\n");
}

#[test]
fn the_no_newline_marker_on_the_new_side_drops_the_final_newline() {
    let text = "first\nlast\n";
    let diff =
        "--- a/t\n+++ b/t\n@@ -1,2 +1,2 @@\n first\n-last\n+last\n\\ No newline at end of file\n";
    assert_eq!(apply_diff(text, diff).unwrap(), "first\nlast");
}

#[test]
fn a_pure_addition_to_an_empty_file_needs_no_context() {
    let diff = "--- a/t\n+++ b/t\n@@ -0,0 +1,2 @@\n+hello\n+world\n";
    assert_eq!(apply_diff("", diff).unwrap(), "hello\nworld\n");
}

#[test]
fn a_pure_addition_with_context_lands_between_its_context_lines() {
    let diff = "--- a/c.rs\n+++ b/c.rs\n@@ @@\n         self\n     }\n+\n+    pub fn name(&self) -> &str {\n+        &self.name\n+    }\n }\n";
    let expected = CONFIG_RS.replace(
        "        self\n    }\n}\n",
        "        self\n    }\n\n    pub fn name(&self) -> &str {\n        &self.name\n    }\n}\n",
    );
    assert_eq!(apply_diff(CONFIG_RS, diff).unwrap(), expected);
}

#[test]
fn a_pure_addition_whose_context_lost_a_blank_line_still_lands_right() {
    let text = "import os\n\n\ndef main():\n    pass\n";
    let diff =
        "--- a/m.py\n+++ b/m.py\n@@ -1,4 +1,5 @@\n import os\n+import sys\n \n def main():\n";
    assert_eq!(
        apply_diff(text, diff).unwrap(),
        "import os\nimport sys\n\n\ndef main():\n    pass\n"
    );
}

#[test]
fn a_removal_only_hunk_deletes_its_lines() {
    let text = "a\nb\n// debug\nc\n";
    let diff = "--- a/t\n+++ b/t\n@@ -2,3 +2,2 @@\n b\n-// debug\n c\n";
    assert_eq!(apply_diff(text, diff).unwrap(), "a\nb\nc\n");
}

#[test]
fn untouched_lines_come_back_byte_for_byte_even_with_mixed_line_endings() {
    let text = "a\r\nb\nc\r\nd\r\n";
    let diff = "--- a/t\n+++ b/t\n@@ -2,2 +2,2 @@\n b\n-c\n+C\n";
    assert_eq!(apply_diff(text, diff).unwrap(), "a\r\nb\nC\r\nd\r\n");
}

// ---------------------------------------------------------------------------------------
// Refusing diffs whose intent is not certain
// ---------------------------------------------------------------------------------------

const TWO_TWINS: &str = "\
fn save_user(db: &Db, user: &User) -> Result<()> {
    let conn = db.conn()?;
    conn.execute(INSERT, user)?;
    Ok(())
}

fn save_order(db: &Db, order: &Order) -> Result<()> {
    let conn = db.conn()?;
    conn.execute(INSERT, order)?;
    Ok(())
}
";

#[test]
fn context_that_fits_two_places_with_wrong_line_numbers_is_refused() {
    let text = "fn a() {\n    x();\n}\n\nfn b() {\n    x();\n}\n";
    let diff = "--- a/t.rs\n+++ b/t.rs\n@@ -40,2 +40,2 @@\n-    x();\n+    y();\n }\n";
    let message = refusal(text, diff);
    assert!(
        message.contains("fits 2 places in the file (lines 2-3, lines 6-7)"),
        "{message}"
    );
}

#[test]
fn line_numbers_break_a_tie_between_fits_that_differ_only_in_trailing_whitespace() {
    let text = "fn a() {\n    x();\n}\n\nfn b() {\n    x();\n}\n";
    // The model added trailing spaces; the stated line still points exactly at `b`.
    let diff = "--- a/t.rs\n+++ b/t.rs\n@@ -6,2 +6,2 @@\n-    x();  \n+    y();\n } \n";
    let applied = apply_diff(text, diff).unwrap();
    assert_eq!(applied, "fn a() {\n    x();\n}\n\nfn b() {\n    y();\n}\n");
}

#[test]
fn line_numbers_do_not_break_a_tie_when_they_point_between_the_fits() {
    let text = "fn a() {\n    x();\n}\n\nfn b() {\n    x();\n}\n";
    let diff = "--- a/t.rs\n+++ b/t.rs\n@@ -4,2 +4,2 @@\n-    x();  \n+    y();\n } \n";
    let message = refusal(text, diff);
    assert!(message.contains("fits 2 places"), "{message}");
}

#[test]
fn a_hunk_that_matches_nowhere_is_refused_showing_the_closest_real_lines() {
    let diff = "--- a/c.rs\n+++ b/c.rs\n@@ -13,7 +13,7 @@ impl Config {\n     pub fn with_timeout(mut self, t: u64) -> Self {\n-        self.timeout = t;\n+        self.timeout = t.min(60);\n         self\n     }\n";
    let message = refusal(CONFIG_RS, diff);
    assert!(
        message.starts_with("hunk 1 (@@ -13,7 +13,7 @@ impl Config {) removes a line that is not in the file: `self.timeout = t;`; closest real lines 15-18:"),
        "{message}"
    );
    assert!(
        message.contains("   16 |         self.retries = n;"),
        "{message}"
    );
}

#[test]
fn context_lines_that_are_nowhere_in_the_file_are_refused() {
    let diff = "--- a/c.rs\n+++ b/c.rs\n@@ -2,3 +2,4 @@\n fn helper() {\n+    trace();\n     work();\n }\n";
    let message = refusal(CONFIG_RS, diff);
    assert!(
        message.starts_with(
            "hunk 1 (@@ -2,3 +2,4 @@) matches nowhere in the file; closest real lines"
        ),
        "{message}"
    );
}

#[test]
fn a_removed_line_that_differs_beyond_whitespace_is_refused_not_fuzzed_away() {
    let diff = CAP_RETRIES.replace(
        "-        self.retries = n;",
        "-        self.retries = n as u32;",
    );
    let message = refusal(CONFIG_RS, &diff);
    assert!(
        message.contains("removes a line that is not in the file: `self.retries = n as u32;`"),
        "{message}"
    );
}

#[test]
fn a_pure_addition_without_context_in_a_non_empty_file_is_refused() {
    let diff = "--- a/c.rs\n+++ b/c.rs\n@@ -5,0 +6,1 @@\n+    pub verbose: bool,\n";
    let message = refusal(CONFIG_RS, diff);
    assert!(
        message.contains("only adds lines and has no unchanged lines around them"),
        "{message}"
    );
}

#[test]
fn an_addition_between_context_lines_the_file_separates_is_refused() {
    // Before or after the blank line? The diff does not say.
    let text = "fn a() {}\n\nfn c() {}\n";
    let diff = "--- a/t.rs\n+++ b/t.rs\n@@ @@\n fn a() {}\n+fn b() {}\n fn c() {}\n";
    assert!(refusal(text, diff).contains("matches nowhere"));
}

#[test]
fn an_addition_next_to_an_altered_context_line_is_refused() {
    // Reading `let q` as the model's version of `let x` would fit within the fuzz budget,
    // but then the new line lands before `let x` when the model may have meant after it.
    let text = "fn setup() {\n    init();\n    let c = 4;\n    let p = 1;\n    let x = 2;\n    let q = 3;\n}\n";
    let diff = "--- a/s.rs\n+++ b/s.rs\n@@ @@\n fn setup() {\n     init();\n-    let c = 4;\n+    let c = 5;\n     let p = 1;\n+    let inserted = 0;\n     let q = 3;\n";
    assert!(refusal(text, diff).contains("matches nowhere"));
}

#[test]
fn removed_lines_the_file_separates_by_another_line_are_refused() {
    let text = "a\nb\nkeep\nc\nd\n";
    let diff = "--- a/t\n+++ b/t\n@@ @@\n a\n-b\n-c\n d\n";
    assert!(refusal(text, diff).contains("matches nowhere"));
}

#[test]
fn a_hunk_whose_context_is_mostly_altered_is_refused_even_if_its_removed_line_is_unique() {
    let diff = "--- a/c.rs\n+++ b/c.rs\n@@ -13,7 +13,7 @@\n     }\n \n     pub fn set_retries(&mut self, n: u32) {\n-        self.retries = n;\n+        self.retries = n.min(10);\n         log::debug!(\"set\");\n     }\n";
    assert!(refusal(CONFIG_RS, diff).contains("matches nowhere"));
}

#[test]
fn a_hunk_that_would_land_on_either_of_two_similar_functions_is_refused() {
    let diff = "--- a/db.rs\n+++ b/db.rs\n@@ -14,4 +14,4 @@\n fn save_account(db: &Db, account: &Account) -> Result<()> {\n     let conn = db.conn()?;\n-    conn.execute(INSERT, account)?;\n+    conn.execute(UPSERT, account)?;\n     Ok(())\n }\n";
    // The removed line is in neither function; an `Altered` reading must not rescue it.
    assert!(refusal(TWO_TWINS, diff).contains("removes a line that is not in the file"));
    let generic = "--- a/db.rs\n+++ b/db.rs\n@@ -14,4 +14,4 @@\n fn save_thing(db: &Db, x: &X) -> Result<()> {\n     let conn = db.conn()?;\n-    conn.execute(INSERT, user)?;\n+    conn.execute(UPSERT, user)?;\n     Ok(())\n }\n";
    // Fits save_user with one altered line: unique, so it applies there.
    assert!(
        apply_diff(TWO_TWINS, generic)
            .unwrap()
            .contains("conn.execute(UPSERT, user)?;")
    );
    let twin = "--- a/db.rs\n+++ b/db.rs\n@@ -14,4 +14,4 @@\n fn save_thing(db: &Db, x: &X) -> Result<()> {\n     let conn = db.conn()?;\n+    conn.begin()?;\n     Ok(())\n }\n";
    assert!(refusal(TWO_TWINS, twin).contains("matches nowhere"));
}

#[test]
fn a_hunk_repeated_by_the_model_is_refused_the_second_time() {
    let mut hunks = hunks_of(CAP_RETRIES);
    hunks.push(hunks[0].clone());
    let message = apply(CONFIG_RS, &hunks).unwrap_err().message;
    assert!(
        message.starts_with(
            "hunk 2 (@@ -13,7 +13,7 @@ impl Config {) removes a line that is not in the file"
        ),
        "{message}"
    );
}

#[test]
fn indentation_that_differs_inconsistently_is_refused() {
    // Ignoring indentation, the hunk fits; but its removed line sits one level deeper in
    // the hunk than in the file while its context does not: which level is meant?
    let python = "def f(x):\n    if x:\n        pass\n    return 1\n";
    let diff = "--- a/f.py\n+++ b/f.py\n@@ @@\n def f(x):\n     if x:\n         pass\n-        return 1\n+        return 2\n";
    let message = refusal(python, diff);
    assert!(
        message.contains("only if indentation is ignored"),
        "{message}"
    );
}

#[test]
fn a_hunk_in_an_empty_file_that_expects_lines_is_refused() {
    let message = refusal("", CAP_RETRIES);
    assert!(message.contains("the file is empty"), "{message}");
}

#[test]
fn an_added_line_shallower_than_the_indentation_the_hunk_adds_everywhere_is_refused() {
    // Every line of the hunk is indented 4 spaces deeper than the file, except the added
    // line, which has only 2: where should it go?
    let python = "def f():\n    return 1\n";
    let diff = "--- a/f.py\n+++ b/f.py\n@@ @@\n     def f():\n-        return 1\n+  return 2\n";
    let message = refusal(python, diff);
    assert!(
        message.contains("fits lines 1-2 of the file, but its added lines are indented"),
        "{message}"
    );
}

#[test]
fn a_one_line_hunk_that_fits_twice_names_both_lines() {
    let yaml = "a:\n  - uses: x@v4\nb:\n  - uses: x@v4\n";
    let diff = "--- a/ci.yml\n+++ b/ci.yml\n@@ -9 +9 @@\n-  - uses: x@v4\n+  - uses: x@v5\n";
    let message = refusal(yaml, diff);
    assert!(
        message.contains("fits 2 places in the file (line 2, line 4)"),
        "{message}"
    );
}

#[test]
fn a_pure_addition_written_with_spaces_in_a_tab_indented_file_gets_tabs() {
    let makefile = "build:\n\tcargo build\n\nlint:\n\tcargo clippy\n";
    let diff = "--- a/Makefile\n+++ b/Makefile\n@@ @@\n build:\n     cargo build\n+\n+test:\n+    cargo test\n \n lint:\n";
    assert_eq!(
        apply_diff(makefile, diff).unwrap(),
        "build:\n\tcargo build\n\ntest:\n\tcargo test\n\nlint:\n\tcargo clippy\n"
    );
}

#[test]
fn removed_lines_found_once_allow_one_altered_context_line_even_with_little_context() {
    let text = "# Notes API\n\n### `DELETE /notes/{id}`\n\nDeletes a note.\n\n## Development\n";
    // The heading in the context has a typo (`noes`); the removed line exists only once.
    let diff = "--- a/README.md\n+++ b/README.md\n@@ -3,5 +3,5 @@\n ### `DELETE /noes/{id}`\n \n-Deletes a note.\n+Deletes a note; deleting twice returns 404.\n \n ## Development\n";
    let applied = apply_diff(text, diff).unwrap();
    assert!(applied.contains("Deletes a note; deleting twice returns 404.\n\n## Development"));
}

#[test]
fn an_altered_context_line_is_not_forgiven_when_the_removed_lines_appear_twice() {
    let text = "## A\n\nDeletes a note.\n\n## B\n\nDeletes a note.\n";
    let diff =
        "--- a/x.md\n+++ b/x.md\n@@ -1,3 +1,3 @@\n ## Z\n \n-Deletes a note.\n+Removes a note.\n";
    assert!(refusal(text, diff).starts_with("hunk 1"));
}

#[test]
fn a_hunk_anchored_on_a_blank_line_is_not_aligned_at_every_blank_line_of_the_file() {
    // Found by the edits_udiff fuzz target: a removed blank line is found at each of a file's
    // blank lines, and an alignment at each took seconds on a 4 KB input.
    let original = format!("fn main() {{}}\n{}", "\n".repeat(1500));
    let diff =
        "--- a/m.rs\n+++ b/m.rs\n@@ -1,6 +1,5 @@\n alpha\n beta\n gamma\n delta\n-\n epsilon\n";
    ALIGNMENTS.with(|count| count.set(0));
    let refusal = apply_diff(&original, diff).expect_err("the context is nowhere in the file");
    assert!(refusal.message.contains("hunk 1"), "{refusal}");
    assert_eq!(ALIGNMENTS.with(std::cell::Cell::get), 0);
}

#[test]
fn a_hunk_anchored_on_a_common_line_still_finds_its_one_close_fit() {
    let mut original = String::new();
    for block in 0..200 {
        original.push_str(&format!("fn f{block}() {{\n    step({block});\n}}\n\n"));
    }
    // `}` is removed: it is everywhere, and the context (one line altered) says where.
    let diff = "--- a/m.rs\n+++ b/m.rs\n@@ -1,1 +1,1 @@\n fn f120() {\n     step(120);\n-}\n+} // end\n \n fn f121() {\n     step(0121);\n }\n";
    ALIGNMENTS.with(|count| count.set(0));
    let patched = apply_diff(&original, diff).expect("one close fit");
    assert!(patched.contains("fn f120() {\n    step(120);\n} // end\n\nfn f121"));
    // Only the `}` lines whose reach holds that context are aligned at, not all 200.
    let alignments = ALIGNMENTS.with(std::cell::Cell::get);
    assert!(alignments <= 20, "{alignments} alignments");
}
