//! A stateful fake GitHub for tests: repositories, collaborators, issues, comments, labels and pull
//! requests behind the real REST shapes under `/api/v3`, with a token, a GitHub App and fault switches.
//!
//! ```ignore
//! let github = FakeGitHub::start(axum::Router::new());
//! github.set_token("ghp_test", "autofix-bot");
//! github.repo("octo/hello", "main", "http://127.0.0.1:1/octo/hello.git");
//! github.issue("octo/hello", 7, "Crash on empty input", "Steps…", "alice");
//! github.collaborator("octo/hello", "alice", "write");
//! // point the client at github.api_url(); read github.comments("octo/hello", 7) afterwards
//! ```
//!
//! The JSON follows the recorded fixtures in `tests/data/github/api/` (same field names and types).
//! Every API request needs `Authorization: token|Bearer X` where X is the configured personal token
//! or a live installation token; the App's routes (`/app`, `/app/installations/{id}/access_tokens`,
//! `/repos/{o}/{r}/installation`) need an RS256 JWT signed with the App's key. Anything else gets
//! the recorded 401 "Bad credentials"; a request without `User-Agent` or with an unknown (or
//! repeated) `X-GitHub-Api-Version` is refused as GitHub does. A path the fake does not serve gets a 404 and is recorded
//! as unexpected; `assert_no_unexpected()` (also run on drop) fails the test on those.
//! Server-side pagination links use `/repositories/{id}/…` like api.github.com does.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Query, State as AxumState};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, Uri};
use axum::response::Response;
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::fake_log::FakeLog;
use super::served::{Runtime, Served};

/// The prefix of every API route, as on GitHub Enterprise Server.
pub const API_PREFIX: &str = "/api/v3";

/// The installation id the fake App has on every repository.
pub const INSTALLATION_ID: u64 = 4242;

/// Reads a recorded GitHub API body from `tests/data/github/api/`, e.g. `"issues-get.issue.json"`.
pub fn github_fixture(name: &str) -> Value {
    let path = github_data_dir().join("api").join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|err| panic!("cannot read the fixture {}: {err}", path.display()));
    serde_json::from_str(&text)
        .unwrap_or_else(|err| panic!("the fixture {} is not JSON: {err}", path.display()))
}

/// `tests/data/github/`: the fixtures and the test-only App key pair.
pub fn github_data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/github")
}

/// The test-only App private key (PEM), generated for these tests and used nowhere else.
pub fn test_app_private_key() -> Vec<u8> {
    std::fs::read(github_data_dir().join("test-app-key.pem")).expect("read the test App key")
}

fn test_app_public_key() -> String {
    std::fs::read_to_string(github_data_dir().join("test-app-key.pub.pem"))
        .expect("read the test App public key")
}

/// A GitHub account as the fake shows it (`type` is `User` or `Bot`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeUser {
    pub login: String,
    pub id: u64,
    pub is_bot: bool,
}

#[derive(Debug, Clone)]
pub struct FakeIssue {
    pub number: u64,
    pub title: String,
    pub body: Option<String>,
    pub labels: Vec<String>,
    pub open: bool,
    pub locked: bool,
    pub author: FakeUser,
}

#[derive(Debug, Clone)]
pub struct FakeComment {
    pub id: u64,
    /// The issue (or pull request) number it is on.
    pub issue: u64,
    pub body: String,
    pub author: FakeUser,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// How many times it was edited through `PATCH`.
    pub edits: u32,
}

#[derive(Debug, Clone)]
pub struct FakePull {
    pub number: u64,
    pub title: String,
    pub body: String,
    pub head: String,
    pub base: String,
    pub draft: bool,
    pub open: bool,
    pub author: FakeUser,
    pub requested_reviewers: Vec<String>,
    pub requested_teams: Vec<String>,
    pub labels: Vec<String>,
    /// The repository `head` lives in when it is a fork's (`owner/name`); `None`: this one.
    pub head_repo: Option<String>,
}

impl FakePull {
    /// The owner of the repository the head branch lives in.
    fn head_owner<'a>(&'a self, repo: &'a FakeRepo) -> &'a str {
        match &self.head_repo {
            Some(fork) => fork.split('/').next().unwrap_or_default(),
            None => repo.owner(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct FakeRepo {
    pub id: u64,
    /// `owner/name`.
    pub full_name: String,
    pub default_branch: String,
    pub clone_url: String,
    /// Login → role (`read`, `triage`, `write`, `maintain`, `admin`).
    pub collaborators: BTreeMap<String, String>,
    pub issues: BTreeMap<u64, FakeIssue>,
    pub pulls: BTreeMap<u64, FakePull>,
    /// Every comment of every issue, in creation order.
    pub comments: Vec<FakeComment>,
    /// The check runs of the repository's commits, oldest first.
    pub check_runs: Vec<FakeCheckRun>,
    /// The repository this one is a fork of (`owner/name`).
    pub fork_of: Option<String>,
    /// Lookups of the fork's git data still answered 404: GitHub copies a fork in the
    /// background, after answering 202.
    pub copy_pending: u32,
}

/// A completed check run (an Actions job) with its log.
#[derive(Debug, Clone)]
pub struct FakeCheckRun {
    pub id: u64,
    pub head_sha: String,
    pub head_branch: String,
    pub name: String,
    /// `success`, `failure`, `timed_out`, …
    pub conclusion: String,
    pub log: FakeLog,
}

impl FakeRepo {
    fn owner(&self) -> &str {
        self.full_name.split('/').next().unwrap_or_default()
    }

    /// Issues and pull requests share one sequence of numbers, as on GitHub.
    fn next_number(&self) -> u64 {
        let last_issue = self.issues.keys().max().copied().unwrap_or(0);
        let last_pull = self.pulls.keys().max().copied().unwrap_or(0);
        last_issue.max(last_pull) + 1
    }

    fn labels_of_mut(&mut self, number: u64) -> Option<&mut Vec<String>> {
        if let Some(issue) = self.issues.get_mut(&number) {
            Some(&mut issue.labels)
        } else {
            self.pulls.get_mut(&number).map(|pull| &mut pull.labels)
        }
    }
}

/// Copies a repository's git data into a new fork (base and fork `owner/name` paths).
pub type Forker = Arc<dyn Fn(&str, &str) + Send + Sync>;

/// The GitHub App the fake knows: its id, slug and public key.
#[derive(Debug, Clone)]
pub struct FakeApp {
    pub id: u64,
    pub slug: String,
    pub public_key_pem: String,
}

impl FakeApp {
    /// The account the App acts as: `{slug}[bot]`, with the App's id.
    pub fn bot_user(&self) -> FakeUser {
        FakeUser {
            login: format!("{}[bot]", self.slug),
            id: self.id,
            is_bot: true,
        }
    }
}

#[derive(Debug, Clone)]
pub struct IssuedToken {
    pub token: String,
    pub installation_id: u64,
    pub expires_at: DateTime<Utc>,
}

/// One request as the fake saw it.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub method: Method,
    /// The path below [`API_PREFIX`], percent-encoded as sent.
    pub path: String,
    pub query: Option<String>,
    pub status: u16,
    /// A route the fake does not serve.
    pub unexpected: bool,
    pub body: Option<Value>,
}

impl std::fmt::Display for RecordedRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.method, self.path)?;
        if let Some(query) = &self.query {
            write!(f, "?{query}")?;
        }
        write!(f, " → {}", self.status)
    }
}

/// A canned answer for the next `times` matching requests.
#[derive(Debug, Clone)]
struct Fault {
    method: String,
    path_substring: String,
    status: u16,
    body: Value,
    headers: Vec<(String, String)>,
    times: usize,
}

#[derive(Debug, Clone)]
struct Delay {
    method: String,
    path_substring: String,
    delay: Duration,
    times: usize,
}

type BranchLookupFn = dyn Fn(&str, &str) -> bool + Send + Sync;
type BranchLookup = Arc<BranchLookupFn>;

/// Everything the fake knows; tests may read and change it through [`FakeGitHub::state`].
pub struct State {
    pub repos: BTreeMap<String, FakeRepo>,
    /// The personal token and the user it belongs to.
    pub personal_token: Option<(String, FakeUser)>,
    pub app: Option<FakeApp>,
    pub issued_tokens: Vec<IssuedToken>,
    /// How long a new installation token lives (GitHub: 1 hour).
    pub token_lifetime: chrono::Duration,
    /// The most items one page holds, whatever `per_page` asks (GitHub: 100).
    pub max_page_size: usize,
    pub requests: Vec<RecordedRequest>,
    faults: Vec<Fault>,
    delays: Vec<Delay>,
    branch_lookup: BranchLookup,
    next_id: u64,
    base_url: String,
    /// Apps created through the manifest flow's web page, oldest first.
    pub manifests: Vec<ManifestSeen>,
    /// The `Authorization` header of each job log download from its redirect address.
    pub log_downloads: Vec<Option<String>>,
    /// Makes a fork's git data (a bare repository beside the base's); without one, a fork
    /// request is answered 403 as for a token that may not fork.
    pub forker: Option<Forker>,
    /// How many lookups of a new fork's default branch answer 404 before its copy is done.
    pub fork_copy_looks: u32,
}

