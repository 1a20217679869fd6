//! What `autofix config check --repo DIR` says about one checkout: the CI jobs that get secrets,
//! whether its configuration is valid, the proposal when it has no checks, and its toolchains.

use std::path::Path;

use crate::config::repo::{RepoConfig, RepoConfigError};
use crate::detect::{Detected, Detection, FolderTree};
use crate::exec::Sandbox;
use crate::forge::PushTo;

use super::{ci_secrets, toolchains};

/// The lines to print, and the configuration's problems when it cannot be used.
#[derive(Debug)]
pub struct RepoReport {
    pub lines: Vec<String>,
    pub invalid: Option<RepoConfigError>,
}

/// Reads the checkout at `repo`: its CI secrets (for `push_to`), its configuration, what
/// detection proposes when the configuration has no `[[validate]]`, the toolchains `sandbox`
/// shows and the steps whose programs it would not find.
pub fn report(repo: &Path, push_to: PushTo, sandbox: &Sandbox) -> RepoReport {
    let mut lines = Vec::new();
    match ci_secrets::scan(repo) {
        Ok(scan) => lines.extend(ci_secrets::warnings(&scan, push_to)),
        Err(err) => lines.push(format!("note: the CI definitions were not read: {err}")),
    }
    let loaded = match RepoConfig::load(repo) {
        Ok(loaded) => loaded,
        Err(err) => {
            return RepoReport {
                lines,
                invalid: Some(err),
            };
        }
    };
    match (&loaded.source, loaded.defaults_note()) {
        (Some(source), _) => lines.push(format!("{}: valid", source.display())),
        (None, note) => lines.push(note.unwrap_or_default()),
    }
    let (setup, validate) = if loaded.config.validate.is_empty() {
        match FolderTree::open(repo) {
            Ok(tree) => {
                let detection = Detection::detect(&tree);
                lines.extend(proposal_lines(&detection, repo));
                (detection.setup, detection.validate)
            }
            Err(err) => {
                lines.push(format!(
                    "note: the repository could not be read to find its checks: {err}"
                ));
                (Vec::new(), Vec::new())
            }
        }
    } else {
        let source = loaded
            .source
            .as_ref()
            .map(|source| source.display().to_string())
            .unwrap_or_default();
        lines.push(format!(
            "{source} has [[validate]] steps: autofix runs those, and finding checks without \
             configuration is not used"
        ));
        configured_steps(&loaded.config)
    };
    lines.extend(toolchains::lines(&toolchains::survey(sandbox)));
    lines.extend(toolchains::missing_programs(
        repo, &setup, &validate, sandbox,
    ));
    RepoReport {
        lines,
        invalid: None,
    }
}

/// The proposal: each setup and validation step with its folder and why, what was left out
/// and why, and how to keep it.
pub fn proposal_lines(detection: &Detection, repo: &Path) -> Vec<String> {
    let mut lines = Vec::new();
    if detection.validate.is_empty() {
        lines.push(
            "no [[validate]] steps, and none found in the repository's CI definitions or \
             manifests: write them in `.autofix.toml` (every key: examples/autofix.toml)"
                .to_string(),
        );
    } else {
        lines.push(
            "no [[validate]] steps: autofix proposes these from the repository's CI definitions \
             and manifests"
                .to_string(),
        );
    }
    for (stage, steps) in [
        ("setup", &detection.setup),
        ("validate", &detection.validate),
    ] {
        for step in steps {
            lines.push(format!("  {stage}: {}", described(step)));
            lines.push(format!("    why: {}", step.why));
        }
    }
    for left in &detection.left_out {
        lines.push(format!("  left out: {}", left.what));
        lines.push(format!("    why: {}", left.why));
    }
    if !detection.validate.is_empty() {
        lines.push(format!(
            "to pin this proposal: `autofix config init --repo {}` writes it as a commented \
             `.autofix.toml` to adjust and commit",
            repo.display()
        ));
    }
    lines
}

/// `` `cargo test` (in `web`) ``, with the step's name when it is not the command.
fn described(step: &Detected) -> String {
    let shown = step.shown();
    let named = if step.name == shown {
        String::new()
    } else {
        format!(" named \"{}\"", step.name)
    };
    format!("`{shown}`{}{named}", toolchains::folder_note(&step.cwd))
}

/// The configured steps, in the form detection gives them, for the program check.
fn configured_steps(config: &RepoConfig) -> (Vec<Detected>, Vec<Detected>) {
    let step = |name: &str, run: &[String], cwd: &str| Detected {
        name: name.to_string(),
        run: run.to_vec(),
        cwd: cwd.to_string(),
        why: String::new(),
    };
    (
        config
            .setup
            .iter()
            .map(|setup| step(&setup.name, &setup.run, &setup.cwd))
            .collect(),
        config
            .validate
            .iter()
            .map(|validate| step(&validate.name, &validate.run, &validate.cwd))
            .collect(),
    )
}
