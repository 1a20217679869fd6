//! The bot's own process, hardened before any work: not dumpable (no `/proc/PID/mem`, no
//! ptrace by the same user), its configuration variables gone once read, its open-files limit
//! raised, and the sandbox check.

use std::time::Duration;

use crate::config::ENV_PREFIX;
use crate::exec::{self, CommandSpec, Sandbox, SandboxMode};

/// Makes this process non-dumpable: other processes of the same user can no longer read its
/// memory or environment through `/proc`, or attach to it. Called first thing in `main`.
pub fn this_process() {
    // SAFETY: prctl with PR_SET_DUMPABLE takes plain integers and changes only this process.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
}

/// Removes every `AUTOFIX__*` variable (tokens, keys, webhook secrets) from this process's
/// environment once the configuration has been read.
///
/// Must run while the process has a single thread: the environment is not thread-safe.
pub fn forget_configuration_variables() {
    let names: Vec<_> = std::env::vars_os()
        .map(|(name, _)| name)
        .filter(|name| name.to_string_lossy().starts_with(ENV_PREFIX))
        .collect();
    for name in names {
        wipe_value(&name);
        // SAFETY: called from `main` before any other thread starts (see above).
        unsafe { std::env::remove_var(name) };
    }
}

/// Overwrites the variable's value where it lies: the environment block the process started
/// with, which `/proc/PID/environ` shows for as long as the process lives, even after the
/// variable is removed.
fn wipe_value(name: &std::ffi::OsStr) {
    use std::os::unix::ffi::OsStrExt;
    let Ok(name) = std::ffi::CString::new(name.as_bytes()) else {
        return;
    };
    // SAFETY: single-threaded (see the caller); getenv returns a pointer to the value's
    // NUL-terminated bytes in writable memory (the initial block or a setenv copy), and exactly
    // its strlen bytes are overwritten, the terminator kept.
    unsafe {
        let value = libc::getenv(name.as_ptr());
        if !value.is_null() {
            let len = libc::strlen(value);
            std::ptr::write_bytes(value, b'x', len);
        }
    }
}

/// The soft limit of open files before and after [`open_files_to_hard_limit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenFilesLimit {
    pub was: u64,
    pub now: u64,
}

/// Raises this process's soft `RLIMIT_NOFILE` to its hard limit: systemd starts a service at
/// 1024 open files, which idle webhook connections alone could use up, and autofix never calls
/// `select(2)`, the reason that default is low.
pub fn open_files_to_hard_limit() -> std::io::Result<OpenFilesLimit> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and write only the rlimit they are given.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let was = limit.rlim_cur;
        limit.rlim_cur = limit.rlim_max;
        if was < limit.rlim_max && libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(OpenFilesLimit {
            was,
            now: limit.rlim_cur.max(was),
        })
    }
}

/// One line saying whether sandboxed commands can run here: `true` is run in the sandbox of
/// a scratch folder. `Err` says what failed and how to fix it.
pub fn check_sandbox(sandbox: &Sandbox) -> Result<String, String> {
    if sandbox.mode() == SandboxMode::None {
        return Ok(
            "sandbox: none: commands on repository content run unconfined (exec.sandbox = \"none\")"
                .to_string(),
        );
    }
    let scratch = tempfile::tempdir()
        .map_err(|err| format!("sandbox: cannot make a scratch folder to test it: {err}"))?;
    let spec = CommandSpec::new("true", Vec::<String>::new(), scratch.path())
        .with_timeout(Duration::from_secs(30))
        .confined(sandbox.jail(scratch.path()));
    match exec::run(&spec) {
        Ok(outcome) if outcome.success() => Ok(format!(
            "sandbox: bwrap works (no network, private /proc, only the work tree writable; {} \
             toolchain folder(s) visible)",
            sandbox.read_only_paths().len()
        )),
        Ok(outcome) => Err(format!(
            "sandbox: `true` failed in the sandbox ({}): {}",
            outcome.describe(),
            outcome.output.trim()
        )),
        Err(err) => Err(format!("sandbox: {err}")),
    }
}
