//! `autofix config check` as an operator runs it: with every kind of forge credential (never a
//! crash), into a closed pipe, and `--online` against the fake GitHub, GitLab and model servers,
//! where "verified" means the service answered and "broken" carries the service's own words.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::support::fake_github::{FakeGitHub, test_app_private_key};
use crate::support::fake_gitlab::FakeGitLab;
use crate::support::scripted_llm::ScriptedLlm;

/// What one run printed and how it ended.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Run {
    /// The line `part: …` of the report.
    fn part(&self, name: &str) -> &str {
        self.stdout
            .lines()
            .find(|line| line.starts_with(&format!("{name}: ")))
            .unwrap_or_else(|| panic!("no {name} line in:\n{}", self.stdout))
    }

    fn assert_no_panic(&self) {
        assert_ne!(self.code, Some(101), "a panic: {}", self.stderr);
        assert!(!self.stderr.contains("panicked"), "{}", self.stderr);
    }
}

/// `autofix ARGS` with only `PATH`, `HOME=dir`, a data directory in `dir` and `vars`.
fn autofix(dir: &Path, args: &[&str], vars: &[(&str, String)]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_autofix"));
    command
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("AUTOFIX__WORKDIR", dir.join("data"));
    for (name, value) in vars {
        command.env(name, value);
    }
    command
}

