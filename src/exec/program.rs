//! Finding what to execute: the working directory, and the program looked up on the
//! command's own PATH or resolved against the working directory, checked before spawning.

use std::ffi::OsStr;
use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Where a command without a PATH of its own looks for programs, as `execvp` would.
pub(super) const FALLBACK_PATH: &str = "/usr/bin:/bin";

/// The working directory made absolute, once it is known to exist.
pub(super) fn working_directory(cwd: &Path) -> io::Result<PathBuf> {
    let absolute = std::path::absolute(cwd)?;
    match fs::metadata(&absolute) {
        Ok(metadata) if metadata.is_dir() => Ok(absolute),
        Ok(_) => Err(io::Error::new(
            io::ErrorKind::NotADirectory,
            format!(
                "working directory `{}` is not a directory",
                absolute.display()
            ),
        )),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("working directory `{}` does not exist", absolute.display()),
        )),
        Err(error) => Err(io::Error::new(
            error.kind(),
            format!("working directory `{}`: {error}", absolute.display()),
        )),
    }
}

/// The absolute path to execute. A name without a slash is looked up on `path_var` (the
/// command's PATH); a path with a slash is taken relative to `cwd`, not to this process.
pub(super) fn resolve(program: &str, cwd: &Path, path_var: Option<&OsStr>) -> io::Result<PathBuf> {
    if program.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the program name is empty",
        ));
    }
    let path = if program.contains('/') {
        cwd.join(program)
    } else {
        look_up_on_path(program, path_var.unwrap_or(OsStr::new(FALLBACK_PATH)))?
    };
    check_runnable(&path)?;
    Ok(path)
}

/// Like `execvp`, skips entries that hold a same-named file we may not execute. Empty and
/// relative entries are ignored: they would make the lookup depend on the checkout.
pub(super) fn look_up_on_path(program: &str, path_var: &OsStr) -> io::Result<PathBuf> {
    std::env::split_paths(path_var)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(program))
        .find(|candidate| {
            fs::metadata(candidate)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("not found on PATH `{}`", path_var.to_string_lossy()),
            )
        })
}

/// Refuses what the kernel would refuse, with a message that says why, and what it would
/// accept only through a shell: a file with neither a `#!` line nor a binary header.
fn check_runnable(path: &Path) -> io::Result<()> {
    let shown = path.display();
    let metadata = fs::metadata(path).map_err(|error| match error.kind() {
        io::ErrorKind::NotFound => {
            io::Error::new(io::ErrorKind::NotFound, format!("`{shown}` does not exist"))
        }
        kind => io::Error::new(kind, format!("`{shown}`: {error}")),
    })?;
    if metadata.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            format!("`{shown}` is a directory"),
        ));
    }
    let mode = metadata.permissions().mode();
    if mode & 0o111 == 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "`{shown}` is not executable (mode {:o}); make it executable (chmod +x)",
                mode & 0o7777
            ),
        ));
    }
    if let Some(header) = read_header(path)
        && !header.starts_with(b"#!")
        && !header.starts_with(b"\x7fELF")
    {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "`{shown}` has no `#!` line and is not a binary, so only a shell could run it; \
                 start it with a line such as `#!/bin/sh`"
            ),
        ));
    }
    Ok(())
}

/// The first bytes of the file, or `None` when it cannot be read (an execute-only binary
/// is still runnable; the kernel has the last word).
fn read_header(path: &Path) -> Option<Vec<u8>> {
    let mut header = Vec::with_capacity(4);
    fs::File::open(path)
        .ok()?
        .take(4)
        .read_to_end(&mut header)
        .ok()?;
    Some(header)
}
