//! Every write, delete, folder creation and read autofix itself does inside a work tree: a path is
//! walked component by component from an open handle of the root, and never through a symbolic link.
//!
//! Commands that run on a work tree are treated as attackers, and they can leave anything behind:
//! a folder turned into a link to `~/.ssh`, a file where a folder was. So nothing here ever joins a
//! path and hands it to the kernel whole: each folder is opened with `O_NOFOLLOW | O_DIRECTORY`
//! relative to the one before, temporary files are created with `O_EXCL | O_NOFOLLOW` inside the
//! verified folder, and a link met on the way is either refused ([`Way::Refuse`]) or removed and
//! replaced by a real folder ([`Way::Clear`], for putting a tree back as git has it).

mod remove;

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

/// A work tree's root, held open: every path below is resolved from this handle.
#[derive(Debug)]
pub struct Tree {
    root: OwnedFd,
    path: PathBuf,
}

/// What to do with something in the way of a path: a symbolic link, or a file where a folder
/// should be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    /// Fail with [`TreeError::Link`] or [`TreeError::NotAFolder`]: for the model's own edits,
    /// which must not go through anything but real folders.
    Refuse,
    /// Remove it (never following it) and carry on with a real folder: for putting back what a
    /// command changed.
    Clear,
}

/// The permissions a written file gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Permissions {
    /// Those of the file it replaces; a new file gets the usual `0666` less the umask.
    KeepExisting,
    /// `0644`- or `0755`-like, less the umask: git's two modes for a file.
    Git { executable: bool },
}

/// What is at a path, seen without following a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    Missing,
    File {
        bytes: u64,
        executable: bool,
    },
    Folder,
    Link,
    /// A fifo, a socket, a device.
    Other,
}

/// Why a path below the root could not be used. Each reads as one sentence naming the path.
#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    #[error("`{path}` is not a plain relative path inside the work tree")]
    NotRelative { path: String },
    #[error("`{at}` is a symbolic link; autofix never follows a link inside a work tree")]
    Link { at: String },
    #[error("`{at}` is not a folder")]
    NotAFolder { at: String },
    #[error("`{at}` is a folder, not a file")]
    IsAFolder { at: String },
    #[error("`{at}` is not a regular file")]
    NotAFile { at: String },
    #[error("`{at}` is {bytes} bytes, over the limit of {limit} bytes")]
    TooLarge { at: String, bytes: u64, limit: u64 },
    #[error("cannot {action} `{at}`: {source}")]
    Io {
        action: &'static str,
        at: String,
        #[source]
        source: io::Error,
    },
}

impl From<TreeError> for io::Error {
    fn from(error: TreeError) -> io::Error {
        let kind = match &error {
            TreeError::Io { source, .. } => source.kind(),
            TreeError::NotRelative { .. } => io::ErrorKind::InvalidInput,
            TreeError::IsAFolder { .. } => io::ErrorKind::IsADirectory,
            TreeError::NotAFolder { .. } => io::ErrorKind::NotADirectory,
            _ => io::ErrorKind::PermissionDenied,
        };
        io::Error::new(kind, error)
    }
}

fn io_error(action: &'static str, at: &str) -> impl FnOnce(Errno) -> TreeError {
    let at = at.to_string();
    move |errno| TreeError::Io {
        action,
        at,
        source: errno.into(),
    }
}

const FOLDER: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// Temporary files get a process-wide counter so two writes never race for one name.
static TEMPORARY: AtomicU64 = AtomicU64::new(0);

