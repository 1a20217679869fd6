//! The webhook ingress over real HTTP on loopback, with the recorded GitHub and GitLab payloads
//! and a real SQLite job store: who gets in, what gets queued, and what each forge is answered.

use std::sync::Arc;
use std::time::Duration;

use autofix::forge::{BotEvent, ForgeKind, Triggers};
use autofix::server::{self, Metrics, MetricsAccess, ServerState};
use autofix::store::{JobId, JobState, Store};
use hmac::{Hmac, KeyInit, Mac};
use reqwest::StatusCode;
use secrecy::SecretString;
use serde_json::{Value, json};
use sha2::Sha256;

const GITHUB_SECRET: &str = "github-webhook-secret";
const GITLAB_TOKEN: &str = "gitlab-webhook-token";
/// The recorded GitHub `labeled` delivery adds `bug`; the GitLab issue hook adds `Platform`.
const GITHUB_TRIGGER: &str = "bug";
const GITLAB_TRIGGER: &str = "platform";
const BODY_LIMIT: usize = 64 * 1024;

fn fixture(path: &str) -> Vec<u8> {
    let file = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/webhooks")
        .join(path);
    std::fs::read(&file).unwrap_or_else(|error| panic!("{}: {error}", file.display()))
}

fn sign(secret: &str, body: &[u8]) -> String {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// A running ingress on 127.0.0.1:0 over a fresh SQLite file.
struct Ingress {
    base: String,
    store: Store,
    client: reqwest::Client,
    _dir: tempfile::TempDir,
}

impl Ingress {
    async fn start(trigger_label: &str) -> Ingress {
        Self::start_with(trigger_label, Duration::from_secs(5)).await
    }

    async fn start_with(trigger_label: &str, read_timeout: Duration) -> Ingress {
        Self::start_waiting(trigger_label, read_timeout, Duration::ZERO).await
    }

    async fn start_waiting(
        trigger_label: &str,
        read_timeout: Duration,
        remark_wait: Duration,
    ) -> Ingress {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_sqlite(&dir.path().join("autofix.db"))
            .await
            .unwrap();
        let state = ServerState {
            store: store.clone(),
            github_secrets: vec![
                SecretString::from("an-older-secret"),
                SecretString::from(GITHUB_SECRET),
            ],
            gitlab_secrets: vec![SecretString::from(GITLAB_TOKEN)],
            trigger_label: trigger_label.to_owned(),
            command_word: "autofix".to_owned(),
            remark_wait,
            body_limit: BODY_LIMIT,
            read_timeout,
            metrics: Arc::new(Metrics::default()),
            metrics_access: MetricsAccess::Public,
            job_queued: Default::default(),
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(server::serve(
            listener,
            server::router(state),
            std::future::pending(),
        ));
        Ingress {
            base,
            store,
            client: reqwest::Client::new(),
            _dir: dir,
        }
    }

    async fn github(
        &self,
        event: &str,
        delivery: &str,
        body: &[u8],
        signature: Option<&str>,
    ) -> (StatusCode, Value) {
        let mut request = self
            .client
            .post(format!("{}/webhooks/github", self.base))
            .header("X-GitHub-Event", event)
            .header("X-GitHub-Delivery", delivery)
            .header("Content-Type", "application/json")
            .body(body.to_vec());
        if let Some(signature) = signature {
            request = request.header("X-Hub-Signature-256", signature);
        }
        answer(request).await
    }

    async fn signed_github(&self, event: &str, delivery: &str, body: &[u8]) -> (StatusCode, Value) {
        self.github(event, delivery, body, Some(&sign(GITHUB_SECRET, body)))
            .await
    }

    async fn gitlab(&self, token: &str, delivery: &str, body: &[u8]) -> (StatusCode, Value) {
        let request = self
            .client
            .post(format!("{}/webhooks/gitlab", self.base))
            .header("X-Gitlab-Event", "Issue Hook")
            .header("X-Gitlab-Token", token)
            .header("Idempotency-Key", delivery)
            .body(body.to_vec());
        answer(request).await
    }

    async fn get(&self, path: &str) -> (StatusCode, String) {
        let response = self
            .client
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .unwrap();
        (response.status(), response.text().await.unwrap())
    }

    async fn job_count(&self) -> usize {
        self.store.jobs_list(100).await.unwrap().len()
    }
}

async fn answer(request: reqwest::RequestBuilder) -> (StatusCode, Value) {
    let response = request.send().await.unwrap();
    let status = response.status();
    let text = response.text().await.unwrap();
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, body)
}

fn labeled() -> Vec<u8> {
    fixture("github/issues/labeled.payload.json")
}

fn metric(text: &str, series: &str) -> u64 {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no series {series} in\n{text}"))
        .parse()
        .unwrap()
}

#[tokio::test]
async fn a_signed_labeled_issue_is_queued_as_one_job() {
    let ingress = Ingress::start(GITHUB_TRIGGER).await;
    let (status, body) = ingress
        .signed_github("issues", "delivery-1", &labeled())
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(body["status"], "queued");
    let job = JobId(body["job"].as_i64().unwrap());
    let jobs = ingress.store.jobs_list(10).await.unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].id, job);
    assert_eq!(jobs[0].state, JobState::Queued);
    assert_eq!(jobs[0].key.repo.forge, ForgeKind::GitHub);
    let stored = ingress.store.delivery("delivery-1").await.unwrap().unwrap();
    assert_eq!(stored.job_id, Some(job));
    assert_eq!(stored.payload, labeled());
    assert_eq!(stored.event, "issues");
    // The job works from what the server read, stored beside the payload.
    let origin = ingress.store.job_delivery(job).await.unwrap().unwrap();
    assert!(
        matches!(&origin.parsed, BotEvent::IssueLabeled { issue, label_added, .. }
            if issue.0 == 1 && label_added == GITHUB_TRIGGER),
        "{:?}",
        origin.parsed
    );
}

