//! What a job is asked to do, from what the server read in every delivery linked to it: a
//! labelled issue to fix, or remarks (commands, reviews, line comments) to answer; the rest
//! waits for a follow-up.

use crate::failure::Stage;
use crate::forge::{BotEvent, Remark, RepoRef};

use super::stop::{Stop, invalid};
use super::{JobRun, Request};

/// The work of one job.
pub(super) enum Work {
    /// A labelled issue (or `retry`): triage, plan, edit, validate, push, open.
    Fix(Request),
    /// Remarks on the issue or on its change request, oldest first.
    Talk(Talk),
    /// The default branch moved: the issue's change request follows it.
    Follow(RepoRef),
}

/// Remarks to answer, all about one issue of one repository.
pub(super) struct Talk {
    pub(super) repo: RepoRef,
    pub(super) remarks: Vec<Remark>,
}

impl Work {
    pub(super) fn repo(&self) -> &RepoRef {
        match self {
            Work::Fix(request) => &request.repo,
            Work::Talk(talk) => &talk.repo,
            Work::Follow(repo) => repo,
        }
    }
}

impl JobRun {
    /// Reads the job's deliveries. The first run decides which it handles (those of the
    /// origin's kind: labels for a fix, remarks for a talk, pushes for following the base) and
    /// saves their ids, so a rerun handles the same ones and the rest goes to a follow-up job.
    pub(super) async fn gather(&mut self) -> Result<Work, Stop> {
        let deliveries = self.ctx.store.job_deliveries(self.job.id).await?;
        let origin = self.ctx.store.job_delivery(self.job.id).await?;
        let Some(origin) = origin else {
            return Err(invalid(format!(
                "job {} has no stored delivery to read its issue from",
                self.job.id
            )));
        };
        let first_run = self.checkpoint.seen.is_empty();
        let origin_event = origin.parsed;
        let talking = matches!(origin_event, BotEvent::Remark(_));
        let following = matches!(origin_event, BotEvent::BaseMoved { .. });
        let mut labelled = None;
        let mut moved = None;
        let mut remarks = Vec::new();
        let mut seen = Vec::new();
        for delivery in deliveries {
            if !first_run && !self.checkpoint.seen.contains(&delivery.id) {
                continue;
            }
            match delivery.parsed {
                BotEvent::IssueLabeled {
                    repo, issue, actor, ..
                } if !talking && !following => {
                    labelled.get_or_insert(Request { repo, issue, actor });
                    seen.push(delivery.id);
                }
                BotEvent::Remark(remark) if talking => {
                    remarks.push(remark);
                    seen.push(delivery.id);
                }
                // Pushes that came together are followed once, to the newest base.
                BotEvent::BaseMoved { repo, .. } if following => {
                    moved = Some(repo);
                    seen.push(delivery.id);
                }
                _ => {}
            }
        }
        if first_run {
            self.checkpoint.seen = seen;
            self.save(
                Stage::Gather,
                &format!("handling {} deliveries", self.checkpoint.seen.len()),
            )
            .await?;
        }
        if let Some(request) = labelled {
            return Ok(Work::Fix(request));
        }
        if let Some(repo) = moved {
            return Ok(Work::Follow(repo));
        }
        match remarks.first() {
            Some(first) => Ok(Work::Talk(Talk {
                repo: first.repo.clone(),
                remarks,
            })),
            None => match origin_event {
                BotEvent::Ignored { reason } => Err(invalid(format!(
                    "delivery {} asks for no work: {reason}",
                    origin.id
                ))),
                _ => Err(invalid(format!(
                    "job {} has nothing left to do: its deliveries ask for no work",
                    self.job.id
                ))),
            },
        }
    }
}
