//! Stories about loading the service configuration: the shipped defaults, a file and variables
//! over them, secrets from files, and the keys and values refused by name.

use secrecy::ExposeSecret;

use super::*;
use crate::forge::PushTo;
use crate::llm::ProviderKind;

fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn the_shipped_defaults_parse_into_the_typed_config() {
    let config = ServiceConfig::load(None, vec![]).unwrap();
    assert_eq!(config.llm.provider, ProviderKind::Openai);
    assert_eq!(config.llm.max_retries, 3);
    assert_eq!(config.exec.output_limit_bytes, 1_048_576);
}

#[test]
fn environment_variables_override_keys_with_their_types() {
    let config = ServiceConfig::load(
        None,
        vars(&[
            ("AUTOFIX__LLM__PROVIDER", "anthropic"),
            ("AUTOFIX__LLM__MAX_RETRIES", "5"),
            ("AUTOFIX__LLM__API_KEY", "sk-test"),
            ("PATH", "/bin"),
        ]),
    )
    .unwrap();
    assert_eq!(config.llm.provider, ProviderKind::Anthropic);
    assert_eq!(config.llm.max_retries, 5);
    assert_eq!(config.llm.api_key.expose_secret(), "sk-test");
}

#[test]
fn a_wrong_key_or_value_fails_with_its_name() {
    let unknown = ServiceConfig::load(None, vars(&[("AUTOFIX__LLM__MODLE", "x")])).unwrap_err();
    assert_eq!(
        unknown.to_string(),
        "configuration: AUTOFIX__LLM__MODLE names no configuration key"
    );
    let typed =
        ServiceConfig::load(None, vars(&[("AUTOFIX__LLM__MAX_RETRIES", "many")])).unwrap_err();
    assert_eq!(
        typed.to_string(),
        "configuration: AUTOFIX__LLM__MAX_RETRIES must be a whole number, not `many`"
    );
    let provider =
        ServiceConfig::load(None, vars(&[("AUTOFIX__LLM__PROVIDER", "bard")])).unwrap_err();
    assert!(provider.to_string().contains("bard"), "{provider}");
    let file = ServiceConfig::load(Some(("autofix.toml", "[llm]\ntemperature = 1\n")), vec![])
        .unwrap_err();
    assert_eq!(
        file.to_string(),
        "configuration: unknown key `llm.temperature`"
    );
}

#[test]
fn the_dependency_caches_hold_ten_gibibytes_unless_told_otherwise_and_zero_turns_them_off() {
    let default = ServiceConfig::load(None, vec![]).unwrap();
    assert_eq!(default.exec.cache_max_bytes, 10 * 1024 * 1024 * 1024);
    let off = ServiceConfig::load(None, vars(&[("AUTOFIX__EXEC__CACHE_MAX_BYTES", "0")])).unwrap();
    assert_eq!(off.exec.cache_max_bytes, 0);
    let wrong =
        ServiceConfig::load(None, vars(&[("AUTOFIX__EXEC__CACHE_MAX_BYTES", "10G")])).unwrap_err();
    assert_eq!(
        wrong.to_string(),
        "configuration: AUTOFIX__EXEC__CACHE_MAX_BYTES must be a whole number, not `10G`"
    );
}

#[test]
fn the_server_defaults_listen_on_loopback_with_no_webhook_secrets() {
    let config = ServiceConfig::load(None, vec![]).unwrap();
    assert_eq!(config.server.listen, "127.0.0.1:8080");
    assert_eq!(config.server.body_limit_bytes, 5 * 1024 * 1024);
    assert_eq!(config.server.header_read_timeout_ms, 10_000);
    assert_eq!(config.server.idle_timeout_ms, 60_000);
    assert_eq!(config.server.max_connections, 1024);
    assert!(config.github.webhook_secrets.is_empty());
    assert!(config.gitlab.webhook_secrets.is_empty());
    assert_eq!(config.bot.trigger_label, "auto-fix");
    assert_eq!(config.database.url, "autofix.db");
}

