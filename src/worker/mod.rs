//! The bot's workers: claim queued jobs with a lease, run each from its checkpoint on its own
//! thread (a panic becomes a retry), renew the lease while it runs, and record how it ended.

mod authorize;
mod job;
mod own_marks;
pub mod publish;
pub mod replies;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::Utc;
use tokio::sync::{Notify, watch};
use tracing::Instrument;

use crate::forge::{Forge, ForgeError, ForgeKind, ForgeUser};
use crate::git::{Identity, MirrorCache};
use crate::llm::LlmProvider;
use crate::redact::Redactor;
use crate::store::{ClaimedJob, Finish, JobId, Store, StoreError};
use crate::telemetry::{MeteredStages, Stages, Telemetry};

pub use job::{JobEnd, JobFacts};

/// The worker settings `[bot]`, `[exec]` and `[pipeline]` give.
#[derive(Debug, Clone)]
pub struct WorkerSettings {
    pub trigger_label: String,
    /// The word after `/` that starts a command in a comment.
    pub command_word: String,
    /// Repair commits for failed checks per change request, at most.
    pub ci_max_repairs: u32,
    pub failed_label: String,
    pub workers: usize,
    pub lease: Duration,
    pub poll_interval: Duration,
    pub max_attempts: u32,
    /// Where the branch of a new change request is pushed (`forge.push_to`).
    pub push_to: crate::forge::PushTo,
    /// How every job's pipeline runs: the same settings `autofix fix` uses.
    pub pipeline: crate::pipeline::settings::PipelineSettings,
}

/// Everything a job needs, shared by every worker.
pub struct WorkerContext {
    pub store: Store,
    pub github: Option<Arc<dyn Forge>>,
    pub gitlab: Option<Arc<dyn Forge>>,
    pub llm: Arc<dyn LlmProvider>,
    pub mirrors: MirrorCache,
    /// Per-job worktrees and artifacts live under `<workdir>/jobs/<id>`.
    pub workdir: PathBuf,
    pub identity: Identity,
    pub settings: WorkerSettings,
    /// Every secret of the configuration; each job adds the tokens it is handed.
    pub redactor: Redactor,
    /// Where jobs, stages and lease takeovers are counted for `/metrics`.
    pub telemetry: Arc<Telemetry>,
    bot_users: Mutex<HashMap<ForgeKind, ForgeUser>>,
    /// Unique to this process (host, pid, start time): the worker slots' lease names start with it.
    owner_prefix: String,
    /// Set when the process is stopping: no job is claimed, and a running job stops at its next
    /// stage boundary and goes back to the queue.
    draining: AtomicBool,
}

impl WorkerContext {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        store: Store,
        github: Option<Arc<dyn Forge>>,
        gitlab: Option<Arc<dyn Forge>>,
        llm: Arc<dyn LlmProvider>,
        workdir: PathBuf,
        identity: Identity,
        settings: WorkerSettings,
        redactor: Redactor,
    ) -> WorkerContext {
        WorkerContext {
            store,
            github,
            gitlab,
            llm,
            mirrors: MirrorCache::new(workdir.join("mirrors")),
            workdir,
            identity,
            settings,
            redactor,
            telemetry: Arc::default(),
            bot_users: Mutex::new(HashMap::new()),
            owner_prefix: owner_prefix(),
            draining: AtomicBool::new(false),
        }
    }

    /// The lease name of worker slot `slot` of this process.
    pub fn owner(&self, slot: usize) -> String {
        format!("{}-w{slot}", self.owner_prefix)
    }

    /// Stops taking work: the pool claims nothing more, and running jobs stop at their next
    /// stage boundary, back in the queue for another worker.
    pub fn begin_drain(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    pub(crate) fn draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    /// Counts into `telemetry` (the registry `/metrics` shows) instead of a private one.
    pub fn with_telemetry(mut self, telemetry: Arc<Telemetry>) -> WorkerContext {
        self.telemetry = telemetry;
        self
    }

    /// The stage observers of a job: each stage's duration goes to the metrics.
    pub(crate) fn stages(&self) -> Stages {
        Stages::none().with(Arc::new(MeteredStages::new(self.telemetry.clone())))
    }

    pub(crate) fn forge(&self, kind: ForgeKind) -> Option<Arc<dyn Forge>> {
        match kind {
            ForgeKind::GitHub => self.github.clone(),
            ForgeKind::GitLab => self.gitlab.clone(),
        }
    }

    /// The account the bot acts as on `forge`, asked once per process.
    pub(crate) async fn bot_user(&self, forge: &dyn Forge) -> Result<ForgeUser, ForgeError> {
        let kind = forge.kind();
        if let Some(user) = self.lock_bot_users().get(&kind) {
            return Ok(user.clone());
        }
        let user = forge.bot_user().await?;
        self.lock_bot_users().insert(kind, user.clone());
        Ok(user)
    }

    fn lock_bot_users(&self) -> std::sync::MutexGuard<'_, HashMap<ForgeKind, ForgeUser>> {
        self.bot_users
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// What one attempt to take work did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    /// A job was claimed and run (to an end, or back to the queue).
    Ran(JobId),
    /// Nothing is runnable now.
    Idle,
}

