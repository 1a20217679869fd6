//! `autofix serve`: the composition of the bot — job store, forge clients, LLM, the webhook
//! ingress and the worker pool — from one typed configuration, and their orderly stop.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use secrecy::ExposeSecret;
use tokio::sync::{Notify, watch};

use crate::config::ServiceConfig;
use crate::forge::Forge;
use crate::forge::github_api::GitHubClient;
use crate::forge::gitlab_api::GitLabClient;
use crate::git::Identity;
use crate::redact::Redactor;
use crate::server::{self, ServerState};
use crate::store::Store;
use crate::worker::{self, WorkerContext, WorkerSettings};

/// Every secret the configuration holds, to be hidden from whatever the bot writes.
pub fn known_secrets(config: &ServiceConfig) -> Redactor {
    let mut redactor = Redactor::new();
    redactor.register(&config.llm.api_key);
    for secret in config
        .github
        .all_webhook_secrets()
        .iter()
        .chain(&config.gitlab.all_webhook_secrets())
        .chain([&config.github.token, &config.gitlab.token])
    {
        redactor.register(secret);
    }
    redactor
}

/// The GitHub and the GitLab client, each when configured.
type ForgeClients = (Option<Arc<dyn Forge>>, Option<Arc<dyn Forge>>);

/// The forge clients the configuration asks for; a webhook without API credentials is refused
/// at start-up, naming the keys, rather than failing every job later.
fn forge_clients(config: &ServiceConfig) -> Result<ForgeClients, String> {
    let github = GitHubClient::from_config(&config.github)
        .map_err(|err| format!("github: {err}"))?
        .map(|client| Arc::new(client) as Arc<dyn Forge>);
    let gitlab = GitLabClient::from_config(&config.gitlab)
        .map_err(|err| format!("gitlab: {err}"))?
        .map(|client| Arc::new(client) as Arc<dyn Forge>);
    if github.is_none() && !config.github.all_webhook_secrets().is_empty() {
        return Err(
            "github.token or github.app_id: a GitHub webhook secret is set but no API \
                    credentials, so no job could run"
                .into(),
        );
    }
    if gitlab.is_none() && !config.gitlab.all_webhook_secrets().is_empty() {
        return Err(
            "gitlab.token: a GitLab webhook secret is set but no API token, so no job could run"
                .into(),
        );
    }
    Ok((github, gitlab))
}

fn worker_settings(config: &ServiceConfig) -> Result<WorkerSettings, String> {
    let bot = &config.bot;
    if bot.lease_secs < 3 {
        return Err(format!(
            "bot.lease_secs must be at least 3 (the lease is renewed every third of it), not {}",
            bot.lease_secs
        ));
    }
    if bot.failed_label.trim().is_empty() {
        return Err("bot.failed_label must not be empty".into());
    }
    Ok(WorkerSettings {
        trigger_label: bot.trigger_label.clone(),
        failed_label: bot.failed_label.clone(),
        workers: bot.workers.max(1),
        lease: Duration::from_secs(bot.lease_secs),
        poll_interval: Duration::from_millis(bot.poll_interval_ms.max(10)),
        max_attempts: bot.max_attempts.max(1),
        default_validate_timeout: Duration::from_secs(config.exec.default_timeout_secs),
        output_limit: config.exec.output_limit_bytes,
        context_tokens: config.pipeline.context_tokens,
        output_caps: crate::pipeline::json_stage::OutputCaps::from_config(&config.llm),
        sandbox: config.sandbox(),
    })
}

/// Builds everything, serves webhooks and runs jobs until SIGTERM or ctrl-c.
pub async fn serve(config: ServiceConfig) -> Result<(), String> {
    let settings = worker_settings(&config)?;
    let (github, gitlab) = forge_clients(&config)?;
    let identity = Identity::new(&config.git.author_name, &config.git.author_email)
        .map_err(|err| format!("git.author_name / git.author_email: {err}"))?;
    let llm =
        crate::llm::provider(config.provider_config()).map_err(|err| format!("llm: {err}"))?;
    let workdir = PathBuf::from(&config.workdir);
    std::fs::create_dir_all(&workdir)
        .map_err(|err| format!("workdir: cannot create {}: {err}", workdir.display()))?;
    let store = Store::open(&config.database_url())
        .await
        .map_err(|err| format!("database.url: {err}"))?;
    let listener = tokio::net::TcpListener::bind(&config.server.listen)
        .await
        .map_err(|err| {
            format!(
                "server.listen: cannot listen on {}: {err}",
                config.server.listen
            )
        })?;
    let address = listener
        .local_addr()
        .map_err(|err| format!("server.listen: {err}"))?;
    let wake = Arc::new(Notify::new());
    let state = ServerState {
        store: store.clone(),
        github_secrets: config.github.all_webhook_secrets(),
        gitlab_secrets: config.gitlab.all_webhook_secrets(),
        trigger_label: config.bot.trigger_label.clone(),
        body_limit: config.server.body_limit_bytes,
        read_timeout: Duration::from_secs(config.server.read_timeout_secs),
        metrics: Default::default(),
        job_queued: wake.clone(),
    };
    if state.github_secrets.is_empty() && state.gitlab_secrets.is_empty() {
        tracing::warn!("no webhook secret is configured: every delivery will be refused (401)");
    }
    if config.llm.api_key.expose_secret().is_empty() {
        tracing::info!(
            "llm.api_key is empty: fine for local model servers, not for hosted vendors"
        );
    }
    let context = Arc::new(WorkerContext::new(
        store.clone(),
        github,
        gitlab,
        Arc::from(llm),
        workdir,
        identity,
        settings,
        known_secrets(&config),
    ));
    let (stop_workers, stop) = watch::channel(false);
    let pool = tokio::spawn(worker::run_pool(context, wake, stop));
    tracing::info!(%address, "autofix serve: listening for webhooks");
    let served = server::serve(listener, server::router(state), server::shutdown_signal()).await;
    let _ = stop_workers.send(true);
    if tokio::time::timeout(Duration::from_secs(30), pool)
        .await
        .is_err()
    {
        tracing::warn!(
            "jobs still running after 30 s; their leases let another start take them over"
        );
    }
    store.close().await;
    tracing::info!("autofix serve: stopped");
    served.map_err(|err| format!("serving on {address}: {err}"))
}