#[test]
fn webhook_secrets_come_from_a_comma_separated_variable() {
    let config = ServiceConfig::load(
        None,
        vars(&[
            (
                "AUTOFIX__GITHUB__WEBHOOK_SECRETS",
                " old-secret , new-secret,",
            ),
            ("AUTOFIX__GITLAB__WEBHOOK_SECRETS", "token"),
        ]),
    )
    .unwrap();
    let github: Vec<&str> = config
        .github
        .webhook_secrets
        .iter()
        .map(|secret| secret.expose_secret())
        .collect();
    assert_eq!(github, ["old-secret", "new-secret"]);
    assert_eq!(config.gitlab.webhook_secrets[0].expose_secret(), "token");
}

#[test]
fn the_single_webhook_secret_of_the_design_joins_the_rotation_list() {
    let config = ServiceConfig::load(
        None,
        vars(&[
            ("AUTOFIX__GITHUB__WEBHOOK_SECRET", "current"),
            ("AUTOFIX__GITHUB__WEBHOOK_SECRETS", "previous"),
        ]),
    )
    .unwrap();
    let secrets: Vec<String> = config
        .github
        .all_webhook_secrets()
        .iter()
        .map(|secret| secret.expose_secret().to_owned())
        .collect();
    assert_eq!(secrets, ["current", "previous"]);
    assert!(config.gitlab.all_webhook_secrets().is_empty());
}

#[test]
fn a_relative_database_path_lives_in_the_workdir() {
    let config = ServiceConfig::load(
        Some((
            "autofix.toml",
            "workdir = \"/srv/bot\"\n[database]\nurl = \"jobs.db\"\n",
        )),
        vec![],
    )
    .unwrap();
    assert_eq!(config.database_url(), "/srv/bot/jobs.db");
    let postgres = ServiceConfig::load(
        None,
        vars(&[("AUTOFIX__DATABASE__URL", "postgres://db/autofix")]),
    )
    .unwrap();
    assert_eq!(postgres.database_url(), "postgres://db/autofix");
}

#[test]
fn a_mistyped_server_key_fails_with_its_name() {
    let limit = ServiceConfig::load(None, vars(&[("AUTOFIX__SERVER__BODY_LIMIT_BYTES", "5MiB")]))
        .unwrap_err();
    assert_eq!(
        limit.to_string(),
        "configuration: AUTOFIX__SERVER__BODY_LIMIT_BYTES must be a whole number, not `5MiB`"
    );
    let connections =
        ServiceConfig::load(None, vars(&[("AUTOFIX__SERVER__MAX_CONNECTIONS", "lots")]))
            .unwrap_err();
    assert_eq!(
        connections.to_string(),
        "configuration: AUTOFIX__SERVER__MAX_CONNECTIONS must be a whole number, not `lots`"
    );
    let timeout = ServiceConfig::load(
        None,
        vars(&[("AUTOFIX__SERVER__HEADER_READ_TIMEOUT_MS", "10s")]),
    )
    .unwrap_err();
    assert_eq!(
        timeout.to_string(),
        "configuration: AUTOFIX__SERVER__HEADER_READ_TIMEOUT_MS must be a whole number, not `10s`"
    );
    let unknown = ServiceConfig::load(Some(("autofix.toml", "[github]\nsecret = \"x\"\n")), vec![])
        .unwrap_err();
    assert_eq!(
        unknown.to_string(),
        "configuration: unknown key `github.secret`"
    );
}