/// Claims one runnable job for `owner` and runs it; `Idle` when there is none.
pub async fn run_one(ctx: &Arc<WorkerContext>, owner: &str) -> Result<Turn, StoreError> {
    let lease = ctx.settings.lease;
    let Some(claimed) = ctx.store.claim(owner, lease, Utc::now()).await? else {
        return Ok(Turn::Idle);
    };
    let id = claimed.id;
    let key = &claimed.key;
    let span = tracing::info_span!(
        "job",
        id = id.0,
        forge = %key.repo.forge,
        repo = %key.repo.path,
        issue = key.issue.0
    );
    async {
        match &claimed.taken_over_from {
            Some(previous) => {
                ctx.telemetry.lease_taken_over();
                tracing::warn!(
                    attempt = claimed.attempts,
                    previous,
                    "job taken over: its lease had run out"
                );
            }
            None => tracing::info!(attempt = claimed.attempts, "job claimed"),
        }
        let (end, seen) = run_with_lease(ctx, claimed, owner).await;
        record_end(ctx, id, owner, end, &seen).await
    }
    .instrument(span)
    .await?;
    Ok(Turn::Ran(id))
}

/// Runs the job on a blocking thread of its own (git and commands block) while this task keeps
/// the lease alive; a panic in the job becomes a retry, never a lost job.
async fn run_with_lease(
    ctx: &Arc<WorkerContext>,
    claimed: ClaimedJob,
    owner: &str,
) -> (JobEnd, Vec<String>) {
    let id = claimed.id;
    let run = job::JobRun::new(ctx.clone(), claimed, owner.to_owned());
    let handle = tokio::runtime::Handle::current();
    // The job's span follows it onto its thread, so every line it logs names the job.
    let span = tracing::Span::current();
    let mut task = tokio::task::spawn_blocking(move || handle.block_on(run.run().instrument(span)));
    let renew_every = ctx.settings.lease / 3;
    loop {
        tokio::select! {
            joined = &mut task => {
                return match joined {
                    Ok(ended) => ended,
                    Err(error) if error.is_panic() => {
                        let reason = format!("the job panicked: {}", panic_text(error));
                        (JobEnd::RetryLater { reason, not_before: None }, Vec::new())
                    }
                    Err(error) => {
                        let reason = format!("the job was cancelled: {error}");
                        (JobEnd::RetryLater { reason, not_before: None }, Vec::new())
                    }
                };
            }
            () = tokio::time::sleep(renew_every) => {
                if let Err(error) = ctx.store.renew(id, owner, ctx.settings.lease, Utc::now()).await {
                    tracing::warn!(%error, "could not renew the lease; the job's next save will stop it");
                }
            }
        }
    }
}

