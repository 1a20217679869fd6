//! A stateful fake GitLab for tests: REST v4 under `/api/v4` in the shapes of the recorded docs
//! examples (`tests/data/gitlab/`), with projects, members, issues, notes and merge requests.
//!
//! ```ignore
//! let gitlab = FakeGitLab::start(axum::Router::new());
//! gitlab.project("acme/widgets").member("alice", 30).issue(7, "Parsing fails").labels(&["bug"]);
//! // point GitLabClient at gitlab.api_url() with gitlab.token()
//! assert_eq!(gitlab.notes("acme/widgets", 7).len(), 1);
//! ```
//!
//! Every request needs the token (`PRIVATE-TOKEN` or `Authorization: Bearer`), else 401. Every
//! request is recorded with the status it got; a route GitLab does not have is answered 404 and
//! noted as unexpected, which `assert_no_unexpected()` (also run on drop) turns into a failure.
//! Fault switches (`fail_next`, `delay_next`) answer matching requests before any other logic.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State as AxumState;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::Response;
use secrecy::SecretString;
use serde_json::{Value, json};

use super::fake_log::FakeLog;
use super::served::{Runtime, Served};

/// The token the fake accepts unless a test changes it.
pub const DEFAULT_TOKEN: &str = "glpat-fake-0123456789abcdef";
/// The user the token belongs to.
pub const BOT_USERNAME: &str = "autofix-bot";

const API_PREFIX: &str = "/api/v4";
/// Every timestamp the fake writes: the tests compare shapes, not times.
const TIMESTAMP: &str = "2026-01-02T03:04:05.000Z";
const DEFAULT_PER_PAGE: usize = 20;
const MAX_PER_PAGE: usize = 100;

/// Reads a recorded GitLab docs example from `tests/data/gitlab/`, e.g. `"api/get_issue.json"`.
pub fn gitlab_fixture(relative: &str) -> String {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/gitlab")
        .join(relative);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|err| panic!("cannot read the fixture {}: {err}", path.display()))
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeUser {
    pub id: u64,
    pub username: String,
    pub name: String,
    pub bot: bool,
}

#[derive(Debug, Clone)]
pub struct FakeProject {
    pub id: u64,
    pub path_with_namespace: String,
    /// `None` for an empty repository.
    pub default_branch: Option<String>,
    pub http_url_to_repo: String,
    /// User id → access level (10 Guest … 50 Owner), inherited membership included.
    pub members: BTreeMap<u64, u64>,
    pub issues: BTreeMap<u64, FakeIssue>,
    pub merge_requests: Vec<FakeMergeRequest>,
    /// CI pipelines, oldest first.
    pub pipelines: Vec<FakePipeline>,
    /// The id of the project this one is a fork of.
    pub forked_from: Option<u64>,
    /// `none`, or for a fork `scheduled` → `started` → `finished` as its copy goes on.
    pub import_status: String,
    /// Lookups of a new fork that still find its copy under way.
    pub copy_pending: u32,
    /// `group`, or `user` for a project in a user's own namespace (the bot's fork).
    pub namespace_kind: String,
}

/// A finished pipeline of a commit on a ref, with its jobs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakePipeline {
    pub id: u64,
    pub git_ref: String,
    pub sha: String,
    /// `success` or `failed`.
    pub status: String,
    pub jobs: Vec<FakeJob>,
}

/// One job of a pipeline, with its trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeJob {
    pub id: u64,
    pub name: String,
    pub stage: String,
    /// `success` or `failed`.
    pub status: String,
    pub trace: FakeLog,
}

#[derive(Debug, Clone)]
pub struct FakeIssue {
    pub id: u64,
    pub iid: u64,
    pub title: String,
    pub description: Option<String>,
    pub labels: Vec<String>,
    /// `opened` or `closed`.
    pub state: String,
    pub discussion_locked: bool,
    pub author: u64,
    pub notes: Vec<FakeNote>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeNote {
    pub id: u64,
    pub body: String,
    pub author: u64,
    /// Notes GitLab writes itself, such as "added ~bug label".
    pub system: bool,
    /// How many times the note was edited through the API.
    pub edits: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeMergeRequest {
    pub id: u64,
    pub iid: u64,
    pub title: String,
    pub description: String,
    pub source_branch: String,
    pub target_branch: String,
    pub draft: bool,
    /// `opened`, `closed` or `merged`.
    pub state: String,
    pub labels: Vec<String>,
    pub reviewer_ids: Vec<u64>,
    pub author: u64,
    /// The notes on the merge request, oldest first.
    pub notes: Vec<FakeNote>,
    /// The project the source branch lives in when it is not this one (a fork's id).
    pub source_project_id: Option<u64>,
}

/// One request as the fake saw it, with the status it answered.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub method: Method,
    /// As sent, still percent-encoded (`/api/v4/projects/acme%2Fwidgets/issues/7`).
    pub path: String,
    pub query: Option<String>,
    pub headers: HeaderMap,
    /// The body parsed as JSON; `Value::Null` when empty or not JSON.
    pub body: Value,
    pub status: u16,
}

impl RecordedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The value of one query parameter, decoded.
    pub fn query_param(&self, name: &str) -> Option<String> {
        parse_query(self.query.as_deref().unwrap_or_default())
            .into_iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value)
    }
}

/// Says whether `branch` exists in the project at `path`.
pub type BranchLookup = Arc<dyn Fn(&str, &str) -> bool + Send + Sync>;

/// Copies a project's repository into a new fork (base and fork paths).
pub type Forker = Arc<dyn Fn(&str, &str) + Send + Sync>;

#[derive(Debug, Clone)]
enum FaultAction {
    Respond {
        status: u16,
        body: String,
        headers: Vec<(String, String)>,
    },
    Delay(Duration),
}

#[derive(Debug, Clone)]
struct Fault {
    method: Method,
    path_substring: String,
    remaining: usize,
    action: FaultAction,
}

/// Everything the fake knows; `FakeGitLab::state()` gives tests the lock.
pub struct GitLabState {
    pub token: String,
    /// What `GET /personal_access_tokens/self` says the token may do.
    pub token_scopes: Vec<String>,
    pub bot_user_id: u64,
    pub users: Vec<FakeUser>,
    pub projects: Vec<FakeProject>,
    pub requests: Vec<RecordedRequest>,
    pub unexpected: Vec<String>,
    faults: Vec<Fault>,
    branch_lookup: BranchLookup,
    next_id: u64,
    base_url: String,
    /// Makes a fork's repository; without one, a fork request is refused (403).
    pub forker: Option<Forker>,
    /// How many lookups of a new fork find its copy still under way.
    pub fork_copy_looks: u32,
}

impl GitLabState {
    fn new(base_url: String) -> GitLabState {
        let mut state = GitLabState {
            token: DEFAULT_TOKEN.to_owned(),
            token_scopes: vec!["api".to_owned()],
            bot_user_id: 0,
            users: Vec::new(),
            projects: Vec::new(),
            requests: Vec::new(),
            unexpected: Vec::new(),
            faults: Vec::new(),
            branch_lookup: Arc::new(|_, _| true),
            next_id: 1,
            base_url,
            forker: None,
            fork_copy_looks: 2,
        };
        state.bot_user_id = state.add_user(BOT_USERNAME, true);
        state
    }

