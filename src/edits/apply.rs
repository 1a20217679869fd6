//! Safe application of an [`EditSet`]: every path confined and checked, every file's new
//! content computed in memory first, then all written atomically (temp, fsync, rename) or none,
//! through the work tree's anchored handle, never through a link.

use std::collections::BTreeMap;
use std::path::PathBuf;

use sha2::{Digest, Sha256};

use super::paths::{ConfinedPath, PathRefusal, ProjectRoot, ProtectedPaths};
use super::{Change, EditSet, Mismatch, search_replace, udiff};
use crate::anchored::{Permissions, Tree, TreeError, Way};

/// What an application may touch and how much it may write.
#[derive(Debug, Clone)]
pub struct ApplyPolicy {
    pub protected: ProtectedPaths,
    /// Largest new content for one file, in bytes.
    pub max_file_bytes: usize,
    /// Largest sum of new contents in one response, in bytes.
    pub max_total_bytes: usize,
}

/// Largest existing file an edit may start from: far beyond any source file a model edits.
const MAX_EXISTING_BYTES: u64 = 64 * 1024 * 1024;

impl ApplyPolicy {
    pub const DEFAULT_MAX_FILE_BYTES: usize = 512 * 1024;
    pub const DEFAULT_MAX_TOTAL_BYTES: usize = 2 * 1024 * 1024;

    pub fn new(protected: ProtectedPaths) -> Self {
        ApplyPolicy {
            protected,
            max_file_bytes: Self::DEFAULT_MAX_FILE_BYTES,
            max_total_bytes: Self::DEFAULT_MAX_TOTAL_BYTES,
        }
    }
}

/// Why a response was not applied. Nothing was written when this is returned.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error("refused `{path}`: {reason}")]
    PathRefused { path: String, reason: PathRefusal },
    #[error("refused `{path}`: {reason}")]
    Protected { path: String, reason: PathRefusal },
    #[error("cannot apply the edit to `{path}`: {mismatch}")]
    Mismatch { path: String, mismatch: Mismatch },
    #[error(
        "stale context for `{path}`: the edit was made against sha256 {expected}, but the file now has {actual}"
    )]
    StaleContext {
        path: String,
        expected: String,
        actual: String,
    },
    #[error("cannot edit `{path}`: the file does not exist")]
    Missing { path: String },
    #[error("cannot write `{path}`: it is a directory")]
    IsDirectory { path: String },
    #[error("refused `{path}`: {what} is binary, not text")]
    Binary { path: String, what: &'static str },
    #[error(
        "refused `{path}`: new content of {bytes} bytes is over the limit of {limit} bytes per file"
    )]
    FileTooLarge {
        path: String,
        bytes: usize,
        limit: usize,
    },
    #[error("refused the whole response: it writes {bytes} bytes, over the limit of {limit} bytes")]
    ResponseTooLarge { bytes: usize, limit: usize },
    #[error("cannot write `{path}`: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// What happened to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileAction {
    Created,
    Modified,
    Deleted,
    /// A deletion of a file that was already absent: nothing to do.
    AlreadyAbsent,
    /// New content equal to the old: nothing written.
    Unchanged,
}

impl FileAction {
    pub fn verb(self) -> &'static str {
        match self {
            FileAction::Created => "created",
            FileAction::Modified => "modified",
            FileAction::Deleted => "deleted",
            FileAction::AlreadyAbsent => "already absent",
            FileAction::Unchanged => "unchanged",
        }
    }
}

/// One file's planned change, computed before anything is written.
#[derive(Debug, Clone)]
pub struct PlannedFile {
    /// Normalised path relative to the project root.
    pub path: String,
    /// Content before the response, `None` when the file did not exist.
    pub before: Option<Vec<u8>>,
    /// Content after the response, `None` when the file is to be removed.
    pub after: Option<String>,
}

impl PlannedFile {
    pub fn action(&self) -> FileAction {
        match (&self.before, &self.after) {
            (None, Some(_)) => FileAction::Created,
            (Some(old), Some(new)) if old.as_slice() == new.as_bytes() => FileAction::Unchanged,
            (Some(_), Some(_)) => FileAction::Modified,
            (Some(_), None) => FileAction::Deleted,
            (None, None) => FileAction::AlreadyAbsent,
        }
    }

