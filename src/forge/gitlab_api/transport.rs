//! One exchange with GitLab's REST API: the `PRIVATE-TOKEN` header, retries on rate limits and
//! transient faults, and turning error statuses and GitLab's error bodies into [`ForgeError`]s.

use std::error::Error as _;
use std::time::Duration;

use chrono::Utc;
use reqwest::header::{HeaderMap, HeaderValue};
use reqwest::{Method, StatusCode, Url};
use secrecy::{ExposeSecret, SecretString};
use serde_json::Value;

use super::FORGE;
use super::retry::{self, Next, RetryPolicy};
use crate::forge::ForgeError;
use crate::forge::log_tail::{self, LogLimits, LogSource};
use crate::redact::Redactor;

const TOKEN_HEADER: &str = "PRIVATE-TOKEN";

/// GitLab's error text is quoted in errors (and so in comments): keep it to a readable size.
const MAX_MESSAGE_CHARS: usize = 500;

/// A successful answer: the headers (pagination lives there) and the JSON body (`Null` when empty).
#[derive(Debug)]
pub struct Reply {
    pub headers: HeaderMap,
    pub body: Value,
}

pub struct Transport {
    http: reqwest::Client,
    token: HeaderValue,
    timeout: Duration,
    retry: RetryPolicy,
    redactor: Redactor,
}

/// Why one try failed, before the retry policy has had its say.
enum Failure {
    RateLimited { requested: Option<Duration> },
    Transient(String),
    Final(ForgeError),
}

impl Transport {
    pub fn new(
        token: &SecretString,
        timeout: Duration,
        retry: RetryPolicy,
    ) -> Result<Transport, ForgeError> {
        let mut header = HeaderValue::from_str(token.expose_secret().trim()).map_err(|_| {
            ForgeError::Configuration(
                "the GitLab token contains characters an HTTP header cannot carry".into(),
            )
        })?;
        header.set_sensitive(true);
        // No redirect is followed: the token header would go along to wherever it points.
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .user_agent(concat!("autofix/", env!("CARGO_PKG_VERSION")))
            .redirect(reqwest::redirect::Policy::none())
            .pool_idle_timeout(Duration::from_secs(2))
            .build()
            .map_err(|err| {
                ForgeError::Configuration(format!("cannot build the GitLab HTTP client: {err}"))
            })?;
        let mut redactor = Redactor::new();
        redactor.register(token);
        Ok(Transport {
            http,
            token: header,
            timeout,
            retry,
            redactor,
        })
    }

    /// Sends the request, retrying as the policy allows; `action` names it in errors and logs.
    pub async fn send(
        &self,
        method: Method,
        url: Url,
        body: Option<&Value>,
        action: &str,
    ) -> Result<Reply, ForgeError> {
        self.send_for(method, url, body, action).await
    }

    /// A job's trace: a GET retried like any other until its answer's headers arrive, whose
    /// body is then read through the log reader (only its end kept, capped in bytes and time).
    pub async fn get_log(
        &self,
        url: Url,
        action: &str,
        limits: &LogLimits,
    ) -> Result<String, ForgeError> {
        let deadline = tokio::time::Instant::now() + limits.max_time;
        let response = self
            .with_retries(action, || {
                self.try_send(
                    Method::GET,
                    url.clone(),
                    None,
                    action,
                    Some(limits.max_time),
                )
            })
            .await?;
        let source = LogSource {
            forge: FORGE,
            action,
        };
        log_tail::read_tail(response, limits, deadline, &source).await
    }

    async fn send_for(
        &self,
        method: Method,
        url: Url,
        body: Option<&Value>,
        action: &str,
    ) -> Result<Reply, ForgeError> {
        self.with_retries(action, || async {
            let response = self
                .try_send(method.clone(), url.clone(), body, action, None)
                .await?;
            let headers = response.headers().clone();
            let text = response
                .text()
                .await
                .map_err(|err| Failure::Transient(self.describe(&err)))?;
            self.parse_body(&text, action)
                .map(|body| Reply { headers, body })
        })
        .await
    }

