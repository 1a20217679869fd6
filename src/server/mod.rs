//! The webhook ingress (`autofix serve`): authenticates and reads deliveries, records each wanted
//! one and its job in the store in one transaction, and answers at once. No git, LLM or forge API.

mod door;
mod metrics;
pub mod pages;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, FromRequest, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::Utc;
use secrecy::SecretString;
use serde_json::{Value, json};
use tokio::net::TcpListener;

use crate::forge::{
    BotEvent, DeliveryId, ForgeKind, Remark, RepoRef, Thread, Triggers, github, gitlab,
};
use crate::store::{Delivery, EnqueueOutcome, JobKey, RepoKey, Store, StoreError};

pub use door::{DoorSettings, serve_with};
pub use metrics::{Metrics, MetricsAccess, Outcome};

/// Everything the ingress needs; built once by `autofix serve` (or a test) and shared.
#[derive(Debug)]
pub struct ServerState {
    pub store: Store,
    pub github_secrets: Vec<SecretString>,
    pub gitlab_secrets: Vec<SecretString>,
    pub trigger_label: String,
    /// The word after `/` that starts a command in a comment (`autofix`).
    pub command_word: String,
    /// How long a job started by a remark waits for more remarks said with it (a review's line
    /// comments arrive as deliveries of their own) before it may start.
    pub remark_wait: Duration,
    /// Largest body read; a larger one is answered 413.
    pub body_limit: usize,
    /// Longest wait for the whole body; a slower sender is answered 408.
    pub read_timeout: Duration,
    pub metrics: Arc<Metrics>,
    /// Who may read `/metrics`: anyone, or only whoever may open the operator's pages.
    pub metrics_access: MetricsAccess,
    /// Told of every new job, so an idle worker starts it at once instead of at its next poll.
    pub job_queued: Arc<tokio::sync::Notify>,
}

impl ServerState {
    fn triggers(&self) -> Triggers<'_> {
        Triggers {
            label: &self.trigger_label,
            command: &self.command_word,
        }
    }
}

type Shared = Arc<ServerState>;

/// The ingress routes: the two webhooks, liveness, readiness and metrics (behind
/// [`ServerState::metrics_access`]).
pub fn router(state: ServerState) -> Router {
    let body_limit = state.body_limit;
    let metrics = Router::new().route("/metrics", get(metrics_text));
    let metrics = match &state.metrics_access {
        MetricsAccess::Public => metrics,
        MetricsAccess::Operator { admin_token } => {
            pages::operator_only(metrics, admin_token.clone())
        }
    };
    Router::new()
        .route("/webhooks/github", post(github_webhook))
        .route("/webhooks/gitlab", post(gitlab_webhook))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .merge(metrics)
        .layer(DefaultBodyLimit::max(body_limit))
        .with_state(Arc::new(state))
}

/// Serves `router` on `listener` with the default door (see [`serve_with`]) until `shutdown`
/// completes, then finishes the requests in flight.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_with(
        listener,
        router,
        DoorSettings::default(),
        Arc::new(Metrics::default()),
        shutdown,
    )
    .await
}

/// Completes on ctrl-c or, on Unix, SIGTERM (what `systemctl stop` and `docker stop` send).
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut stream) => {
                stream.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
}

async fn healthz() -> &'static str {
    "ok"
}

async fn readyz(State(state): State<Shared>) -> Response {
    match state.store.ping().await {
        Ok(()) => (StatusCode::OK, "ready").into_response(),
        Err(error) => {
            tracing::warn!(%error, "readiness probe: the job store does not answer");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "the job store does not answer",
            )
                .into_response()
        }
    }
}

async fn metrics_text(State(state): State<Shared>) -> Response {
    let mut text = state.metrics.render();
    match state.store.job_counts().await {
        Ok(counts) => metrics::render_job_counts(&mut text, &counts),
        // The counters are still worth a scrape; the missing gauges say the store is down.
        Err(error) => tracing::warn!(%error, "metrics: the job store does not answer"),
    }
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response()
}

