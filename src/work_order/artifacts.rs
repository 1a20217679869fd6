//! The artifact tree of a run: `<out>/<run_id>/run_summary.json` and `attempt_<N>/` folders with
//! the prompt, the response, the proposal, write/verify/acceptance results and full command logs.

use std::fs;
use std::path::{Path, PathBuf};

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
    pub fn create(out: &Path, run_id: &str, redactor: Redactor) -> Result<RunDir, String> {
        let path = out.join(run_id);
        if path.exists() {
            fs::remove_dir_all(&path)
                .map_err(|err| format!("cannot clear the earlier run {}: {err}", path.display()))?;
        }
        fs::create_dir_all(&path).map_err(|err| {
            format!(
                "cannot create the artifact folder {}: {err}",
                path.display()
            )
        })?;
        Ok(RunDir { path, redactor })
    }

    pub fn attempt(&self, index: usize) -> Result<AttemptDir, String> {
        let name = format!("attempt_{index}");
        let path = self.path.join(&name);
        fs::create_dir_all(path.join("logs"))
            .map_err(|err| format!("cannot create {}: {err}", path.display()))?;
        Ok(AttemptDir {
            path,
            name,
            redactor: self.redactor.clone(),
        })
    }

    pub fn write_text(&self, name: &str, content: &str) -> Result<PathBuf, String> {
        write(
            &self.path.join(name),
            self.redactor.redact(content).as_bytes(),
        )
    }

    pub fn write_json<T: Serialize>(&self, name: &str, value: &T) -> Result<PathBuf, String> {
        self.write_text(name, &to_json(value)?)
    }
}

impl AttemptDir {
    pub fn write_text(&self, name: &str, content: &str) -> Result<String, String> {
        write(
            &self.path.join(name),
            self.redactor.redact(content).as_bytes(),
        )?;
        Ok(format!("{}/{name}", self.name))
    }

    pub fn write_json<T: Serialize>(&self, name: &str, value: &T) -> Result<String, String> {
        self.write_text(name, &to_json(value)?)
    }

    /// The full output of one command, `logs/<name>.log`.
    pub fn write_log(&self, command_name: &str, output: &str) -> Result<String, String> {
        self.write_text(&format!("logs/{command_name}.log"), output)
    }
}

fn to_json<T: Serialize>(value: &T) -> Result<String, String> {
    serde_json::to_string_pretty(value)
        .map(|mut text| {
            text.push('\n');
            text
        })
        .map_err(|err| format!("cannot serialise an artifact: {err}"))
}

fn write(path: &Path, bytes: &[u8]) -> Result<PathBuf, String> {
    fs::write(path, bytes).map_err(|err| format!("cannot write {}: {err}", path.display()))?;
    Ok(path.to_path_buf())
}