    fn fresh_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    fn add_user(&mut self, username: &str, bot: bool) -> u64 {
        let id = self.fresh_id();
        self.users.push(FakeUser {
            id,
            username: username.to_owned(),
            name: username.replace(['-', '_', '.'], " "),
            bot,
        });
        id
    }

    /// The user's id, creating a human user of that name when there is none.
    pub fn user_id(&mut self, username: &str) -> u64 {
        match self.users.iter().find(|user| user.username == username) {
            Some(user) => user.id,
            None => self.add_user(username, false),
        }
    }

    pub fn user(&self, id: u64) -> Option<&FakeUser> {
        self.users.iter().find(|user| user.id == id)
    }

    pub fn project(&self, path: &str) -> Option<&FakeProject> {
        self.projects
            .iter()
            .find(|project| project.path_with_namespace == path)
    }

    /// The project at `path`; panics with the known paths when there is none.
    pub fn project_mut(&mut self, path: &str) -> &mut FakeProject {
        let known: Vec<_> = self
            .projects
            .iter()
            .map(|project| project.path_with_namespace.clone())
            .collect();
        self.projects
            .iter_mut()
            .find(|project| project.path_with_namespace == path)
            .unwrap_or_else(|| panic!("the fake GitLab has no project {path}; it has {known:?}"))
    }

    pub fn issue_mut(&mut self, path: &str, iid: u64) -> &mut FakeIssue {
        self.project_mut(path)
            .issues
            .get_mut(&iid)
            .unwrap_or_else(|| panic!("the fake GitLab has no issue #{iid} in {path}"))
    }

    fn take_fault(&mut self, method: &Method, target: &str) -> Option<FaultAction> {
        let at = self.faults.iter().position(|fault| {
            fault.remaining > 0 && fault.method == *method && target.contains(&fault.path_substring)
        })?;
        let fault = &mut self.faults[at];
        fault.remaining -= 1;
        let action = fault.action.clone();
        if fault.remaining == 0 {
            self.faults.remove(at);
        }
        Some(action)
    }
}

type Shared = Arc<Mutex<GitLabState>>;

/// The running fake; stops (and checks nothing unexpected was asked) when dropped.
pub struct FakeGitLab {
    state: Shared,
    server: Served,
}

impl FakeGitLab {
    /// Starts the fake on `127.0.0.1` at a free port, on its own thread, serving `git_routes`
    /// (a git smart-HTTP router for the projects' remotes) beside the API.
    pub fn start(git_routes: axum::Router) -> FakeGitLab {
        let state: Shared = Arc::new(Mutex::new(GitLabState::new(String::new())));
        let app_state = state.clone();
        let server = Served::start("fake-gitlab", Runtime::CurrentThread, move |address| {
            lock(&app_state).base_url = format!("http://{address}");
            let api = axum::Router::new().fallback(answer).with_state(app_state);
            git_routes.merge(api)
        });
        FakeGitLab { state, server }
    }

    /// The host root, e.g. `http://127.0.0.1:41234`.
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// `…/api/v4`: what `GitLabClient` is given.
    pub fn api_url(&self) -> String {
        format!("{}{API_PREFIX}", self.url())
    }

    pub fn token(&self) -> SecretString {
        SecretString::from(self.state().token.clone())
    }

    /// Makes the fake accept only `token` from now on.
    pub fn set_token(&self, token: &str) {
        self.state().token = token.to_owned();
    }

    /// The scopes the token is said to have (`api` unless a test changes it).
    pub fn set_token_scopes(&self, scopes: &[&str]) {
        self.state().token_scopes = scopes.iter().map(|scope| scope.to_string()).collect();
    }

    /// The account the token belongs to.
    pub fn bot(&self) -> FakeUser {
        let state = self.state();
        state
            .user(state.bot_user_id)
            .cloned()
            .expect("the bot user exists")
    }

    /// The id of the human user `username`, created on first mention.
    pub fn user(&self, username: &str) -> u64 {
        self.state().user_id(username)
    }

    /// The id of the bot account `username` (`"bot": true` in `/users`), created on first mention.
    pub fn bot_account(&self, username: &str) -> u64 {
        let mut state = self.state();
        if let Some(user) = state.users.iter().find(|user| user.username == username) {
            return user.id;
        }
        state.add_user(username, true)
    }

    /// The project at `path` (created on first mention with default branch `main` and the clone
    /// URL `{url}/{path}.git`), to configure further.
    pub fn project(&self, path: &str) -> ProjectHandle<'_> {
        let mut state = self.state();
        if state.project(path).is_none() {
            let id = state.fresh_id();
            let http_url_to_repo = format!("{}/{path}.git", state.base_url);
            state.projects.push(FakeProject {
                id,
                path_with_namespace: path.to_owned(),
                default_branch: Some("main".to_owned()),
                http_url_to_repo,
                members: BTreeMap::new(),
                issues: BTreeMap::new(),
                merge_requests: Vec::new(),
                pipelines: Vec::new(),
                forked_from: None,
                import_status: "none".to_owned(),
                copy_pending: 0,
                namespace_kind: "group".to_owned(),
            });
        }
        ProjectHandle {
            fake: self,
            path: path.to_owned(),
        }
    }

    /// The issue `iid` of the project at `path`, to configure further (must exist).
    pub fn issue(&self, path: &str, iid: u64) -> IssueHandle<'_> {
        self.state().issue_mut(path, iid);
        IssueHandle {
            fake: self,
            path: path.to_owned(),
            iid,
        }
    }

    /// Gives `username` the access `level` in the project at `path`.
    pub fn member(&self, path: &str, username: &str, level: u64) {
        let mut state = self.state();
        let user = state.user_id(username);
        state.project_mut(path).members.insert(user, level);
    }

    /// The notes people (and the bot) wrote on the issue, oldest first; system notes left out.
    pub fn notes(&self, path: &str, iid: u64) -> Vec<FakeNote> {
        self.all_notes(path, iid)
            .into_iter()
            .filter(|note| !note.system)
            .collect()
    }

    /// Every note on the issue, system notes included, oldest first.
    pub fn all_notes(&self, path: &str, iid: u64) -> Vec<FakeNote> {
        self.state().issue_mut(path, iid).notes.clone()
    }

    pub fn labels(&self, path: &str, iid: u64) -> Vec<String> {
        self.state().issue_mut(path, iid).labels.clone()
    }

    /// A finished pipeline of `sha` on `git_ref` whose jobs are `(name, status, trace)` in the
    /// `test` stage; its id.
    pub fn pipeline<Log: Clone + Into<FakeLog>>(
        &self,
        path: &str,
        (git_ref, sha): (&str, &str),
        jobs: &[(&str, &str, Log)],
    ) -> u64 {
        let mut state = self.state();
        let id = state.fresh_id();
        let jobs: Vec<FakeJob> = jobs
            .iter()
            .map(|(name, status, trace)| FakeJob {
                id: state.fresh_id(),
                name: (*name).to_owned(),
                stage: "test".to_owned(),
                status: (*status).to_owned(),
                trace: trace.clone().into(),
            })
            .collect();
        let status = if jobs.iter().any(|job| job.status == "failed") {
            "failed"
        } else {
            "success"
        };
        state.project_mut(path).pipelines.push(FakePipeline {
            id,
            git_ref: git_ref.to_owned(),
            sha: sha.to_owned(),
            status: status.to_owned(),
            jobs,
        });
        id
    }

    pub fn merge_requests(&self, path: &str) -> Vec<FakeMergeRequest> {
        self.state().project_mut(path).merge_requests.clone()
    }

    /// Every request so far, in arrival order (each retry is its own request).
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.state().requests.clone()
    }

    /// The requests whose method is `method` and whose path contains `path_substring`.
    pub fn requests_to(&self, method: &str, path_substring: &str) -> Vec<RecordedRequest> {
        let method = parse_method(method);
        self.requests()
            .into_iter()
            .filter(|request| request.method == method && request.path.contains(path_substring))
            .collect()
    }

    /// Answers the next `times` requests matching `method` and `path_substring` (tested against
    /// the path as sent, query included) with exactly this status, body and headers.
    pub fn fail_next(
        &self,
        method: &str,
        path_substring: &str,
        status: u16,
        body: Value,
        headers: &[(&str, &str)],
        times: usize,
    ) {
        self.fail_next_raw(
            method,
            path_substring,
            status,
            &body.to_string(),
            headers,
            times,
        );
    }

    /// [`FakeGitLab::fail_next`] with a body that need not be JSON (an HTML error page).
    pub fn fail_next_raw(
        &self,
        method: &str,
        path_substring: &str,
        status: u16,
        body: &str,
        headers: &[(&str, &str)],
        times: usize,
    ) {
        let headers = headers
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect();
        let body = body.to_owned();
        self.add_fault(
            method,
            path_substring,
            times,
            FaultAction::Respond {
                status,
                body,
                headers,
            },
        );
    }

    /// Holds back the next `times` matching requests for `delay` before answering them normally.
    pub fn delay_next(&self, method: &str, path_substring: &str, delay: Duration, times: usize) {
        self.add_fault(method, path_substring, times, FaultAction::Delay(delay));
    }

    fn add_fault(&self, method: &str, path_substring: &str, times: usize, action: FaultAction) {
        self.state().faults.push(Fault {
            method: parse_method(method),
            path_substring: path_substring.to_owned(),
            remaining: times,
            action,
        });
    }

    /// Lets the token's user fork: `forker` copies the repository once the copy is done.
    pub fn set_forker(&self, forker: Forker) {
        self.state().forker = Some(forker);
    }

    /// The paths of the forks of the project at `path`.
    pub fn forks_of(&self, path: &str) -> Vec<String> {
        let state = self.state();
        let Some(base) = state.project(path).map(|project| project.id) else {
            return Vec::new();
        };
        state
            .projects
            .iter()
            .filter(|project| project.forked_from == Some(base))
            .map(|project| project.path_with_namespace.clone())
            .collect()
    }

    /// Decides which branches exist when a merge request is opened (default: every branch).
    pub fn set_branch_lookup(&self, lookup: impl Fn(&str, &str) -> bool + Send + Sync + 'static) {
        self.state().branch_lookup = Arc::new(lookup);
    }

    /// Panics listing the requests to routes GitLab does not have.
    pub fn assert_no_unexpected(&self) {
        let unexpected = self.state().unexpected.clone();
        assert!(
            unexpected.is_empty(),
            "the fake GitLab got requests it does not serve:\n  {}",
            unexpected.join("\n  ")
        );
    }

    /// The lock on everything the fake knows, for what the helpers above do not cover.
    pub fn state(&self) -> MutexGuard<'_, GitLabState> {
        lock(&self.state)
    }
}

