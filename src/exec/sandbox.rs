//! The sandbox every command on repository content runs in: bubblewrap namespaces (no network, a
//! private `/proc`, only the work tree writable, secrets hidden) and resource limits, or, when an
//! operator turns it off, the command unconfined but still limited.

pub(super) mod limits;
mod toolchains;

pub use limits::Limits;
pub use toolchains::toolchain_paths;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// How commands on repository content are confined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxMode {
    /// Linux namespaces through bubblewrap (`bwrap`).
    Bwrap,
    /// No confinement: the operator's explicit choice, said in every status comment.
    None,
}

impl SandboxMode {
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::Bwrap => "bwrap",
            SandboxMode::None => "none",
        }
    }
}

/// System directories every sandbox sees read-only. `/bin`, `/lib`… are recreated as the same
/// symlinks where the system merged them into `/usr`.
const SYSTEM_DIRS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc",
];

/// Files under `/etc` that only matter to people logging in, and hold hashes or host keys.
/// Hidden on top of what the operator names: a sandbox started by root could read them.
const SYSTEM_SECRETS: &[&str] = &[
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssh",
    "/etc/ssl/private",
    "/etc/security/opasswd",
    "/etc/krb5.keytab",
];

/// The host name a sandboxed command sees.
const HOSTNAME: &str = "autofix-sandbox";

/// The process-wide sandbox policy: the mode, what is visible read-only, what is hidden, and the
/// limits. Built once from the service configuration; cheap to clone.
#[derive(Debug, Clone)]
pub struct Sandbox {
    inner: Arc<Policy>,
}

#[derive(Debug)]
struct Policy {
    mode: SandboxMode,
    /// The bubblewrap program: a name looked up on PATH, or a path.
    program: String,
    /// Toolchain directories (and the operator's own) visible read-only, in mount order.
    read_only: Vec<PathBuf>,
    /// Paths never visible: the configuration file, key files, the workdir, the job store.
    hidden: Vec<PathBuf>,
    limits: Limits,
    /// `HOME` as commands see it: an empty private directory at the same path.
    home: PathBuf,
}

/// Where one command may write and what it may reach: its work tree (writable), paths inside it
/// kept read-only (its git metadata), other directories it may read or write, and the network.
#[derive(Debug, Clone)]
pub struct Jail {
    sandbox: Sandbox,
    work_tree: PathBuf,
    read_only_inside: Vec<PathBuf>,
    extra: Vec<(PathBuf, Access)>,
    network: bool,
}

/// How a directory other than the work tree is mounted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    ReadOnly,
    Writable,
}

impl Sandbox {
    /// A policy of `mode` that shows `extra_read_only` (besides the system directories and
    /// the toolchains on this process's PATH) and hides `hidden`.
    pub fn new(
        mode: SandboxMode,
        program: impl Into<String>,
        extra_read_only: &[PathBuf],
        hidden: &[PathBuf],
        limits: Limits,
    ) -> Sandbox {
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .filter(|home| home.is_absolute() && home != Path::new("/"))
            .unwrap_or_else(|| PathBuf::from("/tmp/home"));
        let mut read_only = toolchain_paths(std::env::var_os("PATH").as_deref(), &home);
        for path in extra_read_only {
            let path = std::path::absolute(path).unwrap_or_else(|_| path.clone());
            if !read_only.contains(&path) {
                read_only.push(path);
            }
        }
        let hidden = hidden
            .iter()
            .filter(|path| !path.as_os_str().is_empty())
            .map(|path| std::path::absolute(path).unwrap_or_else(|_| path.clone()))
            .chain(SYSTEM_SECRETS.iter().map(PathBuf::from))
            .collect();
        Sandbox {
            inner: Arc::new(Policy {
                mode,
                program: program.into(),
                read_only,
                hidden,
                limits,
                home,
            }),
        }
    }

    /// No confinement at all, with default limits: for tests and tools that run only the
    /// user's own commands on the user's own files.
    pub fn unconfined() -> Sandbox {
        Sandbox::new(SandboxMode::None, "bwrap", &[], &[], Limits::default())
    }

    /// The bubblewrap program, as configured.
    pub fn program(&self) -> &str {
        &self.inner.program
    }

    pub fn mode(&self) -> SandboxMode {
        self.inner.mode
    }

    pub fn limits(&self) -> Limits {
        self.inner.limits
    }

    pub fn is_confined(&self) -> bool {
        self.inner.mode == SandboxMode::Bwrap
    }

    /// The toolchain and operator directories a sandboxed command can read.
    pub fn read_only_paths(&self) -> &[PathBuf] {
        &self.inner.read_only
    }

