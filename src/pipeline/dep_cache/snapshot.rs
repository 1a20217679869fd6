//! Setup snapshots: what `[[setup]]` left in the work tree (`.venv`, `node_modules`, a changed
//! lockfile…) kept whole, and put back by copy, moved to another work tree's path if need be.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::copy;

/// Bumped when the stored shape changes.
const FORMAT: u32 = 1;

/// One entry of the work tree as setup found or left it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    Folder,
    File {
        bytes: u64,
        modified_ns: i128,
        mode: u32,
    },
    Link(PathBuf),
}

/// Every entry of a work tree but `.git`, by path relative to its root (`a/b` form).
#[derive(Debug, Clone, Default)]
pub struct TreeState {
    entries: BTreeMap<String, Entry>,
}

impl TreeState {
    /// Reads the tree under `root`, links not followed.
    pub fn read(root: &Path) -> io::Result<TreeState> {
        let mut state = TreeState::default();
        state.walk(root, "")?;
        Ok(state)
    }

    fn walk(&mut self, folder: &Path, prefix: &str) -> io::Result<()> {
        for item in fs::read_dir(folder)? {
            let item = item?;
            let name = item.file_name().to_string_lossy().into_owned();
            if prefix.is_empty() && name == ".git" {
                continue;
            }
            let path = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            };
            let metadata = fs::symlink_metadata(item.path())?;
            let entry = if metadata.file_type().is_symlink() {
                Entry::Link(fs::read_link(item.path())?)
            } else if metadata.is_dir() {
                self.walk(&item.path(), &path)?;
                Entry::Folder
            } else {
                Entry::File {
                    bytes: metadata.len(),
                    modified_ns: i128::from(metadata.mtime()) * 1_000_000_000
                        + i128::from(metadata.mtime_nsec()),
                    mode: metadata.mode(),
                }
            };
            self.entries.insert(path, entry);
        }
        Ok(())
    }

    /// The paths that are neither folders nor in `tracked`: what an earlier run, a build or
    /// a person left (ignored files included).
    pub fn untracked_files<'a>(&'a self, tracked: &[String]) -> Vec<&'a str> {
        let tracked: std::collections::BTreeSet<&str> =
            tracked.iter().map(String::as_str).collect();
        self.entries
            .iter()
            .filter(|(path, entry)| **entry != Entry::Folder && !tracked.contains(path.as_str()))
            .map(|(path, _)| path.as_str())
            .collect()
    }

    /// What changed from `self` to `after`: the top-most new paths, the files and links that
    /// differ, and the top-most paths that went away.
    fn changes(&self, after: &TreeState) -> Changes {
        let parent_in = |state: &TreeState, path: &str| match path.rsplit_once('/') {
            None => true,
            Some((parent, _)) => state.entries.get(parent) == Some(&Entry::Folder),
        };
        let mut changes = Changes::default();
        for (path, entry) in &after.entries {
            match self.entries.get(path) {
                None if parent_in(self, path) => changes.added.push(path.clone()),
                Some(before) if before != entry => changes.changed.push(path.clone()),
                _ => {}
            }
        }
        for path in self.entries.keys() {
            if !after.entries.contains_key(path) && parent_in(after, path) {
                changes.removed.push(path.clone());
            }
        }
        changes
    }
}

#[derive(Debug, Default)]
struct Changes {
    /// New paths, copied whole into the snapshot and back.
    added: Vec<String>,
    /// Files and links that were there and changed (a rewritten lockfile), copied likewise.
    changed: Vec<String>,
    /// Paths that went away.
    removed: Vec<String>,
}

/// What a snapshot holds besides its files (`tree/`).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Manifest {
    format: u32,
    /// The work tree the snapshot was taken in.
    root: PathBuf,
    /// Whether it can be put back in a work tree at another path.
    relocatable: bool,
    added: Vec<String>,
    changed: Vec<String>,
    removed: Vec<String>,
    /// Text files naming `root`: the name is replaced when restored elsewhere.
    rewritten: Vec<String>,
    /// Links pointing into `root`: pointed into the new tree when restored elsewhere.
    relinked: Vec<String>,
    /// Compiled Python files naming `root`: dropped when restored elsewhere (Python compiles
    /// them again).
    dropped: Vec<String>,
    /// Whether setup wrote into the job's `$CACHE_DIR`, kept in `cache_dir/`.
    cache_dir: bool,
}

