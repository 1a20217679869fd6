//! Benchmark (not a test): how fast the jobs pages answer with 10,000 jobs in an SQLite job
//! store: the list, a filtered list, one job; against `/healthz` on the same server as a baseline.

use std::time::{Duration, Instant};

use autofix::failure::{FailureCode, Stage};
use autofix::forge::{BotEvent, ForgeKind};
use autofix::server::pages::{self, ForgeLinks, PagesState, SetupFacts};
use autofix::store::{Delivery, EnqueueOutcome, Finish, JobKey, Store};
use axum::routing::get;
use chrono::Utc;
use secrecy::SecretString;

const JOBS: u64 = 10_000;
const REQUESTS: usize = 300;
/// The aim: the list page under this at p99.
const AIM_P99: Duration = Duration::from_millis(50);

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let store = Store::open_sqlite(&dir.path().join("autofix.db"))
        .await
        .expect("the store opens");
    let filled = Instant::now();
    fill(&store).await;
    println!(
        "jobs page: {JOBS} jobs in the store ({} s to fill)",
        filled.elapsed().as_secs()
    );
    let setup = SetupFacts {
        parts: Vec::new(),
        public_url: String::new(),
        github_web_url: "https://github.com".into(),
        github_api_url: "https://api.github.com".into(),
        github_configured: true,
        data_dir: dir.path().to_path_buf(),
        trigger_label: "auto-fix".into(),
        push_to: autofix::forge::PushTo::Base,
    };
    let links = ForgeLinks {
        github_web: "https://github.com".into(),
        gitlab_web: "https://gitlab.com".into(),
    };
    let state = PagesState::new(store.clone(), SecretString::from(""), setup, links);
    let router = pages::router(state).route("/healthz", get(|| async { "ok" }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(autofix::server::serve(
        listener,
        router,
        std::future::pending(),
    ));
    let client = reqwest::Client::new();
    let baseline = measure(&client, &format!("{base}/healthz")).await;
    print_row("GET /healthz (baseline)", &baseline, None);
    let pages = [
        ("GET /jobs", format!("{base}/jobs")),
        (
            "GET /jobs?state=failed",
            format!("{base}/jobs?state=failed"),
        ),
        (
            "GET /jobs?repo=acme/repo-7",
            format!("{base}/jobs?repo=acme%2Frepo-7"),
        ),
        ("GET /jobs?before=5000", format!("{base}/jobs?before=5000")),
        ("GET /jobs/5000", format!("{base}/jobs/5000")),
    ];
    let mut list_p99 = Duration::ZERO;
    for (name, url) in pages {
        let figures = measure(&client, &url).await;
        if name == "GET /jobs" {
            list_p99 = figures[figures.len() * 99 / 100];
        }
        print_row(name, &figures, Some(&baseline));
    }
    let verdict = if list_p99 <= AIM_P99 { "met" } else { "missed" };
    println!(
        "aim: the list page under {} ms at p99: {verdict} ({:.1} ms)",
        AIM_P99.as_millis(),
        list_p99.as_secs_f64() * 1000.0
    );
    store.close().await;
}

/// 10,000 jobs over 20 repositories: a third failed, a third succeeded, the rest queued.
async fn fill(store: &Store) {
    for n in 0..JOBS {
        let delivery = Delivery {
            id: format!("bench-{n}"),
            forge: ForgeKind::GitHub,
            event: "issues".into(),
            received_at: Utc::now(),
            payload: b"{}".to_vec(),
            parsed: BotEvent::Ignored {
                reason: "a benchmark's delivery".into(),
            },
        };
        let key = JobKey::new(ForgeKind::GitHub, format!("acme/repo-{}", n % 20), n + 1);
        let outcome = store
            .record_delivery_and_enqueue(&delivery, &key, Utc::now())
            .await
            .expect("a job is queued");
        assert!(matches!(outcome, EnqueueOutcome::NewJob(_)), "{outcome:?}");
    }
    // The oldest two thirds ran: every third failed, the others succeeded; the rest wait.
    for n in 0..JOBS * 2 / 3 {
        let claimed = store
            .claim("bench", Duration::from_secs(600), Utc::now())
            .await
            .expect("a claim")
            .expect("a queued job");
        let id = claimed.id;
        store
            .record_stage(id, "bench", Stage::Validate, "ran the tests", Utc::now())
            .await
            .expect("a stage");
        let finish = if n % 2 == 0 {
            Finish::failed(
                FailureCode::ValidationFailed,
                Stage::Validate,
                "test_calc.py::test_clamp failed",
            )
        } else {
            Finish::Succeeded
        };
        store
            .finish(id, "bench", &finish, Utc::now())
            .await
            .expect("a finish");
    }
}

/// `REQUESTS` sequential GETs of `url` after a warm-up, sorted latencies.
async fn measure(client: &reqwest::Client, url: &str) -> Vec<Duration> {
    for _ in 0..20 {
        get_ok(client, url).await;
    }
    let mut times = Vec::with_capacity(REQUESTS);
    for _ in 0..REQUESTS {
        let started = Instant::now();
        get_ok(client, url).await;
        times.push(started.elapsed());
    }
    times.sort();
    times
}

async fn get_ok(client: &reqwest::Client, url: &str) {
    let response = client.get(url).send().await.expect("the page answers");
    assert!(
        response.status().is_success(),
        "{url}: {}",
        response.status()
    );
    let _ = response.bytes().await.expect("a body");
}

fn print_row(name: &str, times: &[Duration], baseline: Option<&[Duration]>) {
    let at = |q: usize| times[(times.len() * q / 100).min(times.len() - 1)];
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let ratio = baseline
        .map(|base| {
            format!(
                ", p50 {:.1}x the baseline",
                ms(at(50)) / ms(base[base.len() / 2])
            )
        })
        .unwrap_or_default();
    println!(
        "{name:<30} p50 {:>6.2} ms  p99 {:>6.2} ms  max {:>6.2} ms{ratio}",
        ms(at(50)),
        ms(at(99)),
        ms(times[times.len() - 1])
    );
}
