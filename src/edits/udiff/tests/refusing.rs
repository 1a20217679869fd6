//! Stories about refusing diffs whose intent is not certain: fits in several places, fits
//! nowhere, or fits only by guessing at indentation, each refusal saying why.

use super::*;
use crate::edits::udiff::align::ALIGNMENTS;
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
