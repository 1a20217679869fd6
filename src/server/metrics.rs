//! `GET /metrics`: the ingress counters (deliveries by forge and outcome, jobs enqueued, the
//! door's connections) kept in atomics, the process's telemetry, and the job store's counts by
//! state, in Prometheus text; and who may read them.

use std::fmt::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use secrecy::SecretString;

use super::door::Ending;
use crate::forge::ForgeKind;
use crate::store::JobState;
use crate::telemetry::Telemetry;

/// Who may read `GET /metrics`.
#[derive(Debug, Clone)]
pub enum MetricsAccess {
    /// Anyone who reaches the port (`server.metrics_public = true`).
    Public,
    /// Whoever may open the operator's pages: a request carrying the admin token or, when none
    /// is set, a direct connection from loopback.
    Operator { admin_token: SecretString },
}

impl MetricsAccess {
    /// From `server.metrics_public` and `server.admin_token`.
    pub fn new(public: bool, admin_token: &SecretString) -> MetricsAccess {
        if public {
            MetricsAccess::Public
        } else {
            MetricsAccess::Operator {
                admin_token: admin_token.clone(),
            }
        }
    }
}

/// What became of one delivery, as counted in `autofix_webhook_deliveries_total{outcome}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Recorded in the store: it started a job or joined the active one.
    Accepted,
    /// Its delivery id was seen before; nothing was written.
    Duplicate,
    /// Authentic, but nothing for the bot to do (or, on GitLab, unreadable).
    Ignored,
    /// Not authentic, too large, or (GitHub) unreadable.
    Rejected,
    /// Authentic and wanted, but the store could not record it (the forge will retry).
    Failed,
}

const OUTCOMES: [Outcome; 5] = [
    Outcome::Accepted,
    Outcome::Duplicate,
    Outcome::Ignored,
    Outcome::Rejected,
    Outcome::Failed,
];

impl Outcome {
    fn label(self) -> &'static str {
        match self {
            Outcome::Accepted => "accepted",
            Outcome::Duplicate => "duplicate",
            Outcome::Ignored => "ignored",
            Outcome::Rejected => "rejected",
            Outcome::Failed => "failed",
        }
    }
}

const ENDINGS: [Ending; 3] = [Ending::HeaderTimeout, Ending::IdleTimeout, Ending::Evicted];

fn ending_label(ending: Ending) -> &'static str {
    match ending {
        Ending::HeaderTimeout => "header_timeout",
        Ending::IdleTimeout => "idle_timeout",
        Ending::Evicted => "evicted",
    }
}

/// The door's connections: held now, the most it holds, and those it closed or refused.
#[derive(Debug, Default)]
struct DoorCounters {
    open: AtomicU64,
    limit: AtomicU64,
    closed: [AtomicU64; ENDINGS.len()],
    refused: AtomicU64,
    accept_errors: AtomicU64,
}

#[derive(Debug, Default)]
struct ForgeCounters {
    received: AtomicU64,
    outcomes: [AtomicU64; OUTCOMES.len()],
}

/// Counters shared by every request; relaxed atomics, since each is read on its own.
#[derive(Debug, Default)]
pub struct Metrics {
    github: ForgeCounters,
    gitlab: ForgeCounters,
    jobs_enqueued: AtomicU64,
    door: DoorCounters,
    /// What the workers and the LLM client of this process measured.
    telemetry: Arc<Telemetry>,
}

impl Metrics {
    /// Ingress counters written out together with `telemetry`.
    pub fn with_telemetry(telemetry: Arc<Telemetry>) -> Metrics {
        Metrics {
            telemetry,
            ..Metrics::default()
        }
    }

    pub fn received(&self, forge: ForgeKind) {
        self.forge(forge).received.fetch_add(1, Ordering::Relaxed);
    }

    pub fn outcome(&self, forge: ForgeKind, outcome: Outcome) {
        let index = OUTCOMES
            .iter()
            .position(|known| *known == outcome)
            .expect("every outcome is listed in OUTCOMES");
        self.forge(forge).outcomes[index].fetch_add(1, Ordering::Relaxed);
    }

    pub fn job_enqueued(&self) {
        self.jobs_enqueued.fetch_add(1, Ordering::Relaxed);
    }

    pub fn connection_limit(&self, limit: usize) {
        self.door.limit.store(limit as u64, Ordering::Relaxed);
    }

    pub fn connection_opened(&self) {
        self.door.open.fetch_add(1, Ordering::Relaxed);
    }

    pub fn connection_closed(&self) {
        self.door.open.fetch_sub(1, Ordering::Relaxed);
    }

    /// The door closed a connection itself, for `ending`.
    pub fn connection_ended(&self, ending: Ending) {
        let index = ENDINGS
            .iter()
            .position(|known| *known == ending)
            .expect("every ending is listed in ENDINGS");
        self.door.closed[index].fetch_add(1, Ordering::Relaxed);
    }

