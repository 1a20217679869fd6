//! The reproduction a change request was opened with, read back from the checkpoint of the job
//! that opened it, so that a revision or a replay onto a new base runs its tests again.

use crate::pipeline::proof::Reproduction;
use crate::store::StoreError;

use super::JobRun;
use super::checkpoint::Checkpoint;
use super::stop::Stop;

impl JobRun {
    /// The reproduction of the issue's recorded change request, as the job that opened it
    /// kept it; `None` without a change request, or when that job kept none (it ran before
    /// reproductions existed, or its checkpoint is gone).
    pub(super) async fn earlier_reproduction(&self) -> Result<Option<Reproduction>, Stop> {
        let store = &self.ctx.store;
        let Some(record) = store.change_request_for_issue(&self.job.key).await? else {
            return Ok(None);
        };
        let detail = match store.job_show(record.job).await {
            Ok(detail) => detail,
            Err(StoreError::JobNotFound(_)) => return Ok(None),
            Err(error) => return Err(error.into()),
        };
        Ok(opened_with(detail.checkpoint.as_deref()))
    }
}

/// The reproduction a stored checkpoint's committed change carries, if it can be read.
fn opened_with(checkpoint: Option<&str>) -> Option<Reproduction> {
    let checkpoint: Checkpoint = serde_json::from_str(checkpoint?).ok()?;
    checkpoint.fixed?.reproduction
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::repo::ReproduceMode;

    #[test]
    fn the_reproduction_is_read_from_the_opening_jobs_committed_change() {
        let reproduction = Reproduction::none(ReproduceMode::Preferred, 1, "no test failed");
        let checkpoint = serde_json::json!({
            "authorized": true,
            "issue": null,
            "status": {"job": 1, "requested_by": "octocat", "done": [], "current": null,
                       "notes": [], "outcome": null},
            "status_comment": null,
            "default_branch": "main",
            "fixed": {
                "branch": "autofix/issue-7", "commit": "0123456", "subject": "fix: x",
                "plan_steps": [], "changed_files": [], "validation": [], "repairs": 0,
                "input_tokens": 0, "output_tokens": 0,
                "pull_request": {}, "keep_on_failure": false,
                "reproduction": reproduction,
            },
            "push_intent": null, "pushed": null, "change_request": null, "failure": null,
        });
        let text = checkpoint.to_string();
        assert_eq!(opened_with(Some(&text)), Some(reproduction));
    }

    #[test]
    fn a_checkpoint_from_before_reproductions_still_loads_and_has_none() {
        let checkpoint = serde_json::json!({
            "authorized": true, "issue": null,
            "status": {"job": 1, "requested_by": "octocat", "done": [], "current": null,
                       "notes": [], "outcome": null},
            "status_comment": null, "default_branch": "main",
            "fixed": {
                "branch": "autofix/issue-7", "commit": "0123456", "subject": "fix: x",
                "plan_steps": [], "changed_files": [], "validation": [], "repairs": 0,
                "input_tokens": 0, "output_tokens": 0,
                "pull_request": {}, "keep_on_failure": false,
            },
            "push_intent": null, "pushed": null, "change_request": null, "failure": null,
        });
        let text = checkpoint.to_string();
        let loaded: Checkpoint = serde_json::from_str(&text).expect("an old checkpoint loads");
        assert!(loaded.fixed.is_some());
        assert_eq!(opened_with(Some(&text)), None);
        assert_eq!(opened_with(None), None);
    }
}