    /// Whether a sandboxed command can see `path` (outside its work tree): always when
    /// unconfined; else when a system directory or a toolchain folder holds it, and what it
    /// links to, and it is not hidden.
    pub fn shows(&self, path: &Path) -> bool {
        if !self.is_confined() {
            return true;
        }
        let mounted = |path: &Path| {
            let shown = SYSTEM_DIRS.iter().any(|dir| path.starts_with(dir))
                || self.inner.read_only.iter().any(|dir| path.starts_with(dir));
            shown
                && !self
                    .inner
                    .hidden
                    .iter()
                    .any(|hidden| path.starts_with(hidden))
        };
        let target = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        mounted(path) && mounted(&target)
    }

    /// A command confined to `work_tree`: writable, with its `.git` read-only, no network.
    pub fn jail(&self, work_tree: impl Into<PathBuf>) -> Jail {
        let work_tree = work_tree.into();
        let git = work_tree.join(".git");
        Jail {
            sandbox: self.clone(),
            work_tree,
            read_only_inside: vec![git],
            extra: Vec::new(),
            network: false,
        }
    }
}

impl Jail {
    /// Lets the command reach the network (a maintainer asked for it).
    pub fn with_network(mut self, network: bool) -> Jail {
        self.network = network;
        self
    }

    /// Mounts `path` (which must exist) at the same place with `access`.
    pub fn with_dir(mut self, path: impl Into<PathBuf>, access: Access) -> Jail {
        self.extra.push((path.into(), access));
        self
    }

    pub fn network(&self) -> bool {
        self.network
    }

    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    pub fn work_tree(&self) -> &Path {
        &self.work_tree
    }

    /// The bubblewrap arguments that set up this jail, up to (not including) the command: the
    /// namespaces, the mounts in order, the working directory and the status descriptor.
    pub(super) fn bwrap_args(&self, cwd: &Path, status_fd: i32) -> Vec<OsString> {
        let policy = &self.sandbox.inner;
        let mut args = Args::default();
        args.flags(&["--unshare-all"]);
        if self.network {
            args.flags(&["--share-net"]);
        }
        args.flags(&["--die-with-parent", "--new-session", "--cap-drop", "ALL"]);
        args.pair("--hostname", HOSTNAME);
        for dir in SYSTEM_DIRS {
            args.system_dir(Path::new(dir));
        }
        if self.network {
            // Where /etc/resolv.conf points on systemd machines.
            args.triple(
                "--ro-bind-try",
                "/run/systemd/resolve",
                "/run/systemd/resolve",
            );
        }
        args.pair("--proc", "/proc");
        args.pair("--dev", "/dev");
        args.pair("--tmpfs", "/tmp");
        args.pair("--tmpfs", &policy.home);
        for path in &policy.read_only {
            args.triple("--ro-bind-try", path, path);
        }
        args.triple("--bind", &self.work_tree, &self.work_tree);
        for path in &self.read_only_inside {
            args.triple("--ro-bind-try", path, path);
        }
        // After the work tree and its `.git`: a folder kept inside `.git` (`autofix fix` keeps
        // its caches there) is shown with its own access, not covered by the read-only `.git`.
        for (path, access) in &self.extra {
            let flag = match access {
                Access::ReadOnly => "--ro-bind",
                Access::Writable => "--bind",
            };
            args.triple(flag, path, path);
        }
        for path in &policy.hidden {
            args.hide(path, &self.work_tree);
        }
        args.pair("--remount-ro", "/");
        args.pair("--chdir", cwd);
        args.pair("--json-status-fd", status_fd.to_string());
        args.flags(&["--"]);
        args.0
    }

    /// The environment as the command sees it: `HOME` is its private directory, `TMPDIR` its
    /// private `/tmp`.
    pub(super) fn adjust_environment(&self, variables: &mut Vec<(OsString, OsString)>) {
        let home = self.sandbox.inner.home.clone().into_os_string();
        variables.retain(|(name, _)| name != "HOME" && name != "TMPDIR");
        variables.push(("HOME".into(), home));
        variables.push(("TMPDIR".into(), "/tmp".into()));
    }
}

/// bubblewrap's argv, built in order.
#[derive(Default)]
struct Args(Vec<OsString>);

impl Args {
    fn flags(&mut self, flags: &[&str]) {
        self.0.extend(flags.iter().map(OsString::from));
    }

    fn pair(&mut self, flag: &str, value: impl AsRef<std::ffi::OsStr>) {
        self.0.push(flag.into());
        self.0.push(value.as_ref().to_owned());
    }

    fn triple(
        &mut self,
        flag: &str,
        source: impl AsRef<std::ffi::OsStr>,
        dest: impl AsRef<std::ffi::OsStr>,
    ) {
        self.pair(flag, source);
        self.0.push(dest.as_ref().to_owned());
    }

    /// A system directory read-only, or the same symlink where it is one (`/bin -> usr/bin`).
    fn system_dir(&mut self, dir: &Path) {
        match std::fs::read_link(dir) {
            Ok(target) => self.triple("--symlink", target, dir),
            Err(_) if dir.is_dir() => self.triple("--ro-bind", dir, dir),
            Err(_) => {}
        }
    }

