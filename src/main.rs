//! `autofix`: the command-line front door. Parses arguments, wires configuration into the
//! library's commands and prints their results; nothing else happens here.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use autofix::commands::apply::{self, ApplyCommandError, ApplyRequest};
use autofix::commands::{jobs, replay};
use autofix::config::ServiceConfig;
use autofix::edits::EditFormat;
use autofix::failure::FailureCode;
use autofix::forge::Triggers;
use autofix::git::Identity;
use autofix::pipeline::fix::{FixOptions, IssueInput};
use autofix::pipeline::settings::PipelineSettings;
use autofix::redact::Redactor;
use autofix::telemetry::{Stages, StderrStages};
use autofix::work_order::RunOptions;
use clap::{Parser, Subcommand};

/// A line on standard output; a reader that went away (`| head -c1`) ends the command quietly.
macro_rules! say {
    ($($arg:tt)*) => {
        autofix::commands::output::line(&format!($($arg)*))
    };
}

/// How every command that reads the service configuration finds it, shown by `--help`.
const CONFIGURATION_HELP: &str = "\
Configuration: the built-in defaults, then `--config FILE` (TOML), then environment variables
AUTOFIX__SECTION__KEY for any key (e.g. AUTOFIX__LLM__API_KEY, AUTOFIX__SERVER__LISTEN), or
AUTOFIX__SECTION__KEY_FILE=/path to read a secret from a file. `autofix config check` prints
what is in effect.

Data directory (job store, repository caches, work trees, a GitHub App made on the setup page):
`workdir`, AUTOFIX__WORKDIR; by default $XDG_DATA_HOME/autofix, else ~/.local/share/autofix,
else ./autofix-data.";

