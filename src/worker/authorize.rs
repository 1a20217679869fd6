//! Whether a labelled issue may become a job: who added the label (a person with push rights,
//! checked through the forge's API, never from the webhook), and the issue's state now.

use super::publish::{Refusal, is_autofix_change_request_for};
use crate::forge::{Forge, ForgeError, ForgeUser, IssueInfo, IssueNumber, RepoRef};

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

/// Runs the checks in the order that costs the fewest API calls for the common refusals. A
/// `retry` goes ahead although autofix's change request for the issue is open: it updates it.
/// `following` work (the change made again on a moved base) acts for the maintainer who asked
/// for the change request, so the actor, the bot itself, is not checked.
pub async fn check(
    forge: &dyn Forge,
    repo: &RepoRef,
    issue: IssueNumber,
    (actor, bot): (&ForgeUser, &ForgeUser),
    retry: bool,
    following: bool,
) -> Result<Verdict, ForgeError> {
    if following {
        return issue_state(forge, repo, issue, true).await;
    }
    // By login: a GitHub App's bot id is not the App id the API reports, while logins are unique.
    if actor.login.eq_ignore_ascii_case(&bot.login) {
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
    issue_state(forge, repo, issue, retry).await
}

/// The issue's own state: open, not locked, and (unless `retry`) without an open change request.
async fn issue_state(
    forge: &dyn Forge,
    repo: &RepoRef,
    issue: IssueNumber,
    retry: bool,
) -> Result<Verdict, ForgeError> {
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
    if let Some(existing) = open
        .iter()
        .find(|change| is_autofix_change_request_for(&change.body, issue.0))
    {
        return Ok(Verdict::Refuse(Refusal::AlreadyOpen {
            url: existing.url.clone(),
        }));
    }
    Ok(Verdict::Proceed(info))
}
