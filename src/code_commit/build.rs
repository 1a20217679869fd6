//! Running `build.sh` and judging it: the build passes only when it exits 0 within its time
//! and prints no warning line (`exec::warning_lines` decides which lines those are).

use std::path::Path;
use std::time::Duration;

use crate::exec::{self, CommandSpec, warning_lines};

/// The outcome of one run of `build.sh`.
#[derive(Debug, Clone)]
pub struct BuildReport {
    pub passed: bool,
    /// One line: why it passed or failed (`exit 0, no warnings`, `exit 101`, `3 warning lines`, …).
    pub verdict: String,
    /// Everything build.sh printed, stdout and stderr interleaved (capped for floods).
    pub output: String,
}

pub struct BuildSettings {
    pub timeout: Duration,
    pub output_limit: usize,
    /// The sandbox build.sh runs in, when asked for.
    pub jail: Option<crate::exec::Jail>,
}

/// Runs `./build.sh` in `project` as the program itself (its shebang decides the interpreter).
pub fn run_build(project: &Path, settings: &BuildSettings) -> BuildReport {
    let spec = CommandSpec {
        program: "./build.sh".to_string(),
        args: Vec::new(),
        cwd: project.to_path_buf(),
        timeout: settings.timeout,
        env_allow: exec::DEFAULT_ENV_ALLOW
            .iter()
            .map(|s| s.to_string())
            .collect(),
        env_set: Vec::new(),
        output_limit: settings.output_limit,
        jail: settings.jail.clone(),
        stop: None,
    };
    match exec::run(&spec) {
        Err(error) => BuildReport {
            passed: false,
            verdict: error.to_string(),
            output: format!("{error}\n"),
        },
        Ok(outcome) => {
            let warnings = warning_lines(&outcome.output);
            let mut output = outcome.output.clone();
            let passed = outcome.success() && warnings.is_empty();
            let verdict = if outcome.timed_out {
                format!(
                    "build.sh was killed after its timeout of {} s",
                    settings.timeout.as_secs()
                )
            } else if !outcome.success() {
                match (outcome.exit_code, outcome.signal) {
                    (Some(code), _) => format!("build.sh exited with status {code}"),
                    (None, Some(signal)) => format!("build.sh was killed by signal {signal}"),
                    (None, None) => "build.sh did not finish".to_string(),
                }
            } else if !warnings.is_empty() {
                format!(
                    "build.sh exited 0 but printed {} warning line{} (warnings count as failure)",
                    warnings.len(),
                    if warnings.len() == 1 { "" } else { "s" }
                )
            } else {
                "build.sh exited 0 with no warnings".to_string()
            };
            if !passed {
                if !output.is_empty() && !output.ends_with('\n') {
                    output.push('\n');
                }
                output.push_str(&format!("[code-commit: {verdict}]\n"));
            }
            BuildReport {
                passed,
                verdict,
                output,
            }
        }
    }
}
