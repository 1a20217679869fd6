//! Retries for LLM calls: which failures are tried again, how long to wait (the server's
//! `retry-after`/`retry-after-ms`/Gemini `retryDelay`, else capped exponential backoff), when to stop.

use std::future::Future;
use std::time::{Duration, SystemTime};

use reqwest::header::{DATE, HeaderMap, RETRY_AFTER};

use super::LlmError;

/// One failed exchange, with the wait the server asked for (if it asked).
#[derive(Debug)]
pub(crate) struct Failure {
    pub error: LlmError,
    pub requested_wait: Option<Duration>,
}

impl From<LlmError> for Failure {
    fn from(error: LlmError) -> Self {
        Failure {
            error,
            requested_wait: None,
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct RetryPolicy {
    pub max_retries: u32,
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
}

#[derive(Debug, PartialEq, Eq)]
enum Decision {
    WaitThenRetry(Duration),
    GiveUp { note: Option<String> },
}

impl RetryPolicy {
    /// Runs `attempt` until it succeeds, fails for good, or the retries are spent; the error
    /// returned is the last one, with a note saying why no further try was made.
    pub async fn run<T, F, Fut>(&self, label: &str, mut attempt: F) -> Result<T, LlmError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, Failure>>,
    {
        let mut retries_done = 0;
        loop {
            let failure = match attempt().await {
                Ok(value) => return Ok(value),
                Err(failure) => failure,
            };
            match self.decide(retries_done, &failure) {
                Decision::GiveUp { note } => return Err(add_note(failure.error, note)),
                Decision::WaitThenRetry(wait) => {
                    retries_done += 1;
                    tracing::warn!(
                        provider = label,
                        retry = retries_done,
                        of = self.max_retries,
                        wait = ?wait,
                        error = %failure.error,
                        "LLM call failed; retrying"
                    );
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }

    fn decide(&self, retries_done: u32, failure: &Failure) -> Decision {
        if !failure.error.is_retryable() {
            return Decision::GiveUp { note: None };
        }
        if let Some(wait) = failure.requested_wait
            && wait > self.max_backoff
        {
            return Decision::GiveUp {
                note: Some(format!(
                    "the server asked to wait {wait:?}, longer than the {:?} this client waits, \
                     so it was not retried",
                    self.max_backoff
                )),
            };
        }
        if retries_done >= self.max_retries {
            let tries = retries_done + 1;
            let note = (self.max_retries > 0).then(|| format!("gave up after {tries} tries"));
            return Decision::GiveUp { note };
        }
        Decision::WaitThenRetry(
            failure
                .requested_wait
                .unwrap_or_else(|| self.backoff(retries_done)),
        )
    }

    /// `initial_backoff`, doubled for every retry already made, never above `max_backoff`.
    fn backoff(&self, retries_done: u32) -> Duration {
        let factor = 2u32.saturating_pow(retries_done);
        self.initial_backoff
            .saturating_mul(factor)
            .min(self.max_backoff)
    }
}

fn add_note(error: LlmError, note: Option<String>) -> LlmError {
    let Some(note) = note else { return error };
    let extend = |message: String| format!("{message}; {note}");
    match error {
        LlmError::RateLimited {
            status,
            message,
            retry_after,
            raw_body,
        } => LlmError::RateLimited {
            status,
            message: extend(message),
            retry_after,
            raw_body,
        },
        LlmError::Server {
            status,
            message,
            raw_body,
        } => LlmError::Server {
            status,
            message: extend(message),
            raw_body,
        },
        LlmError::Transport(message) => LlmError::Transport(extend(message)),
        other => other,
    }
}

/// The wait a response's headers ask for: `retry-after-ms` (OpenAI's finer variant) first,
/// then `retry-after` as seconds or as an HTTP-date. An HTTP-date is measured from the
/// response's own `Date` header when it has one, so a skewed local clock does not matter.
pub(crate) fn requested_wait(headers: &HeaderMap) -> Option<Duration> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(wait) = header("retry-after-ms").and_then(parse_milliseconds) {
        return Some(wait);
    }
    let value = header(RETRY_AFTER.as_str())?;
    if let Some(wait) = parse_seconds(value) {
        return Some(wait);
    }
    let until = parse_http_date(value)?;
    let now = header(DATE.as_str())
        .and_then(parse_http_date)
        .unwrap_or_else(SystemTime::now);
    Some(until.duration_since(now).unwrap_or(Duration::ZERO))
}

/// A protobuf `Duration` in its JSON form, as in Gemini's `RetryInfo.retryDelay`: `"37s"`, `"1.5s"`.
pub(crate) fn parse_protobuf_duration(value: &str) -> Option<Duration> {
    parse_seconds(value.trim().strip_suffix('s')?)
}

fn parse_seconds(value: &str) -> Option<Duration> {
    let seconds: f64 = value.parse().ok()?;
    Duration::try_from_secs_f64(seconds).ok()
}

fn parse_milliseconds(value: &str) -> Option<Duration> {
    let millis: f64 = value.parse().ok()?;
    Duration::try_from_secs_f64(millis / 1000.0).ok()
}

/// IMF-fixdate (`Wed, 21 Oct 2015 07:28:00 GMT`), the form RFC 9110 requires senders to use.
fn parse_http_date(value: &str) -> Option<SystemTime> {
    let date = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    Some(SystemTime::from(date.with_timezone(&chrono::Utc)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn policy() -> RetryPolicy {
        RetryPolicy {
            max_retries: 3,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(1),
        }
    }

    fn server_error() -> LlmError {
        LlmError::Server {
            status: 500,
            message: "boom".into(),
            raw_body: String::new(),
        }
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn backoff_doubles_from_the_initial_delay_and_stops_at_the_cap() {
        let policy = policy();
        let waits: Vec<_> = (0..6).map(|n| policy.backoff(n)).collect();
        assert_eq!(
            waits,
            [100, 200, 400, 800, 1000, 1000].map(Duration::from_millis)
        );
        assert_eq!(policy.backoff(u32::MAX), Duration::from_secs(1));
    }

    #[test]
    fn a_wait_the_server_asks_for_replaces_the_backoff() {
        let failure = Failure {
            error: server_error(),
            requested_wait: Some(Duration::from_millis(700)),
        };
        assert_eq!(
            policy().decide(0, &failure),
            Decision::WaitThenRetry(Duration::from_millis(700))
        );
    }

    #[test]
    fn a_wait_longer_than_the_cap_gives_up_and_says_how_long_was_asked() {
        let failure = Failure {
            error: server_error(),
            requested_wait: Some(Duration::from_secs(30)),
        };
        let Decision::GiveUp { note: Some(note) } = policy().decide(0, &failure) else {
            panic!("expected to give up with a note");
        };
        assert!(note.contains("30s"), "{note}");
        assert!(note.contains("1s"), "{note}");
    }

    #[test]
    fn errors_that_cannot_heal_are_not_retried() {
        let failure = Failure::from(LlmError::BadRequest {
            status: 400,
            message: "bad".into(),
            raw_body: String::new(),
        });
        assert_eq!(
            policy().decide(0, &failure),
            Decision::GiveUp { note: None }
        );
    }

    #[test]
    fn the_last_retry_gives_up_and_counts_the_tries() {
        let failure = Failure::from(server_error());
        assert_eq!(
            policy().decide(3, &failure),
            Decision::GiveUp {
                note: Some("gave up after 4 tries".into())
            }
        );
    }

    #[test]
    fn retry_after_in_seconds_and_in_milliseconds_are_read() {
        assert_eq!(
            requested_wait(&headers(&[("retry-after", "7")])),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            requested_wait(&headers(&[("retry-after-ms", "250"), ("retry-after", "7")])),
            Some(Duration::from_millis(250))
        );
        assert_eq!(requested_wait(&headers(&[])), None);
        assert_eq!(requested_wait(&headers(&[("retry-after", "soon")])), None);
    }

    #[test]
    fn retry_after_as_a_date_is_measured_from_the_response_date() {
        let map = headers(&[
            ("retry-after", "Wed, 21 Oct 2015 07:28:30 GMT"),
            ("date", "Wed, 21 Oct 2015 07:28:00 GMT"),
        ]);
        assert_eq!(requested_wait(&map), Some(Duration::from_secs(30)));
    }

    #[test]
    fn retry_after_a_date_already_past_means_no_wait() {
        let map = headers(&[("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT")]);
        assert_eq!(requested_wait(&map), Some(Duration::ZERO));
    }

    #[test]
    fn gemini_retry_delays_are_protobuf_durations() {
        assert_eq!(
            parse_protobuf_duration("37s"),
            Some(Duration::from_secs(37))
        );
        assert_eq!(
            parse_protobuf_duration("1.5s"),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(parse_protobuf_duration("37"), None);
        assert_eq!(parse_protobuf_duration("-1s"), None);
    }
}
