//! The artifact folder of an `autofix fix` run: `run.log` (one line per event, with the time
//! since the start, control characters escaped), the stage JSON files, every prompt and
//! answer, every command's output.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use serde::Serialize;

use crate::quote::one_line;
use crate::redact::Redactor;

pub struct RunLog {
    dir: PathBuf,
    /// Every secret the process knows is hidden from everything written here.
    redactor: Redactor,
    started: Instant,
    /// How many command logs were written, so reruns of a command never overwrite.
    commands: Mutex<u32>,
}

impl RunLog {
    pub fn create(dir: &Path, redactor: Redactor) -> Result<RunLog, String> {
        for sub in ["rounds", "logs"] {
            fs::create_dir_all(dir.join(sub)).map_err(|err| {
                format!("cannot create the artifact folder {}: {err}", dir.display())
            })?;
        }
        Ok(RunLog {
            dir: dir.to_path_buf(),
            redactor,
            started: Instant::now(),
            commands: Mutex::new(0),
        })
    }

    /// The artifact folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Appends one line to `run.log`; a log that cannot be written is not worth failing a job.
    /// A line break in `text` (a model's answer, a name it asked for) is escaped, so one event
    /// is one line and no text can pass for an event of its own.
    pub fn line(&self, text: &str) {
        let line = format!(
            "[{:>8.3}s] {}\n",
            self.started.elapsed().as_secs_f64(),
            one_line(&self.redactor.redact(text))
        );
        if let Ok(mut file) = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("run.log"))
        {
            let _ = file.write_all(line.as_bytes());
        }
    }

    pub fn write_text(&self, name: &str, text: &str) -> Result<(), String> {
        let path = self.dir.join(name);
        fs::write(&path, self.redactor.redact(text))
            .map_err(|err| format!("cannot write {}: {err}", path.display()))
    }

    pub fn write_json<T: Serialize>(&self, name: &str, value: &T) -> Result<(), String> {
        let mut text = serde_json::to_string_pretty(value)
            .map_err(|err| format!("cannot serialise {name}: {err}"))?;
        text.push('\n');
        self.write_text(name, &text)
    }

    /// `logs/NN-<name>.log`, numbered in the order commands ran.
    pub fn write_command_log(&self, name: &str, output: &str) -> Result<(), String> {
        let mut count = self.commands.lock().unwrap_or_else(|p| p.into_inner());
        *count += 1;
        self.write_text(&format!("logs/{:02}-{name}.log", *count), output)
    }
}