#[test]
fn every_secret_and_the_database_url_can_come_from_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let url = dir.path().join("database-url");
    std::fs::write(&url, "postgres://autofix:pw@db/autofix\n").unwrap();
    let secret = dir.path().join("webhook-secret");
    std::fs::write(&secret, "0123\n").unwrap();
    let config = ServiceConfig::load(
        None,
        vars(&[
            ("AUTOFIX__DATABASE__URL_FILE", url.to_str().unwrap()),
            (
                "AUTOFIX__GITHUB__WEBHOOK_SECRET_FILE",
                secret.to_str().unwrap(),
            ),
            ("AUTOFIX__SERVER__ADMIN_TOKEN", "0042"),
        ]),
    )
    .unwrap();
    assert_eq!(config.database_url(), "postgres://autofix:pw@db/autofix");
    // Read as text, never as a number: leading zeros stay.
    assert_eq!(config.github.webhook_secret.expose_secret(), "0123");
    assert_eq!(config.server.admin_token.expose_secret(), "0042");
    assert!(config.source_files.contains(&url));
    let both = ServiceConfig::load(
        None,
        vars(&[
            ("AUTOFIX__DATABASE__URL", "x.db"),
            ("AUTOFIX__DATABASE__URL_FILE", url.to_str().unwrap()),
        ]),
    )
    .unwrap_err();
    assert_eq!(
        both.to_string(),
        "configuration: AUTOFIX__DATABASE__URL and AUTOFIX__DATABASE__URL_FILE set the same key: keep one"
    );
}

#[test]
fn with_no_workdir_the_data_directory_is_one_the_user_can_write() {
    let config =
        ServiceConfig::load(None, vars(&[("HOME", "/home/ann"), ("USER", "ann")])).unwrap();
    assert_eq!(config.workdir, "/home/ann/.local/share/autofix");
    assert_eq!(config.workdir_origin, "default: $HOME/.local/share/autofix");
    assert_eq!(
        config.database_url(),
        "/home/ann/.local/share/autofix/autofix.db"
    );
    let configured =
        ServiceConfig::load(None, vars(&[("AUTOFIX__WORKDIR", "/srv/autofix")])).unwrap();
    assert_eq!(configured.database_url(), "/srv/autofix/autofix.db");
    assert_eq!(configured.workdir_origin, "configured");
}

#[test]
fn the_app_the_setup_page_stored_is_used_when_no_credentials_are_configured() {
    let data = tempfile::tempdir().unwrap();
    let workdir = data.path().to_str().unwrap();
    data_dir::StoredGitHubApp {
        id: 7,
        slug: "autofix-acme".into(),
        html_url: "https://github.com/apps/autofix-acme".into(),
        webhook_secret: "from-github".into(),
        client_id: "Iv1".into(),
        client_secret: "cs".into(),
    }
    .save(data.path(), "PEM")
    .unwrap();
    let config = ServiceConfig::load(None, vars(&[("AUTOFIX__WORKDIR", workdir)])).unwrap();
    assert_eq!(config.github.app_id, 7);
    assert!(
        config
            .github
            .private_key_path
            .ends_with("github-app/private-key.pem")
    );
    assert_eq!(config.github.webhook_secret.expose_secret(), "from-github");
    let token = ServiceConfig::load(
        None,
        vars(&[
            ("AUTOFIX__WORKDIR", workdir),
            ("AUTOFIX__GITHUB__TOKEN", "ghp"),
        ]),
    )
    .unwrap();
    assert_eq!(token.github.app_id, 0, "configured credentials win");
}

#[test]
fn a_section_given_a_value_in_a_file_is_refused_by_name() {
    let err = ServiceConfig::load(Some(("autofix.toml", "log = \"json\"\n")), vec![]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "configuration: `log` is a section, not a key"
    );
    let format = ServiceConfig::load(None, vars(&[("AUTOFIX__LOG__FORMAT", "xml")])).unwrap_err();
    assert!(format.to_string().contains("xml"), "{format}");
    assert!(format.to_string().contains("log.format"), "{format}");
}
#[test]
fn the_bot_pushes_to_the_repository_unless_told_to_use_its_fork() {
    let config = ServiceConfig::load(None, vec![]).unwrap();
    assert_eq!(config.forge.push_to, PushTo::Base);
    let fork = ServiceConfig::load(None, vars(&[("AUTOFIX__FORGE__PUSH_TO", "fork")])).unwrap();
    assert_eq!(fork.forge.push_to, PushTo::Fork);
    let file = ServiceConfig::load(
        Some(("autofix.toml", "[forge]\npush_to = \"fork\"\n")),
        vec![],
    )
    .unwrap();
    assert_eq!(file.forge.push_to, PushTo::Fork);
    assert!(
        file.effective_toml()
            .contains("[forge]\npush_to = \"fork\"")
    );
}

