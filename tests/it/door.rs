//! The webhook server's door under the attack of issue 21: connections that never finish their
//! headers or sit idle, against a real `autofix serve` held to systemd's 1024 open files, and a
//! door whose every place is in a request.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::support::deliveries::github_signature;
use crate::support::serve::ServeProcess;
use autofix::server::{DoorSettings, Metrics};
use autofix::store::Store;

const SECRET: &str = "door-webhook-secret";
/// The open files systemd gives a service that sets no `LimitNOFILE=` (soft and hard here).
const SYSTEMD_DEFAULT_OPEN_FILES: u64 = 1024;
const IDLE_ATTACKERS: usize = 1100;
/// Half a request line: a connection that never finishes its headers.
const HALF_A_REQUEST: &[u8] = b"GET /healthz HTTP/1.1\r\nHost: autof";
/// Only so that a door that never closes fails the story instead of hanging it.
const GIVE_UP: Duration = Duration::from_secs(30);

fn recorded_labeled() -> Vec<u8> {
    let path = format!(
        "{}/tests/data/webhooks/github/issues/labeled.payload.json",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|err| panic!("{path}: {err}"))
}

/// A real `autofix serve` for GitHub deliveries (trigger label `bug`, as the recorded payload
/// adds), with `extra` settings; `open_files` sets its soft and hard `RLIMIT_NOFILE` before it
/// starts, so its own raise to the hard limit cannot escape it.
fn autofix_serve(dir: &Path, extra: &[(&str, String)], open_files: Option<u64>) -> ServeProcess {
    let mut vars = vec![
        ("AUTOFIX__WORKDIR", dir.join("work").display().to_string()),
        // Nothing answers there: the job is stored, and its worker fails to reach the forge.
        ("AUTOFIX__GITHUB__API_URL", "http://127.0.0.1:9".to_owned()),
        (
            "AUTOFIX__GITHUB__TOKEN",
            "ghp_doorStoryToken0123456789".to_owned(),
        ),
        ("AUTOFIX__GITHUB__WEBHOOK_SECRET", SECRET.to_owned()),
        ("AUTOFIX__BOT__TRIGGER_LABEL", "bug".to_owned()),
        ("AUTOFIX__EXEC__SANDBOX", "none".to_owned()),
        ("RUST_LOG", "info".to_owned()),
    ];
    vars.extend(extra.iter().cloned());
    ServeProcess::start_with(dir, "serve", &vars, |command| {
        if let Some(limit) = open_files {
            // SAFETY: the closure runs in the forked child before exec and only calls
            // setrlimit, which is async-signal-safe.
            unsafe {
                command.pre_exec(move || {
                    let limit = libc::rlimit {
                        rlim_cur: limit,
                        rlim_max: limit,
                    };
                    if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
    })
}

fn address(serve: &ServeProcess) -> SocketAddr {
    serve.base.trim_start_matches("http://").parse().unwrap()
}

/// This test process may hold `needed` sockets: its soft limit raised to its hard limit, or a
/// failure saying why the story cannot be told here.
fn allow_open_files(needed: u64) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and write only the rlimit they are given.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
        assert!(
            limit.rlim_max >= needed,
            "this story holds {needed} sockets but the test's hard limit of open files is {}: \
             raise it (ulimit -Hn, LimitNOFILE=) to run it",
            limit.rlim_max
        );
        limit.rlim_cur = limit.rlim_max;
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &limit), 0);
    }
}

/// Whether the server closed `stream`: it reads end-of-file or a reset, not data, and not a
/// timeout after [`GIVE_UP`].
fn closed_by_server(stream: &mut TcpStream) -> Result<(), String> {
    stream.set_read_timeout(Some(GIVE_UP)).unwrap();
    let mut byte = [0u8; 1024];
    match stream.read(&mut byte) {
        Ok(0) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::ConnectionReset => Ok(()),
        Ok(n) => Err(format!(
            "the server sent {:?} instead of closing",
            String::from_utf8_lossy(&byte[..n])
        )),
        Err(error) => Err(format!(
            "still open {} s later ({error})",
            GIVE_UP.as_secs()
        )),
    }
}

