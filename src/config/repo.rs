//! Per-repository configuration: the `.autofix.toml` a repository keeps on its default branch
//! (validation commands, repair and audit limits, denied paths, git and PR conventions, budgets).

mod check;
pub use check::MAX_CANDIDATES;
mod commands;
mod instructions;
mod locate;

pub use commands::{BUILTIN_DENIED_COMMANDS, CommandRefusal, RuleOrigin};
pub use instructions::{InstructionFile, Instructions, SkippedInstruction};
pub use locate::{CANDIDATE_PATHS, MAX_FILE_BYTES};

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::edits::paths::{PathRefusal, PatternError, ProjectRoot, ProtectedPaths};
use crate::exec::CommandSpec;
use crate::failure::FailureCode;
use crate::git::CommitKind;

/// Paths no edit may touch in any repository, whatever `[paths] deny` says (gitignore syntax):
/// CI definitions (they run with the repository's secrets), files that hold keys or
/// credentials, review and submodule rules, and this configuration itself, so the bot cannot
/// change its own rules.
pub const BUILTIN_DENIED_PATHS: &[&str] = &[
    // the repository's own machinery
    ".git/",
    ".gitmodules",
    "CODEOWNERS",
    // this configuration, wherever it may be kept
    ".autofix.toml",
    "/.github/autofix.toml",
    "/.gitlab/autofix.toml",
    // CI definitions
    ".github/workflows/**",
    "/.github/actions/",
    ".gitlab-ci.yml",
    "/.gitlab/ci/",
    "/.circleci/",
    "/.buildkite/",
    "/.travis.yml",
    "/.drone.yml",
    "/.woodpecker.yml",
    "/.woodpecker/",
    "/.forgejo/workflows/",
    "/.gitea/workflows/",
    "/azure-pipelines.yml",
    "/bitbucket-pipelines.yml",
    "Jenkinsfile",
    // secrets, keys and credentials (the code-agent contract's blocked patterns among them)
    ".env*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".git-credentials",
    "config/secrets/",
    "deployment/",
];

/// The placeholders a branch template may use.
pub const BRANCH_PLACEHOLDERS: &[&str] = &["type", "number", "slug"];

/// Everything `.autofix.toml` can say. Every section and key is optional; what is left out
/// takes the default shown in `examples/autofix.toml`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RepoConfig {
    /// Commands run once per job on the base commit, before the model writes anything, with
    /// network (`[[setup]]` tables): fetching dependencies.
    pub setup: Vec<SetupStep>,
    /// The repository's own checks, run in order after every edit (`[[validate]]` tables).
    pub validate: Vec<ValidateStep>,
    pub repair: RepairSection,
    pub audit: AuditSection,
    pub approval: ApprovalSection,
    pub paths: PathsSection,
    pub branch: BranchSection,
    pub commit: CommitSection,
    pub pull_request: PullRequestSection,
    pub instructions: InstructionsSection,
    pub budget: BudgetSection,
    pub commands: CommandsSection,
    pub reproduce: ReproduceSection,
    pub candidates: CandidatesSection,
}

/// One validation command. `name`, `run` and `timeout_secs` are written by other tools too.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValidateStep {
    /// Shown in status comments and logs; unique within the file.
    pub name: String,
    /// argv: the program, then each argument as its own string. Never run through a shell.
    pub run: Vec<String>,
    /// When absent, the service's `exec.default_timeout_secs` applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
    /// Whether warning lines in the output fail the step even when it exits 0.
    #[serde(default)]
    pub fail_on_warnings: bool,
    /// Where the command runs, relative to the repository root.
    #[serde(default = "ValidateStep::root_cwd")]
    pub cwd: String,
    /// Plain, non-secret variables set for the command.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Whether the step may reach the network (the status comment and PR body say so).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub network: bool,
}

/// One setup command: like a validation step, but run once, before any model-written code
/// exists, always with network, to fetch what validation needs (`cargo fetch`, `npm ci`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetupStep {
    pub name: String,
    pub run: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
    #[serde(default = "ValidateStep::root_cwd")]
    pub cwd: String,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