    /// Runs `try_once` until it succeeds or the retry policy gives up.
    async fn with_retries<T, Try, Tried>(
        &self,
        action: &str,
        try_once: Try,
    ) -> Result<T, ForgeError>
    where
        Try: Fn() -> Tried,
        Tried: Future<Output = Result<T, Failure>>,
    {
        let mut retries_done = 0;
        loop {
            let failure = match try_once().await {
                Ok(done) => return Ok(done),
                Err(failure) => failure,
            };
            let (next, fault) = match &failure {
                Failure::Final(_) => return Err(self.give_up(failure, Duration::ZERO, 0, action)),
                Failure::RateLimited { requested } => (
                    self.retry.after_rate_limit(retries_done, *requested),
                    "rate limited (429)",
                ),
                Failure::Transient(message) => {
                    (self.retry.after_transient(retries_done), message.as_str())
                }
            };
            let wait = match next {
                Next::WaitThenRetry(wait) => wait,
                Next::GiveUp { wait } => {
                    return Err(self.give_up(failure, wait, retries_done, action));
                }
            };
            retries_done += 1;
            tracing::warn!(
                forge = FORGE,
                action,
                retry = retries_done,
                of = self.retry.max_retries,
                wait = ?wait,
                fault,
                "GitLab request failed; retrying"
            );
            tokio::time::sleep(wait).await;
        }
    }

    fn give_up(
        &self,
        failure: Failure,
        wait: Duration,
        retries_done: u32,
        action: &str,
    ) -> ForgeError {
        match failure {
            Failure::Final(error) => error,
            Failure::RateLimited { .. } => ForgeError::RateLimited {
                forge: FORGE,
                action: action.to_owned(),
                reset_at: Utc::now() + wait,
            },
            Failure::Transient(message) => ForgeError::Transient {
                forge: FORGE,
                action: action.to_owned(),
                message: format!("{message} (gave up after {} tries)", retries_done + 1),
            },
        }
    }

