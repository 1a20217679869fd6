//! `autofix serve`: the composition of the bot — job store, forge clients, LLM, the webhook
//! ingress and the worker pool — from one typed configuration, and their orderly stop.

use std::sync::Arc;
use std::time::Duration;

use secrecy::ExposeSecret;
use tokio::sync::{Notify, watch};

use super::preflight::{self, Parts};
use crate::config::ServiceConfig;
use crate::redact::Redactor;
use crate::server::{self, ServerState};
use crate::store::Store;
use crate::worker::{self, WorkerContext};

/// Every secret the configuration holds, to be hidden from whatever the bot writes.
pub fn known_secrets(config: &ServiceConfig) -> Redactor {
    let mut redactor = Redactor::new();
    redactor.register(&config.llm.api_key);
    redactor.register(&config.server.admin_token);
    if let Some(password) = crate::config::url_password(&config.database.url) {
        redactor.register(&secrecy::SecretString::from(password.to_owned()));
    }
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

/// Builds everything, serves webhooks and runs jobs until SIGTERM or ctrl-c.
pub async fn serve(config: ServiceConfig) -> Result<(), String> {
    let Parts {
        settings,
        github,
        gitlab,
        identity,
        llm,
        workdir,
    } = preflight::build_parts(&config)?;
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
