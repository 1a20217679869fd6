//! The repository's own ignore list (`info/exclude` in the common git folder): what autofix
//! adds there so that what tools insist on keeping in the work tree never shows as a change.

use std::io::Write;

use super::{GitError, Workspace};

/// The line that heads autofix's patterns in `info/exclude`.
const HEADER: &str = "# added by autofix: what the repository's setup creates in the work tree";

impl Workspace {
    /// Adds each of `patterns` that `info/exclude` does not hold yet (gitignore syntax),
    /// under one comment line. The file is shared by every work tree of the repository and
    /// never committed.
    pub fn exclude_locally(&self, patterns: &[&str]) -> Result<(), GitError> {
        let info = self.repo.commondir().join("info");
        let file = info.join("exclude");
        let io = |action: &'static str| {
            let path = file.clone();
            move |source: std::io::Error| GitError::Io {
                action,
                path,
                source,
            }
        };
        let existing = match std::fs::read_to_string(&file) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(err) => return Err(io("read the local ignore list")(err)),
        };
        let held: Vec<&str> = existing.lines().map(str::trim).collect();
        let missing: Vec<&&str> = patterns
            .iter()
            .filter(|pattern| !held.contains(pattern))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        std::fs::create_dir_all(&info).map_err(io("create the local ignore list's folder"))?;
        let mut text = String::new();
        if !existing.is_empty() && !existing.ends_with('\n') {
            text.push('\n');
        }
        if !held.contains(&HEADER) {
            text.push_str(HEADER);
            text.push('\n');
        }
        for pattern in missing {
            text.push_str(pattern);
            text.push('\n');
        }
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&file)
            .and_then(|mut out| out.write_all(text.as_bytes()))
            .map_err(io("add to the local ignore list"))
    }
}
