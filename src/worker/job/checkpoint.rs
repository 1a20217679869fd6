//! What a job has done so far, saved after every stage so a rerun resumes instead of repeating.

use serde::{Deserialize, Serialize};

use crate::config::repo::PullRequestSection;
use crate::detect::DetectedCommand;
use crate::forge::BranchHome;
use crate::pipeline::checks::Comparison;
use crate::pipeline::fix::{FixSummary, ProposedPlan};
use crate::pipeline::issue::Issue;
use crate::pipeline::proof::Reproduction;
use crate::pipeline::test_report::CommandReport;
use crate::worker::publish::{FailureReport, StatusView};

/// What a job has done so far, saved after every stage (the store's opaque checkpoint).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(super) struct Checkpoint {
    /// The request was checked and accepted.
    pub(super) authorized: bool,
    /// The issue as the API reported it when the request was accepted.
    pub(super) issue: Option<Issue>,
    pub(super) status: StatusView,
    pub(super) status_comment: Option<u64>,
    pub(super) default_branch: Option<String>,
    pub(super) fixed: Option<FixedChange>,
    /// The commit a push was started with: a tip equal to it on the remote is this job's own.
    pub(super) push_intent: Option<String>,
    pub(super) pushed: Option<String>,
    pub(super) change_request: Option<(u64, String)>,
    /// A failure decided but perhaps not yet published.
    pub(super) failure: Option<FailureReport>,
    /// The deliveries this job handles, decided on its first run (later ones are a follow-up's).
    #[serde(default)]
    pub(super) seen: Vec<String>,
    /// Each reply posted, by its key within the job, with its comment id.
    #[serde(default)]
    pub(super) replies: Vec<(String, u64)>,
    /// A maintainer's `retry`: the open change request is updated, not refused.
    #[serde(default)]
    pub(super) retry: bool,
    /// The change is made again on a moved base, for the change request's own requester.
    #[serde(default)]
    pub(super) following: bool,
    /// The change request a revision works on, as it was when the revision started.
    #[serde(default)]
    pub(super) revision: Option<RevisionTarget>,
    /// The triage and plan this job proposed, waiting for a maintainer's approval.
    #[serde(default)]
    pub(super) awaiting: Option<ProposedPlan>,
    /// The triage and plan a maintainer approved, to edit to.
    #[serde(default)]
    pub(super) approved: Option<ProposedPlan>,
    /// A maintainer's words for a new plan, and the plan they did not approve.
    #[serde(default)]
    pub(super) replan: Option<(String, ProposedPlan)>,
    /// Where the job's branch lives and is pushed to, once decided.
    #[serde(default)]
    pub(super) home: Option<BranchHome>,
}

/// Where a fix job stands, as its checkpoint says. Each step of the job takes it from one phase
/// to the next and saves the checkpoint at its end, so a rerun (a crash, a restart, a lost
/// lease) resumes at the phase the last one reached and repeats nothing done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    /// A failure was decided (perhaps not yet published): it is reported, nothing else done.
    Failed,
    /// Nothing checked yet: whoever asked is checked first.
    Requested,
    /// Accepted: the change is to be made (fetch, triage, plan, edit, validate, commit).
    Authorized,
    /// The plan waits for a maintainer's approval: nothing more until they answer.
    AwaitingApproval,
    /// The change is committed in the job's working copy, to be pushed.
    Committed,
    /// The commit is on the forge; the change request is to be opened.
    Pushed,
    /// The change request is open: the job has succeeded.
    Opened,
}

impl Checkpoint {
    /// The phase this checkpoint records.
    pub(super) fn phase(&self) -> Phase {
        if self.failure.is_some() {
            Phase::Failed
        } else if !self.authorized {
            Phase::Requested
        } else if self.awaiting.is_some() {
            Phase::AwaitingApproval
        } else if self.fixed.is_none() {
            Phase::Authorized
        } else if self.pushed.is_none() {
            Phase::Committed
        } else if self.change_request.is_none() {
            Phase::Pushed
        } else {
            Phase::Opened
        }
    }
}

