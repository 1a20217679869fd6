//! The artifact tree of a run: `<out>/<run_id>/run_summary.json` and `attempt_<N>/` folders with
//! the prompt, the response, the proposal, write/verify/acceptance results and full command logs.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Serialize;

use crate::redact::Redactor;

/// `<out>/<run_id>/`, made afresh: a rerun with the same inputs replaces the earlier tree.
pub struct RunDir {
    path: PathBuf,
    redactor: Redactor,
}

/// `<out>/<run_id>/attempt_<N>/`. Paths it returns are relative to the run folder.
pub struct AttemptDir {
    path: PathBuf,
    name: String,
    redactor: Redactor,
}

impl RunDir {
    pub fn create(out: &Path, run_id: &str, redactor: Redactor) -> anyhow::Result<RunDir> {
        let path = out.join(run_id);
        if path.exists() {
            fs::remove_dir_all(&path)
                .with_context(|| format!("cannot clear the earlier run {}", path.display()))?;
        }
        fs::create_dir_all(&path)
            .with_context(|| format!("cannot create the artifact folder {}", path.display()))?;
        Ok(RunDir { path, redactor })
    }

    pub fn attempt(&self, index: usize) -> anyhow::Result<AttemptDir> {
        let name = format!("attempt_{index}");
        let path = self.path.join(&name);
        fs::create_dir_all(path.join("logs"))
            .with_context(|| format!("cannot create {}", path.display()))?;
        Ok(AttemptDir {
            path,
            name,
            redactor: self.redactor.clone(),
        })
    }

    pub fn write_text(&self, name: &str, content: &str) -> anyhow::Result<PathBuf> {
        write(
            &self.path.join(name),
            self.redactor.redact(content).as_bytes(),
        )
    }

    pub fn write_json<T: Serialize>(&self, name: &str, value: &T) -> anyhow::Result<PathBuf> {
        self.write_text(name, &to_json(value)?)
    }
}

impl AttemptDir {
    pub fn write_text(&self, name: &str, content: &str) -> anyhow::Result<String> {
        write(
            &self.path.join(name),
            self.redactor.redact(content).as_bytes(),
        )?;
        Ok(format!("{}/{name}", self.name))
    }

    pub fn write_json<T: Serialize>(&self, name: &str, value: &T) -> anyhow::Result<String> {
        self.write_text(name, &to_json(value)?)
    }

    /// The full output of one command, `logs/<name>.log`.
    pub fn write_log(&self, command_name: &str, output: &str) -> anyhow::Result<String> {
        self.write_text(&format!("logs/{command_name}.log"), output)
    }
}

fn to_json<T: Serialize>(value: &T) -> anyhow::Result<String> {
    let mut text = serde_json::to_string_pretty(value).context("cannot serialise an artifact")?;
    text.push('\n');
    Ok(text)
}

fn write(path: &Path, bytes: &[u8]) -> anyhow::Result<PathBuf> {
    fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path.to_path_buf())
}
