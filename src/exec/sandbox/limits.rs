//! Resource limits of a command on repository content: processes, address space, file size and
//! core dumps, set as hard limits in the child before it starts so nothing inside can raise them.

use std::io;

/// The limits; `0` means none for processes, address space and file size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Processes and threads of the service's user at once (`RLIMIT_NPROC`; the kernel does not
    /// apply it to root).
    pub processes: u64,
    /// Virtual memory of one process, in bytes (`RLIMIT_AS`).
    pub address_space_bytes: u64,
    /// Largest file one process may write, in bytes (`RLIMIT_FSIZE`).
    pub file_size_bytes: u64,
    /// Whether a crashing process may write a core dump (`RLIMIT_CORE`).
    pub core_dumps: bool,
}

impl Default for Limits {
    /// The service configuration's defaults: 1024 processes, 8 GiB, 1 GiB files, no core dumps.
    fn default() -> Self {
        Limits {
            processes: 1024,
            address_space_bytes: 8 << 30,
            file_size_bytes: 1 << 30,
            core_dumps: false,
        }
    }
}

impl Limits {
    /// The `(resource, value)` pairs to set; an unlimited one is left as inherited.
    pub(in crate::exec) fn settings(&self) -> Vec<(libc::__rlimit_resource_t, libc::rlim_t)> {
        let mut settings = Vec::new();
        for (resource, value) in [
            (libc::RLIMIT_NPROC, self.processes),
            (libc::RLIMIT_AS, self.address_space_bytes),
            (libc::RLIMIT_FSIZE, self.file_size_bytes),
        ] {
            if value > 0 {
                settings.push((resource, value as libc::rlim_t));
            }
        }
        if !self.core_dumps {
            settings.push((libc::RLIMIT_CORE, 0));
        }
        settings
    }
}

/// Sets each limit, soft and hard. Runs in the forked child before exec: it only calls
/// `setrlimit`, which is async-signal-safe, and allocates nothing.
pub(in crate::exec) fn apply(
    settings: &[(libc::__rlimit_resource_t, libc::rlim_t)],
) -> io::Result<()> {
    for (resource, value) in settings {
        let limit = libc::rlimit {
            rlim_cur: *value,
            rlim_max: *value,
        };
        // SAFETY: `limit` is a valid rlimit for the duration of the call.
        if unsafe { libc::setrlimit(*resource, &limit) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}
