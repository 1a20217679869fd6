//! A job made of remarks: who may command (push rights, through the API; bots ignored; one
//! polite reply to anyone else), then one answer — status, cancel, retry, or a revision.

use crate::failure::{FailureCode, Stage};
use crate::forge::{Command, CommentId, Forge, ForgeError, Remark, Said, Thread};
use crate::pipeline::fix::ProposedPlan;
use crate::store::{Finish, JobFilter, JobId, JobRecord};
use crate::worker::WorkerContext;
use crate::worker::own_marks::Own;
use crate::worker::publish::{StatusOutcome, StatusView, status_comment};
use crate::worker::replies::{self, reply_marker};

use super::checkpoint::Checkpoint;
use super::gather::Talk;
use super::revise::RevisionAsk;
use super::stop::{Stop, forge_stop};
use super::{JobEnd, JobRun, Request};

/// Whether someone may give the bot commands.
enum Authority {
    Maintainer,
    /// The bot itself or another bot: ignored without a word, so bots cannot loop.
    Ignored(String),
    /// A person without push rights, with the permission they have.
    Refused(String),
}

/// Whether `remark` comes from someone who may push (errors count as no).
pub(super) async fn may_command(ctx: &WorkerContext, forge: &dyn Forge, remark: &Remark) -> bool {
    matches!(
        authority(ctx, forge, remark).await,
        Ok(Authority::Maintainer)
    )
}

async fn authority(
    ctx: &WorkerContext,
    forge: &dyn Forge,
    remark: &Remark,
) -> Result<Authority, ForgeError> {
    let actor = &remark.actor;
    let bot = ctx.bot_user(forge).await?;
    if Own::new(forge.kind(), &bot).is_the_bot(actor) {
        return Ok(Authority::Ignored(format!(
            "said by the bot itself (@{})",
            actor.login
        )));
    }
    if actor.is_bot {
        return Ok(Authority::Ignored(format!(
            "said by the bot account @{}",
            actor.login
        )));
    }
    let permission = forge.permission(&remark.repo, actor).await?;
    if permission.may_push() {
        Ok(Authority::Maintainer)
    } else {
        Ok(Authority::Refused(permission.as_str().to_owned()))
    }
}

/// A plan an earlier job of the issue proposed, waiting for approval.
struct WaitingPlan {
    job: JobId,
    plan: ProposedPlan,
    status_comment: Option<u64>,
    status: StatusView,
}

/// What the remarks of one job ask for, once the unauthorised ones are answered.
#[derive(Default)]
struct Asks<'a> {
    status: Vec<&'a Remark>,
    cancel: Vec<&'a Remark>,
    retry: Option<&'a Remark>,
    approval: Vec<&'a Remark>,
    /// Revision requests (commands with free text, reviews asking for changes, line comments)
    /// and plain reviews, which are context for them.
    revision: Vec<&'a Remark>,
    checks_failed: Vec<&'a Remark>,
}

impl<'a> Asks<'a> {
    fn add(&mut self, remark: &'a Remark) {
        match &remark.said {
            Said::Command { command, .. } => match command {
                Command::Status => self.status.push(remark),
                Command::Cancel => self.cancel.push(remark),
                Command::Retry => {
                    self.retry.get_or_insert(remark);
                }
                Command::Approve | Command::Plan(_) => self.approval.push(remark),
                Command::Revise(_) => self.revision.push(remark),
            },
            Said::Review { .. } | Said::LineComment { .. } => self.revision.push(remark),
            Said::ChecksFailed { .. } => self.checks_failed.push(remark),
        }
    }

    /// A plain review (no changes requested) alone asks for nothing.
    fn wants_revision(&self) -> bool {
        self.revision.iter().any(|remark| {
            !matches!(
                remark.said,
                Said::Review {
                    changes_requested: false,
                    ..
                }
            )
        })
    }
}

