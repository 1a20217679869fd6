//! autofix: turns a labelled issue into a validated pull request. The library holds the
//! engine every front door shares; `main.rs` and `bin/code-commit.rs` only wire it up.

pub mod anchored;
pub mod ci_yaml;
pub mod code_commit;
pub mod commands;
pub mod config;
pub mod detect;
pub mod edits;
pub mod exec;
pub mod failure;
pub mod forge;
pub mod git;
pub mod index;
pub mod llm;
pub mod pipeline;
pub mod quote;
pub mod redact;
pub mod server;
pub mod store;
pub mod telemetry;
pub mod work_order;
pub mod worker;