impl SetupStep {
    /// The step as a validation step with network: checked and run the same way.
    pub fn as_step(&self) -> ValidateStep {
        ValidateStep {
            name: self.name.clone(),
            run: self.run.clone(),
            timeout_secs: self.timeout_secs,
            fail_on_warnings: false,
            cwd: self.cwd.clone(),
            env: self.env.clone(),
            network: true,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RepairSection {
    /// Edit rounds after the first while validation fails.
    pub max_attempts: u32,
}

/// Several candidate changes per job, each validated in a work tree of its own, the best
/// chosen by evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CandidatesSection {
    /// Candidate changes asked for: 1 to 5 (bounded by the service's `candidates.max`).
    pub count: u32,
    /// What the bot does when no candidate is proven: fail, or open a draft titled `[unproven]`.
    pub on_unproven: OnUnproven,
}

impl Default for CandidatesSection {
    fn default() -> Self {
        CandidatesSection {
            count: 1,
            on_unproven: OnUnproven::Fail,
        }
    }
}

/// What a job with no proven candidate ends with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnUnproven {
    /// `VALIDATION_FAILED`, the best candidate's evidence in the failure comment.
    #[default]
    Fail,
    /// A draft pull request titled `[unproven]` whose body says why (the bot only).
    Draft,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuditSection {
    /// Whether the model reviews the finished change before it is committed.
    pub enabled: bool,
    /// Review-and-fix rounds at most.
    pub max_rounds: u32,
}

/// Plan approval: the bot waits after triage and plan for a maintainer's `approve`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ApprovalSection {
    pub required: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PathsSection {
    /// Patterns (gitignore syntax) denied on top of [`BUILTIN_DENIED_PATHS`].
    pub deny: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BranchSection {
    /// The branch name, from `{type}`, `{number}` (required) and `{slug}`.
    pub template: String,
    /// Whether a failed job pushes its work-in-progress branch instead of deleting it.
    pub keep_on_failure: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CommitSection {
    /// The type when no issue label maps to one.
    pub default_type: CommitKind,
    /// The scope when the change suggests none (`[a-z-]+`).
    pub default_scope: String,
    /// Issue label (compared without regard to case) → commit type. Replaces the defaults.
    pub type_by_label: BTreeMap<String, CommitKind>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PullRequestSection {
    pub draft: bool,
    /// User names (or `org/team`) asked for review; a leading `@` is dropped.
    pub reviewers: Vec<String>,
    /// Labels put on the pull request.
    pub labels: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct InstructionsSection {
    /// Files given to the model, in this order, when they exist.
    pub files: Vec<String>,
    /// Most bytes taken from all of them together.
    pub max_bytes: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BudgetSection {
    /// LLM tokens (prompt and completion) one job may spend.
    pub max_tokens: u64,
    /// Wall-clock seconds one job may take, commands included.
    pub max_wall_secs: u64,
    /// US dollars one job may spend on the model; none: only the service's caps. Lowered to
    /// the service's `budget.max_usd_per_job` when above it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_usd: Option<f64>,
}

/// A test that shows the problem, written and run on the base commit before the fix is asked
/// for (issues classified `fix` or `feat` only).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReproduceSection {
    pub mode: ReproduceMode,
}

/// Whether a job must, may or does not try to reproduce its issue with a test first.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReproduceMode {
    /// No reproduction, no pull request: the job ends with `REPRODUCTION_FAILED`.
    Required,
    /// Without a reproduction the job goes on, and its pull request is a draft saying so.
    #[default]
    Preferred,
    /// No reproduction is asked for.
    Off,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CommandsSection {
    /// When not empty, the only programs (or `program args…` prefixes) validation may run.
    pub allow: Vec<String>,
    /// Programs (or `program args…` prefixes) refused on top of [`BUILTIN_DENIED_COMMANDS`].
    pub deny: Vec<String>,
    /// Whether, without `[[validate]]`, the checks found in the repository (its CI
    /// definitions and manifests) are used.
    pub detect: bool,
}

impl Default for CommandsSection {
    fn default() -> Self {
        CommandsSection {
            allow: Vec::new(),
            deny: Vec::new(),
            detect: true,
        }
    }
}

impl Default for RepairSection {
    fn default() -> Self {
        RepairSection { max_attempts: 3 }
    }
}

impl Default for AuditSection {
    fn default() -> Self {
        AuditSection {
            enabled: true,
            max_rounds: 1,
        }
    }
}

impl Default for BranchSection {
    fn default() -> Self {
        BranchSection {
            template: "{type}/{number}-{slug}".to_string(),
            keep_on_failure: false,
        }
    }
}

impl Default for CommitSection {
    fn default() -> Self {
        let type_by_label = [
            ("bug", CommitKind::Fix),
            ("enhancement", CommitKind::Feat),
            ("feature", CommitKind::Feat),
            ("documentation", CommitKind::Docs),
            ("refactor", CommitKind::Refactor),
            ("chore", CommitKind::Chore),
        ]
        .into_iter()
        .map(|(label, kind)| (label.to_string(), kind))
        .collect();
        CommitSection {
            default_type: CommitKind::Fix,
            default_scope: "repo".to_string(),
            type_by_label,
        }
    }
}

impl Default for PullRequestSection {
    fn default() -> Self {
        PullRequestSection {
            draft: true,
            reviewers: Vec::new(),
            labels: Vec::new(),
        }
    }
}

impl Default for InstructionsSection {
    fn default() -> Self {
        InstructionsSection {
            files: [
                "AGENTS.md",
                "CLAUDE.md",
                ".github/copilot-instructions.md",
                "CONVENTIONS.md",
            ]
            .map(String::from)
            .to_vec(),
            max_bytes: 32 * 1024,
        }
    }
}

impl Default for BudgetSection {
    fn default() -> Self {
        BudgetSection {
            max_tokens: 2_000_000,
            max_wall_secs: 3600,
            max_usd: None,
        }
    }
}

/// The configuration a repository gave, or the defaults when it gave none.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedRepoConfig {
    pub config: RepoConfig,
    /// The file read, relative to the repository root (`.github/autofix.toml`); `None` when
    /// the repository has no configuration and the defaults apply.
    pub source: Option<PathBuf>,
}

impl LoadedRepoConfig {
    pub fn used_defaults(&self) -> bool {
        self.source.is_none()
    }

    /// A sentence for the status comment when the defaults were used.
    pub fn defaults_note(&self) -> Option<String> {
        self.used_defaults().then(|| {
            let looked_in = CANDIDATE_PATHS
                .iter()
                .map(|path| format!("`{path}`"))
                .collect::<Vec<_>>()
                .join(", ");
            format!(
                "This repository has no autofix configuration (looked for {looked_in}), \
                 so the defaults apply."
            )
        })
    }
}

/// A configuration that cannot be used: one problem per line, each naming the file, where in
/// it (line and column when known) and the key at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct RepoConfigError {
    problems: Vec<Problem>,
}

/// One thing wrong with a configuration file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The file as the user knows it, e.g. `.autofix.toml`.
    pub file: String,
    /// 1-based line and column, when the problem has a place in the file.
    pub location: Option<(usize, usize)>,
    /// What is wrong, starting with the key path (`validate[2].run must not be empty`).
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.location {
            Some((line, column)) => write!(f, "{}:{line}:{column}: {}", self.file, self.message),
            None => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

impl fmt::Display for RepoConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, problem) in self.problems.iter().enumerate() {
            if index > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{problem}")?;
        }
        Ok(())
    }
}

impl RepoConfigError {
    fn single(file: &str, location: Option<(usize, usize)>, message: impl Into<String>) -> Self {
        RepoConfigError {
            problems: vec![Problem {
                file: file.to_string(),
                location,
                message: message.into(),
            }],
        }
    }

    pub fn problems(&self) -> &[Problem] {
        &self.problems
    }

    /// A job stopped by its repository's configuration fails with `INVALID_INPUT`.
    pub fn failure_code(&self) -> FailureCode {
        FailureCode::InvalidInput
    }
}

impl RepoConfig {
    /// Finds and reads the configuration of the repository checked out at `repo_root` (see
    /// [`CANDIDATE_PATHS`]). No file: the defaults, with `source` `None`.
    pub fn load(repo_root: &Path) -> Result<LoadedRepoConfig, RepoConfigError> {
        let Some(found) = locate::find(repo_root)? else {
            return Ok(LoadedRepoConfig {
                config: RepoConfig::default(),
                source: None,
            });
        };
        let name = found.display().to_string();
        let bytes = locate::read(repo_root, &found, &name)?;
        let config = RepoConfig::parse_bytes(&bytes, &name)?;
        Ok(LoadedRepoConfig {
            config,
            source: Some(found),
        })
    }

    /// Parses raw file content (as read from a git tree), refusing anything not UTF-8.
    pub fn parse_bytes(bytes: &[u8], source_name: &str) -> Result<RepoConfig, RepoConfigError> {
        let text = locate::decode(bytes, source_name)?;
        RepoConfig::parse(text, source_name)
    }

    /// Parses and checks the text of a configuration file; `source_name` names it in errors.
    pub fn parse(text: &str, source_name: &str) -> Result<RepoConfig, RepoConfigError> {
        let problem = |error: toml::de::Error, prefix: &str| {
            let location = error
                .span()
                .map(|span| locate::line_and_column(text, span.start));
            let message = format!("{prefix}{}", error.message().trim_end());
            RepoConfigError::single(source_name, location, message)
        };
        toml::de::DeTable::parse(text).map_err(|error| problem(error, "not valid TOML: "))?;
        let mut config: RepoConfig = toml::from_str(text).map_err(|error| problem(error, ""))?;
        let problems = check::check(&mut config);
        if problems.is_empty() {
            return Ok(config);
        }
        let spans = locate::Spans::new(text);
        Err(RepoConfigError {
            problems: problems
                .into_iter()
                .map(|problem| Problem {
                    file: source_name.to_string(),
                    location: spans.find(&problem.key),
                    message: problem.message(),
                })
                .collect(),
        })
    }

    /// The paths no edit may touch in this repository: [`BUILTIN_DENIED_PATHS`] and then
    /// `[paths] deny`. (The project's own ignore rules are the caller's choice to add.)
    pub fn protected_paths(&self, root: &ProjectRoot) -> Result<ProtectedPaths, PatternError> {
        let patterns: Vec<&str> = BUILTIN_DENIED_PATHS
            .iter()
            .copied()
            .chain(self.paths.deny.iter().map(String::as_str))
            .collect();
        ProtectedPaths::from_patterns(root, &patterns)
    }

    /// The instruction files that exist in `root`, in the configured order, within
    /// `instructions.max_bytes` together; denied paths are never read.
    pub fn read_instructions(&self, root: &ProjectRoot) -> Instructions {
        self.read_instruction_files(root, &self.instructions.files)
    }

    /// [`read_instructions`](Self::read_instructions), then the same files nearest each of
    /// `planned` (`web/AGENTS.md` for `web/src/app.ts`), root to leaf, within the same cap.
    pub fn read_instructions_near(&self, root: &ProjectRoot, planned: &[String]) -> Instructions {
        let files = instructions::nearest(&self.instructions.files, planned);
        self.read_instruction_files(root, &files)
    }

    fn read_instruction_files(&self, root: &ProjectRoot, files: &[String]) -> Instructions {
        let protected = match self.protected_paths(root) {
            Ok(protected) => protected,
            // Only a pattern changed after loading can fail here; then nothing is read.
            Err(error) => {
                return Instructions {
                    files: Vec::new(),
                    skipped: files
                        .iter()
                        .map(|path| SkippedInstruction {
                            path: path.clone(),
                            reason: error.to_string(),
                        })
                        .collect(),
                };
            }
        };
        instructions::read(root, &protected, files, self.instructions.max_bytes)
    }

    /// Every problem [`RepoConfig::parse`] would find in this configuration, were it written
    /// in a file: one message each, starting with its key (`validate[0].run is refused: …`).
    pub fn problems(&self) -> Vec<String> {
        let mut config = self.clone();
        check::check(&mut config)
            .iter()
            .map(check::Found::message)
            .collect()
    }

    /// Whether validation may run `argv`: not denied (built-in or `[commands] deny`, looking
    /// through wrappers such as `env` and `timeout`) and, when `[commands] allow` lists
    /// anything, allowed there.
    pub fn check_command<S: AsRef<str>>(&self, argv: &[S]) -> Result<(), CommandRefusal> {
        commands::check(&self.commands, argv)
    }

    /// The commit type for an issue with these labels: the highest-precedence type any label
    /// maps to, else `commit.default_type`.
    pub fn commit_type_for<S: AsRef<str>>(&self, labels: &[S]) -> CommitKind {
        labels
            .iter()
            .filter_map(|label| {
                let label = label.as_ref();
                self.commit
                    .type_by_label
                    .iter()
                    .find(|(known, _)| known.eq_ignore_ascii_case(label))
                    .map(|(_, kind)| *kind)
            })
            .min()
            .unwrap_or(self.commit.default_type)
    }

    /// The branch name from `branch.template`. `slug` must already be sanitised.
    pub fn branch_name(&self, kind: CommitKind, number: u64, slug: &str) -> String {
        render_branch(&self.branch.template, kind, number, slug)
    }

    /// Every validation step as a command ready to run in `root`, each checked against the
    /// command rules again (the configuration's fields are public, so it may have changed).
    pub fn validation_specs(
        &self,
        root: &ProjectRoot,
        default_timeout: Duration,
    ) -> Result<Vec<ValidationCommand>, StepRefusal> {
        self.step_specs(&self.validate, root, default_timeout)
    }

    /// Every `[[setup]]` step as a command ready to run in `root` (with network).
    pub fn setup_specs(
        &self,
        root: &ProjectRoot,
        default_timeout: Duration,
    ) -> Result<Vec<ValidationCommand>, StepRefusal> {
        let steps: Vec<ValidateStep> = self.setup.iter().map(SetupStep::as_step).collect();
        self.step_specs(&steps, root, default_timeout)
    }

    fn step_specs(
        &self,
        steps: &[ValidateStep],
        root: &ProjectRoot,
        default_timeout: Duration,
    ) -> Result<Vec<ValidationCommand>, StepRefusal> {
        steps
            .iter()
            .enumerate()
            .map(|(index, step)| {
                let refusal = |reason: String| StepRefusal {
                    index,
                    name: step.name.clone(),
                    reason,
                };
                self.check_command(&step.run)
                    .map_err(|refused| refusal(format!("run: {refused}")))?;
                let spec = step
                    .command_spec(root, default_timeout)
                    .map_err(|refused| refusal(format!("cwd `{}`: {refused}", step.cwd)))?;
                Ok(ValidationCommand {
                    name: step.name.clone(),
                    spec,
                    fail_on_warnings: step.fail_on_warnings,
                    network: step.network,
                })
            })
            .collect()
    }
}

/// A `[[validate]]` step ready to run: its name, its command, and whether warning lines fail it.
#[derive(Debug, Clone)]
pub struct ValidationCommand {
    pub name: String,
    pub spec: CommandSpec,
    pub fail_on_warnings: bool,
    /// Whether the sandbox lets it reach the network.
    pub network: bool,
}

impl ValidationCommand {
    /// Whether a finished run of this command passes (see [`crate::exec::CommandOutcome::passes`]).
    pub fn passed(&self, outcome: &crate::exec::CommandOutcome) -> bool {
        outcome.passes(self.fail_on_warnings)
    }
}

/// A validation step that cannot be run as configured in this checkout.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("validate[{index}] (`{name}`) {reason}")]
pub struct StepRefusal {
    pub index: usize,
    pub name: String,
    pub reason: String,
}

impl ValidateStep {
    fn root_cwd() -> String {
        ".".to_string()
    }

    /// The explicit timeout, if this step sets one.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout_secs.map(Duration::from_secs)
    }

    /// The command to run this step in `root`: its directory confined to the root (a
    /// symlinked directory leading outside is refused), its own timeout or `default_timeout`,
    /// and its variables set.
    pub fn command_spec(
        &self,
        root: &ProjectRoot,
        default_timeout: Duration,
    ) -> Result<CommandSpec, PathRefusal> {
        let cwd = match root.confine(&self.cwd) {
            Ok(confined) => confined.absolute,
            Err(PathRefusal::RootItself | PathRefusal::Empty) => root.path().to_path_buf(),
            Err(refusal) => return Err(refusal),
        };
        let (program, args) = self
            .run
            .split_first()
            .map(|(program, args)| (program.clone(), args.to_vec()))
            .unwrap_or_default();
        let spec = CommandSpec::new(program, args, cwd)
            .with_timeout(self.timeout().unwrap_or(default_timeout));
        Ok(self
            .env
            .iter()
            .fold(spec, |spec, (name, value)| spec.with_env(name, value)))
    }
}

fn render_branch(template: &str, kind: CommitKind, number: u64, slug: &str) -> String {
    template
        .replace("{type}", kind.as_str())
        .replace("{number}", &number.to_string())
        .replace("{slug}", slug)
}