/// The one piece of work a talk job goes on to once its questions are answered: the first of
/// these that someone who may push asked for.
enum TalkWork<'a> {
    /// `approve` or `plan …` with a plan waiting: the fix goes on from that plan.
    Plan(&'a Remark),
    /// `retry`: the fix is made again, and the open change request updated.
    Retry(&'a Remark),
    /// Reviewers asked for changes: the change request is revised.
    Revise(RevisionAsk<'a>),
    /// The change request's checks failed: they are repaired.
    RepairChecks(&'a Remark),
    /// Questions only, and they are answered.
    Answered,
    /// No one who may push asked for anything.
    NothingAsked,
}

impl<'a> Asks<'a> {
    /// The work these asks come to; `plan_taken` when an approval found a plan waiting.
    fn work(&self, plan_taken: bool) -> TalkWork<'a> {
        if plan_taken && let Some(remark) = self.approval.last() {
            return TalkWork::Plan(remark);
        }
        if let Some(remark) = self.retry {
            return TalkWork::Retry(remark);
        }
        if self.wants_revision() {
            return TalkWork::Revise(RevisionAsk::from_remarks(&self.revision));
        }
        if let Some(remark) = self.checks_failed.last() {
            return TalkWork::RepairChecks(remark);
        }
        let answered = self.status.len() + self.cancel.len() + self.approval.len();
        if answered == 0 && self.revision.is_empty() {
            return TalkWork::NothingAsked;
        }
        TalkWork::Answered
    }
}

impl JobRun {
    /// Answers the remarks of a talk job: each unauthorised one politely, then the status and
    /// cancel questions, then the one piece of work ([`TalkWork`]) they ask for, if any.
    pub(super) async fn talk(&mut self, forge: &dyn Forge, talk: Talk) -> JobEnd {
        match self.answer_remarks(forge, &talk).await {
            Ok(end) => end,
            Err(stop) => self.stopped_before_forge(stop),
        }
    }

    async fn answer_remarks(&mut self, forge: &dyn Forge, talk: &Talk) -> Result<JobEnd, Stop> {
        let mut asks = Asks::default();
        for (index, remark) in talk.remarks.iter().enumerate() {
            if self.admit(forge, remark, index).await? {
                asks.add(remark);
            }
        }
        self.answer_questions(forge, &asks).await?;
        let plan_taken = match asks.approval.last() {
            Some(remark) => self.answer_plan(forge, talk, remark).await?,
            None => false,
        };
        let (request, outcome) = match asks.work(plan_taken) {
            TalkWork::Plan(remark) => {
                let request = self.request_by(talk, remark);
                let outcome = self.stages(forge, &request).await;
                (request, outcome)
            }
            TalkWork::Retry(remark) => {
                self.checkpoint.retry = true;
                let request = self.request_by(talk, remark);
                let outcome = self.stages(forge, &request).await;
                (request, outcome)
            }
            TalkWork::Revise(ask) => {
                let request = self.request_by(talk, ask.first);
                let finish = self.revise(forge, &request, &ask).await?;
                return Ok(JobEnd::Finished(finish));
            }
            TalkWork::RepairChecks(remark) => {
                let request = self.request_by(talk, remark);
                let finish = self.repair_checks(forge, &request, remark).await?;
                return Ok(JobEnd::Finished(finish));
            }
            TalkWork::Answered => return Ok(JobEnd::Finished(Finish::Succeeded)),
            TalkWork::NothingAsked => {
                return Ok(JobEnd::Finished(Finish::failed(
                    FailureCode::PermissionDenied,
                    Stage::Authorize,
                    "no one who may push asked for anything",
                )));
            }
        };
        Ok(self.ended(forge, &request, outcome).await)
    }

    /// The issue of this job, asked about by `remark`'s author.
    fn request_by(&self, talk: &Talk, remark: &Remark) -> Request {
        Request {
            repo: talk.repo.clone(),
            issue: self.job.key.issue,
            actor: remark.actor.clone(),
        }
    }

    /// Whether the remark's author may command; a person who may not gets one polite reply.
    async fn admit(
        &mut self,
        forge: &dyn Forge,
        remark: &Remark,
        index: usize,
    ) -> Result<bool, Stop> {
        // Failed checks are the forge's word on autofix's own change request, not a command.
        if matches!(remark.said, Said::ChecksFailed { .. }) {
            return Ok(true);
        }
        let verdict = authority(&self.ctx, forge, remark)
            .await
            .map_err(forge_stop(Stage::Authorize))?;
        match verdict {
            Authority::Maintainer => Ok(true),
            Authority::Ignored(reason) => {
                self.event(Stage::Authorize, &format!("ignored: {reason}"))
                    .await?;
                Ok(false)
            }
            Authority::Refused(permission) => {
                // A review or line comment of someone without push rights is their opinion,
                // not a request to the bot: only their commands get the polite answer.
                if matches!(remark.said, Said::Command { .. }) {
                    let text = replies::unauthorised(
                        &remark.actor.login,
                        &permission,
                        &self.ctx.settings.command_word,
                    );
                    self.reply_once(forge, remark, &format!("refused-{index}"), &text)
                        .await?;
                }
                self.event(
                    Stage::Authorize,
                    &format!(
                        "@{} may not command (permission {permission})",
                        remark.actor.login
                    ),
                )
                .await?;
                Ok(false)
            }
        }
    }

    /// `approve` or `plan <changes>`: with a plan waiting, this job goes on from it (approved,
    /// or planned again with the maintainer's words) and the waiting job's status comment says
    /// so; `Ok(false)` (after saying so) when no plan waits.
    async fn answer_plan(
        &mut self,
        forge: &dyn Forge,
        talk: &Talk,
        remark: &Remark,
    ) -> Result<bool, Stop> {
        if self.checkpoint.approved.is_some() || self.checkpoint.replan.is_some() {
            return Ok(true);
        }
        let Some(waiting) = self.waiting_plan().await? else {
            let text = replies::no_plan_waiting(&remark.actor.login);
            self.reply_once(forge, remark, "approval", &text).await?;
            return Ok(false);
        };
        let how = match &remark.said {
            Said::Command {
                command: Command::Plan(words),
                ..
            } => {
                self.checkpoint.replan = Some((words.clone(), waiting.plan.clone()));
                "asked for another plan"
            }
            _ => {
                self.checkpoint.approved = Some(waiting.plan.clone());
                "approved the plan"
            }
        };
        self.save(
            Stage::Talk,
            &format!("@{} {how} of job {}", remark.actor.login, waiting.job),
        )
        .await?;
        if let Some(comment) = waiting.status_comment {
            let mut view = waiting.status;
            view.outcome = Some(StatusOutcome::PlanAnswered {
                by: remark.actor.login.clone(),
                how: how.to_owned(),
                next: self.job.id,
            });
            let text = self.redactor.redact(&status_comment(&view));
            let issue = self.job.key.issue;
            if let Err(error) = forge
                .update_comment(&talk.repo, issue, CommentId(comment), &text)
                .await
            {
                tracing::warn!(job = self.job.id.0, %error, "could not update the waiting job's status comment");
            }
        }
        Ok(true)
    }

    /// The newest other job of this issue, when its plan waits for approval.
    async fn waiting_plan(&self) -> Result<Option<WaitingPlan>, Stop> {
        let Some((job, Some(text))) = self.earlier_job().await? else {
            return Ok(None);
        };
        let Ok(checkpoint) = serde_json::from_str::<Checkpoint>(&text) else {
            return Ok(None);
        };
        Ok(checkpoint.awaiting.map(|plan| WaitingPlan {
            job: job.id,
            plan,
            status_comment: checkpoint.status_comment,
            status: checkpoint.status,
        }))
    }

    /// The newest job of this issue before this one, with its checkpoint.
    async fn earlier_job(&self) -> Result<Option<(JobRecord, Option<String>)>, Stop> {
        let filter = JobFilter {
            issue: Some(self.job.key.clone()),
            before: Some(self.job.id),
            limit: 1,
            ..JobFilter::default()
        };
        Ok(self.ctx.store.jobs_page(&filter).await?.into_iter().next())
    }

    /// Answers `status` and `cancel` (nothing runs: a running job would have taken it), once
    /// each.
    async fn answer_questions(&mut self, forge: &dyn Forge, asks: &Asks<'_>) -> Result<(), Stop> {
        if let Some(remark) = asks.status.first() {
            let (last, change_request) = self.last_work().await?;
            let text = replies::status(
                &remark.actor.login,
                last.as_ref(),
                change_request.as_deref(),
            );
            self.reply_once(forge, remark, "status", &text).await?;
        }
        if let Some(remark) = asks.cancel.first() {
            let text = replies::nothing_to_cancel(&remark.actor.login);
            self.reply_once(forge, remark, "cancel", &text).await?;
        }
        Ok(())
    }

    /// The newest earlier job of this issue, and the web address of its change request.
    async fn last_work(&self) -> Result<(Option<JobRecord>, Option<String>), Stop> {
        let last = self.earlier_job().await?.map(|(job, _)| job);
        let change_request = self
            .ctx
            .store
            .change_request_for_issue(&self.job.key)
            .await?;
        Ok((last, change_request.map(|record| record.url)))
    }

    /// Posts `text` as reply `key` of this job on the remark's thread, once: a rerun finds the
    /// reply it posted before (by its hidden marker, among the bot's own comments) instead of
    /// posting it again.
    pub(super) async fn reply_once(
        &mut self,
        forge: &dyn Forge,
        remark: &Remark,
        key: &str,
        text: &str,
    ) -> Result<(), Stop> {
        let thread = remark.thread;
        self.reply_on(forge, &remark.repo, thread, key, text).await
    }

    pub(super) async fn reply_on(
        &mut self,
        forge: &dyn Forge,
        repo: &crate::forge::RepoRef,
        thread: Thread,
        key: &str,
        text: &str,
    ) -> Result<(), Stop> {
        if self.checkpoint.replied(key) {
            return Ok(());
        }
        let marker = reply_marker(self.job.id, key);
        if self.job.attempts > 1 {
            let bot = self
                .ctx
                .bot_user(forge)
                .await
                .map_err(forge_stop(Stage::Reply))?;
            let comments = forge
                .thread_comments(repo, thread)
                .await
                .map_err(forge_stop(Stage::Reply))?;
            let own = Own::new(forge.kind(), &bot);
            if let Some(posted) = own.comment(&comments, &marker) {
                self.checkpoint.replies.push((key.to_owned(), posted.id.0));
                return self
                    .save(
                        Stage::Reply,
                        &format!("reply {key} found as comment {}", posted.id.0),
                    )
                    .await;
            }
        }
        let body = format!("{}\n\n{marker}\n", self.redactor.redact(text).trim_end());
        let id = forge
            .comment_on(repo, thread, &body)
            .await
            .map_err(forge_stop(Stage::Reply))?;
        self.checkpoint.replies.push((key.to_owned(), id.0));
        self.save(
            Stage::Reply,
            &format!("replied ({key}) in comment {}", id.0),
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forge::{ForgeKind, ForgeUser, IssueNumber, RepoRef};

    fn said(said: Said) -> Remark {
        Remark {
            repo: RepoRef {
                forge: ForgeKind::GitHub,
                owner_path: "acme/calc".into(),
                clone_url: "https://forge.example/acme/calc.git".into(),
                default_branch: None,
            },
            thread: Thread::Issue(IssueNumber(7)),
            actor: ForgeUser {
                login: "alice".into(),
                id: 1,
                is_bot: false,
            },
            said,
        }
    }

    fn command(command: Command) -> Remark {
        said(Said::Command {
            command,
            comment: CommentId(1),
        })
    }

    fn asks(remarks: &[Remark]) -> Asks<'_> {
        let mut asks = Asks::default();
        remarks.iter().for_each(|remark| asks.add(remark));
        asks
    }

    #[test]
    fn an_approval_goes_on_from_the_waiting_plan_before_any_other_work() {
        let remarks = [command(Command::Retry), command(Command::Approve)];
        assert!(matches!(asks(&remarks).work(true), TalkWork::Plan(_)));
        // With no plan waiting, the retry asked beside it is the work.
        assert!(matches!(asks(&remarks).work(false), TalkWork::Retry(_)));
    }

    #[test]
    fn a_review_asking_for_changes_is_a_revision_and_a_plain_review_is_only_context() {
        let asking = said(Said::Review {
            changes_requested: true,
            body: "clamp the upper bound too".into(),
        });
        let plain = said(Said::Review {
            changes_requested: false,
            body: "looks fine".into(),
        });
        assert!(matches!(
            asks(std::slice::from_ref(&asking)).work(false),
            TalkWork::Revise(_)
        ));
        assert!(matches!(
            asks(std::slice::from_ref(&plain)).work(false),
            TalkWork::Answered
        ));
    }

    #[test]
    fn failed_checks_are_repaired_and_questions_alone_are_only_answered() {
        let failed = said(Said::ChecksFailed {
            head_branch: "autofix/issue-7".into(),
            head_sha: "0123456".into(),
            runs: vec![3],
        });
        assert!(matches!(
            asks(std::slice::from_ref(&failed)).work(false),
            TalkWork::RepairChecks(_)
        ));
        let status = command(Command::Status);
        assert!(matches!(
            asks(std::slice::from_ref(&status)).work(false),
            TalkWork::Answered
        ));
        assert!(matches!(asks(&[]).work(false), TalkWork::NothingAsked));
    }
}
