//! The work tree as the job writes it: files written through the anchored tree, and put back to
//! the model's work after every command.

use std::collections::BTreeMap;

use super::Job;
use crate::anchored::{Entry, Permissions, Tree, TreeError, Way};
use crate::edits::paths;
use crate::failure::{Failure, FailureCode, Stage};

impl Job<'_> {
    /// Writes `files` into the work tree as the change to validate, never through a link the
    /// new base or its checks put on the way.
    pub(super) fn write_files(
        &mut self,
        files: &BTreeMap<String, Option<String>>,
    ) -> Result<(), Failure> {
        let tree = self.tree(Stage::Validate)?;
        for (path, content) in files {
            let path = paths::normalise(path).map_err(|err| {
                Failure::new(
                    FailureCode::WriteScopeViolation,
                    Stage::Validate,
                    err.to_string(),
                )
            })?;
            let written = match content {
                Some(text) => tree.write(
                    &path,
                    text.as_bytes(),
                    Permissions::KeepExisting,
                    Way::Refuse,
                ),
                None => tree.remove(&path, Way::Refuse),
            };
            written.map_err(|err| tree_failure(Stage::Validate, &path, "write", err))?;
            self.applied.insert(path, content.clone());
        }
        Ok(())
    }

    /// The work tree's anchored handle, through which every write of the job goes.
    pub(super) fn tree(&self, stage: Stage) -> Result<Tree, Failure> {
        Tree::open(self.ready.workspace.root()).map_err(|err| {
            Failure::new(
                FailureCode::Preflight,
                stage,
                format!("cannot open the work tree: {err}"),
            )
        })
    }

    /// Puts the tree back to the model's work. First everything a command changed or left
    /// (besides what setup fetched) is discarded, links and files that took a folder's place
    /// included; then a file the model wrote that a command changed gets the model's content
    /// again, written through real folders only. Each is listed in the run log.
    pub(super) fn keep_only_the_model_work(&mut self, stage: Stage) -> Result<(), Failure> {
        let tree = self.tree(stage)?;
        let ws = &self.ready.workspace;
        let failed =
            |err: crate::git::GitError| Failure::new(err.failure_code(), stage, err.to_string());
        let changed_by_a_command: Vec<&String> = self
            .applied
            .iter()
            .filter(|(path, content)| !holds(&tree, path, content.as_deref()))
            .map(|(path, _)| path)
            .collect();
        let left: Vec<String> = ws
            .changed_paths()
            .map_err(failed)?
            .into_iter()
            .filter(|path| !self.applied.contains_key(path) && !self.setup_outputs.contains(path))
            .collect();
        for path in &left {
            self.log.line(&format!(
                "{stage}: discarded `{path}`, which a command left in the tree"
            ));
        }
        ws.discard(&left).map_err(failed)?;
        for path in changed_by_a_command {
            self.log.line(&format!(
                "{stage}: `{path}` was changed by a command; restored the model's version"
            ));
            let restored = match &self.applied[path] {
                Some(text) => {
                    tree.write(path, text.as_bytes(), Permissions::KeepExisting, Way::Clear)
                }
                None => tree.remove(path, Way::Clear),
            };
            restored.map_err(|err| tree_failure(stage, path, "restore", err))?;
        }
        Ok(())
    }
}

/// Whether the work tree holds exactly `wanted` at `path` (`None`: nothing there), seen
/// without following a link; a link anywhere on the way means it does not.
pub(super) fn holds(tree: &Tree, path: &str, wanted: Option<&str>) -> bool {
    match (tree.entry(path), wanted) {
        (Ok(Entry::File { bytes, .. }), Some(text)) if bytes == text.len() as u64 => tree
            .read(path, bytes)
            .is_ok_and(|read| read.as_deref() == Some(text.as_bytes())),
        (Ok(Entry::Missing), None) => true,
        _ => false,
    }
}

/// A write the work tree refused: a link or a file in a folder's way is outside what the job
/// may write; anything else is the machine's fault.
pub(super) fn tree_failure(stage: Stage, path: &str, action: &str, err: TreeError) -> Failure {
    let code = match err {
        TreeError::Link { .. } | TreeError::NotAFolder { .. } | TreeError::NotRelative { .. } => {
            FailureCode::WriteScopeViolation
        }
        _ => FailureCode::Preflight,
    };
    Failure::new(code, stage, format!("cannot {action} `{path}`: {err}"))
}
