//! Preflight: the issue read and cleaned, the checkout and its configuration, the work tree
//! the job starts from — or one clear reason it cannot start.

use std::path::PathBuf;

use super::FixOptions;
use crate::config::repo::{RepoConfig, ReproduceMode, ValidationCommand};
use crate::detect::Detection;
use crate::edits::paths::{ProjectRoot, ProtectedPaths};
use crate::failure::{Failure, FailureCode, Stage};
use crate::git::{BranchName, CommitSha, Workspace};
use crate::pipeline::checkout::Checkout;
use crate::pipeline::issue::{Issue, IssueFileError};
use crate::pipeline::run_log::RunLog;
use crate::pipeline::sanitise;
use crate::pipeline::sections::instruction_text;

/// The issue with what a reader does not see taken out of its title and body (HTML comments,
/// invisible and bidi characters, image alt text), each removal listed in the run log.
pub(super) fn sanitised(issue: Issue, log: &RunLog) -> Issue {
    let (title, title_removals) = sanitise::sanitise(&issue.title);
    let (body, body_removals) = sanitise::sanitise(&issue.body);
    for (part, removals) in [("title", title_removals), ("body", body_removals)] {
        for removal in removals {
            log.line(&format!("issue {part}: {removal}"));
        }
    }
    Issue {
        title,
        body,
        ..issue
    }
}

/// What the job starts from once preflight has passed.
pub(super) struct Ready {
    pub(super) workspace: Workspace,
    pub(super) root: ProjectRoot,
    pub(super) issue: Issue,
    pub(super) number: u64,
    pub(super) config: RepoConfig,
    pub(super) protected: ProtectedPaths,
    pub(super) setup: Vec<ValidationCommand>,
    pub(super) validation: Vec<ValidationCommand>,
    /// The checks found in the repository, when it configures none.
    pub(super) detection: Option<Detection>,
    pub(super) cache_dir: PathBuf,
    /// The git folder the dependency caches live under (by default): the job's own
    /// repository's, for a candidate's clone too.
    pub(super) cache_home: PathBuf,
    pub(super) instructions: String,
    pub(super) original_branch: BranchName,
    pub(super) baseline: CommitSha,
}

pub(super) fn preflight(
    options: &FixOptions,
    issue: Result<Issue, IssueFileError>,
    workspace: Result<Workspace, crate::git::GitError>,
    log: &RunLog,
) -> Result<Ready, Failure> {
    let invalid =
        |reason: String| Failure::new(FailureCode::InvalidInput, Stage::Preflight, reason);
    let git = |err: crate::git::GitError| {
        Failure::new(err.failure_code(), Stage::Preflight, err.to_string())
    };
    let issue = sanitised(issue.map_err(|error| invalid(error.to_string()))?, log);
    let number = options.issue_number.or(issue.number).ok_or_else(|| {
        invalid("the issue has no number: give one in the file or with --issue-number".into())
    })?;
    let preflight_failure =
        |(code, reason): (FailureCode, String)| Failure::new(code, Stage::Preflight, reason);
    let Checkout {
        workspace,
        root,
        baseline,
        config,
        config_source,
        protected,
        setup,
        validation,
        detection,
    } = Checkout::prepare(
        workspace.map_err(git)?,
        options.settings.default_validate_timeout,
        options.settings.output_limit,
        options.repo_config.clone(),
    )
    .map_err(preflight_failure)?;
    let original_branch = workspace.current_branch().map_err(git)?;
    match &config_source {
        Some(path) => log.line(&format!("configuration: {}", path.display())),
        None => log.line("configuration: none found, defaults apply"),
    }
    if let Some(detection) = &detection {
        say_what_was_found(detection, options, log);
    }
    if validation.is_empty() {
        log.line("validation: the repository configures no [[validate]] commands and none were found in it; the change is unvalidated");
        if config.reproduce.mode == ReproduceMode::Required
            && options.earlier_reproduction.is_none()
        {
            return Err(Failure::new(
                FailureCode::ReproductionFailed,
                Stage::Preflight,
                "[reproduce] mode = \"required\" needs tests to run, but the repository \
                 configures no [[validate]] commands and none were found in it",
            ));
        }
    }
    let instructions = instruction_text(&config.read_instructions(&root));
    log.line(&format!("baseline: {baseline} on {original_branch}"));
    let sandbox = &options.settings.sandbox;
    log.line(&format!(
        "sandbox: {}{}",
        sandbox.mode().as_str(),
        if sandbox.is_confined() {
            ""
        } else {
            " (commands run unconfined: exec.sandbox = \"none\")"
        }
    ));
    let cache_dir = options
        .cache_dir
        .clone()
        .unwrap_or_else(|| log.dir().join("cache"));
    let cache_home = workspace.common_dir().to_path_buf();
    Ok(Ready {
        workspace,
        root,
        issue,
        number,
        config,
        protected,
        setup,
        validation,
        cache_home,
        detection,
        cache_dir,
        instructions,
        original_branch,
        baseline,
    })
}

/// The checks found in the repository, a line each in the run log and before the setup stage
/// on the terminal, and what was seen but left out.
fn say_what_was_found(detection: &Detection, options: &FixOptions, log: &RunLog) {
    let heading = "checks: the repository configures no [[validate]]; using the checks found in it";
    log.line(heading);
    options.stages.note(Stage::Preflight, heading);
    for command in detection.commands() {
        let line = format!("detected {}", command.line());
        log.line(&line);
        options.stages.note(Stage::Preflight, &line);
    }
    for left_out in &detection.left_out {
        log.line(&format!("left out: {} — {}", left_out.what, left_out.why));
    }
}