#[derive(Parser)]
#[command(
    name = "autofix",
    version,
    about = "Turns a labelled issue into a validated pull request",
    after_help = CONFIGURATION_HELP
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
    /// Run a work order: strict JSON writes within its allowed files, checked by its commands.
    #[command(after_help = CONFIGURATION_HELP)]
    Run {
        /// The git repository to change (its work tree must be clean).
        #[arg(long)]
        repo: PathBuf,
        /// The work order (JSON).
        #[arg(long = "work-order", value_name = "FILE")]
        work_order: PathBuf,
        /// Where `<run_id>/…` artifacts are written.
        #[arg(long)]
        out: PathBuf,
        /// Attempts before giving up.
        #[arg(long, default_value_t = 2)]
        max_attempts: usize,
        /// The model to ask (the provider comes from the service configuration).
        #[arg(long)]
        llm_model: String,
        #[arg(long, default_value_t = 0.0)]
        llm_temperature: f32,
        /// Timeout of each acceptance command.
        #[arg(long, default_value_t = 600)]
        timeout_seconds: u64,
        /// A service configuration file laid over the defaults.
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Fix an issue in a local repository: triage, plan, edit, validate, review, one commit on
    /// a feature branch (or everything put back and a failure code).
    #[command(after_help = CONFIGURATION_HELP)]
    Fix {
        /// The git repository (its work tree must be clean, a branch checked out).
        #[arg(long)]
        repo: PathBuf,
        /// The issue: JSON {"number", "title", "body", "labels"} or Markdown (title first).
        #[arg(long = "issue-file", value_name = "FILE")]
        issue_file: PathBuf,
        /// The issue number, when the file has none (or to override it).
        #[arg(long)]
        issue_number: Option<u64>,
        /// Where the artifacts go (default: <git dir>/autofix/runs/<issue>-<time>).
        #[arg(long)]
        out: Option<PathBuf>,
        /// A service configuration file laid over the defaults.
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Show, without any model call, the files and spans the edit stage would start from for
    /// an issue: ranked, with why, and which fit the token budget.
    #[command(after_help = CONFIGURATION_HELP)]
    Context {
        /// The repository (a work tree).
        #[arg(long)]
        repo: PathBuf,
        /// The issue: JSON {"number", "title", "body", "labels"} or Markdown (title first).
        #[arg(long = "issue-file", value_name = "FILE")]
        issue_file: PathBuf,
        /// The context budget in tokens (default: `pipeline.context_tokens`).
        #[arg(long)]
        tokens: Option<usize>,
        /// How many ranked files to list, in the context or not.
        #[arg(long, default_value_t = 50)]
        limit: usize,
        /// Print JSON instead of one line per file.
        #[arg(long)]
        json: bool,
        /// A service configuration file laid over the defaults.
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Run the bot: the webhook ingress, the worker pool that runs the jobs, and the setup and
    /// jobs pages; with nothing configured, open http://127.0.0.1:8080/ to set it up.
    #[command(after_help = CONFIGURATION_HELP)]
    Serve {
        /// A service configuration file laid over the defaults.
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Read the job store: the newest jobs, or one job with its checkpoint and history.
    #[command(after_help = CONFIGURATION_HELP)]
    Jobs {
        #[command(subcommand)]
        action: JobsAction,
    },
    /// Queue a stored webhook delivery again, as a new delivery (`<id>.replay-<n>`): exits 0 when
    /// a job now works on the issue, 1 when nothing was queued.
    #[command(after_help = CONFIGURATION_HELP)]
    Replay {
        /// The delivery's id (`X-GitHub-Delivery`, GitLab `Idempotency-Key`).
        delivery_id: String,
        /// A service configuration file laid over the defaults.
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Check the service configuration as `serve` would and print what is in effect (`check`),
    /// or write a repository's first `.autofix.toml` from what autofix finds in it (`init`).
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
}

#[derive(Subcommand)]
enum JobsAction {
    /// One line per job, newest first.
    List {
        /// How many jobs to show.
        #[arg(long, default_value_t = 20)]
        limit: u32,
        /// A service configuration file laid over the defaults.
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// One job: its record, its checkpoint and its events, oldest first.
    Show {
        id: autofix::store::JobId,
        /// A service configuration file laid over the defaults.
        #[arg(long)]
        config: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
enum ConfigAction {
    /// Run `serve`'s checks, try the sandbox, say how ready each part is and print the effective
    /// configuration (secrets hidden); exits non-zero when a part is broken.
    #[command(after_help = CONFIGURATION_HELP)]
    Check {
        /// Also ask each configured service whether it works: GitHub and GitLab (the
        /// credentials' user, the App's installations, the token's scopes), the model (its
        /// listing), the database (a query), `server.public_url` (its /healthz).
        #[arg(long)]
        online: bool,
        /// A TOML file laid over the defaults.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Also check this repository's `.autofix.toml` (or, without [[validate]] steps, show
        /// the checks autofix proposes), list the toolchains the sandbox shows and warn about
        /// missing programs and the CI jobs its branches run with secrets.
        #[arg(long)]
        repo: Option<PathBuf>,
    },
    /// Write the setup and checks autofix proposes for a repository without configuration as a
    /// commented `.autofix.toml` to adjust and commit (never over an existing one; commits
    /// nothing).
    Init {
        /// The repository (the root of a git work tree).
        #[arg(long)]
        repo: PathBuf,
    },
}

fn main() -> ExitCode {
    autofix::commands::harden::this_process();
    // Before anything can open a repository: the service user's ~/.gitconfig and the system's
    // git configuration must never redirect a fetch or a push of this process.
    if let Err(error) = autofix::git::ignore_global_config() {
        eprintln!("autofix: error: {}", error.message());
        return ExitCode::from(2);
    }
    let cli = Cli::parse();
    match cli.command {
        Command::Apply {
            format,
            dir,
            protect,
            check,
        } => apply_command(format, dir, protect, check),
        Command::Config {
            action:
                ConfigAction::Check {
                    config,
                    repo,
                    online,
                },
        } => config_check(config, repo, online),
        Command::Config {
            action: ConfigAction::Init { repo },
        } => config_init(&repo),
        Command::Serve { config } => serve_command(config),
        Command::Jobs { action } => jobs_command(action),
        Command::Replay {
            delivery_id,
            config,
        } => replay_command(delivery_id, config),
        Command::Fix {
            repo,
            issue_file,
            issue_number,
            out,
            config,
        } => fix_command(repo, issue_file, issue_number, out, config),
        Command::Context {
            repo,
            issue_file,
            tokens,
            limit,
            json,
            config,
        } => context_command(repo, issue_file, tokens, limit, json, config),
        Command::Run {
            repo,
            work_order,
            out,
            max_attempts,
            llm_model,
            llm_temperature,
            timeout_seconds,
            config,
        } => {
            let options = RunOptions {
                repo,
                work_order,
                out,
                max_attempts,
                llm_provider: String::new(),
                llm_model,
                llm_temperature,
                command_timeout: Duration::from_secs(timeout_seconds),
                output_limit: 0,
                default_validate_timeout: Duration::ZERO,
                redactor: Redactor::new(),
                sandbox: autofix::exec::Sandbox::unconfined(),
                stages: printed_stages("autofix run"),
            };
            run_command(options, config)
        }
    }
}

fn context_command(
    repo: PathBuf,
    issue_file: PathBuf,
    tokens: Option<usize>,
    limit: usize,
    json: bool,
    config_file: Option<PathBuf>,
) -> ExitCode {
    let fail = |message: String| {
        eprintln!("autofix context: {message}");
        ExitCode::from(FailureCode::InvalidInput.exit_status())
    };
    let tokens = match tokens {
        Some(tokens) => tokens,
        None => match load_service_config(config_file.as_ref()) {
            Ok(config) => config.pipeline.context_tokens,
            Err(message) => return fail(message),
        },
    };
    let issue = match autofix::pipeline::issue::Issue::read(&issue_file) {
        Ok(issue) => issue,
        Err(error) => return fail(error.to_string()),
    };
    match autofix::commands::context::report(&repo, &issue, tokens, limit) {
        Ok(report) if json => {
            say!(
                "{}",
                serde_json::to_string_pretty(&report).expect("the report serialises")
            );
            ExitCode::SUCCESS
        }
        Ok(report) => {
            autofix::commands::output::text(&autofix::commands::context::render_text(&report));
            ExitCode::SUCCESS
        }
        Err(message) => fail(message),
    }
}

fn fix_command(
    repo: PathBuf,
    issue_file: PathBuf,
    issue_number: Option<u64>,
    artifacts: Option<PathBuf>,
    config_file: Option<PathBuf>,
) -> ExitCode {
    let invalid = |message: String| {
        eprintln!("autofix fix: {message}");
        ExitCode::from(FailureCode::InvalidInput.exit_status())
    };
    let config = match load_service_config(config_file.as_ref()) {
        Ok(config) => config,
        Err(message) => return invalid(message),
    };
    let identity = match Identity::new(&config.git.author_name, &config.git.author_email) {
        Ok(identity) => identity,
        Err(err) => return invalid(format!("git.author_name / git.author_email: {err}")),
    };
    let provider = match autofix::llm::provider(config.provider_config()) {
        Ok(provider) => provider,
        Err(err) => return invalid(err.to_string()),
    };
    let settings = PipelineSettings::from_config(&config);
    let options = FixOptions {
        repo,
        issue: IssueInput::File(issue_file),
        issue_number,
        job_id: None,
        artifacts,
        identity,
        redactor: autofix::commands::serve::known_secrets(&config),
        cache_dir: None,
        dep_cache: settings.dep_cache(None, String::new()),
        repo_config: None,
        baseline_cache: None,
        stages: printed_stages("autofix fix"),
        revision: None,
        cancel: Default::default(),
        approval: Default::default(),
        earlier_reproduction: None,
        // On a person's machine only the per-job cap applies: the daily ones need the bot's store.
        spend: autofix::llm::spend::SpendGuard::new(
            settings.pricing.clone(),
            autofix::llm::spend::ServiceCaps {
                per_job: settings.caps.per_job,
                ..Default::default()
            }
            .caps(0.0, 0.0, 0.0),
        ),
        candidates: settings.candidate_limits(None, false),
        settings,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime starts");
    match runtime.block_on(autofix::pipeline::fix::fix(&options, provider.as_ref())) {
        Err(error) => invalid(format!("{error:#}")),
        Ok(summary) => {
            match (&summary.failure, &summary.subject, &summary.branch) {
                (None, Some(subject), Some(branch)) => {
                    say!("committed on {branch}: {subject}");
                    if let Some(line) = &summary.candidates_line {
                        say!("{line}");
                    }
                    for line in summary.reproduction.iter().flat_map(|r| r.lines()) {
                        say!("proof: {line}");
                    }
                    for check in &summary.checks {
                        if !check.still_failing.is_empty() {
                            say!(
                                "note: {} already failed on the base commit: {}",
                                check.name,
                                check.still_failing.join(", ")
                            );
                        }
                    }
                    if !summary.flaky.is_empty() {
                        say!("note: flaky: {}", summary.flaky.join(", "));
                    }
                }
                (Some(failure), _, _) => say!("FAIL {failure}"),
                (None, _, _) => say!("FAIL: the run ended without a commit"),
            }
            say!("{}", autofix::worker::publish::Cost::of(&summary).line());
            say!("artifacts: {}", summary.artifacts.display());
            match &summary.failure {
                None => ExitCode::SUCCESS,
                Some(failure) => ExitCode::from(failure.code.exit_status()),
            }
        }
    }
}

/// One line on standard error as each stage starts and ends.
fn printed_stages(command: &str) -> Stages {
    Stages::none().with(std::sync::Arc::new(StderrStages::new(command)))
}

fn serve_command(config_file: Option<PathBuf>) -> ExitCode {
    let rust_log = std::env::var("RUST_LOG").ok();
    let config = match load_service_config(config_file.as_ref()) {
        Ok(config) => config,
        Err(message) => {
            eprintln!("autofix serve: {message}");
            return ExitCode::from(FailureCode::InvalidInput.exit_status());
        }
    };
    if let Err(message) = autofix::commands::logging::init(&config.log, rust_log.as_deref()) {
        eprintln!("autofix serve: {message}");
        return ExitCode::from(FailureCode::InvalidInput.exit_status());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime starts");
    let served = runtime.block_on(autofix::commands::serve::serve(config));
    let code = match served {
        Ok(()) => 0,
        Err(message) => {
            eprintln!("autofix serve: {message}");
            1
        }
    };
    // A job thread still running after the drain (its job already back in the queue) must
    // neither hold the exit nor see the runtime shut down under it: the process ends here.
    std::process::exit(code)
}

fn jobs_command(action: JobsAction) -> ExitCode {
    let (config, listing) = match action {
        JobsAction::List { limit, config } => (config, Err(limit)),
        JobsAction::Show { id, config } => (config, Ok(id)),
    };
    operator_command("jobs", config, |store, _| async move {
        let lines = match listing {
            Err(limit) => jobs::list(&store, limit).await,
            Ok(id) => jobs::show(&store, id).await,
        };
        lines.map_err(|err| err.to_string())
    })
}

fn replay_command(delivery_id: String, config: Option<PathBuf>) -> ExitCode {
    operator_command("replay", config, |store, config| async move {
        let triggers = Triggers {
            label: &config.bot.trigger_label,
            command: &config.bot.command_word,
        };
        let outcome = replay::replay(&store, &delivery_id, &triggers, chrono::Utc::now())
            .await
            .map_err(|err| err.to_string())?;
        if outcome.has_job() {
            Ok(vec![outcome.to_string()])
        } else {
            Err(outcome.to_string())
        }
    })
}

/// Loads the configuration, opens the existing store and prints what `work` returns (exit 0),
/// or its one-line error on standard error (exit 1; a configuration error exits as invalid input).
fn operator_command<Work, Done>(name: &str, config_file: Option<PathBuf>, work: Work) -> ExitCode
where
    Work: FnOnce(autofix::store::Store, ServiceConfig) -> Done,
    Done: std::future::Future<Output = Result<Vec<String>, String>>,
{
    let config = match load_service_config(config_file.as_ref()) {
        Ok(config) => config,
        Err(message) => {
            eprintln!("autofix {name}: {message}");
            return ExitCode::from(FailureCode::InvalidInput.exit_status());
        }
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime starts");
    let result = runtime.block_on(async {
        let store = autofix::store::Store::open_existing(&config.database_url())
            .await
            .map_err(|err| format!("database.url: {err}"))?;
        let result = work(store.clone(), config).await;
        store.close().await;
        result
    });
    match result {
        Ok(lines) => {
            for line in lines {
                say!("{line}");
            }
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("autofix {name}: {message}");
            ExitCode::from(1)
        }
    }
}

/// The defaults, an optional file and the `AUTOFIX__*` environment, or one line saying why not.
fn load_service_config(file: Option<&PathBuf>) -> Result<ServiceConfig, String> {
    let text = match file {
        None => None,
        Some(path) => Some((
            path.display().to_string(),
            std::fs::read_to_string(path)
                .map_err(|err| format!("cannot read {}: {err}", path.display()))?,
        )),
    };
    let file = text
        .as_ref()
        .map(|(name, text)| (name.as_str(), text.as_str()));
    let config = ServiceConfig::load(file, std::env::vars()).map_err(|err| err.to_string());
    // Read once; from here on no secret stays in the environment, where every child, a core
    // dump or /proc/PID/environ would show it. No other thread exists yet.
    autofix::commands::harden::forget_configuration_variables();
    config
}

fn run_command(mut options: RunOptions, config_file: Option<PathBuf>) -> ExitCode {
    let config = match load_service_config(config_file.as_ref()) {
        Ok(config) => config,
        Err(message) => {
            eprintln!("autofix run: {message:#}");
            return ExitCode::from(FailureCode::InvalidInput.exit_status());
        }
    };
    let mut provider_config = config.provider_config();
    provider_config.model = options.llm_model.clone();
    options.llm_provider = provider_config.kind.to_string();
    options.output_limit = config.exec.output_limit_bytes;
    options.default_validate_timeout = Duration::from_secs(config.exec.default_timeout_secs);
    options.redactor = autofix::commands::serve::known_secrets(&config);
    options.sandbox = config.sandbox();
    let provider = match autofix::llm::provider(provider_config) {
        Ok(provider) => provider,
        Err(err) => {
            eprintln!("autofix run: {err}");
            return ExitCode::from(FailureCode::InvalidInput.exit_status());
        }
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime starts");
    match runtime.block_on(autofix::work_order::run(&options, provider.as_ref())) {
        Err(message) => {
            eprintln!("autofix run: {message:#}");
            ExitCode::from(FailureCode::InvalidInput.exit_status())
        }
        Ok(outcome) => {
            let summary = &outcome.summary;
            match summary.failure_code {
                None => {
                    say!("PASS after {} attempt(s)", summary.attempts.len());
                    say!("{}", outcome.summary_path.display());
                    ExitCode::SUCCESS
                }
                Some(code) => {
                    let stage = summary
                        .failure_stage
                        .map(|stage| stage.as_str().to_string())
                        .unwrap_or_default();
                    say!(
                        "FAIL {code} at {stage} after {} attempt(s)",
                        summary.attempts.len()
                    );
                    say!("{}", outcome.summary_path.display());
                    ExitCode::from(code.exit_status())
                }
            }
        }
    }
}

fn config_check(file: Option<PathBuf>, repo: Option<PathBuf>, online: bool) -> ExitCode {
    use autofix::commands::preflight::{self, Readiness};
    let failed = |message: String, code: FailureCode| {
        eprintln!("autofix config check: {message}");
        ExitCode::from(code.exit_status())
    };
    let config = match load_service_config(file.as_ref()) {
        Ok(config) => config,
        Err(message) => return failed(message, FailureCode::InvalidInput),
    };
    // The same checks `serve` makes before it listens, with its parts built inside a runtime
    // (the GitHub client's transport starts a task), as they are in `serve`.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime starts");
    let built = {
        let _inside = runtime.enter();
        preflight::build_parts(&config)
    };
    let parts = match built {
        Ok(parts) => parts,
        Err(message) => return failed(message, FailureCode::InvalidInput),
    };
    let sandbox = autofix::commands::harden::check_sandbox(&config.sandbox());
    let mut report = preflight::setup_report(&config, &sandbox);
    if online {
        let services = autofix::commands::verify::Services::new(
            &config,
            parts.github.clone(),
            parts.gitlab.clone(),
            std::sync::Arc::from(parts.llm),
            autofix::commands::serve::known_secrets(&config),
        );
        report = runtime.block_on(autofix::commands::verify::verify(report, &services));
    }
    let broken: Vec<&str> = report
        .iter()
        .filter(|part| part.readiness == Readiness::Broken)
        .map(|part| part.name)
        .collect();
    match (preflight::refuse_to_serve(&config), broken.is_empty()) {
        (Err(why), _) => say!("`autofix serve` would not start: {why}"),
        (Ok(()), true) => say!("configuration is valid: `autofix serve` would start"),
        (Ok(()), false) => say!(
            "configuration is valid: `autofix serve` would start, but {} would not work",
            broken.join(", ")
        ),
    }
    for part in &report {
        say!(
            "{}: {}: {}",
            part.name,
            part.readiness.as_str(),
            part.detail
        );
    }
    if !online {
        say!("(`autofix config check --online` asks each configured service whether it works)");
    }
    say!("");
    say!("# the effective configuration (secrets shown as \"(set)\")");
    autofix::commands::output::text(&config.effective_toml());
    if let Err(line) = sandbox {
        return failed(line, FailureCode::SandboxUnavailable);
    }
    let repo_checked = match repo {
        None => ExitCode::SUCCESS,
        Some(repo) => repo_check(&repo, config.forge.push_to, &config.sandbox()),
    };
    if !broken.is_empty() {
        return failed(
            format!("broken: {} (see above)", broken.join(", ")),
            FailureCode::InvalidInput,
        );
    }
    repo_checked
}

/// What `config check --repo` says about the checkout; exits as invalid input when its
/// configuration cannot be used.
fn repo_check(
    repo: &std::path::Path,
    push_to: autofix::forge::PushTo,
    sandbox: &autofix::exec::Sandbox,
) -> ExitCode {
    let report = autofix::commands::repo_check::report(repo, push_to, sandbox);
    for line in &report.lines {
        say!("{line}");
    }
    match report.invalid {
        None => ExitCode::SUCCESS,
        Some(err) => {
            eprintln!("autofix config check: {err}");
            ExitCode::from(FailureCode::InvalidInput.exit_status())
        }
    }
}

fn config_init(repo: &std::path::Path) -> ExitCode {
    match autofix::commands::config_init::init(repo) {
        Ok(written) => {
            say!(
                "wrote {}: {} setup step(s), {} check(s), {} left out (as comments)",
                written.path.display(),
                written.setup,
                written.validate,
                written.left_out
            );
            say!(
                "next: adjust it, check it with `autofix config check --repo {}`, and commit it",
                repo.display()
            );
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("autofix config init: {message}");
            ExitCode::from(FailureCode::InvalidInput.exit_status())
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
                say!("{line}");
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
