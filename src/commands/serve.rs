//! `autofix serve`: the composition of the bot — job store, forge clients, LLM, the webhook
//! ingress and the worker pool — from one typed configuration, and their orderly stop.

use std::sync::Arc;
use std::time::Duration;

use secrecy::ExposeSecret;
use tokio::sync::{Notify, watch};

use super::preflight::{self, Parts};
use super::verify::{self, Services};
use crate::config::ServiceConfig;
use crate::forge::Triggers;
use crate::llm::metered::Metered;
use crate::redact::Redactor;
use crate::server::pages::{self, ForgeLinks, PagesState, PartsCheck, SetupFacts, SetupPart};
use crate::server::{self, Metrics, MetricsAccess, ServerState};
use crate::store::Store;
use crate::telemetry::Telemetry;
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

/// What the setup and jobs pages show: the configuration and its `report` (see
/// [`preflight::setup_report`]), as configured until the services are asked.
pub fn pages_state(config: &ServiceConfig, store: Store, report: &[preflight::Part]) -> PagesState {
    let parts = setup_parts(report.to_vec());
    let github = &config.github;
    let setup = SetupFacts {
        parts,
        public_url: config.server.public_url.clone(),
        github_web_url: github.web_url.clone(),
        github_api_url: github.api_url.clone(),
        github_configured: github.app_id != 0 || !github.token.expose_secret().is_empty(),
        data_dir: std::path::PathBuf::from(&config.workdir),
        trigger_label: config.bot.trigger_label.clone(),
        push_to: config.forge.push_to,
    };
    let links = ForgeLinks {
        github_web: github.web_url.clone(),
        gitlab_web: config
            .gitlab
            .api_url
            .trim_end_matches('/')
            .trim_end_matches("/api/v4")
            .to_owned(),
    };
    PagesState::new(store, config.server.admin_token.clone(), setup, links)
}

/// The setup page's question to the services: the configuration's parts, each configured one
/// asked of its service (see [`verify`]).
fn parts_check(report: Vec<preflight::Part>, services: Arc<Services>) -> PartsCheck {
    Arc::new(move || {
        let report = report.clone();
        let services = services.clone();
        Box::pin(async move { setup_parts(verify::verify(report, &services).await) })
    })
}

fn setup_parts(report: Vec<preflight::Part>) -> Vec<SetupPart> {
    report
        .into_iter()
        .map(|part| SetupPart {
            name: part.name.to_owned(),
            readiness: part.readiness.as_str().to_owned(),
            detail: part.detail,
        })
        .collect()
}

/// Logs what each service said at the start: a broken part as an error, one not verified as a
/// warning; the answers then stay on the setup page for a minute.
async fn log_verification(pages: Arc<PagesState>) {
    let (parts, _) = pages.checked_parts(true).await;
    for part in parts {
        let (name, readiness, detail) = (&part.name, &part.readiness, &part.detail);
        match readiness.as_str() {
            "broken" => tracing::error!(part = %name, %detail, "setup: broken"),
            "verified" | "missing" => {
                tracing::info!(part = %name, %readiness, %detail, "setup")
            }
            _ => tracing::warn!(part = %name, %readiness, %detail, "setup: not verified"),
        }
    }
}

/// Stops the workers: nothing more is claimed, running jobs stop at their next stage boundary
/// and go back to the queue; those still running after `limit` are put back in the queue anyway
/// (their threads end with the process), so another replica takes them at once.
async fn drain(
    context: &WorkerContext,
    pool: tokio::task::JoinHandle<()>,
    stop_workers: watch::Sender<bool>,
    limit: Duration,
) {
    tracing::info!(
        limit_secs = limit.as_secs(),
        "autofix serve: draining the workers"
    );
    let _ = stop_workers.send(true);
    if tokio::time::timeout(limit, pool).await.is_ok() {
        return;
    }
    let released = worker::release_held(context).await;
    tracing::warn!(
        ?released,
        "jobs still running after bot.drain_secs; put back in the queue for another worker"
    );
}