    /// One line for people: `modified src/lib.rs (12 → 14 lines)`.
    pub fn summary(&self) -> String {
        let lines = |bytes: &[u8]| bytes.iter().filter(|b| **b == b'\n').count();
        match (&self.before, &self.after) {
            (Some(old), Some(new)) if old.as_slice() != new.as_bytes() => format!(
                "modified {} ({} → {})",
                self.path,
                lines(old),
                count_of_lines(lines(new.as_bytes()))
            ),
            (None, Some(new)) => format!(
                "created {} ({})",
                self.path,
                count_of_lines(lines(new.as_bytes()))
            ),
            _ => format!("{} {}", self.action().verb(), self.path),
        }
    }
}

fn count_of_lines(count: usize) -> String {
    if count == 1 {
        "1 line".to_string()
    } else {
        format!("{count} lines")
    }
}

/// A response checked and computed in memory, ready to be written all at once.
#[derive(Debug)]
pub struct PreparedEdits {
    root: PathBuf,
    files: Vec<PlannedFile>,
}

impl PreparedEdits {
    pub fn files(&self) -> &[PlannedFile] {
        &self.files
    }

    /// Writes every planned file. If any write fails, the files already written are restored
    /// to their previous content, so the project is left as it was.
    pub fn commit(self) -> Result<Vec<PlannedFile>, ApplyError> {
        let tree = Tree::open(&self.root).map_err(|source| ApplyError::Io {
            path: ".".into(),
            source,
        })?;
        let mut done: Vec<&PlannedFile> = Vec::new();
        for file in &self.files {
            let result = match (&file.after, file.action()) {
                (_, FileAction::Unchanged | FileAction::AlreadyAbsent) => Ok(()),
                (Some(content), _) => tree.write(
                    &file.path,
                    content.as_bytes(),
                    Permissions::KeepExisting,
                    Way::Refuse,
                ),
                (None, _) => tree.remove(&file.path, Way::Refuse),
            };
            if let Err(error) = result {
                restore(&tree, &done);
                return Err(refused(&file.path, error));
            }
            done.push(file);
        }
        Ok(self.files)
    }
}

/// Checks every edit of `edits` against `root` and `policy` and computes the new contents.
/// Nothing is written; any refusal refuses the whole response.
pub fn prepare(
    root: &ProjectRoot,
    edits: &EditSet,
    policy: &ApplyPolicy,
) -> Result<PreparedEdits, ApplyError> {
    let tree = Tree::open(root.path()).map_err(|source| ApplyError::Io {
        path: ".".into(),
        source,
    })?;
    // Keyed by normalised path so several edits of one file apply in order to one state.
    let mut planned: BTreeMap<String, PlannedFile> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    for edit in &edits.edits {
        let confined = confine(root, &edit.path, policy)?;
        if !planned.contains_key(&confined.relative) {
            let before = tree
                .read(&confined.relative, MAX_EXISTING_BYTES)
                .map_err(|error| refused(&confined.relative, error))?;
            let after = before
                .as_ref()
                .map(|bytes| String::from_utf8_lossy(bytes).into_owned());
            order.push(confined.relative.clone());
            planned.insert(
                confined.relative.clone(),
                PlannedFile {
                    path: confined.relative.clone(),
                    before,
                    after,
                },
            );
        }
        let file = planned.get_mut(&confined.relative).expect("inserted above");
        file.after = apply_change(file, &edit.change)?;
    }
    let files: Vec<PlannedFile> = order
        .into_iter()
        .filter_map(|path| planned.remove(&path))
        .collect();
    check_sizes(&files, policy)?;
    Ok(PreparedEdits {
        root: root.path().to_path_buf(),
        files,
    })
}

/// `prepare` then `commit`: the whole response or nothing.
pub fn apply(
    root: &ProjectRoot,
    edits: &EditSet,
    policy: &ApplyPolicy,
) -> Result<Vec<PlannedFile>, ApplyError> {
    prepare(root, edits, policy)?.commit()
}

fn confine(
    root: &ProjectRoot,
    path: &str,
    policy: &ApplyPolicy,
) -> Result<ConfinedPath, ApplyError> {
    let confined = root
        .confine(path)
        .map_err(|reason| ApplyError::PathRefused {
            path: path.to_string(),
            reason,
        })?;
    if let Some(rule) = policy.protected.rule_for(&confined.relative, false) {
        return Err(ApplyError::Protected {
            path: path.to_string(),
            reason: PathRefusal::Protected { rule },
        });
    }
    Ok(confined)
}