impl Drop for FakeGitLab {
    fn drop(&mut self) {
        self.server.stop();
        if !std::thread::panicking() {
            self.assert_no_unexpected();
        }
    }
}

/// A project of the fake, configured by chaining.
pub struct ProjectHandle<'a> {
    fake: &'a FakeGitLab,
    path: String,
}

impl<'a> ProjectHandle<'a> {
    pub fn id(&self) -> u64 {
        self.fake.state().project_mut(&self.path).id
    }

    /// `None` makes it an empty repository.
    pub fn default_branch(self, branch: Option<&str>) -> Self {
        self.fake.state().project_mut(&self.path).default_branch = branch.map(str::to_owned);
        self
    }

    pub fn clone_url(self, url: &str) -> Self {
        self.fake.state().project_mut(&self.path).http_url_to_repo = url.to_owned();
        self
    }

    /// Gives `username` the access `level` (10 Guest, 20 Reporter, 30 Developer, 40 Maintainer, 50 Owner).
    pub fn member(self, username: &str, level: u64) -> Self {
        self.fake.member(&self.path, username, level);
        self
    }

    /// Adds an open issue `iid` written by `reporter`, with a description and no labels.
    pub fn issue(self, iid: u64, title: &str) -> IssueHandle<'a> {
        let mut state = self.fake.state();
        let author = state.user_id("reporter");
        let id = state.fresh_id();
        state.project_mut(&self.path).issues.insert(
            iid,
            FakeIssue {
                id,
                iid,
                title: title.to_owned(),
                description: Some(format!("{title}: steps to reproduce follow.")),
                labels: Vec::new(),
                state: "opened".to_owned(),
                discussion_locked: false,
                author,
                notes: Vec::new(),
            },
        );
        IssueHandle {
            fake: self.fake,
            path: self.path,
            iid,
        }
    }

    /// Adds an open merge request from `source_branch` into the default branch, by `author`.
    pub fn merge_request(self, source_branch: &str, title: &str, author: &str) -> Self {
        self.open_merge_request(author, source_branch, title, "", false);
        self
    }

    /// An open merge request into the default branch from `source_branch` of `username`'s fork,
    /// opened by `username` with `description`. Its iid.
    pub fn merge_request_from_fork(
        self,
        username: &str,
        source_branch: &str,
        title: &str,
        description: &str,
    ) -> u64 {
        self.open_merge_request(username, source_branch, title, description, true)
    }

    fn open_merge_request(
        &self,
        username: &str,
        source_branch: &str,
        title: &str,
        description: &str,
        from_a_fork: bool,
    ) -> u64 {
        let mut state = self.fake.state();
        let author = state.user_id(username);
        let id = state.fresh_id();
        let source_project_id = from_a_fork.then(|| state.fresh_id() + 1_000_000);
        let project = state.project_mut(&self.path);
        let iid = next_merge_request_iid(project);
        let target_branch = project
            .default_branch
            .clone()
            .unwrap_or_else(|| "main".into());
        project.merge_requests.push(FakeMergeRequest {
            id,
            iid,
            title: title.to_owned(),
            description: description.to_owned(),
            source_branch: source_branch.to_owned(),
            target_branch,
            draft: is_draft_title(title),
            state: "opened".to_owned(),
            labels: Vec::new(),
            reviewer_ids: Vec::new(),
            author,
            notes: Vec::new(),
            source_project_id,
        });
        iid
    }
}

/// An issue of the fake, configured by chaining.
pub struct IssueHandle<'a> {
    fake: &'a FakeGitLab,
    path: String,
    iid: u64,
}