/// Builds everything, serves webhooks and runs jobs until SIGTERM or ctrl-c.
pub async fn serve(config: ServiceConfig) -> Result<(), String> {
    match super::harden::open_files_to_hard_limit() {
        Ok(limit) => tracing::info!(
            soft_was = limit.was,
            soft = limit.now,
            "open files: the soft limit is the hard limit"
        ),
        Err(error) => tracing::warn!(%error, "open files: the soft limit could not be raised"),
    }
    let parts: Parts = preflight::build_parts(&config)?;
    let (github, gitlab, workdir) = (parts.github, parts.gitlab, parts.workdir);
    preflight::refuse_to_serve(&config)?;
    // The data directory holds the job store, the worktrees and perhaps a GitHub App's key: its
    // user's only.
    std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
        .create(&workdir)
        .map_err(|err| format!("workdir: cannot create {}: {err}", workdir.display()))?;
    let store = Store::open(&config.database_url())
        .await
        .map_err(|err| format!("database.url: {err}"))?;
    let triggers = Triggers {
        label: &config.bot.trigger_label,
        command: &config.bot.command_word,
    };
    crate::server::read_earlier_deliveries(&store, &triggers)
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
    // One registry for the ingress, the workers and the LLM client, shown at `/metrics`.
    let telemetry = Arc::new(Telemetry::new());
    let llm: Arc<dyn crate::llm::LlmProvider> = Arc::from(parts.llm);
    let services = Arc::new(Services::new(
        &config,
        github.clone(),
        gitlab.clone(),
        llm.clone(),
        known_secrets(&config),
    ));
    let llm = Metered::new(
        llm,
        &config.llm.provider.to_string(),
        &config.llm.model,
        telemetry.clone(),
    );
    let metrics = Arc::new(Metrics::with_telemetry(telemetry.clone()));
    let state = ServerState {
        store: store.clone(),
        github_secrets: config.github.all_webhook_secrets(),
        gitlab_secrets: config.gitlab.all_webhook_secrets(),
        trigger_label: config.bot.trigger_label.clone(),
        command_word: config.bot.command_word.clone(),
        remark_wait: Duration::from_millis(config.bot.remark_wait_ms),
        body_limit: config.server.body_limit_bytes,
        read_timeout: Duration::from_secs(config.server.read_timeout_secs),
        metrics: metrics.clone(),
        metrics_access: MetricsAccess::new(
            config.server.metrics_public,
            &config.server.admin_token,
        ),
        job_queued: wake.clone(),
    };
    let sandbox = super::harden::check_sandbox(&config.sandbox());
    if let Err(line) = &sandbox {
        tracing::error!("{line}: every job will fail with SANDBOX_UNAVAILABLE until it works");
    }
    let pricing = config.pricing();
    if pricing.known() {
        tracing::info!(price = %pricing.describe(), "the model's tokens are priced");
    } else {
        tracing::warn!(
            model = %pricing.model,
            "price unknown: no built-in price and no llm.price, so the model's tokens count as $0 and the spending caps never stop a job"
        );
    }
    let report = preflight::setup_report(&config, &sandbox);
    let pages =
        pages_state(&config, store.clone(), &report).with_checks(parts_check(report, services));
    if state.github_secrets.is_empty() && state.gitlab_secrets.is_empty() {
        tracing::warn!(
            "no forge is configured yet: open http://{address}/ to set autofix up \
             (every webhook delivery is refused until then)"
        );
    }
    let context = Arc::new(
        WorkerContext::new(
            store.clone(),
            github,
            gitlab,
            Arc::new(llm),
            workdir,
            parts.identity,
            parts.settings,
            known_secrets(&config),
        )
        .with_telemetry(telemetry),
    );
    let (stop_workers, stop) = watch::channel(false);
    let pool = tokio::spawn(worker::run_pool(context.clone(), wake, stop));
    tracing::info!(
        %address,
        data_directory = %config.workdir,
        database = %crate::config::without_password(&config.database_url()),
        "autofix serve: listening for webhooks"
    );
    let pages = Arc::new(pages);
    // Never in the way of the start: the services are asked while the server already listens.
    tokio::spawn(log_verification(pages.clone()));
    let routes = server::router(state).merge(pages::router_shared(pages));
    let served = server::serve_with(
        listener,
        routes,
        parts.door,
        metrics,
        server::shutdown_signal(),
    )
    .await;
    drain(
        &context,
        pool,
        stop_workers,
        Duration::from_secs(config.bot.drain_secs),
    )
    .await;
    store.close().await;
    tracing::info!("autofix serve: stopped");
    served.map_err(|err| format!("serving on {address}: {err}"))
}