fn panic_text(error: tokio::task::JoinError) -> String {
    let payload = error.into_panic();
    payload
        .downcast_ref::<&str>()
        .map(|text| (*text).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".into())
}

/// Records how the job ended. A finished job that knows which deliveries it handled hands any
/// other (a comment that arrived while it ran) to a follow-up job in the same transaction.
async fn record_end(
    ctx: &WorkerContext,
    id: JobId,
    owner: &str,
    end: JobEnd,
    seen: &[String],
) -> Result<(), StoreError> {
    let now = Utc::now();
    count_end(&ctx.telemetry, &end);
    let recorded = match &end {
        JobEnd::Finished(finish) => {
            match finish {
                Finish::Succeeded => tracing::info!("job succeeded"),
                Finish::Failed(failure) => tracing::info!(
                    code = failure.code.as_str(),
                    stage = failure.stage.as_str(),
                    error = failure.reason,
                    "job ended without a change"
                ),
            }
            if seen.is_empty() {
                ctx.store.finish(id, owner, finish, now).await
            } else {
                let follow_up = ctx
                    .store
                    .finish_and_follow_up(id, owner, finish, seen, now)
                    .await;
                if let Ok(Some(next)) = &follow_up {
                    tracing::info!(
                        follow_up = next.0,
                        "deliveries that came while the job ran start a follow-up job"
                    );
                }
                follow_up.map(drop)
            }
        }
        JobEnd::FailedUnreported { failure, why } => {
            tracing::warn!(
                code = failure.code.as_str(),
                error = failure.reason,
                why,
                "job failed and its report could not be posted"
            );
            let max_tries = ctx.settings.max_attempts;
            ctx.store
                .finish_unreported(id, owner, failure, why, max_tries, now)
                .await
                .map(drop)
        }
        JobEnd::Released => {
            let released = ctx
                .store
                .release(id, owner, "the server is stopping", now)
                .await;
            if let Ok(true) = released {
                tracing::info!("job stopped between two stages and put back in the queue");
            }
            released.map(drop)
        }
        JobEnd::RetryLater { reason, not_before } => {
            let at = ctx
                .store
                .retry_later(id, owner, reason, *not_before, now)
                .await;
            if let Ok(at) = &at {
                tracing::warn!(reason, retry_at = %at, "job will be retried");
            }
            at.map(drop)
        }
    };
    match recorded {
        // Another worker took the job over after our lease ran out: its outcome is theirs to record.
        Err(StoreError::LeaseLost { .. }) => {
            tracing::warn!("the lease was lost before the job's end could be recorded");
            Ok(())
        }
        other => other,
    }
}

fn count_end(telemetry: &Telemetry, end: &JobEnd) {
    match end {
        JobEnd::Finished(Finish::Succeeded) => telemetry.job_finished("succeeded", None),
        JobEnd::Finished(Finish::Failed(failure)) | JobEnd::FailedUnreported { failure, .. } => {
            telemetry.job_finished("failed", Some(failure.code.as_str()))
        }
        JobEnd::RetryLater { .. } => telemetry.job_finished("retry", None),
        JobEnd::Released => telemetry.job_finished("released", None),
    }
}

/// Runs jobs until none is runnable (tests and `autofix serve --once`-like callers).
pub async fn run_until_idle(
    ctx: &Arc<WorkerContext>,
    owner: &str,
) -> Result<Vec<JobId>, StoreError> {
    let mut ran = Vec::new();
    while let Turn::Ran(id) = run_one(ctx, owner).await? {
        ran.push(id);
    }
    Ok(ran)
}

/// What no other process uses: host, process, start time.
fn owner_prefix() -> String {
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "host".into());
    format!(
        "{host}-{}-{}",
        std::process::id(),
        Utc::now().timestamp_millis()
    )
}

/// The worker pool of `autofix serve`: `settings.workers` loops that take jobs as they come
/// (woken by `wake` when the ingress queues one, or every poll interval) until `stop` is set;
/// then the pool drains: it claims nothing more and ends when its jobs reach a stage's end.
pub async fn run_pool(ctx: Arc<WorkerContext>, wake: Arc<Notify>, stop: watch::Receiver<bool>) {
    let mut loops = tokio::task::JoinSet::new();
    let mut drain = stop.clone();
    let drain_ctx = ctx.clone();
    loops.spawn(async move {
        while !*drain.borrow_and_update() {
            if drain.changed().await.is_err() {
                return;
            }
        }
        drain_ctx.begin_drain();
    });
    for slot in 0..ctx.settings.workers.max(1) {
        let ctx = ctx.clone();
        let wake = wake.clone();
        let mut stop = stop.clone();
        loops.spawn(async move {
            let owner = ctx.owner(slot);
            while !*stop.borrow() && !ctx.draining() {
                match run_one(&ctx, &owner).await {
                    Ok(Turn::Ran(_)) => continue,
                    Ok(Turn::Idle) => {}
                    Err(error) => {
                        tracing::error!(%error, "the worker could not reach the job store")
                    }
                }
                tokio::select! {
                    () = wake.notified() => {}
                    () = tokio::time::sleep(ctx.settings.poll_interval) => {}
                    _ = stop.changed() => {}
                }
            }
        });
    }
    while loops.join_next().await.is_some() {}
}

/// Puts back in the queue every job this process's workers still hold: what a stopping server
/// does when its jobs did not reach a stage's end within the drain time. The released job ids.
pub async fn release_held(ctx: &WorkerContext) -> Vec<JobId> {
    let mut released = Vec::new();
    for slot in 0..ctx.settings.workers.max(1) {
        let owner = ctx.owner(slot);
        match ctx
            .store
            .release_all(
                &owner,
                "the server stopped before the stage ended",
                Utc::now(),
            )
            .await
        {
            Ok(ids) => released.extend(ids),
            Err(error) => {
                tracing::error!(%error, "could not release the jobs of {owner}; their leases will run out")
            }
        }
    }
    released
}
