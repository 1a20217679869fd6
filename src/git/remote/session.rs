//! One conversation with a forge remote: the credentials callback that answers with the token
//! once per connection, and the mapping of libgit2's failures to errors a job can report.

use std::cell::Cell;

use git2::{Cred, CredentialType, ErrorClass, ErrorCode, RemoteCallbacks};
use secrecy::ExposeSecret;

use super::url::RemoteUrl;
use crate::forge::GitCredentials;
use crate::git::GitError;
use crate::git::error::RemoteOperation;

/// The token for one operation on one remote, and what the server did with it.
pub(crate) struct Session<'a> {
    url: &'a RemoteUrl,
    creds: &'a GitCredentials,
    operation: RemoteOperation,
    /// The server asked again after the token was given: it refused it.
    refused: Cell<bool>,
    /// libgit2 asked for credentials for another host (a redirect): the token was withheld.
    foreign_host: Cell<bool>,
}

impl<'a> Session<'a> {
    pub(crate) fn new(
        url: &'a RemoteUrl,
        creds: &'a GitCredentials,
        operation: RemoteOperation,
    ) -> Self {
        Session {
            url,
            creds,
            operation,
            refused: Cell::new(false),
            foreign_host: Cell::new(false),
        }
    }

    /// Callbacks for one connection. libgit2 asks again when the server refuses what it was
    /// given; answering again would loop until its replay limit, so the second ask fails.
    pub(crate) fn callbacks(&self) -> RemoteCallbacks<'_> {
        let mut answered = false;
        let mut callbacks = RemoteCallbacks::new();
        callbacks.credentials(move |asked_for, _username_in_url, allowed| {
            if !allowed.contains(CredentialType::USER_PASS_PLAINTEXT) {
                return Err(git2::Error::new(
                    ErrorCode::Auth,
                    ErrorClass::Http,
                    "the server asked for a kind of credential other than a user name and token",
                ));
            }
            if !self.url.same_authority(asked_for) {
                self.foreign_host.set(true);
                return Err(git2::Error::new(
                    ErrorCode::Auth,
                    ErrorClass::Http,
                    "credentials were asked for by another host; the token was withheld",
                ));
            }
            if answered {
                self.refused.set(true);
                return Err(git2::Error::new(
                    ErrorCode::Auth,
                    ErrorClass::Http,
                    "the server refused the token",
                ));
            }
            answered = true;
            Cred::userpass_plaintext(&self.creds.username, self.creds.token.expose_secret())
        });
        callbacks
    }

    /// Says what a libgit2 failure during this session means for the job.
    pub(crate) fn error(&self, error: git2::Error) -> GitError {
        let url = self.url.to_string();
        let operation = self.operation;
        let detail = error.message().to_string();
        if self.foreign_host.get() {
            return GitError::RemoteUnavailable {
                operation,
                url,
                detail: format!(
                    "the server redirected elsewhere and asked for credentials there; the token is only sent to {}",
                    self.url
                ),
                transient: false,
            };
        }
        if self.refused.get() {
            return GitError::RemoteAuthRefused {
                operation,
                url,
                detail: format!(
                    "HTTP 401 after the token for user {} was offered once",
                    self.creds.username
                ),
            };
        }
        let status = http_status(&error);
        if error.code() == ErrorCode::Auth || status == Some(403) {
            return GitError::RemoteAuthRefused {
                operation,
                url,
                detail,
            };
        }
        if error.code() == ErrorCode::Timeout {
            return GitError::RemoteTimeout {
                operation,
                url,
                detail,
            };
        }
        if matches!(
            error.class(),
            ErrorClass::Net | ErrorClass::Http | ErrorClass::Ssl | ErrorClass::Os
        ) {
            return GitError::RemoteUnavailable {
                operation,
                url,
                detail,
                transient: status.is_none_or(|status| status >= 500 || status == 429),
            };
        }
        GitError::Git {
            action: format!("{operation} {url}"),
            source: error,
        }
    }
}

/// The HTTP status libgit2 reports as `unexpected http status code: 404`.
fn http_status(error: &git2::Error) -> Option<u16> {
    if error.class() != ErrorClass::Http {
        return None;
    }
    error
        .message()
        .strip_prefix("unexpected http status code: ")
        .and_then(|status| status.trim().parse().ok())
}