/// A work-tree refusal in the words of an application error: a link met on the way is a
/// refused path, whatever a command or the repository put there since the path was checked.
fn refused(path: &str, error: TreeError) -> ApplyError {
    match error {
        TreeError::Link { at } if at == path => ApplyError::PathRefused {
            path: path.to_string(),
            reason: PathRefusal::IsSymlink { link: at },
        },
        TreeError::Link { at } => ApplyError::PathRefused {
            path: path.to_string(),
            reason: PathRefusal::ThroughSymlink { link: at },
        },
        TreeError::IsAFolder { .. } => ApplyError::IsDirectory {
            path: path.to_string(),
        },
        other => ApplyError::Io {
            path: path.to_string(),
            source: other.into(),
        },
    }
}

/// The file's content after `change`, or why the change does not fit. Pure: `file` holds the
/// content before the response and after the edits applied so far; nothing is read or written.
pub fn apply_change(file: &PlannedFile, change: &Change) -> Result<Option<String>, ApplyError> {
    let path = &file.path;
    let current_text = || -> Result<&str, ApplyError> {
        let Some(text) = file.after.as_deref() else {
            return Err(ApplyError::Missing { path: path.clone() });
        };
        if is_binary(text.as_bytes())
            || file
                .before
                .as_ref()
                .is_some_and(|b| std::str::from_utf8(b).is_err())
        {
            return Err(ApplyError::Binary {
                path: path.clone(),
                what: "the existing file",
            });
        }
        Ok(text)
    };
    match change {
        Change::Write {
            content,
            base_sha256,
        } => {
            if let Some(expected) = base_sha256 {
                check_base(file, expected)?;
            }
            if is_binary(content.as_bytes()) {
                return Err(ApplyError::Binary {
                    path: path.clone(),
                    what: "the new content",
                });
            }
            if let Some(old) = &file.before
                && file.after.is_some()
                && is_binary(old)
            {
                return Err(ApplyError::Binary {
                    path: path.clone(),
                    what: "the existing file",
                });
            }
            Ok(Some(content.clone()))
        }
        Change::Delete => Ok(None),
        Change::Patch { hunks } => {
            udiff::apply(current_text()?, hunks)
                .map(Some)
                .map_err(|mismatch| ApplyError::Mismatch {
                    path: path.clone(),
                    mismatch,
                })
        }
        Change::Replace { blocks } => {
            let current = match file.after.as_deref() {
                // An empty SEARCH on a missing file creates it.
                None => "",
                Some(_) => current_text()?,
            };
            search_replace::apply(current, blocks)
                .map(Some)
                .map_err(|mismatch| ApplyError::Mismatch {
                    path: path.clone(),
                    mismatch,
                })
        }
    }
}

