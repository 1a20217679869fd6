//! A real smart-HTTP git remote for tests: `git http-backend` behind axum with HTTP Basic token
//! checks and a log of every request, plus bare repositories to serve and inspect.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use axum::response::Response;
use base64::Engine;
use tokio::io::AsyncWriteExt;

use super::served::{Runtime, Served};

/// The user name and token the remote accepts.
#[derive(Debug, Clone)]
pub struct GitHttpAuth {
    pub username: String,
    pub token: String,
    /// A second token that may fetch but whose pushes get 403, as a forge answers a token
    /// without write access.
    pub read_only_token: Option<String>,
}

/// What the remote saw of one request.
#[derive(Debug, Clone)]
pub struct GitHttpRequest {
    pub method: Method,
    /// Path and query, e.g. `/octocat/hello.git/info/refs?service=git-upload-pack`.
    pub path: String,
    /// The user name of the `Authorization: Basic` header, if one was sent.
    pub basic_user: Option<String>,
    pub authenticated: bool,
    /// Answered 401 (no or wrong credentials) or 403 (a push with the read-only token).
    pub refused: bool,
    /// The token showed up anywhere but inside the Basic credentials: the path, another
    /// header or the body.
    pub token_outside_basic_auth: bool,
}

/// Every request the remote answered, in order.
#[derive(Debug, Clone, Default)]
pub struct RequestLog(Arc<Mutex<Vec<GitHttpRequest>>>);

impl RequestLog {
    pub fn all(&self) -> Vec<GitHttpRequest> {
        self.lock().clone()
    }

    pub fn clear(&self) {
        self.lock().clear();
    }

    fn push(&self, request: GitHttpRequest) {
        self.lock().push(request);
    }

    fn lock(&self) -> MutexGuard<'_, Vec<GitHttpRequest>> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    None,
    Read,
    Write,
}

impl GitHttpAuth {
    fn access(&self, user: &str, token: &str) -> Access {
        if user != self.username {
            Access::None
        } else if token == self.token {
            Access::Write
        } else if self.read_only_token.as_deref() == Some(token) {
            Access::Read
        } else {
            Access::None
        }
    }

    fn tokens(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.token.as_str()).chain(self.read_only_token.as_deref())
    }
}

#[derive(Clone)]
struct Backend {
    project_root: PathBuf,
    auth: GitHttpAuth,
    log: RequestLog,
}

pub const REALM: &str = "autofix test remote";

/// Smart HTTP for every bare repository under `project_root`, at `/<path>.git/...`.
pub fn git_http_router(project_root: PathBuf, auth: GitHttpAuth) -> axum::Router {
    git_http_router_recording(project_root, auth, RequestLog::default())
}

/// The same router, recording every request into `log`.
pub fn git_http_router_recording(
    project_root: PathBuf,
    auth: GitHttpAuth,
    log: RequestLog,
) -> axum::Router {
    axum::Router::new().fallback(serve_git).with_state(Backend {
        project_root,
        auth,
        log,
    })
}

async fn serve_git(State(backend): State<Backend>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, usize::MAX)
        .await
        .unwrap_or_default();
    let path_and_query = parts
        .uri
        .path_and_query()
        .map(|pq| pq.as_str().to_string())
        .unwrap_or_default();
    let basic = basic_credentials(&parts.headers);
    let access = basic.as_ref().map_or(Access::None, |(user, token)| {
        backend.auth.access(user, token)
    });
    let forbidden = access == Access::Read && path_and_query.contains("receive-pack");
    let record = GitHttpRequest {
        method: parts.method.clone(),
        path: path_and_query,
        basic_user: basic.as_ref().map(|(user, _)| user.clone()),
        authenticated: access != Access::None,
        refused: access == Access::None || forbidden,
        token_outside_basic_auth: backend.auth.tokens().any(|token| {
            token_outside_basic_auth(token, &parts.uri.to_string(), &parts.headers, &body)
        }),
    };
    backend.log.push(record);
    if access == Access::None {
        return challenge();
    }
    if forbidden {
        return Response::builder()
            .status(StatusCode::FORBIDDEN)
            .body(Body::from("this token may not push\n"))
            .unwrap();
    }
    run_http_backend(&backend, &parts.method, &parts.uri, &parts.headers, body).await
}

