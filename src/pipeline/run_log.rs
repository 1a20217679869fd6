//! The artifact folder of an `autofix fix` run, claimed by that run alone: `run.log` (one line
//! per event, with the time since the start, control characters escaped), the stage JSON
//! files, every prompt and answer, every command's output.

use anyhow::Context;
use std::fs;
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use serde::Serialize;

use crate::quote::one_line;
use crate::redact::Redactor;

/// Most folders tried beside the one asked for (`<folder>-2` … `<folder>-1000`).
const MAX_SIBLINGS: u32 = 1000;

pub struct RunLog {
    dir: PathBuf,
    /// Every secret the process knows is hidden from everything written here.
    redactor: Redactor,
    started: Instant,
    /// How many command logs were written, so reruns of a command never overwrite.
    commands: Mutex<u32>,
}

impl RunLog {
    /// Opens the log of a run in a folder no other run holds: `wanted` when it is new or
    /// empty, else the first of `wanted-2`, `wanted-3`, … that is. [`RunLog::dir`] says which.
    pub fn create(wanted: &Path, redactor: Redactor) -> anyhow::Result<RunLog> {
        let dir = claim(wanted)?;
        for sub in ["rounds", "logs"] {
            fs::create_dir_all(dir.join(sub))
                .with_context(|| format!("cannot create the artifact folder {}", dir.display()))?;
        }
        Ok(RunLog {
            dir,
            redactor,
            started: Instant::now(),
            commands: Mutex::new(0),
        })
    }

    /// The artifact folder: the one asked for, or the sibling taken because another run held it.
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

    pub fn write_text(&self, name: &str, text: &str) -> anyhow::Result<()> {
        let path = self.dir.join(name);
        fs::write(&path, self.redactor.redact(text))
            .with_context(|| format!("cannot write {}", path.display()))
    }

    pub fn write_json<T: Serialize>(&self, name: &str, value: &T) -> anyhow::Result<()> {
        let mut text = serde_json::to_string_pretty(value)
            .with_context(|| format!("cannot serialise {name}"))?;
        text.push('\n');
        self.write_text(name, &text)
    }

    /// `logs/NN-<name>.log`, numbered in the order commands ran.
    pub fn write_command_log(&self, name: &str, output: &str) -> anyhow::Result<()> {
        let mut count = self.commands.lock().unwrap_or_else(|p| p.into_inner());
        *count += 1;
        self.write_text(
            &format!("logs/{:02}-{}.log", *count, file_stem(name)),
            output,
        )
    }
}

/// A command's name as part of a file name: letters, digits, spaces, `.`, `-` and `_` kept,
/// anything else (a `/` of `go test ./...`, a control character) written as `_`, at most 80
/// characters. Names come from the repository (its configuration, its CI definitions).
fn file_stem(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_alphanumeric() || " .-_".contains(c) {
                c
            } else {
                '_'
            }
        })
        .take(80)
        .collect()
}

/// The first of `wanted`, `wanted-2`, `wanted-3`, … that this run could make its own. A folder
/// is taken by creating it (or finding it empty) and then creating its `run.log`, which only
/// one process can do: two runs started in the same second never share a folder, and a folder
/// holding an earlier run (or anything else) is left as it is.
fn claim(wanted: &Path) -> anyhow::Result<PathBuf> {
    let cannot = |path: &Path, err: std::io::Error| {
        anyhow::Error::new(err).context(format!(
            "cannot create the artifact folder {}",
            path.display()
        ))
    };
    if let Some(parent) = wanted
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
    {
        fs::create_dir_all(parent).map_err(|err| cannot(wanted, err))?;
    }
    for number in 1..=MAX_SIBLINGS {
        let candidate = if number == 1 {
            wanted.to_path_buf()
        } else {
            sibling(wanted, number)?
        };
        match fs::create_dir(&candidate) {
            Ok(()) => {}
            Err(err) if err.kind() == ErrorKind::AlreadyExists => {
                if !is_empty_folder(&candidate) {
                    continue;
                }
            }
            Err(err) => return Err(cannot(&candidate, err)),
        }
        let run_log = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(candidate.join("run.log"));
        match run_log {
            Ok(_) => return Ok(candidate),
            // Another run found the folder empty too and took it first.
            Err(err) if err.kind() == ErrorKind::AlreadyExists => continue,
            Err(err) => return Err(cannot(&candidate, err)),
        }
    }
    anyhow::bail!(
        "cannot create the artifact folder {}: it and the {} numbered beside it are all taken",
        wanted.display(),
        MAX_SIBLINGS - 1
    )
}

