//! The setup page: what is configured and what is missing, GitHub's App manifest flow (one button
//! creates the App; the callback stores its id, key and webhook secret), and the GitLab steps.

use std::collections::HashMap;
use std::fmt::Write;
use std::time::{Duration, Instant};

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use serde::Deserialize;
use serde_json::Value;

use super::app_manifest::{APP_EVENTS, APP_PERMISSIONS, manifest};
use super::html::{escape, page as frame};
use super::{Shared, error_page};
use crate::config::data_dir::StoredGitHubApp;
use crate::forge::PushTo;

/// How long a started manifest flow may take before its `state` is forgotten.
const MANIFEST_FLOW_LIFETIME: Duration = Duration::from_secs(3600);

/// `GET /` (`?check=again` asks the services at once): every part with its readiness as its
/// service answered, then how to connect each forge.
pub(super) async fn page(
    State(state): State<Shared>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let facts = &state.setup;
    let public_url = public_url(&state, &headers);
    let again = query.get("check").is_some_and(|value| value == "again");
    let (parts, asked) = state.checked_parts(again).await;
    let mut body = String::new();
    body.push_str("<p>autofix turns an issue labelled <code>");
    body.push_str(&escape(&facts.trigger_label));
    body.push_str(
        "</code> into a pull request checked by the repository's own build and tests. \
         This page shows what it has and what it still needs.</p>\
         <table id=\"parts\"><tr><th>Part</th><th>State</th><th>Detail</th></tr>",
    );
    for part in &parts {
        // `configured, not verified` is styled as `configured`.
        let class = part.readiness.split(',').next().unwrap_or_default();
        let _ = write!(
            body,
            "<tr data-part=\"{name}\"><td>{name}</td><td class=\"{class}\">{state}</td><td>{detail}</td></tr>",
            name = escape(&part.name),
            class = escape(class),
            state = escape(&part.readiness),
            detail = escape(&part.detail),
        );
    }
    body.push_str("</table>");
    if let Some(asked) = asked {
        let _ = write!(
            body,
            "<form id=\"check\" method=\"get\" action=\"/\"><p>The services were asked {} s \
             ago. <button name=\"check\" value=\"again\" type=\"submit\">Check again</button>\
             </p></form>",
            asked.elapsed().as_secs()
        );
    }
    body.push_str(&push_target_section(facts.push_to));
    body.push_str("<section id=\"github\"><h2>GitHub</h2>");
    match stored_app(&state) {
        Some(app) => {
            let _ = write!(
                body,
                "<p>The GitHub App <a href=\"{url}\">{slug}</a> (id {id}) was created here and is \
                 stored in the data directory. <a href=\"{url}/installations/new\">Install it</a> \
                 on the repositories autofix may work on.</p>",
                url = escape(&app.html_url),
                slug = escape(&app.slug),
                id = app.id,
            );
        }
        None if facts.github_configured => body.push_str(
            "<p>GitHub credentials are configured (a token or an App). Point the repository's \
             or the App's webhook at the address below with the webhook secret.</p>",
        ),
        None => {
            let _ = write!(
                body,
                "<p>One button creates a GitHub App with exactly what autofix needs, its webhook \
                 sent to <code>{hook}</code>.</p>{asks}\
                 <form id=\"github-app\" method=\"get\" action=\"/setup/github\">\
                 <label>This server's public address (GitHub must reach it)\
                 <input name=\"public_url\" size=\"45\" value=\"{public}\"></label>\
                 <label>Organization (empty: your personal account)\
                 <input name=\"organization\" size=\"25\"></label>\
                 <p><button type=\"submit\">Create a GitHub App</button></p></form>",
                hook = escape(&format!("{public_url}/webhooks/github")),
                asks = app_asks(),
                public = escape(&public_url),
            );
        }
    }
    body.push_str("</section>");
    let _ = write!(
        body,
        "<section id=\"gitlab\"><h2>GitLab</h2><ol>\
         <li>Create a project (or group) access token with the <code>api</code> scope and the \
         Developer role, and give it to autofix as <code>AUTOFIX__GITLAB__TOKEN</code> (or \
         <code>AUTOFIX__GITLAB__TOKEN_FILE</code>).</li>\
         <li>Choose a long random secret token and give it as <code>AUTOFIX__GITLAB__WEBHOOK_SECRET</code>.</li>\
         <li>In the project, Settings → Webhooks: URL <code>{hook}</code>, the same secret token, \
         triggers <em>Issues events</em>, <em>Comments</em>, <em>Pipeline events</em> and \
         <em>Push events</em>.</li>\
         <li>For a self-managed GitLab, set <code>AUTOFIX__GITLAB__API_URL</code> to \
         <code>https://HOST/api/v4</code>. Restart autofix.</li></ol></section>",
        hook = escape(&format!("{public_url}/webhooks/gitlab")),
    );
    Html(frame("Setup", &body)).into_response()
}