/// libgit2 sends credentials only after this challenge, as git does.
fn challenge() -> Response {
    Response::builder()
        .status(StatusCode::UNAUTHORIZED)
        .header("WWW-Authenticate", format!("Basic realm=\"{REALM}\""))
        .body(Body::from("authentication required\n"))
        .unwrap()
}

fn basic_credentials(headers: &HeaderMap) -> Option<(String, String)> {
    let value = headers.get("authorization")?.to_str().ok()?;
    let encoded = value.strip_prefix("Basic ")?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let decoded = String::from_utf8(decoded).ok()?;
    let (user, token) = decoded.split_once(':')?;
    Some((user.to_string(), token.to_string()))
}

fn token_outside_basic_auth(token: &str, uri: &str, headers: &HeaderMap, body: &[u8]) -> bool {
    let in_headers = headers
        .iter()
        .filter(|(name, _)| name.as_str() != "authorization")
        .any(|(_, value)| contains(value.as_bytes(), token.as_bytes()));
    uri.contains(token) || in_headers || contains(body, token.as_bytes())
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty()
        && haystack
            .windows(needle.len())
            .any(|window| window == needle)
}

/// Runs `git http-backend` as a CGI script for one request and turns its output into a response.
async fn run_http_backend(
    backend: &Backend,
    method: &Method,
    uri: &axum::http::Uri,
    headers: &HeaderMap,
    body: Bytes,
) -> Response {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_string()
    };
    let mut child = tokio::process::Command::new(http_backend_path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("GIT_PROJECT_ROOT", &backend.project_root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_COUNT", "1")
        .env("GIT_CONFIG_KEY_0", "http.receivepack")
        .env("GIT_CONFIG_VALUE_0", "true")
        .env("GATEWAY_INTERFACE", "CGI/1.1")
        .env("SERVER_PROTOCOL", "HTTP/1.1")
        .env("REQUEST_METHOD", method.as_str())
        .env("PATH_INFO", uri.path())
        .env("QUERY_STRING", uri.query().unwrap_or_default())
        .env("CONTENT_TYPE", header("content-type"))
        .env("CONTENT_LENGTH", body.len().to_string())
        .env("HTTP_CONTENT_ENCODING", header("content-encoding"))
        .env("GIT_PROTOCOL", header("git-protocol"))
        .env("REMOTE_USER", &backend.auth.username)
        .env("REMOTE_ADDR", "127.0.0.1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start git http-backend");
    let mut stdin = child.stdin.take().expect("piped stdin");
    let feed = async move {
        let _ = stdin.write_all(&body).await;
        drop(stdin);
    };
    let (_, output) = tokio::join!(feed, child.wait_with_output());
    let output = output.expect("git http-backend ran");
    if !output.stderr.is_empty() {
        eprintln!(
            "git http-backend: {}",
            String::from_utf8_lossy(&output.stderr).trim_end()
        );
    }
    cgi_response(&output.stdout)
}

/// Splits CGI output into its header block (`Status:` and the rest) and body.
fn cgi_response(output: &[u8]) -> Response {
    let (head, body) = match find(output, b"\r\n\r\n") {
        Some(at) => (&output[..at], &output[at + 4..]),
        None => match find(output, b"\n\n") {
            Some(at) => (&output[..at], &output[at + 2..]),
            None => (output, &[][..]),
        },
    };
    let mut response = Response::builder().status(StatusCode::OK);
    for line in String::from_utf8_lossy(head).lines() {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("status") {
            let code = value.split_whitespace().next().unwrap_or("500");
            response = response.status(code.parse::<u16>().unwrap_or(500));
        } else if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.trim().as_bytes()),
            HeaderValue::from_str(value),
        ) {
            response = response.header(name, value);
        }
    }
    response.body(Body::from(body.to_vec())).unwrap()
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

