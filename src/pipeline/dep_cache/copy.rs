//! Whole folders copied, measured and removed without following a symbolic link: links are
//! copied as links, files with their permission bits.

use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Copies `from` (a file, a link or a folder) to `to`, which must not exist.
pub(super) fn copy_tree(from: &Path, to: &Path) -> io::Result<()> {
    let metadata = fs::symlink_metadata(from)?;
    let kind = metadata.file_type();
    if kind.is_symlink() {
        std::os::unix::fs::symlink(fs::read_link(from)?, to)
    } else if kind.is_dir() {
        fs::create_dir(to)?;
        for entry in fs::read_dir(from)? {
            let entry = entry?;
            copy_tree(&entry.path(), &to.join(entry.file_name()))?;
        }
        fs::set_permissions(to, metadata.permissions())
    } else if kind.is_file() {
        // `fs::copy` keeps the permission bits and lets the kernel share blocks where it can.
        fs::copy(from, to).map(|_| ())
    } else {
        Ok(()) // sockets and pipes are not dependencies
    }
}

/// Bytes of every file under `path` (a missing path is 0), links not followed.
pub(super) fn size_of(path: &Path) -> io::Result<u64> {
    let metadata = match fs::symlink_metadata(path) {
        Ok(metadata) => metadata,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(err) => return Err(err),
    };
    if !metadata.is_dir() {
        return Ok(metadata.len());
    }
    let mut total = 0;
    for entry in fs::read_dir(path)? {
        total += size_of(&entry?.path())?;
    }
    Ok(total)
}

/// Removes `path` and all under it; folders a tool made read-only (Go's module cache) are
/// made writable first. A missing path is fine.
pub(super) fn remove_tree(path: &Path) -> io::Result<()> {
    match fs::symlink_metadata(path) {
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(err) => return Err(err),
        Ok(metadata) if !metadata.is_dir() => return fs::remove_file(path),
        Ok(_) => {}
    }
    match fs::remove_dir_all(path) {
        Err(err) if err.kind() == io::ErrorKind::PermissionDenied => {
            make_folders_writable(path)?;
            fs::remove_dir_all(path)
        }
        other => other,
    }
}

fn make_folders_writable(path: &Path) -> io::Result<()> {
    let metadata = fs::symlink_metadata(path)?;
    if !metadata.is_dir() {
        return Ok(());
    }
    let mut permissions = metadata.permissions();
    permissions.set_mode(permissions.mode() | 0o700);
    fs::set_permissions(path, permissions)?;
    for entry in fs::read_dir(path)? {
        make_folders_writable(&entry?.path())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_keeps_links_as_links_and_files_executable() {
        let dir = tempfile::tempdir().unwrap();
        let from = dir.path().join("venv");
        fs::create_dir_all(from.join("bin")).unwrap();
        fs::write(from.join("bin/tool"), "#!/bin/sh\n").unwrap();
        fs::set_permissions(from.join("bin/tool"), fs::Permissions::from_mode(0o755)).unwrap();
        std::os::unix::fs::symlink("/usr/bin/python3", from.join("bin/python")).unwrap();

        copy_tree(&from, &dir.path().join("copy")).unwrap();

        let copy = dir.path().join("copy");
        assert_eq!(
            fs::read_link(copy.join("bin/python")).unwrap(),
            Path::new("/usr/bin/python3")
        );
        let mode = fs::metadata(copy.join("bin/tool"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755);
        // The script, and the link counted by its own size (its target's name).
        assert_eq!(
            size_of(&copy).unwrap(),
            10 + "/usr/bin/python3".len() as u64
        );
    }

    #[test]
    fn a_read_only_folder_tree_is_still_removed() {
        let dir = tempfile::tempdir().unwrap();
        let module = dir.path().join("mod/example.com/m@v1");
        fs::create_dir_all(&module).unwrap();
        fs::write(module.join("go.mod"), "module m\n").unwrap();
        fs::set_permissions(&module, fs::Permissions::from_mode(0o555)).unwrap();

        remove_tree(&dir.path().join("mod")).unwrap();

        assert!(!dir.path().join("mod").exists());
    }
}