/// The App's permissions and events as the page explains them, from what the manifest asks.
fn app_asks() -> String {
    let mut text = String::from("<p>Repository permissions:</p><ul id=\"app-permissions\">");
    for permission in &APP_PERMISSIONS {
        let access = match permission.access {
            "write" => "read and write",
            other => other,
        };
        let _ = write!(
            text,
            "<li data-permission=\"{name}\" data-access=\"{granted}\"><code>{name}</code>: \
             {access} ({used_for})</li>",
            name = escape(permission.name),
            granted = escape(permission.access),
            access = escape(access),
            used_for = escape(permission.used_for),
        );
    }
    text.push_str("</ul><p>Events:</p><ul id=\"app-events\">");
    for event in &APP_EVENTS {
        let _ = write!(
            text,
            "<li data-event=\"{name}\"><code>{name}</code> ({used_for})</li>",
            name = escape(event.name),
            used_for = escape(event.used_for),
        );
    }
    text.push_str("</ul>");
    text
}

/// Where the bot's branches go, what the repository's CI runs them with, and how to make jobs
/// that use secrets wait for a person.
fn push_target_section(push_to: PushTo) -> String {
    let now = match push_to {
        PushTo::Base => {
            "autofix pushes its branches to <strong>the repository itself</strong> \
             (<code>forge.push_to = \"base\"</code>). A branch of the repository is trusted like \
             a maintainer's: on GitHub its <code>pull_request</code> workflows (and \
             <code>push</code> workflows without a branch filter) run the model-written change \
             with the repository's Actions secrets; on GitLab its branch pipeline and merge \
             request pipelines run with the project's CI/CD variables (protected ones only on \
             protected branches)."
        }
        PushTo::Fork => {
            "autofix pushes its branches to <strong>a fork owned by its own user</strong> \
             (<code>forge.push_to = \"fork\"</code>), made once and reused, and opens each pull \
             or merge request from there. GitHub runs a fork's <code>pull_request</code> \
             workflows without the repository's secrets (only a read-only \
             <code>GITHUB_TOKEN</code>); GitLab runs a fork's merge request pipeline in the fork, \
             without the project's variables, unless a maintainer runs it in the project."
        }
    };
    format!(
        "<section id=\"push-target\"><h2>Branches and CI secrets</h2><p>{now}</p>\
         <p>Either way, make the jobs that use secrets wait for a person:</p><ul>\
         <li>GitHub: give each job that uses secrets an <code>environment</code> with required \
         reviewers (Settings → Environments), and under Settings → Actions → General require \
         approval for fork pull request workflows from all outside collaborators. \
         <code>pull_request_target</code> workflows run with the secrets even for a fork's pull \
         request: they must never run its code.</li>\
         <li>GitLab: make the variables <em>protected</em>, so only protected branches and tags \
         see them (the bot's branches are not protected), and do not run a fork's merge request \
         pipelines in the parent project.</li></ul>\
         <p>A GitHub App cannot own a fork: <code>fork</code> needs a bot user's token \
         (<code>github.token</code>), on GitLab a user's token with a namespace of its own. \
         <code>autofix config check --repo DIR</code> names the workflows and jobs of a checkout \
         that give secrets to what a bot branch starts.</p></section>"
    )
}

