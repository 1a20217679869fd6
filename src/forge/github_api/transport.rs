//! One HTTP exchange with the GitHub REST API through octocrab's raw requests: timeouts,
//! retries (rate limits, 5xx, dead connections) and the mapping of failures to `ForgeError`.

use std::collections::HashSet;
use std::time::Duration;

use chrono::{DateTime, Utc};
use http::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use http::{Method, StatusCode, Uri};
use octocrab::Octocrab;
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::RetryPolicy;
use crate::forge::ForgeError;

pub(super) const FORGE: &str = "GitHub";

/// GitHub's own words for a secondary rate limit (the 403 carries no rate-limit headers).
const SECONDARY_LIMIT_MARKER: &str = "secondary rate limit";

/// What the request carries in `Authorization`: a token (`token …`) or an App JWT (`Bearer …`).
pub(super) enum Credential {
    Token(SecretString),
    Jwt(SecretString),
}

impl Credential {
    fn header_value(&self) -> Result<HeaderValue, ForgeError> {
        let text = match self {
            Credential::Token(token) => format!("token {}", token.expose_secret()),
            Credential::Jwt(jwt) => format!("Bearer {}", jwt.expose_secret()),
        };
        let mut value = HeaderValue::from_str(&text).map_err(|_| {
            ForgeError::Configuration(
                "the GitHub token holds characters an HTTP header cannot carry".into(),
            )
        })?;
        value.set_sensitive(true);
        Ok(value)
    }

    fn secret(&self) -> &str {
        match self {
            Credential::Token(secret) | Credential::Jwt(secret) => secret.expose_secret(),
        }
    }
}

/// Whether repeating a request could apply it twice (a comment posted twice): such requests
/// are not repeated after a timeout, when GitHub may have done the work already.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Repeat {
    Safe,
    NotAfterTimeout,
}

/// One request: where, how, with what body, and what it is for (named in every error).
pub(super) struct Call<'a> {
    pub method: Method,
    /// A path under the API root (`/repos/o/r`) or an absolute URL from a `Link` header.
    pub target: String,
    pub body: Option<serde_json::Value>,
    pub credential: &'a Credential,
    pub action: &'a str,
    pub repeat: Repeat,
}

/// A final answer from GitHub (after retries): any status, its headers and its body.
pub(super) struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

#[derive(Deserialize)]
struct ErrorBody {
    message: Option<String>,
    #[serde(default)]
    errors: Vec<ErrorDetail>,
}

#[derive(Deserialize)]
struct ErrorDetail {
    message: Option<String>,
    code: Option<String>,
    field: Option<String>,
}

impl Answer {
    pub fn is_success(&self) -> bool {
        self.status.is_success()
    }

    /// The body as `T`, or `InvalidResponse` naming the action.
    pub fn json<T: DeserializeOwned>(&self, action: &str) -> Result<T, ForgeError> {
        serde_json::from_slice(&self.body).map_err(|err| ForgeError::InvalidResponse {
            forge: FORGE,
            action: action.to_owned(),
            message: format!("{err} (status {})", self.status.as_u16()),
        })
    }

    /// GitHub's `message` and each `errors[].message` (or `code` of `field`), joined.
    pub fn github_message(&self) -> String {
        let Ok(parsed) = serde_json::from_slice::<ErrorBody>(&self.body) else {
            return format!(
                "HTTP {} with a body that is not GitHub's error JSON",
                self.status.as_u16()
            );
        };
        let details = parsed.errors.iter().filter_map(|detail| {
            detail
                .message
                .clone()
                .or_else(|| match (&detail.code, &detail.field) {
                    (Some(code), Some(field)) => Some(format!("{code} {field}")),
                    (Some(code), None) => Some(code.clone()),
                    _ => None,
                })
        });
        parsed
            .message
            .into_iter()
            .chain(details)
            .collect::<Vec<_>>()
            .join(": ")
    }

