//! The run's log folder, `logs/yyyy-mm-dd-hh-mm-ss` (then `-2`, `-3`… when taken), and the
//! files docs/code-commit.md names inside it, including the `ERROR` form of a failed response.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Local};

use crate::llm::{LlmError, LlmResponse};
use crate::redact::Redactor;

pub struct LogDir {
    path: PathBuf,
    /// The API key never reaches a log file, even if a response echoes it.
    redactor: Redactor,
}

impl LogDir {
    /// Creates `project/logs/` if needed and a new folder in it named after `now`.
    pub fn create(project: &Path, now: DateTime<Local>, redactor: Redactor) -> io::Result<LogDir> {
        let logs = project.join("logs");
        fs::create_dir_all(&logs)?;
        let stamp = now.format("%Y-%m-%d-%H-%M-%S").to_string();
        for attempt in 1.. {
            let name = if attempt == 1 {
                stamp.clone()
            } else {
                format!("{stamp}-{attempt}")
            };
            let path = logs.join(name);
            match fs::create_dir(&path) {
                Ok(()) => return Ok(LogDir { path, redactor }),
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(err) => return Err(err),
            }
        }
        unreachable!("the suffix loop only ends by returning")
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn write(&self, name: &str, content: &str) -> io::Result<()> {
        fs::write(self.path.join(name), self.redactor.redact(content))
    }

    /// `<stem>-response.txt` (the text, or `ERROR` and the error) and `<stem>-response.json`
    /// (the body as received; for a failure without a body, a small JSON object saying why).
    pub fn write_response(
        &self,
        stem: &str,
        result: &Result<LlmResponse, LlmError>,
    ) -> io::Result<()> {
        let (text, json) = match result {
            Ok(response) => (response.text.clone(), response.raw_json.clone()),
            Err(error) => (
                format!("ERROR\n{error}\n"),
                error.raw_body().map(str::to_string).unwrap_or_else(|| {
                    serde_json::json!({ "error": { "message": error.to_string() } }).to_string()
                }),
            ),
        };
        self.write(&format!("{stem}-response.txt"), &text)?;
        self.write(&format!("{stem}-response.json"), &json)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn folders_are_named_to_the_second_and_never_reused() {
        let project = tempfile::tempdir().unwrap();
        let now = Local.with_ymd_and_hms(2026, 11, 22, 9, 5, 7).unwrap();
        let first = LogDir::create(project.path(), now, Redactor::new()).unwrap();
        let second = LogDir::create(project.path(), now, Redactor::new()).unwrap();
        let third = LogDir::create(project.path(), now, Redactor::new()).unwrap();
        let name = |dir: &LogDir| {
            dir.path()
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        };
        assert_eq!(name(&first), "2026-11-22-09-05-07");
        assert_eq!(name(&second), "2026-11-22-09-05-07-2");
        assert_eq!(name(&third), "2026-11-22-09-05-07-3");
    }

    #[test]
    fn a_failed_response_is_logged_with_error_first() {
        let project = tempfile::tempdir().unwrap();
        let dir = LogDir::create(project.path(), Local::now(), Redactor::new()).unwrap();
        let failure = Err(LlmError::Server {
            status: 500,
            message: "internal".into(),
            raw_body: "{\"error\":{\"code\":500}}".into(),
        });
        dir.write_response("initial-query", &failure).unwrap();
        let text = fs::read_to_string(dir.path().join("initial-query-response.txt")).unwrap();
        assert!(
            text.starts_with("ERROR\nthe LLM provider failed (HTTP 500)"),
            "{text}"
        );
        let json = fs::read_to_string(dir.path().join("initial-query-response.json")).unwrap();
        assert_eq!(json, "{\"error\":{\"code\":500}}");
    }
}
