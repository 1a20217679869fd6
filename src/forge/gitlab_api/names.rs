//! The names GitLab is given, checked before any request: the API root, a project's full path,
//! label names, a merge request's title, and how messages name a thread.

use reqwest::Url;

use super::json;
use crate::forge::{ForgeError, ForgeKind, NewChangeRequest, RepoRef, Thread};
/// `issue #7` or `merge request !12`, for error messages.
pub(super) fn thread_name(thread: Thread) -> String {
    match thread {
        Thread::Issue(issue) => format!("issue {issue}"),
        Thread::ChangeRequest(iid) => format!("merge request !{iid}"),
    }
}

pub(super) fn parse_api_url(api_url: &str) -> Result<Url, ForgeError> {
    let refuse =
        |why: &str| ForgeError::Configuration(format!("the GitLab API URL `{api_url}` {why}"));
    let url = Url::parse(api_url.trim()).map_err(|err| refuse(&format!("is not a URL ({err})")))?;
    if !matches!(url.scheme(), "http" | "https") || url.cannot_be_a_base() {
        return Err(refuse("is not an http(s) URL"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(refuse(
            "must not carry credentials; the token is configured on its own",
        ));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(refuse("must not have a query or fragment"));
    }
    Ok(url)
}

/// The project's full path, which GitLab takes in place of its numeric id once URL-encoded.
pub(super) fn project_path(repo: &RepoRef) -> Result<&str, ForgeError> {
    if repo.forge != ForgeKind::GitLab {
        return Err(ForgeError::Configuration(format!(
            "{} is a {:?} repository, not a GitLab project",
            repo.owner_path, repo.forge
        )));
    }
    let path = repo.owner_path.trim_matches('/');
    if path.is_empty() || path.split('/').any(str::is_empty) {
        return Err(ForgeError::Configuration(format!(
            "`{}` is not a GitLab project path like group/project",
            repo.owner_path
        )));
    }
    Ok(path)
}

/// GitLab splits `add_labels` on commas, so a comma would silently become two labels.
pub(super) fn check_label(label: &str) -> Result<(), ForgeError> {
    if label.trim().is_empty() {
        return Err(ForgeError::Configuration(
            "a GitLab label name cannot be empty".into(),
        ));
    }
    if label.contains(',') {
        return Err(ForgeError::Configuration(format!(
            "the label {label:?} contains a comma, which GitLab would read as two labels"
        )));
    }
    Ok(())
}

/// GitLab has no draft flag on creation: a `Draft: ` title prefix makes one.
pub(super) fn merge_request_title(request: &NewChangeRequest) -> String {
    if request.draft && !request.title.starts_with(json::DRAFT_PREFIX) {
        format!("{}{}", json::DRAFT_PREFIX, request.title)
    } else {
        request.title.clone()
    }
}
