//! The checks `autofix serve` runs before it listens, shared with `autofix config check` and the
//! setup page: what would stop the bot, and what it can and cannot do once it runs.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};

use crate::config::{LogFormat, ServiceConfig, placeholders};
use crate::forge::github_api::{APP_CANNOT_FORK, GitHubClient};
use crate::forge::gitlab_api::GitLabClient;
use crate::forge::{Forge, PushTo};
use crate::git::Identity;
use crate::llm::LlmProvider;
use crate::server::DoorSettings;
use crate::worker::WorkerSettings;

/// The parts of the bot built from a configuration that `serve` accepts.
pub struct Parts {
    pub settings: WorkerSettings,
    pub github: Option<Arc<dyn Forge>>,
    pub gitlab: Option<Arc<dyn Forge>>,
    pub identity: Identity,
    pub llm: Box<dyn LlmProvider>,
    pub workdir: PathBuf,
    pub door: DoorSettings,
}

/// Builds every part `serve` needs from `config`, or says in one line which key stops it.
pub fn build_parts(config: &ServiceConfig) -> Result<Parts, String> {
    let settings = worker_settings(config)?;
    check_push_target(config)?;
    listen_addresses(&config.server.listen)?;
    let door = door_settings(config)?;
    let (github, gitlab) = forge_clients(config)?;
    let identity = Identity::new(&config.git.author_name, &config.git.author_email)
        .map_err(|err| format!("git.author_name / git.author_email: {err}"))?;
    let llm =
        crate::llm::provider(config.provider_config()).map_err(|err| format!("llm: {err}"))?;
    super::logging::filter(&config.log, None)?;
    let workdir = PathBuf::from(&config.workdir);
    check_writable(&workdir).map_err(|err| format!("workdir: {err}"))?;
    Ok(Parts {
        settings,
        github,
        gitlab,
        identity,
        llm,
        workdir,
        door,
    })
}

/// What `serve` refuses to start with although `config check` reports it as a broken part: an
/// admin token anyone could guess opens the very pages that would say it is broken.
pub fn refuse_to_serve(config: &ServiceConfig) -> Result<(), String> {
    match placeholders::weak_admin_token(config.server.admin_token.expose_secret()) {
        Some(why) => Err(why),
        None => Ok(()),
    }
}

/// The addresses `server.listen` names (an IP address or a host name, with a port), as `serve`
/// binds them, or one line saying why it names none.
pub fn listen_addresses(listen: &str) -> Result<Vec<std::net::SocketAddr>, String> {
    use std::net::ToSocketAddrs;
    let addresses: Vec<_> = listen
        .to_socket_addrs()
        .map_err(|err| {
            format!(
                "server.listen: cannot listen on {listen:?}: {err} (expected an address and a \
                 port, e.g. 127.0.0.1:8080 or [::1]:8080)"
            )
        })?
        .collect();
    if addresses.is_empty() {
        return Err(format!("server.listen: {listen:?} names no address"));
    }
    Ok(addresses)
}

/// The webhook server's connection deadlines and cap; none may be 0 (a door that never opens,
/// or closes every connection at once).
fn door_settings(config: &ServiceConfig) -> Result<DoorSettings, String> {
    let server = &config.server;
    for (key, value) in [
        ("header_read_timeout_ms", server.header_read_timeout_ms),
        ("idle_timeout_ms", server.idle_timeout_ms),
        ("max_connections", server.max_connections as u64),
    ] {
        if value == 0 {
            return Err(format!("server.{key} must be at least 1, not 0"));
        }
    }
    Ok(DoorSettings {
        header_read_timeout: Duration::from_millis(server.header_read_timeout_ms),
        idle_timeout: Duration::from_millis(server.idle_timeout_ms),
        max_connections: server.max_connections,
    })
}

/// The GitHub and the GitLab client, each when configured.
type ForgeClients = (Option<Arc<dyn Forge>>, Option<Arc<dyn Forge>>);