/// One App the manifest flow's web page created: what was posted, and the code sent back.
#[derive(Debug, Clone)]
pub struct ManifestSeen {
    pub manifest: Value,
    pub state: String,
    pub organization: Option<String>,
    pub code: String,
    /// Set once the code was exchanged (a code works once).
    pub app_id: Option<u64>,
}

impl State {
    fn new(base_url: String) -> State {
        State {
            repos: BTreeMap::new(),
            personal_token: None,
            app: None,
            issued_tokens: Vec::new(),
            token_lifetime: chrono::Duration::hours(1),
            max_page_size: 100,
            requests: Vec::new(),
            faults: Vec::new(),
            delays: Vec::new(),
            branch_lookup: Arc::new(|_, _| true),
            next_id: 1000,
            base_url,
            manifests: Vec::new(),
            log_downloads: Vec::new(),
            forker: None,
            fork_copy_looks: 2,
        }
    }

    /// The App whose JWTs (signed with the test key) the fake accepts.
    fn set_app_in_place(&mut self, app_id: u64, slug: &str) -> FakeApp {
        let app = FakeApp {
            id: app_id,
            slug: slug.to_owned(),
            public_key_pem: test_app_public_key(),
        };
        self.app = Some(app.clone());
        app
    }

    fn new_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    fn api_url(&self) -> String {
        format!("{}{API_PREFIX}", self.base_url)
    }
}

type Shared = Arc<Mutex<State>>;

/// The running fake; stops (and checks no unexpected request came) when dropped.
pub struct FakeGitHub {
    state: Shared,
    server: Served,
}

impl FakeGitHub {
    /// Serves the API under `/api/v3` and `git_routes` (which must not set a fallback) on
    /// `127.0.0.1` at a free port, on its own thread and runtime.
    pub fn start(git_routes: axum::Router) -> FakeGitHub {
        let state: Shared = Arc::new(Mutex::new(State::new(String::new())));
        let app_state = state.clone();
        let server = Served::start("fake-github", Runtime::TwoWorkers, move |address| {
            lock(&app_state).base_url = format!("http://{address}");
            let api = axum::Router::new()
                .route(API_PREFIX, axum::routing::any(answer))
                .route(
                    &format!("{API_PREFIX}/{{*rest}}"),
                    axum::routing::any(answer),
                )
                .fallback(answer)
                .with_state(app_state.clone());
            // The web pages of the manifest flow, where a person confirms the App and GitHub
            // sends the browser back to the manifest's `redirect_url` with a one-time code.
            let web = axum::Router::new()
                .route("/settings/apps/new", axum::routing::post(create_app_page))
                .route(
                    "/organizations/{org}/settings/apps/new",
                    axum::routing::post(create_org_app_page),
                )
                .route(
                    "/blobs/job-logs/{repo_id}/{id}",
                    axum::routing::get(download_job_log),
                )
                .with_state(app_state);
            api.merge(web).merge(git_routes)
        });
        FakeGitHub { state, server }
    }

    /// `http://127.0.0.1:PORT`: where the git routes are served.
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// `http://127.0.0.1:PORT/api/v3`: the client's API base URL.
    pub fn api_url(&self) -> String {
        format!("{}{API_PREFIX}", self.url())
    }

    /// Direct access to the fake's state, for what the conveniences below do not cover.
    pub fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Accepts `token` as the personal token of the user `login`.
    pub fn set_token(&self, token: &str, login: &str) -> FakeUser {
        let mut state = self.state();
        let user = FakeUser {
            login: login.to_owned(),
            id: state.new_id(),
            is_bot: false,
        };
        state.personal_token = Some((token.to_owned(), user.clone()));
        user
    }

    /// Registers a GitHub App with the test-only key pair, installed on every repository.
    pub fn set_app(&self, app_id: u64, slug: &str) -> FakeApp {
        self.state().set_app_in_place(app_id, slug)
    }

    /// How long installation tokens issued from now on live.
    pub fn set_token_lifetime(&self, lifetime: Duration) {
        self.state().token_lifetime =
            chrono::Duration::from_std(lifetime).expect("a lifetime chrono can hold");
    }

    /// Caps the page size, so a handful of items spans several pages.
    pub fn set_max_page_size(&self, size: usize) {
        self.state().max_page_size = size.max(1);
    }

    /// Decides whether a branch exists when a pull request is opened (default: every branch).
    pub fn set_branch_lookup(&self, lookup: impl Fn(&str, &str) -> bool + Send + Sync + 'static) {
        self.state().branch_lookup = Arc::new(lookup);
    }

    /// Adds (or replaces) the repository `owner/name`.
    pub fn repo(&self, full_name: &str, default_branch: &str, clone_url: &str) -> FakeRepo {
        let mut state = self.state();
        let repo = FakeRepo {
            id: state.new_id(),
            full_name: full_name.to_owned(),
            default_branch: default_branch.to_owned(),
            clone_url: clone_url.to_owned(),
            collaborators: BTreeMap::new(),
            issues: BTreeMap::new(),
            pulls: BTreeMap::new(),
            comments: Vec::new(),
            check_runs: Vec::new(),
            fork_of: None,
            copy_pending: 0,
        };
        state.repos.insert(full_name.to_owned(), repo.clone());
        repo
    }

    /// Lets users fork: `forker` copies the git data once the fork's background copy is done.
    pub fn set_forker(&self, forker: Forker) {
        self.state().forker = Some(forker);
    }

    /// The forks of `base` (`owner/name`), by full name.
    pub fn forks_of(&self, base: &str) -> Vec<String> {
        self.state()
            .repos
            .values()
            .filter(|repo| repo.fork_of.as_deref() == Some(base))
            .map(|repo| repo.full_name.clone())
            .collect()
    }

    /// A completed check run of `head_sha` on `head_branch`, with its Actions job log; its id.
    pub fn check_run(
        &self,
        repo: &str,
        (head_sha, head_branch): (&str, &str),
        name: &str,
        conclusion: &str,
        log: impl Into<FakeLog>,
    ) -> u64 {
        let mut state = self.state();
        let id = state.new_id();
        repo_mut(&mut state, repo).check_runs.push(FakeCheckRun {
            id,
            head_sha: head_sha.to_owned(),
            head_branch: head_branch.to_owned(),
            name: name.to_owned(),
            conclusion: conclusion.to_owned(),
            log: log.into(),
        });
        id
    }

    /// The `Authorization` header of each download of a job log from its redirect address
    /// (`None` when none was sent, as it must be).
    pub fn log_downloads(&self) -> Vec<Option<String>> {
        self.state().log_downloads.clone()
    }

    /// Adds an open, unlocked issue by `author` (a new user unless one of that login exists).
    pub fn issue(
        &self,
        repo: &str,
        number: u64,
        title: &str,
        body: &str,
        author: &str,
    ) -> FakeIssue {
        let mut state = self.state();
        let author = FakeUser {
            login: author.to_owned(),
            id: state.new_id(),
            is_bot: author.ends_with("[bot]"),
        };
        let issue = FakeIssue {
            number,
            title: title.to_owned(),
            body: (!body.is_empty()).then(|| body.to_owned()),
            labels: Vec::new(),
            open: true,
            locked: false,
            author,
        };
        repo_mut(&mut state, repo)
            .issues
            .insert(number, issue.clone());
        issue
    }

    /// Changes an issue in place (close it, lock it, label it…).
    pub fn edit_issue(&self, repo: &str, number: u64, edit: impl FnOnce(&mut FakeIssue)) {
        let mut state = self.state();
        let issue = repo_mut(&mut state, repo)
            .issues
            .get_mut(&number)
            .unwrap_or_else(|| panic!("the fake has no issue #{number} in {repo}"));
        edit(issue);
    }

    /// Makes `login` a collaborator of `repo` with `role` (`read` … `admin`).
    pub fn collaborator(&self, repo: &str, login: &str, role: &str) {
        repo_mut(&mut self.state(), repo)
            .collaborators
            .insert(login.to_owned(), role.to_owned());
    }

