//! When the GitLab client tries a request again: the wait a 429 asks for (`Retry-After`, then
//! `RateLimit-Reset`), exponential backoff for 5xx and network faults, and the policy's limits.

use std::time::Duration;

use chrono::{DateTime, Utc};
use reqwest::header::{HeaderMap, RETRY_AFTER};

use crate::forge::client::MAX_RATE_LIMIT_WAIT;

/// GitLab's epoch-seconds header saying when the current rate-limit window ends.
pub const RATE_LIMIT_RESET: &str = "ratelimit-reset";

/// How many times and how long the client retries on its own before handing a fault back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first try, shared by rate limits and transient faults.
    pub max_retries: u32,
    /// First backoff for a 5xx, timeout or refused connection; doubles each retry.
    pub initial_backoff: Duration,
    /// The longest backoff between two tries.
    pub max_backoff: Duration,
    /// The longest rate-limit wait the client sits out; a longer one becomes `RateLimited`.
    pub max_rate_limit_wait: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            max_rate_limit_wait: MAX_RATE_LIMIT_WAIT,
        }
    }
}

/// What to do after a failed try.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    WaitThenRetry(Duration),
    /// Give up; for a rate limit, the wait that was asked for (to compute `reset_at`).
    GiveUp {
        wait: Duration,
    },
}

impl RetryPolicy {
    /// `initial_backoff`, doubled for every retry already made, never above `max_backoff`.
    pub fn backoff(&self, retries_done: u32) -> Duration {
        let factor = 2u32.saturating_pow(retries_done);
        self.initial_backoff
            .saturating_mul(factor)
            .min(self.max_backoff)
    }

    /// After a 5xx or a network fault: back off while retries are left.
    pub fn after_transient(&self, retries_done: u32) -> Next {
        let wait = self.backoff(retries_done);
        if retries_done < self.max_retries {
            Next::WaitThenRetry(wait)
        } else {
            Next::GiveUp { wait }
        }
    }

    /// After a 429: wait what GitLab asked (else back off) if that is short enough and retries are left.
    pub fn after_rate_limit(&self, retries_done: u32, requested: Option<Duration>) -> Next {
        let wait = requested.unwrap_or_else(|| self.backoff(retries_done));
        if wait <= self.max_rate_limit_wait && retries_done < self.max_retries {
            Next::WaitThenRetry(wait)
        } else {
            Next::GiveUp { wait }
        }
    }
}

/// The wait a 429 asks for: `Retry-After` in seconds (or as an HTTP date), else the time left
/// until `RateLimit-Reset` (epoch seconds). A moment already past means no wait.
pub fn requested_wait(headers: &HeaderMap, now: DateTime<Utc>) -> Option<Duration> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::trim)
    };
    if let Some(value) = header(RETRY_AFTER.as_str()) {
        if let Ok(seconds) = value.parse::<u64>() {
            return Some(Duration::from_secs(seconds));
        }
        if let Ok(date) = DateTime::parse_from_rfc2822(value) {
            return Some(until(date.with_timezone(&Utc), now));
        }
    }
    let reset = header(RATE_LIMIT_RESET)?.parse::<i64>().ok()?;
    let reset = DateTime::<Utc>::from_timestamp(reset, 0)?;
    Some(until(reset, now))
}

fn until(moment: DateTime<Utc>, now: DateTime<Utc>) -> Duration {
    (moment - now).to_std().unwrap_or(Duration::ZERO)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    fn at(epoch: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(epoch, 0).unwrap()
    }

    fn policy() -> RetryPolicy {
        RetryPolicy {
            max_retries: 2,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(300),
            max_rate_limit_wait: Duration::from_secs(5),
        }
    }

    #[test]
    fn retry_after_seconds_come_before_the_reset_time() {
        let map = headers(&[("retry-after", "3"), ("ratelimit-reset", "1000060")]);
        assert_eq!(
            requested_wait(&map, at(1_000_000)),
            Some(Duration::from_secs(3))
        );
    }

    #[test]
    fn without_retry_after_the_reset_epoch_is_measured_from_now() {
        let map = headers(&[("ratelimit-reset", "1000045")]);
        assert_eq!(
            requested_wait(&map, at(1_000_000)),
            Some(Duration::from_secs(45))
        );
    }

    #[test]
    fn a_reset_already_past_means_no_wait() {
        let map = headers(&[("ratelimit-reset", "999990")]);
        assert_eq!(requested_wait(&map, at(1_000_000)), Some(Duration::ZERO));
    }

    #[test]
    fn a_retry_after_date_is_read_too() {
        let map = headers(&[("retry-after", "Thu, 01 Jan 1970 00:00:10 GMT")]);
        assert_eq!(requested_wait(&map, at(4)), Some(Duration::from_secs(6)));
    }

    #[test]
    fn unreadable_or_missing_headers_ask_for_nothing() {
        assert_eq!(requested_wait(&headers(&[]), at(0)), None);
        let map = headers(&[("retry-after", "soon"), ("ratelimit-reset", "later")]);
        assert_eq!(requested_wait(&map, at(0)), None);
    }

    #[test]
    fn backoff_doubles_up_to_its_cap() {
        let waits: Vec<_> = (0..4).map(|n| policy().backoff(n)).collect();
        assert_eq!(waits, [100, 200, 300, 300].map(Duration::from_millis));
    }

    #[test]
    fn a_rate_limit_longer_than_the_policy_allows_is_given_back() {
        let asked = Some(Duration::from_secs(6));
        assert_eq!(
            policy().after_rate_limit(0, asked),
            Next::GiveUp {
                wait: Duration::from_secs(6)
            }
        );
        assert_eq!(
            policy().after_rate_limit(0, Some(Duration::from_secs(5))),
            Next::WaitThenRetry(Duration::from_secs(5))
        );
    }

    #[test]
    fn transient_faults_stop_when_the_retries_are_spent() {
        assert_eq!(
            policy().after_transient(1),
            Next::WaitThenRetry(Duration::from_millis(200))
        );
        assert!(matches!(policy().after_transient(2), Next::GiveUp { .. }));
    }
}