impl Tree {
    /// Opens `root`, the work tree itself (the path to it is autofix's own and may hold links).
    pub fn open(root: &Path) -> io::Result<Tree> {
        let fd = rustix::fs::open(
            root,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Tree {
            root: fd,
            path: root.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What is at `relative`, without following a link. A link or a file on the way there is an
    /// error naming it; a folder missing on the way means the path is missing.
    pub fn entry(&self, relative: &str) -> Result<Entry, TreeError> {
        let (parts, leaf) = split(relative)?;
        let Some(parent) = self.walk(&parts, relative, Walk::Look)? else {
            return Ok(Entry::Missing);
        };
        entry_at(&parent, leaf, relative)
    }

    /// The bytes of the regular file at `relative`, or `None` when nothing is there. A link
    /// (at the end or on the way), a folder, a fifo or a file over `limit` bytes is an error.
    pub fn read(&self, relative: &str, limit: u64) -> Result<Option<Vec<u8>>, TreeError> {
        let Some((file, bytes)) = self.open_file(relative)? else {
            return Ok(None);
        };
        let too_large = |bytes| TreeError::TooLarge {
            at: relative.to_string(),
            bytes,
            limit,
        };
        if bytes > limit {
            return Err(too_large(bytes));
        }
        let mut content = Vec::with_capacity(bytes as usize);
        file.take(limit + 1)
            .read_to_end(&mut content)
            .map_err(|source| TreeError::Io {
                action: "read",
                at: relative.to_string(),
                source,
            })?;
        if content.len() as u64 > limit {
            return Err(too_large(content.len() as u64));
        }
        Ok(Some(content))
    }

    /// The names in the folder at `relative`, sorted; `None` when it is missing. A link (at the
    /// end or on the way) or a file is an error: the folder is entered only if it is a real one.
    pub fn list(&self, relative: &str) -> Result<Option<Vec<String>>, TreeError> {
        let (mut parts, leaf) = split(relative)?;
        parts.push(leaf);
        let Some(folder) = self.walk(&parts, relative, Walk::Look)? else {
            return Ok(None);
        };
        let entries = rustix::fs::Dir::read_from(&folder).map_err(io_error("list", relative))?;
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(io_error("list", relative))?;
            let name = entry.file_name().to_string_lossy();
            if name != "." && name != ".." {
                names.push(name.into_owned());
            }
        }
        names.sort();
        Ok(Some(names))
    }

    /// The regular file at `relative`, opened for reading, and its size; `None` when nothing
    /// is there. A link (at the end or on the way), a folder or a fifo is an error.
    pub fn open_file(&self, relative: &str) -> Result<Option<(File, u64)>, TreeError> {
        let (parts, leaf) = split(relative)?;
        let Some(parent) = self.walk(&parts, relative, Walk::Look)? else {
            return Ok(None);
        };
        // Non-blocking, so a fifo cannot hold the open; regular files ignore the flag.
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
        let fd = match rustix::fs::openat(&parent, leaf, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            Err(errno) => {
                return Err(match entry_at(&parent, leaf, relative)? {
                    Entry::Link => TreeError::Link {
                        at: relative.to_string(),
                    },
                    _ => io_error("read", relative)(errno),
                });
            }
        };
        let stat = rustix::fs::fstat(&fd).map_err(io_error("read", relative))?;
        match FileType::from_raw_mode(stat.st_mode) {
            FileType::RegularFile => Ok(Some((File::from(fd), stat.st_size as u64))),
            FileType::Directory => Err(TreeError::IsAFolder {
                at: relative.to_string(),
            }),
            _ => Err(TreeError::NotAFile {
                at: relative.to_string(),
            }),
        }
    }

    /// Writes `content` to `relative` atomically: into a new temporary file in the verified
    /// folder, synced, then renamed over the old entry, so readers see the old or the new file.
    /// Missing folders are created; what is in the way is refused or cleared as `way` says.
    pub fn write(
        &self,
        relative: &str,
        content: &[u8],
        permissions: Permissions,
        way: Way,
    ) -> Result<(), TreeError> {
        let (parts, leaf) = split(relative)?;
        let parent = self
            .walk(&parts, relative, Walk::Create(way))?
            .expect("creating walks always reach the folder");
        let existing = rustix::fs::statat(&parent, leaf, AtFlags::SYMLINK_NOFOLLOW);
        let mut mode = match permissions {
            Permissions::KeepExisting => Mode::from_raw_mode(0o666),
            Permissions::Git { executable: true } => Mode::from_raw_mode(0o777),
            Permissions::Git { executable: false } => Mode::from_raw_mode(0o666),
        };
        let mut keep = None;
        match existing
            .as_ref()
            .map(|stat| FileType::from_raw_mode(stat.st_mode))
        {
            Err(&Errno::NOENT) => {}
            Err(errno) => return Err(io_error("look at", relative)(*errno)),
            Ok(FileType::RegularFile) => {
                if permissions == Permissions::KeepExisting {
                    let stat = existing.as_ref().expect("matched Ok");
                    keep = Some(Mode::from_raw_mode(stat.st_mode & 0o7777));
                }
            }
            Ok(FileType::Directory) if way == Way::Clear => {
                remove::tree_at(&parent, leaf, relative)?;
            }
            Ok(FileType::Directory) => {
                return Err(TreeError::IsAFolder {
                    at: relative.to_string(),
                });
            }
            // The rename below replaces a link or a fifo itself, never what a link points at.
            Ok(FileType::Symlink) if way == Way::Refuse => {
                return Err(TreeError::Link {
                    at: relative.to_string(),
                });
            }
            Ok(_) if way == Way::Refuse => {
                return Err(TreeError::NotAFile {
                    at: relative.to_string(),
                });
            }
            Ok(_) => {}
        }
        if let Some(kept) = keep {
            mode = kept;
        }
        let temporary = temporary_name();
        let created = rustix::fs::openat(
            &parent,
            &temporary,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            mode,
        )
        .map_err(io_error("create a temporary file for", relative))?;
        let written = (|| -> Result<(), TreeError> {
            let fail = |source| TreeError::Io {
                action: "write",
                at: relative.to_string(),
                source,
            };
            if let Some(kept) = keep {
                // The umask applied at creation; the old file's exact bits come back here.
                rustix::fs::fchmod(&created, kept).map_err(|errno| fail(errno.into()))?;
            }
            let mut file = File::from(created);
            file.write_all(content).map_err(fail)?;
            file.sync_all().map_err(fail)?;
            rustix::fs::renameat(&parent, &temporary, &parent, leaf)
                .map_err(io_error("move the new content into", relative))?;
            // Persist the rename itself; not every filesystem can sync a folder.
            let _ = rustix::fs::fsync(&parent);
            Ok(())
        })();
        if written.is_err() {
            let _ = rustix::fs::unlinkat(&parent, &temporary, AtFlags::empty());
        }
        written
    }

    /// Makes `relative` a symbolic link to `target` (a tracked link put back as git has it),
    /// replacing what is there.
    pub fn write_link(&self, relative: &str, target: &[u8], way: Way) -> Result<(), TreeError> {
        let (parts, leaf) = split(relative)?;
        let parent = self
            .walk(&parts, relative, Walk::Create(way))?
            .expect("creating walks always reach the folder");
        if let Ok(stat) = rustix::fs::statat(&parent, leaf, AtFlags::SYMLINK_NOFOLLOW)
            && FileType::from_raw_mode(stat.st_mode) == FileType::Directory
        {
            match way {
                Way::Clear => remove::tree_at(&parent, leaf, relative)?,
                Way::Refuse => {
                    return Err(TreeError::IsAFolder {
                        at: relative.to_string(),
                    });
                }
            }
        }
        let temporary = temporary_name();
        rustix::fs::symlinkat(OsStr::from_bytes(target), &parent, &temporary)
            .map_err(io_error("create the link", relative))?;
        rustix::fs::renameat(&parent, &temporary, &parent, leaf).map_err(|errno| {
            let _ = rustix::fs::unlinkat(&parent, &temporary, AtFlags::empty());
            io_error("move the link into", relative)(errno)
        })
    }

    /// Removes whatever is at `relative` (a file, a link itself, a whole folder); nothing there
    /// is fine. A link on the way is refused or, with [`Way::Clear`], removed in its stead:
    /// either way nothing a link points at is touched.
    pub fn remove(&self, relative: &str, way: Way) -> Result<(), TreeError> {
        let (parts, leaf) = split(relative)?;
        let parent = match self.walk(&parts, relative, Walk::Remove(way))? {
            Some(parent) => parent,
            None => return Ok(()),
        };
        remove::entry_at(&parent, leaf, relative)
    }

    /// Removes the folders of `relative` that are left empty, from its own folder up to (not
    /// including) the root; stops at the first that is not empty or not a real folder.
    pub fn remove_empty_folders_above(&self, relative: &str) -> Result<(), TreeError> {
        let (parts, _) = split(relative)?;
        for depth in (1..=parts.len()).rev() {
            let Some(parent) = self.walk(&parts[..depth - 1], relative, Walk::Look)? else {
                continue;
            };
            match rustix::fs::unlinkat(&parent, parts[depth - 1], AtFlags::REMOVEDIR) {
                Ok(()) | Err(Errno::NOENT) => {}
                Err(_) => break,
            }
        }
        Ok(())
    }

    /// Opens the folder that `parts` names below the root. `None` when a folder is missing and
    /// the walk only looks (or removes: nothing below a missing folder exists to remove).
    fn walk(
        &self,
        parts: &[&str],
        relative: &str,
        walk: Walk,
    ) -> Result<Option<OwnedFd>, TreeError> {
        let mut current = self.root.try_clone().map_err(|source| TreeError::Io {
            action: "open the work tree for",
            at: relative.to_string(),
            source,
        })?;
        for (depth, part) in parts.iter().enumerate() {
            let at = parts[..=depth].join("/");
            current = match step(&current, part, &at, walk)? {
                Some(next) => next,
                None => return Ok(None),
            };
        }
        Ok(Some(current))
    }
}

/// What a walk does about a missing folder and about what is in the way.
#[derive(Debug, Clone, Copy)]
enum Walk {
    /// Reads: a missing folder ends the walk; a link or file on the way is an error.
    Look,
    /// Writes: a missing folder is created.
    Create(Way),
    /// Removals: a missing folder ends the walk; with `Clear`, a link or file on the way is
    /// removed and the walk ends there (what was below it is gone with it).
    Remove(Way),
}

/// Opens the folder `part` inside `folder`, handling what `walk` says about what is there.
fn step(folder: &OwnedFd, part: &str, at: &str, walk: Walk) -> Result<Option<OwnedFd>, TreeError> {
    match rustix::fs::openat(folder, part, FOLDER, Mode::empty()) {
        Ok(next) => return Ok(Some(next)),
        Err(Errno::NOENT) => match walk {
            Walk::Look | Walk::Remove(_) => return Ok(None),
            Walk::Create(_) => {
                match rustix::fs::mkdirat(folder, part, Mode::from_raw_mode(0o777)) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(errno) => return Err(io_error("create the folder", at)(errno)),
                }
            }
        },
        Err(Errno::LOOP | Errno::NOTDIR) => {
            let in_the_way = match entry_at(folder, part, at)? {
                Entry::Link => TreeError::Link { at: at.to_string() },
                _ => TreeError::NotAFolder { at: at.to_string() },
            };
            match walk {
                Walk::Look | Walk::Create(Way::Refuse) | Walk::Remove(Way::Refuse) => {
                    return Err(in_the_way);
                }
                Walk::Remove(Way::Clear) => {
                    rustix::fs::unlinkat(folder, part, AtFlags::empty())
                        .map_err(io_error("remove", at))?;
                    return Ok(None);
                }
                Walk::Create(Way::Clear) => {
                    rustix::fs::unlinkat(folder, part, AtFlags::empty())
                        .map_err(io_error("remove", at))?;
                    rustix::fs::mkdirat(folder, part, Mode::from_raw_mode(0o777))
                        .map_err(io_error("create the folder", at))?;
                }
            }
        }
        Err(errno) => return Err(io_error("open the folder", at)(errno)),
    }
    // Opened again with O_NOFOLLOW: whatever was created, only a real folder is entered.
    rustix::fs::openat(folder, part, FOLDER, Mode::empty())
        .map(Some)
        .map_err(|errno| match errno {
            Errno::LOOP | Errno::NOTDIR => TreeError::Link { at: at.to_string() },
            other => io_error("open the folder", at)(other),
        })
}

fn entry_at(folder: &OwnedFd, name: &str, at: &str) -> Result<Entry, TreeError> {
    match rustix::fs::statat(folder, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => Ok(match FileType::from_raw_mode(stat.st_mode) {
            FileType::RegularFile => Entry::File {
                bytes: stat.st_size as u64,
                executable: stat.st_mode & 0o111 != 0,
            },
            FileType::Directory => Entry::Folder,
            FileType::Symlink => Entry::Link,
            _ => Entry::Other,
        }),
        Err(Errno::NOENT) => Ok(Entry::Missing),
        Err(errno) => Err(io_error("look at", at)(errno)),
    }
}

/// `a/b/c` as its folders `[a, b]` and its name `c`; anything but plain names is refused.
fn split(relative: &str) -> Result<(Vec<&str>, &str), TreeError> {
    let refuse = || TreeError::NotRelative {
        path: relative.to_string(),
    };
    let mut parts: Vec<&str> = relative.split('/').collect();
    if parts
        .iter()
        .any(|part| part.is_empty() || *part == "." || *part == ".." || part.contains('\0'))
    {
        return Err(refuse());
    }
    let leaf = parts.pop().ok_or_else(refuse)?;
    Ok((parts, leaf))
}

fn temporary_name() -> String {
    let n = TEMPORARY.fetch_add(1, Ordering::Relaxed);
    format!(".autofix-{}-{n}.tmp", std::process::id())
}

#[cfg(test)]
mod tests;
