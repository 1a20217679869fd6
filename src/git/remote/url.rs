//! `RemoteUrl`: an http(s) clone URL checked to carry no credentials, and the host the token may
//! be sent to.

use crate::git::GitError;

/// A forge's clone URL (`https://host/owner/repo.git`) with nothing secret in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RemoteUrl {
    url: String,
    /// `host[:port]`, lowercased: the only place credentials are answered for.
    authority: String,
}

impl RemoteUrl {
    /// Accepts `http://` and `https://` URLs naming a host and a path, without user info.
    pub(crate) fn parse(url: &str) -> Result<Self, GitError> {
        let refuse = |reason| GitError::InvalidRemoteUrl {
            url: masked(url),
            reason,
        };
        if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(refuse("it contains whitespace or control characters"));
        }
        let Some((scheme, rest)) = url.split_once("://") else {
            return Err(refuse("it is not a URL (no scheme://)"));
        };
        if !matches!(scheme.to_ascii_lowercase().as_str(), "http" | "https") {
            return Err(refuse(
                "only http:// and https:// remotes are supported: the token travels as HTTP Basic auth",
            ));
        }
        let (authority, path) = split_authority(rest);
        if authority.contains('@') {
            return Err(refuse(
                "it embeds credentials; pass the token through GitCredentials instead",
            ));
        }
        if authority.is_empty() || authority.starts_with(':') {
            return Err(refuse("it names no host"));
        }
        if path.trim_matches('/').is_empty() {
            return Err(refuse("it names no repository path"));
        }
        Ok(RemoteUrl {
            url: url.to_string(),
            authority: authority.to_ascii_lowercase(),
        })
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.url
    }

    /// Whether `url` (as libgit2 reports it when asking for credentials, possibly after a
    /// redirect) is on this URL's host and port.
    pub(crate) fn same_authority(&self, url: &str) -> bool {
        url.split_once("://")
            .map(|(_, rest)| split_authority(rest).0)
            .map(|authority| authority.rsplit('@').next().unwrap_or(authority))
            .is_some_and(|authority| authority.eq_ignore_ascii_case(&self.authority))
    }
}

impl std::fmt::Display for RemoteUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.url)
    }
}

/// `host:port` and the rest, from what follows `scheme://`.
fn split_authority(rest: &str) -> (&str, &str) {
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    rest.split_at(end)
}

/// The URL with any user info replaced by `***`, so a refused URL never echoes a password.
fn masked(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority, path) = split_authority(rest);
    match authority.rsplit_once('@') {
        Some((_, host)) => format!("{scheme}://***@{host}{path}"),
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::failure::FailureCode;

    fn refusal(url: &str) -> String {
        let error = RemoteUrl::parse(url).unwrap_err();
        assert_eq!(error.failure_code(), FailureCode::InvalidInput);
        error.to_string()
    }

    #[test]
    fn an_https_clone_url_is_accepted() {
        let url = RemoteUrl::parse("https://github.com/octocat/Hello-World.git").unwrap();
        assert_eq!(url.as_str(), "https://github.com/octocat/Hello-World.git");
    }

    #[test]
    fn a_plain_http_url_with_a_port_is_accepted() {
        let url = RemoteUrl::parse("http://127.0.0.1:8080/group/sub/project.git").unwrap();
        assert!(url.same_authority("http://127.0.0.1:8080/group/sub/project.git/info/refs"));
    }

    #[test]
    fn a_url_with_a_password_is_refused_without_echoing_it() {
        let message = refusal("https://x-access-token:ghs_secret@github.com/o/r.git");
        assert!(message.contains("embeds credentials"), "{message}");
        assert!(!message.contains("ghs_secret"), "{message}");
        assert!(
            message.contains("https://***@github.com/o/r.git"),
            "{message}"
        );
    }

    #[test]
    fn a_url_with_only_a_user_name_is_refused_too() {
        assert!(refusal("https://oauth2@gitlab.com/g/p.git").contains("embeds credentials"));
    }

    #[test]
    fn ssh_and_local_remotes_are_refused() {
        assert!(refusal("ssh://git@github.com/o/r.git").contains("only http:// and https://"));
        assert!(refusal("file:///srv/repo.git").contains("only http:// and https://"));
        assert!(refusal("git@github.com:o/r.git").contains("no scheme://"));
    }

    #[test]
    fn a_url_without_host_or_path_is_refused() {
        assert!(refusal("https:///o/r.git").contains("names no host"));
        assert!(refusal("https://github.com/").contains("names no repository path"));
    }

    #[test]
    fn a_url_with_a_newline_is_refused() {
        assert!(refusal("https://github.com/o/r.git\nx").contains("whitespace or control"));
    }

    #[test]
    fn credentials_are_answered_only_for_the_same_host_and_port() {
        let url = RemoteUrl::parse("https://github.com/o/r.git").unwrap();
        assert!(url.same_authority("https://GitHub.com/o/r.git/info/refs"));
        assert!(!url.same_authority("https://evil.example/o/r.git"));
        assert!(!url.same_authority("https://github.com:444/o/r.git"));
    }
}