impl IssueHandle<'_> {
    fn edit(self, change: impl FnOnce(&mut FakeIssue)) -> Self {
        change(self.fake.state().issue_mut(&self.path, self.iid));
        self
    }

    /// `None` is an issue created without a description (`"description": null`).
    pub fn description(self, text: Option<&str>) -> Self {
        self.edit(|issue| issue.description = text.map(str::to_owned))
    }

    pub fn labels(self, labels: &[&str]) -> Self {
        self.edit(|issue| issue.labels = labels.iter().map(|l| l.to_string()).collect())
    }

    pub fn closed(self) -> Self {
        self.edit(|issue| issue.state = "closed".to_owned())
    }

    pub fn locked(self) -> Self {
        self.edit(|issue| issue.discussion_locked = true)
    }

    pub fn author(self, username: &str) -> Self {
        let author = self.fake.user(username);
        self.edit(|issue| issue.author = author)
    }

    /// A note by `username`.
    pub fn comment(self, username: &str, body: &str) -> Self {
        let author = self.fake.user(username);
        self.add_note(author, body, false)
    }

    /// A note by `username`, its id.
    pub fn note_by(self, username: &str, body: &str) -> u64 {
        let author = self.fake.user(username);
        let mut state = self.fake.state();
        let id = state.fresh_id();
        state.issue_mut(&self.path, self.iid).notes.push(FakeNote {
            id,
            body: body.to_owned(),
            author,
            system: false,
            edits: 0,
        });
        id
    }

    /// A note GitLab itself wrote (`"system": true`).
    pub fn system_note(self, body: &str) -> Self {
        let author = self.fake.user("reporter");
        self.add_note(author, body, true)
    }

    fn add_note(self, author: u64, body: &str, system: bool) -> Self {
        let mut state = self.fake.state();
        let id = state.fresh_id();
        state.issue_mut(&self.path, self.iid).notes.push(FakeNote {
            id,
            body: body.to_owned(),
            author,
            system,
            edits: 0,
        });
        drop(state);
        self
    }
}

/// A test that panicked while holding the lock must not hide its own failure behind ours.
fn lock(state: &Shared) -> MutexGuard<'_, GitLabState> {
    state
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn parse_method(method: &str) -> Method {
    Method::from_bytes(method.to_ascii_uppercase().as_bytes())
        .unwrap_or_else(|_| panic!("{method:?} is not an HTTP method"))
}

/// What one route answers: status, extra headers, JSON body.
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
    /// A job's trace, sent instead of `body`.
    log: Option<FakeLog>,
}

impl Answer {
    fn ok(body: Value) -> Answer {
        Answer::status(200, body)
    }

    fn status(status: u16, body: Value) -> Answer {
        Answer {
            status,
            headers: Vec::new(),
            body: body.to_string(),
            log: None,
        }
    }

    fn message(status: u16, message: &str) -> Answer {
        Answer::status(status, json!({ "message": message }))
    }

    fn missing_parameter(name: &str) -> Answer {
        Answer::status(400, json!({ "error": format!("{name} is missing") }))
    }
}

async fn answer(
    AxumState(state): AxumState<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let target = match uri.query() {
        Some(query) => format!("{}?{query}", uri.path()),
        None => uri.path().to_owned(),
    };
    let fault = lock(&state).take_fault(&method, &target);
    let answer = match fault {
        Some(FaultAction::Respond {
            status,
            body,
            headers,
        }) => Answer {
            status,
            headers,
            body,
            log: None,
        },
        Some(FaultAction::Delay(delay)) => {
            tokio::time::sleep(delay).await;
            serve_api(&state, &method, &uri, &headers, &body)
        }
        None => serve_api(&state, &method, &uri, &headers, &body),
    };
    lock(&state).requests.push(RecordedRequest {
        method,
        path: uri.path().to_owned(),
        query: uri.query().map(str::to_owned),
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        status: answer.status,
    });
    render(answer)
}

fn render(answer: Answer) -> Response {
    let body = match &answer.log {
        Some(log) => log.body(),
        None => Body::from(answer.body),
    };
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::from_u16(answer.status)
        .unwrap_or_else(|_| panic!("the fake GitLab was told to answer {}", answer.status));
    response
        .headers_mut()
        .insert("content-type", HeaderValue::from_static("application/json"));
    for (name, value) in &answer.headers {
        let name = HeaderName::from_bytes(name.as_bytes())
            .unwrap_or_else(|_| panic!("invalid header name {name:?} for the fake GitLab"));
        let value = HeaderValue::from_str(value)
            .unwrap_or_else(|_| panic!("invalid value for {name} in the fake GitLab"));
        response.headers_mut().insert(name, value);
    }
    response
}

fn serve_api(
    state: &Shared,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &Bytes,
) -> Answer {
    let mut state = lock(state);
    let described = format!("{method} {}", uri);
    let Some(rest) = uri.path().strip_prefix(API_PREFIX) else {
        state.unexpected.push(described);
        return Answer::message(404, "404 Not Found");
    };
    if !authorized(&state.token, headers) {
        return Answer::message(401, "401 Unauthorized");
    }
    let body = if body.is_empty() {
        json!({})
    } else {
        match serde_json::from_slice::<Value>(body) {
            Ok(body) => body,
            Err(_) => return Answer::status(400, json!({"error": "the body is not JSON"})),
        }
    };
    let segments: Vec<String> = rest
        .trim_start_matches('/')
        .split('/')
        .map(percent_decode)
        .collect();
    let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
    let query = parse_query(uri.query().unwrap_or_default());
    let request = ApiRequest {
        query: &query,
        body: &body,
    };
    match route(&mut state, method, &segments, &request) {
        Some(answer) => answer,
        None => {
            state.unexpected.push(described);
            Answer::message(404, "404 Not Found")
        }
    }
}

fn authorized(token: &str, headers: &HeaderMap) -> bool {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let bearer = header("authorization").and_then(|v| v.strip_prefix("Bearer "));
    header("private-token") == Some(token) || bearer == Some(token)
}

struct ApiRequest<'a> {
    query: &'a [(String, String)],
    body: &'a Value,
}

impl ApiRequest<'_> {
    fn query(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    fn text(&self, name: &str) -> Option<&str> {
        self.body[name].as_str()
    }
}

/// `None` for a route GitLab does not have.
fn route(
    state: &mut GitLabState,
    method: &Method,
    segments: &[&str],
    request: &ApiRequest,
) -> Option<Answer> {
    let get = method == Method::GET;
    let post = method == Method::POST;
    let put = method == Method::PUT;
    Some(match segments {
        ["user"] if get => Answer::ok(user_json(state, state.bot_user_id, true)),
        // "Get single personal access token" for `self`, in the docs' example shape.
        ["personal_access_tokens", "self"] if get => Answer::ok(json!({
            "id": 4,
            "name": "autofix",
            "revoked": false,
            "created_at": TIMESTAMP,
            "description": "",
            "scopes": state.token_scopes,
            "user_id": state.bot_user_id,
            "last_used_at": TIMESTAMP,
            "active": true,
            "expires_at": null,
        })),
        ["users"] if get => find_users(state, request),
        ["projects", project] if get => get_project(state, project),
        ["projects", project, "forks"] if get => list_forks(state, project, request),
        ["projects", project, "fork"] if post => create_fork(state, project),
        ["projects", project, "members", "all", user] if get => member(state, project, user),
        ["projects", project, "issues", iid] if get => {
            with_issue(state, project, iid, |state, project, issue| {
                Answer::ok(issue_json(state, project, issue))
            })
        }
        ["projects", project, "issues", iid] if put => edit_issue(state, project, iid, request),
        ["projects", project, "issues", iid, "notes"] if get => {
            list_notes(state, project, iid, request)
        }
        ["projects", project, "issues", iid, "notes"] if post => {
            create_note(state, project, iid, request)
        }
        ["projects", project, "issues", iid, "notes", note] if put => {
            edit_note(state, project, iid, note, request)
        }
        ["projects", project, "merge_requests"] if get => {
            list_merge_requests(state, project, request)
        }
        ["projects", project, "merge_requests"] if post => {
            create_merge_request(state, project, request)
        }
        ["projects", project, "pipelines"] if get => list_pipelines(state, project, request),
        ["projects", project, "pipelines", id, "jobs"] if get => {
            list_pipeline_jobs(state, project, id, request)
        }
        ["projects", project, "jobs", id, "trace"] if get => job_trace(state, project, id),
        ["projects", project, "merge_requests", iid, "notes"] if get => {
            list_merge_request_notes(state, project, iid, request)
        }
        ["projects", project, "merge_requests", iid, "notes"] if post => {
            create_merge_request_note(state, project, iid, request)
        }
        _ => return None,
    })
}