    /// One try: a successful answer comes back with its body unread; any other is a failure,
    /// its (small) error body read for the message. `timeout` replaces the client's for this
    /// request (a log's read takes longer than an API call).
    async fn try_send(
        &self,
        method: Method,
        url: Url,
        body: Option<&Value>,
        action: &str,
        timeout: Option<Duration>,
    ) -> Result<reqwest::Response, Failure> {
        let mut request = self
            .http
            .request(method, url)
            .header(TOKEN_HEADER, self.token.clone());
        if let Some(timeout) = timeout {
            request = request.timeout(timeout);
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request
            .send()
            .await
            .map_err(|err| Failure::Transient(self.describe(&err)))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let headers = response.headers().clone();
        let text = response
            .text()
            .await
            .map_err(|err| Failure::Transient(self.describe(&err)))?;
        if status == StatusCode::TOO_MANY_REQUESTS {
            return Err(Failure::RateLimited {
                requested: retry::requested_wait(&headers, Utc::now()),
            });
        }
        let message = self.message_of(&text, status);
        if status.is_server_error() {
            return Err(Failure::Transient(format!(
                "{}: {message}",
                status.as_u16()
            )));
        }
        Err(Failure::Final(client_error(status, message, action)))
    }

    fn parse_body(&self, text: &str, action: &str) -> Result<Value, Failure> {
        if text.trim().is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_str(text).map_err(|err| {
            Failure::Final(ForgeError::InvalidResponse {
                forge: FORGE,
                action: action.to_owned(),
                message: format!("the body is not JSON ({err})"),
            })
        })
    }

    /// GitLab's own words (`message`, `error`, `error_description`), else the status reason;
    /// redacted and shortened either way, since servers do echo what they were sent.
    fn message_of(&self, body: &str, status: StatusCode) -> String {
        let message = serde_json::from_str::<Value>(body)
            .ok()
            .and_then(|value| gitlab_message(&value))
            .unwrap_or_else(|| {
                let reason = status.canonical_reason().unwrap_or("no reason given");
                format!("{} {reason}", status.as_u16())
            });
        shorten(&self.redactor.redact(&message))
    }

    fn describe(&self, err: &reqwest::Error) -> String {
        if err.is_timeout() {
            return format!("no answer within {:?}", self.timeout);
        }
        let mut text = if err.is_connect() {
            "could not connect".to_owned()
        } else {
            "the exchange failed".to_owned()
        };
        let mut source = err.source();
        while let Some(cause) = source {
            text.push_str(&format!(": {cause}"));
            source = cause.source();
        }
        self.redactor.redact(&text)
    }
}

/// Statuses that no wait will change.
fn client_error(status: StatusCode, message: String, action: &str) -> ForgeError {
    let action = action.to_owned();
    match status {
        StatusCode::UNAUTHORIZED => ForgeError::Unauthorized {
            forge: FORGE,
            action,
            message,
        },
        StatusCode::FORBIDDEN => ForgeError::Forbidden {
            forge: FORGE,
            action,
            message,
        },
        StatusCode::NOT_FOUND => ForgeError::NotFound {
            forge: FORGE,
            action,
        },
        _ => ForgeError::Rejected {
            forge: FORGE,
            action,
            status: status.as_u16(),
            message,
        },
    }
}

/// GitLab puts its error text in `message` (a string, a list, or a field → list map for
/// validation errors) or, for OAuth-style failures, in `error` and `error_description`.
pub fn gitlab_message(body: &Value) -> Option<String> {
    let text = match (body.get("message"), body.get("error")) {
        (Some(message), _) => flatten(message),
        (None, Some(error)) => {
            let description = body.get("error_description").map(flatten);
            match description {
                Some(description) if !description.is_empty() => {
                    format!("{}: {description}", flatten(error))
                }
                _ => flatten(error),
            }
        }
        (None, None) => return None,
    };
    (!text.is_empty()).then_some(text)
}

fn flatten(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Array(items) => items.iter().map(flatten).collect::<Vec<_>>().join("; "),
        Value::Object(fields) => fields
            .iter()
            .map(|(field, problems)| format!("{field} {}", flatten(problems)))
            .collect::<Vec<_>>()
            .join("; "),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn shorten(text: &str) -> String {
    match text.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_plain_message_is_taken_as_is() {
        let body = json!({"message": "401 Unauthorized"});
        assert_eq!(gitlab_message(&body).as_deref(), Some("401 Unauthorized"));
    }

    #[test]
    fn a_list_of_messages_is_joined() {
        let body = json!({"message": [
            "Another open merge request already exists for this source branch: !38"
        ]});
        assert_eq!(
            gitlab_message(&body).as_deref(),
            Some("Another open merge request already exists for this source branch: !38")
        );
    }

    #[test]
    fn validation_errors_name_their_field() {
        let body = json!({"message": {"title": ["can't be blank"], "base": ["is invalid"]}});
        assert_eq!(
            gitlab_message(&body).as_deref(),
            Some("base is invalid; title can't be blank")
        );
    }

    #[test]
    fn oauth_errors_carry_their_description() {
        let body = json!({"error": "invalid_token", "error_description": "Token was revoked."});
        assert_eq!(
            gitlab_message(&body).as_deref(),
            Some("invalid_token: Token was revoked.")
        );
        assert_eq!(gitlab_message(&json!({"other": 1})), None);
    }

    #[test]
    fn long_messages_are_cut() {
        let long = "x".repeat(MAX_MESSAGE_CHARS + 10);
        assert_eq!(shorten(&long).chars().count(), MAX_MESSAGE_CHARS + 1);
        assert_eq!(shorten("short"), "short");
    }
}
