//! The repository as detection sees it: its files' relative paths and their text, from a real
//! folder (read without following links) or from a list given in memory.

use std::collections::BTreeMap;
use std::path::Path;

use crate::anchored::{Entry, Tree};

/// The most bytes read from one file; a bigger file is taken as unreadable.
pub const MAX_READ_BYTES: u64 = 256 * 1024;
/// The most paths listed from a folder; detection only needs the files near the root.
const MAX_PATHS: usize = 20_000;
/// Folders never listed: dependencies and build output, not the project's own definitions.
const SKIPPED_FOLDERS: &[&str] = &[".git", "node_modules", "target", ".venv", "venv", ".tox"];
/// How deep a folder walk goes below the root.
const MAX_DEPTH: usize = 4;

/// A repository's files: their paths relative to the root (`/`-separated) and their text.
pub trait RepoTree {
    /// Every file path, sorted.
    fn paths(&self) -> &[String];
    /// The file's text, `None` when it is missing, not UTF-8 or over [`MAX_READ_BYTES`].
    fn read(&self, path: &str) -> Option<String>;

    fn has(&self, path: &str) -> bool {
        self.paths()
            .binary_search_by(|p| p.as_str().cmp(path))
            .is_ok()
    }
}

/// A checked-out repository on disk.
pub struct FolderTree {
    tree: Tree,
    paths: Vec<String>,
}

impl FolderTree {
    /// Lists `root` (a few levels deep, dependency and build folders skipped).
    pub fn open(root: &Path) -> std::io::Result<FolderTree> {
        let tree = Tree::open(root)?;
        let mut paths = Vec::new();
        walk(&tree, "", 0, &mut paths);
        paths.sort();
        Ok(FolderTree { tree, paths })
    }
}

fn walk(tree: &Tree, folder: &str, depth: usize, paths: &mut Vec<String>) {
    let names = if folder.is_empty() {
        // The root itself is the folder the caller named; below it, nothing is followed.
        let Ok(entries) = std::fs::read_dir(tree.path()) else {
            return;
        };
        let mut names: Vec<String> = entries
            .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
            .collect();
        names.sort();
        names
    } else {
        let Ok(Some(names)) = tree.list(folder) else {
            return;
        };
        names
    };
    for name in names {
        if paths.len() >= MAX_PATHS {
            return;
        }
        let path = if folder.is_empty() {
            name.clone()
        } else {
            format!("{folder}/{name}")
        };
        match tree.entry(&path) {
            Ok(Entry::Folder) if depth < MAX_DEPTH && !SKIPPED_FOLDERS.contains(&name.as_str()) => {
                walk(tree, &path, depth + 1, paths)
            }
            Ok(Entry::File { .. }) => paths.push(path),
            _ => {}
        }
    }
}

impl RepoTree for FolderTree {
    fn paths(&self) -> &[String] {
        &self.paths
    }

    fn read(&self, path: &str) -> Option<String> {
        let bytes = self.tree.read(path, MAX_READ_BYTES).ok()??;
        String::from_utf8(bytes).ok()
    }
}

/// Files given in memory: a path and its text each.
#[derive(Debug, Clone, Default)]
pub struct FileList {
    paths: Vec<String>,
    texts: BTreeMap<String, String>,
}

impl FileList {
    pub fn new<P: Into<String>, T: Into<String>>(files: impl IntoIterator<Item = (P, T)>) -> Self {
        let texts: BTreeMap<String, String> = files
            .into_iter()
            .map(|(path, text)| (path.into(), text.into()))
            .collect();
        FileList {
            paths: texts.keys().cloned().collect(),
            texts,
        }
    }
}

impl RepoTree for FileList {
    fn paths(&self) -> &[String] {
        &self.paths
    }

    fn read(&self, path: &str) -> Option<String> {
        self.texts
            .get(path)
            .filter(|text| text.len() as u64 <= MAX_READ_BYTES)
            .cloned()
    }
}