/// A snapshot written: where, its size, and whether another tree's path can use it.
#[derive(Debug)]
pub struct Saved {
    pub dir: PathBuf,
    pub bytes: u64,
    pub relocatable: bool,
    pub entries: usize,
}

/// Keeps what setup changed between `before` and the tree as it is now, and what it wrote
/// into the job's `cache_dir` (`$CACHE_DIR`), in `folder(relocatable)` inside `parent`
/// (written beside and renamed into place; one another job already wrote is kept). A setup
/// that changed nothing in either is kept too: all it did lives in the tool folders.
pub fn save(
    root: &Path,
    before: &TreeState,
    cache_dir: &Path,
    parent: &Path,
    folder: impl Fn(bool) -> String,
) -> io::Result<Saved> {
    let after = TreeState::read(root)?;
    let changes = before.changes(&after);
    fs::create_dir_all(parent)?;
    let building = tempfile::Builder::new()
        .prefix(".building-")
        .tempdir_in(parent)?;
    let tree = building.path().join("tree");
    fs::create_dir(&tree)?;
    for path in changes.added.iter().chain(&changes.changed) {
        let target = tree.join(path);
        if let Some(folder) = target.parent() {
            fs::create_dir_all(folder)?;
        }
        copy::copy_tree(&root.join(path), &target)?;
    }
    let has_cache_dir = fs::read_dir(cache_dir).is_ok_and(|mut entries| entries.next().is_some());
    if has_cache_dir {
        copy::copy_tree(cache_dir, &building.path().join("cache_dir"))?;
    }
    let mut manifest = Manifest {
        format: FORMAT,
        root: root.to_path_buf(),
        relocatable: true,
        added: changes.added,
        changed: changes.changed,
        removed: changes.removed,
        rewritten: Vec::new(),
        relinked: Vec::new(),
        dropped: Vec::new(),
        cache_dir: has_cache_dir,
    };
    let root_name = root.as_os_str().as_encoded_bytes();
    manifest.relocatable = find_root_names(&tree, "", root_name, &mut manifest)?;
    fs::write(
        building.path().join("manifest.json"),
        serde_json::to_vec_pretty(&manifest).map_err(io::Error::other)?,
    )?;
    let bytes = copy::size_of(building.path())?;
    let dir = parent.join(folder(manifest.relocatable));
    let saved = Saved {
        dir: dir.clone(),
        bytes,
        relocatable: manifest.relocatable,
        entries: manifest.added.len() + manifest.changed.len() + manifest.removed.len(),
    };
    match fs::rename(building.path(), &dir) {
        Ok(()) => {
            let _ = building.keep();
        }
        // Another job on the same key finished first: its snapshot is as good.
        Err(_) if dir.join("manifest.json").is_file() => {}
        Err(err) => return Err(err),
    }
    Ok(saved)
}

/// Lists in `manifest` every file and link under `folder` that names `root`; false when a
/// binary file other than compiled Python does (the snapshot then only fits `root` itself).
fn find_root_names(
    folder: &Path,
    prefix: &str,
    root: &[u8],
    manifest: &mut Manifest,
) -> io::Result<bool> {
    let mut relocatable = true;
    for item in fs::read_dir(folder)? {
        let item = item?;
        let name = item.file_name().to_string_lossy().into_owned();
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        let kind = item.file_type()?;
        if kind.is_symlink() {
            if fs::read_link(item.path())?
                .as_os_str()
                .as_encoded_bytes()
                .starts_with(root)
            {
                manifest.relinked.push(path);
            }
        } else if kind.is_dir() {
            relocatable &= find_root_names(&item.path(), &path, root, manifest)?;
        } else if kind.is_file() {
            let bytes = fs::read(item.path())?;
            if memchr::memmem::find(&bytes, root).is_none() {
                continue;
            }
            if name.ends_with(".pyc") {
                manifest.dropped.push(path);
            } else if memchr::memchr(0, &bytes).is_none() {
                manifest.rewritten.push(path);
            } else {
                relocatable = false;
            }
        }
    }
    Ok(relocatable)
}