async fn github_webhook(State(state): State<Shared>, mut request: Request) -> Response {
    let forge = ForgeKind::GitHub;
    state.metrics.received(forge);
    // Reading the body needs only the body and the limit (an extension), not the headers.
    let headers = std::mem::take(request.headers_mut());
    let body = match read_body(&state, request).await {
        Ok(body) => body,
        Err(refusal) => return refuse(&state, forge, refusal),
    };
    if let Err(error) = github::verify_request(&state.github_secrets, &body, &headers) {
        return refuse(&state, forge, (StatusCode::UNAUTHORIZED, error.to_string()));
    }
    let delivery_id = match github::delivery_id(&headers) {
        Ok(id) => id,
        Err(error) => return refuse(&state, forge, (StatusCode::BAD_REQUEST, error.to_string())),
    };
    let event_name = header_text(&headers, github::EVENT_HEADER);
    match github::parse_event_with(&event_name, &body, &state.triggers()) {
        Ok(event) => accept(&state, forge, delivery_id, &event_name, body, event).await,
        Err(error) => refuse(&state, forge, (StatusCode::BAD_REQUEST, error.to_string())),
    }
}

/// GitLab disables a hook after repeated 4xx answers, so only a failed authentication (or an
/// oversized body) is one: an authentic delivery the bot cannot read is acknowledged as ignored.
async fn gitlab_webhook(State(state): State<Shared>, mut request: Request) -> Response {
    let forge = ForgeKind::GitLab;
    state.metrics.received(forge);
    let headers = std::mem::take(request.headers_mut());
    if let Err(error) = gitlab::verify_request(&state.gitlab_secrets, &headers) {
        return refuse(&state, forge, (StatusCode::UNAUTHORIZED, error.to_string()));
    }
    let body = match read_body(&state, request).await {
        Ok(body) => body,
        Err(refusal) => return refuse(&state, forge, refusal),
    };
    let delivery_id = match gitlab::delivery_id(&headers) {
        Ok(id) => id,
        Err(error) => return ignore(&state, forge, &error.to_string()),
    };
    let event_name = header_text(&headers, gitlab::EVENT_HEADER);
    match gitlab::parse_event_with(&event_name, &body, &state.triggers()) {
        Ok(event) => accept(&state, forge, delivery_id, &event_name, body, event).await,
        Err(error) => ignore(&state, forge, &format!("unreadable delivery: {error}")),
    }
}

/// The whole body, within the size limit and the read timeout.
async fn read_body(state: &ServerState, request: Request) -> Result<Bytes, (StatusCode, String)> {
    match tokio::time::timeout(state.read_timeout, Bytes::from_request(request, &())).await {
        Ok(Ok(body)) => Ok(body),
        Ok(Err(rejection)) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => Err((
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "the request body exceeds server.body_limit_bytes ({} bytes)",
                state.body_limit
            ),
        )),
        Ok(Err(rejection)) => Err((rejection.status(), rejection.body_text())),
        Err(_) => Err((
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "the request body did not arrive within server.read_timeout_secs ({}s)",
                state.read_timeout.as_secs()
            ),
        )),
    }
}

/// Deliveries read at once per batch when reading those recorded before deliveries were stored
/// parsed.
const EARLIER_DELIVERIES_BATCH: u32 = 500;

