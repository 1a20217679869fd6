//! The job's dependency caches: opened before setup, setup put back from a snapshot or run and
//! kept as one, and the folders and variables each command of the job is given.

use super::Job;
use crate::edits::paths;
use crate::exec::{Access, CommandSpec, Jail};
use crate::failure::{Failure, Stage};
use crate::pipeline::dep_cache::{JobCaches, Lookup, Phase, TreeState};

impl Job<'_> {
    /// Opens the repository's caches for this job. A cache that cannot be used is said in the
    /// run log and the job goes on without it: it only saves time.
    pub(super) fn open_caches(&mut self, files: &[String]) {
        let ws = &self.ready.workspace;
        let home = &self.ready.cache_home;
        match JobCaches::open(&self.options.dep_cache, home, ws.root(), files) {
            Ok(None) => self
                .log
                .line("cache: off (exec.cache_max_bytes = 0): every tool downloads afresh"),
            Ok(Some(caches)) => {
                for line in caches.describe() {
                    self.log.line(&format!("cache: {line}"));
                }
                self.deps = Some(caches);
            }
            Err(err) => self
                .log
                .line(&format!("cache: not used in this job: {err}")),
        }
    }

    /// The files of the work tree git sees; empty (no cache keys) when they cannot be listed.
    pub(super) fn listed_files(&self) -> Vec<String> {
        paths::project_files(self.ready.workspace.root()).unwrap_or_else(|err| {
            self.log
                .line(&format!("cache: cannot list the files: {err}"));
            Vec::new()
        })
    }

    /// The key of this job's setup snapshot, when the caches are in use.
    pub(super) fn setup_key(&self) -> Option<String> {
        let caches = self.deps.as_ref()?;
        Some(caches.setup_key(
            &self.ready.setup,
            self.ready.workspace.root(),
            self.options.settings.sandbox.mode().as_str(),
        ))
    }

    /// Puts back what setup left last time for `key` instead of running it; whether it did.
    /// A restore that stopped halfway leaves the tree as the checkout had it.
    pub(super) fn restored_setup(&mut self, key: &str) -> Result<bool, Failure> {
        let ws = &self.ready.workspace;
        let Some(caches) = self.deps.as_mut() else {
            return Ok(false);
        };
        let tracked = |path: &str| ws.tracks(path).unwrap_or(true);
        match caches.restore_setup(key, ws.root(), &self.ready.cache_dir, &tracked) {
            Lookup::Restored { snapshot, paths } => {
                self.log.line(&format!(
                    "setup: restored from the cache (snapshot {snapshot}, {paths} path(s)) instead of running {} command(s)",
                    self.ready.setup.len()
                ));
                Ok(true)
            }
            Lookup::Missed { reason, touched } => {
                self.log
                    .line(&format!("setup: running the commands ({reason})"));
                if touched {
                    let git = |err: crate::git::GitError| {
                        Failure::new(err.failure_code(), Stage::Setup, err.to_string())
                    };
                    ws.discard(&ws.changed_paths().map_err(git)?).map_err(git)?;
                }
                Ok(false)
            }
        }
    }

    /// The tree before setup, when what setup leaves can be kept: only a tree holding nothing
    /// but the repository's own files gives a snapshot that fits every fresh checkout.
    pub(super) fn tree_before_setup(&self, files: &[String]) -> Option<TreeState> {
        self.deps.as_ref()?;
        let root = self.ready.workspace.root();
        let state = match TreeState::read(root) {
            Ok(state) => state,
            Err(err) => {
                self.log
                    .line(&format!("cache: setup will not be kept: {err}"));
                return None;
            }
        };
        let leftovers = state.untracked_files(files);
        if let Some(first) = leftovers.first() {
            self.log.line(&format!(
                "cache: setup will not be kept: the tree already holds {} file(s) the repository does not track (`{first}`…)",
                leftovers.len()
            ));
            return None;
        }
        Some(state)
    }

    /// Keeps what setup changed since `before` as the snapshot of `key`.
    pub(super) fn keep_setup(&mut self, key: &str, before: &TreeState) {
        let root = self.ready.workspace.root();
        let Some(caches) = self.deps.as_mut() else {
            return;
        };
        let line = match caches.save_setup(key, root, &self.ready.cache_dir, before) {
            Ok((name, saved)) => format!(
                "cache: setup kept as snapshot {name} ({} path(s), {}, {})",
                saved.entries,
                mebibytes(saved.bytes),
                if saved.relocatable {
                    "fits any work tree"
                } else {
                    "fits this work tree only: binary files name its path"
                }
            ),
            Err(err) => format!("cache: setup not kept: {err}"),
        };
        self.log.line(&line);
    }

    /// Once setup is done: the folders measured, validation's private build folders made, and
    /// the pool brought within `exec.cache_max_bytes`.
    pub(super) fn caches_after_setup(&mut self) {
        self.settle_caches(JobCaches::after_setup);
    }

    /// Once setup has failed: what it downloaded counted, and the pool within its bound.
    pub(super) fn caches_after_failed_setup(&mut self) {
        self.settle_caches(JobCaches::after_failed_setup);
    }

    fn settle_caches(
        &mut self,
        settle: impl FnOnce(&mut JobCaches) -> std::io::Result<Vec<(String, u64)>>,
    ) {
        let Some(caches) = self.deps.as_mut() else {
            return;
        };
        match settle(caches) {
            Ok(evicted) => {
                for (unit, bytes) in evicted {
                    self.log.line(&format!(
                        "cache: evicted {unit} ({}), the least recently used",
                        mebibytes(bytes)
                    ));
                }
            }
            Err(err) => {
                self.log
                    .line(&format!("cache: not used for the rest of the job: {err}"));
                self.deps = None;
            }
        }
    }

    /// `jail` and `spec` given the cache folders and variables of a command with `access` to
    /// the caches (writable: setup). A variable the repository sets itself is left as it is.
    pub(super) fn with_caches(
        &self,
        mut jail: Jail,
        mut spec: CommandSpec,
        access: Access,
    ) -> (Jail, CommandSpec) {
        let Some(caches) = &self.deps else {
            return (jail, spec);
        };
        let phase = match access {
            Access::Writable => Phase::Setup,
            Access::ReadOnly => Phase::Validation,
        };
        for (dir, access) in caches.mounts(phase) {
            jail = jail.with_dir(dir, access);
        }
        for (name, value) in caches.variables(phase) {
            if !spec.env_set.iter().any(|(set, _)| *set == name) {
                spec = spec.with_env(name, value);
            }
        }
        (jail, spec)
    }
}

fn mebibytes(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}