    /// Whether `errors[].message` says what `needle` says (the 422 of an existing PR).
    pub fn has_error_message_containing(&self, needle: &str) -> bool {
        serde_json::from_slice::<ErrorBody>(&self.body)
            .map(|parsed| {
                parsed
                    .errors
                    .iter()
                    .filter_map(|detail| detail.message.as_deref())
                    .any(|message| message.contains(needle))
            })
            .unwrap_or(false)
    }

    /// The `Link: <…>; rel="next"` target, verbatim.
    pub fn next_page(&self) -> Option<String> {
        let link = self.headers.get("link")?.to_str().ok()?;
        link.split(',').find_map(|part| {
            let (target, params) = part.split_once(';')?;
            let is_next = params
                .split(';')
                .any(|param| param.trim().replace(' ', "") == "rel=\"next\"");
            let target = target.trim().strip_prefix('<')?.strip_suffix('>')?;
            is_next.then(|| target.to_owned())
        })
    }

    /// The error a non-2xx answer means; the caller has already handled the statuses it accepts.
    pub fn into_error(self, action: &str, credential: &Credential) -> ForgeError {
        let action = action.to_owned();
        let message = redact(&self.github_message(), credential);
        match self.status.as_u16() {
            401 => ForgeError::Unauthorized {
                forge: FORGE,
                action,
                message,
            },
            403 => ForgeError::Forbidden {
                forge: FORGE,
                action,
                message,
            },
            404 => ForgeError::NotFound {
                forge: FORGE,
                action,
            },
            status @ 400..=499 => ForgeError::Rejected {
                forge: FORGE,
                action,
                status,
                message,
            },
            status => ForgeError::Transient {
                forge: FORGE,
                action,
                message: format!("HTTP {status}: {message}"),
            },
        }
    }
}

/// GitHub never echoes a token, but a proxy in front of GitHub Enterprise might: errors are
/// shown in issue comments, so the secret is scrubbed from every message built from a body.
fn redact(message: &str, credential: &Credential) -> String {
    let secret = credential.secret();
    if secret.is_empty() {
        message.to_owned()
    } else {
        message.replace(secret, "[redacted]")
    }
}

/// octocrab as a bare HTTP transport: it joins paths to the API root and speaks TLS; the
/// `Authorization` header, retries and error mapping are ours.
pub(super) struct Transport {
    octocrab: Octocrab,
    api_root: Uri,
    timeout: Duration,
    retry: RetryPolicy,
}

/// What one attempt came to, before deciding whether to try again.
enum Attempt {
    Answered(Answer),
    TimedOut,
    ConnectionFailed(String),
}

impl Transport {
    pub fn new(api_url: &str, timeout: Duration, retry: RetryPolicy) -> Result<Self, ForgeError> {
        let api_root: Uri = api_url.trim_end_matches('/').parse().map_err(|_| {
            ForgeError::Configuration(format!(
                "github.api_url `{api_url}` is not a URL (expected e.g. https://api.github.com)"
            ))
        })?;
        if api_root.scheme().is_none() || api_root.authority().is_none() {
            return Err(ForgeError::Configuration(format!(
                "github.api_url `{api_url}` needs a scheme and a host (e.g. https://api.github.com)"
            )));
        }
        let octocrab = Octocrab::builder()
            .base_uri(api_root.clone())
            .map_err(|err| ForgeError::Configuration(format!("github.api_url `{api_url}`: {err}")))?
            .add_header(http::header::ACCEPT, "application/vnd.github+json".into())
            .build()
            .map_err(|err| {
                ForgeError::Configuration(format!("cannot build the GitHub HTTP client: {err}"))
            })?;
        Ok(Transport {
            octocrab,
            api_root,
            timeout,
            retry,
        })
    }