/// Reads, once, the deliveries a store recorded before it kept what each asks (older versions
/// of autofix parsed the payload again every time a job ran): each is parsed as the ingress
/// would today, and one that no longer reads is recorded as asking for nothing, with why. How
/// many were read is returned and logged.
pub async fn read_earlier_deliveries(
    store: &Store,
    triggers: &Triggers<'_>,
) -> Result<usize, StoreError> {
    let mut read = 0;
    loop {
        let batch = store.unparsed_deliveries(EARLIER_DELIVERIES_BATCH).await?;
        if batch.is_empty() {
            break;
        }
        for delivery in batch {
            let parsed = crate::forge::parse_delivery(
                delivery.forge,
                &delivery.event,
                &delivery.payload,
                triggers,
            )
            .unwrap_or_else(|error| BotEvent::Ignored {
                reason: format!("the stored delivery cannot be read: {error}"),
            });
            store.record_parsed(&delivery.id, &parsed).await?;
            read += 1;
        }
    }
    if read > 0 {
        tracing::info!(
            deliveries = read,
            "read the deliveries recorded before they were stored parsed"
        );
    }
    Ok(read)
}

/// An authentic, readable delivery: ignored, or recorded with its job in one transaction.
async fn accept(
    state: &ServerState,
    forge: ForgeKind,
    delivery_id: DeliveryId,
    event_name: &str,
    body: Bytes,
    event: BotEvent,
) -> Response {
    let mut wait = Duration::ZERO;
    let key = match &event {
        BotEvent::Ignored { reason } => return ignore(state, forge, reason),
        BotEvent::IssueLabeled { repo, issue, .. } => JobKey::for_issue(repo, *issue),
        BotEvent::BaseMoved { repo, .. } => {
            let repo = repo.clone();
            return fan_out(state, &delivery_id, event_name, body, event, &repo).await;
        }
        BotEvent::Remark(remark) => match remark_key(state, remark).await {
            Ok(Some(key)) => {
                wait = state.remark_wait;
                key
            }
            Ok(None) => {
                return ignore(
                    state,
                    forge,
                    "said on a pull or merge request autofix did not open",
                );
            }
            Err(error) => return unavailable(state, forge, &delivery_id, &error),
        },
    };
    let received_at = Utc::now();
    let delivery = Delivery {
        id: delivery_id.as_str().to_owned(),
        forge,
        event: event_name.to_owned(),
        received_at,
        // The body's only copy, unless hyper handed over a buffer nothing else shares.
        payload: Vec::from(body),
        parsed: event,
    };
    let run_after = received_at + wait;
    let outcome = state
        .store
        .record_delivery_and_enqueue_after(delivery, &key, received_at, run_after)
        .await;
    let issue_ref = key.dedupe_key();
    let delivery_id = delivery_id.as_str();
    match outcome {
        Ok(EnqueueOutcome::NewJob(job)) => {
            state.metrics.outcome(forge, Outcome::Accepted);
            state.metrics.job_enqueued();
            state.job_queued.notify_one();
            tracing::info!(job = job.0, issue = %issue_ref, delivery = %delivery_id, "job queued");
            reply(
                StatusCode::ACCEPTED,
                json!({"status": "queued", "job": job}),
            )
        }
        Ok(EnqueueOutcome::ActiveJobExists(job)) => {
            state.metrics.outcome(forge, Outcome::Accepted);
            tracing::info!(job = job.0, issue = %issue_ref, delivery = %delivery_id, "joined the active job");
            reply(
                StatusCode::ACCEPTED,
                json!({"status": "already_queued", "job": job}),
            )
        }
        Ok(EnqueueOutcome::DuplicateDelivery) => {
            state.metrics.outcome(forge, Outcome::Duplicate);
            tracing::info!(delivery = %delivery_id, "duplicate delivery");
            reply(StatusCode::OK, json!({"status": "duplicate"}))
        }
        Err(error) => unavailable(state, forge, &DeliveryId(delivery_id.to_owned()), &error),
    }
}