fn check_base(file: &PlannedFile, expected: &str) -> Result<(), ApplyError> {
    let current = match (&file.after, &file.before) {
        // Untouched so far in this response: hash the bytes on disk exactly.
        (Some(text), Some(old)) if String::from_utf8_lossy(old) == text.as_str() => old.as_slice(),
        (Some(text), _) => text.as_bytes(),
        (None, _) => b"",
    };
    let actual = sha256_hex(current);
    if actual.eq_ignore_ascii_case(expected.trim()) {
        Ok(())
    } else {
        Err(ApplyError::StaleContext {
            path: file.path.clone(),
            expected: expected.trim().to_string(),
            actual,
        })
    }
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Text never holds NUL bytes; binary formats almost always do near the start.
fn is_binary(bytes: &[u8]) -> bool {
    bytes.contains(&0)
}

fn check_sizes(files: &[PlannedFile], policy: &ApplyPolicy) -> Result<(), ApplyError> {
    let mut total = 0usize;
    for file in files {
        let bytes = file.after.as_ref().map_or(0, String::len);
        if bytes > policy.max_file_bytes {
            return Err(ApplyError::FileTooLarge {
                path: file.path.clone(),
                bytes,
                limit: policy.max_file_bytes,
            });
        }
        total += bytes;
    }
    if total > policy.max_total_bytes {
        return Err(ApplyError::ResponseTooLarge {
            bytes: total,
            limit: policy.max_total_bytes,
        });
    }
    Ok(())
}

/// Puts back the files of a partly written response (best effort: we are already failing).
fn restore(tree: &Tree, done: &[&PlannedFile]) {
    for file in done.iter().rev() {
        let _ = match &file.before {
            Some(old) => tree.write(&file.path, old, Permissions::KeepExisting, Way::Refuse),
            None => tree.remove(&file.path, Way::Refuse),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    use crate::edits::{EditFormat, FileEdit};

    fn project(files: &[(&str, &str)]) -> (tempfile::TempDir, ProjectRoot) {
        let dir = tempfile::tempdir().unwrap();
        for (path, content) in files {
            let full = dir.path().join(path);
            fs::create_dir_all(full.parent().unwrap()).unwrap();
            fs::write(full, content).unwrap();
        }
        let root = ProjectRoot::new(dir.path()).unwrap();
        (dir, root)
    }

    fn writes(edits: &[(&str, Change)]) -> EditSet {
        EditSet {
            format: EditFormat::Fenced,
            summary: None,
            edits: edits
                .iter()
                .map(|(path, change)| FileEdit {
                    path: path.to_string(),
                    change: change.clone(),
                })
                .collect(),
        }
    }

    fn write(content: &str) -> Change {
        Change::Write {
            content: content.into(),
            base_sha256: None,
        }
    }

    fn open_policy() -> ApplyPolicy {
        ApplyPolicy::new(ProtectedPaths::none())
    }

    #[test]
    fn a_response_creates_modifies_and_deletes_files_together() {
        let (dir, root) = project(&[("src/lib.rs", "old\n"), ("src/gone.rs", "x\n")]);
        let set = writes(&[
            ("src/lib.rs", write("new\n")),
            ("src/cli/mod.rs", write("pub fn run() {}\n")),
            ("src/gone.rs", Change::Delete),
        ]);
        let applied = apply(&root, &set, &open_policy()).unwrap();
        let actions: Vec<_> = applied
            .iter()
            .map(|f| (f.path.as_str(), f.action()))
            .collect();
        assert_eq!(
            actions,
            [
                ("src/lib.rs", FileAction::Modified),
                ("src/cli/mod.rs", FileAction::Created),
                ("src/gone.rs", FileAction::Deleted)
            ]
        );
        assert_eq!(
            fs::read_to_string(dir.path().join("src/lib.rs")).unwrap(),
            "new\n"
        );
        assert!(dir.path().join("src/cli/mod.rs").is_file());
        assert!(!dir.path().join("src/gone.rs").exists());
    }

    #[test]
    fn one_refused_edit_leaves_every_file_untouched() {
        let (dir, root) = project(&[("src/lib.rs", "old\n")]);
        let set = writes(&[
            ("src/lib.rs", write("new\n")),
            ("../escape.rs", write("x\n")),
        ]);
        let err = apply(&root, &set, &open_policy()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "refused `../escape.rs`: the path climbs out with `..`"
        );
        assert_eq!(
            fs::read_to_string(dir.path().join("src/lib.rs")).unwrap(),
            "old\n"
        );
    }

    #[test]
    fn protected_paths_are_refused_by_rule() {
        let (_dir, root) = project(&[("Cargo.lock", "# lock\n")]);
        let policy =
            ApplyPolicy::new(ProtectedPaths::from_patterns(&root, &["/Cargo.lock"]).unwrap());
        let err = apply(&root, &writes(&[("./Cargo.lock", write("x\n"))]), &policy).unwrap_err();
        assert_eq!(
            err.to_string(),
            "refused `./Cargo.lock`: the path is protected (rule `/Cargo.lock`)"
        );
    }

    #[test]
    fn a_symlink_cannot_smuggle_a_write_into_a_protected_folder() {
        let (_dir, root) = project(&[("logs/run.txt", "log\n")]);
        std::os::unix::fs::symlink(root.path().join("logs"), root.path().join("notes")).unwrap();
        let policy = ApplyPolicy::new(ProtectedPaths::from_patterns(&root, &["/logs/"]).unwrap());
        let err = apply(&root, &writes(&[("notes/run.txt", write("x\n"))]), &policy).unwrap_err();
        assert_eq!(
            err.to_string(),
            "refused `notes/run.txt`: the path goes through a symbolic link (`notes`); autofix \
             writes only through real folders"
        );
        assert_eq!(
            fs::read_to_string(root.path().join("logs/run.txt")).unwrap(),
            "log\n"
        );
    }

    #[test]
    fn binary_content_is_refused() {
        let (_dir, root) = project(&[]);
        let err = apply(&root, &writes(&[("a.bin", write("a\0b"))]), &open_policy()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "refused `a.bin`: the new content is binary, not text"
        );
    }

    #[test]
    fn an_existing_binary_file_is_not_overwritten() {
        let (dir, root) = project(&[]);
        fs::write(dir.path().join("logo.png"), b"\x89PNG\r\n\x1a\n\0\0").unwrap();
        let err = apply(
            &root,
            &writes(&[("logo.png", write("text\n"))]),
            &open_policy(),
        )
        .unwrap_err();
        assert!(
            matches!(
                err,
                ApplyError::Binary {
                    what: "the existing file",
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn size_limits_apply_per_file_and_per_response() {
        let (_dir, root) = project(&[]);
        let mut policy = open_policy();
        policy.max_file_bytes = 10;
        let err = apply(
            &root,
            &writes(&[("big.txt", write(&"x".repeat(11)))]),
            &policy,
        )
        .unwrap_err();
        assert!(matches!(
            err,
            ApplyError::FileTooLarge {
                bytes: 11,
                limit: 10,
                ..
            }
        ));
        policy.max_file_bytes = 10;
        policy.max_total_bytes = 15;
        let set = writes(&[
            ("a.txt", write(&"x".repeat(8))),
            ("b.txt", write(&"y".repeat(8))),
        ]);
        let err = apply(&root, &set, &policy).unwrap_err();
        assert!(matches!(
            err,
            ApplyError::ResponseTooLarge {
                bytes: 16,
                limit: 15
            }
        ));
    }

    #[test]
    fn a_stale_base_hash_refuses_before_anything_is_written() {
        let (dir, root) = project(&[("a.txt", "current\n")]);
        let set = writes(&[(
            "a.txt",
            Change::Write {
                content: "new\n".into(),
                base_sha256: Some(sha256_hex(b"older\n")),
            },
        )]);
        let err = apply(&root, &set, &open_policy()).unwrap_err();
        assert!(matches!(err, ApplyError::StaleContext { .. }), "{err}");
        assert_eq!(
            fs::read_to_string(dir.path().join("a.txt")).unwrap(),
            "current\n"
        );
    }

    #[test]
    fn a_new_file_is_expected_to_have_the_empty_hash() {
        let (_dir, root) = project(&[]);
        let set = writes(&[(
            "new.txt",
            Change::Write {
                content: "hello\n".into(),
                base_sha256: Some(sha256_hex(b"")),
            },
        )]);
        apply(&root, &set, &open_policy()).unwrap();
    }

    #[test]
    fn deleting_a_missing_file_changes_nothing_and_says_so() {
        let (_dir, root) = project(&[]);
        let applied = apply(
            &root,
            &writes(&[("nope.rs", Change::Delete)]),
            &open_policy(),
        )
        .unwrap();
        assert_eq!(applied[0].action(), FileAction::AlreadyAbsent);
    }

    #[test]
    fn writing_over_a_directory_is_refused() {
        let (_dir, root) = project(&[("src/x.rs", "")]);
        let err = apply(&root, &writes(&[("src", write("x\n"))]), &open_policy()).unwrap_err();
        assert_eq!(err.to_string(), "cannot write `src`: it is a directory");
    }

    #[test]
    fn an_existing_files_permissions_are_kept() {
        use std::os::unix::fs::PermissionsExt;
        let (dir, root) = project(&[("run.sh", "#!/bin/sh\n")]);
        fs::set_permissions(dir.path().join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
        apply(
            &root,
            &writes(&[("run.sh", write("#!/bin/sh\necho hi\n"))]),
            &open_policy(),
        )
        .unwrap();
        let mode = fs::metadata(dir.path().join("run.sh"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755);
    }

    #[test]
    fn a_failed_write_midway_restores_the_files_already_written() {
        let (dir, root) = project(&[("a.txt", "old a\n")]);
        let set = writes(&[("a.txt", write("new a\n")), ("later/x.txt", write("x\n"))]);
        let prepared = prepare(&root, &set, &open_policy()).unwrap();
        // Something else creates a file where the new folder should go: the second write fails.
        fs::write(dir.path().join("later"), "in the way\n").unwrap();
        let err = prepared.commit().unwrap_err();
        assert!(
            matches!(err, ApplyError::Io { ref path, .. } if path == "later/x.txt"),
            "{err}"
        );
        assert_eq!(
            fs::read_to_string(dir.path().join("a.txt")).unwrap(),
            "old a\n"
        );
    }
}