/// `<folder>-<number>` beside `wanted`.
fn sibling(wanted: &Path, number: u32) -> anyhow::Result<PathBuf> {
    let name = wanted.file_name().ok_or_else(|| {
        anyhow::anyhow!(
            "the artifact folder {} already holds files, and has no name to number a new one \
             beside it; give a new or empty folder",
            wanted.display()
        )
    })?;
    let mut name = name.to_os_string();
    name.push(format!("-{number}"));
    Ok(wanted.with_file_name(name))
}

fn is_empty_folder(path: &Path) -> bool {
    fs::read_dir(path).is_ok_and(|mut entries| entries.next().is_none())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder_names(parent: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(parent)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_command_named_like_a_path_writes_its_log_inside_the_logs_folder() {
        let runs = tempfile::tempdir().unwrap();
        let log = RunLog::create(&runs.path().join("run"), Redactor::new()).unwrap();

        log.write_command_log("base-go test ./...", "ok").unwrap();
        log.write_command_log("../../escape\nline", "no").unwrap();

        assert_eq!(
            folder_names(&log.dir().join("logs")),
            ["01-base-go test ._....log", "02-.._.._escape_line.log"]
        );
        assert_eq!(folder_names(runs.path()), ["run"]);
    }

    #[test]
    fn three_runs_asking_for_the_same_folder_get_three_folders_each_with_its_own_log() {
        let runs = tempfile::tempdir().unwrap();
        let wanted = runs.path().join("issue-7-20261126-101500");
        let logs: Vec<RunLog> = (0..3)
            .map(|_| RunLog::create(&wanted, Redactor::new()).unwrap())
            .collect();
        for (index, log) in logs.iter().enumerate() {
            log.line(&format!("run {index}"));
            log.write_json("RESULT.json", &index).unwrap();
        }

        assert_eq!(
            folder_names(runs.path()),
            [
                "issue-7-20261126-101500",
                "issue-7-20261126-101500-2",
                "issue-7-20261126-101500-3"
            ]
        );
        for (index, log) in logs.iter().enumerate() {
            let run_log = fs::read_to_string(log.dir().join("run.log")).unwrap();
            assert_eq!(run_log.lines().count(), 1, "{run_log}");
            assert!(run_log.ends_with(&format!("] run {index}\n")), "{run_log}");
            let result = fs::read_to_string(log.dir().join("RESULT.json")).unwrap();
            assert_eq!(result, format!("{index}\n"));
        }
    }

    #[test]
    fn a_given_folder_is_used_when_empty_and_passed_over_when_it_holds_anything() {
        let parent = tempfile::tempdir().unwrap();
        let empty = parent.path().join("made-by-mktemp");
        fs::create_dir(&empty).unwrap();
        assert_eq!(
            RunLog::create(&empty, Redactor::new()).unwrap().dir(),
            empty
        );

        let notes = parent.path().join("notes");
        fs::create_dir(&notes).unwrap();
        fs::write(notes.join("todo.txt"), "mine\n").unwrap();
        let log = RunLog::create(&notes, Redactor::new()).unwrap();
        assert_eq!(log.dir(), parent.path().join("notes-2"));
        assert_eq!(
            folder_names(&notes),
            ["todo.txt"],
            "nothing added beside it"
        );

        let file = parent.path().join("a-file");
        fs::write(&file, "").unwrap();
        let log = RunLog::create(&file, Redactor::new()).unwrap();
        assert_eq!(log.dir(), parent.path().join("a-file-2"));
    }

    #[test]
    fn a_folder_whose_parents_are_missing_is_made_with_them() {
        let root = tempfile::tempdir().unwrap();
        let wanted = root
            .path()
            .join(".git/autofix/runs/issue-3-20260101-000000");
        let log = RunLog::create(&wanted, Redactor::new()).unwrap();
        assert_eq!(log.dir(), wanted);
        assert!(wanted.join("rounds").is_dir() && wanted.join("logs").is_dir());
    }
}
