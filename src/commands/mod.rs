//! The work behind each `autofix` subcommand, one file per command, so that `main.rs` only
//! parses arguments, wires things together and prints.

pub mod apply;
pub mod ci_secrets;
pub mod config_init;
pub mod context;
pub mod harden;
pub mod jobs;
pub mod logging;
pub mod output;
pub mod preflight;
pub mod replay;
pub mod repo_check;
pub mod serve;
pub mod toolchains;
pub mod verify;