/// Where a revision of autofix's change request stands (asked for by a reviewer, or by failed
/// checks). Like a fix's [`Phase`], it is read from the checkpoint each step saves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RevisionPhase {
    /// The change request to revise is not found yet.
    Requested,
    /// The change request is found and recorded: the revision is made on its branch.
    Targeted,
    /// The revision is committed in the job's working copy, to be pushed on top of the head it
    /// was made on.
    Committed,
    /// The revision is on the change request's branch; whoever asked is to be answered.
    Pushed,
    /// Whoever asked was answered: the revision is done.
    Answered,
}

/// The key of the reply that answers a revision (made, or not possible).
pub(super) const REVISION_REPLY: &str = "revision";

/// Where a job that follows a moved default branch stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FollowPhase {
    /// The change request is compared with the new base: left alone, or its commits replayed.
    Comparing,
    /// Replaying did not work: the change is made again on the new base, as a fix is.
    Redoing,
}

impl Checkpoint {
    /// The phase of the revision this checkpoint records.
    pub(super) fn revision_phase(&self) -> RevisionPhase {
        if self.revision.is_none() {
            RevisionPhase::Requested
        } else if self.fixed.is_none() {
            RevisionPhase::Targeted
        } else if self.pushed.is_none() {
            RevisionPhase::Committed
        } else if !self.replied(REVISION_REPLY) {
            RevisionPhase::Pushed
        } else {
            RevisionPhase::Answered
        }
    }

    /// The phase of following the moved base this checkpoint records.
    pub(super) fn follow_phase(&self) -> FollowPhase {
        if self.following {
            FollowPhase::Redoing
        } else {
            FollowPhase::Comparing
        }
    }

    /// Whether the reply with `key` was posted.
    pub(super) fn replied(&self, key: &str) -> bool {
        self.replies.iter().any(|(done, _)| done == key)
    }
}

/// The change request a revision builds on: its number, branch and head commit then.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct RevisionTarget {
    pub(super) number: u64,
    pub(super) url: String,
    pub(super) branch: String,
    pub(super) head: String,
    /// The commit type of the change request's title (`fix`, `feat`, …).
    pub(super) kind: String,
    /// How the revision's validation went, once it is committed.
    #[serde(default)]
    pub(super) validation: Option<String>,
}

/// The committed change, with everything the change request needs once the worktree is gone.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct FixedChange {
    pub(super) branch: String,
    pub(super) commit: String,
    pub(super) subject: String,
    pub(super) plan_steps: Vec<String>,
    pub(super) changed_files: Vec<String>,
    pub(super) validation: Vec<CommandReport>,
    /// Each validation command on the base commit and on the change (none in checkpoints
    /// written before base runs existed).
    #[serde(default)]
    pub(super) checks: Vec<Comparison>,
    pub(super) repairs: u32,
    pub(super) input_tokens: u64,
    pub(super) output_tokens: u64,
    pub(super) pull_request: PullRequestSection,
    pub(super) keep_on_failure: bool,
    /// The tests that reproduce the issue, or why there are none (none in checkpoints written
    /// before reproductions existed, and for runs that ended before the reproduce stage).
    #[serde(default)]
    pub(super) reproduction: Option<Reproduction>,
    /// The checks found in the repository and run because it configures none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) detected: Vec<DetectedCommand>,
    /// The choice among the job's candidates, in one line, when it asked for several.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) candidates: Option<String>,
    /// Why the change is not proven, when `[candidates] on_unproven = "draft"` kept it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) unproven: Option<String>,
}