/// `server.public_url`, or the address the browser used to reach this page.
fn public_url(state: &Shared, headers: &HeaderMap) -> String {
    let configured = state.setup.public_url.trim().trim_end_matches('/');
    if !configured.is_empty() {
        return configured.to_owned();
    }
    let host = headers
        .get(header::HOST)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("127.0.0.1:8080");
    format!("http://{host}")
}

fn stored_app(state: &Shared) -> Option<StoredGitHubApp> {
    StoredGitHubApp::load(&state.setup.data_dir).ok().flatten()
}

#[derive(Debug, Deserialize)]
pub(super) struct ManifestRequest {
    #[serde(default)]
    public_url: String,
    #[serde(default)]
    organization: String,
}

/// `GET /setup/github`: the manifest, shown, and the form that posts it to GitHub.
pub(super) async fn manifest_form(
    State(state): State<Shared>,
    Query(request): Query<ManifestRequest>,
) -> Response {
    let public_url = request.public_url.trim().trim_end_matches('/');
    if !(public_url.starts_with("https://") || public_url.starts_with("http://")) {
        return error_page(
            StatusCode::BAD_REQUEST,
            "Which address?",
            "The public address must start with https:// (or http://): it is where GitHub sends webhooks.",
        );
    }
    if stored_app(&state).is_some() || state.setup.github_configured {
        return error_page(
            StatusCode::CONFLICT,
            "GitHub is already configured",
            "autofix already has GitHub credentials; remove them before creating another App.",
        );
    }
    let organization = request.organization.trim();
    if !organization
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-')
    {
        return error_page(
            StatusCode::BAD_REQUEST,
            "Which organization?",
            "An organization name has only letters, digits and dashes.",
        );
    }
    let flow = start_flow(&state);
    let web = state.setup.github_web_url.trim_end_matches('/');
    let action = if organization.is_empty() {
        format!("{web}/settings/apps/new?state={flow}")
    } else {
        format!("{web}/organizations/{organization}/settings/apps/new?state={flow}")
    };
    let manifest = manifest(public_url);
    let pretty = serde_json::to_string_pretty(&manifest).expect("a manifest serialises");
    let body = format!(
        "<p>GitHub will show this App for you to name and confirm, then send you back here; \
         autofix then keeps its id, private key and webhook secret in its data directory, \
         readable by its own user only.</p><pre id=\"manifest\">{pretty}</pre>\
         <form id=\"create\" method=\"post\" action=\"{action}\">\
         <input type=\"hidden\" name=\"manifest\" value=\"{value}\">\
         <button type=\"submit\">Create the GitHub App on GitHub</button></form>",
        pretty = escape(&pretty),
        action = escape(&action),
        value = escape(&manifest.to_string()),
    );
    Html(frame("Create a GitHub App", &body)).into_response()
}

/// A fresh `state` for one manifest flow, remembered for [`MANIFEST_FLOW_LIFETIME`].
fn start_flow(state: &Shared) -> String {
    let flow = random_hex();
    let mut flows = state
        .manifest_states
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    flows.retain(|(_, started)| started.elapsed() < MANIFEST_FLOW_LIFETIME);
    flows.push((flow.clone(), Instant::now()));
    flow
}

/// Whether `flow` was started here and is still fresh; it can be finished once only.
fn finish_flow(state: &Shared, flow: &str) -> bool {
    let mut flows = state
        .manifest_states
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let before = flows.len();
    flows.retain(|(known, started)| known != flow && started.elapsed() < MANIFEST_FLOW_LIFETIME);
    flows.len() < before
}