/// The forge clients the configuration asks for; a webhook without API credentials is refused,
/// naming the keys, rather than failing every job later.
fn forge_clients(config: &ServiceConfig) -> Result<ForgeClients, String> {
    let github = config
        .github
        .client_settings()
        .and_then(GitHubClient::from_settings)
        .map_err(|err| format!("github: {err}"))?
        .map(|client| Arc::new(client) as Arc<dyn Forge>);
    let gitlab = config
        .gitlab
        .client_settings()
        .and_then(GitLabClient::from_settings)
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
    let word = &bot.command_word;
    if word.is_empty()
        || !word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(format!(
            "bot.command_word must be letters, digits, `-` or `_` (it is typed as `/{word} retry`), not {word:?}"
        ));
    }
    Ok(WorkerSettings {
        trigger_label: bot.trigger_label.clone(),
        command_word: bot.command_word.clone(),
        ci_max_repairs: config.ci.max_repairs,
        failed_label: bot.failed_label.clone(),
        workers: bot.workers.max(1),
        lease: Duration::from_secs(bot.lease_secs),
        poll_interval: Duration::from_millis(bot.poll_interval_ms.max(10)),
        max_attempts: bot.max_attempts.max(1),
        push_to: config.forge.push_to,
        pipeline: crate::pipeline::settings::PipelineSettings::from_config(config),
    })
}

/// Refuses a push target the credentials cannot serve: a GitHub App has no user to own a fork.
fn check_push_target(config: &ServiceConfig) -> Result<(), String> {
    if config.forge.push_to == PushTo::Fork && config.github.app_id != 0 {
        return Err(format!(
            "forge.push_to = \"fork\": {APP_CANNOT_FORK}; give autofix a bot user's token \
             (github.token, and no github.app_id) to push to its fork, or keep push_to = \"base\" \
             and require approval for the workflows that use secrets (see the setup page)"
        ));
    }
    Ok(())
}

/// `dir` exists and this user can write in it, or it can be created: the nearest existing
/// folder above it is writable. Nothing is created.
fn check_writable(dir: &Path) -> Result<(), String> {
    let mut existing = dir;
    while !existing.exists() {
        match existing.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => existing = parent,
            _ => {
                existing = Path::new(".");
                break;
            }
        }
    }
    if !existing.is_dir() {
        return Err(format!("{} is not a folder", existing.display()));
    }
    let probe = tempfile::Builder::new()
        .prefix(".autofix-write-check")
        .tempfile_in(existing);
    match probe {
        Ok(_) => Ok(()),
        Err(err) if existing == dir => Err(format!("cannot write in {}: {err}", dir.display())),
        Err(err) => Err(format!(
            "cannot create {}: {} is not writable ({err}); set AUTOFIX__WORKDIR to a folder this user owns",
            dir.display(),
            existing.display()
        )),
    }
}

/// How far one part of the bot is set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    /// Configured and seen to work: checked here, or answered by its service.
    Verified,
    /// Configured, but its service has not been asked (or did not answer).
    Configured,
    /// Not configured; the bot runs without it.
    Missing,
    /// Configured, but it cannot work as it is.
    Broken,
}

impl Readiness {
    pub fn as_str(self) -> &'static str {
        match self {
            Readiness::Verified => "verified",
            Readiness::Configured => "configured, not verified",
            Readiness::Missing => "missing",
            Readiness::Broken => "broken",
        }
    }
}

/// One line of the setup report: a part, how ready it is, and what it is or what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    pub name: &'static str,
    pub readiness: Readiness,
    pub detail: String,
}

impl Part {
    pub(super) fn new(name: &'static str, readiness: Readiness, detail: impl Into<String>) -> Part {
        Part {
            name,
            readiness,
            detail: detail.into(),
        }
    }
}

/// The parts whose service is asked by [`super::verify`]: until then they are at most configured.
pub const DATABASE: &str = "database";
pub const GITHUB: &str = "github";
pub const GITLAB: &str = "gitlab";
pub const LLM: &str = "llm";
pub const PUBLIC_URL: &str = "public URL";

/// What is configured and what is missing, part by part, from the configuration alone (nothing
/// is asked over the network); `sandbox` is the result of trying it.
pub fn setup_report(config: &ServiceConfig, sandbox: &Result<String, String>) -> Vec<Part> {
    let mut parts = vec![
        Part::new(
            "data directory",
            Readiness::Verified,
            format!("{} ({})", config.workdir, config.workdir_origin),
        ),
        database_part(config),
        github_part(config),
        gitlab_part(config),
        push_target_part(config),
        llm_part(config),
        match sandbox {
            Ok(line) => Part::new(
                "sandbox",
                Readiness::Verified,
                line.trim_start_matches("sandbox: "),
            ),
            Err(line) => Part::new(
                "sandbox",
                Readiness::Broken,
                line.trim_start_matches("sandbox: "),
            ),
        },
        public_url_part(config),
        admin_part(config),
    ];
    let format = match config.log.format {
        LogFormat::Text => "text",
        LogFormat::Json => "json",
    };
    parts.push(Part::new(
        "logs",
        Readiness::Verified,
        format!(
            "{format}, level {} (RUST_LOG wins when set)",
            config.log.level
        ),
    ));
    parts
}

