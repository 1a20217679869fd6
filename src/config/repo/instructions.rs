//! Reading the instruction files a repository gives the model (AGENTS.md and the like), at
//! its root and nearest the files a plan changes: confined to the checkout, never a denied
//! path, and cut to one shared size cap.

use std::io::Read;

use crate::anchored::{Tree, TreeError};
use crate::edits::paths::{PathRefusal, ProjectRoot, ProtectedPaths};

/// The instruction files found, in the configured order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Instructions {
    pub files: Vec<InstructionFile>,
    /// Files that exist but were not given to the model, and why (for the job's log).
    pub skipped: Vec<SkippedInstruction>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstructionFile {
    /// Relative to the repository root, as configured.
    pub path: String,
    pub text: String,
    /// Whether the size cap cut the file short.
    pub truncated: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedInstruction {
    pub path: String,
    pub reason: String,
}

/// The configured files, then each one named without a folder (`AGENTS.md`) in every folder
/// between the root and a file of `planned`: root to leaf, so the nearest comes last.
pub(super) fn nearest(files: &[String], planned: &[String]) -> Vec<String> {
    let mut folders: Vec<&str> = planned
        .iter()
        .flat_map(|path| {
            path.match_indices('/')
                .map(move |(slash, _)| &path[..slash])
        })
        .filter(|folder| !folder.is_empty())
        .collect();
    folders.sort_by_key(|folder| (folder.matches('/').count(), *folder));
    folders.dedup();
    let mut chosen: Vec<String> = files.to_vec();
    for folder in folders {
        for name in files.iter().filter(|name| !name.contains('/')) {
            let nested = format!("{folder}/{name}");
            if !chosen.contains(&nested) {
                chosen.push(nested);
            }
        }
    }
    chosen
}

/// Reads `files` in order, giving each what is left of `max_bytes`. Missing files are simply
/// absent; files that cannot be used are listed in `skipped`.
pub(super) fn read(
    root: &ProjectRoot,
    protected: &ProtectedPaths,
    files: &[String],
    max_bytes: usize,
) -> Instructions {
    let mut found = Instructions::default();
    let mut left = max_bytes;
    for path in files {
        let skip = |reason: Unusable| SkippedInstruction {
            path: path.clone(),
            reason: reason.to_string(),
        };
        match read_one(root, protected, path, left) {
            Ok(None) => {}
            Ok(Some(file)) => {
                left -= file.text.len();
                found.files.push(file);
            }
            Err(reason) => found.skipped.push(skip(reason)),
        }
    }
    found
}

/// Why an instruction file that exists is not given to the model.
#[derive(Debug, thiserror::Error)]
enum Unusable {
    #[error(transparent)]
    Refused(#[from] PathRefusal),
    #[error("cannot be read: {0}")]
    Unreadable(std::io::Error),
    #[error("is not a regular file")]
    NotAFile,
    #[error(transparent)]
    Tree(TreeError),
    #[error("is a denied path (rule `{0}`)")]
    Denied(String),
    #[error("is not UTF-8")]
    NotUtf8,
    #[error("not even its first line fits in what is left of instructions.max_bytes ({0} bytes)")]
    TooLong(usize),
}

fn read_one(
    root: &ProjectRoot,
    protected: &ProtectedPaths,
    path: &str,
    left: usize,
) -> Result<Option<InstructionFile>, Unusable> {
    let confined = root.confine(path)?;
    let tree = Tree::open(root.path()).map_err(Unusable::Unreadable)?;
    let file = match tree.open_file(&confined.relative) {
        Ok(Some((file, _))) => file,
        Ok(None) => return Ok(None),
        Err(TreeError::NotAFile { .. } | TreeError::IsAFolder { .. }) => {
            return Err(Unusable::NotAFile);
        }
        Err(error) => return Err(Unusable::Tree(error)),
    };
    if let Some(rule) = protected.rule_for(&confined.relative, false) {
        return Err(Unusable::Denied(rule));
    }
    let mut bytes = Vec::new();
    file.take(left as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(Unusable::Unreadable)?;
    let truncated = bytes.len() > left;
    bytes.truncate(left);
    let mut text = decode_prefix(bytes, truncated)?;
    if truncated {
        text = whole_lines(text);
    }
    if text.is_empty() && truncated {
        return Err(Unusable::TooLong(left));
    }
    Ok(Some(InstructionFile {
        path: path.to_string(),
        text,
        truncated,
    }))
}

/// The text, allowing a character cut in two at the end when the file was cut short.
fn decode_prefix(mut bytes: Vec<u8>, truncated: bool) -> Result<String, Unusable> {
    match std::str::from_utf8(&bytes) {
        Ok(_) => {}
        Err(error) if truncated && error.error_len().is_none() => {
            bytes.truncate(error.valid_up_to());
        }
        Err(_) => return Err(Unusable::NotUtf8),
    }
    Ok(String::from_utf8(bytes).expect("checked above"))
}

/// A cut file ends at its last complete line; with none, nothing is left.
fn whole_lines(mut text: String) -> String {
    let end = text.rfind('\n').map_or(0, |newline| newline + 1);
    text.truncate(end);
    text
}

#[cfg(test)]
mod tests {
    use super::nearest;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|item| item.to_string()).collect()
    }

    #[test]
    fn the_files_nearest_each_planned_file_follow_the_root_ones_root_to_leaf() {
        let files = strings(&["AGENTS.md", ".github/copilot-instructions.md"]);
        let planned = strings(&["web/src/app.ts", "README.md", "web/api/routes.ts"]);

        assert_eq!(
            nearest(&files, &planned),
            [
                "AGENTS.md",
                ".github/copilot-instructions.md",
                "web/AGENTS.md",
                "web/api/AGENTS.md",
                "web/src/AGENTS.md",
            ]
        );
    }

    #[test]
    fn a_plan_at_the_root_reads_only_the_configured_files() {
        let files = strings(&["AGENTS.md", "CLAUDE.md"]);
        assert_eq!(
            nearest(&files, &strings(&["main.rs"])),
            ["AGENTS.md", "CLAUDE.md"]
        );
    }
}