/// A project by numeric id or by full path, as GitLab accepts both.
fn project_index(state: &GitLabState, id: &str) -> Option<usize> {
    state
        .projects
        .iter()
        .position(|project| project.path_with_namespace == id || id.parse() == Ok(project.id))
}

fn with_project(
    state: &GitLabState,
    id: &str,
    answer: impl FnOnce(&GitLabState, &FakeProject) -> Value,
) -> Answer {
    match project_index(state, id) {
        Some(at) => Answer::ok(answer(state, &state.projects[at])),
        None => Answer::message(404, "404 Project Not Found"),
    }
}

fn with_issue(
    state: &mut GitLabState,
    project: &str,
    iid: &str,
    answer: impl FnOnce(&mut GitLabState, usize, u64) -> Answer,
) -> Answer {
    let Some(at) = project_index(state, project) else {
        return Answer::message(404, "404 Project Not Found");
    };
    match iid.parse::<u64>() {
        Ok(iid) if state.projects[at].issues.contains_key(&iid) => answer(state, at, iid),
        _ => Answer::message(404, "404 Issue Not Found"),
    }
}

fn find_users(state: &GitLabState, request: &ApiRequest) -> Answer {
    let wanted = request.query("username").unwrap_or_default();
    let found: Vec<Value> = state
        .users
        .iter()
        .filter(|user| user.username.eq_ignore_ascii_case(wanted))
        .map(|user| user_json(state, user.id, true))
        .collect();
    Answer::ok(Value::Array(found))
}

fn member(state: &GitLabState, project: &str, user: &str) -> Answer {
    let Some(at) = project_index(state, project) else {
        return Answer::message(404, "404 Project Not Found");
    };
    let level = user
        .parse::<u64>()
        .ok()
        .and_then(|id| Some((id, *state.projects[at].members.get(&id)?)));
    match level {
        Some((id, level)) => {
            let mut member = user_json(state, id, false);
            member["access_level"] = json!(level);
            member["created_at"] = json!(TIMESTAMP);
            member["expires_at"] = Value::Null;
            member["membership_state"] = json!("active");
            Answer::ok(member)
        }
        None => Answer::message(404, "404 Not found"),
    }
}

fn edit_issue(state: &mut GitLabState, project: &str, iid: &str, request: &ApiRequest) -> Answer {
    with_issue(state, project, iid, |state, at, iid| {
        let actor = state.bot_user_id;
        let mut system_notes = Vec::new();
        let issue = state.projects[at].issues.get_mut(&iid).expect("checked");
        if let Some(labels) = label_list(&request.body["labels"]) {
            issue.labels = labels;
        }
        for label in label_list(&request.body["add_labels"]).unwrap_or_default() {
            if !issue.labels.contains(&label) {
                system_notes.push(format!("added ~\"{label}\" label"));
                issue.labels.push(label);
            }
        }
        for label in label_list(&request.body["remove_labels"]).unwrap_or_default() {
            if issue.labels.contains(&label) {
                system_notes.push(format!("removed ~\"{label}\" label"));
                issue.labels.retain(|have| have != &label);
            }
        }
        if let Some(title) = request.text("title") {
            issue.title = title.to_owned();
        }
        if let Some(description) = request.text("description") {
            issue.description = Some(description.to_owned());
        }
        match request.text("state_event") {
            Some("close") => issue.state = "closed".into(),
            Some("reopen") => issue.state = "opened".into(),
            _ => {}
        }
        for body in system_notes {
            let id = state.fresh_id();
            let issue = state.projects[at].issues.get_mut(&iid).expect("checked");
            issue.notes.push(FakeNote {
                id,
                body,
                author: actor,
                system: true,
                edits: 0,
            });
        }
        Answer::ok(issue_json(state, at, iid))
    })
}

fn list_notes(state: &mut GitLabState, project: &str, iid: &str, request: &ApiRequest) -> Answer {
    with_issue(state, project, iid, |state, at, iid| {
        let project = &state.projects[at];
        let issue = &project.issues[&iid];
        let mut notes: Vec<Value> = issue
            .notes
            .iter()
            .map(|note| note_json(state, project, issue, note))
            .collect();
        // GitLab lists notes newest first unless asked otherwise.
        if request.query("sort") != Some("asc") {
            notes.reverse();
        }
        paginate(notes, request)
    })
}

fn create_note(state: &mut GitLabState, project: &str, iid: &str, request: &ApiRequest) -> Answer {
    with_issue(state, project, iid, |state, at, iid| {
        let Some(body) = request.text("body") else {
            return Answer::missing_parameter("body");
        };
        if body.trim().is_empty() {
            return Answer::status(400, json!({"message": {"note": ["can't be blank"]}}));
        }
        let note = FakeNote {
            id: state.fresh_id(),
            body: body.to_owned(),
            author: state.bot_user_id,
            system: false,
            edits: 0,
        };
        let issue = state.projects[at].issues.get_mut(&iid).expect("checked");
        issue.notes.push(note.clone());
        let project = &state.projects[at];
        Answer::status(201, note_json(state, project, &project.issues[&iid], &note))
    })
}

/// `GET /projects/:id/pipelines?ref=…`: newest first, as GitLab orders by id descending.
fn list_pipelines(state: &mut GitLabState, project: &str, request: &ApiRequest) -> Answer {
    let Some(at) = project_index(state, project) else {
        return Answer::message(404, "404 Project Not Found");
    };
    let wanted = request.query("ref");
    let mut pipelines: Vec<Value> = state.projects[at]
        .pipelines
        .iter()
        .filter(|pipeline| wanted.is_none_or(|wanted| pipeline.git_ref == wanted))
        .map(|pipeline| {
            json!({"id": pipeline.id, "iid": pipeline.id, "project_id": state.projects[at].id,
                   "sha": pipeline.sha, "ref": pipeline.git_ref, "status": pipeline.status,
                   "source": "push"})
        })
        .collect();
    pipelines.reverse();
    paginate(pipelines, request)
}

/// `GET /projects/:id/pipelines/:pipeline_id/jobs`, with `scope[]` filtering by status.
fn list_pipeline_jobs(
    state: &mut GitLabState,
    project: &str,
    id: &str,
    request: &ApiRequest,
) -> Answer {
    let Some(at) = project_index(state, project) else {
        return Answer::message(404, "404 Project Not Found");
    };
    let Some(pipeline) = state.projects[at]
        .pipelines
        .iter()
        .find(|pipeline| id.parse() == Ok(pipeline.id))
    else {
        return Answer::message(404, "404 Not found");
    };
    let scope = request.query("scope[]");
    let jobs: Vec<Value> = pipeline
        .jobs
        .iter()
        .filter(|job| scope.is_none_or(|scope| job.status == scope))
        .map(|job| {
            json!({"id": job.id, "name": job.name, "stage": job.stage, "status": job.status,
                   "ref": pipeline.git_ref, "failure_reason": if job.status == "failed" { json!("script_failure") } else { Value::Null },
                   "pipeline": {"id": pipeline.id, "sha": pipeline.sha, "ref": pipeline.git_ref, "status": pipeline.status}})
        })
        .collect();
    paginate(jobs, request)
}