    /// A connection answered 503: every place was taken by a request in flight.
    pub fn connection_refused(&self) {
        self.door.refused.fetch_add(1, Ordering::Relaxed);
    }

    pub fn accept_failed(&self) {
        self.door.accept_errors.fetch_add(1, Ordering::Relaxed);
    }

    fn forge(&self, forge: ForgeKind) -> &ForgeCounters {
        match forge {
            ForgeKind::GitHub => &self.github,
            ForgeKind::GitLab => &self.gitlab,
        }
    }

    /// The Prometheus text exposition (version 0.0.4) of every counter.
    pub fn render(&self) -> String {
        let forges = [("github", &self.github), ("gitlab", &self.gitlab)];
        let mut text = String::new();
        text.push_str(
            "# HELP autofix_webhook_deliveries_received_total Webhook deliveries received.\n",
        );
        text.push_str("# TYPE autofix_webhook_deliveries_received_total counter\n");
        for (name, counters) in forges {
            let value = counters.received.load(Ordering::Relaxed);
            let _ = writeln!(
                text,
                "autofix_webhook_deliveries_received_total{{forge=\"{name}\"}} {value}"
            );
        }
        text.push_str(
            "# HELP autofix_webhook_deliveries_total Webhook deliveries by what became of them.\n",
        );
        text.push_str("# TYPE autofix_webhook_deliveries_total counter\n");
        for (name, counters) in forges {
            for (outcome, count) in OUTCOMES.iter().zip(&counters.outcomes) {
                let _ = writeln!(
                    text,
                    "autofix_webhook_deliveries_total{{forge=\"{name}\",outcome=\"{}\"}} {}",
                    outcome.label(),
                    count.load(Ordering::Relaxed)
                );
            }
        }
        text.push_str("# HELP autofix_jobs_enqueued_total Jobs created by webhook deliveries.\n");
        text.push_str("# TYPE autofix_jobs_enqueued_total counter\n");
        let _ = writeln!(
            text,
            "autofix_jobs_enqueued_total {}",
            self.jobs_enqueued.load(Ordering::Relaxed)
        );
        self.render_door(&mut text);
        self.telemetry.render(&mut text);
        text
    }
}

impl Metrics {
    fn render_door(&self, text: &mut String) {
        let door = &self.door;
        let gauges = [
            (
                "autofix_http_connections_open",
                "Connections the webhook server holds open.",
                &door.open,
            ),
            (
                "autofix_http_connection_limit",
                "Most connections held at once (server.max_connections, lowered by the open-files limit).",
                &door.limit,
            ),
        ];
        for (name, help, value) in gauges {
            let _ = writeln!(text, "# HELP {name} {help}");
            let _ = writeln!(text, "# TYPE {name} gauge");
            let _ = writeln!(text, "{name} {}", value.load(Ordering::Relaxed));
        }
        text.push_str(
            "# HELP autofix_http_connections_closed_total Connections the server closed itself, by reason.\n",
        );
        text.push_str("# TYPE autofix_http_connections_closed_total counter\n");
        for (ending, count) in ENDINGS.iter().zip(&door.closed) {
            let _ = writeln!(
                text,
                "autofix_http_connections_closed_total{{reason=\"{}\"}} {}",
                ending_label(*ending),
                count.load(Ordering::Relaxed)
            );
        }
        let counters = [
            (
                "autofix_http_connections_refused_total",
                "Connections answered 503 because every place was in a request.",
                &door.refused,
            ),
            (
                "autofix_http_accept_errors_total",
                "Accepts that failed (such as too many open files).",
                &door.accept_errors,
            ),
        ];
        for (name, help, value) in counters {
            let _ = writeln!(text, "# HELP {name} {help}");
            let _ = writeln!(text, "# TYPE {name} counter");
            let _ = writeln!(text, "{name} {}", value.load(Ordering::Relaxed));
        }
    }
}

/// The job store's jobs by state and the queue depth (jobs waiting for a worker), as gauges;
/// every replica reads the same store, so every replica reports the same values.
pub fn render_job_counts(text: &mut String, counts: &[(JobState, u64)]) {
    let count = |state: JobState| {
        counts
            .iter()
            .filter(|(counted, _)| *counted == state)
            .map(|(_, n)| n)
            .sum::<u64>()
    };
    text.push_str("# HELP autofix_jobs Jobs in the job store, by state.\n");
    text.push_str("# TYPE autofix_jobs gauge\n");
    for state in [
        JobState::Queued,
        JobState::Running,
        JobState::Succeeded,
        JobState::Failed,
    ] {
        let _ = writeln!(
            text,
            "autofix_jobs{{state=\"{}\"}} {}",
            state.as_str(),
            count(state)
        );
    }
    text.push_str("# HELP autofix_queue_depth Jobs queued and waiting for a worker.\n");
    text.push_str("# TYPE autofix_queue_depth gauge\n");
    let _ = writeln!(text, "autofix_queue_depth {}", count(JobState::Queued));
}