    /// Sends `call`, waiting out rate limits and retrying transient faults as the policy allows.
    pub async fn send(&self, call: Call<'_>) -> Result<Answer, ForgeError> {
        let mut attempt = 1;
        loop {
            let outcome = self.attempt(&call).await?;
            let retry_in = match &outcome {
                Attempt::Answered(answer) => match rate_limit_wait(answer, &self.retry) {
                    Some(wait) if wait > self.retry.max_rate_limit_wait => {
                        return Err(rate_limited(&call, wait));
                    }
                    Some(wait) => Some(wait),
                    None if answer.status.is_server_error() => Some(self.retry.backoff(attempt)),
                    None => return Ok(take_answer(outcome)),
                },
                Attempt::TimedOut if call.repeat == Repeat::NotAfterTimeout => None,
                Attempt::TimedOut | Attempt::ConnectionFailed(_) => {
                    Some(self.retry.backoff(attempt))
                }
            };
            match retry_in {
                Some(wait) if attempt < self.retry.max_attempts => {
                    tracing::warn!(
                        action = call.action,
                        attempt,
                        wait_ms = wait.as_millis() as u64,
                        "GitHub request failed; trying again"
                    );
                    tokio::time::sleep(wait).await;
                    attempt += 1;
                }
                _ => return Err(self.give_up(&call, outcome, attempt)),
            }
        }
    }

    /// Follows `Link: rel="next"` from `first`, collecting every page's items.
    pub async fn get_all_pages<T: DeserializeOwned>(
        &self,
        first: String,
        credential: &Credential,
        action: &str,
    ) -> Result<Vec<T>, ForgeError> {
        let mut items = Vec::new();
        let mut visited = HashSet::new();
        let mut next = Some(first);
        while let Some(target) = next.take() {
            if !visited.insert(target.clone()) {
                return Err(invalid(
                    action,
                    format!("the page links loop back to {target}"),
                ));
            }
            self.check_same_origin(&target, action)?;
            let answer = self
                .send(Call {
                    method: Method::GET,
                    target,
                    body: None,
                    credential,
                    action,
                    repeat: Repeat::Safe,
                })
                .await?;
            if !answer.is_success() {
                return Err(answer.into_error(action, credential));
            }
            items.extend(answer.json::<Vec<T>>(action)?);
            next = answer.next_page();
        }
        Ok(items)
    }

    /// A `Link` target elsewhere than the API host would receive the token: refused.
    fn check_same_origin(&self, target: &str, action: &str) -> Result<(), ForgeError> {
        if target.starts_with('/') {
            return Ok(());
        }
        let uri: Uri = target.parse().map_err(|_| {
            invalid(
                action,
                format!("the next-page link `{target}` is not a URL"),
            )
        })?;
        let same =
            uri.scheme() == self.api_root.scheme() && uri.authority() == self.api_root.authority();
        if same {
            Ok(())
        } else {
            Err(invalid(
                action,
                format!("the next-page link `{target}` leaves the API host"),
            ))
        }
    }

    async fn attempt(&self, call: &Call<'_>) -> Result<Attempt, ForgeError> {
        let request = self.build_request(call)?;
        let exchange = async {
            let response = self.octocrab.execute(request).await?;
            let status = response.status();
            let headers = response.headers().clone();
            let body = self.octocrab.body_to_string(response).await;
            Ok::<_, octocrab::Error>((status, headers, body))
        };
        Ok(match tokio::time::timeout(self.timeout, exchange).await {
            Err(_elapsed) => Attempt::TimedOut,
            Ok(Err(err)) => Attempt::ConnectionFailed(describe_transport_error(&err)),
            Ok(Ok((status, headers, body))) => {
                let body = match body {
                    Ok(text) => text.into_bytes(),
                    // A body that is not UTF-8 is kept empty: JSON parsing then names the fault.
                    Err(_) => Vec::new(),
                };
                Attempt::Answered(Answer {
                    status,
                    headers,
                    body,
                })
            }
        })
    }

