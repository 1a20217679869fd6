//! The polite comment posted once when the bot declines a labelled issue, and the short reason
//! kept in the job record, one for each way a request can be refused.

use crate::store::JobId;

/// Why the bot will not work on a labelled issue; each becomes one polite comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The label was added by a bot account.
    Bot {
        login: String,
    },
    /// The person who added the label may not push to the repository.
    NoPushRights {
        login: String,
        permission: String,
    },
    Closed,
    Locked,
    /// An autofix pull request for this issue is already open.
    AlreadyOpen {
        url: String,
    },
}

impl Refusal {
    /// A short reason for the job record.
    pub fn summary(&self) -> String {
        match self {
            Refusal::Bot { login } => format!("the label was added by the bot account @{login}"),
            Refusal::NoPushRights { login, permission } => {
                format!("@{login} may not push (permission: {permission})")
            }
            Refusal::Closed => "the issue is closed".into(),
            Refusal::Locked => "the issue is locked".into(),
            Refusal::AlreadyOpen { url } => format!("an autofix change is already open: {url}"),
        }
    }
}

/// The comment posted once when the bot declines a request.
pub fn refusal_comment(refusal: &Refusal, trigger_label: &str, job: JobId) -> String {
    let body = match refusal {
        Refusal::Bot { login } => format!(
            "Thanks for the label, but autofix only starts work when a person adds `{trigger_label}`; \
             @{login} is a bot account, so nothing was done."
        ),
        Refusal::NoPushRights { login, .. } => format!(
            "Thanks, @{login}! autofix only starts work when someone who can push to this repository \
             adds `{trigger_label}`, and your account cannot. A maintainer can add the label to ask for a fix."
        ),
        Refusal::Closed => format!(
            "autofix did not start: this issue is closed. Reopen it and add `{trigger_label}` again to ask for a fix."
        ),
        Refusal::Locked => format!(
            "autofix did not start: this issue is locked. Unlock it and add `{trigger_label}` again to ask for a fix."
        ),
        Refusal::AlreadyOpen { url } => format!(
            "autofix did not start another fix: {url} is already open for this issue. \
             Close it first if you want a new attempt."
        ),
    };
    format!("{body}\n\n<!-- autofix:refusal job={job} -->\n")
}
