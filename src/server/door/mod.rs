//! The webhook server's door: its own accept loop over hyper. A connection is kept only while it
//! is useful (header-read and idle deadlines), the door holds a capped number of them below the
//! open-files limit (the longest-waiting idle one gives way; 503 when every place is in a
//! request), and a failing accept backs off instead of spinning.

mod slots;

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::ConnectInfo;
use axum::http::{Request, StatusCode, header};
use axum::response::{IntoResponse, Response};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, watch};
use tokio::task::JoinSet;

use super::Metrics;
pub use slots::Ending;
use slots::{Admission, Slots, Ticket};

/// How the door treats connections: the `[server]` keys of the same names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DoorSettings {
    /// Longest wait, from the accept, for the first request's headers to arrive in full.
    pub header_read_timeout: Duration,
    /// Longest wait, from an answer, for the next request's headers on a kept-alive connection.
    pub idle_timeout: Duration,
    /// Most connections held at once, before the open-files limit lowers it.
    pub max_connections: usize,
}

impl Default for DoorSettings {
    /// The defaults of `config/default.toml`: 10 s, 60 s, 1024 connections.
    fn default() -> Self {
        DoorSettings {
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            max_connections: 1024,
        }
    }
}

/// The first wait after a failed accept; it doubles while accepts keep failing.
const FIRST_BACKOFF: Duration = Duration::from_millis(10);
const LONGEST_BACKOFF: Duration = Duration::from_secs(1);

/// Serves `router` on `listener` with `settings` until `shutdown` completes, then lets the
/// requests in flight finish; the door's counters go to `metrics`.
pub async fn serve_with(
    listener: TcpListener,
    router: Router,
    settings: DoorSettings,
    metrics: Arc<Metrics>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let soft_limit = open_files_soft_limit();
    let cap = slots::connection_cap(settings.max_connections, soft_limit);
    metrics.connection_limit(cap);
    tracing::info!(
        connections = cap,
        max_connections = settings.max_connections,
        open_files_limit = soft_limit,
        open_files_kept_for_the_rest = slots::FD_RESERVE,
        "webhook server: the most connections held at once"
    );
    let door = Arc::new(Door {
        slots: Mutex::new(Slots::new(
            cap,
            settings.header_read_timeout,
            settings.idle_timeout,
        )),
        room: Notify::new(),
        metrics,
        header_read_timeout: settings.header_read_timeout,
        fullness: Mutex::new(Fullness::default()),
    });
    let (stop, stopping) = watch::channel(false);
    let mut connections = JoinSet::new();
    let mut failures = AcceptFailures::default();
    tokio::pin!(shutdown);
    loop {
        let has_room = door.slots().has_room();
        let accepted = tokio::select! {
            biased;
            () = &mut shutdown => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
            // At the accept gate new connections wait in the kernel's backlog, not in our files.
            () = door.room.notified(), if !has_room => continue,
            accepted = listener.accept(), if has_room => accepted,
        };
        match accepted {
            Ok((stream, peer)) => {
                failures.recovered();
                door.admit(stream, peer, &router, &mut connections, stopping.clone());
            }
            // The peer gave up before we took the connection: nothing of ours is wrong.
            Err(error) if is_peer_error(&error) => {}
            Err(error) => {
                door.metrics.accept_failed();
                let pause = failures.failed(&error);
                tokio::select! {
                    () = &mut shutdown => break,
                    () = tokio::time::sleep(pause) => {}
                }
            }
        }
    }
    // Closing the listener refuses new connections at once; those held finish their request.
    drop(listener);
    let _ = stop.send(true);
    while connections.join_next().await.is_some() {}
    Ok(())
}

/// This process's soft limit of open files (what `accept` fails beyond).
fn open_files_soft_limit() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the rlimit it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return 1024;
    }
    limit.rlim_cur
}

fn is_peer_error(error: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    matches!(
        error.kind(),
        ErrorKind::ConnectionAborted | ErrorKind::ConnectionReset | ErrorKind::ConnectionRefused
    )
}

