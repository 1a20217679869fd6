//! A revision of autofix's open change request: its branch checked out as it is (a person's
//! commits kept), what reviewers asked given to the pipeline, one more commit pushed on top.

use std::str::FromStr;

use crate::failure::{Failure, FailureCode, Stage};
use crate::forge::{BranchHome, Forge, Remark, Said, Thread};
use crate::git::{BranchName, CommitKind, CommitSha, GitError, Workspace};
use crate::pipeline::fix::{self, Approval, Revision};
use crate::pipeline::issue::Issue;
use crate::quote::{fenced, one_line};
use crate::store::Finish;
use crate::worker::replies::{self, Revised};

use super::checkpoint::{FixedChange, REVISION_REPLY, RevisionPhase, RevisionTarget};
use super::prepare::validation_detail;
use super::stop::{Fault, Stop, failed_io, failure_of_run, forge_stop, git_stop, invalid};
use super::{JobRun, Request};

/// Most characters of the change request's current diff shown to the model.
const MAX_DIFF_CHARS: usize = 40_000;

impl JobRun {
    /// Revises the change request as `ask` says, replying once on it: one step per
    /// [`RevisionPhase`], each saved, so a rerun resumes where the last one stopped.
    pub(super) async fn revise(
        &mut self,
        forge: &dyn Forge,
        request: &Request,
        ask: &RevisionAsk<'_>,
    ) -> Result<Finish, Stop> {
        loop {
            let phase = self.checkpoint.revision_phase();
            match phase {
                RevisionPhase::Requested => {
                    if !self.find_revision_target(forge, request, ask.first).await? {
                        return Ok(Finish::failed(
                            FailureCode::InvalidInput,
                            Stage::Revise,
                            "no open change request of autofix's to revise",
                        ));
                    }
                }
                RevisionPhase::Targeted => {
                    if let Err(failed) = self.make_revision(forge, request, ask).await? {
                        let text = replies::revision_failed(&failed);
                        self.answer_revision(forge, request, &text).await?;
                        return Ok(Finish::Failed(failed));
                    }
                }
                RevisionPhase::Committed => {
                    self.stop_if_draining()?;
                    self.push_revision(forge, request).await?;
                }
                RevisionPhase::Pushed => {
                    let text = self.revised_reply(ask)?;
                    self.answer_revision(forge, request, &text).await?;
                    self.event(Stage::Done, "revision pushed and answered")
                        .await?;
                }
                RevisionPhase::Answered => return Ok(Finish::Succeeded),
            }
            if self.checkpoint.revision_phase() == phase {
                return Err(invalid(format!(
                    "the revision did not move past the {phase:?} phase"
                )));
            }
        }
    }

    /// What the revision's reply says: the commit, what it changed, how validation went.
    fn revised_reply(&self, ask: &RevisionAsk<'_>) -> Result<String, Stop> {
        let fixed = self.fixed()?;
        let validation = self
            .checkpoint
            .revision
            .as_ref()
            .and_then(|target| target.validation.clone())
            .unwrap_or_default();
        Ok(replies::revised(&Revised {
            commit: &fixed.commit,
            subject: &fixed.subject,
            changed_files: &fixed.changed_files,
            validation: &validation,
            asked: &ask.lines,
            reproduction: fixed.reproduction.as_ref(),
        }))
    }

    /// Posts the revision's one reply on the change request.
    async fn answer_revision(
        &mut self,
        forge: &dyn Forge,
        request: &Request,
        text: &str,
    ) -> Result<(), Stop> {
        let target = self.revision_target(Stage::Reply)?;
        let thread = Thread::ChangeRequest(target.number);
        self.reply_on(forge, &request.repo, thread, REVISION_REPLY, text)
            .await
    }

    /// The change request this job revises, as recorded when it was found.
    fn revision_target(&self, stage: Stage) -> Result<RevisionTarget, Stop> {
        self.checkpoint.revision.clone().ok_or_else(|| {
            Stop::Retry(Fault::internal(
                stage,
                "the change request to revise is not recorded",
            ))
        })
    }

    /// Finds the open change request autofix opened for the issue and records it; `false`
    /// (after saying so to whoever asked) when there is none.
    async fn find_revision_target(
        &mut self,
        forge: &dyn Forge,
        request: &Request,
        first: &Remark,
    ) -> Result<bool, Stop> {
        let record = self
            .ctx
            .store
            .change_request_for_issue(&self.job.key)
            .await?;
        let open = match &record {
            Some(record) => {
                self.own_open_change_request(forge, request, record, Stage::Revise)
                    .await?
            }
            None => None,
        };
        let Some(change) = open else {
            let login = &first.actor.login;
            let text = replies::nothing_to_revise(login, &self.ctx.settings.command_word);
            self.reply_once(forge, first, REVISION_REPLY, &text).await?;
            return Ok(false);
        };
        self.checkpoint.revision = Some(RevisionTarget {
            number: change.number,
            url: change.url.clone(),
            branch: change.head.clone(),
            head: String::new(),
            kind: commit_kind_of(&change.title).as_str().to_owned(),
            validation: None,
        });
        // The revision is pushed where the change request's branch lives.
        self.checkpoint.home = record.map(|record| record.home);
        self.save(
            Stage::Revise,
            &format!("revising {} on {}", change.url, change.head),
        )
        .await?;
        Ok(true)
    }