fn run(dir: &Path, args: &[&str], vars: &[(&str, String)]) -> Run {
    let output = autofix(dir, args, vars).output().expect("autofix runs");
    Run {
        code: output.status.code(),
        stdout: String::from_utf8(output.stdout).unwrap(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

/// A model server on loopback that lists no model: configured, never broken offline.
fn local_model() -> Vec<(&'static str, String)> {
    vec![("AUTOFIX__LLM__BASE_URL", "http://127.0.0.1:9/v1".to_owned())]
}

fn with(
    base: Vec<(&'static str, String)>,
    more: &[(&'static str, String)],
) -> Vec<(&'static str, String)> {
    base.into_iter().chain(more.iter().cloned()).collect()
}

fn write(dir: &Path, name: &str, text: &[u8]) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn config_check_builds_every_kind_of_forge_credential_without_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let key = write(dir.path(), "app.pem", &test_app_private_key());
    let token_file = write(
        dir.path(),
        "github-token",
        b"ghp_16C7e42F292c6912E7710c838347Ae178B4a\n",
    );
    let hook_file = write(
        dir.path(),
        "github-hook",
        b"5b1f0c9e7d2a4e8f9a3b6c1d0e2f4a7b\n",
    );
    let gitlab_file = write(dir.path(), "gitlab-token", b"glpat-xT8kPq3vLm2nR9sW4yZ1\n");
    let hook = (
        "AUTOFIX__GITHUB__WEBHOOK_SECRET",
        "5b1f0c9e7d2a4e8f9a3b6c1d0e2f4a7b".to_owned(),
    );
    let credentials: Vec<(&str, Vec<(&'static str, String)>)> = vec![
        (
            "a GitHub token",
            vec![
                (
                    "AUTOFIX__GITHUB__TOKEN",
                    "ghp_16C7e42F292c6912E7710c838347Ae178B4a".into(),
                ),
                hook.clone(),
            ],
        ),
        (
            "a GitHub token and webhook secret from files",
            vec![
                ("AUTOFIX__GITHUB__TOKEN_FILE", token_file),
                ("AUTOFIX__GITHUB__WEBHOOK_SECRET_FILE", hook_file),
            ],
        ),
        (
            "a GitHub App",
            vec![
                ("AUTOFIX__GITHUB__APP_ID", "424242".into()),
                ("AUTOFIX__GITHUB__PRIVATE_KEY_PATH", key),
                hook.clone(),
            ],
        ),
        (
            "a GitLab token from a file",
            vec![
                ("AUTOFIX__GITLAB__TOKEN_FILE", gitlab_file),
                (
                    "AUTOFIX__GITLAB__WEBHOOK_SECRET",
                    "9e8d7c6b5a4f3e2d1c0b9a8f".into(),
                ),
            ],
        ),
    ];
    for (what, vars) in credentials {
        let checked = run(
            dir.path(),
            &["config", "check"],
            &with(local_model(), &vars),
        );
        checked.assert_no_panic();
        assert_eq!(
            checked.code,
            Some(0),
            "{what}: {}{}",
            checked.stdout,
            checked.stderr
        );
        let forge = if what.contains("GitLab") {
            "gitlab"
        } else {
            "github"
        };
        assert!(
            checked
                .part(forge)
                .starts_with(&format!("{forge}: configured, not verified: ")),
            "{what}: {}",
            checked.part(forge)
        );
    }
}

#[test]
fn config_check_into_a_pipe_its_reader_closed_ends_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let vars = with(
        local_model(),
        &[
            (
                "AUTOFIX__GITHUB__TOKEN",
                "ghp_16C7e42F292c6912E7710c838347Ae178B4a".into(),
            ),
            (
                "AUTOFIX__GITHUB__WEBHOOK_SECRET",
                "5b1f0c9e7d2a4e8f9a3b6c1d0e2f4a7b".into(),
            ),
        ],
    );
    // The reader is gone before the first line is written: every write meets a closed pipe.
    for _ in 0..3 {
        let mut child = autofix(dir.path(), &["config", "check"], &vars)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        let status = child.wait().unwrap();
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert_eq!(
            status.code(),
            Some(141),
            "128 + SIGPIPE, as a shell reports it: {stderr}"
        );
        assert_eq!(stderr, "", "nothing said about the reader going away");
    }
    // As an operator types it.
    for _ in 0..12 {
        let mut shell = Command::new("sh");
        shell
            .arg("-c")
            .arg(format!(
                "{:?} config check | head -c1",
                env!("CARGO_BIN_EXE_autofix")
            ))
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", dir.path())
            .env("AUTOFIX__WORKDIR", dir.path().join("data"));
        for (name, value) in &vars {
            shell.env(name, value);
        }
        let output = shell.output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert_eq!(
            output.stdout, b"c",
            "the first byte of `configuration is valid`"
        );
    }
}

#[test]
fn online_a_token_github_accepts_is_verified_and_one_it_refuses_is_broken_in_its_words() {
    let dir = tempfile::tempdir().unwrap();
    let github = FakeGitHub::start(axum::Router::new());
    github.set_token("ghp_valid0123456789abcdefghijklmnopqrstu", "autofix-bot");
    let vars = |token: &str| {
        with(
            local_model(),
            &[
                ("AUTOFIX__GITHUB__API_URL", github.api_url()),
                ("AUTOFIX__GITHUB__TOKEN", token.to_owned()),
                (
                    "AUTOFIX__GITHUB__WEBHOOK_SECRET",
                    "5b1f0c9e7d2a4e8f9a3b6c1d0e2f4a7b".into(),
                ),
            ],
        )
    };

    let valid = run(
        dir.path(),
        &["config", "check", "--online"],
        &vars("ghp_valid0123456789abcdefghijklmnopqrstu"),
    );
    assert_eq!(valid.code, Some(0), "{}{}", valid.stdout, valid.stderr);
    let line = valid.part("github");
    assert!(line.starts_with("github: verified: a token at "), "{line}");
    assert!(line.ends_with("; the token acts as autofix-bot"), "{line}");

    let refused = run(
        dir.path(),
        &["config", "check", "--online"],
        &vars("ghp_revoked0123456789abcdefghijklmnopqr"),
    );
    assert_eq!(
        refused.code,
        Some(22),
        "{}{}",
        refused.stdout,
        refused.stderr
    );
    let line = refused.part("github");
    assert!(line.starts_with("github: broken: "), "{line}");
    assert!(
        line.contains("(401)") && line.contains("Bad credentials"),
        "{line}"
    );
    assert_eq!(
        refused.stderr,
        "autofix config check: broken: github (see above)\n"
    );
    assert!(
        !refused.stdout.contains("ghp_revoked"),
        "the token is never shown"
    );
}

#[test]
fn online_a_github_app_is_verified_with_where_it_is_installed() {
    let dir = tempfile::tempdir().unwrap();
    let github = FakeGitHub::start(axum::Router::new());
    github.set_app(424242, "autofix-test");
    github.repo(
        "acme/widgets",
        "main",
        "http://127.0.0.1:1/acme/widgets.git",
    );
    let key = write(dir.path(), "app.pem", &test_app_private_key());
    let vars = with(
        local_model(),
        &[
            ("AUTOFIX__GITHUB__API_URL", github.api_url()),
            ("AUTOFIX__GITHUB__APP_ID", "424242".into()),
            ("AUTOFIX__GITHUB__PRIVATE_KEY_PATH", key),
            (
                "AUTOFIX__GITHUB__WEBHOOK_SECRET",
                "5b1f0c9e7d2a4e8f9a3b6c1d0e2f4a7b".into(),
            ),
        ],
    );

    let checked = run(dir.path(), &["config", "check", "--online"], &vars);

    assert_eq!(
        checked.code,
        Some(0),
        "{}{}",
        checked.stdout,
        checked.stderr
    );
    let line = checked.part("github");
    assert!(
        line.ends_with("; the App acts as autofix-test[bot]; installed on 1 account(s): acme"),
        "{line}"
    );
}

#[test]
fn online_an_unreachable_forge_is_configured_not_verified_and_the_check_still_passes() {
    let dir = tempfile::tempdir().unwrap();
    // Port 1: no story's server is ever given it, unlike a port bound and let go.
    let port = 1;
    let vars = with(
        local_model(),
        &[
            (
                "AUTOFIX__GITHUB__API_URL",
                format!("http://127.0.0.1:{port}/api/v3"),
            ),
            (
                "AUTOFIX__GITHUB__TOKEN",
                "ghp_16C7e42F292c6912E7710c838347Ae178B4a".into(),
            ),
            (
                "AUTOFIX__GITHUB__WEBHOOK_SECRET",
                "5b1f0c9e7d2a4e8f9a3b6c1d0e2f4a7b".into(),
            ),
        ],
    );

    let checked = run(dir.path(), &["config", "check", "--online"], &vars);

    assert_eq!(
        checked.code,
        Some(0),
        "{}{}",
        checked.stdout,
        checked.stderr
    );
    let line = checked.part("github");
    assert!(
        line.starts_with("github: configured, not verified: ")
            && line.contains("; GitHub failed when autofix tried to read the token's user: no connection to the API"),
        "{line}"
    );
    // The model server at a closed port is not verified either, and not broken.
    assert!(
        checked
            .part("llm")
            .starts_with("llm: configured, not verified: "),
        "{}",
        checked.part("llm")
    );
}

#[test]
fn online_a_gitlab_token_needs_the_api_scope_and_a_refused_one_is_broken() {
    let dir = tempfile::tempdir().unwrap();
    let gitlab = FakeGitLab::start(axum::Router::new());
    let vars = |token: String| {
        with(
            local_model(),
            &[
                ("AUTOFIX__GITLAB__API_URL", gitlab.api_url()),
                ("AUTOFIX__GITLAB__TOKEN", token),
                (
                    "AUTOFIX__GITLAB__WEBHOOK_SECRET",
                    "9e8d7c6b5a4f3e2d1c0b9a8f".into(),
                ),
            ],
        )
    };
    let token = || secrecy::ExposeSecret::expose_secret(&gitlab.token()).to_owned();

    let verified = run(dir.path(), &["config", "check", "--online"], &vars(token()));
    assert_eq!(
        verified.code,
        Some(0),
        "{}{}",
        verified.stdout,
        verified.stderr
    );
    assert!(
        verified
            .part("gitlab")
            .ends_with("; the token acts as autofix-bot, with scopes api"),
        "{}",
        verified.part("gitlab")
    );

    gitlab.set_token_scopes(&["read_api", "read_repository"]);
    let narrow = run(dir.path(), &["config", "check", "--online"], &vars(token()));
    assert_eq!(narrow.code, Some(22), "{}", narrow.stdout);
    let line = narrow.part("gitlab");
    assert!(line.starts_with("gitlab: broken: "), "{line}");
    assert!(
        line.contains("lacks the `api` scope")
            && line.contains("(it has: read_api, read_repository)"),
        "{line}"
    );

    let refused = run(
        dir.path(),
        &["config", "check", "--online"],
        &vars("glpat-revoked-0000000000".into()),
    );
    assert_eq!(refused.code, Some(22), "{}", refused.stdout);
    let line = refused.part("gitlab");
    assert!(
        line.starts_with("gitlab: broken: ") && line.contains("401"),
        "{line}"
    );
}

#[test]
fn online_the_model_key_is_verified_by_the_vendor_s_listing_and_a_wrong_one_is_broken() {
    let dir = tempfile::tempdir().unwrap();
    let llm = ScriptedLlm::start();
    llm.list_models(Some("sk-right-0123456789"), &["gpt-4.1", "gpt-4.1-mini"]);
    let vars = |key: &str| {
        vec![
            ("AUTOFIX__LLM__BASE_URL", llm.openai_base_url()),
            ("AUTOFIX__LLM__MODEL", "gpt-4.1".to_owned()),
            ("AUTOFIX__LLM__API_KEY", key.to_owned()),
        ]
    };

    let verified = run(
        dir.path(),
        &["config", "check", "--online"],
        &vars("sk-right-0123456789"),
    );
    assert_eq!(
        verified.code,
        Some(0),
        "{}{}",
        verified.stdout,
        verified.stderr
    );
    assert!(
        verified
            .part("llm")
            .ends_with("(api key set); the server lists gpt-4.1"),
        "{}",
        verified.part("llm")
    );

    let refused = run(
        dir.path(),
        &["config", "check", "--online"],
        &vars("sk-wrong-0123456789"),
    );
    assert_eq!(refused.code, Some(22), "{}", refused.stdout);
    let line = refused.part("llm");
    assert!(line.starts_with("llm: broken: "), "{line}");
    assert!(line.contains("Incorrect API key provided"), "{line}");
    assert!(
        !refused.stdout.contains("sk-wrong-0123456789"),
        "the key is never shown"
    );
}

#[test]
fn a_hosted_vendor_without_a_key_is_broken_even_offline() {
    let dir = tempfile::tempdir().unwrap();

    // The defaults: OpenAI's API, no key.
    let checked = run(dir.path(), &["config", "check"], &[]);

    assert_eq!(
        checked.code,
        Some(22),
        "{}{}",
        checked.stdout,
        checked.stderr
    );
    assert_eq!(
        checked.part("llm"),
        "llm: broken: openai gpt-4.1 at https://api.openai.com/v1: a hosted vendor needs an api \
         key (set AUTOFIX__LLM__API_KEY)"
    );
    assert!(
        checked.stdout.starts_with(
            "configuration is valid: `autofix serve` would start, but llm would not work\n"
        ),
        "{}",
        checked.stdout
    );
    assert_eq!(
        checked.stderr,
        "autofix config check: broken: llm (see above)\n"
    );
}

#[test]
fn a_placeholder_admin_token_is_broken_for_config_check_and_refused_by_serve() {
    let dir = tempfile::tempdir().unwrap();
    for (token, why) in [
        (
            "CHANGE-ME",
            "server.admin_token is a placeholder from an example",
        ),
        (
            "changeme",
            "server.admin_token is a placeholder from an example",
        ),
        (
            "s3cr3t-t0k3n",
            "server.admin_token has 12 characters: use at least 16",
        ),
    ] {
        let vars = with(
            local_model(),
            &[("AUTOFIX__SERVER__ADMIN_TOKEN", token.to_owned())],
        );

        let checked = run(dir.path(), &["config", "check"], &vars);
        assert_eq!(checked.code, Some(22), "{token}: {}", checked.stderr);
        let first = checked.stdout.lines().next().unwrap_or_default();
        assert!(
            first.starts_with(&format!("`autofix serve` would not start: {why}")),
            "{token}: {first}"
        );
        assert!(
            checked
                .part("admin pages")
                .starts_with(&format!("admin pages: broken: {why}")),
            "{token}: {}",
            checked.part("admin pages")
        );
        assert_eq!(
            checked.stderr,
            "autofix config check: broken: admin pages (see above)\n"
        );

        let served = run(dir.path(), &["serve"], &vars);
        assert_eq!(served.code, Some(1), "{token}: {}", served.stderr);
        let last = served.stderr.lines().last().unwrap_or_default();
        assert!(
            last.starts_with(&format!("autofix serve: {why}")),
            "{token}: {}",
            served.stderr
        );
        for run in [&checked.stdout, &checked.stderr, &served.stderr] {
            assert!(!run.contains("s3cr3t"), "never echoed: {run}");
        }
    }
}

#[test]
fn a_listen_address_serve_cannot_bind_is_refused_by_config_check_too() {
    let dir = tempfile::tempdir().unwrap();
    let vars = with(
        local_model(),
        &[("AUTOFIX__SERVER__LISTEN", "notanaddress".to_owned())],
    );
    for command in [&["config", "check"][..], &["serve"][..]] {
        let refused = run(dir.path(), command, &vars);
        assert_eq!(
            refused.code,
            Some(if command[0] == "serve" { 1 } else { 22 })
        );
        assert_eq!(
            refused.stderr,
            format!(
                "autofix {}: server.listen: cannot listen on \"notanaddress\": invalid socket \
                 address (expected an address and a port, e.g. 127.0.0.1:8080 or [::1]:8080)\n",
                command.join(" ")
            )
        );
    }
}

#[test]
fn a_wrong_choice_is_refused_with_the_values_that_are_valid() {
    let dir = tempfile::tempdir().unwrap();
    for (variable, value, said) in [
        (
            "AUTOFIX__EXEC__SANDBOX",
            "docker",
            "unknown value `docker`, expected `bwrap` or `none` for key `exec.sandbox`",
        ),
        (
            "AUTOFIX__LLM__PROVIDER",
            "openaai",
            "unknown value `openaai`, expected one of `openai`, `anthropic`, `gemini` for key `llm.provider`",
        ),
        (
            "AUTOFIX__LOG__FORMAT",
            "xml",
            "unknown value `xml`, expected `text` or `json` for key `log.format`",
        ),
    ] {
        let refused = run(
            dir.path(),
            &["config", "check"],
            &[(variable, value.to_owned())],
        );
        assert_eq!(refused.code, Some(22));
        assert_eq!(
            refused.stderr,
            format!("autofix config check: configuration: {said}\n")
        );
    }
}

#[test]
fn help_names_the_configuration_variables_and_the_data_directory() {
    let dir = tempfile::tempdir().unwrap();
    for command in [
        &["--help"][..],
        &["serve", "--help"],
        &["config", "check", "--help"],
    ] {
        let help = run(dir.path(), command, &[]);
        assert_eq!(help.code, Some(0));
        for words in [
            "AUTOFIX__SECTION__KEY",
            "AUTOFIX__SECTION__KEY_FILE",
            "AUTOFIX__WORKDIR",
            "$XDG_DATA_HOME/autofix",
        ] {
            assert!(
                help.stdout.contains(words),
                "{command:?} lacks {words}: {}",
                help.stdout
            );
        }
    }
}