/// Failed accepts in a row (too many open files, no buffer space, …): one log line per burst,
/// and a pause that grows while they last.
#[derive(Debug, Default)]
struct AcceptFailures {
    in_a_row: u64,
}

impl AcceptFailures {
    fn failed(&mut self, error: &std::io::Error) -> Duration {
        if self.in_a_row == 0 {
            tracing::error!(
                %error,
                "accepting a connection failed; retrying with a growing pause (logged once until an accept succeeds)"
            );
        }
        self.in_a_row += 1;
        let doublings = u32::try_from(self.in_a_row - 1).unwrap_or(u32::MAX).min(8);
        (FIRST_BACKOFF * 2u32.pow(doublings)).min(LONGEST_BACKOFF)
    }

    fn recovered(&mut self) {
        if self.in_a_row > 0 {
            tracing::info!(
                failed = self.in_a_row,
                "accepting connections again after failed accepts"
            );
            self.in_a_row = 0;
        }
    }
}

/// How often at most the door says it is full: an attacker decides how often it fills.
const FULL_REPORT_EVERY: Duration = Duration::from_secs(60);

/// Connections closed or answered 503 to make room since the door last said it was full.
#[derive(Debug, Default)]
struct Fullness {
    reported: Option<Instant>,
    evicted: u64,
    refused: u64,
}

struct Door {
    slots: Mutex<Slots>,
    /// Told whenever a place frees, for the accept gate.
    room: Notify,
    metrics: Arc<Metrics>,
    header_read_timeout: Duration,
    fullness: Mutex<Fullness>,
}

impl Door {
    fn slots(&self) -> MutexGuard<'_, Slots> {
        // The book stays consistent even if a holder panicked: every method leaves it whole.
        self.slots
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Serves, or refuses with a 503, a connection just accepted, on a task of its own.
    fn admit(
        self: &Arc<Self>,
        stream: TcpStream,
        peer: SocketAddr,
        router: &Router,
        connections: &mut JoinSet<()>,
        stopping: watch::Receiver<bool>,
    ) {
        self.metrics.connection_opened();
        let admission = self.slots().admit(Instant::now());
        match admission {
            Admission::Serve { ticket, evicted } => {
                self.note_fullness(evicted, false);
                let door = Arc::clone(self);
                let router = router.clone();
                connections.spawn(async move {
                    door.serve_connection(ticket, stream, peer, router, stopping)
                        .await;
                });
            }
            Admission::Refuse => {
                self.note_fullness(false, true);
                self.metrics.connection_refused();
                let door = Arc::clone(self);
                connections.spawn(async move { door.refuse(stream).await });
            }
        }
    }

    /// One warning a minute at most while connections are closed or refused to make room.
    fn note_fullness(&self, evicted: bool, refused: bool) {
        if !evicted && !refused {
            return;
        }
        let mut fullness = self
            .fullness
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        fullness.evicted += u64::from(evicted);
        fullness.refused += u64::from(refused);
        let now = Instant::now();
        if fullness
            .reported
            .is_some_and(|at| now.duration_since(at) < FULL_REPORT_EVERY)
        {
            return;
        }
        tracing::warn!(
            evicted = fullness.evicted,
            refused = fullness.refused,
            "webhook server at its connection limit: closing the connections that waited longest \
             without a request, answering 503 when every one is in a request (said at most once a minute)"
        );
        *fullness = Fullness {
            reported: Some(now),
            evicted: 0,
            refused: 0,
        };
    }