/// `GET /projects/:id/jobs/:job_id/trace`: the job's log as plain text.
fn job_trace(state: &mut GitLabState, project: &str, id: &str) -> Answer {
    let Some(at) = project_index(state, project) else {
        return Answer::message(404, "404 Project Not Found");
    };
    let trace = state.projects[at]
        .pipelines
        .iter()
        .flat_map(|pipeline| pipeline.jobs.iter())
        .find(|job| id.parse() == Ok(job.id))
        .map(|job| job.trace.clone());
    match trace {
        Some(trace) => Answer {
            status: 200,
            headers: vec![("Content-Type".into(), "text/plain".into())],
            body: String::new(),
            log: Some(trace),
        },
        None => Answer::message(404, "404 Not found"),
    }
}

/// The merge request `iid` of `project`, as (project index, position in its list).
fn with_merge_request(
    state: &mut GitLabState,
    project: &str,
    iid: &str,
    answer: impl FnOnce(&mut GitLabState, usize, usize) -> Answer,
) -> Answer {
    let Some(at) = project_index(state, project) else {
        return Answer::message(404, "404 Project Not Found");
    };
    let found = iid.parse::<u64>().ok().and_then(|iid| {
        state.projects[at]
            .merge_requests
            .iter()
            .position(|mr| mr.iid == iid)
    });
    match found {
        Some(index) => answer(state, at, index),
        None => Answer::message(404, "404 Not found"),
    }
}

fn list_merge_request_notes(
    state: &mut GitLabState,
    project: &str,
    iid: &str,
    request: &ApiRequest,
) -> Answer {
    with_merge_request(state, project, iid, |state, at, index| {
        let project = &state.projects[at];
        let mr = &project.merge_requests[index];
        let mut notes: Vec<Value> = mr
            .notes
            .iter()
            .map(|note| merge_request_note_json(state, project, mr, note))
            .collect();
        if request.query("sort") != Some("asc") {
            notes.reverse();
        }
        paginate(notes, request)
    })
}

fn create_merge_request_note(
    state: &mut GitLabState,
    project: &str,
    iid: &str,
    request: &ApiRequest,
) -> Answer {
    with_merge_request(state, project, iid, |state, at, index| {
        let Some(body) = request.text("body") else {
            return Answer::missing_parameter("body");
        };
        let note = FakeNote {
            id: state.fresh_id(),
            body: body.to_owned(),
            author: state.bot_user_id,
            system: false,
            edits: 0,
        };
        state.projects[at].merge_requests[index]
            .notes
            .push(note.clone());
        let project = &state.projects[at];
        let mr = &project.merge_requests[index];
        Answer::status(201, merge_request_note_json(state, project, mr, &note))
    })
}

fn edit_note(
    state: &mut GitLabState,
    project: &str,
    iid: &str,
    note: &str,
    request: &ApiRequest,
) -> Answer {
    with_issue(state, project, iid, |state, at, iid| {
        let Some(body) = request.text("body") else {
            return Answer::missing_parameter("body");
        };
        let bot = state.bot_user_id;
        let issue = state.projects[at].issues.get_mut(&iid).expect("checked");
        let Some(found) = issue
            .notes
            .iter_mut()
            .find(|found| note.parse() == Ok(found.id))
        else {
            return Answer::message(404, "404 Note Not Found");
        };
        if found.author != bot || found.system {
            return Answer::message(403, "403 Forbidden");
        }
        found.body = body.to_owned();
        found.edits += 1;
        let found = found.clone();
        let project = &state.projects[at];
        Answer::ok(note_json(state, project, &project.issues[&iid], &found))
    })
}

fn list_merge_requests(state: &mut GitLabState, project: &str, request: &ApiRequest) -> Answer {
    let Some(at) = project_index(state, project) else {
        return Answer::message(404, "404 Project Not Found");
    };
    let project = &state.projects[at];
    let wanted_state = request.query("state").unwrap_or("all");
    let found: Vec<Value> = project
        .merge_requests
        .iter()
        .rev()
        .filter(|mr| wanted_state == "all" || mr.state == wanted_state)
        .filter(|mr| {
            request
                .query("source_branch")
                .is_none_or(|b| mr.source_branch == b)
        })
        .filter(|mr| {
            request
                .query("target_branch")
                .is_none_or(|b| mr.target_branch == b)
        })
        .map(|mr| merge_request_json(state, project, mr))
        .collect();
    paginate(found, request)
}

/// `GET /projects/:id`; a fork's copy goes on with each lookup, as GitLab's background job does.
fn get_project(state: &mut GitLabState, project: &str) -> Answer {
    let Some(at) = project_index(state, project) else {
        return Answer::message(404, "404 Project Not Found");
    };
    advance_copy(state, at);
    Answer::ok(project_json(state, &state.projects[at]))
}

fn advance_copy(state: &mut GitLabState, at: usize) {
    let forker = state.forker.clone();
    let base = state.projects[at]
        .forked_from
        .and_then(|id| state.projects.iter().find(|project| project.id == id))
        .map(|project| project.path_with_namespace.clone());
    let fork = &mut state.projects[at];
    if fork.copy_pending == 0 {
        return;
    }
    fork.copy_pending -= 1;
    fork.import_status = "started".to_owned();
    if fork.copy_pending == 0 {
        if let (Some(forker), Some(base)) = (forker, base) {
            forker(&base, &fork.path_with_namespace);
        }
        fork.import_status = "finished".to_owned();
    }
}

/// `GET /projects/:id/forks`: its forks; `owned=true` keeps those in the token user's namespace.
fn list_forks(state: &mut GitLabState, project: &str, request: &ApiRequest) -> Answer {
    let Some(at) = project_index(state, project) else {
        return Answer::message(404, "404 Project Not Found");
    };
    let base = state.projects[at].id;
    let owner = state
        .user(state.bot_user_id)
        .map(|user| user.username.clone())
        .unwrap_or_default();
    let owned = request.query("owned") == Some("true");
    let found: Vec<Value> = state
        .projects
        .iter()
        .filter(|project| project.forked_from == Some(base))
        .filter(|project| {
            !owned
                || project
                    .path_with_namespace
                    .starts_with(&format!("{owner}/"))
        })
        .map(|project| project_json(state, project))
        .collect();
    paginate(found, request)
}

