//! The operator's pages: the setup page at `/` (with GitHub's App manifest flow) and the jobs
//! pages at `/jobs`, server-rendered, reachable with the admin token or, when none is set, from loopback.

mod app_manifest;
pub mod html;
mod jobs;
mod setup;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use secrecy::{ExposeSecret, SecretString};

use crate::forge::ForgeKind;
use crate::store::{JobKey, RepoKey, Store};

/// One part of the bot as the setup page lists it: its name, `verified` / `configured, not
/// verified` / `missing` / `broken`, and what it is or what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetupPart {
    pub name: String,
    pub readiness: String,
    pub detail: String,
}

/// What the setup page knows of the configuration, gathered once at start.
#[derive(Debug, Clone)]
pub struct SetupFacts {
    pub parts: Vec<SetupPart>,
    /// `server.public_url`, or empty (the address the browser used is taken instead).
    pub public_url: String,
    pub github_web_url: String,
    pub github_api_url: String,
    /// Whether GitHub credentials (a token or an App) are configured already.
    pub github_configured: bool,
    /// Where the App the manifest flow creates is stored.
    pub data_dir: PathBuf,
    pub trigger_label: String,
    /// Where the bot pushes its branches (`forge.push_to`).
    pub push_to: crate::forge::PushTo,
}

/// Where a job's repository and issue are on the web: GitHub's and GitLab's web roots.
#[derive(Debug, Clone)]
pub struct ForgeLinks {
    pub github_web: String,
    pub gitlab_web: String,
}

impl ForgeLinks {
    /// The issue's web address (`https://github.com/acme/widgets/issues/7`).
    pub fn issue(&self, key: &JobKey) -> String {
        let (repo, number) = (&key.repo.path, key.issue.0);
        match key.repo.forge {
            ForgeKind::GitLab => format!(
                "{}/{repo}/-/issues/{number}",
                self.gitlab_web.trim_end_matches('/')
            ),
            ForgeKind::GitHub => format!(
                "{}/{repo}/issues/{number}",
                self.github_web.trim_end_matches('/')
            ),
        }
    }

    /// The repository's web address.
    pub fn repo(&self, repo: &RepoKey) -> String {
        let web = match repo.forge {
            ForgeKind::GitLab => &self.gitlab_web,
            ForgeKind::GitHub => &self.github_web,
        };
        format!("{}/{}", web.trim_end_matches('/'), repo.path)
    }
}

/// Asks the configured services how they are and gives the parts as they answered (built by
/// `autofix serve` from its clients; a test may give its own).
pub type PartsCheck =
    Arc<dyn Fn() -> Pin<Box<dyn Future<Output = Vec<SetupPart>> + Send>> + Send + Sync>;

/// How long the setup page shows the services' last answers before asking them again.
pub const CHECK_FRESH_FOR: Duration = Duration::from_secs(60);

/// The services' answers, asked at most once per [`CHECK_FRESH_FOR`] (or on the page's button).
struct Checks {
    ask: PartsCheck,
    last: tokio::sync::Mutex<Option<(Instant, Vec<SetupPart>)>>,
}

/// Everything the pages need; built by `autofix serve` (or a test).
pub struct PagesState {
    pub store: Store,
    /// `server.admin_token`; empty: loopback only.
    pub admin_token: SecretString,
    pub setup: SetupFacts,
    pub links: ForgeLinks,
    /// The `state` values of manifest flows started here and not finished, with their start.
    manifest_states: Mutex<Vec<(String, Instant)>>,
    http: reqwest::Client,
    /// Without one, the page shows `setup.parts` as configured.
    checks: Option<Checks>,
}

impl PagesState {
    pub fn new(
        store: Store,
        admin_token: SecretString,
        setup: SetupFacts,
        links: ForgeLinks,
    ) -> PagesState {
        PagesState {
            store,
            admin_token,
            setup,
            links,
            manifest_states: Mutex::new(Vec::new()),
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .user_agent(concat!("autofix/", env!("CARGO_PKG_VERSION")))
                .build()
                .expect("an HTTP client builds"),
            checks: None,
        }
    }

    /// The setup page asks the services through `ask` (at most once a minute) instead of
    /// showing the configuration's parts alone.
    pub fn with_checks(mut self, ask: PartsCheck) -> PagesState {
        self.checks = Some(Checks {
            ask,
            last: tokio::sync::Mutex::new(None),
        });
        self
    }

    /// The parts as the services last answered (asked again when older than a minute, or when
    /// `again`), with when they were asked; without checks, the configured parts.
    pub async fn checked_parts(&self, again: bool) -> (Vec<SetupPart>, Option<Instant>) {
        let Some(checks) = &self.checks else {
            return (self.setup.parts.clone(), None);
        };
        // Held while asking: page loads at the same moment share one round of questions.
        let mut last = checks.last.lock().await;
        match &*last {
            Some((asked, parts)) if !again && asked.elapsed() < CHECK_FRESH_FOR => {
                (parts.clone(), Some(*asked))
            }
            _ => {
                let parts = (checks.ask)().await;
                let asked = Instant::now();
                *last = Some((asked, parts.clone()));
                (parts, Some(asked))
            }
        }
    }
}

type Shared = Arc<PagesState>;

/// The pages' routes, every one behind [`operator_only`].
pub fn router(state: PagesState) -> Router {
    router_shared(Arc::new(state))
}