/// `GET /setup/github/callback?code=…&state=…`: GitHub's answer, exchanged for the App's
/// credentials, which are stored in the data directory.
pub(super) async fn callback(
    State(state): State<Shared>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let (Some(code), Some(flow)) = (query.get("code"), query.get("state")) else {
        return error_page(
            StatusCode::BAD_REQUEST,
            "Not from GitHub",
            "The callback needs the code and state GitHub sends.",
        );
    };
    if !finish_flow(&state, flow) {
        return error_page(
            StatusCode::BAD_REQUEST,
            "Unknown request",
            "This App creation was not started on this server, or it was finished or expired: start again from the setup page.",
        );
    }
    if !code
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return error_page(
            StatusCode::BAD_REQUEST,
            "Not from GitHub",
            "The code is malformed.",
        );
    }
    let (app, pem) = match convert(&state, code).await {
        Ok(converted) => converted,
        Err(reason) => {
            tracing::warn!(%reason, "the GitHub App manifest conversion failed");
            return error_page(
                StatusCode::BAD_GATEWAY,
                "GitHub did not create the App",
                &reason.to_string(),
            );
        }
    };
    if let Err(reason) = app.save(&state.setup.data_dir, &pem) {
        return error_page(
            StatusCode::INTERNAL_SERVER_ERROR,
            "The App could not be stored",
            &format!("{reason:#}"),
        );
    }
    tracing::info!(app_id = app.id, slug = %app.slug, "GitHub App created through the setup page");
    let body = format!(
        "<p id=\"created\">The GitHub App <a href=\"{url}\">{slug}</a> (id {id}) is created; its \
         private key and webhook secret are stored in <code>{dir}</code>, readable by autofix's \
         user only.</p><ol><li><a id=\"install\" href=\"{url}/installations/new\">Install it</a> on \
         the repositories autofix may work on.</li><li>Restart autofix: it then uses the App.</li>\
         <li>Label an issue <code>{label}</code>.</li></ol>",
        url = escape(&app.html_url),
        slug = escape(&app.slug),
        id = app.id,
        dir = escape(
            &state
                .setup
                .data_dir
                .join(crate::config::data_dir::GITHUB_APP_DIR)
                .display()
                .to_string()
        ),
        label = escape(&state.setup.trigger_label),
    );
    Html(frame("GitHub App created", &body)).into_response()
}

/// Why GitHub's manifest conversion gave no App.
#[derive(Debug, thiserror::Error)]
enum ConversionError {
    #[error("cannot reach {api}: {error}")]
    Unreachable { api: String, error: reqwest::Error },
    #[error("GitHub answered {status} with no JSON: {error}")]
    NotJson {
        status: StatusCode,
        error: reqwest::Error,
    },
    #[error("GitHub answered {status}: {message}")]
    Refused { status: StatusCode, message: String },
    #[error("GitHub's answer has no App `id`")]
    NoId,
    #[error("GitHub's answer has no `{0}`")]
    Missing(&'static str),
}

/// `POST {api}/app-manifests/{code}/conversions`: the App's credentials, once.
async fn convert(state: &Shared, code: &str) -> Result<(StoredGitHubApp, String), ConversionError> {
    let api = state.setup.github_api_url.trim_end_matches('/');
    let response = state
        .http
        .post(format!("{api}/app-manifests/{code}/conversions"))
        .header(header::ACCEPT, "application/vnd.github+json")
        .header("X-GitHub-Api-Version", "2022-11-28")
        .send()
        .await
        .map_err(|error| ConversionError::Unreachable {
            api: api.to_owned(),
            error,
        })?;
    let status = response.status();
    let body: Value = response
        .json()
        .await
        .map_err(|error| ConversionError::NotJson { status, error })?;
    if !status.is_success() {
        let message = body["message"].as_str().unwrap_or("no message").to_owned();
        return Err(ConversionError::Refused { status, message });
    }
    let text = |key: &'static str| {
        body[key]
            .as_str()
            .map(str::to_owned)
            .ok_or(ConversionError::Missing(key))
    };
    let app = StoredGitHubApp {
        id: body["id"].as_u64().ok_or(ConversionError::NoId)?,
        slug: text("slug")?,
        html_url: text("html_url")?,
        webhook_secret: text("webhook_secret")?,
        client_id: text("client_id")?,
        client_secret: text("client_secret")?,
    };
    Ok((app, text("pem")?))
}

/// 32 hex digits from the kernel's random source: a `state` nobody can guess.
fn random_hex() -> String {
    let mut bytes = [0u8; 16];
    let filled = std::fs::File::open("/dev/urandom")
        .and_then(|mut file| std::io::Read::read_exact(&mut file, &mut bytes));
    filled.expect("the kernel's random source is readable");
    hex::encode(bytes)
}