/// `POST /projects/:id/fork`: a fork in the token user's namespace, its copy scheduled (201).
fn create_fork(state: &mut GitLabState, project: &str) -> Answer {
    let Some(at) = project_index(state, project) else {
        return Answer::message(404, "404 Project Not Found");
    };
    if state.forker.is_none() {
        return Answer::message(403, "403 Forbidden");
    }
    let owner = state
        .user(state.bot_user_id)
        .map(|user| user.username.clone())
        .unwrap_or_default();
    let base = state.projects[at].clone();
    let name = base
        .path_with_namespace
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .to_owned();
    let path = format!("{owner}/{name}");
    if state.project(&path).is_some() {
        return Answer::status(
            409,
            json!({"message": {"name": ["has already been taken"], "path": ["has already been taken"]}}),
        );
    }
    let id = state.fresh_id();
    let looks = state.fork_copy_looks;
    state.projects.push(FakeProject {
        id,
        path_with_namespace: path.clone(),
        default_branch: base.default_branch.clone(),
        http_url_to_repo: base.http_url_to_repo.replace(
            &format!("/{}.git", base.path_with_namespace),
            &format!("/{path}.git"),
        ),
        members: BTreeMap::from([(state.bot_user_id, 50)]),
        issues: BTreeMap::new(),
        merge_requests: Vec::new(),
        pipelines: Vec::new(),
        forked_from: Some(base.id),
        import_status: "scheduled".to_owned(),
        copy_pending: looks,
        namespace_kind: "user".to_owned(),
    });
    let fork = state.projects.last().expect("just pushed");
    Answer::status(201, project_json(state, fork))
}

/// `POST /projects/:id/merge_requests`: in this project, or from this fork into the project
/// `target_project_id` names.
fn create_merge_request(state: &mut GitLabState, project: &str, request: &ApiRequest) -> Answer {
    let Some(source_at) = project_index(state, project) else {
        return Answer::message(404, "404 Project Not Found");
    };
    let source = state.projects[source_at].clone();
    let at = match request.body["target_project_id"].as_u64() {
        None => source_at,
        Some(target) if target == source.id => source_at,
        Some(target) if source.forked_from == Some(target) => {
            match state
                .projects
                .iter()
                .position(|project| project.id == target)
            {
                Some(at) => at,
                None => return Answer::message(404, "404 Project Not Found"),
            }
        }
        Some(_) => {
            return Answer::status(
                400,
                json!({"message": ["The target project must be the source project or its upstream"]}),
            );
        }
    };
    let source_project_id = (at != source_at).then_some(source.id);
    let mut fields = Vec::new();
    for name in ["source_branch", "target_branch", "title"] {
        match request.text(name) {
            Some(value) if !value.is_empty() => fields.push(value.to_owned()),
            _ => return Answer::missing_parameter(name),
        }
    }
    let [source_branch, target_branch, title] = <[String; 3]>::try_from(fields).expect("three");
    let path = state.projects[at].path_with_namespace.clone();
    if source_branch == target_branch && source_project_id.is_none() {
        return Answer::status(
            422,
            json!({"message": ["You can't use same project/branch for source and target"]}),
        );
    }
    for (side, home, branch) in [
        ("Source", &source.path_with_namespace, &source_branch),
        ("Target", &path, &target_branch),
    ] {
        if !(state.branch_lookup)(home, branch) {
            return Answer::status(
                400,
                json!({"message": [format!("{side} branch \"{branch}\" does not exist")]}),
            );
        }
    }
    let existing = state.projects[at].merge_requests.iter().find(|mr| {
        mr.state == "opened"
            && mr.source_branch == source_branch
            && mr.source_project_id == source_project_id
    });
    if let Some(existing) = existing {
        return Answer::status(
            409,
            json!({"message": [format!(
                "Another open merge request already exists for this source branch: !{}",
                existing.iid
            )]}),
        );
    }
    let reviewer_ids: Vec<u64> = request.body["reviewer_ids"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_u64)
        .filter(|id| state.user(*id).is_some())
        .collect();
    let id = state.fresh_id();
    let author = state.bot_user_id;
    let project = &mut state.projects[at];
    let mr = FakeMergeRequest {
        id,
        iid: next_merge_request_iid(project),
        draft: is_draft_title(&title),
        title,
        description: request.text("description").unwrap_or_default().to_owned(),
        source_branch,
        target_branch,
        state: "opened".to_owned(),
        labels: label_list(&request.body["labels"]).unwrap_or_default(),
        reviewer_ids,
        author,
        notes: Vec::new(),
        source_project_id,
    };
    project.merge_requests.push(mr.clone());
    let project = &state.projects[at];
    Answer::status(201, merge_request_json(state, project, &mr))
}

fn next_merge_request_iid(project: &FakeProject) -> u64 {
    project
        .merge_requests
        .iter()
        .map(|mr| mr.iid)
        .max()
        .unwrap_or(0)
        + 1
}

/// GitLab's draft markers at the start of a title.
fn is_draft_title(title: &str) -> bool {
    let lower = title.trim_start().to_ascii_lowercase();
    ["draft:", "[draft]", "(draft)"]
        .iter()
        .any(|marker| lower.starts_with(marker))
}

/// Labels as GitLab takes them: a comma-separated string or a list; `None` when absent.
fn label_list(value: &Value) -> Option<Vec<String>> {
    let names: Vec<String> = match value {
        Value::String(text) => text.split(',').map(str::to_owned).collect(),
        Value::Array(items) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => return None,
    };
    Some(
        names
            .into_iter()
            .map(|name| name.trim().to_owned())
            .filter(|name| !name.is_empty())
            .collect(),
    )
}

/// One page of `items` with GitLab's pagination headers (`x-next-page` empty on the last page).
fn paginate(items: Vec<Value>, request: &ApiRequest) -> Answer {
    let per_page = request
        .query("per_page")
        .and_then(|n| n.parse::<usize>().ok())
        .filter(|n| *n > 0)
        .unwrap_or(DEFAULT_PER_PAGE)
        .min(MAX_PER_PAGE);
    let page = request
        .query("page")
        .and_then(|n| n.parse::<usize>().ok())
        .filter(|n| *n > 0)
        .unwrap_or(1);
    let total = items.len();
    let total_pages = total.div_ceil(per_page).max(1);
    let shown: Vec<Value> = items
        .into_iter()
        .skip((page - 1) * per_page)
        .take(per_page)
        .collect();
    let next = if page < total_pages {
        (page + 1).to_string()
    } else {
        String::new()
    };
    let prev = if page > 1 {
        (page - 1).to_string()
    } else {
        String::new()
    };
    Answer {
        status: 200,
        headers: vec![
            ("x-page".into(), page.to_string()),
            ("x-per-page".into(), per_page.to_string()),
            ("x-next-page".into(), next),
            ("x-prev-page".into(), prev),
            ("x-total".into(), total.to_string()),
            ("x-total-pages".into(), total_pages.to_string()),
        ],
        body: Value::Array(shown).to_string(),
        log: None,
    }
}

/// A user as GitLab embeds it (`author`, `reviewers`); `with_bot` adds the `/user(s)` fields.
fn user_json(state: &GitLabState, id: u64, with_bot: bool) -> Value {
    let user = state.user(id).cloned().unwrap_or(FakeUser {
        id,
        username: "ghost".into(),
        name: "Ghost User".into(),
        bot: false,
    });
    let mut value = json!({
        "id": user.id,
        "username": user.username,
        "name": user.name,
        "state": "active",
        "locked": false,
        "avatar_url": null,
        "web_url": format!("{}/{}", state.base_url, user.username),
    });
    if with_bot {
        value["bot"] = json!(user.bot);
        value["created_at"] = json!(TIMESTAMP);
    }
    value
}