fn admin_part(config: &ServiceConfig) -> Part {
    let metrics = if config.server.metrics_public {
        "; /metrics answers anyone (server.metrics_public)"
    } else {
        ", and so does /metrics"
    };
    let token = config.server.admin_token.expose_secret();
    if token.is_empty() {
        return Part::new(
            "admin pages",
            Readiness::Missing,
            format!(
                "no server.admin_token: the setup and jobs pages answer on loopback only{metrics}"
            ),
        );
    }
    match placeholders::weak_admin_token(token) {
        Some(why) => Part::new("admin pages", Readiness::Broken, why),
        None => Part::new(
            "admin pages",
            Readiness::Verified,
            format!("server.admin_token is set: the pages ask for it as a bearer token{metrics}"),
        ),
    }
}

fn public_url_part(config: &ServiceConfig) -> Part {
    let url = config.server.public_url.trim();
    if url.is_empty() {
        return Part::new(
            PUBLIC_URL,
            Readiness::Missing,
            "no server.public_url: the GitHub App's webhook address is taken from the browser's; \
             set it to have the address checked",
        );
    }
    match reqwest::Url::parse(url) {
        Ok(parsed) if matches!(parsed.scheme(), "http" | "https") => Part::new(
            PUBLIC_URL,
            Readiness::Configured,
            format!("{url}: the forges deliver webhooks to {url}/webhooks/…"),
        ),
        _ => Part::new(
            PUBLIC_URL,
            Readiness::Broken,
            format!("server.public_url {url:?} is not an http(s) address"),
        ),
    }
}

fn database_part(config: &ServiceConfig) -> Part {
    let url = config.database_url();
    let shown = crate::config::without_password(&url);
    let kind = if url.starts_with("postgres") {
        "PostgreSQL: replicas may share it"
    } else {
        "SQLite: one process only"
    };
    Part::new(DATABASE, Readiness::Configured, format!("{shown} ({kind})"))
}

/// The first placeholder among `secrets` (named by their keys), said without its value.
fn placeholder_among(secrets: &[(&str, &SecretString)]) -> Option<String> {
    secrets
        .iter()
        .find(|(_, secret)| placeholders::is_placeholder(secret.expose_secret()))
        .map(|(key, _)| format!("{key} is a placeholder from an example, not a secret"))
}

fn github_part(config: &ServiceConfig) -> Part {
    let github = &config.github;
    let secrets = github.all_webhook_secrets();
    let credentials = if github.app_id != 0 {
        match &config.github_app_origin {
            Some(file) => format!(
                "GitHub App {} (created by the setup page, {})",
                github.app_id,
                file.display()
            ),
            None => format!("GitHub App {}", github.app_id),
        }
    } else if !github.token.expose_secret().is_empty() {
        "a token".to_owned()
    } else {
        return Part::new(
            GITHUB,
            Readiness::Missing,
            "not configured: create a GitHub App on the setup page, or set AUTOFIX__GITHUB__TOKEN and AUTOFIX__GITHUB__WEBHOOK_SECRET",
        );
    };
    let detail = format!("{credentials} at {}", github.api_url);
    let mut named: Vec<(&str, &SecretString)> = vec![("github.token", &github.token)];
    named.extend(
        secrets
            .iter()
            .map(|secret| ("a github webhook secret", secret)),
    );
    if let Some(why) = placeholder_among(&named) {
        return Part::new(GITHUB, Readiness::Broken, format!("{detail}; {why}"));
    }
    if secrets.is_empty() {
        return Part::new(
            GITHUB,
            Readiness::Broken,
            format!(
                "{detail}; no webhook secret: every delivery is refused (set AUTOFIX__GITHUB__WEBHOOK_SECRET)"
            ),
        );
    }
    Part::new(
        GITHUB,
        Readiness::Configured,
        format!("{detail}; webhook secret set"),
    )
}

