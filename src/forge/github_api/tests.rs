//! Stories about the GitHub client's own rules: which repository paths it accepts, how it
//! encodes a path segment, and how its waits between attempts grow.

use std::time::Duration;

use super::*;
use crate::forge::ForgeKind;

fn repo(forge: ForgeKind, owner_path: &str) -> RepoRef {
    RepoRef {
        forge,
        owner_path: owner_path.into(),
        clone_url: String::new(),
        default_branch: None,
    }
}

#[test]
fn a_repository_path_without_an_owner_is_refused_by_name() {
    let err = repo_path(&repo(ForgeKind::GitHub, "hello-world")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`hello-world` is not a GitHub repository path (expected owner/name)"
    );
}

#[test]
fn a_gitlab_repository_is_refused_by_the_github_client() {
    let err = repo_path(&repo(ForgeKind::GitLab, "group/project")).unwrap_err();
    assert!(err.to_string().contains("not a GitHub repository"), "{err}");
}

#[test]
fn label_names_are_percent_encoded_as_one_path_segment() {
    assert_eq!(encode("needs review/ui"), "needs%20review%2Fui");
    assert_eq!(encode("auto-fix"), "auto-fix");
}

#[test]
fn backoff_doubles_up_to_its_ceiling() {
    let policy = RetryPolicy {
        initial_backoff: Duration::from_millis(100),
        max_backoff: Duration::from_millis(350),
        ..RetryPolicy::default()
    };
    let waits: Vec<u128> = (1..=4).map(|n| policy.backoff(n).as_millis()).collect();
    assert_eq!(waits, [100, 200, 350, 350]);
}