impl FixedChange {
    /// The commit a pipeline run made, as the job records it to push it to `branch`; `None`
    /// when the run committed nothing.
    pub(super) fn committed(
        summary: &FixSummary,
        branch: &str,
        pull_request: PullRequestSection,
        keep_on_failure: bool,
    ) -> Option<FixedChange> {
        let (true, Some(commit), Some(subject)) =
            (summary.committed, &summary.commit, &summary.subject)
        else {
            return None;
        };
        Some(FixedChange {
            branch: branch.to_owned(),
            commit: commit.clone(),
            subject: subject.clone(),
            plan_steps: summary.plan_steps.clone(),
            changed_files: summary.changed_files.clone(),
            validation: summary.validation.clone(),
            checks: summary.checks.clone(),
            repairs: summary.repairs,
            input_tokens: summary.input_tokens,
            output_tokens: summary.output_tokens,
            pull_request,
            keep_on_failure,
            reproduction: summary.reproduction.clone(),
            detected: summary.detected.clone(),
            candidates: summary.candidates_line.clone(),
            unproven: summary.unproven.clone(),
        })
    }

    /// Whether the change request opens as a draft: when the repository asks for one, and
    /// when a reproduction was expected and none was found.
    pub(super) fn draft(&self) -> bool {
        self.pull_request.draft
            || self.unproven.is_some()
            || self
                .reproduction
                .as_ref()
                .is_some_and(Reproduction::forces_draft)
    }
}

/// What the pages show of a job, read from its checkpoint: the change request, the model's
/// tokens, the change, and the failure as it was reported (its output already redacted).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobFacts {
    /// The change request's number and web address.
    pub change_request: Option<(u64, String)>,
    pub branch: Option<String>,
    pub subject: Option<String>,
    pub changed_files: Vec<String>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub repairs: u32,
    pub failure: Option<FailureReport>,
}

