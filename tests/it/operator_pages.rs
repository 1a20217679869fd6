//! The operator's pages in a real headless Chromium: the setup page of a first start with nothing
//! configured, GitHub's App manifest flow against the fake GitHub, and the jobs pages of real jobs.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::support::bot::{BotTester, script_python_fix, script_python_fix_that_stays_wrong};
use crate::support::browser::{Browser, Page};
use crate::support::fake_github::FakeGitHub;
use crate::support::fake_gitlab::FakeGitLab;
use crate::support::scripted_llm::ScriptedLlm;
use crate::support::serve::{ServeProcess, free_port};
use autofix::server::pages::SetupPart;

const PROJECT: &str = "acme/widgets";

/// Where the screenshots go: `target/tmp/operator-pages/`.
fn screenshot(page: &Page, name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("operator-pages");
    std::fs::create_dir_all(&dir).expect("a screenshot folder");
    let path = dir.join(name);
    page.screenshot(&path);
    let bytes = std::fs::read(&path).expect("the screenshot is written");
    assert!(bytes.starts_with(b"\x89PNG"), "{} is a PNG", path.display());
    path
}

fn browser() -> Browser {
    assert!(
        Browser::find().is_some(),
        "these stories need Chromium: `./scripts/test` installs Debian's chromium package"
    );
    Browser::start()
}