fn gitlab_part(config: &ServiceConfig) -> Part {
    let gitlab = &config.gitlab;
    let secrets = gitlab.all_webhook_secrets();
    let token = !gitlab.token.expose_secret().is_empty();
    if !token && secrets.is_empty() {
        return Part::new(
            GITLAB,
            Readiness::Missing,
            "not configured: set AUTOFIX__GITLAB__TOKEN (api scope) and AUTOFIX__GITLAB__WEBHOOK_SECRET",
        );
    }
    let detail = format!("a token at {}", gitlab.api_url);
    let mut named: Vec<(&str, &SecretString)> = vec![("gitlab.token", &gitlab.token)];
    named.extend(
        secrets
            .iter()
            .map(|secret| ("a gitlab webhook secret", secret)),
    );
    if let Some(why) = placeholder_among(&named) {
        return Part::new(GITLAB, Readiness::Broken, format!("{detail}; {why}"));
    }
    if secrets.is_empty() {
        return Part::new(
            GITLAB,
            Readiness::Broken,
            "a token but no webhook secret: every delivery is refused (set AUTOFIX__GITLAB__WEBHOOK_SECRET)",
        );
    }
    Part::new(
        GITLAB,
        Readiness::Configured,
        format!("{detail}; webhook secret set"),
    )
}

/// Where the bot's branches go, and so what the repositories' CI runs them with.
fn push_target_part(config: &ServiceConfig) -> Part {
    match config.forge.push_to {
        PushTo::Base => Part::new(
            "push target",
            Readiness::Verified,
            "base: the bot's branches are pushed to the repository itself, where its \
             pull_request workflows (GitHub) and branch and merge request pipelines (GitLab) run \
             them with the repository's secrets unless those require approval",
        ),
        PushTo::Fork if config.github.app_id != 0 => Part::new(
            "push target",
            Readiness::Broken,
            format!("fork: {APP_CANNOT_FORK}"),
        ),
        PushTo::Fork => Part::new(
            "push target",
            Readiness::Verified,
            "fork: a fork owned by the bot's user (made once, then reused) holds the bot's \
             branches; the repository's CI runs their pull and merge requests without its secrets",
        ),
    }
}