#[tokio::test]
async fn a_delivery_an_older_autofix_stored_unparsed_is_read_once_at_start_up() {
    // An older autofix kept only the payload: its job re-read it every time it ran.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("autofix.db");
    let store = Store::open(&path.display().to_string()).await.unwrap();
    let older = sqlx::SqlitePool::connect(&format!("sqlite:{}", path.display()))
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO jobs (forge, repo, issue_number, dedupe_key, state, attempts, run_after, \
         created_at, updated_at, origin_delivery) \
         VALUES ('github', 'Codertocat/Hello-World', 1, 'github:Codertocat/Hello-World:1', \
         'queued', 0, 0, 0, 0, 'old-1')",
    )
    .execute(&older)
    .await
    .unwrap();
    for (id, payload) in [("old-1", labeled()), ("old-2", b"{not json".to_vec())] {
        sqlx::query(
            "INSERT INTO deliveries (id, forge, event, received_at, payload, job_id) \
             VALUES ($1, 'github', 'issues', 0, $2, 1)",
        )
        .bind(id)
        .bind(payload)
        .execute(&older)
        .await
        .unwrap();
    }
    let triggers = Triggers {
        label: GITHUB_TRIGGER,
        command: "autofix",
    };

    let read = server::read_earlier_deliveries(&store, &triggers)
        .await
        .unwrap();
    let again = server::read_earlier_deliveries(&store, &triggers)
        .await
        .unwrap();

    assert_eq!((read, again), (2, 0), "each is read once");
    let deliveries = store.job_deliveries(JobId(1)).await.unwrap();
    assert!(
        matches!(&deliveries[0].parsed, BotEvent::IssueLabeled { issue, .. } if issue.0 == 1),
        "{:?}",
        deliveries[0].parsed
    );
    assert!(
        matches!(&deliveries[1].parsed, BotEvent::Ignored { reason }
            if reason.starts_with("the stored delivery cannot be read")),
        "{:?}",
        deliveries[1].parsed
    );
    assert_eq!(
        store.delivery("old-2").await.unwrap().unwrap().payload,
        b"{not json",
        "the payload is kept as it came"
    );
}

