//! The `code-commit` front door (its contract: docs/code-commit.md): `query.txt` + `codeRollup.txt`
//! → Gemini → `^^^` file replacements → `build.sh`, then up to three repair queries, all logged.

mod build;
mod log_dir;
mod prompts;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::anyhow;
use chrono::Local;
use secrecy::SecretString;

use crate::edits::apply::{self, ApplyError, ApplyPolicy, FileAction};
use crate::edits::paths::{ProjectRoot, ProtectedPaths};
use crate::edits::{EditFormat, EditSet, ParseError, fenced};
use crate::llm::{self, LlmProvider, LlmRequest, ProviderConfig, ProviderKind};
use crate::redact::Redactor;

pub use crate::exec::warning_lines;
pub use build::BuildReport;
pub use prompts::{INITIAL_SYSTEM_PROMPT, REPAIR_SYSTEM_PROMPT};

use build::BuildSettings;
use log_dir::LogDir;
use prompts::FileReplacements;

/// Repair queries after the initial one, as docs/code-commit.md fixes it.
pub const MAX_REPAIRS: usize = 3;

/// Files no response may touch (gitignore syntax, anchored at the project root), besides
/// `.git/` and whatever the project's `.gitignore` ignores.
pub const PROTECTED: &[&str] = &[
    "/Cargo.lock",
    "/build.sh",
    "/codeRollup.sh",
    "/codeRollup.txt",
    "/query.txt",
    "/gemini-key.txt",
    "/LLMInstructions.md",
    "/UserSpecification.md",
    "/logs/",
    "/target/",
];

pub const DEFAULT_GEMINI_BASE_URL: &str = "https://generativelanguage.googleapis.com";
pub const DEFAULT_GEMINI_MODEL: &str = "gemini-2.5-pro";

/// The file in the project folder that holds the Gemini API key.
pub const KEY_FILE: &str = "gemini-key.txt";

/// Everything a run needs to know besides the project's own files.
#[derive(Debug, Clone)]
pub struct Settings {
    pub project_dir: PathBuf,
    pub gemini_base_url: String,
    pub gemini_model: String,
    pub llm_timeout: Duration,
    pub llm_retries: u32,
    pub build_timeout: Duration,
    /// Most bytes of build output kept (and so sent in a repair query).
    pub build_output_limit: usize,
    /// The sandbox `build.sh` runs in (`--sandbox`); `None` runs it as the user's own command.
    pub sandbox: Option<crate::exec::Sandbox>,
}

impl Settings {
    /// Reads `GEMINI_BASE_URL`, `GEMINI_MODEL`, `CODE_COMMIT_LLM_TIMEOUT_SECS`,
    /// `CODE_COMMIT_LLM_RETRIES` and `CODE_COMMIT_BUILD_TIMEOUT_SECS` through `var`.
    pub fn from_env(
        project_dir: PathBuf,
        var: impl Fn(&str) -> Option<String>,
    ) -> anyhow::Result<Settings> {
        let number = |name: &str, default: u64| -> anyhow::Result<u64> {
            match var(name) {
                None => Ok(default),
                Some(value) => value
                    .trim()
                    .parse::<u64>()
                    .ok()
                    .filter(|n| *n > 0 || name == "CODE_COMMIT_LLM_RETRIES")
                    .ok_or_else(|| {
                        anyhow!("{name} must be a whole number of seconds or tries, not `{value}`")
                    }),
            }
        };
        let text = |name: &str, default: &str| {
            var(name)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| default.to_string())
        };
        Ok(Settings {
            project_dir,
            gemini_base_url: text("GEMINI_BASE_URL", DEFAULT_GEMINI_BASE_URL),
            gemini_model: text("GEMINI_MODEL", DEFAULT_GEMINI_MODEL),
            llm_timeout: Duration::from_secs(number("CODE_COMMIT_LLM_TIMEOUT_SECS", 600)?),
            llm_retries: u32::try_from(number("CODE_COMMIT_LLM_RETRIES", 3)?)
                .map_err(|_| anyhow!("CODE_COMMIT_LLM_RETRIES is too large"))?,
            build_timeout: Duration::from_secs(number("CODE_COMMIT_BUILD_TIMEOUT_SECS", 1800)?),
            build_output_limit: 1024 * 1024,
            sandbox: None,
        })
    }
}

/// How a run that reached the build ended well.
#[derive(Debug)]
pub struct Success {
    pub repairs_used: usize,
    pub log_dir: PathBuf,
    pub changed: Vec<String>,
}

/// Why a run ended without a passing build. Each reads as one line.
#[derive(Debug, thiserror::Error)]
pub enum CodeCommitError {
    #[error("{0}")]
    Preflight(String),
    #[error("cannot write the log files in {}: {source}", path.display())]
    Logs {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the {query} failed: {error} (see {})", log_dir.display())]
    Llm {
        /// `initial query` or `repair query N`.
        query: String,
        error: llm::LlmError,
        log_dir: PathBuf,
    },
    #[error(
        "the build still fails after {MAX_REPAIRS} repair queries: {reason} (see {})",
        log_dir.display()
    )]
    BuildStillFails { reason: String, log_dir: PathBuf },
}

