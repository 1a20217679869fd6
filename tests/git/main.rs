//! The git layer's stories, in a test binary of their own: they set libgit2's process-wide
//! options (configuration search paths, network timeouts) that the other stories must not share.

#[path = "../it/support/mod.rs"]
mod support;

mod git_layer;
mod git_remote;

use std::sync::Once;
use std::time::Duration;

use autofix::git::{NetworkTimeouts, set_network_timeouts};

/// How long a remote story waits to connect, and for each read: short enough that the
/// dead-remote story stays quick; every other story talks to loopback.
const NETWORK_TIMEOUT: Duration = Duration::from_secs(2);

/// libgit2 reads the user's configuration and keeps its network timeouts process-wide: both are
/// set once, before any story of this binary touches a repository, so results never depend on
/// who runs the tests and a stalled remote fails a story in seconds.
fn isolate_libgit2() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let empty = std::env::temp_dir().join("autofix-git-stories-empty-config");
        std::fs::create_dir_all(&empty).unwrap();
        for level in [
            git2::ConfigLevel::System,
            git2::ConfigLevel::XDG,
            git2::ConfigLevel::Global,
        ] {
            // SAFETY: runs once, before any story of this binary uses libgit2.
            unsafe { git2::opts::set_search_path(level, &empty).unwrap() };
        }
        let wanted = NetworkTimeouts {
            connect: NETWORK_TIMEOUT,
            read: NETWORK_TIMEOUT,
        };
        assert_eq!(set_network_timeouts(wanted), wanted);
    });
}