impl JobFacts {
    /// The facts of a stored checkpoint; an unreadable one has none.
    pub fn read(checkpoint: &str) -> JobFacts {
        let Ok(checkpoint) = serde_json::from_str::<Checkpoint>(checkpoint) else {
            return JobFacts::default();
        };
        let fixed = checkpoint.fixed.as_ref();
        JobFacts {
            change_request: checkpoint.change_request.clone(),
            branch: fixed.map(|fixed| fixed.branch.clone()),
            subject: fixed.map(|fixed| fixed.subject.clone()),
            changed_files: fixed.map(|f| f.changed_files.clone()).unwrap_or_default(),
            input_tokens: fixed.map_or(0, |fixed| fixed.input_tokens),
            output_tokens: fixed.map_or(0, |fixed| fixed.output_tokens),
            repairs: fixed.map_or(0, |fixed| fixed.repairs),
            failure: checkpoint.failure,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::repo::ReproduceMode;

    fn change(draft: bool, reproduction: Option<Reproduction>) -> FixedChange {
        FixedChange {
            branch: "autofix/issue-7".into(),
            commit: "0123456".into(),
            subject: "fix(calc): clamp".into(),
            plan_steps: Vec::new(),
            changed_files: Vec::new(),
            validation: Vec::new(),
            checks: Vec::new(),
            repairs: 0,
            input_tokens: 0,
            output_tokens: 0,
            pull_request: PullRequestSection {
                draft,
                ..PullRequestSection::default()
            },
            keep_on_failure: false,
            reproduction,
            detected: Vec::new(),
            candidates: None,
            unproven: None,
        }
    }

    #[test]
    fn an_unproven_change_kept_for_a_draft_opens_as_one() {
        let mut unproven = change(false, None);
        unproven.unproven = Some("no candidate passes its reproduction".into());
        assert!(unproven.draft());
    }

    #[test]
    fn a_change_without_the_reproduction_it_was_expected_to_have_opens_as_a_draft() {
        let missed = Reproduction::none(ReproduceMode::Preferred, 2, "no test failed");
        assert!(change(false, Some(missed)).draft());
    }

    #[test]
    fn a_change_with_no_reproduction_asked_for_keeps_the_configured_draft_setting() {
        let off = Reproduction::none(
            ReproduceMode::Off,
            0,
            "reproduction is off in .autofix.toml",
        );
        assert!(!change(false, Some(off.clone())).draft());
        assert!(change(true, Some(off)).draft());
        let docs = Reproduction::none(
            ReproduceMode::Preferred,
            0,
            "a `docs` change is not shown by a test",
        );
        assert!(!change(false, Some(docs)).draft());
        assert!(!change(false, None).draft());
    }

    #[test]
    fn a_job_moves_through_its_phases_as_its_checkpoint_records_each_step() {
        let mut checkpoint = Checkpoint::default();
        assert_eq!(checkpoint.phase(), Phase::Requested);
        checkpoint.authorized = true;
        assert_eq!(checkpoint.phase(), Phase::Authorized);
        checkpoint.fixed = Some(change(false, None));
        assert_eq!(checkpoint.phase(), Phase::Committed);
        checkpoint.pushed = Some("0123456".into());
        assert_eq!(checkpoint.phase(), Phase::Pushed);
        checkpoint.change_request = Some((12, "https://forge.example/pr/12".into()));
        assert_eq!(checkpoint.phase(), Phase::Opened);
    }

    #[test]
    fn a_decided_failure_and_a_plan_awaiting_approval_stop_the_job_where_they_are() {
        let mut checkpoint = Checkpoint {
            authorized: true,
            awaiting: Some(ProposedPlan {
                triage: crate::pipeline::triage::Triage {
                    actionable: true,
                    classification: crate::git::CommitKind::Fix,
                    risk: crate::pipeline::triage::Risk::Low,
                    affected_files: vec!["calc.py".into()],
                    reason: "clamp ignores its bounds".into(),
                },
                plan: crate::pipeline::plan::Plan::none(),
            }),
            ..Checkpoint::default()
        };
        assert_eq!(checkpoint.phase(), Phase::AwaitingApproval);
        checkpoint.failure = Some(FailureReport {
            failure: crate::failure::Failure::new(
                crate::failure::FailureCode::ValidationFailed,
                crate::failure::Stage::Validate,
                "`pytest` failed",
            ),
            trigger_label: "auto-fix".into(),
            branch_kept: None,
        });
        assert_eq!(checkpoint.phase(), Phase::Failed);
    }

    #[test]
    fn a_revision_moves_from_its_target_to_the_answer_as_its_checkpoint_records_each_step() {
        let mut checkpoint = Checkpoint::default();
        assert_eq!(checkpoint.revision_phase(), RevisionPhase::Requested);
        checkpoint.revision = Some(RevisionTarget {
            number: 12,
            url: "https://forge.example/pr/12".into(),
            branch: "autofix/issue-7".into(),
            head: String::new(),
            kind: "fix".into(),
            validation: None,
        });
        assert_eq!(checkpoint.revision_phase(), RevisionPhase::Targeted);
        checkpoint.fixed = Some(change(false, None));
        assert_eq!(checkpoint.revision_phase(), RevisionPhase::Committed);
        checkpoint.pushed = Some("0123456".into());
        assert_eq!(checkpoint.revision_phase(), RevisionPhase::Pushed);
        checkpoint.replies.push(("status".into(), 40));
        assert_eq!(checkpoint.revision_phase(), RevisionPhase::Pushed);
        checkpoint.replies.push((REVISION_REPLY.into(), 41));
        assert_eq!(checkpoint.revision_phase(), RevisionPhase::Answered);
    }

    #[test]
    fn following_a_moved_base_compares_first_and_redoes_the_fix_once_replaying_failed() {
        let mut checkpoint = Checkpoint::default();
        assert_eq!(checkpoint.follow_phase(), FollowPhase::Comparing);
        checkpoint.following = true;
        assert_eq!(checkpoint.follow_phase(), FollowPhase::Redoing);
        // Redoing is a fix: its own phases run from the request's check.
        assert_eq!(checkpoint.phase(), Phase::Requested);
    }
}
