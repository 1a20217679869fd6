//! The command runner: argv only (never a shell), a timeout that kills the whole process
//! group, interleaved output captured under a cap, and an environment allow-list.

use std::path::PathBuf;
use std::time::Duration;

/// Variables a build may see (placeholder until the runner lands).
pub const DEFAULT_ENV_ALLOW: &[&str] = &["PATH", "HOME"];

/// What to run and under which limits.
#[derive(Debug, Clone)]
pub struct CommandSpec {
    /// argv[0]: a program on PATH, or a path (a script such as `./build.sh` is run as itself).
    pub program: String,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    pub timeout: Duration,
    /// Names of environment variables passed through from this process when set; no others.
    pub env_allow: Vec<String>,
    /// Variables set explicitly for the command (never secrets).
    pub env_set: Vec<(String, String)>,
    /// Most bytes of output kept; the rest is counted and dropped (head and tail kept).
    pub output_limit: usize,
}

/// How a finished (or killed) command ended.
#[derive(Debug, Clone)]
pub struct CommandOutcome {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub duration: Duration,
    /// stdout and stderr interleaved in the order written, lossily decoded, capped.
    pub output: String,
    /// Bytes the command wrote in all, including any dropped by the cap.
    pub output_bytes: u64,
    pub truncated: bool,
}

impl CommandOutcome {
    pub fn success(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out
    }
}

/// The command could not be started at all.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("cannot run `{program}`: {source}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
}

/// Runs `spec` to completion or timeout. Blocking: call from `spawn_blocking` in async code.
pub fn run(_spec: &CommandSpec) -> Result<CommandOutcome, ExecError> {
    unimplemented!("command runner")
}
