//! Benchmark (not a test): deliveries per second and latency of the real webhook ingress (HMAC
//! check, parse, SQLite group commit) against a bare axum route that answers 202 doing nothing,
//! at full speed and paced at a fixed rate (open loop: each send on its schedule).

use std::sync::Arc;
use std::time::{Duration, Instant};

use autofix::server::{self, Metrics, MetricsAccess, ServerState};
use autofix::store::Store;
use axum::Router;
use axum::body::Bytes;
use axum::http::StatusCode;
use axum::routing::post;
use hmac::{Hmac, KeyInit, Mac};
use secrecy::SecretString;
use sha2::Sha256;

/// Enough for the store's background WAL checkpoints (every 500 ms) to run inside the measured window.
const DELIVERIES: usize = 10_000;
const CONCURRENCY: usize = 8;
/// Deliveries sent before measuring, to other issues than the measured ones.
const WARMUP: usize = 50;
/// The paced run: this many deliveries per second, each sent on schedule whether or not the
/// earlier ones were answered, so a slow answer cannot hide the queue behind it.
const PACED_RATE: u32 = 500;
const PACED_DELIVERIES: usize = 2_500;
const SECRET: &str = "bench-webhook-secret";
/// The recorded `labeled` delivery adds the label `bug`.
const TRIGGER: &str = "bug";

/// One prepared delivery: a distinct issue (so each one creates a job), its id and signature.
struct Prepared {
    id: String,
    body: Vec<u8>,
    signature: String,
}

struct Figures {
    per_second: f64,
    p50: Duration,
    p99: Duration,
    /// CPU time of the whole process (client, server, store threads) per delivery.
    cpu_per_delivery: Duration,
    /// CPU time over wall time: how many of the machine's cores the run kept busy.
    cores_busy: f64,
}

impl Figures {
    /// The figures of a run that took `elapsed` since the process had used `cpu_before` of CPU.
    fn of_run(mut latencies: Vec<Duration>, elapsed: Duration, cpu_before: Duration) -> Figures {
        let cpu = process_cpu_time().saturating_sub(cpu_before);
        let count = latencies.len();
        latencies.sort();
        Figures {
            per_second: count as f64 / elapsed.as_secs_f64(),
            p50: percentile(&latencies, 50),
            p99: percentile(&latencies, 99),
            cpu_per_delivery: cpu / count as u32,
            cores_busy: cpu.as_secs_f64() / elapsed.as_secs_f64(),
        }
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime starts");
    runtime.block_on(async {
        let deliveries = Arc::new(prepare());
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open_sqlite(&dir.path().join("autofix.db"))
            .await
            .expect("open the SQLite store");
        let ingress = start(server::router(ServerState {
            store: store.clone(),
            github_secrets: vec![SecretString::from(SECRET)],
            gitlab_secrets: vec![],
            trigger_label: TRIGGER.to_owned(),
            command_word: "autofix".to_owned(),
            remark_wait: Duration::ZERO,
            body_limit: 5 * 1024 * 1024,
            read_timeout: Duration::from_secs(10),
            metrics: Arc::new(Metrics::default()),
            metrics_access: MetricsAccess::Public,
            job_queued: Default::default(),
        }))
        .await;
        let bare = start(Router::new().route(
            "/webhooks/github",
            post(|_body: Bytes| async { StatusCode::ACCEPTED }),
        ))
        .await;

        // One short warm-up each, so connection set-up and first-touch costs are not measured.
        let warmup = DELIVERIES..DELIVERIES + WARMUP;
        drive(&bare, Arc::clone(&deliveries), warmup.clone(), "bare").await;
        drive(&ingress, Arc::clone(&deliveries), warmup, "ingress").await;

        let bare_figures = drive(&bare, Arc::clone(&deliveries), 0..DELIVERIES, "bare").await;
        let ingress_figures =
            drive(&ingress, Arc::clone(&deliveries), 0..DELIVERIES, "ingress").await;
        let paced_range = DELIVERIES + WARMUP..DELIVERIES + WARMUP + PACED_DELIVERIES;
        let paced_bare = pace(&bare, Arc::clone(&deliveries), paced_range.clone(), "paced").await;
        let paced_figures =
            pace(&ingress, Arc::clone(&deliveries), paced_range, "paced").await;
        let jobs = store.jobs_list(u32::MAX).await.expect("list jobs").len();

        println!(
            "{DELIVERIES} signed issues.labeled deliveries, {CONCURRENCY} at a time, loopback, client and server in one process"
        );
        report("bare axum 202 (no work)", &bare_figures);
        report("autofix ingress (SQLite)", &ingress_figures);
        println!(
            "ingress throughput / bare throughput: {:.3}   (CPU per delivery: {:.2}x the bare route's)",
            ingress_figures.per_second / bare_figures.per_second,
            ingress_figures.cpu_per_delivery.as_secs_f64()
                / bare_figures.cpu_per_delivery.as_secs_f64()
        );
        println!(
            "paced, open loop: {PACED_DELIVERIES} deliveries at {PACED_RATE}/s, each sent on schedule"
        );
        // The bare route's paced latency is the floor: the client's timer and scheduling on this machine.
        report("bare axum 202 (no work)", &paced_bare);
        report("autofix ingress (SQLite)", &paced_figures);
        println!("jobs in the store afterwards: {jobs}");
    });
}

fn prepare() -> Vec<Prepared> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/webhooks/github/issues/labeled.payload.json"
    );
    let text = std::fs::read(path).expect("the recorded labeled delivery");
    let template: serde_json::Value = serde_json::from_slice(&text).expect("it is JSON");
    (0..DELIVERIES + WARMUP + PACED_DELIVERIES)
        .map(|n| {
            let mut payload = template.clone();
            payload["issue"]["number"] = serde_json::json!(n + 1);
            let body = serde_json::to_vec(&payload).expect("serialises");
            let signature = sign(&body);
            Prepared {
                id: format!("bench-{n}"),
                body,
                signature,
            }
        })
        .collect()
}

