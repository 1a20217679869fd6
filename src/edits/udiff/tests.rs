//! Stories about reading and applying unified diffs, sloppy ones included.
//! Each defect a model makes has one story; each refusal has one too.
//!
//! The stories are split by what they tell: `reading` diffs out of replies, `applying` diffs
//! that fit, and `refusing` diffs whose intent is not certain; the files they share are here.

mod applying;
mod reading;
mod refusing;

use super::*;
use crate::edits::{Change, FileEdit, Mismatch};

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