/// `$(git --exec-path)/git-http-backend`.
fn http_backend_path() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let output = Command::new("git")
            .arg("--exec-path")
            .output()
            .expect("run git --exec-path");
        let exec_path = String::from_utf8(output.stdout).expect("a UTF-8 exec path");
        PathBuf::from(exec_path.trim()).join("git-http-backend")
    })
}

/// Copies the repository at the first path into a new one at the second (`owner/name` paths).
pub type Forker = Arc<dyn Fn(&str, &str) + Send + Sync>;

/// The remote served over HTTP on 127.0.0.1 from its own thread, with its repositories in a
/// temp folder.
pub struct GitHttpServer {
    root: tempfile::TempDir,
    log: RequestLog,
    server: Served,
}

impl GitHttpServer {
    pub fn start(auth: GitHttpAuth) -> GitHttpServer {
        let root = tempfile::tempdir().expect("a folder for the remotes");
        let log = RequestLog::default();
        let app = git_http_router_recording(root.path().to_path_buf(), auth, log.clone());
        let server = Served::start("git-http", Runtime::CurrentThread, |_| app);
        GitHttpServer { root, log, server }
    }

    /// `http://127.0.0.1:PORT/<path>.git`.
    pub fn url(&self, path: &str) -> String {
        format!("{}/{path}.git", self.server.url())
    }

    pub fn requests(&self) -> Vec<GitHttpRequest> {
        self.log.all()
    }

    pub fn clear_requests(&self) {
        self.log.clear();
    }

    /// What a fake forge calls to copy the repository at `base` into a new fork at `fork` (both
    /// `owner/name` paths), as the forge does in the background: a bare clone of the base's
    /// default branch, served beside it with the same credentials.
    pub fn forker(&self) -> Forker {
        let root = self.root.path().to_path_buf();
        Arc::new(move |base: &str, fork: &str| {
            let source = root.join(format!("{base}.git"));
            let target = root.join(format!("{fork}.git"));
            std::fs::create_dir_all(target.parent().expect("a fork has an owner"))
                .expect("create the fork owner's folder");
            run_git(
                &root,
                &[
                    "clone",
                    "-q",
                    "--bare",
                    "--single-branch",
                    source.to_str().expect("a UTF-8 path"),
                    target.to_str().expect("a UTF-8 path"),
                ],
            );
        })
    }

    /// The bare repository served at `<path>.git` (a fork made by [`GitHttpServer::forker`]).
    pub fn bare(&self, path: &str) -> BareRepo {
        let path = self.root.path().join(format!("{path}.git"));
        assert!(path.is_dir(), "no repository at {}", path.display());
        BareRepo { path }
    }

    /// A bare repository served at `<path>.git`, whose `default_branch` holds one commit of
    /// `files`.
    pub fn create_repo(
        &self,
        path: &str,
        default_branch: &str,
        files: &[(&str, &str)],
    ) -> BareRepo {
        BareRepo::create(
            &self.root.path().join(format!("{path}.git")),
            default_branch,
            files,
        )
    }
}

impl Drop for GitHttpServer {
    /// The server stops before its remotes' folder goes.
    fn drop(&mut self) {
        self.server.stop();
    }
}

/// A bare repository on disk, changed and read with the git CLI as an upstream person would.
pub struct BareRepo {
    path: PathBuf,
}