/// Why a snapshot was not put back; the tree is as it was.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    #[error("the snapshot was taken at {0} and holds binary files naming that path")]
    NotRelocatable(String),
    #[error("`{0}` is in the way and belongs to the repository")]
    InTheWay(String),
    #[error("`{0}` lies behind a link or a file")]
    NotAFolder(String),
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The tree was being written when this happened: what the restore added is gone again,
    /// but files of the repository it replaced or removed must be put back.
    #[error("stopped halfway: {0}")]
    Interrupted(io::Error),
}

impl RestoreError {
    /// Whether the work tree was touched.
    pub fn touched_the_tree(&self) -> bool {
        matches!(self, RestoreError::Interrupted(_))
    }
}

/// Puts back the snapshot in `dir` into the tree at `root` (and what setup wrote into its
/// `$CACHE_DIR` into `cache_dir`). `tracked(path)` says whether the
/// repository holds `path` (a file, or files under a folder); such a path in the way of a
/// new entry stops the restore, while untracked or ignored leftovers are replaced. A snapshot
/// taken at another path is moved to `root` (names rewritten) when it can be. Returns the
/// number of entries put back.
pub fn restore(
    dir: &Path,
    root: &Path,
    cache_dir: &Path,
    tracked: &dyn Fn(&str) -> bool,
) -> Result<usize, RestoreError> {
    let manifest: Manifest =
        serde_json::from_slice(&fs::read(dir.join("manifest.json"))?).map_err(io::Error::other)?;
    if manifest.format != FORMAT {
        return Err(io::Error::other("the snapshot is of an older format").into());
    }
    let moved = manifest.root != root;
    if moved && !manifest.relocatable {
        return Err(RestoreError::NotRelocatable(
            manifest.root.display().to_string(),
        ));
    }
    let copied: Vec<&String> = manifest.added.iter().chain(&manifest.changed).collect();
    // Everything is checked before anything is touched.
    for path in copied.iter().copied().chain(&manifest.removed) {
        check_folders_on_the_way(root, path)?;
    }
    for path in &manifest.added {
        if fs::symlink_metadata(root.join(path)).is_ok() && tracked(path) {
            return Err(RestoreError::InTheWay(path.clone()));
        }
    }
    let put_back = put_back(dir, root, cache_dir, &manifest, &copied);
    if let Err(err) = put_back {
        // Half a restore is worse than none: what it added goes, and the caller puts the
        // repository's own files back before setup runs.
        for path in &manifest.added {
            let _ = copy::remove_tree(&root.join(path));
        }
        return Err(RestoreError::Interrupted(err));
    }
    Ok(copied.len() + manifest.removed.len())
}

/// The writing half of [`restore`], once everything has been checked.
fn put_back(
    dir: &Path,
    root: &Path,
    cache_dir: &Path,
    manifest: &Manifest,
    copied: &[&String],
) -> io::Result<()> {
    let moved = manifest.root != root;
    for path in copied.iter().copied().chain(&manifest.removed) {
        copy::remove_tree(&root.join(path))?;
    }
    let tree = dir.join("tree");
    for path in copied {
        let target = root.join(path);
        if let Some(folder) = target.parent() {
            fs::create_dir_all(folder)?;
        }
        copy::copy_tree(&tree.join(path), &target)?;
    }
    if moved {
        let (old, new) = (
            manifest.root.as_os_str().as_encoded_bytes(),
            root.as_os_str().as_encoded_bytes(),
        );
        for path in &manifest.rewritten {
            let file = root.join(path);
            let text = fs::read(&file)?;
            fs::write(&file, replace_all(&text, old, new))?;
        }
        for path in &manifest.relinked {
            let link = root.join(path);
            let target = fs::read_link(&link)?;
            let rest = target.strip_prefix(&manifest.root).unwrap_or(&target);
            fs::remove_file(&link)?;
            std::os::unix::fs::symlink(root.join(rest), &link)?;
        }
        for path in &manifest.dropped {
            copy::remove_tree(&root.join(path))?;
        }
    }
    if manifest.cache_dir {
        copy::remove_tree(cache_dir)?;
        copy::copy_tree(&dir.join("cache_dir"), cache_dir)?;
    }
    Ok(())
}

