//! Placeholder for the aider SEARCH/REPLACE parse figures (the real file is written elsewhere).
//! It only fixes the interface `benches/edit_apply.rs` calls, and says it is not there yet.
#![allow(dead_code)]

use std::path::Path;

/// How well the SEARCH/REPLACE parser recovers aider's gold blocks.
pub struct AiderReport {
    pub gold_blocks: usize,
    pub parsed_blocks: usize,
    pub matched: usize,
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
}

/// Parses aider's chat history under `shared_bench_dir` and scores it against the gold parse.
pub fn report(shared_bench_dir: &Path) -> std::io::Result<AiderReport> {
    Err(std::io::Error::other(format!(
        "aider gold report not implemented yet (data under {})",
        shared_bench_dir.display()
    )))
}