impl CodeCommitError {
    /// The process exit status: 2 for a project that cannot start, 3 for an LLM failure,
    /// 1 when the build never passed.
    pub fn exit_code(&self) -> i32 {
        match self {
            CodeCommitError::Preflight(_) | CodeCommitError::Logs { .. } => 2,
            CodeCommitError::Llm { .. } => 3,
            CodeCommitError::BuildStillFails { .. } => 1,
        }
    }
}

/// The project's inputs, read and checked before anything is logged or sent.
struct Inputs {
    query: String,
    codebase: String,
    api_key: SecretString,
}

/// One whole run: initial query, then repairs until the build passes or three were spent.
pub async fn run(settings: &Settings) -> Result<Success, CodeCommitError> {
    let project = &settings.project_dir;
    let inputs = read_inputs(project)?;
    let root = ProjectRoot::new(project)
        .map_err(|err| CodeCommitError::Preflight(format!("cannot open the project: {err}")))?;
    let provider = llm::provider(ProviderConfig {
        kind: ProviderKind::Gemini,
        base_url: settings.gemini_base_url.clone(),
        model: settings.gemini_model.clone(),
        api_key: inputs.api_key.clone(),
        request_timeout: settings.llm_timeout,
        max_retries: settings.llm_retries,
        initial_backoff: Duration::from_secs(1),
        max_backoff: Duration::from_secs(120),
    })
    .map_err(|err| CodeCommitError::Preflight(format!("GEMINI_BASE_URL: {err}")))?;
    let mut redactor = Redactor::new();
    redactor.register(&inputs.api_key);
    let logs = LogDir::create(project, Local::now(), redactor.clone()).map_err(|source| {
        CodeCommitError::Logs {
            path: project.join("logs"),
            source,
        }
    })?;
    let mut session = Session {
        settings,
        inputs: &inputs,
        root: &root,
        provider: provider.as_ref(),
        logs: &logs,
        redactor,
        replacements: FileReplacements::default(),
    };
    session.run().await
}

fn read_inputs(project: &Path) -> Result<Inputs, CodeCommitError> {
    let query = read_required_text(project, "query.txt")?;
    let codebase = read_required_text(project, "codeRollup.txt")?;
    let key = read_required_text(project, KEY_FILE)?;
    check_build_script(project)?;
    Ok(Inputs {
        query,
        codebase,
        api_key: SecretString::from(key.trim().to_string()),
    })
}

fn read_required_text(project: &Path, name: &str) -> Result<String, CodeCommitError> {
    let path = project.join(name);
    let bytes = match fs::read(&path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return Err(CodeCommitError::Preflight(format!(
                "{name} is missing from {}",
                project.display()
            )));
        }
        Err(err) => {
            return Err(CodeCommitError::Preflight(format!(
                "cannot read {name}: {err}"
            )));
        }
    };
    let text = String::from_utf8(bytes).map_err(|err| {
        CodeCommitError::Preflight(format!(
            "{name} is not UTF-8 text (invalid byte at offset {})",
            err.utf8_error().valid_up_to()
        ))
    })?;
    if text.trim().is_empty() {
        return Err(CodeCommitError::Preflight(format!("{name} is empty")));
    }
    Ok(text)
}

fn check_build_script(project: &Path) -> Result<(), CodeCommitError> {
    use std::os::unix::fs::PermissionsExt;
    let path = project.join("build.sh");
    let meta = fs::metadata(&path).map_err(|err| {
        CodeCommitError::Preflight(if err.kind() == std::io::ErrorKind::NotFound {
            format!("build.sh is missing from {}", project.display())
        } else {
            format!("cannot read build.sh: {err}")
        })
    })?;
    if !meta.is_file() {
        return Err(CodeCommitError::Preflight("build.sh is not a file".into()));
    }
    if meta.len() == 0 {
        return Err(CodeCommitError::Preflight("build.sh is empty".into()));
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err(CodeCommitError::Preflight(
            "build.sh is not executable (run `chmod +x build.sh`)".into(),
        ));
    }
    Ok(())
}

/// The state of one run between its queries.
struct Session<'a> {
    settings: &'a Settings,
    inputs: &'a Inputs,
    root: &'a ProjectRoot,
    provider: &'a dyn LlmProvider,
    logs: &'a LogDir,
    /// The key, and every credential-shaped string the build printed, hidden from the model.
    redactor: Redactor,
    replacements: FileReplacements,
}

/// What the next repair query must be told about the attempt that just ended.
enum AttemptResult {
    Passed,
    /// The build ran and failed: its whole output.
    BuildFailed(BuildReport),
    /// The response was not applied: why, in place of build output.
    Refused(Refusal),
}