fn sign(body: &[u8]) -> String {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(SECRET.as_bytes()).expect("any key");
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

async fn start(router: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let address = listener.local_addr().expect("bound address");
    tokio::spawn(server::serve(listener, router, std::future::pending()));
    format!("http://{address}/webhooks/github")
}

/// Sends the deliveries in `range` with `CONCURRENCY` senders, each taking every
/// `CONCURRENCY`-th one.
async fn drive(
    url: &str,
    deliveries: Arc<Vec<Prepared>>,
    range: std::ops::Range<usize>,
    run: &str,
) -> Figures {
    let count = range.len();
    let client = reqwest::Client::new();
    let cpu_before = process_cpu_time();
    let started = Instant::now();
    let senders: Vec<_> = (0..CONCURRENCY)
        .map(|sender| {
            let client = client.clone();
            let url = url.to_owned();
            let deliveries = Arc::clone(&deliveries);
            let run = run.to_owned();
            let range = range.clone();
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                for index in (range.start + sender..range.end).step_by(CONCURRENCY) {
                    let delivery = &deliveries[index];
                    let sent = Instant::now();
                    send(&client, &url, &format!("{run}-{}", delivery.id), delivery).await;
                    latencies.push(sent.elapsed());
                }
                latencies
            })
        })
        .collect();
    let mut latencies = Vec::with_capacity(count);
    for sender in senders {
        latencies.extend(sender.await.expect("sender task"));
    }
    Figures::of_run(latencies, started.elapsed(), cpu_before)
}

/// Sends the deliveries in `range` at `PACED_RATE` per second, each on its own task started at its
/// scheduled time, and measures each from that time (so a late start counts against the server).
async fn pace(
    url: &str,
    deliveries: Arc<Vec<Prepared>>,
    range: std::ops::Range<usize>,
    run: &str,
) -> Figures {
    let count = range.len();
    let client = reqwest::Client::new();
    let cpu_before = process_cpu_time();
    let interval = Duration::from_secs(1) / PACED_RATE;
    let started = tokio::time::Instant::now();
    let mut sends = Vec::with_capacity(count);
    for (nth, index) in range.enumerate() {
        let scheduled = started + interval * nth as u32;
        tokio::time::sleep_until(scheduled).await;
        let client = client.clone();
        let url = url.to_owned();
        let deliveries = Arc::clone(&deliveries);
        let delivery_id = format!("{run}-{}", deliveries[index].id);
        sends.push(tokio::spawn(async move {
            let delivery = &deliveries[index];
            send(&client, &url, &delivery_id, delivery).await;
            scheduled.elapsed()
        }));
    }
    let mut latencies = Vec::with_capacity(count);
    for sent in sends {
        latencies.push(sent.await.expect("sender task"));
    }
    Figures::of_run(latencies, started.elapsed(), cpu_before)
}

/// User and system CPU time of this process so far, all threads together.
fn process_cpu_time() -> Duration {
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let time = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    time(usage.ru_utime) + time(usage.ru_stime)
}

async fn send(client: &reqwest::Client, url: &str, delivery_id: &str, delivery: &Prepared) {
    let response = client
        .post(url)
        .header("X-GitHub-Event", "issues")
        .header("X-GitHub-Delivery", delivery_id)
        .header("X-Hub-Signature-256", &delivery.signature)
        .body(delivery.body.clone())
        .send()
        .await
        .expect("loopback request");
    assert_eq!(response.status(), reqwest::StatusCode::ACCEPTED);
    response.bytes().await.expect("response body");
}

fn percentile(sorted: &[Duration], percent: usize) -> Duration {
    let rank = (sorted.len() * percent).div_ceil(100).max(1) - 1;
    sorted[rank.min(sorted.len() - 1)]
}

fn report(name: &str, figures: &Figures) {
    println!(
        "{name:<26} {:>8.0} deliveries/s   p50 {:>7.2} ms   p99 {:>7.2} ms   CPU {:>6.1} µs/delivery on {:.2} cores",
        figures.per_second,
        figures.p50.as_secs_f64() * 1000.0,
        figures.p99.as_secs_f64() * 1000.0,
        figures.cpu_per_delivery.as_secs_f64() * 1e6,
        figures.cores_busy
    );
}