    fn build_request(
        &self,
        call: &Call<'_>,
    ) -> Result<http::Request<octocrab::OctoBody>, ForgeError> {
        let uri: Uri = call.target.parse().map_err(|_| {
            invalid(
                call.action,
                format!("`{}` is not a valid request URL", call.target),
            )
        })?;
        let builder = http::Request::builder()
            .method(call.method.clone())
            .uri(uri)
            .header(AUTHORIZATION, call.credential.header_value()?);
        // octocrab adds `X-GitHub-Api-Version` and `User-Agent` itself.
        self.octocrab
            .build_request(builder, call.body.as_ref())
            .map_err(|err| invalid(call.action, format!("cannot build the request: {err}")))
    }

    fn give_up(&self, call: &Call<'_>, outcome: Attempt, attempts: u32) -> ForgeError {
        let tries = if attempts == 1 {
            "1 attempt".to_owned()
        } else {
            format!("{attempts} attempts")
        };
        let message = match outcome {
            Attempt::Answered(answer) => {
                if let Some(wait) = rate_limit_wait(&answer, &self.retry) {
                    return rate_limited(call, wait);
                }
                return match answer.into_error(call.action, call.credential) {
                    ForgeError::Transient {
                        forge,
                        action,
                        message,
                    } => ForgeError::Transient {
                        forge,
                        action,
                        message: format!("{message} (after {tries})"),
                    },
                    other => other,
                };
            }
            Attempt::TimedOut => format!(
                "no answer within {} ms (after {tries})",
                self.timeout.as_millis()
            ),
            Attempt::ConnectionFailed(reason) => format!("{reason} (after {tries})"),
        };
        ForgeError::Transient {
            forge: FORGE,
            action: call.action.to_owned(),
            message,
        }
    }
}

fn take_answer(outcome: Attempt) -> Answer {
    match outcome {
        Attempt::Answered(answer) => answer,
        Attempt::TimedOut | Attempt::ConnectionFailed(_) => {
            unreachable!("only answered attempts are returned")
        }
    }
}

fn rate_limited(call: &Call<'_>, wait: Duration) -> ForgeError {
    let wait = chrono::Duration::from_std(wait).unwrap_or(chrono::Duration::MAX);
    ForgeError::RateLimited {
        forge: FORGE,
        action: call.action.to_owned(),
        reset_at: Utc::now()
            .checked_add_signed(wait)
            .unwrap_or(DateTime::<Utc>::MAX_UTC),
    }
}

fn invalid(action: &str, message: String) -> ForgeError {
    ForgeError::InvalidResponse {
        forge: FORGE,
        action: action.to_owned(),
        message,
    }
}

/// How long GitHub asks us to wait, when `answer` is a rate limit: `retry-after` (seconds),
/// else `x-ratelimit-reset` (epoch seconds), else the policy's wait for secondary limits.
fn rate_limit_wait(answer: &Answer, policy: &RetryPolicy) -> Option<Duration> {
    if !is_rate_limit(answer) {
        return None;
    }
    if let Some(seconds) = header_number(&answer.headers, "retry-after") {
        return Some(Duration::from_secs(seconds));
    }
    if let Some(reset) = header_number(&answer.headers, "x-ratelimit-reset") {
        let now = Utc::now().timestamp().max(0) as u64;
        return Some(Duration::from_secs(reset.saturating_sub(now)));
    }
    Some(policy.secondary_rate_limit_wait)
}

fn is_rate_limit(answer: &Answer) -> bool {
    match answer.status.as_u16() {
        429 => true,
        403 => {
            header_number(&answer.headers, "x-ratelimit-remaining") == Some(0)
                || answer.headers.contains_key("retry-after")
                || answer
                    .github_message()
                    .to_ascii_lowercase()
                    .contains(SECONDARY_LIMIT_MARKER)
        }
        _ => false,
    }
}

