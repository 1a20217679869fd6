//! Removing an entry and, for a folder, everything in it, from an open handle of its folder:
//! every folder is entered with `O_NOFOLLOW`, so a link inside is removed, never followed.

use std::os::fd::OwnedFd;

use rustix::fs::{AtFlags, Dir, FileType, Mode};
use rustix::io::Errno;

use super::{FOLDER, TreeError, io_error};

/// Removes `name` inside `folder`, whatever it is; nothing there is fine.
pub(super) fn entry_at(folder: &OwnedFd, name: &str, at: &str) -> Result<(), TreeError> {
    match rustix::fs::unlinkat(folder, name, AtFlags::empty()) {
        Ok(()) | Err(Errno::NOENT) => Ok(()),
        // Linux answers EISDIR for a folder; POSIX allows EPERM.
        Err(Errno::ISDIR | Errno::PERM) => tree_at(folder, name, at),
        Err(errno) => Err(io_error("remove", at)(errno)),
    }
}

/// Removes the folder `name` inside `folder` and everything below it. Depth-first without
/// recursion, holding one handle per level, so a deep tree cannot exhaust the stack.
pub(super) fn tree_at(folder: &OwnedFd, name: &str, at: &str) -> Result<(), TreeError> {
    let first = match rustix::fs::openat(folder, name, FOLDER, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Ok(()),
        // Not a folder after all (replaced meanwhile): remove the entry itself.
        Err(Errno::LOOP | Errno::NOTDIR) => {
            return rustix::fs::unlinkat(folder, name, AtFlags::empty())
                .map_err(io_error("remove", at));
        }
        Err(errno) => return Err(io_error("open the folder", at)(errno)),
    };
    let mut stack: Vec<(OwnedFd, Vec<u8>)> = vec![(first, name.as_bytes().to_vec())];
    while let Some((current, _)) = stack.last() {
        match first_subfolder_after_removing_the_rest(current, at)? {
            Some(sub) => match rustix::fs::openat(current, sub.as_slice(), FOLDER, Mode::empty()) {
                Ok(fd) => stack.push((fd, sub)),
                Err(Errno::NOENT) => {}
                Err(Errno::LOOP | Errno::NOTDIR) => {
                    rustix::fs::unlinkat(current, sub.as_slice(), AtFlags::empty())
                        .map_err(io_error("remove an entry in", at))?;
                }
                Err(errno) => return Err(io_error("open a folder in", at)(errno)),
            },
            None => {
                let (_, emptied) = stack.pop().expect("the loop holds an entry");
                let parent = stack.last().map_or(folder, |(fd, _)| fd);
                match rustix::fs::unlinkat(parent, emptied.as_slice(), AtFlags::REMOVEDIR) {
                    Ok(()) | Err(Errno::NOENT) => {}
                    Err(errno) => return Err(io_error("remove the folder", at)(errno)),
                }
            }
        }
    }
    Ok(())
}

/// Unlinks every entry of `folder` that is not a folder, and names its first folder, if any.
fn first_subfolder_after_removing_the_rest(
    folder: &OwnedFd,
    at: &str,
) -> Result<Option<Vec<u8>>, TreeError> {
    let mut entries = Dir::read_from(folder).map_err(io_error("list the folder", at))?;
    while let Some(entry) = entries.read() {
        let entry = entry.map_err(io_error("list the folder", at))?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        let kind = match entry.file_type() {
            FileType::Unknown => rustix::fs::statat(folder, name, AtFlags::SYMLINK_NOFOLLOW)
                .map(|stat| FileType::from_raw_mode(stat.st_mode))
                .map_err(io_error("look at an entry in", at))?,
            kind => kind,
        };
        if kind == FileType::Directory {
            return Ok(Some(name.to_vec()));
        }
        match rustix::fs::unlinkat(folder, name, AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => {}
            Err(errno) => return Err(io_error("remove an entry in", at)(errno)),
        }
    }
    Ok(None)
}