fn readiness(page: &Page, part: &str) -> String {
    page.text(&format!("tr[data-part=\"{part}\"] td:nth-child(2)"))
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|err| panic!("{}: {err}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

#[test]
fn a_first_start_with_nothing_configured_guides_to_a_github_app_made_in_one_click() {
    let dir = tempfile::tempdir().unwrap();
    let github = FakeGitHub::start(axum::Router::new());
    let data = dir.path().join("data");
    let vars = [
        ("AUTOFIX__WORKDIR", data.display().to_string()),
        ("AUTOFIX__GITHUB__API_URL", github.api_url()),
        ("AUTOFIX__GITHUB__WEB_URL", github.url()),
    ];
    let serve = ServeProcess::start(dir.path(), "first-start", &vars);
    let browser = browser();
    let page = browser.new_page();

    page.goto(&format!("{}/", serve.base));
    assert_eq!(page.text("h1"), "Setup");
    assert_eq!(readiness(&page, "github"), "missing");
    assert_eq!(readiness(&page, "gitlab"), "missing");
    assert_eq!(readiness(&page, "sandbox"), "verified");
    assert!(
        page.text("tr[data-part=\"data directory\"]")
            .contains(&data.display().to_string())
    );
    assert!(
        page.text("#gitlab")
            .contains(&format!("{}/webhooks/gitlab", serve.base))
    );
    assert_eq!(readiness(&page, "push target"), "verified");
    let push_target = page.text("#push-target");
    assert!(
        push_target.contains("autofix pushes its branches to the repository itself"),
        "{push_target}"
    );
    assert!(
        push_target.contains("an environment with required reviewers"),
        "{push_target}"
    );
    assert!(
        push_target.contains("make the variables protected"),
        "{push_target}"
    );
    assert!(
        push_target.contains("A GitHub App cannot own a fork"),
        "{push_target}"
    );
    screenshot(&page, "setup.png");
    let events_explained =
        page.eval("[...document.querySelectorAll('#app-events li')].map(li => li.dataset.event)");
    let permissions_explained = page.eval(
        "Object.fromEntries([...document.querySelectorAll('#app-permissions li')]\
         .map(li => [li.dataset.permission, li.dataset.access]))",
    );

    page.click("#github-app button");
    let manifest = page.text("#manifest");
    let posted: serde_json::Value = serde_json::from_str(&manifest).expect("the manifest is JSON");
    assert_eq!(
        events_explained, posted["default_events"],
        "the setup page explains exactly the events the App is created with"
    );
    assert_eq!(
        permissions_explained, posted["default_permissions"],
        "the setup page explains exactly the permissions the App is created with"
    );
    assert!(
        manifest.contains(&format!("{}/webhooks/github", serve.base)),
        "{manifest}"
    );
    assert!(
        manifest.contains("\"pull_requests\": \"write\""),
        "{manifest}"
    );
    page.click("#create button");
    page.wait_for("#created");

    assert!(
        page.url()
            .starts_with(&format!("{}/setup/github/callback?code=", serve.base)),
        "{}",
        page.url()
    );
    let created = page.text("#created");
    assert!(created.contains("The GitHub App autofix-"), "{created}");
    let install = page.attr("#install", "href").expect("an install link");
    assert!(install.ends_with("/installations/new"), "{install}");
    let seen = github.state().manifests.clone();
    assert_eq!(seen.len(), 1);
    assert!(seen[0].app_id.is_some(), "the code was exchanged");
    assert_eq!(
        seen[0].manifest["redirect_url"],
        format!("{}/setup/github/callback", serve.base)
    );
    assert_eq!(github.count("POST", "/app-manifests/"), 1);
    let stored = data.join("github-app");
    assert_eq!(mode(&stored), 0o700);
    assert_eq!(mode(&stored.join("app.json")), 0o600);
    assert_eq!(mode(&stored.join("private-key.pem")), 0o600);
    let key = std::fs::read_to_string(stored.join("private-key.pem")).unwrap();
    assert!(key.starts_with("-----BEGIN"), "the App's key is kept");
    assert!(
        !serve.logs().contains("BEGIN"),
        "the key never reaches the log"
    );

    // The code works once, and the flow's state too: a replayed callback stores nothing.
    page.goto(&page.url());
    assert_eq!(page.text("h1"), "Unknown request");

    // After a restart the bot uses the App it stored.
    drop(serve);
    let serve = ServeProcess::start(dir.path(), "restarted", &vars);
    page.goto(&format!("{}/", serve.base));
    // Asked of GitHub with the App's own JWT at the start.
    assert_eq!(readiness(&page, "github"), "verified");
    let detail = page.text("tr[data-part=\"github\"]");
    assert!(detail.contains("created by the setup page"), "{detail}");
    assert_eq!(page.count("#github-app"), 0, "no second App is offered");
}

#[test]
fn the_setup_page_shows_what_each_service_said_and_asks_again_on_its_button() {
    let dir = tempfile::tempdir().unwrap();
    let github = FakeGitHub::start(axum::Router::new());
    github.set_token("ghp_valid0123456789abcdefghijklmnopqrstu", "autofix-bot");
    let gitlab = FakeGitLab::start(axum::Router::new());
    gitlab.set_token("glpat-rotated-0123456789");
    let llm = ScriptedLlm::start();
    llm.list_models(Some("sk-right-0123456789"), &["gpt-4.1"]);
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let vars = [
        (
            "AUTOFIX__WORKDIR",
            dir.path().join("data").display().to_string(),
        ),
        ("AUTOFIX__SERVER__LISTEN", format!("127.0.0.1:{port}")),
        ("AUTOFIX__SERVER__PUBLIC_URL", base.clone()),
        ("AUTOFIX__GITHUB__API_URL", github.api_url()),
        (
            "AUTOFIX__GITHUB__TOKEN",
            "ghp_valid0123456789abcdefghijklmnopqrstu".into(),
        ),
        (
            "AUTOFIX__GITHUB__WEBHOOK_SECRET",
            "5b1f0c9e7d2a4e8f9a3b6c1d0e2f4a7b".into(),
        ),
        ("AUTOFIX__GITLAB__API_URL", gitlab.api_url()),
        (
            "AUTOFIX__GITLAB__TOKEN",
            "glpat-fake-0123456789abcdef".into(),
        ),
        (
            "AUTOFIX__GITLAB__WEBHOOK_SECRET",
            "9e8d7c6b5a4f3e2d1c0b9a8f".into(),
        ),
        ("AUTOFIX__LLM__BASE_URL", llm.openai_base_url()),
        ("AUTOFIX__LLM__API_KEY", "sk-wrong-0123456789".into()),
    ];
    let serve = ServeProcess::start(dir.path(), "verified", &vars);
    assert_eq!(serve.base, base);
    let browser = browser();
    let page = browser.new_page();

    page.goto(&format!("{base}/"));

    assert_eq!(readiness(&page, "github"), "verified");
    let github_row = page.text("tr[data-part=\"github\"]");
    assert!(
        github_row.contains("the token acts as autofix-bot"),
        "{github_row}"
    );
    assert_eq!(readiness(&page, "gitlab"), "broken");
    let gitlab_row = page.text("tr[data-part=\"gitlab\"]");
    assert!(gitlab_row.contains("401"), "{gitlab_row}");
    assert_eq!(readiness(&page, "llm"), "broken");
    let llm_row = page.text("tr[data-part=\"llm\"]");
    assert!(llm_row.contains("Incorrect API key provided"), "{llm_row}");
    assert!(
        !llm_row.contains("sk-wrong-0123456789"),
        "the key is never shown: {llm_row}"
    );
    assert!(!serve.logs().contains("sk-wrong-0123456789"), "nor logged");
    assert_eq!(readiness(&page, "database"), "verified");
    assert_eq!(readiness(&page, "public URL"), "verified");
    screenshot(&page, "setup-verified.png");
    // The start logged the same, and where the data lives.
    let logs = serve.logs();
    assert!(logs.contains("setup: broken"), "{logs}");
    assert!(
        logs.contains(&format!(
            "data_directory={}",
            dir.path().join("data").display()
        )),
        "{logs}"
    );

    // The operator fixes GitLab's token; the page shows it once asked again.
    gitlab.set_token("glpat-fake-0123456789abcdef");
    page.click("#check button");
    page.wait_for("#parts");
    assert_eq!(readiness(&page, "gitlab"), "verified");
}

#[test]
fn the_setup_page_is_closed_to_a_proxy_without_the_admin_token_and_open_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let open = ServeProcess::start(
        dir.path(),
        "no-token",
        &[(
            "AUTOFIX__WORKDIR",
            dir.path().join("a").display().to_string(),
        )],
    );
    let guarded = ServeProcess::start(
        dir.path(),
        "token",
        &[
            (
                "AUTOFIX__WORKDIR",
                dir.path().join("b").display().to_string(),
            ),
            (
                "AUTOFIX__SERVER__ADMIN_TOKEN",
                "let-me-in-4b8e1f0a9c".to_string(),
            ),
        ],
    );
    let browser = browser();

    let proxied = browser.new_page();
    proxied.set_header("X-Forwarded-For", "203.0.113.9");
    proxied.goto(&format!("{}/jobs", open.base));
    assert_eq!(proxied.text("h1"), "Not from here");

    // A browser would ask for the token; Chromium without a person fails the navigation, so
    // the stranger's request is made by hand.
    let stranger = raw_get(&guarded.base, "/jobs", "");
    assert!(stranger.starts_with("HTTP/1.1 401"), "{stranger}");
    assert!(
        stranger.contains("www-authenticate: Basic realm=\"autofix\""),
        "{stranger}"
    );
    let wrong = raw_get(
        &guarded.base,
        "/",
        "Authorization: Bearer let-me-out-4b8e1f0a9c\r\n",
    );
    assert!(wrong.starts_with("HTTP/1.1 401"), "{wrong}");
    let operator = browser.new_page();
    operator.set_header("Authorization", "Bearer let-me-in-4b8e1f0a9c");
    operator.goto(&format!("{}/", guarded.base));
    assert_eq!(operator.text("h1"), "Setup");
    assert_eq!(readiness(&operator, "admin pages"), "verified");
}

#[test]
fn metrics_ask_for_the_admin_token_when_one_is_set_unless_they_are_made_public() {
    let dir = tempfile::tempdir().unwrap();
    let workdir = |name: &str| {
        (
            "AUTOFIX__WORKDIR",
            dir.path().join(name).display().to_string(),
        )
    };
    let token = (
        "AUTOFIX__SERVER__ADMIN_TOKEN",
        "let-me-in-4b8e1f0a9c".to_string(),
    );
    let guarded = ServeProcess::start(dir.path(), "token", &[workdir("a"), token.clone()]);
    let public = ServeProcess::start(
        dir.path(),
        "public",
        &[
            workdir("b"),
            token,
            ("AUTOFIX__SERVER__METRICS_PUBLIC", "true".to_string()),
        ],
    );
    let open = ServeProcess::start(dir.path(), "no-token", &[workdir("c")]);

    let stranger = raw_get(&guarded.base, "/metrics", "");
    assert!(stranger.starts_with("HTTP/1.1 401"), "{stranger}");
    assert!(!stranger.contains("autofix_"), "{stranger}");
    let wrong = raw_get(
        &guarded.base,
        "/metrics",
        "Authorization: Bearer let-me-out-4b8e1f0a9c\r\n",
    );
    assert!(wrong.starts_with("HTTP/1.1 401"), "{wrong}");
    let scraper = raw_get(
        &guarded.base,
        "/metrics",
        "Authorization: Bearer let-me-in-4b8e1f0a9c\r\n",
    );
    assert!(scraper.starts_with("HTTP/1.1 200"), "{scraper}");
    assert!(scraper.contains("autofix_jobs_enqueued_total"), "{scraper}");
    let health = raw_get(&guarded.base, "/healthz", "");
    assert!(
        health.starts_with("HTTP/1.1 200"),
        "the probes ask for nothing: {health}"
    );

    let anyone = raw_get(&public.base, "/metrics", "");
    assert!(anyone.starts_with("HTTP/1.1 200"), "{anyone}");
    assert!(anyone.contains("autofix_jobs_enqueued_total"), "{anyone}");
    let pages = raw_get(&public.base, "/jobs", "");
    assert!(
        pages.starts_with("HTTP/1.1 401"),
        "the pages keep the token: {pages}"
    );

    // Without a token, /metrics is answered as the pages are: on loopback, not through a proxy.
    let local = raw_get(&open.base, "/metrics", "");
    assert!(local.starts_with("HTTP/1.1 200"), "{local}");
    let proxied = raw_get(&open.base, "/metrics", "X-Forwarded-For: 203.0.113.9\r\n");
    assert!(proxied.starts_with("HTTP/1.1 403"), "{proxied}");
}

/// One GET over a fresh connection, with `headers` (each ending in CRLF); the whole answer.
fn raw_get(base: &str, path: &str, headers: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(base.trim_start_matches("http://")).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: x\r\n{headers}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_jobs_pages_list_real_jobs_filter_them_and_show_why_one_failed() {
    let t = BotTester::github().await;
    let alice = t.python_project_kept_by_alice(PROJECT);
    script_python_fix(&t.llm);
    t.label_issue_and_wait(PROJECT, 7, "clamp ignores its bounds", &alice)
        .await;
    script_python_fix_that_stays_wrong(&t.llm, 3);
    t.label_issue_and_wait(PROJECT, 8, "clamp ignores its lower bound", &alice)
        .await;
    let jobs = t.jobs().await;
    let failed = jobs.iter().find(|job| job.key.issue.0 == 8).unwrap().id;
    let succeeded = jobs.iter().find(|job| job.key.issue.0 == 7).unwrap().id;
    let base = t
        .serve_pages(vec![SetupPart {
            name: "github".into(),
            readiness: "verified".into(),
            detail: "a token".into(),
        }])
        .await;

    let browser = Arc::new(browser());
    tokio::task::spawn_blocking(move || {
        let page = browser.new_page();
        page.goto(&format!("{base}/jobs"));
        assert_eq!(page.count("#jobs tr[data-job]"), 2);
        assert!(page.text("#counts").contains("1 succeeded"));
        assert!(page.text("#counts").contains("1 failed"));
        let ok_row = page.text(&format!("tr[data-job=\"{succeeded}\"]"));
        assert!(ok_row.contains("succeeded"), "{ok_row}");
        let pull = format!("tr[data-job=\"{succeeded}\"] td:nth-child(7) a");
        assert_eq!(page.count(&pull), 1, "the pull request is linked: {ok_row}");
        let failed_row = page.text(&format!("tr[data-job=\"{failed}\"]"));
        assert!(
            failed_row.contains("validate"),
            "the stage that failed: {failed_row}"
        );
        assert!(failed_row.contains("VALIDATION_FAILED"), "{failed_row}");
        assert_eq!(
            page.attr(
                &format!("tr[data-job=\"{failed}\"] td:nth-child(3) a"),
                "href"
            ),
            Some(format!("https://github.example/{PROJECT}/issues/8"))
        );
        screenshot(&page, "jobs.png");

        page.eval("document.querySelector('select[name=state]').value = 'failed'");
        page.click("form.filters button");
        assert!(page.url().contains("state=failed"), "{}", page.url());
        assert_eq!(page.count("#jobs tr[data-job]"), 1);
        page.goto(&format!("{base}/jobs?repo=someone/else"));
        assert_eq!(page.text("#empty"), "No job matches.");

        page.goto(&format!("{base}/jobs"));
        page.click(&format!("tr[data-job=\"{failed}\"] a"));
        assert_eq!(page.text("h1"), format!("Job {failed}"));
        assert!(
            page.text("[data-field=failure]")
                .contains("VALIDATION_FAILED")
        );
        assert!(page.text("[data-field=state]").starts_with("failed"));
        assert!(
            page.text("#history").contains("claimed"),
            "the stage history"
        );
        let tail = page.text("#log pre");
        assert!(tail.contains("assert"), "the failing output's tail: {tail}");
        screenshot(&page, "failed-job.png");

        page.goto(&format!("{base}/jobs/{succeeded}"));
        assert!(page.text("[data-field=change-request]").starts_with('#'));
        assert!(page.text("[data-field=model-tokens]").contains(" in, "));
        page.goto(&format!("{base}/jobs/999999"));
        assert_eq!(page.text("h1"), "No such job");
        page.goto(&format!("{base}/jobs?state=sleeping"));
        assert_eq!(page.text("h1"), "No such state");
    })
    .await
    .expect("the browser story passes");
}
