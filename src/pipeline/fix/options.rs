//! What a run of the pipeline is given: the repository, the issue, the settings, and how a
//! maintainer takes part (a revision, the plan's approval, a cancel).

use std::path::PathBuf;

use serde::Serialize;

use super::CandidateLimits;
use crate::config::repo::LoadedRepoConfig;
use crate::exec::StopSignal;
use crate::git::{CommitKind, Identity};
use crate::llm::spend::SpendGuard;
use crate::pipeline::dep_cache::DepCacheOptions;
use crate::pipeline::issue::Issue;
use crate::pipeline::plan::Plan;
use crate::pipeline::proof::Reproduction;
use crate::pipeline::settings::PipelineSettings;
use crate::pipeline::triage::Triage;
use crate::redact::Redactor;
use crate::telemetry::Stages;

/// Where the issue comes from: a file (`autofix fix`) or the forge (the bot's worker).
pub enum IssueInput {
    File(PathBuf),
    Given(Issue),
}

/// A revision of an open change request: the work tree is checked out at its branch (a
/// person's commits on it included), the issue text carries what the reviewers asked, and the
/// run ends in one more commit on that branch. Triage is skipped: a maintainer asked.
#[derive(Debug, Clone)]
pub struct Revision {
    /// The type of the new commit: the change request's own.
    pub kind: CommitKind,
}

/// How the plan is agreed when `.autofix.toml` says `[approval] required = true`.
#[derive(Debug, Clone, Default)]
pub enum Approval {
    /// Plan approval does not apply (`autofix fix` on a person's own machine).
    #[default]
    NotAsked,
    /// Stop after triage and plan when the repository requires approval, returning them as
    /// [`FixSummary::proposed`].
    Ask,
    /// Edit to the triage and plan a maintainer approved, without asking for them again.
    Approved(Box<ProposedPlan>),
}

/// A triage and plan waiting for (or given) a maintainer's approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ProposedPlan {
    pub triage: Triage,
    pub plan: Plan,
}

/// Set from outside (a maintainer's `cancel`) to stop a run at its next stage boundary; a
/// command running then is stopped at once.
#[derive(Debug, Clone, Default)]
pub struct CancelFlag(StopSignal);

impl CancelFlag {
    pub fn cancel(&self) {
        self.0.stop();
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.is_stopped()
    }

    /// A signal the job's commands stop by: set by this cancel, or on its own.
    pub(super) fn signal(&self) -> StopSignal {
        self.0.child()
    }
}

/// Everything one `autofix fix` needs besides the LLM.
pub struct FixOptions {
    pub repo: PathBuf,
    pub issue: IssueInput,
    /// Overrides the number in the issue file.
    pub issue_number: Option<u64>,
    /// The `Autofix-Job` trailer of the commit; `fix-<issue>` when not given.
    pub job_id: Option<String>,
    /// Artifact folder; by default `<git dir>/autofix/runs/issue-<number>-<time>`. Either way a
    /// folder another run holds is left alone and `<folder>-2` (`-3`, …) used instead.
    pub artifacts: Option<PathBuf>,
    pub identity: Identity,
    /// The service's settings for every run: time limits, output and prompt sizes, the sandbox.
    pub settings: PipelineSettings,
    /// Hides every secret the process knows from the artifacts and from what the model reads.
    pub redactor: Redactor,
    /// The job's cache folder: writable by `[[setup]]`, read-only to validation, named to both
    /// as `CACHE_DIR`. `None`: a folder beside the artifacts.
    pub cache_dir: Option<PathBuf>,
    /// The dependency caches kept between jobs on the repository (`exec.cache_max_bytes`).
    pub dep_cache: DepCacheOptions,
    /// The repository's configuration as the caller already read it from `repo`'s work tree,
    /// so a job reads `.autofix.toml` once; `None`: read at preflight.
    pub repo_config: Option<LoadedRepoConfig>,
    /// Where the checks' results on a base commit are cached; by default
    /// `<git dir>/autofix/baselines`.
    pub baseline_cache: Option<PathBuf>,
    /// Told as each stage starts and ends (a terminal, the metrics).
    pub stages: Stages,
    /// `Some`: revise the change request checked out in `repo` instead of fixing from scratch.
    pub revision: Option<Revision>,
    /// Checked at every stage boundary.
    pub cancel: CancelFlag,
    /// Whether the plan waits for a maintainer's approval, or was approved.
    pub approval: Approval,
    /// The reproduction the change request was opened with (a revision, a replay onto a new
    /// base): no new one is asked for; its tests run again, must pass, and are reported again.
    pub earlier_reproduction: Option<Reproduction>,
    /// The model's price and the job's spending caps: checked before every model call and
    /// told each answer's cost. Shared by every clone (concurrent candidates included).
    pub spend: SpendGuard,
    /// The service's limits on candidates (`candidates.max`, `exec.parallel_candidates`).
    pub candidates: CandidateLimits,
}