impl BareRepo {
    /// A bare repository whose first commit holds `files`; an `.autofix.toml` among them that
    /// says nothing of `[reproduce]` gets [`super::repo::REPRODUCE_OFF`], as in [`Repo::with`].
    ///
    /// [`Repo::with`]: super::repo::Repo::with
    pub fn create(path: &Path, default_branch: &str, files: &[(&str, &str)]) -> BareRepo {
        std::fs::create_dir_all(path).expect("create the bare repository folder");
        let repo = BareRepo {
            path: path.to_path_buf(),
        };
        repo.git(&["init", "-q", "--bare", "-b", default_branch]);
        let configs: Vec<(String, String)> = files
            .iter()
            .filter(|(name, _)| name.ends_with("autofix.toml"))
            .map(|(name, text)| (name.to_string(), super::repo::without_reproduction(text)))
            .collect();
        let files: Vec<(&str, &str)> = files
            .iter()
            .map(
                |(name, text)| match configs.iter().find(|(config, _)| config == name) {
                    Some((_, text)) => (*name, text.as_str()),
                    None => (*name, *text),
                },
            )
            .collect();
        repo.commit(default_branch, &files, "initial");
        repo
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Commits `files` on top of `branch` (creating it from the default branch when missing),
    /// as someone pushing upstream would; returns the new tip.
    pub fn commit(&self, branch: &str, files: &[(&str, &str)], message: &str) -> String {
        let work = tempfile::tempdir().expect("a scratch work tree");
        let git = |args: &[&str]| run_git(work.path(), args);
        git(&["init", "-q", "-b", branch]);
        git(&["config", "user.name", "Upstream Person"]);
        git(&["config", "user.email", "upstream@example.com"]);
        let source = self.path.to_str().expect("a UTF-8 path");
        git(&[
            "fetch",
            "-q",
            source,
            "+refs/heads/*:refs/remotes/upstream/*",
        ]);
        let base = if self.tip(branch).is_some() {
            Some(format!("upstream/{branch}"))
        } else {
            self.default_branch()
                .map(|default| format!("upstream/{default}"))
        };
        if let Some(base) =
            base.filter(|base| run_git_status(work.path(), &["rev-parse", "--verify", "-q", base]))
        {
            git(&["reset", "-q", "--hard", &base]);
        }
        for (path, content) in files {
            let full = work.path().join(path);
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(full, content).unwrap();
        }
        git(&["add", "-A"]);
        git(&["commit", "-q", "--allow-empty", "-m", message]);
        git(&["push", "-q", source, &format!("HEAD:refs/heads/{branch}")]);
        self.tip(branch).expect("the branch was just pushed")
    }

    /// The tip of `branch`, or `None` when it does not exist.
    pub fn tip(&self, branch: &str) -> Option<String> {
        let output = git_command(&self.path)
            .args([
                "rev-parse",
                "--verify",
                "-q",
                &format!("refs/heads/{branch}"),
            ])
            .output()
            .expect("run git rev-parse");
        output
            .status
            .success()
            .then(|| String::from_utf8_lossy(&output.stdout).trim().to_string())
    }

    /// The files the tip of `branch` holds, sorted.
    pub fn files_at(&self, branch: &str) -> Vec<String> {
        self.git(&[
            "ls-tree",
            "-r",
            "--name-only",
            &format!("refs/heads/{branch}"),
        ])
        .lines()
        .map(str::to_string)
        .collect()
    }

    /// Every branch, sorted.
    pub fn branches(&self) -> Vec<String> {
        self.git(&["for-each-ref", "--format=%(refname:short)", "refs/heads/"])
            .lines()
            .map(str::to_string)
            .collect()
    }

    pub fn default_branch(&self) -> Option<String> {
        let head = self.git(&["symbolic-ref", "HEAD"]);
        head.trim().strip_prefix("refs/heads/").map(str::to_string)
    }

    /// Installs an executable server-side hook, e.g. a `pre-receive` that declines pushes.
    pub fn install_hook(&self, name: &str, script: &str) {
        use std::os::unix::fs::PermissionsExt;
        let hook = self.path.join("hooks").join(name);
        std::fs::create_dir_all(hook.parent().unwrap()).unwrap();
        std::fs::write(&hook, script).unwrap();
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    pub fn delete_branch(&self, branch: &str) {
        self.git(&["update-ref", "-d", &format!("refs/heads/{branch}")]);
    }

    /// The content of `path` at the tip of `branch`.
    pub fn read(&self, branch: &str, path: &str) -> String {
        self.git(&["show", &format!("refs/heads/{branch}:{path}")])
    }

    pub fn git(&self, args: &[&str]) -> String {
        run_git(&self.path, args)
    }
}

fn git_command(dir: &Path) -> Command {
    let mut command = Command::new("git");
    command
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1");
    command
}

fn run_git(dir: &Path, args: &[&str]) -> String {
    let output = git_command(dir).args(args).output().expect("run git");
    assert!(
        output.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn run_git_status(dir: &Path, args: &[&str]) -> bool {
    git_command(dir)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}
