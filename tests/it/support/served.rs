//! The scaffold every fake server of the stories stands on: an axum app on a free loopback port,
//! served on a thread and runtime of its own, and stopped and joined when its owner drops it.

use std::future::IntoFuture;
use std::net::SocketAddr;
use std::thread::JoinHandle;

use tokio::sync::oneshot;

/// How a fake's runtime is built and left.
#[derive(Debug, Clone, Copy)]
pub enum Runtime {
    /// One thread; stopping waits for what it still runs.
    CurrentThread,
    /// Two worker threads, for fakes that hold requests back while answering others; stopping
    /// cancels what is held back instead of waiting for it.
    TwoWorkers,
}

/// A running app; [`Served::stop`] (or dropping it) ends it.
pub struct Served {
    address: SocketAddr,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Served {
    /// Binds `127.0.0.1` at a free port and serves the app `app` builds for that address (a
    /// fake's state may need its own URL) on a thread named `name`.
    pub fn start(
        name: &str,
        runtime: Runtime,
        app: impl FnOnce(SocketAddr) -> axum::Router,
    ) -> Served {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap_or_else(|error| panic!("bind the {name} server: {error}"));
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let address = listener.local_addr().expect("the listener has an address");
        let app = app(address);
        let (shutdown, stopped) = oneshot::channel::<()>();
        let thread_name = name.to_owned();
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || serve(&thread_name, runtime, listener, app, stopped))
            .unwrap_or_else(|error| panic!("spawn the {name} thread: {error}"));
        Served {
            address,
            shutdown: Some(shutdown),
            thread: Some(thread),
        }
    }

    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Stops the server and waits for its thread; later calls do nothing.
    pub fn stop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.stop();
    }
}

fn serve(
    name: &str,
    kind: Runtime,
    listener: std::net::TcpListener,
    app: axum::Router,
    stopped: oneshot::Receiver<()>,
) {
    let runtime = match kind {
        Runtime::CurrentThread => tokio::runtime::Builder::new_current_thread(),
        Runtime::TwoWorkers => {
            let mut builder = tokio::runtime::Builder::new_multi_thread();
            builder.worker_threads(2);
            builder
        }
    }
    .enable_all()
    .build()
    .unwrap_or_else(|error| panic!("build the {name} runtime: {error}"));
    runtime.block_on(async move {
        let listener =
            tokio::net::TcpListener::from_std(listener).expect("hand the listener to tokio");
        tokio::select! {
            result = axum::serve(listener, app).into_future() => {
                result.unwrap_or_else(|error| panic!("the {name} server failed: {error}"));
            }
            _ = stopped => {}
        }
    });
    if let Runtime::TwoWorkers = kind {
        runtime.shutdown_background();
    }
}