/// A push to the default branch concerns every open change request of autofix's in the
/// repository: one delivery per change request (`<delivery>:<number>`, so a redelivery is still
/// a duplicate), each joining or starting the job of its issue.
async fn fan_out(
    state: &ServerState,
    delivery_id: &DeliveryId,
    event_name: &str,
    body: Bytes,
    event: BotEvent,
    repo: &RepoRef,
) -> Response {
    let forge = repo.forge;
    let records = match state.store.open_change_requests(&RepoKey::of(repo)).await {
        Ok(records) => records,
        Err(error) => return unavailable(state, forge, delivery_id, &error),
    };
    if records.is_empty() {
        return ignore(
            state,
            forge,
            "a push to the default branch of a repository with no open change request of autofix's",
        );
    }
    let received_at = Utc::now();
    let mut jobs = Vec::new();
    let mut duplicate = true;
    for record in &records {
        let delivery = Delivery {
            id: format!("{}:{}", delivery_id.as_str(), record.number),
            forge,
            event: event_name.to_owned(),
            received_at,
            payload: body.to_vec(),
            parsed: event.clone(),
        };
        match state
            .store
            .record_delivery_and_enqueue(&delivery, &record.key, received_at)
            .await
        {
            Ok(EnqueueOutcome::NewJob(job)) => {
                state.metrics.job_enqueued();
                state.job_queued.notify_one();
                duplicate = false;
                jobs.push(job);
            }
            Ok(EnqueueOutcome::ActiveJobExists(job)) => {
                duplicate = false;
                jobs.push(job);
            }
            Ok(EnqueueOutcome::DuplicateDelivery) => {}
            Err(error) => return unavailable(state, forge, delivery_id, &error),
        }
    }
    if duplicate {
        state.metrics.outcome(forge, Outcome::Duplicate);
        return reply(StatusCode::OK, json!({"status": "duplicate"}));
    }
    state.metrics.outcome(forge, Outcome::Accepted);
    tracing::info!(delivery = %delivery_id.as_str(), ?jobs, "the default branch moved; change requests follow");
    reply(
        StatusCode::ACCEPTED,
        json!({"status": "queued", "jobs": jobs}),
    )
}

/// The job key of the issue a remark is about: its own issue, or the issue of the change
/// request autofix opened (`None` for anyone else's change request).
async fn remark_key(state: &ServerState, remark: &Remark) -> Result<Option<JobKey>, StoreError> {
    match remark.thread {
        Thread::Issue(issue) => Ok(Some(JobKey::for_issue(&remark.repo, issue))),
        Thread::ChangeRequest(number) => {
            let record = state
                .store
                .change_request(&RepoKey::of(&remark.repo), number)
                .await?;
            Ok(record.map(|record| record.key))
        }
    }
}

fn unavailable(
    state: &ServerState,
    forge: ForgeKind,
    delivery_id: &DeliveryId,
    error: &StoreError,
) -> Response {
    state.metrics.outcome(forge, Outcome::Failed);
    tracing::error!(%error, delivery = %delivery_id.as_str(), "the job store could not record a delivery");
    reply(
        StatusCode::SERVICE_UNAVAILABLE,
        json!({"status": "unavailable", "reason": "the job store could not record the delivery; retry later"}),
    )
}

fn ignore(state: &ServerState, forge: ForgeKind, reason: &str) -> Response {
    state.metrics.outcome(forge, Outcome::Ignored);
    tracing::debug!(?forge, reason, "delivery ignored");
    reply(
        StatusCode::OK,
        json!({"status": "ignored", "reason": reason}),
    )
}

/// A delivery that is not authentic, too large or unreadable: the reason names the fault and
/// never echoes a secret (the webhook errors are built that way).
fn refuse(
    state: &ServerState,
    forge: ForgeKind,
    (status, reason): (StatusCode, String),
) -> Response {
    state.metrics.outcome(forge, Outcome::Rejected);
    tracing::warn!(?forge, status = status.as_u16(), reason, "delivery refused");
    reply(status, json!({"status": "rejected", "reason": reason}))
}

fn reply(status: StatusCode, body: Value) -> Response {
    (status, Json(body)).into_response()
}

fn header_text(headers: &HeaderMap, name: &str) -> String {
    headers
        .get(name)
        .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
        .unwrap_or_default()
}
