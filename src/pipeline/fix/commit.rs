//! The feature branch and the one commit on it; on failure, everything put back (or the work
//! in progress kept when the repository asks for it).

use std::collections::BTreeMap;

use super::{Job, Ready};
use crate::failure::{Failure, FailureCode, Stage};
use crate::git::{
    BranchName, BranchOutcome, CommitKind, CommitMessage, CommitSha, FileContent, slugify,
};
use crate::pipeline::plan::Plan;
use crate::pipeline::triage::Triage;

impl Job<'_> {
    /// The commit type: what the issue's labels say when one maps, else the triage's call.
    pub(super) fn commit_kind(&self, triage: &Triage) -> CommitKind {
        let config = &self.ready.config;
        let labelled = self.ready.issue.labels.iter().any(|label| {
            config
                .commit
                .type_by_label
                .keys()
                .any(|known| known.eq_ignore_ascii_case(label))
        });
        if labelled {
            config.commit_type_for(&self.ready.issue.labels)
        } else {
            triage.classification
        }
    }

    pub(super) async fn branch(
        &mut self,
        triage: &Triage,
    ) -> Result<(BranchName, BranchOutcome), Failure> {
        let ready = self.ready;
        let failed = |err: crate::git::GitError| {
            Failure::new(err.failure_code(), Stage::Branch, err.to_string())
        };
        if self.options.revision.is_some() {
            // The change request's branch, as it is: its commits, a person's included, stay.
            let branch = ready.original_branch.clone();
            self.summary.branch = Some(branch.to_string());
            self.log.line(&format!(
                "branch: {branch} (the change request's, at {})",
                ready.baseline
            ));
            let head = ready.baseline.clone();
            return Ok((branch, BranchOutcome::Reused { head }));
        }
        let name = ready.config.branch_name(
            self.commit_kind(triage),
            ready.number,
            &slugify(&ready.issue.title),
        );
        let branch = BranchName::new(&name).map_err(failed)?;
        let outcome = ready
            .workspace
            .prepare_branch(&branch, &ready.baseline, &self.job_id())
            .map_err(failed)?;
        self.summary.branch = Some(branch.to_string());
        self.log.line(&format!(
            "branch: {branch} ({})",
            match outcome {
                BranchOutcome::Created { .. } => "created",
                BranchOutcome::Reused { .. } => "reused",
            }
        ));
        Ok((branch, outcome))
    }

    pub(super) fn commit(
        &mut self,
        triage: &Triage,
        plan: &Plan,
        branch: &BranchName,
        work_base: &CommitSha,
    ) -> Result<(), Failure> {
        let ready = self.ready;
        let failed = |err: crate::git::GitError| {
            Failure::new(err.failure_code(), Stage::Commit, err.to_string())
        };
        let scope = plan
            .scope
            .clone()
            .unwrap_or_else(|| ready.config.commit.default_scope.clone());
        let mut body = String::new();
        if !plan.plan_steps.is_empty() {
            body.push_str("Plan:\n");
        }
        // One line per step: a line break in the model's words cannot add a trailer.
        for step in &plan.plan_steps {
            let step = step.split_whitespace().collect::<Vec<_>>().join(" ");
            body.push_str(&format!("- {step}\n"));
        }
        let message = CommitMessage::new(
            self.commit_kind(triage),
            &scope,
            &plan.commit_summary,
            Some(&body),
            Some(ready.number),
            &self.options.identity,
            Some(&self.job_id()),
        )
        .map_err(failed)?;
        let files = files_to_commit(self.ready, &self.applied, work_base, Stage::Commit)?;
        self.summary.changed_files = files.iter().map(|(path, _)| path.to_string()).collect();
        let sha = ready
            .workspace
            .commit_contents(branch, work_base, &message, &files, &self.options.identity)
            .map_err(failed)?;
        self.log
            .line(&format!("commit: {sha} on {branch}: {}", message.subject()));
        self.summary.committed = true;
        self.summary.commit = Some(sha.to_string());
        self.summary.subject = Some(message.subject().to_string());
        Ok(())
    }

    /// After a failure: the work tree back at its base, the original branch checked out, and
    /// the feature branch gone (or kept with the work in progress when configured so).
    pub(super) fn put_back(
        &mut self,
        branch: &BranchName,
        outcome: &BranchOutcome,
        work_base: &CommitSha,
    ) {
        let ready = self.ready;
        let ws = &ready.workspace;
        let keep_branch = ready.config.branch.keep_on_failure;
        if keep_branch && self.keep_work_in_progress(branch, work_base) {
            self.log
                .line(&format!("kept the work in progress on {branch}"));
        } else if let Err(err) = ws.rollback(work_base) {
            self.log.line(&format!("rollback failed: {err}"));
            return;
        }
        if let Err(err) = ws.checkout(&ready.original_branch) {
            self.log.line(&format!(
                "cannot return to {}: {err}",
                ready.original_branch
            ));
            return;
        }
        if !keep_branch && matches!(outcome, BranchOutcome::Created { .. }) {
            match ws.delete_branch(branch) {
                Ok(_) => self.log.line(&format!("deleted {branch}")),
                Err(err) => self.log.line(&format!("cannot delete {branch}: {err}")),
            }
        }
    }

    /// Commits the model's work so far as a work-in-progress commit on the feature branch.
    pub(super) fn keep_work_in_progress(
        &mut self,
        branch: &BranchName,
        work_base: &CommitSha,
    ) -> bool {
        let ready = self.ready;
        let Ok(files) = files_to_commit(self.ready, &self.applied, work_base, Stage::Commit) else {
            return false;
        };
        if files.is_empty() {
            return false;
        }
        let Ok(message) = CommitMessage::new(
            CommitKind::Chore,
            "autofix",
            &format!("work in progress on #{}, not passing yet", ready.number),
            None,
            Some(ready.number),
            &self.options.identity,
            Some(&self.job_id()),
        ) else {
            return false;
        };
        let committed = ready
            .workspace
            .commit_contents(branch, work_base, &message, &files, &self.options.identity)
            .is_ok();
        let _ = self.keep_only_the_model_work(Stage::Commit);
        committed
    }
}

/// The model's files as they will be committed on top of `base`, each checked against the
/// denied paths again: no path a rule protects is committed, however it got into the list.
pub(super) fn files_to_commit<'a>(
    ready: &Ready,
    applied: &'a BTreeMap<String, Option<String>>,
    base: &CommitSha,
    stage: Stage,
) -> Result<Vec<FileContent<'a>>, Failure> {
    let mut files = Vec::new();
    for (path, content) in applied {
        if let Some(rule) = ready.protected.rule_for(path, false) {
            return Err(Failure::new(
                FailureCode::WriteScopeViolation,
                stage,
                format!("`{path}` may not be committed: it is protected by `{rule}`"),
            ));
        }
        let unchanged_from_base = ready
            .workspace
            .file_at(base, path)
            .ok()
            .is_some_and(|before| before.as_deref() == content.as_ref().map(|t| t.as_bytes()));
        if !unchanged_from_base {
            files.push((path.as_str(), content.as_ref().map(|text| text.as_bytes())));
        }
    }
    Ok(files)
}