#[tokio::test]
async fn a_redelivery_is_a_duplicate_and_a_new_delivery_joins_the_active_job() {
    let ingress = Ingress::start(GITHUB_TRIGGER).await;
    let (_, first) = ingress
        .signed_github("issues", "delivery-1", &labeled())
        .await;
    let (status, again) = ingress
        .signed_github("issues", "delivery-1", &labeled())
        .await;
    assert_eq!(
        (status, again),
        (StatusCode::OK, json!({"status": "duplicate"}))
    );
    assert_eq!(ingress.job_count().await, 1);
    let (status, joined) = ingress
        .signed_github("issues", "delivery-2", &labeled())
        .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert_eq!(
        joined,
        json!({"status": "already_queued", "job": first["job"]})
    );
    assert_eq!(ingress.job_count().await, 1);
}

#[tokio::test]
async fn a_wrong_or_missing_signature_is_refused_and_nothing_is_stored() {
    let ingress = Ingress::start(GITHUB_TRIGGER).await;
    let wrong = sign("not-the-secret", &labeled());
    let (status, body) = ingress
        .github("issues", "delivery-1", &labeled(), Some(&wrong))
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        body["reason"],
        "X-Hub-Signature-256 does not match the body under any configured secret"
    );
    let (status, body) = ingress
        .github("issues", "delivery-2", &labeled(), None)
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(
        body["reason"]
            .as_str()
            .unwrap()
            .starts_with("missing X-Hub-Signature-256")
    );
    assert_eq!(ingress.job_count().await, 0);
    assert!(
        ingress
            .store
            .delivery("delivery-1")
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn a_delivery_signed_only_with_sha1_is_refused() {
    let ingress = Ingress::start(GITHUB_TRIGGER).await;
    let response = ingress
        .client
        .post(format!("{}/webhooks/github", ingress.base))
        .header("X-GitHub-Event", "issues")
        .header("X-GitHub-Delivery", "delivery-1")
        .header(
            "X-Hub-Signature",
            "sha1=0123456789abcdef0123456789abcdef01234567",
        )
        .body(labeled());
    let (status, body) = answer(response).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(body["reason"].as_str().unwrap().contains("SHA-1"), "{body}");
    assert_eq!(ingress.job_count().await, 0);
}

#[tokio::test]
async fn a_signed_but_malformed_github_body_is_a_bad_request() {
    let ingress = Ingress::start(GITHUB_TRIGGER).await;
    let (status, body) = ingress
        .signed_github("issues", "delivery-1", b"{\"action\": ")
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        body["reason"]
            .as_str()
            .unwrap()
            .starts_with("the request body is not JSON"),
        "{body}"
    );
    let mut payload: Value = serde_json::from_slice(&labeled()).unwrap();
    payload["issue"].as_object_mut().unwrap().remove("number");
    let incomplete = serde_json::to_vec(&payload).unwrap();
    let (status, body) = ingress
        .signed_github("issues", "delivery-2", &incomplete)
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["reason"], "missing required field `issue.number`");
    assert_eq!(ingress.job_count().await, 0);
}

#[tokio::test]
async fn a_github_delivery_without_its_id_is_a_bad_request() {
    let ingress = Ingress::start(GITHUB_TRIGGER).await;
    let request = ingress
        .client
        .post(format!("{}/webhooks/github", ingress.base))
        .header("X-GitHub-Event", "issues")
        .header("X-Hub-Signature-256", sign(GITHUB_SECRET, &labeled()))
        .body(labeled());
    let (status, body) = answer(request).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["reason"], "missing X-GitHub-Delivery header");
    assert_eq!(ingress.job_count().await, 0);
}

#[tokio::test]
async fn a_ping_and_a_label_that_is_not_the_trigger_are_ignored() {
    let ingress = Ingress::start("auto-fix").await;
    let (status, body) = ingress
        .signed_github("ping", "delivery-1", &fixture("github/ping/payload.json"))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["status"], "ignored");
    assert!(
        body["reason"].as_str().unwrap().starts_with("ping"),
        "{body}"
    );
    let (status, body) = ingress
        .signed_github("issues", "delivery-2", &labeled())
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body,
        json!({"status": "ignored", "reason": "label `bug` is not the trigger label `auto-fix`"})
    );
    assert_eq!(ingress.job_count().await, 0);
}

