//! Failed checks on autofix's change request: the failed jobs' logs read through the API, cut
//! and redacted, and a repair commit pushed — unless the same checks fail on the default branch
//! too, or the change request has had `ci.max_repairs` repairs already.

use crate::failure::Stage;
use crate::forge::{FailedCheck, Forge, Remark, Said, Thread};
use crate::pipeline::ci_log;
use crate::quote::{fenced, one_line};
use crate::store::{ChangeRequestRecord, Finish};
use crate::worker::replies;

use super::revise::RevisionAsk;
use super::stop::{Stop, forge_stop, git_stop};
use super::{JobRun, Request};

/// Most bytes of one failed check's log shown to the model.
const LOG_EXCERPT_BYTES: usize = 6 * 1024;

impl JobRun {
    /// Answers failed checks on the change request (`remark` says which head and runs).
    pub(super) async fn repair_checks(
        &mut self,
        forge: &dyn Forge,
        request: &Request,
        remark: &Remark,
    ) -> Result<Finish, Stop> {
        let Said::ChecksFailed { head_sha, runs, .. } = &remark.said else {
            return Ok(Finish::Succeeded);
        };
        let Some(record) = self.change_request_record().await? else {
            return Ok(Finish::Succeeded);
        };
        // A repair already under way in this job goes on whatever the branch shows now.
        if self.checkpoint.revision.is_none()
            && let Some(why) = self
                .checks_not_ours(forge, request, &record, head_sha)
                .await?
        {
            self.event(Stage::Ci, &why).await?;
            return Ok(Finish::Succeeded);
        }
        let failed = forge
            .failed_checks(&request.repo, head_sha, runs)
            .await
            .map_err(forge_stop(Stage::Ci))?;
        if failed.is_empty() {
            self.event(Stage::Ci, "no failed check is listed for the head any more")
                .await?;
            return Ok(Finish::Succeeded);
        }
        let default_branch = self.default_branch(forge, request, Stage::Ci).await?;
        let failing_there: Vec<String> = forge
            .failed_checks(&request.repo, &default_branch, &[])
            .await
            .map_err(forge_stop(Stage::Ci))?
            .into_iter()
            .map(|check| check.name)
            .collect();
        let (theirs, ours): (Vec<FailedCheck>, Vec<FailedCheck>) = failed
            .into_iter()
            .partition(|check| failing_there.contains(&check.name));
        let thread = Thread::ChangeRequest(record.number);
        let short: String = head_sha.chars().take(7).collect();
        if ours.is_empty() {
            let names: Vec<String> = theirs.iter().map(|check| check.name.clone()).collect();
            let text = replies::checks_fail_on_the_default_branch(&names, &default_branch);
            self.reply_on(forge, &request.repo, thread, &format!("ci-{short}"), &text)
                .await?;
            self.ctx.store.record_ci(&record, head_sha, false).await?;
            return Ok(Finish::Succeeded);
        }
        let max = self.ctx.settings.ci_max_repairs;
        if record.ci_repairs >= max && self.checkpoint.revision.is_none() {
            if record.ci_repairs == max {
                let text = replies::ci_repairs_stopped(max, &self.ctx.settings.command_word);
                self.reply_on(forge, &request.repo, thread, "ci-stopped", &text)
                    .await?;
                // Counted past the limit, so the next failure is not answered again.
                self.ctx.store.record_ci(&record, head_sha, true).await?;
            }
            return Ok(Finish::Succeeded);
        }
        let ask = self
            .checks_ask(forge, request, remark, &ours, &theirs, &short)
            .await?;
        let finish = self.revise(forge, request, &ask).await?;
        let repaired = matches!(finish, Finish::Succeeded);
        self.ctx
            .store
            .record_ci(&record, head_sha, repaired)
            .await?;
        Ok(finish)
    }

    /// Why failed checks of `head` are not this job's to repair: the change request is closed,
    /// they were dealt with, or the branch moved on past `head`.
    async fn checks_not_ours(
        &mut self,
        forge: &dyn Forge,
        request: &Request,
        record: &ChangeRequestRecord,
        head: &str,
    ) -> Result<Option<String>, Stop> {
        if record.ci_head.as_deref() == Some(head) {
            return Ok(Some(format!(
                "the failed checks of {head} were dealt with already"
            )));
        }
        let open = self
            .own_open_change_request(forge, request, record, Stage::Ci)
            .await?;
        if open.is_none() {
            return Ok(Some("the change request is no longer open".into()));
        }
        let home = record.home.repo(&request.repo).clone();
        let credentials = self.git_credentials_for(forge, &home, Stage::Ci).await?;
        let branch = crate::git::BranchName::new(&record.branch).map_err(git_stop(Stage::Ci))?;
        let tip = crate::git::remote_branch_tip(&home.clone_url, &branch, &credentials)
            .map_err(git_stop(Stage::Ci))?;
        match tip {
            Some(tip) if tip.as_str() == head => Ok(None),
            _ => Ok(Some(format!(
                "the checks failed on {head}, which is no longer the branch's head"
            ))),
        }
    }

    /// The repair's request: which checks failed, and each one's log cut and redacted.
    async fn checks_ask<'a>(
        &mut self,
        forge: &dyn Forge,
        request: &Request,
        remark: &'a Remark,
        ours: &[FailedCheck],
        theirs: &[FailedCheck],
        short: &str,
    ) -> Result<RevisionAsk<'a>, Stop> {
        let mut lines = Vec::new();
        let mut context = String::from("## The failed checks' logs\n");
        for check in ours {
            let name = one_line(&check.name);
            lines.push(format!(
                "the check `{name}` failed on {short}: make it pass"
            ));
            let log = forge
                .check_log(&request.repo, check)
                .await
                .map_err(forge_stop(Stage::Ci))?;
            let excerpt = self
                .redactor
                .redact(&ci_log::excerpt(&log, LOG_EXCERPT_BYTES));
            context.push_str(&format!("\n### {name}\n\n{}", fenced("", &excerpt)));
        }
        for check in theirs {
            lines.push(format!(
                "the check `{}` fails on the default branch too: leave it alone",
                one_line(&check.name)
            ));
        }
        Ok(RevisionAsk {
            lines,
            context,
            first: remark,
        })
    }
}