/// The value of the sample `name` (with its labels) in a Prometheus text.
fn sample(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {name} in\n{text}"))
        .parse()
        .unwrap()
}

async fn metrics(client: &reqwest::Client, serve: &ServeProcess) -> String {
    client
        .get(format!("{}/metrics", serve.base))
        .send()
        .await
        .expect("/metrics answers")
        .text()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eleven_hundred_idle_connections_at_1024_open_files_leave_healthz_and_deliveries_answered()
{
    allow_open_files(IDLE_ATTACKERS as u64 + 512);
    let dir = tempfile::tempdir().unwrap();
    let serve = autofix_serve(dir.path(), &[], Some(SYSTEMD_DEFAULT_OPEN_FILES));
    let server = address(&serve);

    // The attacker opens 1,100 connections, each sending half a request line, and holds them.
    let mut held = Vec::with_capacity(IDLE_ATTACKERS);
    for n in 0..IDLE_ATTACKERS {
        let mut stream = TcpStream::connect_timeout(&server, GIVE_UP).unwrap_or_else(|error| {
            panic!(
                "idle connection {n} could not be opened: {error}\n{}",
                serve.logs()
            )
        });
        stream.write_all(HALF_A_REQUEST).unwrap();
        held.push(stream);
    }

    let client = client();
    let health = client
        .get(format!("{}/healthz", serve.base))
        .send()
        .await
        .unwrap_or_else(|error| {
            panic!(
                "/healthz did not answer while {IDLE_ATTACKERS} idle connections were held: {error}\n{}",
                serve.logs()
            )
        });
    assert_eq!(health.status(), 200);
    assert_eq!(health.text().await.unwrap(), "ok");

    let body = recorded_labeled();
    let delivery = client
        .post(format!("{}/webhooks/github", serve.base))
        .header("X-GitHub-Event", "issues")
        .header("X-GitHub-Delivery", "door-held-open-1")
        .header("Content-Type", "application/json")
        .header("X-Hub-Signature-256", github_signature(SECRET, &body))
        .body(body)
        .send()
        .await
        .unwrap_or_else(|error| {
            panic!(
                "a signed delivery was not answered while {IDLE_ATTACKERS} idle connections were held: {error}\n{}",
                serve.logs()
            )
        });
    assert_eq!(delivery.status(), 202, "{}", serve.logs());

    let store = Store::open_existing(&dir.path().join("work/autofix.db").display().to_string())
        .await
        .expect("the server's job store");
    let jobs = store.jobs_list(10).await.unwrap();
    assert_eq!(jobs.len(), 1, "{jobs:#?}");
    assert_eq!(jobs[0].key.repo.path.as_str(), "Codertocat/Hello-World");
    store.close().await;

    let text = metrics(&client, &serve).await;
    let limit = sample(&text, "autofix_http_connection_limit");
    assert_eq!(
        limit,
        SYSTEMD_DEFAULT_OPEN_FILES - 256,
        "256 open files kept for the rest"
    );
    assert!(
        sample(&text, "autofix_http_connections_open") <= limit,
        "{text}"
    );
    assert!(
        sample(
            &text,
            "autofix_http_connections_closed_total{reason=\"evicted\"}"
        ) > 0,
        "the door made room by closing idle connections: {text}"
    );
    assert_eq!(sample(&text, "autofix_http_accept_errors_total"), 0);
    drop(held);
    let logs = serve.logs();
    assert!(!logs.contains("Too many open files"), "{logs}");
    assert!(logs.contains("at its connection limit"), "{logs}");
}

#[tokio::test]
async fn a_connection_that_never_finishes_its_headers_is_closed_after_the_header_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let serve = autofix_serve(
        dir.path(),
        &[("AUTOFIX__SERVER__HEADER_READ_TIMEOUT_MS", "500".to_owned())],
        None,
    );
    let mut stream = TcpStream::connect(address(&serve)).unwrap();
    stream.write_all(HALF_A_REQUEST).unwrap();

    if let Err(what) = closed_by_server(&mut stream) {
        panic!("a header that never ends: {what}\n{}", serve.logs());
    }
    let client = client();
    let text = metrics(&client, &serve).await;
    assert_eq!(
        sample(
            &text,
            "autofix_http_connections_closed_total{reason=\"header_timeout\"}"
        ),
        1,
        "{text}"
    );
}

