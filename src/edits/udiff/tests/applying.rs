//! Stories about applying diffs that fit: exact ones, and those with wrong numbers, whitespace
//! drift, lost blank lines, other indentation or line endings, whose intent is still certain.

use super::*;
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