fn header_number(headers: &HeaderMap, name: &str) -> Option<u64> {
    headers.get(name)?.to_str().ok()?.trim().parse().ok()
}

/// The innermost cause of a failed exchange ("connection refused"), without the request.
fn describe_transport_error(err: &octocrab::Error) -> String {
    let mut cause: &dyn std::error::Error = err;
    while let Some(source) = cause.source() {
        cause = source;
    }
    format!("no connection to the API: {cause}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, headers: &[(&str, &str)], body: &str) -> Answer {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.insert(
                http::header::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        Answer {
            status: StatusCode::from_u16(status).unwrap(),
            headers: map,
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn the_next_link_is_taken_verbatim_among_prev_last_and_first() {
        let page = answer(
            200,
            &[(
                "link",
                "<https://api.github.com/repositories/1000/issues?per_page=3&page=1>; rel=\"prev\", \
                 <https://api.github.com/repositories/1000/issues?per_page=3&page=3>; rel=\"next\", \
                 <https://api.github.com/repositories/1000/issues?per_page=3&page=5>; rel=\"last\"",
            )],
            "[]",
        );
        assert_eq!(
            page.next_page().as_deref(),
            Some("https://api.github.com/repositories/1000/issues?per_page=3&page=3")
        );
    }

    #[test]
    fn the_last_page_has_no_next_link() {
        let page = answer(
            200,
            &[(
                "link",
                "<https://x/a?page=1>; rel=\"prev\", <https://x/a?page=1>; rel=\"first\"",
            )],
            "[]",
        );
        assert_eq!(page.next_page(), None);
    }

    #[test]
    fn a_403_with_no_remaining_quota_is_a_rate_limit_but_a_plain_403_is_not() {
        let body = include_str!("../../../tests/data/github/api/error-403-primary-rate-limit.json");
        let limited = answer(403, &[("x-ratelimit-remaining", "0")], body);
        let forbidden = answer(
            403,
            &[("x-ratelimit-remaining", "4999")],
            r#"{"message":"Resource not accessible by integration"}"#,
        );
        assert!(is_rate_limit(&limited));
        assert!(!is_rate_limit(&forbidden));
    }

    #[test]
    fn the_recorded_secondary_limit_message_is_a_rate_limit_without_headers() {
        let body =
            include_str!("../../../tests/data/github/api/error-403-secondary-rate-limit.json");
        let policy = RetryPolicy {
            secondary_rate_limit_wait: Duration::from_secs(61),
            ..RetryPolicy::default()
        };
        let wait = rate_limit_wait(&answer(403, &[], body), &policy);
        assert_eq!(wait, Some(Duration::from_secs(61)));
    }

    #[test]
    fn retry_after_wins_over_the_reset_time() {
        let limited = answer(
            429,
            &[("retry-after", "7"), ("x-ratelimit-reset", "99999999999")],
            "{}",
        );
        assert_eq!(
            rate_limit_wait(&limited, &RetryPolicy::default()),
            Some(Duration::from_secs(7))
        );
    }

    #[test]
    fn the_422_messages_of_both_recorded_fixtures_are_joined_into_the_error_text() {
        let body = include_str!(
            "../../../tests/data/github/api/error-422-pull-request-already-exists.2022.json"
        );
        let rejected = answer(422, &[], body);
        assert!(rejected.has_error_message_containing("A pull request already exists"));
        assert_eq!(
            rejected.github_message(),
            "Validation Failed: A pull request already exists for ***:branch_name."
        );
    }

    #[test]
    fn a_secret_inside_an_error_body_is_redacted() {
        let credential = Credential::Token(SecretString::from("ghp_secret123"));
        let error = answer(401, &[], r#"{"message":"token ghp_secret123 is revoked"}"#)
            .into_error("read the issue", &credential);
        let text = error.to_string();
        assert!(!text.contains("ghp_secret123"), "{text}");
        assert!(text.contains("[redacted]"), "{text}");
    }
}
