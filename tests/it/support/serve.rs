//! A real `autofix serve` process for the stories that need the binary: started with a clean
//! environment and the variables a story gives, on a free port, its log kept beside the test.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct ServeProcess {
    child: Child,
    pub base: String,
    pub log: PathBuf,
}

impl ServeProcess {
    /// Starts `autofix serve` with only `PATH`, `HOME=dir` and `vars` in its environment (and
    /// `AUTOFIX__SERVER__LISTEN` on a free port unless `vars` names one); waits until `/healthz`
    /// answers.
    pub fn start(dir: &Path, name: &str, vars: &[(&str, String)]) -> ServeProcess {
        Self::start_with(dir, name, vars, |_| {})
    }

    /// As [`ServeProcess::start`], with `prepare` applied to the command first (a story's
    /// resource limits, …).
    pub fn start_with(
        dir: &Path,
        name: &str,
        vars: &[(&str, String)],
        prepare: impl Fn(&mut Command),
    ) -> ServeProcess {
        for attempt in 0..5 {
            let log = dir.join(format!("{name}-{attempt}.log"));
            if let Some(serve) = Self::try_start(dir, &log, vars, &prepare) {
                return serve;
            }
        }
        panic!(
            "autofix serve did not start: {}",
            std::fs::read_to_string(dir.join(format!("{name}-4.log"))).unwrap_or_default()
        );
    }

    fn try_start(
        dir: &Path,
        log: &Path,
        vars: &[(&str, String)],
        prepare: &impl Fn(&mut Command),
    ) -> Option<ServeProcess> {
        // A story that names its address (to give it as `server.public_url` too) keeps it.
        let port = vars
            .iter()
            .find(|(name, _)| *name == "AUTOFIX__SERVER__LISTEN")
            .and_then(|(_, listen)| listen.rsplit(':').next()?.parse().ok())
            .unwrap_or_else(free_port);
        let mut command = Command::new(env!("CARGO_BIN_EXE_autofix"));
        command
            .arg("serve")
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", dir)
            .env("AUTOFIX__SERVER__LISTEN", format!("127.0.0.1:{port}"));
        for (name, value) in vars {
            command.env(name, value);
        }
        prepare(&mut command);
        let child = command
            .stdout(std::fs::File::create(log).expect("a log file"))
            .stderr(Stdio::inherit())
            .spawn()
            .expect("autofix serve starts");
        let mut serve = ServeProcess {
            child,
            base: format!("http://127.0.0.1:{port}"),
            log: log.to_path_buf(),
        };
        serve.healthy().then_some(serve)
    }

    /// Whether this process (still running) answers `GET /healthz` within 20 s.
    fn healthy(&mut self) -> bool {
        use std::io::{Read, Write};
        let deadline = Instant::now() + Duration::from_secs(20);
        let address = self.base.trim_start_matches("http://").to_owned();
        while Instant::now() < deadline {
            if self.child.try_wait().ok().flatten().is_some() {
                return false;
            }
            if let Ok(mut stream) = std::net::TcpStream::connect(&address) {
                let _ = stream
                    .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
                let mut answer = String::new();
                let _ = stream.read_to_string(&mut answer);
                if answer.starts_with("HTTP/1.1 200") {
                    return true;
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    /// What the process logged so far.
    pub fn logs(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL: no shutdown handler, no flush, exactly what a crash or an OOM kill does.
    pub fn kill(mut self) {
        self.child.kill().expect("SIGKILL the server");
        self.child.wait().expect("reap the server");
    }

    /// SIGTERM, then how long the process took to exit (at most `limit`, then SIGKILL).
    pub fn terminate(mut self, limit: Duration) -> Duration {
        // SAFETY: kill(2) with a child's pid and SIGTERM has no memory effects.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let started = Instant::now();
        while started.elapsed() < limit {
            if self.child.try_wait().ok().flatten().is_some() {
                return started.elapsed();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        started.elapsed()
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("a free port")
        .local_addr()
        .expect("an address")
        .port()
}