#[test]
fn the_push_target_can_come_from_a_file_like_every_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("push-to");
    std::fs::write(&path, "fork\n").unwrap();
    let config = ServiceConfig::load(
        None,
        vars(&[("AUTOFIX__FORGE__PUSH_TO_FILE", path.to_str().unwrap())]),
    )
    .unwrap();
    assert_eq!(config.forge.push_to, PushTo::Fork);
}

#[test]
fn a_push_target_that_is_neither_base_nor_fork_is_refused_with_the_valid_ones() {
    let err =
        ServiceConfig::load(None, vars(&[("AUTOFIX__FORGE__PUSH_TO", "upstream")])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "configuration: \"upstream\" is not a push target (valid: \"base\", \"fork\") for key `forge.push_to`"
    );
    let file = ServiceConfig::load(
        Some(("autofix.toml", "[forge]\npush_to = \"Fork\"\n")),
        vec![],
    )
    .unwrap_err();
    assert!(
        file.to_string().contains("(valid: \"base\", \"fork\")"),
        "{file}"
    );
    assert!(file.to_string().contains("forge.push_to"), "{file}");
}

#[test]
fn a_well_known_model_is_priced_from_the_table_until_the_operator_sets_a_price() {
    let default = ServiceConfig::load(None, vars(&[("AUTOFIX__LLM__MODEL", "gpt-4o")])).unwrap();
    let pricing = default.pricing();
    assert_eq!(pricing.origin, crate::llm::price::PriceOrigin::Table);
    assert_eq!(pricing.price.input, 2.5);
    let file = ServiceConfig::load(
        Some((
            "autofix.toml",
            "[llm]\nmodel = \"gpt-4o\"\n[llm.price]\ninput = 1\noutput = 4.5\n",
        )),
        vec![],
    )
    .unwrap();
    assert_eq!(file.pricing().price.input, 1.0);
    assert_eq!(file.pricing().price.output, 4.5);
    assert_eq!(
        file.pricing().price.cached_input,
        1.25,
        "the table's, not set"
    );
    let env = ServiceConfig::load(
        None,
        vars(&[
            ("AUTOFIX__LLM__MODEL", "qwen2.5-coder"),
            ("AUTOFIX__LLM__PRICE__OUTPUT", "0.8"),
        ]),
    )
    .unwrap();
    assert_eq!(env.pricing().price.output, 0.8);
    assert!(env.pricing().known());
    assert!(env.effective_toml().contains("[llm.price]\ninput = \"\""));
}

#[test]
fn a_price_or_a_cap_that_is_not_an_amount_of_money_is_refused_by_its_key() {
    let word =
        ServiceConfig::load(None, vars(&[("AUTOFIX__LLM__PRICE__INPUT", "cheap")])).unwrap_err();
    assert!(word.to_string().contains("not `cheap`"), "{word}");
    let negative = ServiceConfig::load(
        Some(("autofix.toml", "[budget]\nmax_usd_per_day = -1.0\n")),
        vec![],
    )
    .unwrap_err();
    assert_eq!(
        negative.to_string(),
        "configuration: budget.max_usd_per_day must be 0 or more US dollars, not -1"
    );
    let cap = ServiceConfig::load(None, vars(&[("AUTOFIX__BUDGET__MAX_USD_PER_JOB", "2.5$")]))
        .unwrap_err();
    assert_eq!(
        cap.to_string(),
        "configuration: AUTOFIX__BUDGET__MAX_USD_PER_JOB must be a number, not `2.5$`"
    );
    let set =
        ServiceConfig::load(None, vars(&[("AUTOFIX__BUDGET__MAX_USD_PER_JOB", "2.5")])).unwrap();
    assert_eq!(set.budget.max_usd_per_job, 2.5);
}