#[tokio::test]
async fn a_gitlab_issue_hook_with_the_token_is_queued() {
    let ingress = Ingress::start(GITLAB_TRIGGER).await;
    let (status, body) = ingress
        .gitlab(
            GITLAB_TOKEN,
            "gitlab-delivery-1",
            &fixture("gitlab/issue_hook.json"),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(body["status"], "queued");
    let jobs = ingress.store.jobs_list(10).await.unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].key.repo.forge, ForgeKind::GitLab);
}

#[tokio::test]
async fn a_gitlab_hook_with_a_wrong_token_is_refused() {
    let ingress = Ingress::start(GITLAB_TRIGGER).await;
    let (status, body) = ingress
        .gitlab(
            "guess",
            "gitlab-delivery-1",
            &fixture("gitlab/issue_hook.json"),
        )
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        body["reason"],
        "X-Gitlab-Token does not match any configured secret"
    );
    assert_eq!(ingress.job_count().await, 0);
}

#[tokio::test]
async fn an_unreadable_gitlab_hook_with_the_token_is_acknowledged_as_ignored() {
    // GitLab disables a hook that keeps getting 4xx, so only authentication earns one.
    let ingress = Ingress::start(GITLAB_TRIGGER).await;
    let (status, body) = ingress
        .gitlab(GITLAB_TOKEN, "gitlab-delivery-1", b"not json at all")
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["status"], "ignored");
    assert!(
        body["reason"]
            .as_str()
            .unwrap()
            .starts_with("unreadable delivery: the request body is not JSON"),
        "{body}"
    );
    let request = ingress
        .client
        .post(format!("{}/webhooks/gitlab", ingress.base))
        .header("X-Gitlab-Event", "Issue Hook")
        .header("X-Gitlab-Token", GITLAB_TOKEN)
        .body(fixture("gitlab/issue_hook.json"));
    let (status, body) = answer(request).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body,
        json!({"status": "ignored", "reason": "missing Idempotency-Key or X-Gitlab-Event-UUID header"})
    );
    assert_eq!(ingress.job_count().await, 0);
}

#[tokio::test]
async fn a_body_over_the_limit_is_refused_with_413() {
    let ingress = Ingress::start(GITHUB_TRIGGER).await;
    let oversized = vec![b' '; BODY_LIMIT + 1];
    let (status, body) = ingress
        .signed_github("issues", "delivery-1", &oversized)
        .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(
        body["reason"],
        format!("the request body exceeds server.body_limit_bytes ({BODY_LIMIT} bytes)")
    );
    let (status, _) = ingress
        .gitlab(GITLAB_TOKEN, "gitlab-delivery-1", &oversized)
        .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(ingress.job_count().await, 0);
}

#[tokio::test]
async fn a_sender_that_stalls_mid_body_is_answered_408() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let ingress = Ingress::start_with(GITHUB_TRIGGER, Duration::from_millis(300)).await;
    let address = ingress.base.trim_start_matches("http://");
    let mut socket = tokio::net::TcpStream::connect(address).await.unwrap();
    let head = "POST /webhooks/github HTTP/1.1\r\nHost: localhost\r\nX-GitHub-Event: issues\r\n\
                X-GitHub-Delivery: slow-1\r\nContent-Length: 1000\r\n\r\n{\"action\":";
    socket.write_all(head.as_bytes()).await.unwrap();
    let mut response = vec![0; 1024];
    let read = tokio::time::timeout(Duration::from_secs(10), socket.read(&mut response))
        .await
        .expect("the server answers a stalled body within its read timeout")
        .unwrap();
    let response = String::from_utf8_lossy(&response[..read]);
    assert!(response.starts_with("HTTP/1.1 408"), "{response}");
    assert!(response.contains("server.read_timeout_secs"), "{response}");
    assert_eq!(ingress.job_count().await, 0);
}