    pub fn comments(&self, repo: &str, number: u64) -> Vec<FakeComment> {
        repo_mut(&mut self.state(), repo)
            .comments
            .iter()
            .filter(|comment| comment.issue == number)
            .cloned()
            .collect()
    }

    /// A comment on issue (or pull request) `number` written by `login` (a new user), not
    /// through the API: what anyone who may comment can do. Its id.
    pub fn comment_by(&self, repo: &str, number: u64, login: &str, body: &str) -> u64 {
        let mut state = self.state();
        let now = Utc::now();
        let author = FakeUser {
            login: login.to_owned(),
            id: state.new_id(),
            is_bot: false,
        };
        let id = state.new_id();
        repo_mut(&mut state, repo).comments.push(FakeComment {
            id,
            issue: number,
            body: body.to_owned(),
            author,
            created_at: now,
            updated_at: now,
            edits: 0,
        });
        id
    }

    /// An open pull request into the default branch from `branch` of `login`'s fork, opened by
    /// `login` (a new user) with `body`. Its number.
    pub fn pull_request_from_fork(
        &self,
        repo: &str,
        login: &str,
        branch: &str,
        title: &str,
        body: &str,
    ) -> u64 {
        let mut state = self.state();
        let author = FakeUser {
            login: login.to_owned(),
            id: state.new_id(),
            is_bot: false,
        };
        let repo = repo_mut(&mut state, repo);
        let name = repo
            .full_name
            .split('/')
            .nth(1)
            .unwrap_or_default()
            .to_owned();
        let pull = FakePull {
            number: repo.next_number(),
            title: title.to_owned(),
            body: body.to_owned(),
            head: branch.to_owned(),
            base: repo.default_branch.clone(),
            draft: false,
            open: true,
            author,
            requested_reviewers: Vec::new(),
            requested_teams: Vec::new(),
            labels: Vec::new(),
            head_repo: Some(format!("{login}/{name}")),
        };
        repo.pulls.insert(pull.number, pull.clone());
        pull.number
    }

    pub fn pull_requests(&self, repo: &str) -> Vec<FakePull> {
        repo_mut(&mut self.state(), repo)
            .pulls
            .values()
            .cloned()
            .collect()
    }

    /// The labels of issue (or pull request) `number`.
    pub fn labels(&self, repo: &str, number: u64) -> Vec<String> {
        repo_mut(&mut self.state(), repo)
            .labels_of_mut(number)
            .map(|labels| labels.clone())
            .unwrap_or_else(|| panic!("the fake has no issue or pull request #{number} in {repo}"))
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.state().requests.clone()
    }

    /// How many requests had `method` and a path containing `path_substring`.
    pub fn count(&self, method: &str, path_substring: &str) -> usize {
        self.state()
            .requests
            .iter()
            .filter(|request| {
                request.method.as_str().eq_ignore_ascii_case(method)
                    && request.path.contains(path_substring)
            })
            .count()
    }

    pub fn issued_tokens(&self) -> Vec<IssuedToken> {
        self.state().issued_tokens.clone()
    }

    /// Answers the next `times` requests with `method` (or `*`) whose path below `/api/v3`
    /// contains `path_substring` with `status`, `body` and `headers` instead of serving them.
    pub fn fail_next(
        &self,
        method: &str,
        path_substring: &str,
        status: u16,
        body: Value,
        headers: &[(&str, &str)],
        times: usize,
    ) {
        self.state().faults.push(Fault {
            method: method.to_owned(),
            path_substring: path_substring.to_owned(),
            status,
            body,
            headers: headers
                .iter()
                .map(|(name, value)| (name.to_string(), value.to_string()))
                .collect(),
            times,
        });
    }

    /// Disarms every fault `fail_next` armed: the API answers again.
    pub fn clear_faults(&self) {
        self.state().faults.clear();
    }

    /// How many armed delays no request has reached yet.
    pub fn pending_delays(&self) -> usize {
        self.state().delays.iter().map(|delay| delay.times).sum()
    }

    /// Holds the next `times` matching requests back for `delay` before serving them.
    pub fn delay_next(&self, method: &str, path_substring: &str, delay: Duration, times: usize) {
        self.state().delays.push(Delay {
            method: method.to_owned(),
            path_substring: path_substring.to_owned(),
            delay,
            times,
        });
    }

    /// Fails the test if any request went to a route the fake does not serve.
    pub fn assert_no_unexpected(&self) {
        let unexpected: Vec<String> = self
            .state()
            .requests
            .iter()
            .filter(|request| request.unexpected)
            .map(ToString::to_string)
            .collect();
        assert!(
            unexpected.is_empty(),
            "the fake GitHub got requests it does not serve:\n  {}",
            unexpected.join("\n  ")
        );
    }
}

impl Drop for FakeGitHub {
    fn drop(&mut self) {
        self.server.stop();
        if !std::thread::panicking() {
            self.assert_no_unexpected();
        }
    }
}

fn lock(state: &Shared) -> MutexGuard<'_, State> {
    state
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn repo_mut<'a>(state: &'a mut State, full_name: &str) -> &'a mut FakeRepo {
    state
        .repos
        .get_mut(full_name)
        .unwrap_or_else(|| panic!("the fake has no repository {full_name}; add it with repo()"))
}

/// What one request gets back.
struct Reply {
    status: u16,
    body: Value,
    headers: Vec<(String, String)>,
}

impl Reply {
    fn json(status: u16, body: Value) -> Reply {
        Reply {
            status,
            body,
            headers: Vec::new(),
        }
    }