fn project_json(state: &GitLabState, project: &FakeProject) -> Value {
    let path = &project.path_with_namespace;
    let (namespace, name) = path.rsplit_once('/').unwrap_or(("", path));
    let web_url = format!("{}/{path}", state.base_url);
    json!({
        "id": project.id,
        "description": null,
        "name": name,
        "name_with_namespace": path.replace('/', " / "),
        "path": name,
        "path_with_namespace": path,
        "created_at": TIMESTAMP,
        "default_branch": project.default_branch,
        "tag_list": [],
        "topics": [],
        "ssh_url_to_repo": format!("git@127.0.0.1:{path}.git"),
        "http_url_to_repo": project.http_url_to_repo,
        "web_url": web_url,
        "readme_url": null,
        "visibility": "private",
        "namespace": {
            "id": project.id + 100_000,
            "name": namespace,
            "path": namespace.rsplit('/').next().unwrap_or(namespace),
            "kind": project.namespace_kind,
            "full_path": namespace,
            "web_url": format!("{}/groups/{namespace}", state.base_url),
        },
        "import_status": project.import_status,
        "forked_from_project": project.forked_from.and_then(|id| {
            state.projects.iter().find(|base| base.id == id).map(|base| json!({
                "id": base.id,
                "path_with_namespace": base.path_with_namespace,
                "http_url_to_repo": base.http_url_to_repo,
            }))
        }),
        "issues_enabled": true,
        "merge_requests_enabled": true,
        "open_issues_count": project.issues.values().filter(|i| i.state == "opened").count(),
        "archived": false,
        "last_activity_at": TIMESTAMP,
        "_links": {
            "self": format!("{}{API_PREFIX}/projects/{}", state.base_url, project.id),
            "issues": format!("{}{API_PREFIX}/projects/{}/issues", state.base_url, project.id),
            "merge_requests": format!("{}{API_PREFIX}/projects/{}/merge_requests", state.base_url, project.id),
        },
    })
}

fn issue_json(state: &GitLabState, at: usize, iid: u64) -> Value {
    let project = &state.projects[at];
    let issue = &project.issues[&iid];
    let path = &project.path_with_namespace;
    let api = format!(
        "{}{API_PREFIX}/projects/{}/issues/{iid}",
        state.base_url, project.id
    );
    json!({
        "id": issue.id,
        "iid": issue.iid,
        "project_id": project.id,
        "title": issue.title,
        "description": issue.description,
        "state": issue.state,
        "created_at": TIMESTAMP,
        "updated_at": TIMESTAMP,
        "closed_at": if issue.state == "closed" { json!(TIMESTAMP) } else { Value::Null },
        "closed_by": null,
        "labels": issue.labels,
        "milestone": null,
        "assignees": [],
        "assignee": null,
        "author": user_json(state, issue.author, false),
        "type": "ISSUE",
        "user_notes_count": issue.notes.iter().filter(|n| !n.system).count(),
        "merge_requests_count": 0,
        "upvotes": 0,
        "downvotes": 0,
        "due_date": null,
        "confidential": false,
        "discussion_locked": issue.discussion_locked,
        "issue_type": "issue",
        "web_url": format!("{}/{path}/-/issues/{iid}", state.base_url),
        "references": references(&format!("#{iid}"), path),
        "time_stats": time_stats(),
        "subscribed": false,
        "_links": {
            "self": api,
            "notes": format!("{api}/notes"),
            "award_emoji": format!("{api}/award_emoji"),
            "project": format!("{}{API_PREFIX}/projects/{}", state.base_url, project.id),
        },
        "task_completion_status": {"count": 0, "completed_count": 0},
    })
}

fn note_json(
    state: &GitLabState,
    project: &FakeProject,
    issue: &FakeIssue,
    note: &FakeNote,
) -> Value {
    json!({
        "id": note.id,
        "type": null,
        "body": note.body,
        "attachment": null,
        "author": user_json(state, note.author, false),
        "created_at": TIMESTAMP,
        "updated_at": TIMESTAMP,
        "system": note.system,
        "noteable_id": issue.id,
        "noteable_type": "Issue",
        "project_id": project.id,
        "noteable_iid": issue.iid,
        "resolvable": false,
        "confidential": false,
        "internal": false,
        "imported": false,
        "imported_from": "none",
    })
}

/// A note on a merge request, in the shape of the notes API (`noteable_type` `MergeRequest`).
fn merge_request_note_json(
    state: &GitLabState,
    project: &FakeProject,
    mr: &FakeMergeRequest,
    note: &FakeNote,
) -> Value {
    json!({
        "id": note.id,
        "type": null,
        "body": note.body,
        "attachment": null,
        "author": user_json(state, note.author, false),
        "created_at": TIMESTAMP,
        "updated_at": TIMESTAMP,
        "system": note.system,
        "noteable_id": mr.id,
        "noteable_type": "MergeRequest",
        "project_id": project.id,
        "noteable_iid": mr.iid,
        "resolvable": false,
        "confidential": false,
        "internal": false,
        "imported": false,
        "imported_from": "none",
    })
}

fn merge_request_json(state: &GitLabState, project: &FakeProject, mr: &FakeMergeRequest) -> Value {
    let path = &project.path_with_namespace;
    let reviewers: Vec<Value> = mr
        .reviewer_ids
        .iter()
        .map(|id| user_json(state, *id, false))
        .collect();
    let basics = json!({
        "id": mr.id,
        "iid": mr.iid,
        "project_id": project.id,
        "title": mr.title,
        "description": mr.description,
        "state": mr.state,
        "created_at": TIMESTAMP,
        "updated_at": TIMESTAMP,
        "merged_by": null,
        "merged_at": null,
        "closed_by": null,
        "closed_at": null,
        "target_branch": mr.target_branch,
        "source_branch": mr.source_branch,
    });
    let people = json!({
        "user_notes_count": 0,
        "upvotes": 0,
        "downvotes": 0,
        "author": user_json(state, mr.author, false),
        "assignees": [],
        "assignee": null,
        "reviewers": reviewers,
        "source_project_id": mr.source_project_id.unwrap_or(project.id),
        "target_project_id": project.id,
        "labels": mr.labels,
        "draft": mr.draft,
        "work_in_progress": mr.draft,
    });
    let merge = json!({
        "milestone": null,
        "merge_when_pipeline_succeeds": false,
        "merge_status": "can_be_merged",
        "detailed_merge_status": if mr.draft { "draft_status" } else { "mergeable" },
        "sha": null,
        "merge_commit_sha": null,
        "squash_commit_sha": null,
        "discussion_locked": null,
        "should_remove_source_branch": null,
        "force_remove_source_branch": false,
        "squash": false,
        "web_url": format!("{}/{path}/-/merge_requests/{}", state.base_url, mr.iid),
        "references": references(&format!("!{}", mr.iid), path),
        "time_stats": time_stats(),
        "task_completion_status": {"count": 0, "completed_count": 0},
    });
    let mut value = basics;
    for part in [people, merge] {
        value
            .as_object_mut()
            .expect("an object")
            .extend(part.as_object().expect("an object").clone());
    }
    value
}

fn references(short: &str, path: &str) -> Value {
    json!({"short": short, "relative": short, "full": format!("{path}{short}")})
}

fn time_stats() -> Value {
    json!({
        "time_estimate": 0,
        "total_time_spent": 0,
        "human_time_estimate": null,
        "human_total_time_spent": null,
    })
}

fn parse_query(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (
                percent_decode(&key.replace('+', " ")),
                percent_decode(&value.replace('+', " ")),
            )
        })
        .collect()
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let hex = bytes
            .get(at + 1..at + 3)
            .and_then(|pair| std::str::from_utf8(pair).ok())
            .and_then(|pair| u8::from_str_radix(pair, 16).ok());
        match (bytes[at], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                at += 3;
            }
            (byte, _) => {
                out.push(byte);
                at += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
