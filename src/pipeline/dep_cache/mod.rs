//! Dependency caches kept between jobs on one repository: a folder per tool keyed by the files
//! its dependencies are declared in, the setup snapshots, and what each command is shown of them.
//!
//! Layout of a pool (`<workdir>/deps` for the bot, `<git common dir>/autofix/cache` for
//! `autofix fix`): `<repository>/tools/<tool>-<key>/` (mounted: writable for `[[setup]]`,
//! read-only for validation), `<repository>/setups/<key>/` (never mounted), and the pool's own
//! `stamps/`, `locks/`, `scratch/` (each job's private build folders).

mod copy;
mod pool;
mod snapshot;
mod tools;

pub use snapshot::{Saved, TreeState};
pub use tools::{Phase, Tool};

use std::io;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::config::repo::ValidationCommand;
use crate::exec::Access;
use pool::{InUse, Pool, Scratch};
use snapshot::RestoreError;

/// Bumped when what a key covers changes.
const KEY_FORMAT: u32 = 1;

/// The default bound of a pool: 10 GiB.
pub const DEFAULT_MAX_BYTES: u64 = 10 * 1024 * 1024 * 1024;

/// Where a job's dependency caches live and how big their pool may grow.
#[derive(Debug, Clone)]
pub struct DepCacheOptions {
    /// The pool, bounded as a whole; `None`: `<git common dir>/autofix/cache`.
    pub pool: Option<PathBuf>,
    /// The repository's folder inside the pool (`github/acme/widgets`); empty: the pool itself.
    pub repository: String,
    /// The pool's bound in bytes (`exec.cache_max_bytes`); 0: no dependency cache.
    pub max_bytes: u64,
}