/// Refuses a path whose folders inside the tree are links or files: a restore writes through
/// real folders only.
fn check_folders_on_the_way(root: &Path, path: &str) -> Result<(), RestoreError> {
    let mut at = root.to_path_buf();
    let parts: Vec<&str> = path.split('/').collect();
    for part in &parts[..parts.len().saturating_sub(1)] {
        at.push(part);
        match fs::symlink_metadata(&at) {
            Ok(metadata) if metadata.is_dir() => {}
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(()),
            _ => return Err(RestoreError::NotAFolder(path.to_string())),
        }
    }
    Ok(())
}

fn replace_all(text: &[u8], old: &[u8], new: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = memchr::memmem::find(rest, old) {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(new);
        rest = &rest[at + old.len()..];
    }
    out.extend_from_slice(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree_with_a_venv(root: &Path) {
        fs::create_dir_all(root.join("src")).unwrap();
        fs::write(root.join("src/calc.py"), "x = 1\n").unwrap();
    }

    fn run_setup(root: &Path) {
        fs::create_dir_all(root.join(".venv/bin")).unwrap();
        fs::write(
            root.join(".venv/bin/pytest"),
            format!("#!{}/.venv/bin/python\n", root.display()),
        )
        .unwrap();
        std::os::unix::fs::symlink(root.join(".venv/bin/pytest"), root.join(".venv/bin/t"))
            .unwrap();
        fs::write(
            root.join(".venv/mod.pyc"),
            format!("\0{}\0", root.display()),
        )
        .unwrap();
        fs::write(root.join("Cargo.lock"), "# made by setup\n").unwrap();
    }

    #[test]
    fn a_snapshot_taken_in_one_tree_is_put_back_in_another_with_its_paths_moved() {
        let dir = tempfile::tempdir().unwrap();
        let (first, second) = (
            dir.path().join("jobs/1/tree"),
            dir.path().join("jobs/22/tree"),
        );
        tree_with_a_venv(&first);
        tree_with_a_venv(&second);
        let before = TreeState::read(&first).unwrap();
        run_setup(&first);

        let cache_dir = dir.path().join("jobs/1/cache");
        fs::create_dir_all(&cache_dir).unwrap();
        fs::write(cache_dir.join("schema.json"), "{}").unwrap();
        let saved = save(
            &first,
            &before,
            &cache_dir,
            &dir.path().join("snap"),
            |_| "key".into(),
        )
        .unwrap();
        assert!(saved.relocatable);
        let second_cache = dir.path().join("jobs/22/cache");
        let restored = restore(&saved.dir, &second, &second_cache, &|_| false).unwrap();

        assert_eq!(restored, 2, ".venv and Cargo.lock");
        let script = fs::read_to_string(second.join(".venv/bin/pytest")).unwrap();
        assert_eq!(script, format!("#!{}/.venv/bin/python\n", second.display()));
        assert_eq!(
            fs::read_link(second.join(".venv/bin/t")).unwrap(),
            second.join(".venv/bin/pytest")
        );
        assert!(
            !second.join(".venv/mod.pyc").exists(),
            "compiled again by Python"
        );
        assert_eq!(
            fs::read_to_string(second.join("Cargo.lock")).unwrap(),
            "# made by setup\n"
        );
        assert_eq!(
            fs::read_to_string(second_cache.join("schema.json")).unwrap(),
            "{}"
        );
    }

    #[test]
    fn a_tracked_file_in_the_way_stops_the_restore_before_anything_is_touched() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("tree");
        tree_with_a_venv(&root);
        let before = TreeState::read(&root).unwrap();
        run_setup(&root);
        let cache_dir = dir.path().join("cache");
        let saved = save(&root, &before, &cache_dir, &dir.path().join("snap"), |_| {
            "key".into()
        })
        .unwrap();
        fs::remove_dir_all(root.join(".venv")).unwrap();
        fs::write(root.join("Cargo.lock"), "# the repository's own\n").unwrap();

        let refused = restore(&saved.dir, &root, &cache_dir, &|path| path == "Cargo.lock");

        assert!(matches!(refused, Err(RestoreError::InTheWay(path)) if path == "Cargo.lock"));
        assert!(!root.join(".venv").exists());
        assert_eq!(
            fs::read_to_string(root.join("Cargo.lock")).unwrap(),
            "# the repository's own\n"
        );
    }
}