    fn not_found() -> Reply {
        Reply::json(
            404,
            json!({"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}),
        )
    }

    fn bad_credentials() -> Reply {
        Reply::json(401, github_fixture("error-401-bad-credentials.json"))
    }

    fn validation_failed(errors: Value) -> Reply {
        Reply::json(
            422,
            json!({
                "message": "Validation Failed",
                "errors": errors,
                "documentation_url": "https://docs.github.com/rest",
            }),
        )
    }

    fn with_header(mut self, name: &str, value: String) -> Reply {
        self.headers.push((name.to_owned(), value));
        self
    }

    fn into_response(self) -> Response {
        let mut builder = Response::builder().status(self.status);
        for (name, value) in &self.headers {
            builder = builder.header(
                HeaderName::from_bytes(name.as_bytes()).expect("a valid header name"),
                HeaderValue::from_str(value).expect("a valid header value"),
            );
        }
        let body = if self.status == 204 {
            Body::empty()
        } else {
            builder = builder.header("content-type", "application/json; charset=utf-8");
            Body::from(self.body.to_string())
        };
        builder.body(body).expect("a valid response")
    }
}

async fn answer(
    AxumState(state): AxumState<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    // Served on its own task, so a client that gives up (a timeout) does not cancel the work:
    // like GitHub, the fake still applies a request whose answer nobody waits for.
    tokio::spawn(serve_request(state, method, uri, headers, body))
        .await
        .expect("the fake GitHub handler does not panic")
}

async fn serve_request(
    state: Shared,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let raw_path = uri.path().to_owned();
    let body: Option<Value> = serde_json::from_slice(&body).ok();
    let Some(path) = raw_path.strip_prefix(API_PREFIX).map(str::to_owned) else {
        return record(
            &state,
            &method,
            &uri,
            raw_path,
            body,
            Reply::not_found(),
            true,
        );
    };
    if let Some(delay) = take_delay(&state, &method, &path) {
        tokio::time::sleep(delay).await;
    }
    let fault = take_fault(&state, &method, &path);
    let (reply, unexpected) = match fault {
        Some(reply) => (reply, false),
        None => route_and_serve(&state, &method, &uri, &path, &headers, body.as_ref()),
    };
    record(&state, &method, &uri, path, body, reply, unexpected)
}

fn record(
    state: &Shared,
    method: &Method,
    uri: &Uri,
    path: String,
    body: Option<Value>,
    reply: Reply,
    unexpected: bool,
) -> Response {
    lock(state).requests.push(RecordedRequest {
        method: method.clone(),
        path,
        query: uri.query().map(str::to_owned),
        status: reply.status,
        unexpected,
        body,
    });
    reply.into_response()
}

fn matches(wanted: &str, method: &Method, substring: &str, path: &str) -> bool {
    (wanted == "*" || method.as_str().eq_ignore_ascii_case(wanted)) && path.contains(substring)
}

fn take_delay(state: &Shared, method: &Method, path: &str) -> Option<Duration> {
    let mut state = lock(state);
    let delay = state.delays.iter_mut().find(|delay| {
        delay.times > 0 && matches(&delay.method, method, &delay.path_substring, path)
    })?;
    delay.times -= 1;
    Some(delay.delay)
}

fn take_fault(state: &Shared, method: &Method, path: &str) -> Option<Reply> {
    let mut state = lock(state);
    let fault = state.faults.iter_mut().find(|fault| {
        fault.times > 0 && matches(&fault.method, method, &fault.path_substring, path)
    })?;
    fault.times -= 1;
    Some(Reply {
        status: fault.status,
        body: fault.body.clone(),
        headers: fault.headers.clone(),
    })
}

/// The routes the fake serves, with their path parameters decoded.
enum Route {
    User,
    App,
    AppInstallations,
    AccessTokens {
        installation: u64,
    },
    Installation {
        repo: String,
    },
    Repository {
        repo: String,
    },
    Permission {
        repo: String,
        login: String,
    },
    Issue {
        repo: String,
        number: u64,
    },
    ListComments {
        repo: String,
        number: u64,
    },
    CreateComment {
        repo: String,
        number: u64,
    },
    EditComment {
        repo: String,
        id: u64,
    },
    AddLabels {
        repo: String,
        number: u64,
    },
    RemoveLabel {
        repo: String,
        number: u64,
        name: String,
    },
    ListPulls {
        repo: String,
    },
    CreatePull {
        repo: String,
    },
    CreateFork {
        repo: String,
    },
    GitRef {
        repo: String,
        branch: String,
    },
    RequestReviewers {
        repo: String,
        number: u64,
    },
    CheckRuns {
        repo: String,
        git_ref: String,
    },
    JobLogs {
        repo: String,
        id: u64,
    },
}

impl Route {
    fn needs_app_jwt(&self) -> bool {
        matches!(
            self,
            Route::App
                | Route::AppInstallations
                | Route::AccessTokens { .. }
                | Route::Installation { .. }
        )
    }
}

fn decode(segment: &str) -> String {
    percent_encoding::percent_decode_str(segment)
        .decode_utf8_lossy()
        .into_owned()
}

/// `/repositories/{id}` names a repository by id, as GitHub's pagination links do.
fn repo_by_id(state: &State, id: &str) -> Option<String> {
    let id: u64 = id.parse().ok()?;
    state
        .repos
        .values()
        .find(|repo| repo.id == id)
        .map(|repo| repo.full_name.clone())
}

fn parse_route(state: &State, method: &Method, path: &str) -> Option<Route> {
    let segments: Vec<String> = path
        .trim_start_matches('/')
        .split('/')
        .map(decode)
        .collect();
    let parts: Vec<&str> = segments.iter().map(String::as_str).collect();
    let number = |text: &str| text.parse::<u64>().ok();
    let route = match (method.as_str(), parts.as_slice()) {
        ("GET", ["user"]) => Route::User,
        ("GET", ["app"]) => Route::App,
        ("GET", ["app", "installations"]) => Route::AppInstallations,
        ("POST", ["app", "installations", id, "access_tokens"]) => Route::AccessTokens {
            installation: number(id)?,
        },
        ("GET", ["repositories", id, rest @ ..]) => {
            let repo = repo_by_id(state, id)?;
            match rest {
                ["issues", n, "comments"] => Route::ListComments {
                    repo,
                    number: number(n)?,
                },
                ["pulls"] => Route::ListPulls { repo },
                _ => return None,
            }
        }
        (_, ["repos", owner, name, rest @ ..]) => {
            let repo = format!("{owner}/{name}");
            match (method.as_str(), rest) {
                ("GET", []) => Route::Repository { repo },
                ("GET", ["installation"]) => Route::Installation { repo },
                ("GET", ["collaborators", login, "permission"]) => Route::Permission {
                    repo,
                    login: login.to_string(),
                },
                ("PATCH", ["issues", "comments", id]) => Route::EditComment {
                    repo,
                    id: number(id)?,
                },
                ("GET", ["issues", n]) => Route::Issue {
                    repo,
                    number: number(n)?,
                },
                ("GET", ["issues", n, "comments"]) => Route::ListComments {
                    repo,
                    number: number(n)?,
                },
                ("POST", ["issues", n, "comments"]) => Route::CreateComment {
                    repo,
                    number: number(n)?,
                },
                ("POST", ["issues", n, "labels"]) => Route::AddLabels {
                    repo,
                    number: number(n)?,
                },
                ("DELETE", ["issues", n, "labels", label]) => Route::RemoveLabel {
                    repo,
                    number: number(n)?,
                    name: label.to_string(),
                },
                ("GET", ["pulls"]) => Route::ListPulls { repo },
                ("POST", ["pulls"]) => Route::CreatePull { repo },
                ("POST", ["forks"]) => Route::CreateFork { repo },
                ("GET", ["git", "ref", "heads", branch @ ..]) if !branch.is_empty() => {
                    Route::GitRef {
                        repo,
                        branch: branch.join("/"),
                    }
                }
                ("POST", ["pulls", n, "requested_reviewers"]) => Route::RequestReviewers {
                    repo,
                    number: number(n)?,
                },
                ("GET", ["commits", git_ref, "check-runs"]) => Route::CheckRuns {
                    repo,
                    git_ref: git_ref.to_string(),
                },
                ("GET", ["actions", "jobs", id, "logs"]) => Route::JobLogs {
                    repo,
                    id: number(id)?,
                },
                _ => return None,
            }
        }
        _ => return None,
    };
    Some(route)
}

/// Who a request's `Authorization` header says it comes from.
enum Caller {
    User(FakeUser),
    App,
}

fn caller(state: &State, headers: &HeaderMap, wants_jwt: bool) -> Option<Caller> {
    let value = headers.get("authorization")?.to_str().ok()?;
    let (scheme, credential) = value.split_once(' ')?;
    if !matches!(scheme.to_ascii_lowercase().as_str(), "token" | "bearer") {
        return None;
    }
    if wants_jwt {
        let app = state.app.as_ref()?;
        return jwt_is_valid(app, credential).then_some(Caller::App);
    }
    if let Some((token, user)) = &state.personal_token
        && token == credential
    {
        return Some(Caller::User(user.clone()));
    }
    let live = state.issued_tokens.iter().any(|issued| {
        issued.token == credential
            && issued.installation_id == INSTALLATION_ID
            && issued.expires_at > Utc::now()
    });
    let app = state.app.as_ref().filter(|_| live)?;
    Some(Caller::User(app.bot_user()))
}

/// GitHub's rules for App JWTs: RS256 with the App's key, `iss` = the App id, issued in the
/// past, expiring in the future but no more than 10 minutes ahead.
fn jwt_is_valid(app: &FakeApp, jwt: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Claims {
        iss: Value,
        iat: i64,
        exp: i64,
    }
    let Ok(key) = jsonwebtoken::DecodingKey::from_rsa_pem(app.public_key_pem.as_bytes()) else {
        return false;
    };
    let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::RS256);
    // GitHub's `iss` is the App id as a number, which jsonwebtoken's `iss` check cannot parse:
    // only `exp` is required here and `iss`/`iat` are checked below.
    validation.set_required_spec_claims(&["exp"]);
    validation.leeway = 0;
    let Ok(data) = jsonwebtoken::decode::<Claims>(jwt, &key, &validation) else {
        return false;
    };
    let now = Utc::now().timestamp();
    let issuer_is_app = match &data.claims.iss {
        Value::Number(id) => id.as_u64() == Some(app.id),
        Value::String(id) => id == &app.id.to_string(),
        _ => false,
    };
    issuer_is_app && data.claims.iat <= now && data.claims.exp <= now + 600
}

fn route_and_serve(
    shared: &Shared,
    method: &Method,
    uri: &Uri,
    path: &str,
    headers: &HeaderMap,
    body: Option<&Value>,
) -> (Reply, bool) {
    let mut state = lock(shared);
    if let (&Method::POST, Some(code)) = (
        method,
        path.strip_prefix("/app-manifests/")
            .and_then(|rest| rest.strip_suffix("/conversions")),
    ) {
        return (convert_manifest(&mut state, code), false);
    }
    let Some(route) = parse_route(&state, method, path) else {
        return (Reply::not_found(), true);
    };
    if let Some(refusal) = refuse_headers(headers) {
        return (refusal, false);
    }
    let caller = caller(&state, headers, route.needs_app_jwt());
    let reply = match (caller, route) {
        (None, _) => Reply::bad_credentials(),
        (Some(Caller::App), route) => serve_app_route(&mut state, route),
        (Some(Caller::User(user)), route) => {
            let query: HashMap<String, String> = Query::try_from_uri(uri)
                .map(|Query(query)| query)
                .unwrap_or_default();
            serve_user_route(&mut state, &user, route, &query, body)
        }
    };
    (reply, false)
}

/// GitHub refuses requests without a `User-Agent` (403) and API versions it does not know (400).
fn refuse_headers(headers: &HeaderMap) -> Option<Reply> {
    if !headers.contains_key("user-agent") {
        return Some(Reply::json(
            403,
            json!({"message": "Request forbidden by administrative rules. Please make sure your request has a User-Agent header."}),
        ));
    }
    let versions: Vec<&HeaderValue> = headers.get_all("x-github-api-version").iter().collect();
    let supported = match versions.as_slice() {
        [] => true,
        [version] => version.as_bytes() == b"2022-11-28",
        _ => false,
    };
    (!supported).then(|| {
        Reply::json(
            400,
            json!({"message": "Unsupported API version", "documentation_url": "https://docs.github.com/rest/about-the-rest-api/api-versions"}),
        )
    })
}

fn serve_app_route(state: &mut State, route: Route) -> Reply {
    let app = state
        .app
        .clone()
        .expect("a JWT was accepted, so an App is set");
    match route {
        Route::App => Reply::json(
            200,
            json!({
                "id": app.id,
                "slug": app.slug,
                "node_id": format!("MDM6QXBw{}", app.id),
                "name": app.slug,
                "owner": null,
                "description": "",
                "external_url": state.base_url,
                "html_url": format!("{}/apps/{}", state.base_url, app.slug),
                "created_at": timestamp(Utc::now()),
                "updated_at": timestamp(Utc::now()),
                "permissions": {"issues": "write", "contents": "write", "pull_requests": "write"},
                "events": ["issues"],
            }),
        ),
        // "List installations for the authenticated app", in the docs' example shape: one
        // installation, on the account that owns the fake's repositories.
        Route::AppInstallations => {
            let owner = state
                .repos
                .keys()
                .next()
                .and_then(|name| name.split('/').next())
                .unwrap_or("octo-org")
                .to_owned();
            Reply::json(
                200,
                json!([{
                    "id": INSTALLATION_ID,
                    "account": {"login": owner, "id": 1, "type": "Organization", "site_admin": false},
                    "access_tokens_url": format!("{}/app/installations/{INSTALLATION_ID}/access_tokens", state.api_url()),
                    "repositories_url": format!("{}/installation/repositories", state.api_url()),
                    "html_url": format!("{}/organizations/{owner}/settings/installations/{INSTALLATION_ID}", state.base_url),
                    "app_id": app.id,
                    "app_slug": app.slug,
                    "target_id": 1,
                    "target_type": "Organization",
                    "permissions": {"issues": "write", "contents": "write", "pull_requests": "write"},
                    "events": ["issues"],
                    "repository_selection": "all",
                    "created_at": timestamp(Utc::now()),
                    "updated_at": timestamp(Utc::now()),
                    "single_file_name": null,
                    "suspended_at": null,
                    "suspended_by": null,
                }]),
            )
        }
        Route::Installation { repo } => match state.repos.get(&repo) {
            Some(_) => Reply::json(
                200,
                json!({
                    "id": INSTALLATION_ID,
                    "app_id": app.id,
                    "app_slug": app.slug,
                    "target_type": "Organization",
                    "repository_selection": "all",
                    "access_tokens_url": format!("{}/app/installations/{INSTALLATION_ID}/access_tokens", state.api_url()),
                }),
            ),
            None => Reply::not_found(),
        },
        Route::AccessTokens { installation } if installation == INSTALLATION_ID => {
            let serial = state.issued_tokens.len() + 1;
            let issued = IssuedToken {
                token: format!("ghs_fakeinstallationtoken{serial:012}"),
                installation_id: installation,
                expires_at: Utc::now() + state.token_lifetime,
            };
            state.issued_tokens.push(issued.clone());
            Reply::json(
                201,
                json!({
                    "token": issued.token,
                    "expires_at": timestamp(issued.expires_at),
                    "permissions": {"issues": "write", "contents": "write", "pull_requests": "write"},
                    "repository_selection": "all",
                }),
            )
        }
        Route::AccessTokens { .. } => Reply::not_found(),
        _ => Reply::bad_credentials(),
    }
}

fn serve_user_route(
    state: &mut State,
    caller: &FakeUser,
    route: Route,
    query: &HashMap<String, String>,
    body: Option<&Value>,
) -> Reply {
    if let Route::User = route {
        return if caller.is_bot {
            Reply::json(
                403,
                json!({"message": "Resource not accessible by integration", "documentation_url": "https://docs.github.com/rest"}),
            )
        } else {
            Reply::json(200, user_json(&state.base_url, caller))
        };
    }
    let repo_name = match &route {
        Route::Repository { repo }
        | Route::Permission { repo, .. }
        | Route::Issue { repo, .. }
        | Route::ListComments { repo, .. }
        | Route::CreateComment { repo, .. }
        | Route::EditComment { repo, .. }
        | Route::AddLabels { repo, .. }
        | Route::RemoveLabel { repo, .. }
        | Route::ListPulls { repo }
        | Route::CreatePull { repo }
        | Route::CreateFork { repo }
        | Route::GitRef { repo, .. }
        | Route::RequestReviewers { repo, .. }
        | Route::CheckRuns { repo, .. }
        | Route::JobLogs { repo, .. } => repo.clone(),
        Route::User
        | Route::App
        | Route::AppInstallations
        | Route::AccessTokens { .. }
        | Route::Installation { .. } => {
            return Reply::bad_credentials();
        }
    };
    if !state.repos.contains_key(&repo_name) {
        return Reply::not_found();
    }
    match &route {
        Route::CreateFork { .. } => return create_fork(state, caller, &repo_name),
        Route::GitRef { branch, .. } => return git_ref(state, &repo_name, branch),
        _ => {}
    }
    let forks: Vec<String> = state
        .repos
        .values()
        .filter(|repo| repo.fork_of.as_deref() == Some(repo_name.as_str()))
        .map(|repo| repo.full_name.clone())
        .collect();
    let base_url = state.base_url.clone();
    let max_page = state.max_page_size;
    let now = Utc::now();
    let new_id = state.new_id();
    let branch_lookup = state.branch_lookup.clone();
    let repo = state.repos.get_mut(&repo_name).expect("checked above");
    let urls = Urls::new(&base_url, repo);
    match route {
        Route::Repository { .. } => Reply::json(200, repo_json(&urls, repo)),
        Route::Permission { login, .. } => match repo.collaborators.get(&login) {
            Some(role) => Reply::json(
                200,
                json!({
                    "permission": legacy_permission(role),
                    "role_name": role,
                    "user": user_json(&base_url, &FakeUser { login: login.clone(), id: 0, is_bot: false }),
                }),
            ),
            None => Reply::not_found(),
        },
        Route::Issue { number, .. } => match repo.issues.get(&number) {
            Some(issue) => Reply::json(200, issue_json(&urls, repo, issue)),
            None => Reply::not_found(),
        },
        Route::ListComments { number, .. } => {
            if repo.labels_of_mut(number).is_none() {
                return Reply::not_found();
            }
            let items: Vec<Value> = repo
                .comments
                .iter()
                .filter(|comment| comment.issue == number)
                .map(|comment| comment_json(&urls, comment))
                .collect();
            let link_path = format!("{}/issues/{number}/comments", urls.by_id);
            paginate(items, query, max_page, &link_path, &[])
        }
        Route::CreateComment { number, .. } => {
            if repo.labels_of_mut(number).is_none() {
                return Reply::not_found();
            }
            let Some(text) = body.and_then(|body| body["body"].as_str()) else {
                return Reply::validation_failed(
                    json!([{"resource": "IssueComment", "field": "body", "code": "missing_field"}]),
                );
            };
            let comment = FakeComment {
                id: new_id,
                issue: number,
                body: text.to_owned(),
                author: caller.clone(),
                created_at: now,
                updated_at: now,
                edits: 0,
            };
            repo.comments.push(comment.clone());
            Reply::json(201, comment_json(&urls, &comment))
        }
        Route::EditComment { id, .. } => {
            let Some(comment) = repo.comments.iter_mut().find(|comment| comment.id == id) else {
                return Reply::not_found();
            };
            let Some(text) = body.and_then(|body| body["body"].as_str()) else {
                return Reply::validation_failed(
                    json!([{"resource": "IssueComment", "field": "body", "code": "missing_field"}]),
                );
            };
            comment.body = text.to_owned();
            comment.updated_at = now;
            comment.edits += 1;
            let comment = comment.clone();
            Reply::json(200, comment_json(&urls, &comment))
        }
        Route::AddLabels { number, .. } => {
            let wanted = requested_labels(body);
            let Some(labels) = repo.labels_of_mut(number) else {
                return Reply::not_found();
            };
            let Some(wanted) = wanted else {
                return Reply::validation_failed(
                    json!([{"resource": "Label", "field": "labels", "code": "missing_field"}]),
                );
            };
            for label in wanted {
                if !labels.contains(&label) {
                    labels.push(label);
                }
            }
            let labels = labels.clone();
            Reply::json(
                200,
                Value::Array(labels.iter().map(|name| label_json(&urls, name)).collect()),
            )
        }
        Route::RemoveLabel { number, name, .. } => {
            let Some(labels) = repo.labels_of_mut(number) else {
                return Reply::not_found();
            };
            if !labels.contains(&name) {
                return Reply::json(
                    404,
                    json!({"message": "Label does not exist", "documentation_url": "https://docs.github.com/rest/issues/labels#remove-a-label-from-an-issue"}),
                );
            }
            labels.retain(|label| label != &name);
            let labels = labels.clone();
            Reply::json(
                200,
                Value::Array(labels.iter().map(|name| label_json(&urls, name)).collect()),
            )
        }
        Route::ListPulls { .. } => {
            let state_filter = query.get("state").map(String::as_str).unwrap_or("open");
            let head_filter = query.get("head").cloned();
            let items: Vec<Value> = repo
                .pulls
                .values()
                .filter(|pull| match state_filter {
                    "all" => true,
                    "closed" => !pull.open,
                    _ => pull.open,
                })
                .filter(|pull| {
                    head_filter.as_deref().is_none_or(|head| {
                        head == format!("{}:{}", pull.head_owner(repo), pull.head)
                    })
                })
                .map(|pull| pull_json(&urls, repo, pull))
                .collect();
            let mut kept: Vec<(&str, String)> = vec![("state", state_filter.to_owned())];
            if let Some(head) = &head_filter {
                kept.push(("head", head.clone()));
            }
            let link_path = format!("{}/pulls", urls.by_id);
            paginate(items, query, max_page, &link_path, &kept)
        }
        Route::CreatePull { .. } => {
            create_pull(repo, &urls, caller, body, (branch_lookup.as_ref(), &forks))
        }
        Route::RequestReviewers { number, .. } => {
            let users: Vec<String> = string_list(body, "reviewers");
            let teams: Vec<String> = string_list(body, "team_reviewers");
            if let Some(stranger) = users
                .iter()
                .find(|user| !repo.collaborators.contains_key(*user))
            {
                return Reply::validation_failed(json!([{
                    "resource": "PullRequest",
                    "code": "custom",
                    "message": format!("Reviews may only be requested from collaborators. One or more of the users or teams you specified is not a collaborator of the {} repository. ({stranger})", repo.full_name),
                }]));
            }
            let Some(pull) = repo.pulls.get_mut(&number) else {
                return Reply::not_found();
            };
            pull.requested_reviewers.extend(users);
            pull.requested_teams.extend(teams);
            let pull = pull.clone();
            Reply::json(201, pull_json(&urls, repo, &pull))
        }
        Route::CheckRuns { git_ref, .. } => {
            let runs: Vec<Value> = repo
                .check_runs
                .iter()
                .filter(|run| run.head_sha == git_ref || run.head_branch == git_ref)
                .map(|run| {
                    json!({
                        "id": run.id,
                        "head_sha": run.head_sha,
                        "name": run.name,
                        "status": "completed",
                        "conclusion": run.conclusion,
                        "output": {"title": null, "summary": null, "text": null},
                    })
                })
                .collect();
            Reply::json(200, json!({"total_count": runs.len(), "check_runs": runs}))
        }
        Route::JobLogs { id, .. } => {
            if !repo.check_runs.iter().any(|run| run.id == id) {
                return Reply::not_found();
            }
            // Like GitHub: a redirect to a short-lived address on another host.
            let mut reply = Reply::json(302, Value::Null);
            reply.headers.push((
                "Location".into(),
                format!("{base_url}/blobs/job-logs/{}/{id}", repo.id),
            ));
            reply
        }
        Route::User
        | Route::App
        | Route::AppInstallations
        | Route::AccessTokens { .. }
        | Route::Installation { .. } => Reply::bad_credentials(),
        Route::CreateFork { .. } | Route::GitRef { .. } => unreachable!("served above"),
    }
}

/// `POST /repos/{o}/{r}/forks`: the caller's fork, made now (its git data copied a few lookups
/// later, as GitHub does it in the background) or the one it has already; 202 either way.
fn create_fork(state: &mut State, caller: &FakeUser, base: &str) -> Reply {
    if state.forker.is_none() {
        return Reply::json(
            403,
            json!({"message": "Resource not accessible by integration", "documentation_url": "https://docs.github.com/rest/repos/forks#create-a-fork"}),
        );
    }
    let existing = state
        .repos
        .values()
        .find(|repo| repo.fork_of.as_deref() == Some(base) && repo.owner() == caller.login);
    let fork = match existing {
        Some(fork) => fork.full_name.clone(),
        None => {
            let name = base.split('/').nth(1).unwrap_or_default();
            let mut full_name = format!("{}/{name}", caller.login);
            let mut suffix = 0;
            while state.repos.contains_key(&full_name) {
                suffix += 1;
                full_name = format!("{}/{name}-{suffix}", caller.login);
            }
            let id = state.new_id();
            let looks = state.fork_copy_looks;
            let parent = state.repos[base].clone();
            let fork = FakeRepo {
                id,
                full_name: full_name.clone(),
                default_branch: parent.default_branch.clone(),
                clone_url: parent
                    .clone_url
                    .replace(&format!("/{base}.git"), &format!("/{full_name}.git")),
                collaborators: BTreeMap::from([(caller.login.clone(), "admin".to_owned())]),
                issues: BTreeMap::new(),
                pulls: BTreeMap::new(),
                comments: Vec::new(),
                check_runs: Vec::new(),
                fork_of: Some(base.to_owned()),
                copy_pending: looks,
            };
            state.repos.insert(full_name.clone(), fork);
            full_name
        }
    };
    let fork = &state.repos[&fork];
    Reply::json(202, repo_json(&Urls::new(&state.base_url, fork), fork))
}

/// `GET /repos/{o}/{r}/git/ref/heads/{branch}`: 404 while a new fork's copy is under way, and
/// for a branch the repository does not have.
fn git_ref(state: &mut State, repo_name: &str, branch: &str) -> Reply {
    let forker = state.forker.clone();
    let lookup = state.branch_lookup.clone();
    let base_url = state.base_url.clone();
    let repo = repo_mut(state, repo_name);
    if repo.copy_pending > 0 {
        repo.copy_pending -= 1;
        if repo.copy_pending == 0
            && let (Some(forker), Some(base)) = (forker, &repo.fork_of)
        {
            forker(base, &repo.full_name);
        }
        return Reply::json(
            404,
            json!({"message": "Not Found", "documentation_url": "https://docs.github.com/rest/git/refs#get-a-reference"}),
        );
    }
    if repo.fork_of.is_none() && !lookup(repo_name, branch) {
        return Reply::not_found();
    }
    let api_repo = format!("{base_url}{API_PREFIX}/repos/{repo_name}");
    let mut answer = github_fixture("git-get-ref.git-ref.json");
    answer["ref"] = json!(format!("refs/heads/{branch}"));
    answer["url"] = json!(format!("{api_repo}/git/refs/heads/{branch}"));
    Reply::json(200, answer)
}

/// The log behind a job-log redirect, noting whether a credential came along (it must not).
async fn download_job_log(
    AxumState(state): AxumState<Shared>,
    axum::extract::Path((repo_id, id)): axum::extract::Path<(u64, u64)>,
    headers: HeaderMap,
) -> Response {
    let mut state = lock(&state);
    let authorization = headers
        .get("authorization")
        .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned());
    state.log_downloads.push(authorization);
    let log = state
        .repos
        .values()
        .filter(|repo| repo.id == repo_id)
        .flat_map(|repo| repo.check_runs.iter())
        .find(|run| run.id == id)
        .map(|run| run.log.clone());
    match log {
        Some(log) => Response::new(log.body()),
        None => axum::response::IntoResponse::into_response(axum::http::StatusCode::NOT_FOUND),
    }
}