impl Default for DepCacheOptions {
    fn default() -> Self {
        DepCacheOptions {
            pool: None,
            repository: String::new(),
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

/// One tool's folder as this job uses it.
#[derive(Debug)]
struct ToolFolder {
    tool: Tool,
    key: String,
    unit: pool::Unit,
    dir: PathBuf,
    /// Made by this job: nothing was cached for this key before.
    fresh: bool,
}

/// The caches one job uses, held (never evicted) until it is dropped.
#[derive(Debug)]
pub struct JobCaches {
    pool: Pool,
    repository: String,
    tools: Vec<ToolFolder>,
    scratch: Option<Scratch>,
    held: Vec<InUse>,
    goflags: Option<String>,
}

/// How setup's snapshot lookup went.
#[derive(Debug)]
pub enum Lookup {
    /// Put back: the snapshot's name and the number of paths restored.
    Restored { snapshot: String, paths: usize },
    /// Setup must run; why no snapshot could be used. With `touched`, a restore stopped
    /// halfway: the repository's own files must be put back first.
    Missed { reason: String, touched: bool },
}

impl JobCaches {
    /// The caches of the repository whose work tree is `root` and whose tracked files are
    /// `files`; `None` when `options.max_bytes` is 0. Folders are made as needed.
    pub fn open(
        options: &DepCacheOptions,
        git_common_dir: &Path,
        root: &Path,
        files: &[String],
    ) -> io::Result<Option<JobCaches>> {
        if options.max_bytes == 0 {
            return Ok(None);
        }
        let repository = options.repository.trim_matches('/').to_string();
        if repository
            .split('/')
            .any(|part| part == ".." || part == "." || (part.is_empty() && !repository.is_empty()))
        {
            return Err(io::Error::other(format!(
                "`{repository}` cannot name a folder of the dependency cache"
            )));
        }
        let pool_dir = options
            .pool
            .clone()
            .unwrap_or_else(|| git_common_dir.join("autofix").join("cache"));
        let pool = Pool::new(pool_dir, options.max_bytes);
        let mut caches = JobCaches {
            pool,
            repository,
            tools: Vec::new(),
            scratch: None,
            held: Vec::new(),
            goflags: std::env::var("GOFLAGS").ok(),
        };
        for (tool, key) in tool_keys(root, files)? {
            let unit = caches.unit(&format!("tools/{}-{key}", tool.name()));
            caches.held.push(caches.pool.use_unit(&unit)?);
            let dir = caches.pool.path(&unit);
            let fresh = !dir.is_dir();
            std::fs::create_dir_all(&dir)?;
            caches.pool.stamp(&unit, None)?;
            if tool == Tool::Cargo {
                keep_operator_cargo_config(&dir.join("home"))?;
            }
            caches.tools.push(ToolFolder {
                tool,
                key,
                unit,
                dir,
                fresh,
            });
        }
        Ok(Some(caches))
    }

    /// One line per tool folder: its name and whether it was there already.
    pub fn describe(&self) -> Vec<String> {
        self.tools
            .iter()
            .map(|folder| {
                format!(
                    "{} folder {}-{} ({})",
                    folder.tool.name(),
                    folder.tool.name(),
                    folder.key,
                    if folder.fresh {
                        "new: its dependency files changed or it was never filled"
                    } else {
                        "reused"
                    }
                )
            })
            .collect()
    }

    /// The folders a command of `phase` is shown and how.
    pub fn mounts(&self, phase: Phase) -> Vec<(PathBuf, Access)> {
        let access = match phase {
            Phase::Setup => Access::Writable,
            Phase::Validation => Access::ReadOnly,
        };
        let mut mounts: Vec<(PathBuf, Access)> = self
            .tools
            .iter()
            .map(|folder| (folder.dir.clone(), access))
            .collect();
        if let (Phase::Validation, Some(scratch)) = (phase, &self.scratch) {
            mounts.push((scratch.path().to_path_buf(), Access::Writable));
        }
        mounts
    }

    /// The variables that point each tool at its folder during `phase`.
    pub fn variables(&self, phase: Phase) -> Vec<(String, String)> {
        let private = self
            .scratch
            .as_ref()
            .map_or_else(PathBuf::new, |scratch| scratch.path().to_path_buf());
        self.tools
            .iter()
            .flat_map(|folder| {
                folder.tool.variables(
                    &folder.dir,
                    &private.join(folder.tool.name()),
                    phase,
                    self.goflags.as_deref(),
                )
            })
            .collect()
    }

    /// The key of the setup snapshot: the setup commands as configured, every tool's key, and
    /// the sandbox mode. The work tree's path is not in it: a snapshot is moved on restore.
    pub fn setup_key(&self, setup: &[ValidationCommand], root: &Path, sandbox: &str) -> String {
        let tools: Vec<String> = self
            .tools
            .iter()
            .map(|folder| format!("{}-{}", folder.tool.name(), folder.key))
            .collect();
        let described = serde_json::json!({
            "format": KEY_FORMAT,
            "sandbox": sandbox,
            "setup": setup.iter().map(|command| super::baseline_cache::describe(command, root)).collect::<Vec<_>>(),
            "tools": tools,
        });
        hex::encode(&Sha256::digest(described.to_string().as_bytes())[..16])
    }

    /// Puts back the snapshot of `key` into the work tree at `root` (and the job's `cache_dir`)
    /// when there is one and the tool folders it was made with are all still there.
    /// `tracked(path)`: whether the repository holds `path`.
    pub fn restore_setup(
        &mut self,
        key: &str,
        root: &Path,
        cache_dir: &Path,
        tracked: &dyn Fn(&str) -> bool,
    ) -> Lookup {
        if let Some(folder) = self.tools.iter().find(|folder| folder.fresh) {
            return Lookup::Missed {
                reason: format!(
                    "the {} folder is new, so its downloads are not there",
                    folder.tool.name()
                ),
                touched: false,
            };
        }
        let candidates = [key.to_string(), pinned_name(key, root)];
        for name in candidates {
            let unit = self.unit(&format!("setups/{name}"));
            let in_use = match self.pool.use_unit(&unit) {
                Ok(in_use) => in_use,
                Err(err) => {
                    return Lookup::Missed {
                        reason: err.to_string(),
                        touched: false,
                    };
                }
            };
            let dir = self.pool.path(&unit);
            if !dir.join("manifest.json").is_file() {
                continue;
            }
            self.held.push(in_use);
            return match snapshot::restore(&dir, root, cache_dir, tracked) {
                Ok(paths) => {
                    let _ = self.pool.stamp(&unit, None);
                    Lookup::Restored {
                        snapshot: name,
                        paths,
                    }
                }
                Err(RestoreError::NotRelocatable(_)) => continue,
                Err(err) => Lookup::Missed {
                    reason: format!("snapshot {name}: {err}"),
                    touched: err.touched_the_tree(),
                },
            };
        }
        Lookup::Missed {
            reason: format!("no snapshot {key} yet"),
            touched: false,
        }
    }

    /// Keeps what setup changed in the tree since `before`, and wrote into the job's
    /// `cache_dir`, as the snapshot of `key`. Returns the snapshot's name and what it holds.
    pub fn save_setup(
        &mut self,
        key: &str,
        root: &Path,
        cache_dir: &Path,
        before: &TreeState,
    ) -> io::Result<(String, Saved)> {
        let parent = self.pool.path(&self.unit("setups"));
        let pinned = pinned_name(key, root);
        let saved = snapshot::save(root, before, cache_dir, &parent, |relocatable| {
            if relocatable {
                key.to_string()
            } else {
                pinned.clone()
            }
        })?;
        let name = saved
            .dir
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        let unit = self.unit(&format!("setups/{name}"));
        self.held.push(self.pool.use_unit(&unit)?);
        self.pool.stamp(&unit, Some(saved.bytes))?;
        Ok((name, saved))
    }

    /// After setup: each tool folder measured, the job's private copies of the build folders
    /// made for validation, and the pool brought within its bound. Returns what was evicted.
    pub fn after_setup(&mut self) -> io::Result<Vec<(String, u64)>> {
        for folder in &self.tools {
            self.pool.measure(&folder.unit)?;
        }
        self.copy_build_folders()?;
        self.pool.evict()
    }

    /// After a setup that failed: what it downloaded is counted, and the pool brought within
    /// its bound. Returns what was evicted.
    pub fn after_failed_setup(&mut self) -> io::Result<Vec<(String, u64)>> {
        for folder in &self.tools {
            self.pool.measure(&folder.unit)?;
        }
        self.pool.evict()
    }

    /// The job's private copies of the build folders validation must write.
    fn copy_build_folders(&mut self) -> io::Result<()> {
        let needs_copies = self
            .tools
            .iter()
            .any(|folder| !folder.tool.written_by_builds().is_empty());
        if needs_copies && self.scratch.is_none() {
            let scratch = self.pool.scratch()?;
            for folder in &self.tools {
                for name in folder.tool.written_by_builds() {
                    let private = scratch.path().join(folder.tool.name()).join(name);
                    std::fs::create_dir_all(private.parent().unwrap_or(scratch.path()))?;
                    let shared = folder.dir.join(name);
                    if shared.is_dir() {
                        copy::copy_tree(&shared, &private)?;
                    } else {
                        std::fs::create_dir_all(&private)?;
                    }
                }
            }
            self.scratch = Some(scratch);
        }
        Ok(())
    }

    fn unit(&self, rest: &str) -> String {
        if self.repository.is_empty() {
            rest.to_string()
        } else {
            format!("{}/{rest}", self.repository)
        }
    }
}

/// The name of a snapshot that only fits the work tree at `root`.
fn pinned_name(key: &str, root: &Path) -> String {
    let digest = Sha256::digest(root.as_os_str().as_encoded_bytes());
    format!("{key}-at-{}", hex::encode(&digest[..6]))
}

/// Each tool some of whose dependency files the repository tracks, with the hash of those
/// files (paths and contents).
pub fn tool_keys(root: &Path, files: &[String]) -> io::Result<Vec<(Tool, String)>> {
    let mut keys = Vec::new();
    for tool in Tool::ALL {
        let declaring: Vec<&String> = files
            .iter()
            .filter(|path| tool.declared_in(path.rsplit('/').next().unwrap_or(path)))
            .collect();
        if declaring.is_empty() {
            continue;
        }
        let mut hasher = Sha256::new();
        hasher.update(format!("{KEY_FORMAT}\0{}\0", tool.name()));
        for path in declaring {
            let full = root.join(path);
            let content = match std::fs::symlink_metadata(&full)? {
                metadata if metadata.file_type().is_symlink() => std::fs::read_link(&full)?
                    .as_os_str()
                    .as_encoded_bytes()
                    .to_vec(),
                _ => std::fs::read(&full)?,
            };
            hasher.update(path.as_bytes());
            hasher.update([0]);
            hasher.update(Sha256::digest(&content));
        }
        keys.push((tool, hex::encode(&hasher.finalize()[..12])));
    }
    Ok(keys)
}

/// The operator's cargo configuration copied into the cache's cargo home, so a registry
/// mirror or replacement still applies; credentials stay where they are.
fn keep_operator_cargo_config(cargo_home: &Path) -> io::Result<()> {
    let Some(config) = tools::operator_cargo_config() else {
        return Ok(());
    };
    let text = std::fs::read_to_string(&config)?;
    let Some(kept) = tools::without_credentials(&text) else {
        return Ok(()); // not TOML cargo would read either
    };
    std::fs::create_dir_all(cargo_home)?;
    std::fs::write(cargo_home.join("config.toml"), kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_lockfile_changes_only_its_own_tools_key() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("Cargo.lock"), "one").unwrap();
        std::fs::write(root.join("package-lock.json"), "{}").unwrap();
        let files = vec!["Cargo.lock".to_string(), "package-lock.json".to_string()];
        let first = tool_keys(root, &files).unwrap();

        std::fs::write(root.join("Cargo.lock"), "two").unwrap();
        let second = tool_keys(root, &files).unwrap();

        assert_eq!(first.len(), 2);
        assert_eq!(first[0].0, Tool::Node);
        assert_eq!(first[0], second[0], "npm's key stays");
        assert_ne!(first[1].1, second[1].1, "cargo's key changes");
    }

    #[test]
    fn a_repository_path_that_climbs_out_of_the_pool_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let options = DepCacheOptions {
            pool: Some(dir.path().join("pool")),
            repository: "github/../../etc".into(),
            max_bytes: 1,
        };
        let err = JobCaches::open(&options, dir.path(), dir.path(), &[]).unwrap_err();
        assert!(err.to_string().contains("cannot name a folder"), "{err}");
    }
}
