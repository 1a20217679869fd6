//! The repository a job starts from, checked the same way by every front door: a clean git
//! work tree at its root with a commit, and its `.autofix.toml` — or, without `[[validate]]`,
//! the checks found in it — turned into rules and commands.

use std::path::PathBuf;
use std::time::Duration;

use crate::config::repo::{LoadedRepoConfig, RepoConfig, ValidationCommand};
use crate::detect::{Detection, FolderTree, PythonVersion, choose_python};
use crate::edits::paths::{ProjectRoot, ProtectedPaths};
use crate::failure::FailureCode;
use crate::git::{CommitSha, Workspace};

pub struct Checkout {
    pub workspace: Workspace,
    pub root: ProjectRoot,
    /// HEAD when the job started: what a failure rolls back to.
    pub baseline: CommitSha,
    pub config: RepoConfig,
    /// The configuration file read, `None` when the defaults apply.
    pub config_source: Option<PathBuf>,
    /// Built-in denied paths plus the repository's `[paths] deny`.
    pub protected: ProtectedPaths,
    /// The repository's `[[setup]]` steps, ready to run (with network).
    pub setup: Vec<ValidationCommand>,
    /// The repository's `[[validate]]` steps, ready to run.
    pub validation: Vec<ValidationCommand>,
    /// The checks found in the repository, when it configures none and some were found:
    /// `setup` and `validation` are theirs (a configured `[[setup]]` is kept).
    pub detection: Option<Detection>,
}

impl Checkout {
    /// Refuses a dirty tree, a missing commit or an invalid `.autofix.toml` before anything is
    /// touched; the error carries the failure code and one line of reason. `given` is the
    /// configuration the caller already read from this work tree (read here when `None`).
    pub fn prepare(
        workspace: Workspace,
        default_timeout: Duration,
        output_limit: usize,
        given: Option<LoadedRepoConfig>,
    ) -> Result<Checkout, (FailureCode, String)> {
        let git = |err: crate::git::GitError| (err.failure_code(), err.to_string());
        let invalid = |reason: String| (FailureCode::InvalidInput, reason);
        workspace.ensure_clean().map_err(git)?;
        let baseline = workspace.head_commit().map_err(git)?;
        let LoadedRepoConfig { config, source } = match given {
            Some(given) => given,
            None => RepoConfig::load(workspace.root())
                .map_err(|err| (err.failure_code(), err.to_string()))?,
        };
        let mut detection = detected_checks(&config, &workspace).map_err(|err| {
            (
                FailureCode::Preflight,
                format!("cannot look for the repository's checks: {err}"),
            )
        })?;
        if let Some(detection) = &mut detection
            && !config.setup.is_empty()
        {
            detection.keep_configured_setup();
        }
        let config = match &detection {
            Some(detection) => with_detected(config, detection),
            None => config,
        };
        if let Some(detection) = &detection {
            workspace
                .exclude_locally(&detection.creates())
                .map_err(git)?;
        }
        let root = ProjectRoot::new(workspace.root()).map_err(|err| invalid(err.to_string()))?;
        let protected = config
            .protected_paths(&root)
            .map_err(|err| invalid(err.to_string()))?;
        let with_limit = |commands: Vec<ValidationCommand>| -> Vec<ValidationCommand> {
            commands
                .into_iter()
                .map(|mut command| {
                    command.spec = command.spec.with_output_limit(output_limit);
                    command
                })
                .collect()
        };
        let setup = with_limit(
            config
                .setup_specs(&root, default_timeout)
                .map_err(|err| invalid(err.to_string()))?,
        );
        let validation = with_limit(
            config
                .validation_specs(&root, default_timeout)
                .map_err(|err| invalid(err.to_string()))?,
        );
        Ok(Checkout {
            workspace,
            root,
            baseline,
            config,
            config_source: source,
            protected,
            setup,
            validation,
            detection,
        })
    }
}

/// What detection finds in the work tree, when the configuration has no `[[validate]]`, lets
/// detection run (`[commands] detect`), and something to check was found.
fn detected_checks(
    config: &RepoConfig,
    workspace: &Workspace,
) -> std::io::Result<Option<Detection>> {
    if !config.validate.is_empty() || !config.commands.detect {
        return Ok(None);
    }
    let tree = FolderTree::open(workspace.root())?;
    let mut detection = Detection::detect_under(&tree, &config.commands);
    with_the_python_asked_for(&mut detection);
    Ok(detection.found_checks().then_some(detection))
}

/// The found Python setup makes its virtual environment with the Python the project asks for:
/// `python3` when it satisfies the request, else the newest installed `python3.N` that does.
fn with_the_python_asked_for(detection: &mut Detection) {
    let Some(requirement) = detection.python_requirement.clone() else {
        return;
    };
    let installed: Vec<PythonVersion> = (6..=20)
        .filter(|minor| crate::exec::find_program(&format!("python3.{minor}")).is_some())
        .map(|minor| (3, minor))
        .collect();
    let chosen = choose_python(&requirement, python3_version(), &installed);
    let makes_the_venv = |run: &[String]| run == ["python3", "-m", "venv", ".venv"];
    for step in detection
        .setup
        .iter_mut()
        .filter(|step| makes_the_venv(&step.run))
    {
        match &chosen {
            Some(name) if name != "python3" => {
                step.run[0] = name.clone();
                step.name = step.run.join(" ");
                step.why
                    .push_str(&format!("; `{name}` is installed and satisfies it"));
            }
            Some(_) => {}
            None => step
                .why
                .push_str("; no installed Python satisfies it, so `python3` is used"),
        }
    }
}

/// The version of the `python3` commands find, when it answers.
fn python3_version() -> Option<PythonVersion> {
    let program = crate::exec::find_program("python3")?;
    let output = std::process::Command::new(program)
        .args(["-c", "import sys; print('%d %d' % sys.version_info[:2])"])
        .stdin(std::process::Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    let (major, minor) = text.trim().split_once(' ')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// `config` with the detected checks as its `[[validate]]`, and the detected setup as its
/// `[[setup]]` unless it configures its own.
fn with_detected(mut config: RepoConfig, detection: &Detection) -> RepoConfig {
    let (setup, validate) = detection.to_config();
    if config.setup.is_empty() {
        config.setup = setup;
    }
    config.validate = validate;
    config
}
