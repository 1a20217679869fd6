//! Prints how closely our SEARCH/REPLACE parser reproduces aider's gold parse of its own chat
//! transcript (`cargo bench --bench aider_gold`); the comparison lives in `support/aider_gold.rs`.

#[path = "support/aider_gold.rs"]
mod aider_gold;

use std::path::PathBuf;
use std::process::ExitCode;

/// `$AUTOFIX_SHARED_DIR/bench` if set, else the `shared/bench` directory beside the crate.
fn shared_bench_dir() -> PathBuf {
    match std::env::var_os("AUTOFIX_SHARED_DIR") {
        Some(shared) => PathBuf::from(shared).join("bench"),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/bench"),
    }
}

fn main() -> ExitCode {
    let dir = shared_bench_dir();
    match aider_gold::report(&dir) {
        Ok(report) => {
            println!("{report}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("aider gold parse: cannot read {}: {error}", dir.display());
            ExitCode::FAILURE
        }
    }
}