#[tokio::test]
async fn health_and_readiness_answer_while_the_store_is_open_and_readiness_fails_once_it_closes() {
    let ingress = Ingress::start(GITHUB_TRIGGER).await;
    assert_eq!(
        ingress.get("/healthz").await,
        (StatusCode::OK, "ok".to_owned())
    );
    assert_eq!(ingress.get("/readyz").await.0, StatusCode::OK);
    ingress.store.close().await;
    assert_eq!(
        ingress.get("/readyz").await.0,
        StatusCode::SERVICE_UNAVAILABLE
    );
    assert_eq!(ingress.get("/healthz").await.0, StatusCode::OK);
}

#[tokio::test]
async fn a_delivery_the_store_cannot_record_is_answered_503_so_github_retries() {
    let ingress = Ingress::start(GITHUB_TRIGGER).await;
    ingress.store.close().await;
    let (status, body) = ingress
        .signed_github("issues", "delivery-1", &labeled())
        .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(body["status"], "unavailable");
    let (_, metrics) = ingress.get("/metrics").await;
    assert_eq!(
        metric(
            &metrics,
            "autofix_webhook_deliveries_total{forge=\"github\",outcome=\"failed\"}"
        ),
        1
    );
}

#[tokio::test]
async fn the_metrics_count_every_delivery_by_forge_and_outcome() {
    let ingress = Ingress::start(GITHUB_TRIGGER).await;
    ingress
        .signed_github("issues", "delivery-1", &labeled())
        .await;
    ingress
        .signed_github("issues", "delivery-1", &labeled())
        .await;
    ingress
        .signed_github("issues", "delivery-2", &labeled())
        .await;
    ingress
        .signed_github("ping", "delivery-3", &fixture("github/ping/payload.json"))
        .await;
    ingress
        .github("issues", "delivery-4", &labeled(), None)
        .await;
    ingress.gitlab("guess", "gitlab-delivery-1", b"{}").await;
    let (status, text) = ingress.get("/metrics").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        metric(
            &text,
            "autofix_webhook_deliveries_received_total{forge=\"github\"}"
        ),
        5
    );
    assert_eq!(
        metric(
            &text,
            "autofix_webhook_deliveries_received_total{forge=\"gitlab\"}"
        ),
        1
    );
    let github = |outcome: &str| {
        metric(
            &text,
            &format!("autofix_webhook_deliveries_total{{forge=\"github\",outcome=\"{outcome}\"}}"),
        )
    };
    assert_eq!(github("accepted"), 2);
    assert_eq!(github("duplicate"), 1);
    assert_eq!(github("ignored"), 1);
    assert_eq!(github("rejected"), 1);
    assert_eq!(github("failed"), 0);
    assert_eq!(
        metric(
            &text,
            "autofix_webhook_deliveries_total{forge=\"gitlab\",outcome=\"rejected\"}"
        ),
        1
    );
    assert_eq!(metric(&text, "autofix_jobs_enqueued_total"), 1);
    assert!(text.contains("# TYPE autofix_jobs_enqueued_total counter"));
}