    /// Drives one connection until it ends, its deadline passes, it must give way, or the
    /// server stops (then its request in flight is finished first).
    async fn serve_connection(
        self: Arc<Self>,
        ticket: Ticket,
        stream: TcpStream,
        peer: SocketAddr,
        router: Router,
        mut stopping: watch::Receiver<bool>,
    ) {
        let _place = Place {
            door: Arc::clone(&self),
            id: Some(ticket.id),
        };
        let service = Tracked {
            router: TowerToHyperService::new(router),
            peer,
            door: Arc::clone(&self),
            id: ticket.id,
        };
        // hyper's own header timer restarts at every wait for a request head, idle gaps between
        // kept-alive requests included, so it cannot tell the two deadlines apart: the door
        // keeps both itself.
        let mut connection = Box::pin(
            http1::Builder::new()
                .header_read_timeout(None)
                .serve_connection(TokioIo::new(stream), service),
        );
        let mut shutting_down = false;
        let ending = loop {
            let deadline = self.slots().deadline(ticket.id, Instant::now());
            let sleep = async {
                match deadline {
                    Some(at) => tokio::time::sleep_until(at.into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                served = connection.as_mut() => {
                    if let Err(error) = served {
                        tracing::debug!(%error, %peer, "connection ended with an error");
                    }
                    break None;
                }
                () = ticket.wake.notified() => {}
                () = sleep => {}
                _ = stopping.changed(), if !shutting_down => {
                    shutting_down = true;
                    connection.as_mut().graceful_shutdown();
                }
            }
            if let Some(ending) = self.slots().ending(ticket.id, Instant::now()) {
                break Some(ending);
            }
        };
        if let Some(ending) = ending {
            tracing::debug!(?ending, %peer, "connection closed by the door");
            self.metrics.connection_ended(ending);
        }
        // The socket closes here, before `_place` gives its place back.
        drop(connection);
    }

    /// Answers 503 to a connection for which there is no place, reading its request first (so
    /// the answer is not lost to a reset), within the header-read timeout.
    async fn refuse(self: Arc<Self>, stream: TcpStream) {
        let _place = Place {
            door: Arc::clone(&self),
            id: None,
        };
        let busy = hyper::service::service_fn(|_request: Request<Incoming>| async {
            let answer = (
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::RETRY_AFTER, "1")],
                "autofix is at its connection limit with every connection in a request; retry later\n",
            );
            Ok::<_, Infallible>(answer.into_response())
        });
        let connection = http1::Builder::new()
            .keep_alive(false)
            .header_read_timeout(None)
            .serve_connection(TokioIo::new(stream), busy);
        let _ = tokio::time::timeout(self.header_read_timeout, connection).await;
    }
}

/// A socket the door holds (a connection served, or `None`: one being refused): its place is
/// given back when it is dropped, even by a panic in its task.
struct Place {
    door: Arc<Door>,
    id: Option<u64>,
}

impl Drop for Place {
    fn drop(&mut self) {
        match self.id {
            Some(id) => self.door.slots().closed(id),
            None => self.door.slots().refusal_finished(),
        }
        self.door.metrics.connection_closed();
        self.door.room.notify_one();
    }
}

/// The router as hyper calls it, with the peer's address for `ConnectInfo` (the pages tell
/// loopback by it) and each request's start and end written in the door's book.
#[derive(Clone)]
struct Tracked {
    router: TowerToHyperService<Router>,
    peer: SocketAddr,
    door: Arc<Door>,
    id: u64,
}

impl hyper::service::Service<Request<Incoming>> for Tracked {
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn call(&self, mut request: Request<Incoming>) -> Self::Future {
        request.extensions_mut().insert(ConnectInfo(self.peer));
        self.door.slots().request_started(self.id);
        let in_request = InRequest {
            door: Arc::clone(&self.door),
            id: self.id,
        };
        let answer = hyper::service::Service::call(&self.router, request);
        Box::pin(async move {
            let response = answer.await;
            drop(in_request);
            response
        })
    }
}

/// Ends a request in the door's book when its answer is ready, or when it is dropped unanswered.
struct InRequest {
    door: Arc<Door>,
    id: u64,
}

impl Drop for InRequest {
    fn drop(&mut self) {
        self.door.slots().request_finished(self.id, Instant::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_accepts_wait_longer_each_time_up_to_a_second_and_start_over_after_a_success() {
        let emfile = std::io::Error::from_raw_os_error(libc::EMFILE);
        let mut failures = AcceptFailures::default();
        let pauses: Vec<u128> = (0..10)
            .map(|_| failures.failed(&emfile).as_millis())
            .collect();
        assert_eq!(pauses, [10, 20, 40, 80, 160, 320, 640, 1000, 1000, 1000]);
        failures.recovered();
        assert_eq!(failures.failed(&emfile), FIRST_BACKOFF);
    }
}