#[tokio::test]
async fn a_kept_alive_connection_that_sits_idle_after_its_answer_is_closed() {
    let dir = tempfile::tempdir().unwrap();
    let serve = autofix_serve(
        dir.path(),
        &[("AUTOFIX__SERVER__IDLE_TIMEOUT_MS", "500".to_owned())],
        None,
    );
    let mut stream = TcpStream::connect(address(&serve)).unwrap();
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: autofix\r\n\r\n")
        .unwrap();
    stream.set_read_timeout(Some(GIVE_UP)).unwrap();
    let mut answer = Vec::new();
    while !answer.ends_with(b"\r\n\r\nok") {
        let mut chunk = [0u8; 1024];
        let n = stream.read(&mut chunk).expect("the answer to /healthz");
        assert!(n > 0, "closed before the answer: {answer:?}");
        answer.extend_from_slice(&chunk[..n]);
    }
    assert!(answer.starts_with(b"HTTP/1.1 200"), "{answer:?}");
    assert!(
        !String::from_utf8_lossy(&answer)
            .to_ascii_lowercase()
            .contains("connection: close"),
        "the answer keeps the connection alive"
    );

    if let Err(what) = closed_by_server(&mut stream) {
        panic!("an idle kept-alive connection: {what}\n{}", serve.logs());
    }
    let client = client();
    let text = metrics(&client, &serve).await;
    assert_eq!(
        sample(
            &text,
            "autofix_http_connections_closed_total{reason=\"idle_timeout\"}"
        ),
        1,
        "{text}"
    );
}

/// A router whose `/slow` tells the story each request it holds, and holds it until the story
/// lets them all go.
fn slow_router(
    arrived: tokio::sync::mpsc::UnboundedSender<()>,
    release: Arc<tokio::sync::Semaphore>,
) -> axum::Router {
    axum::Router::new().route(
        "/slow",
        axum::routing::get(move || {
            let (arrived, release) = (arrived.clone(), release.clone());
            async move {
                let _ = arrived.send(());
                let _permit = release.acquire().await.expect("the story releases");
                "done"
            }
        }),
    )
}

fn client() -> reqwest::Client {
    reqwest::Client::builder().timeout(GIVE_UP).build().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_every_place_is_in_a_request_a_newcomer_is_answered_503_and_the_door_reopens() {
    let (arrived, mut arrivals) = tokio::sync::mpsc::unbounded_channel();
    let release = Arc::new(tokio::sync::Semaphore::new(0));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let metrics = Arc::new(Metrics::default());
    let settings = DoorSettings {
        max_connections: 2,
        ..DoorSettings::default()
    };
    tokio::spawn(autofix::server::serve_with(
        listener,
        slow_router(arrived, release.clone()),
        settings,
        metrics.clone(),
        std::future::pending(),
    ));
    // One client per place, so each request has a connection of its own.
    let in_flight: Vec<_> = (0..2)
        .map(|_| {
            let url = format!("{base}/slow");
            tokio::spawn(async move {
                let response = client().get(url).send().await.expect("a slow answer");
                (response.status(), response.text().await.unwrap())
            })
        })
        .collect();
    for _ in 0..2 {
        arrivals.recv().await.expect("a request reaches the router");
    }

    let refused = client()
        .get(format!("{base}/slow"))
        .send()
        .await
        .unwrap_or_else(|error| panic!("the newcomer got no answer: {error}"));
    assert_eq!(refused.status(), 503);
    let reason = refused.text().await.unwrap();
    assert!(reason.contains("connection limit"), "{reason}");

    release.add_permits(1000);
    for request in in_flight {
        let (status, body) = request.await.unwrap();
        assert_eq!((status.as_u16(), body.as_str()), (200, "done"));
    }
    let answer = client().get(format!("{base}/slow")).send().await.unwrap();
    assert_eq!(answer.status(), 200);
    assert!(
        metrics
            .render()
            .contains("autofix_http_connections_refused_total 1\n")
    );
}