    /// Covers `path` when something mounted shows it: a file by an empty read-only file, a
    /// directory by an empty read-only one. A path nothing shows needs no cover.
    fn hide(&mut self, path: &Path, work_tree: &Path) {
        let shown = SYSTEM_DIRS.iter().any(|dir| path.starts_with(dir))
            || path.starts_with(work_tree)
            || self
                .0
                .windows(2)
                .any(|pair| pair[0] == "--ro-bind-try" && path.starts_with(&pair[1]));
        if !shown {
            return;
        }
        match std::fs::metadata(path) {
            Ok(metadata) if metadata.is_dir() => {
                self.pair("--tmpfs", path);
                self.pair("--remount-ro", path);
            }
            Ok(_) => self.triple("--ro-bind", "/dev/null", path),
            Err(_) => {}
        }
    }
}

/// The one line that tells an operator how to get a working sandbox.
pub const HOW_TO_FIX: &str = "install bubblewrap (`apt-get install bubblewrap`), allow unprivileged \
user namespaces (`sysctl kernel.unprivileged_userns_clone=1`, `user.max_user_namespaces` above 0), \
or set exec.sandbox = \"none\" to run commands unconfined";

#[cfg(test)]
mod tests {
    use super::*;

    fn words(args: &[OsString]) -> String {
        args.iter()
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn a_confined_command_sees_system_and_toolchain_folders_but_not_hidden_or_other_ones() {
        let elsewhere = tempfile::tempdir().unwrap();
        let toolchain = elsewhere.path().join("jdk/bin/java");
        let secret = elsewhere.path().join("jdk/keys");
        let sandbox = Sandbox::new(
            SandboxMode::Bwrap,
            "bwrap",
            &[elsewhere.path().join("jdk")],
            std::slice::from_ref(&secret),
            Limits::default(),
        );
        assert!(sandbox.shows(Path::new("/usr/bin/env")));
        assert!(sandbox.shows(&toolchain));
        assert!(!sandbox.shows(&secret.join("key.pem")));
        assert!(!sandbox.shows(&elsewhere.path().join("other/bin/tool")));
        assert!(Sandbox::unconfined().shows(&elsewhere.path().join("other/bin/tool")));
    }

    #[test]
    fn a_jail_has_no_network_a_private_proc_and_a_read_only_git_dir() {
        let sandbox = Sandbox::new(
            SandboxMode::Bwrap,
            "bwrap",
            &[],
            &[PathBuf::from("/etc/hostname")],
            Limits::default(),
        );
        let args = words(
            &sandbox
                .jail("/srv/jobs/7/worktree")
                .bwrap_args(Path::new("/srv/jobs/7/worktree"), 3),
        );
        assert!(
            args.starts_with("--unshare-all --die-with-parent --new-session"),
            "{args}"
        );
        assert!(!args.contains("--share-net"), "{args}");
        assert!(
            args.contains("--proc /proc --dev /dev --tmpfs /tmp"),
            "{args}"
        );
        assert!(
            args.contains("--bind /srv/jobs/7/worktree /srv/jobs/7/worktree --ro-bind-try /srv/jobs/7/worktree/.git /srv/jobs/7/worktree/.git"),
            "{args}"
        );
        assert!(args.contains("--ro-bind /dev/null /etc/hostname"), "{args}");
        assert!(
            args.ends_with("--remount-ro / --chdir /srv/jobs/7/worktree --json-status-fd 3 --"),
            "{args}"
        );
    }

    #[test]
    fn a_folder_inside_git_is_mounted_after_git_so_it_keeps_its_own_access() {
        let sandbox = Sandbox::new(SandboxMode::Bwrap, "bwrap", &[], &[], Limits::default());
        let args = words(
            &sandbox
                .jail("/w")
                .with_dir("/w/.git/autofix/cache/tools/cargo-1", Access::Writable)
                .bwrap_args(Path::new("/w"), 3),
        );
        assert!(
            args.contains("--ro-bind-try /w/.git /w/.git --bind /w/.git/autofix/cache/tools/cargo-1 /w/.git/autofix/cache/tools/cargo-1"),
            "{args}"
        );
    }

    #[test]
    fn a_step_that_asks_for_the_network_shares_it() {
        let sandbox = Sandbox::new(SandboxMode::Bwrap, "bwrap", &[], &[], Limits::default());
        let args = words(
            &sandbox
                .jail("/w")
                .with_network(true)
                .bwrap_args(Path::new("/w"), 3),
        );
        assert!(args.starts_with("--unshare-all --share-net"), "{args}");
    }

    #[test]
    fn a_hidden_path_that_nothing_shows_needs_no_cover() {
        let sandbox = Sandbox::new(
            SandboxMode::Bwrap,
            "bwrap",
            &[],
            &[PathBuf::from("/var/lib/autofix")],
            Limits::default(),
        );
        let args = words(&sandbox.jail("/w").bwrap_args(Path::new("/w"), 3));
        assert!(!args.contains("/var/lib/autofix"), "{args}");
    }
}