    /// The branch checked out fresh from the forge and the pipeline run on it; `Ok(Err(..))` is
    /// a revision that could not be made (nothing was committed).
    async fn make_revision(
        &mut self,
        forge: &dyn Forge,
        request: &Request,
        ask: &RevisionAsk<'_>,
    ) -> Result<Result<(), Failure>, Stop> {
        let stage = Stage::Revise;
        let mut target = self.revision_target(stage)?;
        let credentials = self
            .git_credentials_for(forge, &request.repo, stage)
            .await?;
        self.stop_if_draining()?;
        let mirror = self.synced_mirror(request, &credentials, stage)?;
        let worktree = self.fresh_worktree_dir(stage)?;
        let workspace = match self.decided_home() {
            BranchHome::Base => mirror.worktree(&worktree, &target.branch),
            BranchHome::Fork(fork) => {
                self.fetch_fork(forge, &mirror, &fork, stage).await?;
                mirror.fork_worktree(&worktree, &target.branch, &fork.clone_url)
            }
        }
        .map_err(git_stop(stage))?;
        // The head as it is now: a person may have pushed since the revision was asked for.
        target.head = workspace
            .head_commit()
            .map_err(git_stop(stage))?
            .to_string();
        self.checkpoint.revision = Some(target.clone());
        let default_branch = self.default_branch(forge, request, stage).await?;
        self.checkpoint.default_branch = Some(default_branch.clone());
        let issue = match self.checkpoint.issue.clone() {
            Some(issue) => issue,
            None => {
                let info = forge
                    .issue(&request.repo, request.issue)
                    .await
                    .map_err(forge_stop(stage))?;
                Issue {
                    number: Some(info.number.0),
                    title: info.title,
                    body: info.body,
                    labels: info.labels,
                }
            }
        };
        self.checkpoint.issue = Some(issue.clone());
        self.save(
            stage,
            &format!("working copy of {} at {}", target.branch, target.head),
        )
        .await?;
        let diff = change_so_far(&workspace, &default_branch).map_err(git_stop(stage))?;
        let revision_issue = revision_issue(&issue, target.number, ask, &diff);
        let kind = CommitKind::from_str(&target.kind).unwrap_or(CommitKind::Fix);
        let purse = self.purse(request).await?;
        let mut options = self.fix_options(
            request,
            &workspace,
            revision_issue,
            Some(Revision { kind }),
            Approval::NotAsked,
            purse.clone(),
        );
        options.earlier_reproduction = self.earlier_reproduction().await?;
        let summary = fix::fix(&options, self.ctx.llm.as_ref()).await;
        self.book(&purse, 0.0).await?;
        let summary = summary.map_err(|error| failed_io(stage, format!("{error:#}")))?;
        // A revision's branch is the change request's: kept whatever a later stage does.
        let fixed = FixedChange::committed(&summary, &target.branch, Default::default(), true);
        let Some(fixed) = fixed else {
            return Ok(Err(failure_of_run(&summary, stage)));
        };
        let message = format!(
            "committed {} on {}: {}",
            fixed.commit, fixed.branch, fixed.subject
        );
        target.validation = Some(validation_detail(&summary));
        self.checkpoint.revision = Some(target);
        self.checkpoint.fixed = Some(fixed);
        self.save(stage, &message).await?;
        Ok(Ok(()))
    }

    /// Pushes the revision as a fast-forward of the head it was made on: if a person pushed in
    /// the meantime the push is refused, and the revision is made again on top of their work.
    async fn push_revision(&mut self, forge: &dyn Forge, request: &Request) -> Result<(), Stop> {
        let stage = Stage::Push;
        let target_repo = self.decided_home().repo(&request.repo).clone();
        let credentials = &self.git_credentials_for(forge, &target_repo, stage).await?;
        let fixed = self.fixed()?;
        let target = self.revision_target(stage)?;
        let branch = BranchName::new(&fixed.branch).map_err(git_stop(stage))?;
        let commit = CommitSha::parse(&fixed.commit).map_err(git_stop(stage))?;
        let head = CommitSha::parse(&target.head).map_err(git_stop(stage))?;
        let Ok(workspace) = Workspace::open(self.job_dir().join("worktree")) else {
            return self.revise_again("the job's working copy is gone").await;
        };
        let pushed = crate::git::push_branch(
            &workspace,
            &target_repo.clone_url,
            &branch,
            &commit,
            Some(head),
            credentials,
        );
        match pushed {
            Ok(pushed) => {
                self.checkpoint.pushed = Some(pushed.to_string());
                self.save(stage, &format!("pushed {pushed} to {branch}"))
                    .await
            }
            Err(GitError::RemoteBranchMoved { .. }) => {
                self.revise_again("someone pushed to the branch while the revision ran")
                    .await
            }
            Err(error) => Err(git_stop(stage)(error)),
        }
    }

