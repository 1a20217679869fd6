//! `autofix`: the command-line front door. Parses arguments, wires configuration into the
//! library's commands and prints their results; nothing else happens here.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use autofix::commands::apply::{self, ApplyCommandError, ApplyRequest};
use autofix::edits::EditFormat;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "autofix",
    version,
    about = "Turns a labelled issue into a validated pull request"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Apply one LLM response (read from standard input) to a directory, all of it or nothing.
    Apply {
        /// The response's format; detected from its markers when not given.
        #[arg(long, value_enum)]
        format: Option<EditFormat>,
        /// The project directory to change.
        #[arg(long)]
        dir: PathBuf,
        /// Another path pattern to refuse (gitignore syntax); may be repeated.
        #[arg(long = "protect", value_name = "PATTERN")]
        protect: Vec<String>,
        /// Check and report what would change, writing nothing.
        #[arg(long)]
        check: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Apply {
            format,
            dir,
            protect,
            check,
        } => apply_command(format, dir, protect, check),
    }
}

fn apply_command(
    format: Option<EditFormat>,
    dir: PathBuf,
    protect: Vec<String>,
    check: bool,
) -> ExitCode {
    let mut response = Vec::new();
    if let Err(err) = std::io::stdin().read_to_end(&mut response) {
        eprintln!("autofix apply: cannot read the response from standard input: {err}");
        return ExitCode::from(2);
    }
    let request = ApplyRequest {
        dir: &dir,
        response: &response,
        format,
        extra_protected: &protect,
        check_only: check,
    };
    match apply::run(&request) {
        Ok(lines) => {
            for line in lines {
                println!("{line}");
            }
            ExitCode::SUCCESS
        }
        Err(err @ ApplyCommandError::Refused(_)) => {
            eprintln!("autofix apply: {err}");
            ExitCode::from(1)
        }
        Err(err @ ApplyCommandError::BadInput(_)) => {
            eprintln!("autofix apply: {err}");
            ExitCode::from(2)
        }
    }
}