fn llm_part(config: &ServiceConfig) -> Part {
    let llm = &config.llm;
    let key = llm.api_key.expose_secret();
    let what = format!("{} {} at {}", llm.provider, llm.model, llm.base_url);
    if key.is_empty() && crate::llm::is_hosted_vendor(&llm.base_url) {
        return Part::new(
            LLM,
            Readiness::Broken,
            format!("{what}: a hosted vendor needs an api key (set AUTOFIX__LLM__API_KEY)"),
        );
    }
    if placeholders::is_placeholder(key) {
        return Part::new(
            LLM,
            Readiness::Broken,
            format!("{what}: llm.api_key is a placeholder from an example, not a key"),
        );
    }
    let key = if key.is_empty() {
        "no api key: a local model server"
    } else {
        "api key set"
    };
    Part::new(LLM, Readiness::Configured, format!("{what} ({key})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(vars: &[(&str, &str)]) -> ServiceConfig {
        let vars = vars.iter().map(|(k, v)| (k.to_string(), v.to_string()));
        ServiceConfig::load(None, vars).unwrap()
    }

    #[test]
    fn an_unconfigured_bot_says_what_is_missing_part_by_part() {
        let data = tempfile::tempdir().unwrap();
        let config = config(&[("AUTOFIX__WORKDIR", data.path().to_str().unwrap())]);
        let report = setup_report(&config, &Ok("sandbox: bwrap works".into()));
        let state = |name: &str| {
            report
                .iter()
                .find(|part| part.name == name)
                .map(|part| part.readiness)
                .unwrap()
        };
        assert_eq!(state("github"), Readiness::Missing);
        assert_eq!(state("gitlab"), Readiness::Missing);
        assert_eq!(state("sandbox"), Readiness::Verified);
        assert_eq!(state("admin pages"), Readiness::Missing);
        assert!(
            build_parts(&config).is_ok(),
            "nothing configured still starts"
        );
    }

    #[test]
    fn a_token_without_a_webhook_secret_is_broken_and_says_so() {
        let data = tempfile::tempdir().unwrap();
        let config = config(&[
            ("AUTOFIX__WORKDIR", data.path().to_str().unwrap()),
            ("AUTOFIX__GITLAB__TOKEN", "glpat"),
            (
                "AUTOFIX__DATABASE__URL",
                "postgres://bot:hunter2@db/autofix",
            ),
        ]);
        let report = setup_report(&config, &Err("sandbox: bwrap: not found".into()));
        let gitlab = report.iter().find(|part| part.name == "gitlab").unwrap();
        assert_eq!(gitlab.readiness, Readiness::Broken);
        let database = report.iter().find(|part| part.name == "database").unwrap();
        assert_eq!(
            database.detail,
            "postgres://bot:(set)@db/autofix (PostgreSQL: replicas may share it)"
        );
        let sandbox = report.iter().find(|part| part.name == "sandbox").unwrap();
        assert_eq!(sandbox.readiness, Readiness::Broken);
    }

    // A runtime, for the GitHub client the token configuration builds.
    #[tokio::test]
    async fn a_github_app_cannot_push_to_a_fork_and_the_report_says_where_branches_go() {
        let data = tempfile::tempdir().unwrap();
        let workdir = data.path().to_str().unwrap();
        let app = config(&[
            ("AUTOFIX__WORKDIR", workdir),
            ("AUTOFIX__FORGE__PUSH_TO", "fork"),
            ("AUTOFIX__GITHUB__APP_ID", "7"),
            ("AUTOFIX__GITHUB__PRIVATE_KEY_PATH", "/nonexistent/key.pem"),
        ]);
        let err = build_parts(&app).err().expect("an App cannot own a fork");
        assert!(
            err.starts_with("forge.push_to = \"fork\": a GitHub App's"),
            "{err}"
        );
        assert!(!err.contains('\n'), "one line: {err}");
        let part = |config: &ServiceConfig| {
            setup_report(config, &Ok("sandbox: bwrap works".into()))
                .into_iter()
                .find(|part| part.name == "push target")
                .unwrap()
        };
        assert_eq!(part(&app).readiness, Readiness::Broken);
        let token = config(&[
            ("AUTOFIX__WORKDIR", workdir),
            ("AUTOFIX__FORGE__PUSH_TO", "fork"),
            ("AUTOFIX__GITHUB__TOKEN", "ghp_x"),
        ]);
        assert!(build_parts(&token).is_ok(), "a user's token can fork");
        assert!(part(&token).detail.starts_with("fork: "));
        let base = config(&[("AUTOFIX__WORKDIR", workdir)]);
        assert!(part(&base).detail.starts_with("base: "));
    }

    #[test]
    fn the_door_defaults_are_the_ones_the_server_uses_without_a_configuration() {
        let data = tempfile::tempdir().unwrap();
        let config = config(&[("AUTOFIX__WORKDIR", data.path().to_str().unwrap())]);
        let parts = build_parts(&config).expect("the defaults start");
        assert_eq!(parts.door, DoorSettings::default());
    }

    #[test]
    fn a_door_limit_of_zero_stops_the_start_with_its_key() {
        let data = tempfile::tempdir().unwrap();
        for key in [
            "HEADER_READ_TIMEOUT_MS",
            "IDLE_TIMEOUT_MS",
            "MAX_CONNECTIONS",
        ] {
            let config = config(&[
                ("AUTOFIX__WORKDIR", data.path().to_str().unwrap()),
                (&format!("AUTOFIX__SERVER__{key}"), "0"),
            ]);
            let err = build_parts(&config).err().expect("0 is refused");
            assert_eq!(
                err,
                format!(
                    "server.{} must be at least 1, not 0",
                    key.to_ascii_lowercase()
                )
            );
        }
    }

    #[test]
    fn a_data_directory_under_a_folder_this_user_cannot_write_stops_the_start() {
        let data = tempfile::tempdir().unwrap();
        let file = data.path().join("a-file");
        std::fs::write(&file, "").unwrap();
        let config = config(&[("AUTOFIX__WORKDIR", file.join("autofix").to_str().unwrap())]);
        let err = build_parts(&config).err().expect("a file is no folder");
        assert!(err.starts_with("workdir: "), "{err}");
        assert!(err.contains("is not a folder"), "{err}");
    }
}