    /// Forgets the revision made so far, to make it again from the branch as it is now.
    async fn revise_again(&mut self, why: &str) -> Result<(), Stop> {
        self.checkpoint.fixed = None;
        self.save(Stage::Revise, &format!("{why}; revising again"))
            .await?;
        Err(Stop::Retry(Fault::moved(
            Stage::Revise,
            format!("{why}; the revision is made again"),
        )))
    }
}

/// What a revision is asked to do: one line per request, what else the model needs to see
/// (failed checks' logs), and the remark to answer when there is nothing to revise.
pub(super) struct RevisionAsk<'a> {
    pub(super) lines: Vec<String>,
    pub(super) context: String,
    pub(super) first: &'a Remark,
}

impl<'a> RevisionAsk<'a> {
    /// What people asked in `asks` (the first of which is answered if nothing can be revised).
    pub(super) fn from_remarks(asks: &[&'a Remark]) -> RevisionAsk<'a> {
        RevisionAsk {
            lines: asked_lines(asks),
            context: String::new(),
            first: asks[0],
        }
    }
}

/// Each request, as one line naming who asked and, for a line comment, the file and line.
fn asked_lines(asks: &[&Remark]) -> Vec<String> {
    asks.iter()
        .filter_map(|remark| {
            let who = &remark.actor.login;
            match &remark.said {
                Said::Command {
                    command: crate::forge::Command::Revise(text),
                    ..
                } => Some(format!("@{who}: {}", words(text))),
                Said::Review { body, .. } if !body.trim().is_empty() => {
                    Some(format!("@{who} (review): {}", words(body)))
                }
                Said::LineComment {
                    body, path, line, ..
                } => {
                    let path = one_line(path);
                    Some(match line {
                        Some(line) => format!("@{who} on `{path}` line {line}: {}", words(body)),
                        None => format!("@{who} on `{path}`: {}", words(body)),
                    })
                }
                _ => None,
            }
        })
        .collect()
}

/// A person's words on one line: their line breaks cannot start lines of the bot's own list.
fn words(text: &str) -> String {
    one_line(&text.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// The issue as the pipeline reads it for a revision: the original text (fenced, so it cannot
/// pass for the sections after it), then what the reviewers asked, then the change request's
/// diff so far (fenced too).
fn revision_issue(issue: &Issue, number: u64, ask: &RevisionAsk<'_>, diff: &str) -> Issue {
    let mut body = String::new();
    if !issue.body.trim().is_empty() {
        body.push_str("## The issue\n\n");
        body.push_str(&fenced("", &issue.body));
    }
    body.push_str(&format!(
        "\n## Requested changes to the change request ({number})\n\nThe change below was \
         reviewed; change it as asked, keeping what is not mentioned.\n\n"
    ));
    for line in &ask.lines {
        body.push_str(&format!("- {line}\n"));
    }
    if !ask.context.is_empty() {
        body.push('\n');
        body.push_str(&ask.context);
        if !ask.context.ends_with('\n') {
            body.push('\n');
        }
    }
    body.push_str("\n## The change request's diff so far\n\n");
    body.push_str(&fenced("diff", diff));
    Issue {
        body,
        ..issue.clone()
    }
}

/// The change request's own diff: its branch against where it left the default branch.
fn change_so_far(workspace: &Workspace, default_branch: &str) -> Result<String, GitError> {
    let upstream = BranchName::new(default_branch)?;
    let base = workspace.fork_point(&upstream)?;
    let mut diff = workspace.diff_from(&base)?;
    if diff.len() > MAX_DIFF_CHARS {
        let mut cut = MAX_DIFF_CHARS;
        while !diff.is_char_boundary(cut) {
            cut -= 1;
        }
        diff.truncate(cut);
        diff.push_str("\n… (the rest of the diff is left out)\n");
    }
    Ok(diff)
}

/// The commit type a change request's title starts with (`fix(calc): …` → fix).
fn commit_kind_of(title: &str) -> CommitKind {
    let word: String = title
        .chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .collect();
    CommitKind::from_str(&word).unwrap_or(CommitKind::Fix)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_commit_type_comes_from_the_title() {
        assert_eq!(commit_kind_of("feat(cli): add --json"), CommitKind::Feat);
        assert_eq!(commit_kind_of("docs: typo"), CommitKind::Docs);
        assert_eq!(commit_kind_of("Draft: something"), CommitKind::Fix);
    }
}