/// Why a response's replacements were not applied; nothing was written.
#[derive(Debug, thiserror::Error)]
enum Refusal {
    #[error(transparent)]
    Unreadable(#[from] ParseError),
    #[error(transparent)]
    NotApplied(#[from] ApplyError),
}

impl Session<'_> {
    async fn run(&mut self) -> Result<Success, CodeCommitError> {
        let prompt = prompts::initial_query(&self.inputs.query, &self.inputs.codebase);
        let mut result = self.attempt("initial-query", "initial", &prompt).await?;
        for repair in 1..=MAX_REPAIRS {
            let feedback = match &result {
                AttemptResult::Passed => return Ok(self.success(repair - 1)),
                AttemptResult::BuildFailed(report) => report.output.clone(),
                AttemptResult::Refused(reason) => refusal_feedback(reason),
            };
            let prompt = prompts::repair_query(
                &feedback,
                &self.inputs.query,
                &self.inputs.codebase,
                &self.replacements.render(),
            );
            let stem = format!("repair-query-{repair}");
            result = self.attempt(&stem, "repair", &prompt).await?;
        }
        match result {
            AttemptResult::Passed => Ok(self.success(MAX_REPAIRS)),
            AttemptResult::BuildFailed(report) => Err(CodeCommitError::BuildStillFails {
                reason: report.verdict,
                log_dir: self.logs.path().to_path_buf(),
            }),
            AttemptResult::Refused(reason) => Err(CodeCommitError::BuildStillFails {
                reason: format!("the last response was refused: {reason}"),
                log_dir: self.logs.path().to_path_buf(),
            }),
        }
    }

    /// Logs and sends one query, applies its response, and builds.
    async fn attempt(
        &mut self,
        stem: &str,
        stage: &str,
        prompt: &str,
    ) -> Result<AttemptResult, CodeCommitError> {
        let prompt = self.redactor.redact(prompt);
        self.log(&format!("{stem}.txt"), &prompt)?;
        let request = LlmRequest {
            stage: stage.to_string(),
            system: None,
            prompt,
            temperature: None,
            max_output_tokens: None,
            schema: None,
            candidate: None,
        };
        let result = self.provider.complete(&request).await;
        self.logs
            .write_response(stem, &result)
            .map_err(|source| self.log_error(source))?;
        let response = result.map_err(|error| CodeCommitError::Llm {
            query: stem.replace('-', " "),
            error,
            log_dir: self.logs.path().to_path_buf(),
        })?;
        if let Err(reason) = self.apply(&response.text) {
            return Ok(AttemptResult::Refused(reason));
        }
        let report = build::run_build(
            self.root.path(),
            &BuildSettings {
                timeout: self.settings.build_timeout,
                output_limit: self.settings.build_output_limit,
                jail: self
                    .settings
                    .sandbox
                    .as_ref()
                    .map(|sandbox| sandbox.jail(self.root.path())),
            },
        );
        self.log(
            &format!("{stem}-build.txt"),
            &format!("{}\n\n{}", report.verdict, report.output),
        )?;
        Ok(if report.passed {
            AttemptResult::Passed
        } else {
            AttemptResult::BuildFailed(report)
        })
    }

    /// Parses the `^^^` blocks of `text` and applies them all, or none and says why.
    fn apply(&mut self, text: &str) -> Result<(), Refusal> {
        let edits = fenced::parse(text)?;
        let set = EditSet {
            format: EditFormat::Fenced,
            summary: None,
            edits,
        };
        let protected = ProtectedPaths::from_patterns(self.root, PROTECTED)
            .expect("the built-in patterns are valid")
            .with_project_ignores(self.root);
        let applied = apply::apply(self.root, &set, &ApplyPolicy::new(protected))?;
        for file in applied {
            match (file.action(), &file.after) {
                (FileAction::Deleted, _) => self.replacements.removed(&file.path),
                (FileAction::AlreadyAbsent, _) => {}
                (_, Some(content)) => self.replacements.replaced(&file.path, content),
                (_, None) => self.replacements.removed(&file.path),
            }
        }
        Ok(())
    }

    fn success(&self, repairs_used: usize) -> Success {
        Success {
            repairs_used,
            log_dir: self.logs.path().to_path_buf(),
            changed: self.replacements.describe(),
        }
    }

    fn log(&self, name: &str, content: &str) -> Result<(), CodeCommitError> {
        self.logs
            .write(name, content)
            .map_err(|source| self.log_error(source))
    }

    fn log_error(&self, source: std::io::Error) -> CodeCommitError {
        CodeCommitError::Logs {
            path: self.logs.path().to_path_buf(),
            source,
        }
    }
}

/// Stands in the repair query where build output would be when nothing was applied.
fn refusal_feedback(reason: &Refusal) -> String {
    format!(
        "build.sh was not run: the previous response was refused and none of its changes were applied.\nReason: {reason}\n"
    )
}
