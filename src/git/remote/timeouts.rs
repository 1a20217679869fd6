//! libgit2's process-wide network timeouts, set once before the first fetch or push so a dead or
//! stalled forge fails a job instead of hanging its worker.

use std::sync::OnceLock;
use std::time::Duration;

/// How long libgit2 waits to connect to a forge, and for each read or write once connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NetworkTimeouts {
    pub connect: Duration,
    /// Per socket read or write, not for the whole transfer: a large clone that keeps moving
    /// is never cut off.
    pub read: Duration,
}

impl Default for NetworkTimeouts {
    fn default() -> Self {
        NetworkTimeouts {
            connect: Duration::from_secs(30),
            read: Duration::from_secs(120),
        }
    }
}

static IN_FORCE: OnceLock<NetworkTimeouts> = OnceLock::new();

/// Sets libgit2's timeouts if nothing has set them yet in this process, and returns the ones in
/// force. They are global to libgit2, so the first setting wins: call this at startup.
pub fn set_network_timeouts(timeouts: NetworkTimeouts) -> NetworkTimeouts {
    *IN_FORCE.get_or_init(|| apply(timeouts))
}

/// Every network operation of this module calls this first.
pub(crate) fn ensure_network_timeouts() {
    set_network_timeouts(NetworkTimeouts::default());
}

fn apply(timeouts: NetworkTimeouts) -> NetworkTimeouts {
    let connect = milliseconds(timeouts.connect);
    let read = milliseconds(timeouts.read);
    // SAFETY: libgit2's options are plain globals. This runs once, inside `OnceLock`, and every
    // network operation of this module waits on that lock before it starts, so no transfer of
    // ours reads them while they change; local clones and commits never read them.
    let outcome = unsafe {
        git2::opts::set_server_connect_timeout_in_milliseconds(connect)
            .and_then(|()| git2::opts::set_server_timeout_in_milliseconds(read))
    };
    if let Err(error) = outcome {
        tracing::warn!(%error, "libgit2 refused the network timeouts; transfers may wait forever");
    }
    timeouts
}

/// libgit2 takes an `int` of milliseconds, where 0 would mean "wait forever".
fn milliseconds(duration: Duration) -> libc::c_int {
    duration.as_millis().clamp(1, libc::c_int::MAX as u128) as libc::c_int
}
