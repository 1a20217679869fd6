//! `autofix replay DELIVERY_ID`: a stored webhook delivery read again from its payload with its
//! forge's parser and today's triggers, and queued once more under a new delivery id so the
//! original stays. The one place a stored payload is parsed again.

use std::fmt;

use chrono::{DateTime, Utc};

use crate::forge::{BotEvent, Thread, Triggers, parse_delivery};
use crate::store::{
    Delivery, EnqueueOutcome, JobId, JobKey, RepoKey, Store, StoreError, StoredDelivery,
};

/// Replays of one delivery before giving up looking for an unused `<id>.replay-<n>`.
const MAX_REPLAYS: u32 = 1000;

/// What a replay did; each prints as the one line the command shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplayOutcome {
    /// A new job: the issue had none active (typically its last one finished).
    Queued {
        job: JobId,
        issue: String,
        delivery: String,
    },
    /// The issue's active job took the replayed delivery; no second job.
    AlreadyActive {
        job: JobId,
        issue: String,
        delivery: String,
    },
    /// The delivery does not start a job (today): nothing was written.
    NotATrigger { original: String, reason: String },
}

impl ReplayOutcome {
    /// Whether a job now works on the issue: the command exits 0 then, 1 otherwise.
    pub fn has_job(&self) -> bool {
        !matches!(self, ReplayOutcome::NotATrigger { .. })
    }
}

impl fmt::Display for ReplayOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplayOutcome::Queued {
                job,
                issue,
                delivery,
            } => write!(f, "job {job} queued for {issue} (delivery {delivery})"),
            ReplayOutcome::AlreadyActive {
                job,
                issue,
                delivery,
            } => write!(
                f,
                "job {job} is already active for {issue}; delivery {delivery} joined it"
            ),
            ReplayOutcome::NotATrigger { original, reason } => write!(
                f,
                "delivery {original} is not a trigger event: {reason}; nothing queued"
            ),
        }
    }
}

/// Why nothing could be replayed.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("no delivery {0:?} is stored")]
    NoSuchDelivery(String),
    #[error("delivery {delivery:?} cannot be read: {reason}; nothing queued")]
    Unreadable { delivery: String, reason: String },
    #[error("delivery {0:?} was already replayed {MAX_REPLAYS} times; nothing queued")]
    TooManyReplays(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Reads delivery `id`, re-parses it with `trigger_label` and records it again as
/// `<id>.replay-<n>` (the first unused n) with its job, in one transaction.
pub async fn replay(
    store: &Store,
    id: &str,
    triggers: &Triggers<'_>,
    now: DateTime<Utc>,
) -> Result<ReplayOutcome, ReplayError> {
    let stored = store
        .delivery(id)
        .await?
        .ok_or_else(|| ReplayError::NoSuchDelivery(id.to_owned()))?;
    let parsed = parse_delivery(stored.forge, &stored.event, &stored.payload, triggers).map_err(
        |error| ReplayError::Unreadable {
            delivery: stored.id.clone(),
            reason: error.to_string(),
        },
    )?;
    let key = match job_key(store, &stored, &parsed).await? {
        Ok(key) => key,
        Err(reason) => {
            return Ok(ReplayOutcome::NotATrigger {
                original: id.to_owned(),
                reason,
            });
        }
    };
    let issue = format!("{}#{}", key.repo, key.issue.0);
    for n in 1..=MAX_REPLAYS {
        let again = Delivery {
            id: format!("{id}.replay-{n}"),
            forge: stored.forge,
            event: stored.event.clone(),
            received_at: now,
            payload: stored.payload.clone(),
            parsed: parsed.clone(),
        };
        let delivery = again.id.clone();
        let issue = issue.clone();
        match store.record_delivery_and_enqueue(&again, &key, now).await? {
            EnqueueOutcome::DuplicateDelivery => continue,
            EnqueueOutcome::NewJob(job) => {
                return Ok(ReplayOutcome::Queued {
                    job,
                    issue,
                    delivery,
                });
            }
            EnqueueOutcome::ActiveJobExists(job) => {
                return Ok(ReplayOutcome::AlreadyActive {
                    job,
                    issue,
                    delivery,
                });
            }
        }
    }
    Err(ReplayError::TooManyReplays(id.to_owned()))
}

/// The job key the delivery starts a job for, or (inside) why it starts none.
async fn job_key(
    store: &Store,
    stored: &StoredDelivery,
    parsed: &BotEvent,
) -> Result<Result<JobKey, String>, ReplayError> {
    match parsed {
        BotEvent::IssueLabeled { repo, issue, .. } => Ok(Ok(JobKey::for_issue(repo, *issue))),
        // One delivery per change request was recorded for the push: replayed, it goes to the
        // same issue's job again.
        BotEvent::BaseMoved { .. } => match stored.job_id {
            Some(job) => Ok(Ok(store.job_show(job).await?.job.key)),
            None => Ok(Err(
                "a push to the default branch that no job took".to_owned()
            )),
        },
        BotEvent::Remark(remark) => match remark.thread {
            Thread::Issue(issue) => Ok(Ok(JobKey::for_issue(&remark.repo, issue))),
            Thread::ChangeRequest(number) => {
                let record = store
                    .change_request(&RepoKey::of(&remark.repo), number)
                    .await?;
                Ok(record.map(|record| record.key).ok_or_else(|| {
                    "said on a pull or merge request autofix did not open".to_owned()
                }))
            }
        },
        BotEvent::Ignored { reason } => Ok(Err(reason.clone())),
    }
}
