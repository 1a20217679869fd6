//! How the GitHub client names things in its URLs: a repository's `owner/name` checked and
//! percent-encoded, path segments, and the issue number a thread goes by.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use crate::forge::{ForgeError, ForgeKind, IssueNumber, RepoRef, Thread};

/// Characters left as they are in a path segment (RFC 3986 unreserved).
const PATH_SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// `owner/name` with each part percent-encoded, after checking `repo` is a GitHub repository.
pub(super) fn repo_path(repo: &RepoRef) -> Result<String, ForgeError> {
    if repo.forge != ForgeKind::GitHub {
        return Err(ForgeError::Configuration(format!(
            "{} is not a GitHub repository; the GitHub client cannot reach it",
            repo.owner_path
        )));
    }
    match repo.owner_path.split('/').collect::<Vec<_>>().as_slice() {
        [owner, name] if !owner.is_empty() && !name.is_empty() => {
            Ok(format!("{}/{}", encode(owner), encode(name)))
        }
        _ => Err(ForgeError::Configuration(format!(
            "`{}` is not a GitHub repository path (expected owner/name)",
            repo.owner_path
        ))),
    }
}

/// The account that owns `repo` (`octocat` of `octocat/Hello-World`).
pub(super) fn owner_of(repo: &RepoRef) -> Result<&str, ForgeError> {
    repo_path(repo)?;
    Ok(repo.owner_path.split('/').next().unwrap_or_default())
}

pub(super) fn encode(segment: &str) -> String {
    utf8_percent_encode(segment, PATH_SEGMENT).to_string()
}

pub(super) fn issue_action(verb: &str, repo: &RepoRef, issue: IssueNumber) -> String {
    format!("{verb} issue {issue} of {}", repo.owner_path)
}

/// Issues and pull requests share one number sequence and one comment API on GitHub.
pub(super) fn thread_number(thread: Thread) -> IssueNumber {
    match thread {
        Thread::Issue(issue) => issue,
        Thread::ChangeRequest(number) => IssueNumber(number),
    }
}