/// [`router`] for a state its caller keeps a hand on (to ask the services at the start).
pub fn router_shared(shared: Arc<PagesState>) -> Router {
    let admin_token = shared.admin_token.clone();
    let routes = Router::new()
        .route("/", get(setup::page))
        .route("/setup/github", get(setup::manifest_form))
        .route("/setup/github/callback", get(setup::callback))
        .route("/jobs", get(jobs::list))
        .route("/jobs/{id}", get(jobs::detail));
    operator_only(routes, admin_token).with_state(shared)
}

/// `routes` answered only as the pages are (see [`allowed`]): to a request with `admin_token`,
/// or, when it is empty, to a direct connection from loopback.
pub fn operator_only<S>(routes: Router<S>, admin_token: SecretString) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    routes.route_layer(middleware::from_fn_with_state(Arc::new(admin_token), guard))
}

async fn guard(
    State(admin_token): State<Arc<SecretString>>,
    request: Request,
    next: Next,
) -> Response {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(address)| *address);
    match allowed(&admin_token, request.headers(), peer) {
        Access::Allowed => next.run(request).await,
        Access::AskForToken => (
            StatusCode::UNAUTHORIZED,
            [(
                header::WWW_AUTHENTICATE,
                "Basic realm=\"autofix\", charset=\"UTF-8\"",
            )],
            Html(html::page(
                "Sign in",
                "<p>These pages ask for the admin token (<code>server.admin_token</code>): as the \
                 password when the browser asks, or as <code>Authorization: Bearer …</code>.</p>",
            )),
        )
            .into_response(),
        Access::LoopbackOnly => (
            StatusCode::FORBIDDEN,
            Html(html::page(
                "Not from here",
                "<p>No <code>server.admin_token</code> is set, so these pages answer only on \
                 loopback (open them on the machine autofix runs on, or through an SSH tunnel), \
                 never through a proxy. Set <code>AUTOFIX__SERVER__ADMIN_TOKEN</code> to reach \
                 them from elsewhere.</p>",
            )),
        )
            .into_response(),
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Access {
    Allowed,
    AskForToken,
    LoopbackOnly,
}

/// With a token: the request must carry it (`Bearer`, or as a Basic password). Without one:
/// only a direct connection from loopback, not one a proxy forwarded.
fn allowed(token: &SecretString, headers: &HeaderMap, peer: Option<SocketAddr>) -> Access {
    let token = token.expose_secret();
    if !token.is_empty() {
        return match presented_token(headers) {
            Some(given) if same_bytes(given.as_bytes(), token.as_bytes()) => Access::Allowed,
            _ => Access::AskForToken,
        };
    }
    let forwarded = ["forwarded", "x-forwarded-for", "x-real-ip"]
        .iter()
        .any(|name| headers.contains_key(*name));
    match peer {
        Some(address) if address.ip().is_loopback() && !forwarded => Access::Allowed,
        _ => Access::LoopbackOnly,
    }
}

/// The token of `Authorization: Bearer T` or the password of `Authorization: Basic …`.
fn presented_token(headers: &HeaderMap) -> Option<String> {
    use base64::Engine;
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?.trim();
    let (scheme, rest) = value.split_once(' ')?;
    if scheme.eq_ignore_ascii_case("bearer") {
        return Some(rest.trim().to_owned());
    }
    if scheme.eq_ignore_ascii_case("basic") {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(rest.trim())
            .ok()?;
        let text = String::from_utf8(decoded).ok()?;
        return text
            .split_once(':')
            .map(|(_, password)| password.to_owned());
    }
    None
}

/// Compares in time that depends on the lengths only.
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}

/// A page saying what went wrong, with the status it deserves.
fn error_page(status: StatusCode, title: &str, message: &str) -> Response {
    (
        status,
        Html(html::page(
            title,
            &format!("<p>{}</p>", html::escape(message)),
        )),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(
                axum::http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        map
    }

    fn peer(ip: &str) -> Option<SocketAddr> {
        Some(SocketAddr::new(ip.parse().unwrap(), 40000))
    }

    #[test]
    fn without_a_token_only_a_direct_loopback_connection_gets_in() {
        let none = SecretString::from("");
        assert_eq!(
            allowed(&none, &headers(&[]), peer("127.0.0.1")),
            Access::Allowed
        );
        assert_eq!(allowed(&none, &headers(&[]), peer("::1")), Access::Allowed);
        assert_eq!(
            allowed(&none, &headers(&[]), peer("10.0.0.7")),
            Access::LoopbackOnly
        );
        assert_eq!(
            allowed(
                &none,
                &headers(&[("x-forwarded-for", "203.0.113.9")]),
                peer("127.0.0.1")
            ),
            Access::LoopbackOnly,
            "a proxy on the same machine forwards strangers"
        );
        assert_eq!(allowed(&none, &headers(&[]), None), Access::LoopbackOnly);
    }

    #[test]
    fn with_a_token_every_request_must_carry_it_even_from_loopback() {
        let token = SecretString::from("s3cret");
        let basic = format!(
            "Basic {}",
            base64::Engine::encode(&base64::engine::general_purpose::STANDARD, "admin:s3cret")
        );
        assert_eq!(
            allowed(&token, &headers(&[]), peer("127.0.0.1")),
            Access::AskForToken
        );
        assert_eq!(
            allowed(
                &token,
                &headers(&[("authorization", "Bearer s3cret")]),
                peer("10.0.0.7")
            ),
            Access::Allowed
        );
        assert_eq!(
            allowed(
                &token,
                &headers(&[("authorization", basic.as_str())]),
                peer("10.0.0.7")
            ),
            Access::Allowed
        );
        assert_eq!(
            allowed(
                &token,
                &headers(&[("authorization", "Bearer s3cre")]),
                peer("127.0.0.1")
            ),
            Access::AskForToken
        );
    }
}
