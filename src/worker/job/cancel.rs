//! `/autofix cancel` for a running job: a watcher reads the deliveries that join the job while
//! it runs and, for a cancel from someone who may push, stops it at its next stage boundary.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::failure::Failure;
use crate::forge::{BotEvent, Command, Forge, Remark, Said};
use crate::store::Finish;
use crate::worker::publish::StatusOutcome;

use super::{JobEnd, JobRun, Request};

/// How often a running job looks for a cancel among the deliveries that joined it.
const CANCEL_POLL: Duration = Duration::from_millis(500);

/// Who cancelled the job and the delivery that said so, once someone has.
#[derive(Debug, Clone, Default)]
pub(super) struct CancelledBy(Arc<Mutex<Option<(String, String)>>>);

impl CancelledBy {
    fn set(&self, login: String, delivery: String) {
        *self.lock() = Some((login, delivery));
    }

    pub(super) fn login(&self) -> Option<String> {
        self.lock().as_ref().map(|(login, _)| login.clone())
    }

    pub(super) fn delivery(&self) -> Option<String> {
        self.lock().as_ref().map(|(_, delivery)| delivery.clone())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<(String, String)>> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The watcher's task, stopped when the job ends.
pub(super) struct CancelWatch(tokio::task::JoinHandle<()>);

impl Drop for CancelWatch {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl JobRun {
    /// Starts watching the job's new deliveries for a cancel. Only a maintainer's counts: the
    /// bot's own and other bots' are ignored, and anyone else's waits for the follow-up job,
    /// which answers it politely.
    pub(super) fn watch_for_cancel(&self, forge: Arc<dyn Forge>) -> CancelWatch {
        let ctx = self.ctx.clone();
        let job = self.job.id;
        let seen = self.checkpoint.seen.clone();
        let flag = self.cancel.clone();
        let by = self.cancelled_by.clone();
        CancelWatch(tokio::spawn(async move {
            let mut checked = seen;
            loop {
                tokio::time::sleep(CANCEL_POLL).await;
                let Ok(ids) = ctx.store.job_delivery_ids(job).await else {
                    continue;
                };
                for id in ids {
                    if checked.contains(&id) {
                        continue;
                    }
                    checked.push(id.clone());
                    let Ok(Some(delivery)) = ctx.store.parsed_delivery(&id).await else {
                        continue;
                    };
                    let BotEvent::Remark(remark) = delivery.parsed else {
                        continue;
                    };
                    if !is_cancel(&remark) {
                        continue;
                    }
                    if super::converse::may_command(&ctx, forge.as_ref(), &remark).await {
                        tracing::info!(job = job.0, by = %remark.actor.login, "cancel asked; the job stops at its next stage boundary");
                        by.set(remark.actor.login.clone(), delivery.id.clone());
                        flag.cancel();
                        return;
                    }
                }
            }
        }))
    }

    /// A cancelled job cleans up: a branch it pushed is deleted (unless its change request is
    /// open already), and the status comment says who cancelled it and where it stopped.
    pub(super) async fn cancelled(
        &mut self,
        forge: &dyn Forge,
        request: &Request,
        failed: Failure,
    ) -> JobEnd {
        let by = self
            .cancelled_by
            .login()
            .unwrap_or_else(|| "a maintainer".into());
        tracing::info!(job = self.job.id.0, stage = %failed.stage, %by, "job cancelled");
        if let (None, Some(pushed)) = (
            &self.checkpoint.change_request,
            self.checkpoint.pushed.clone(),
        ) && let Err(error) = self.delete_pushed_branch(forge, request, &pushed).await
        {
            tracing::warn!(job = self.job.id.0, reason = %error.describe(), "could not delete the cancelled job's branch");
        }
        self.checkpoint.status.current = None;
        self.checkpoint.status.outcome = Some(StatusOutcome::Cancelled {
            by: by.clone(),
            stage: failed.stage,
            word: self.ctx.settings.command_word.clone(),
        });
        if let Err(error) = self.publish_status(forge, request).await {
            tracing::warn!(job = self.job.id.0, reason = %error.describe(), "could not say on the issue that the job was cancelled");
        }
        let _ = self
            .event(failed.stage, &format!("cancelled by @{by}"))
            .await;
        JobEnd::Finished(Finish::failed(
            failed.code,
            failed.stage,
            format!("cancelled by @{by} during {}", failed.stage),
        ))
    }
}

fn is_cancel(remark: &Remark) -> bool {
    matches!(
        remark.said,
        Said::Command {
            command: Command::Cancel,
            ..
        }
    )
}
