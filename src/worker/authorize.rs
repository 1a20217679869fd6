//! Whether a labelled issue may become a job: who added the label (a person with push rights,
//! checked through the forge's API, never from the webhook), and the issue's state now.

use super::own_marks::Own;
use super::publish::Refusal;
use crate::forge::{Forge, ForgeError, ForgeUser, IssueInfo, IssueNumber, RepoRef};
use crate::store::{Store, StoreError};

/// What the checks decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Go ahead, with the issue as the API reports it now.
    Proceed(IssueInfo),
    /// Decline with one polite comment.
    Refuse(Refusal),
    /// Decline without a word: the bot labelled the issue itself, and answering itself could loop.
    Ignore(String),
}

/// Why the checks could not be made: the forge or the job store failed.
#[derive(Debug)]
pub enum CheckError {
    Forge(ForgeError),
    Store(StoreError),
}

impl From<ForgeError> for CheckError {
    fn from(error: ForgeError) -> Self {
        CheckError::Forge(error)
    }
}

impl From<StoreError> for CheckError {
    fn from(error: StoreError) -> Self {
        CheckError::Store(error)
    }
}

/// Runs the checks in the order that costs the fewest API calls for the common refusals. A
/// `retry` goes ahead although autofix's change request for the issue is open: it updates it.
/// `following` work (the change made again on a moved base) acts for the maintainer who asked
/// for the change request, so the actor, the bot itself, is not checked.
pub async fn check(
    (forge, store): (&dyn Forge, &Store),
    repo: &RepoRef,
    issue: IssueNumber,
    (actor, bot): (&ForgeUser, &ForgeUser),
    retry: bool,
    following: bool,
) -> Result<Verdict, CheckError> {
    let own = Own::new(forge.kind(), bot);
    if following {
        return issue_state((forge, store), repo, issue, own, true).await;
    }
    if own.is_the_bot(actor) {
        return Ok(Verdict::Ignore(format!(
            "the label was added by the bot itself (@{})",
            actor.login
        )));
    }
    if actor.is_bot {
        return Ok(Verdict::Refuse(Refusal::Bot {
            login: actor.login.clone(),
        }));
    }
    let permission = forge.permission(repo, actor).await?;
    if !permission.may_push() {
        return Ok(Verdict::Refuse(Refusal::NoPushRights {
            login: actor.login.clone(),
            permission: permission.as_str().to_owned(),
        }));
    }
    issue_state((forge, store), repo, issue, own, retry).await
}

/// The issue's own state: open, not locked, and (unless `retry`) without an open change request
/// of autofix's. A change request that only says it is autofix's (a fork's, with the hidden
/// line copied into its body) is no reason to decline, and is never linked.
async fn issue_state(
    (forge, store): (&dyn Forge, &Store),
    repo: &RepoRef,
    issue: IssueNumber,
    own: Own<'_>,
    retry: bool,
) -> Result<Verdict, CheckError> {
    let info = forge.issue(repo, issue).await?;
    if !info.open {
        return Ok(Verdict::Refuse(Refusal::Closed));
    }
    if info.locked {
        return Ok(Verdict::Refuse(Refusal::Locked));
    }
    if retry {
        return Ok(Verdict::Proceed(info));
    }
    let open = forge.open_change_requests(repo).await?;
    let ours = own.open_change_requests(store, repo, open).await?;
    if let Some((existing, _)) = ours.iter().find(|(_, record)| record.key.issue == issue) {
        return Ok(Verdict::Refuse(Refusal::AlreadyOpen {
            url: existing.url.clone(),
        }));
    }
    Ok(Verdict::Proceed(info))
}
