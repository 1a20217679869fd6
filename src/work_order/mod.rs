//! `autofix run` (docs/local-commands.md): the work-order harness — strict JSON writes within
//! `allowed_files`, precondition hashes, verification and acceptance, rollback, artifacts.

mod artifacts;
mod harness;
mod prompt;
pub mod schema;

pub use harness::{RunOptions, RunOutcome, run, tree_hash};