#[tokio::test]
async fn the_server_stops_when_told_to_shut_down() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_sqlite(&dir.path().join("autofix.db"))
        .await
        .unwrap();
    let state = ServerState {
        store,
        github_secrets: vec![SecretString::from(GITHUB_SECRET)],
        gitlab_secrets: vec![],
        trigger_label: GITHUB_TRIGGER.to_owned(),
        command_word: "autofix".to_owned(),
        remark_wait: Duration::ZERO,
        body_limit: BODY_LIMIT,
        read_timeout: Duration::from_secs(5),
        metrics: Arc::new(Metrics::default()),
        metrics_access: MetricsAccess::Public,
        job_queued: Default::default(),
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server::serve(listener, server::router(state), async move {
        let _ = stopped.await;
    }));
    stop.send(()).unwrap();
    let finished = tokio::time::timeout(Duration::from_secs(5), serving)
        .await
        .expect("serve returns after the shutdown signal");
    assert!(finished.unwrap().is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn deliveries_arriving_together_for_distinct_issues_are_each_queued_once() {
    let ingress = Arc::new(Ingress::start(GITHUB_TRIGGER).await);
    let template: Value = serde_json::from_slice(&labeled()).unwrap();
    let senders = (1..=40u64).map(|number| {
        let ingress = Arc::clone(&ingress);
        let mut payload = template.clone();
        payload["issue"]["number"] = json!(number);
        tokio::spawn(async move {
            let body = serde_json::to_vec(&payload).unwrap();
            // Every fourth issue is delivered twice under the same id, as GitHub's redelivery does.
            let copies = if number % 4 == 0 { 2 } else { 1 };
            let mut answers = Vec::new();
            for _ in 0..copies {
                answers.push(
                    ingress
                        .signed_github("issues", &format!("together-{number}"), &body)
                        .await,
                );
            }
            answers
        })
    });
    let mut answers = Vec::new();
    for sender in senders.collect::<Vec<_>>() {
        answers.extend(sender.await.unwrap());
    }

    let queued = answers
        .iter()
        .filter(|(status, body)| *status == StatusCode::ACCEPTED && body["status"] == "queued")
        .count();
    let duplicates = answers
        .iter()
        .filter(|(status, body)| *status == StatusCode::OK && body["status"] == "duplicate")
        .count();
    assert_eq!((queued, duplicates), (40, 10), "{answers:?}");
    assert_eq!(ingress.job_count().await, 40);
}

/// GitHub's recorded `issue_comment` saying `body`.
fn comment_saying(body: &str) -> Vec<u8> {
    let mut payload: Value =
        serde_json::from_slice(&fixture("github/issue_comment/created.payload.json")).unwrap();
    payload["comment"]["body"] = json!(body);
    serde_json::to_vec(&payload).unwrap()
}

#[tokio::test]
async fn a_command_waits_for_the_remarks_said_with_it_before_its_job_may_run() {
    let ingress = Ingress::start_waiting(
        GITHUB_TRIGGER,
        Duration::from_secs(5),
        Duration::from_secs(3),
    )
    .await;

    let (status, first) = ingress
        .signed_github("issue_comment", "c-1", &comment_saying("/autofix status"))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{first}");
    let (status, second) = ingress
        .signed_github(
            "issue_comment",
            "c-2",
            &comment_saying("/autofix tidy the names too"),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{second}");
    assert_eq!(
        second["status"], "already_queued",
        "the second remark joins the first's job"
    );
    assert_eq!(second["job"], first["job"]);

    let jobs = ingress.store.jobs_list(10).await.unwrap();
    assert_eq!(jobs.len(), 1);
    let waits = jobs[0].run_after - jobs[0].created_at;
    assert_eq!(waits.num_seconds(), 3, "{jobs:#?}");
    let now = jobs[0].created_at;
    let lease = Duration::from_secs(60);
    assert!(
        ingress
            .store
            .claim("w", lease, now)
            .await
            .unwrap()
            .is_none(),
        "not yet"
    );
    let later = jobs[0].run_after;
    assert_eq!(
        ingress
            .store
            .claim("w", lease, later)
            .await
            .unwrap()
            .unwrap()
            .id,
        jobs[0].id
    );
    assert_eq!(
        ingress
            .store
            .job_deliveries(jobs[0].id)
            .await
            .unwrap()
            .len(),
        2
    );
}

#[tokio::test]
async fn a_comment_without_the_command_word_queues_nothing() {
    let ingress = Ingress::start(GITHUB_TRIGGER).await;

    let (status, answer) = ingress
        .signed_github(
            "issue_comment",
            "c-1",
            &comment_saying("thanks, looks good"),
        )
        .await;

    assert_eq!(status, StatusCode::OK);
    assert_eq!(answer["status"], "ignored", "{answer}");
    assert!(ingress.store.jobs_list(10).await.unwrap().is_empty());
}
