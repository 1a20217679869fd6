//! Stories about the GitLab client's own rules: project paths as one encoded segment, API URLs
//! and labels it refuses, and the draft prefix of a merge request's title.

use super::names::merge_request_title;
use super::*;
use crate::forge::{ForgeKind, NewChangeRequest};

fn repo(path: &str) -> RepoRef {
    RepoRef {
        forge: ForgeKind::GitLab,
        owner_path: path.into(),
        clone_url: format!("https://gitlab.example.com/{path}.git"),
        default_branch: None,
    }
}

fn client(api: &str) -> GitLabClient {
    GitLabClient::new(
        api,
        SecretString::from("glpat-0123456789abcdef"),
        Duration::from_secs(5),
        RetryPolicy::default(),
    )
    .unwrap()
}

#[test]
fn a_nested_project_path_becomes_one_encoded_segment() {
    let client = client("https://gitlab.example.com/api/v4/");
    let url = client
        .issue_endpoint(&repo("group/sub/project"), IssueNumber(7), &["notes"])
        .unwrap();
    assert_eq!(
        url.as_str(),
        "https://gitlab.example.com/api/v4/projects/group%2Fsub%2Fproject/issues/7/notes"
    );
    assert_eq!(client.api_url(), "https://gitlab.example.com/api/v4");
}

#[test]
fn a_github_repository_is_refused_by_name() {
    let mut github = repo("octocat/Hello-World");
    github.forge = ForgeKind::GitHub;
    let err = project_path(&github).unwrap_err().to_string();
    assert!(
        err.contains("octocat/Hello-World") && err.contains("GitHub"),
        "{err}"
    );
}

#[test]
fn an_empty_path_segment_is_refused() {
    let err = project_path(&repo("group//project"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("group//project"), "{err}");
}

#[test]
fn api_urls_with_credentials_or_other_schemes_are_refused() {
    let token = || SecretString::from("glpat-0123456789abcdef");
    for (url, why) in [
        ("ftp://gitlab.example.com/api/v4", "http(s)"),
        ("https://user:pw@gitlab.example.com/api/v4", "credentials"),
        ("gitlab.example.com", "not a URL"),
        ("https://gitlab.example.com/api/v4?x=1", "query"),
    ] {
        let err = GitLabClient::new(url, token(), Duration::from_secs(1), RetryPolicy::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains(why), "{url}: {err}");
    }
}

#[test]
fn labels_with_commas_or_nothing_in_them_are_refused() {
    assert!(check_label("needs review").is_ok());
    assert!(
        check_label("a,b")
            .unwrap_err()
            .to_string()
            .contains("comma")
    );
    assert!(check_label(" ").unwrap_err().to_string().contains("empty"));
}

#[test]
fn a_draft_gets_the_prefix_once() {
    let mut request = NewChangeRequest {
        title: "fix(lib): handle empty input".into(),
        body: String::new(),
        head: "autofix/7".into(),
        head_repo: None,
        base: "main".into(),
        draft: true,
        reviewers: vec![],
        labels: vec![],
    };
    assert_eq!(
        merge_request_title(&request),
        "Draft: fix(lib): handle empty input"
    );
    request.title = "Draft: already".into();
    assert_eq!(merge_request_title(&request), "Draft: already");
    request.draft = false;
    request.title = "ready".into();
    assert_eq!(merge_request_title(&request), "ready");
}