/// `POST /repos/{o}/{r}/pulls`; `head` is a branch of this repository, or `owner:branch` of it
/// or of one of its `forks`.
fn create_pull(
    repo: &mut FakeRepo,
    urls: &Urls,
    caller: &FakeUser,
    body: Option<&Value>,
    (branch_exists, forks): (&BranchLookupFn, &[String]),
) -> Reply {
    let field = |name: &str| body.and_then(|body| body[name].as_str()).map(str::to_owned);
    let Some(title) = field("title").filter(|title| !title.trim().is_empty()) else {
        return Reply::validation_failed(
            json!([{"resource": "PullRequest", "field": "title", "code": "missing_field"}]),
        );
    };
    let (Some(head), Some(base)) = (field("head"), field("base")) else {
        return Reply::validation_failed(
            json!([{"resource": "PullRequest", "field": "head", "code": "missing_field"}]),
        );
    };
    let (head_repo, head) = match head.split_once(':') {
        Some((owner, branch)) if owner == repo.owner() => (None, branch.to_owned()),
        Some((owner, branch)) => {
            let Some(fork) = forks
                .iter()
                .find(|fork| fork.split('/').next() == Some(owner))
            else {
                return Reply::validation_failed(
                    json!([{"resource": "PullRequest", "field": "head", "code": "invalid"}]),
                );
            };
            (Some(fork.clone()), branch.to_owned())
        }
        None => (None, head),
    };
    let head_home = head_repo.clone().unwrap_or_else(|| repo.full_name.clone());
    if head == base {
        return Reply::validation_failed(json!([{
            "resource": "PullRequest",
            "code": "custom",
            "message": format!("No commits between {base} and {head}"),
        }]));
    }
    for (name, home, branch) in [
        ("head", &head_home, &head),
        ("base", &repo.full_name, &base),
    ] {
        if !branch_exists(home, branch) {
            return Reply::validation_failed(
                json!([{"resource": "PullRequest", "field": name, "code": "invalid"}]),
            );
        }
    }
    if repo
        .pulls
        .values()
        .any(|pull| pull.open && pull.head == head && pull.head_repo == head_repo)
    {
        let mut exists = github_fixture("error-422-pull-request-already-exists.json");
        let owner = head_home.split('/').next().unwrap_or_default();
        exists["errors"][0]["message"] =
            Value::String(format!("A pull request already exists for {owner}:{head}."));
        return Reply::json(422, exists);
    }
    let pull = FakePull {
        number: repo.next_number(),
        title,
        body: field("body").unwrap_or_default(),
        head,
        base,
        draft: body
            .and_then(|body| body["draft"].as_bool())
            .unwrap_or(false),
        open: true,
        author: caller.clone(),
        requested_reviewers: Vec::new(),
        requested_teams: Vec::new(),
        labels: Vec::new(),
        head_repo,
    };
    repo.pulls.insert(pull.number, pull.clone());
    Reply::json(201, pull_json(urls, repo, &pull)).with_header(
        "location",
        format!("{}/pulls/{}", urls.api_repo, pull.number),
    )
}

