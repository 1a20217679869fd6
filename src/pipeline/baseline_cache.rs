//! The base commit's check results, kept on disk per base commit and configuration so a second
//! job on the same commit does not run the repository's checks on the base again.
//!
//! The key hashes the commit, the sandbox mode and every setup and validation command as
//! configured (argv, folder relative to the work tree, environment, timeout, network).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::checks::CheckRun;
use crate::config::repo::ValidationCommand;

/// Bumped when the stored shape or the meaning of a result changes.
const FORMAT: u32 = 1;

/// The results of the validation commands on one base commit, in command order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaseResults {
    pub format: u32,
    pub commit: String,
    pub runs: Vec<CheckRun>,
}

/// Where base results are kept; one JSON file per key.
#[derive(Debug, Clone)]
pub struct BaselineCache {
    dir: PathBuf,
}

impl BaselineCache {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        BaselineCache { dir: dir.into() }
    }

    /// The results stored under `key`, if any were stored and can still be read.
    pub fn load(&self, key: &str) -> Option<BaseResults> {
        let text = std::fs::read_to_string(self.path(key)).ok()?;
        serde_json::from_str::<BaseResults>(&text)
            .ok()
            .filter(|results| results.format == FORMAT)
    }

    pub fn store(&self, key: &str, commit: &str, runs: &[CheckRun]) -> anyhow::Result<()> {
        let results = BaseResults {
            format: FORMAT,
            commit: commit.to_string(),
            runs: runs.to_vec(),
        };
        let json = serde_json::to_vec_pretty(&results)?;
        let path = self.path(key);
        self.write_whole(&path, &json)
            .with_context(|| format!("cannot write {}", path.display()))
    }

    /// Two jobs on the same commit may store at once: each writes its own temporary file and
    /// renames it into place, so a reader sees one whole result or none.
    fn write_whole(&self, path: &Path, json: &[u8]) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let mut temp = tempfile::NamedTempFile::new_in(&self.dir)?;
        temp.write_all(json)?;
        temp.persist(path).map_err(|err| err.error)?;
        Ok(())
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.json"))
    }
}

/// The key of a base run: what could change its results.
pub fn key(
    commit: &str,
    sandbox_mode: &str,
    root: &Path,
    setup: &[ValidationCommand],
    validation: &[ValidationCommand],
) -> String {
    let describe_all = |commands: &[ValidationCommand]| -> Vec<serde_json::Value> {
        commands
            .iter()
            .map(|command| describe(command, root))
            .collect()
    };
    let described = serde_json::json!({
        "format": FORMAT,
        "commit": commit,
        "sandbox": sandbox_mode,
        "setup": describe_all(setup),
        "validation": describe_all(validation),
    });
    let digest = Sha256::digest(described.to_string().as_bytes());
    hex::encode(&digest[..16])
}

/// A command as configured, with its folder relative to the work tree (each job has its own).
pub(super) fn describe(command: &ValidationCommand, root: &Path) -> serde_json::Value {
    let spec = &command.spec;
    let cwd = spec.cwd.strip_prefix(root).unwrap_or(&spec.cwd);
    let argv: Vec<&str> = std::iter::once(spec.program.as_str())
        .chain(spec.args.iter().map(String::as_str))
        .collect();
    serde_json::json!({
        "name": command.name,
        "argv": argv,
        "cwd": cwd.display().to_string(),
        "timeout_ms": spec.timeout.as_millis() as u64,
        "env_allow": spec.env_allow,
        "env_set": spec.env_set,
        "network": command.network,
        "fail_on_warnings": command.fail_on_warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::CommandSpec;
    use crate::pipeline::test_report::CommandReport;

    fn command(root: &Path, program: &str) -> ValidationCommand {
        ValidationCommand {
            name: "test".into(),
            spec: CommandSpec::new(program, ["-q"], root),
            fail_on_warnings: false,
            network: false,
        }
    }

    #[test]
    fn the_key_follows_the_commit_and_the_commands_not_the_work_tree_path() {
        let (one, two) = (Path::new("/jobs/1/worktree"), Path::new("/jobs/2/worktree"));
        let base = key("abc", "bwrap", one, &[], &[command(one, "pytest")]);
        assert_eq!(
            base,
            key("abc", "bwrap", two, &[], &[command(two, "pytest")])
        );
        assert_ne!(
            base,
            key("abd", "bwrap", one, &[], &[command(one, "pytest")])
        );
        assert_ne!(
            base,
            key("abc", "none", one, &[], &[command(one, "pytest")])
        );
        assert_ne!(base, key("abc", "bwrap", one, &[], &[command(one, "tox")]));
        assert_ne!(
            base,
            key(
                "abc",
                "bwrap",
                one,
                &[command(one, "pip")],
                &[command(one, "pytest")]
            )
        );
    }

    #[test]
    fn stored_results_come_back_and_a_damaged_file_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let cache = BaselineCache::new(dir.path().join("baselines"));
        assert!(cache.load("k").is_none());
        let report = CommandReport {
            name: "test".into(),
            command: vec!["pytest".into()],
            exit_code: Some(1),
            timed_out: false,
            passed: false,
            duration_ms: 5,
            warnings: 0,
            output_truncated: false,
            parser: None,
            tests: None,
        };
        let runs = vec![CheckRun::new(report.clone(), Some(report))];
        cache.store("k", "abc", &runs).unwrap();
        assert_eq!(cache.load("k").unwrap().runs, runs);
        std::fs::write(dir.path().join("baselines/k.json"), "{ not json").unwrap();
        assert!(cache.load("k").is_none());
    }
}
