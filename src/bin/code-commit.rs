//! `code-commit`: run in a project folder holding query.txt, codeRollup.txt, gemini-key.txt and
//! build.sh; asks Gemini for file replacements and repairs until build.sh passes
//! (docs/code-commit.md).

use std::path::PathBuf;
use std::process::ExitCode;

use autofix::code_commit::{self, Settings};
use autofix::exec::{Limits, Sandbox, SandboxMode};
use clap::Parser;

/// Asks Gemini for `^^^path` file replacements to carry out query.txt, applies them, runs
/// ./build.sh, and sends up to three repair queries until the build passes with no errors and
/// no warnings. Logs go to logs/<yyyy-mm-dd-hh-mm-ss>/.
///
/// Environment: GEMINI_BASE_URL, GEMINI_MODEL, CODE_COMMIT_LLM_TIMEOUT_SECS,
/// CODE_COMMIT_LLM_RETRIES, CODE_COMMIT_BUILD_TIMEOUT_SECS.
#[derive(Parser)]
#[command(name = "code-commit", version)]
struct Args {
    /// The project folder (default: the current directory).
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
    /// Run build.sh in a bubblewrap sandbox: no network, only the project folder writable,
    /// gemini-key.txt and everything outside the folder out of its reach.
    #[arg(long)]
    sandbox: bool,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args = Args::parse();
    let project = match args.project.map_or_else(std::env::current_dir, Ok) {
        Ok(dir) => dir,
        Err(err) => {
            eprintln!("code-commit: error: cannot read the current directory: {err}");
            return ExitCode::from(2);
        }
    };
    let settings = match Settings::from_env(project.clone(), |name| std::env::var(name).ok()) {
        Ok(settings) => Settings {
            sandbox: args.sandbox.then(|| {
                Sandbox::new(
                    SandboxMode::Bwrap,
                    "bwrap",
                    &[],
                    &[project.join(code_commit::KEY_FILE)],
                    Limits::default(),
                )
            }),
            ..settings
        },
        Err(message) => {
            eprintln!("code-commit: error: {message:#}");
            return ExitCode::from(2);
        }
    };
    match code_commit::run(&settings).await {
        Ok(success) => {
            for change in &success.changed {
                println!("{change}");
            }
            let attempts = match success.repairs_used {
                0 => "on the initial query".to_string(),
                1 => "after 1 repair query".to_string(),
                n => format!("after {n} repair queries"),
            };
            println!(
                "code-commit: build passes {attempts} (logs in {})",
                success.log_dir.display()
            );
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("code-commit: error: {error}");
            ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(1))
        }
    }
}
