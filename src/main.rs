//! `autofix`: the command-line front door. Parses arguments, wires configuration into the
//! library's commands and prints their results; nothing else happens here.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use autofix::commands::apply::{self, ApplyCommandError, ApplyRequest};
use autofix::config::ServiceConfig;
use autofix::edits::EditFormat;
use clap::{Parser, Subcommand};
use secrecy::ExposeSecret;

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
    /// Validate the service configuration (defaults, an optional file, AUTOFIX__* variables).
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
}

#[derive(Subcommand)]
enum ConfigAction {
    /// Load the configuration and print the effective LLM settings (secrets hidden).
    Check {
        /// A TOML file laid over the defaults.
        #[arg(long)]
        config: Option<PathBuf>,
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
        Command::Config {
            action: ConfigAction::Check { config },
        } => config_check(config),
    }
}

fn config_check(file: Option<PathBuf>) -> ExitCode {
    let text = match &file {
        None => None,
        Some(path) => match std::fs::read_to_string(path) {
            Ok(text) => Some((path.display().to_string(), text)),
            Err(err) => {
                eprintln!(
                    "autofix config check: cannot read {}: {err}",
                    path.display()
                );
                return ExitCode::from(2);
            }
        },
    };
    let file = text
        .as_ref()
        .map(|(name, text)| (name.as_str(), text.as_str()));
    match ServiceConfig::load(file, std::env::vars()) {
        Ok(config) => {
            let llm = &config.llm;
            let key = if llm.api_key.expose_secret().is_empty() {
                "not set"
            } else {
                "set"
            };
            println!("configuration is valid");
            println!(
                "llm: {:?} {} at {} (api key {key})",
                llm.provider, llm.model, llm.base_url
            );
            println!("workdir: {}", config.workdir);
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("autofix config check: {err}");
            ExitCode::from(2)
        }
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
