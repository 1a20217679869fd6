//! A real, throwaway PostgreSQL server for tests: one per test binary (`initdb` into a temp dir, then
//! `pg_ctl start` on a free loopback port), a fresh database per test, stopped when the process exits.
//!
//! ```ignore
//! let url = support::postgres::fresh_database().await; // postgres://postgres@127.0.0.1:PORT/test_3
//! ```

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

use sqlx::Connection;

/// The unprivileged account the server runs as when the tests run as root (PostgreSQL refuses root).
const SERVER_USER: &str = "postgres";

struct Server {
    root: PathBuf,
    port: u16,
    bin: PathBuf,
}

static SERVER: OnceLock<Server> = OnceLock::new();
static NEXT_DATABASE: AtomicU32 = AtomicU32::new(0);

/// Creates an empty database on the shared server and returns its URL.
pub async fn fresh_database() -> String {
    let server = SERVER.get_or_init(Server::start);
    let name = format!("test_{}", NEXT_DATABASE.fetch_add(1, Ordering::SeqCst));
    let mut admin = sqlx::PgConnection::connect(&server.url("postgres"))
        .await
        .expect("connect to the test PostgreSQL server");
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&mut admin)
        .await
        .expect("create a test database");
    admin.close().await.expect("close the admin connection");
    server.url(&name)
}

impl Server {
    fn start() -> Server {
        let bin = server_bin_dir();
        let root = tempfile::Builder::new()
            .prefix("autofix-pg-")
            .tempdir()
            .expect("create the PostgreSQL temp dir")
            .keep();
        let port = free_port();
        let server = Server { root, port, bin };
        if running_as_root() {
            chown_to_server_user(&server.root);
        }
        server.run(
            "initdb",
            &[
                "-D",
                &server.data_dir(),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
            ],
        );
        let options = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off",
            server.root.display()
        );
        let log = server.root.join("server.log").display().to_string();
        server.run(
            "pg_ctl",
            &[
                "start",
                "-w",
                "-D",
                &server.data_dir(),
                "-l",
                &log,
                "-o",
                &options,
            ],
        );
        // SAFETY: registering a plain `extern "C"` function with no captured state.
        unsafe { libc::atexit(stop_server_at_exit) };
        server
    }

    fn data_dir(&self) -> String {
        self.root.join("data").display().to_string()
    }

    fn url(&self, database: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{database}", self.port)
    }

    fn run(&self, tool: &str, args: &[&str]) {
        let program = self.bin.join(tool);
        let mut command = if running_as_root() {
            let mut command = Command::new("runuser");
            command.args(["-u", SERVER_USER, "--"]).arg(&program);
            command
        } else {
            Command::new(&program)
        };
        let output = command
            .args(args)
            .current_dir(&self.root)
            .output()
            .unwrap_or_else(|error| panic!("run {}: {error}", program.display()));
        assert!(
            output.status.success(),
            "{tool} {args:?} failed: {}\n{}\nserver log: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr),
            std::fs::read_to_string(self.root.join("server.log")).unwrap_or_default()
        );
    }
}

extern "C" fn stop_server_at_exit() {
    if let Some(server) = SERVER.get() {
        server.run(
            "pg_ctl",
            &["stop", "-m", "immediate", "-D", &server.data_dir()],
        );
        let _ = std::fs::remove_dir_all(&server.root);
    }
}

/// PostgreSQL's server tools: `initdb` on PATH, else the newest `/usr/lib/postgresql/*/bin`.
fn server_bin_dir() -> PathBuf {
    if let Some(on_path) = std::env::var_os("PATH")
        .and_then(|path| std::env::split_paths(&path).find(|dir| dir.join("initdb").is_file()))
    {
        // A symlink such as /usr/local/bin/initdb points at the real bin dir holding pg_ctl too.
        let initdb = std::fs::canonicalize(on_path.join("initdb")).expect("resolve initdb");
        return initdb
            .parent()
            .expect("initdb has a parent dir")
            .to_path_buf();
    }
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path().join("bin"))
        .filter(|bin| bin.join("initdb").is_file())
        .collect();
    versions.sort_by_key(|bin| {
        bin.parent()
            .and_then(Path::file_name)
            .and_then(|version| version.to_str()?.parse::<u32>().ok())
    });
    versions
        .pop()
        .expect("PostgreSQL's server binaries (initdb, pg_ctl) are not installed: run .ci/run or apt-get install postgresql")
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("find a free loopback port")
        .port()
}

fn running_as_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

fn chown_to_server_user(dir: &Path) {
    let status = Command::new("chown")
        .args(["-R", &format!("{SERVER_USER}:")])
        .arg(dir)
        .status()
        .expect("run chown");
    assert!(
        status.success(),
        "chown {} to {SERVER_USER} failed",
        dir.display()
    );
}