fn requested_labels(body: Option<&Value>) -> Option<Vec<String>> {
    let list = match body? {
        Value::Array(items) => items,
        Value::Object(fields) => fields.get("labels")?.as_array()?,
        _ => return None,
    };
    list.iter()
        .map(|item| {
            item.as_str()
                .or_else(|| item["name"].as_str())
                .map(str::to_owned)
        })
        .collect()
}

fn string_list(body: Option<&Value>, field: &str) -> Vec<String> {
    body.and_then(|body| body[field].as_array())
        .map(|items| {
            items
                .iter()
                .filter_map(|item| item.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// One page of `items` with GitHub's `Link` header; `kept` query pairs are repeated in links.
fn paginate(
    items: Vec<Value>,
    query: &HashMap<String, String>,
    max_page: usize,
    link_path: &str,
    kept: &[(&str, String)],
) -> Reply {
    let per_page = query
        .get("per_page")
        .and_then(|value| value.parse::<usize>().ok())
        .unwrap_or(30)
        .clamp(1, max_page.min(100));
    let page = query
        .get("page")
        .and_then(|value| value.parse::<usize>().ok())
        .unwrap_or(1)
        .max(1);
    let last = items.len().div_ceil(per_page).max(1);
    let slice: Vec<Value> = items
        .into_iter()
        .skip((page - 1) * per_page)
        .take(per_page)
        .collect();
    let extra: String = kept
        .iter()
        .map(|(name, value)| {
            format!(
                "{name}={}&",
                percent_encoding::utf8_percent_encode(value, percent_encoding::NON_ALPHANUMERIC)
            )
        })
        .collect();
    let link = |page: usize, rel: &str| {
        format!("<{link_path}?{extra}per_page={per_page}&page={page}>; rel=\"{rel}\"")
    };
    let mut links = Vec::new();
    if page > 1 {
        links.push(link(page - 1, "prev"));
    }
    if page < last {
        links.push(link(page + 1, "next"));
        links.push(link(last, "last"));
    }
    if page > 1 {
        links.push(link(1, "first"));
    }
    let reply = Reply::json(200, Value::Array(slice));
    if links.is_empty() {
        reply
    } else {
        reply.with_header("link", links.join(", "))
    }
}

/// The URLs of one repository, as the fixtures spell them.
struct Urls {
    base: String,
    /// `…/api/v3/repos/owner/name`
    api_repo: String,
    /// `…/api/v3/repositories/{id}`: where GitHub's page links point.
    by_id: String,
    /// `http://…/owner/name`: the browser's view.
    html_repo: String,
}

impl Urls {
    fn new(base_url: &str, repo: &FakeRepo) -> Urls {
        let api = format!("{base_url}{API_PREFIX}");
        Urls {
            base: base_url.to_owned(),
            api_repo: format!("{api}/repos/{}", repo.full_name),
            by_id: format!("{api}/repositories/{}", repo.id),
            html_repo: format!("{base_url}/{}", repo.full_name),
        }
    }
}

fn timestamp(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn legacy_permission(role: &str) -> &'static str {
    match role {
        "admin" => "admin",
        "maintain" | "write" => "write",
        "triage" | "read" => "read",
        _ => "none",
    }
}

fn user_json(base_url: &str, user: &FakeUser) -> Value {
    let api = format!("{base_url}{API_PREFIX}/users/{}", user.login);
    json!({
        "login": user.login,
        "id": user.id,
        "node_id": format!("MDQ6VXNlcj{}", user.id),
        "avatar_url": format!("{base_url}/avatars/{}", user.login),
        "gravatar_id": "",
        "url": api,
        "html_url": format!("{base_url}/{}", user.login),
        "type": if user.is_bot { "Bot" } else { "User" },
        "site_admin": false,
    })
}

fn owner_json(urls: &Urls, repo: &FakeRepo) -> Value {
    user_json(
        &urls.base,
        &FakeUser {
            login: repo.owner().to_owned(),
            id: 1,
            is_bot: false,
        },
    )
}

fn repo_json(urls: &Urls, repo: &FakeRepo) -> Value {
    let name = repo.full_name.split('/').nth(1).unwrap_or_default();
    let mut value = json!({
        "id": repo.id,
        "node_id": format!("MDEwOlJlcG9zaXRvcnk{}", repo.id),
        "name": name,
        "full_name": repo.full_name,
        "owner": owner_json(urls, repo),
        "private": false,
        "html_url": urls.html_repo,
        "description": null,
        "fork": false,
        "url": urls.api_repo,
        "issues_url": format!("{}/issues{{/number}}", urls.api_repo),
        "pulls_url": format!("{}/pulls{{/number}}", urls.api_repo),
        "clone_url": repo.clone_url,
        "default_branch": repo.default_branch,
        "archived": false,
        "disabled": false,
        "visibility": "public",
        "has_issues": true,
        "open_issues_count": repo.issues.values().filter(|issue| issue.open).count(),
        "permissions": {"admin": false, "push": true, "pull": true},
    });
    // A fork names the repository it was forked from, as GitHub's full repository does.
    if let Some(parent) = &repo.fork_of {
        let parent = json!({
            "full_name": parent,
            "name": parent.split('/').nth(1).unwrap_or_default(),
            "fork": false,
            "url": format!("{}{API_PREFIX}/repos/{parent}", urls.base),
            "html_url": format!("{}/{parent}", urls.base),
        });
        value["fork"] = json!(true);
        value["parent"] = parent.clone();
        value["source"] = parent;
    }
    value
}

fn label_json(urls: &Urls, name: &str) -> Value {
    // A stable id per name (FNV-1a), so the same label keeps its id across answers.
    let id = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    }) >> 33;
    json!({
        "id": id,
        "node_id": format!("MDU6TGFiZWw{id}"),
        "url": format!("{}/labels/{}", urls.api_repo, percent_encoding::utf8_percent_encode(name, percent_encoding::NON_ALPHANUMERIC)),
        "name": name,
        "description": null,
        "color": "ededed",
        "default": false,
    })
}

fn issue_json(urls: &Urls, repo: &FakeRepo, issue: &FakeIssue) -> Value {
    let api_issue = format!("{}/issues/{}", urls.api_repo, issue.number);
    let comments = repo
        .comments
        .iter()
        .filter(|comment| comment.issue == issue.number)
        .count();
    json!({
        "id": issue.number + repo.id * 100_000,
        "node_id": format!("MDU6SXNzdWU{}", issue.number),
        "url": api_issue,
        "repository_url": urls.api_repo,
        "labels_url": format!("{api_issue}/labels{{/name}}"),
        "comments_url": format!("{api_issue}/comments"),
        "events_url": format!("{api_issue}/events"),
        "html_url": format!("{}/issues/{}", urls.html_repo, issue.number),
        "number": issue.number,
        "state": if issue.open { "open" } else { "closed" },
        "title": issue.title,
        "body": issue.body,
        "user": user_json(&urls.base, &issue.author),
        "labels": issue.labels.iter().map(|name| label_json(urls, name)).collect::<Vec<_>>(),
        "assignee": null,
        "assignees": [],
        "milestone": null,
        "locked": issue.locked,
        "active_lock_reason": if issue.locked { Value::from("too heated") } else { Value::Null },
        "comments": comments,
        "closed_at": null,
        "created_at": "2011-04-22T13:33:48Z",
        "updated_at": "2011-04-22T13:33:48Z",
        "author_association": "NONE",
    })
}

fn comment_json(urls: &Urls, comment: &FakeComment) -> Value {
    json!({
        "id": comment.id,
        "node_id": format!("MDEyOklzc3VlQ29tbWVudD{}", comment.id),
        "url": format!("{}/issues/comments/{}", urls.api_repo, comment.id),
        "html_url": format!("{}/issues/{}#issuecomment-{}", urls.html_repo, comment.issue, comment.id),
        "body": comment.body,
        "user": user_json(&urls.base, &comment.author),
        "created_at": timestamp(comment.created_at),
        "updated_at": timestamp(comment.updated_at),
        "issue_url": format!("{}/issues/{}", urls.api_repo, comment.issue),
        "author_association": if comment.author.is_bot { "NONE" } else { "COLLABORATOR" },
    })
}

fn branch_json(urls: &Urls, repo: &FakeRepo, branch: &str) -> Value {
    json!({
        "label": format!("{}:{branch}", repo.owner()),
        "ref": branch,
        "sha": "6dcb09b5b57875f334f61aebed695e2e4193db5e",
        "user": owner_json(urls, repo),
        "repo": repo_json(urls, repo),
    })
}

/// A pull request's head: a branch of `repo`, or of the fork it lives in (`owner:branch`).
fn head_json(urls: &Urls, repo: &FakeRepo, pull: &FakePull) -> Value {
    let mut head = branch_json(urls, repo, &pull.head);
    if let Some(fork) = &pull.head_repo {
        let owner = pull.head_owner(repo);
        head["label"] = json!(format!("{owner}:{}", pull.head));
        head["user"]["login"] = json!(owner);
        head["repo"]["full_name"] = json!(fork);
        head["repo"]["fork"] = json!(true);
        head["repo"]["owner"]["login"] = json!(owner);
    }
    head
}

fn pull_json(urls: &Urls, repo: &FakeRepo, pull: &FakePull) -> Value {
    let api_pull = format!("{}/pulls/{}", urls.api_repo, pull.number);
    let api_issue = format!("{}/issues/{}", urls.api_repo, pull.number);
    let html = format!("{}/pull/{}", urls.html_repo, pull.number);
    let reviewer = |login: &String| {
        user_json(
            &urls.base,
            &FakeUser {
                login: login.clone(),
                id: 0,
                is_bot: false,
            },
        )
    };
    json!({
        "url": api_pull,
        "id": pull.number + repo.id * 100_000,
        "node_id": format!("MDExOlB1bGxSZXF1ZXN0{}", pull.number),
        "html_url": html,
        "diff_url": format!("{html}.diff"),
        "patch_url": format!("{html}.patch"),
        "issue_url": api_issue,
        "commits_url": format!("{api_pull}/commits"),
        "comments_url": format!("{api_issue}/comments"),
        "number": pull.number,
        "state": if pull.open { "open" } else { "closed" },
        "locked": false,
        "title": pull.title,
        "user": user_json(&urls.base, &pull.author),
        "body": pull.body,
        "labels": pull.labels.iter().map(|name| label_json(urls, name)).collect::<Vec<_>>(),
        "milestone": null,
        "created_at": "2011-01-26T19:01:12Z",
        "updated_at": "2011-01-26T19:01:12Z",
        "closed_at": null,
        "merged_at": null,
        "assignee": null,
        "assignees": [],
        "requested_reviewers": pull.requested_reviewers.iter().map(reviewer).collect::<Vec<_>>(),
        "requested_teams": pull.requested_teams.iter().map(|slug| json!({"slug": slug, "name": slug})).collect::<Vec<_>>(),
        "head": head_json(urls, repo, pull),
        "base": branch_json(urls, repo, &pull.base),
        "author_association": "NONE",
        "draft": pull.draft,
        "_links": {"html": {"href": html}, "self": {"href": api_pull}},
    })
}

async fn create_app_page(
    AxumState(state): AxumState<Shared>,
    Query(query): Query<HashMap<String, String>>,
    axum::Form(form): axum::Form<HashMap<String, String>>,
) -> Response {
    created_app_redirect(&state, None, &query, &form)
}

async fn create_org_app_page(
    AxumState(state): AxumState<Shared>,
    axum::extract::Path(org): axum::extract::Path<String>,
    Query(query): Query<HashMap<String, String>>,
    axum::Form(form): axum::Form<HashMap<String, String>>,
) -> Response {
    created_app_redirect(&state, Some(org), &query, &form)
}

/// The person confirmed the App at once: back to `redirect_url` with a code and the `state`.
fn created_app_redirect(
    shared: &Shared,
    organization: Option<String>,
    query: &HashMap<String, String>,
    form: &HashMap<String, String>,
) -> Response {
    let Some(manifest) = form
        .get("manifest")
        .and_then(|text| serde_json::from_str::<Value>(text).ok())
    else {
        return Response::builder()
            .status(422)
            .body(Body::from("Invalid GitHub App configuration: no manifest"))
            .expect("a response builds");
    };
    let Some(redirect) = manifest["redirect_url"].as_str().map(str::to_owned) else {
        return Response::builder()
            .status(422)
            .body(Body::from(
                "Invalid GitHub App configuration: no redirect_url",
            ))
            .expect("a response builds");
    };
    let mut state = lock(shared);
    let code = format!("manifest-code-{}", state.new_id());
    let state_param = query.get("state").cloned().unwrap_or_default();
    state.manifests.push(ManifestSeen {
        manifest,
        state: state_param.clone(),
        organization,
        code: code.clone(),
        app_id: None,
    });
    let separator = if redirect.contains('?') { '&' } else { '?' };
    Response::builder()
        .status(302)
        .header(
            "location",
            format!("{redirect}{separator}code={code}&state={state_param}"),
        )
        .body(Body::empty())
        .expect("a response builds")
}

/// `POST /app-manifests/{code}/conversions`: the App, in the documented shape, once per code;
/// its key is the test App key, so the fake accepts the new App's JWTs.
fn convert_manifest(state: &mut State, code: &str) -> Reply {
    let Some(index) = state
        .manifests
        .iter()
        .position(|seen| seen.code == code && seen.app_id.is_none())
    else {
        return Reply::not_found();
    };
    let id = state.new_id();
    let name = state.manifests[index].manifest["name"]
        .as_str()
        .unwrap_or("app")
        .to_owned();
    let slug = format!("{}-{id}", name.to_lowercase().replace(' ', "-"));
    state.manifests[index].app_id = Some(id);
    state.set_app_in_place(id, &slug);
    let mut answer = github_fixture("apps-create-from-manifest.json");
    answer["id"] = json!(id);
    answer["slug"] = json!(slug);
    answer["name"] = json!(name);
    answer["html_url"] = json!(format!("{}/apps/{slug}", state.base_url));
    answer["webhook_secret"] = json!(format!("whsec-{id}"));
    answer["client_secret"] = json!(format!("client-secret-{id}"));
    answer["pem"] = json!(String::from_utf8(test_app_private_key()).expect("the test key is text"));
    Reply::json(201, answer)
}
