//! The bot under test, whole: the real ingress on a port, the real worker and forge clients, a
//! stateful fake forge, real bare remotes behind `git http-backend`, and a scripted LLM.
//!
//! ```ignore
//! let t = BotTester::gitlab().await;
//! t.repo("acme/widgets", &python_files());
//! t.llm.script_python_fix();
//! t.label_issue("acme/widgets", 7, &t.maintainer()).await;
//! t.run_until_idle().await;
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use autofix::exec::{Limits, Sandbox, SandboxMode};
use autofix::forge::github_api::{
    GitHubAuth, GitHubClient, GitHubClientConfig, RetryPolicy as GitHubRetry,
};
use autofix::forge::gitlab_api::{GitLabClient, RetryPolicy as GitLabRetry};
use autofix::forge::{Forge, ForkWait, PushTo};
use autofix::git::Identity;
use autofix::llm::{ProviderConfig, ProviderKind};
use autofix::pipeline::json_stage::OutputCaps;
use autofix::pipeline::settings::PipelineSettings;
use autofix::redact::Redactor;
use autofix::server::{self, Metrics, MetricsAccess, ServerState};
use autofix::store::{JobRecord, Store};
use autofix::worker::{self, WorkerContext, WorkerSettings};
use reqwest::StatusCode;
use secrecy::SecretString;
use serde_json::{Value, json};
use tokio::sync::Notify;

use super::deliveries::{self, Actor, ChecksFailed, LabeledIssue, On, Place};
use super::fake_github::{FakeGitHub, test_app_private_key};
use super::fake_gitlab::FakeGitLab;
use super::git_http::{BareRepo, GitHttpAuth, GitHttpServer};
use super::scripted_llm::ScriptedLlm;

pub const WEBHOOK_SECRET: &str = "story-webhook-secret";
pub const TRIGGER: &str = "auto-fix";
pub const FAILED_LABEL: &str = "automation-failed";
/// The personal token the fake GitHub accepts in the stories.
pub const GITHUB_TOKEN: &str = "ghp_storyToken0123456789abcdefABCDEF";
/// The user that token belongs to: the bot.
pub const GITHUB_BOT: &str = "autofix-bot";
pub const GITHUB_APP_ID: u64 = 424_242;
pub const GITHUB_APP_SLUG: &str = "autofix-app";
/// What the fake GitHub issues first for an App installation (its tokens are numbered).
pub const FIRST_INSTALLATION_TOKEN: &str = "ghs_fakeinstallationtoken000000000001";
/// The key the bot sends to the (scripted) model vendor.
pub const LLM_KEY: &str = "sk-ant-story-key";
/// How the stories' clients wait for a fork the fake forge copies in the background.
const FORK_WAIT: ForkWait = ForkWait {
    poll: Duration::from_millis(20),
    limit: Duration::from_secs(10),
};

/// The Python project the stories fix, validated by pytest.
pub const BUGGY_PY: &str = "def clamp(value, low, high):\n    return value\n";
pub const FIXED_PY: &str = "def clamp(value, low, high):\n    return max(low, min(value, high))\n";
pub const PY_TEST: &str = "from calc import clamp\n\n\ndef test_clamp_limits_both_ends():\n    assert clamp(5, 0, 3) == 3\n    assert clamp(-1, 0, 3) == 0\n    assert clamp(2, 0, 3) == 2\n";
pub const PY_CONFIG: &str = "[[validate]]\nname = \"pytest\"\nrun = [\"python3\", \"-m\", \"pytest\", \"-q\", \"-p\", \"no:cacheprovider\"]\ntimeout_secs = 120\n";

/// The files of the Python project, with `.autofix.toml`.
pub fn python_project() -> Vec<(&'static str, &'static str)> {
    vec![
        ("calc.py", BUGGY_PY),
        ("test_calc.py", PY_TEST),
        (".gitignore", "__pycache__/\n.pytest_cache/\n"),
        (".autofix.toml", PY_CONFIG),
    ]
}

/// The stage answers of a fix of `calc.py` that passes pytest at the first try.
pub fn script_python_fix(llm: &ScriptedLlm) {
    llm.reply_text_for_stage("triage", triage());
    llm.reply_text_for_stage("plan", plan());
    llm.reply_text_for_stage("edit", clamp_edit(FIXED_PY));
    llm.reply_text_for_stage("audit", accepted());
}

/// The stage answers of a fix that never passes pytest: the edit and each of `repairs` repairs
/// leave `clamp` ignoring its lower bound.
pub fn script_python_fix_that_stays_wrong(llm: &ScriptedLlm, repairs: usize) {
    let still_wrong = "def clamp(value, low, high):\n    return min(value, high)\n";
    llm.reply_text_for_stage("triage", triage());
    llm.reply_text_for_stage("plan", plan());
    llm.reply_text_for_stage("edit", clamp_edit(still_wrong));
    for _ in 0..repairs {
        llm.reply_text_for_stage(
            "repair",
            format!(
                "calc.py\n```\n<<<<<<< SEARCH\n{still_wrong}=======\n{still_wrong}>>>>>>> REPLACE\n```\n"
            ),
        );
    }
}

pub fn triage() -> String {
    json!({"actionable": true, "classification": "fix", "risk": "LOW",
           "affected_files": ["calc.py"], "reason": "clamp ignores its bounds"})
    .to_string()
}

pub fn plan() -> String {
    json!({"branch_name": "ignored", "plan_steps": ["limit the value to [low, high] in clamp"],
           "file_changes": [{"path": "calc.py", "operation": "MODIFY", "line_range": [1, 2]}],
           "commit_summary": "clamp values to both of their bounds", "scope": "calc"})
    .to_string()
}

/// A SEARCH/REPLACE answer turning the buggy `clamp` into `replacement`.
pub fn clamp_edit(replacement: &str) -> String {
    format!("calc.py\n```\n<<<<<<< SEARCH\n{BUGGY_PY}=======\n{replacement}>>>>>>> REPLACE\n```\n")
}

/// `calc.py` after the revision reviewers ask for in the stories: a docstring on `clamp`.
pub const REVISED_PY: &str = "def clamp(value, low, high):\n    \"\"\"Limit value to [low, high].\"\"\"\n    return max(low, min(value, high))\n";

/// The plan, edit and review of a revision turning `calc.py` from `from` into `to` (the
/// review held for `review_after` when given).
pub fn script_revision(llm: &ScriptedLlm, from: &str, to: &str, review_after: Option<Duration>) {
    llm.reply_text_for_stage(
        "plan",
        json!({"branch_name": "ignored",
            "plan_steps": ["document clamp as asked"],
            "file_changes": [{"path": "calc.py", "operation": "MODIFY", "line_range": [1, 3]}],
            "commit_summary": "document what clamp does", "scope": "calc"})
        .to_string(),
    );
    llm.reply_text_for_stage(
        "edit",
        format!("calc.py\n```\n<<<<<<< SEARCH\n{from}=======\n{to}>>>>>>> REPLACE\n```\n"),
    );
    let review = super::scripted_llm::Reply::text(accepted());
    llm.reply_for_stage(
        "audit",
        match review_after {
            Some(delay) => review.after(delay),
            None => review,
        },
    );
}

/// The labelled issue `issue` of `path` fixed by the bot; the number of its change request.
pub async fn fixed_issue(t: &BotTester, path: &str, issue: u64) -> u64 {
    script_python_fix(&t.llm);
    let alice = t.maintainer(path, "alice");
    t.label_issue(path, issue, "clamp ignores its bounds", &alice)
        .await;
    t.run_until_idle().await;
    let change_requests = t.change_requests(path);
    assert_eq!(change_requests.len(), 1, "{:?}", t.comments(path, issue));
    change_requests[0].number
}

pub fn accepted() -> String {
    json!({"decision": "accepted", "reasons": ["fixes the bug"], "must_fixes": [], "nice_to_haves": []})
        .to_string()
}

/// A delivery the story sent, to send again as a forge would redeliver it.
#[derive(Debug, Clone)]
pub struct Sent {
    pub delivery_id: String,
    pub body: Vec<u8>,
    pub status: StatusCode,
    pub answer: Value,
}

/// Which fake forge the story runs against.
pub enum FakeForge {
    GitHub(FakeGitHub),
    GitLab(FakeGitLab),
}

pub struct BotTester {
    pub forge: FakeForge,
    pub git: GitHttpServer,
    pub llm: ScriptedLlm,
    pub store: Store,
    pub context: Arc<WorkerContext>,
    ingress: String,
    wake: Arc<Notify>,
    workdir: tempfile::TempDir,
    client: reqwest::Client,
    sent: AtomicU64,
}

impl BotTester {
    /// The bot against a fake GitLab whose token also opens the git remotes (as `oauth2`).
    pub async fn gitlab() -> BotTester {
        let forge = FakeGitLab::start(axum::Router::new());
        let token = forge.token();
        Self::gitlab_presenting(forge, token).await
    }

    /// [`gitlab`](Self::gitlab) whose client presents `token`, which the fake GitLab (and its
    /// git remotes) do not know: a revoked or mistyped credential.
    pub async fn gitlab_with_token(token: &str) -> BotTester {
        let forge = FakeGitLab::start(axum::Router::new());
        Self::gitlab_presenting(forge, SecretString::from(token.to_owned())).await
    }

    async fn gitlab_presenting(forge: FakeGitLab, presented: SecretString) -> BotTester {
        let token = secrecy::ExposeSecret::expose_secret(&forge.token()).to_owned();
        let git = GitHttpServer::start(GitHttpAuth {
            username: "oauth2".into(),
            token: token.clone(),
            read_only_token: None,
        });
        // The redactor knows the secret the bot holds, as the service's configuration gives it.
        let held = secrecy::ExposeSecret::expose_secret(&presented).to_owned();
        let client = GitLabClient::new(
            &forge.api_url(),
            presented,
            Duration::from_secs(10),
            GitLabRetry {
                max_retries: 2,
                initial_backoff: Duration::from_millis(10),
                max_backoff: Duration::from_millis(50),
                max_rate_limit_wait: Duration::from_secs(2),
            },
        )
        .expect("a GitLab client for the fake")
        .with_fork_wait(FORK_WAIT);
        let gitlab: Arc<dyn Forge> = Arc::new(client);
        Self::start(
            FakeForge::GitLab(forge),
            git,
            None,
            Some(gitlab),
            &held,
            SandboxMode::Bwrap,
            None,
        )
        .await
    }

    /// The bot against a fake GitHub with a personal token that also opens the git remotes
    /// (as `x-access-token`).
    pub async fn github() -> BotTester {
        Self::github_in(SandboxMode::Bwrap).await
    }

    /// [`github`](Self::github) with the repository's commands run in a sandbox of `mode`.
    pub async fn github_in(mode: SandboxMode) -> BotTester {
        let forge = FakeGitHub::start(axum::Router::new());
        forge.set_token(GITHUB_TOKEN, GITHUB_BOT);
        let auth = GitHubAuth::Token(SecretString::from(GITHUB_TOKEN));
        let api_url = forge.api_url();
        Self::github_with(forge, &api_url, auth, GITHUB_TOKEN, mode, None).await
    }

    /// [`github`](Self::github) whose client is sent to `api_url` instead of the fake's API
    /// (e.g. a closed port: a forge that cannot be reached).
    pub async fn github_reaching(api_url: &str) -> BotTester {
        let forge = FakeGitHub::start(axum::Router::new());
        forge.set_token(GITHUB_TOKEN, GITHUB_BOT);
        let auth = GitHubAuth::Token(SecretString::from(GITHUB_TOKEN));
        Self::github_with(forge, api_url, auth, GITHUB_TOKEN, SandboxMode::Bwrap, None).await
    }

    /// [`github`](Self::github) with the stages answered by the model behind `llm` (a real
    /// model server) under `caps`, instead of the scripted one.
    pub async fn github_against(llm: ProviderConfig, caps: OutputCaps) -> BotTester {
        let forge = FakeGitHub::start(axum::Router::new());
        forge.set_token(GITHUB_TOKEN, GITHUB_BOT);
        let auth = GitHubAuth::Token(SecretString::from(GITHUB_TOKEN));
        let api_url = forge.api_url();
        Self::github_with(
            forge,
            &api_url,
            auth,
            GITHUB_TOKEN,
            SandboxMode::Bwrap,
            Some((llm, caps)),
        )
        .await
    }

    /// The bot as a GitHub App installed on every repository of the fake: it signs a JWT, trades
    /// it for an installation token, and that token (the fake's first) opens the git remotes.
    pub async fn github_app() -> BotTester {
        let forge = FakeGitHub::start(axum::Router::new());
        forge.set_app(GITHUB_APP_ID, GITHUB_APP_SLUG);
        let auth = GitHubAuth::App {
            app_id: GITHUB_APP_ID,
            private_key_pem: secrecy::SecretSlice::from(test_app_private_key()),
        };
        let api_url = forge.api_url();
        Self::github_with(
            forge,
            &api_url,
            auth,
            FIRST_INSTALLATION_TOKEN,
            SandboxMode::Bwrap,
            None,
        )
        .await
    }

    async fn github_with(
        forge: FakeGitHub,
        api_url: &str,
        auth: GitHubAuth,
        git_token: &str,
        mode: SandboxMode,
        llm: Option<(ProviderConfig, OutputCaps)>,
    ) -> BotTester {
        let git = GitHttpServer::start(GitHttpAuth {
            username: "x-access-token".into(),
            token: git_token.into(),
            read_only_token: None,
        });
        let mut config = GitHubClientConfig::new(api_url.to_owned(), auth);
        config.timeout = Duration::from_secs(10);
        config.fork_wait = FORK_WAIT;
        config.retry = GitHubRetry {
            max_attempts: 3,
            initial_backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(50),
            max_rate_limit_wait: Duration::from_secs(2),
            secondary_rate_limit_wait: Duration::from_millis(50),
        };
        let client = GitHubClient::new(config).expect("a GitHub client for the fake");
        let github: Arc<dyn Forge> = Arc::new(client);
        Self::start(
            FakeForge::GitHub(forge),
            git,
            Some(github),
            None,
            git_token,
            mode,
            llm,
        )
        .await
    }

    async fn start(
        forge: FakeForge,
        git: GitHttpServer,
        github: Option<Arc<dyn Forge>>,
        gitlab: Option<Arc<dyn Forge>>,
        token: &str,
        mode: SandboxMode,
        real_llm: Option<(ProviderConfig, OutputCaps)>,
    ) -> BotTester {
        let workdir = tempfile::tempdir().expect("a workdir");
        let sandbox = Sandbox::new(
            mode,
            "bwrap",
            &[],
            &[workdir.path().to_path_buf()],
            Limits::default(),
        );
        let store = Store::open_sqlite(&workdir.path().join("autofix.db"))
            .await
            .expect("the job store opens");
        let llm = ScriptedLlm::start();
        let (provider_config, output_caps) = real_llm.unwrap_or_else(|| {
            let scripted = ProviderConfig {
                kind: ProviderKind::Anthropic,
                base_url: llm.base_url(),
                model: "claude-story".into(),
                api_key: SecretString::from(LLM_KEY),
                request_timeout: Duration::from_secs(20),
                max_retries: 0,
                initial_backoff: Duration::from_millis(10),
                max_backoff: Duration::from_millis(10),
            };
            (scripted, OutputCaps::default())
        });
        let provider =
            autofix::llm::provider(provider_config).expect("an LLM provider for the stories");
        let mut redactor = Redactor::new();
        redactor.register(&SecretString::from(token.to_owned()));
        redactor.register(&SecretString::from(WEBHOOK_SECRET));
        redactor.register(&SecretString::from(LLM_KEY));
        let wake = Arc::new(Notify::new());
        let context = Arc::new(WorkerContext::new(
            store.clone(),
            github,
            gitlab,
            Arc::from(provider),
            workdir.path().join("work"),
            Identity::new("autofix", "autofix@example.com").expect("an identity"),
            WorkerSettings {
                trigger_label: TRIGGER.into(),
                command_word: "autofix".into(),
                ci_max_repairs: 2,
                failed_label: FAILED_LABEL.into(),
                workers: 1,
                lease: Duration::from_secs(60),
                // The shipped default: a new job must start through the ingress's wake-up.
                poll_interval: Duration::from_secs(2),
                max_attempts: 3,
                push_to: PushTo::Base,
                pipeline: PipelineSettings {
                    default_validate_timeout: Duration::from_secs(120),
                    output_limit: 256 * 1024,
                    context_tokens: 20_000,
                    output_caps,
                    sandbox,
                    cache_max_bytes: autofix::pipeline::dep_cache::DEFAULT_MAX_BYTES,
                    max_candidates: 5,
                    parallel_candidates: 2,
                    pricing: autofix::llm::price::pricing(
                        "claude-story",
                        &autofix::llm::price::PriceOverride::default(),
                    ),
                    caps: autofix::llm::spend::ServiceCaps::default(),
                },
            },
            redactor,
        ));
        let state = ServerState {
            store: store.clone(),
            github_secrets: vec![SecretString::from(WEBHOOK_SECRET)],
            gitlab_secrets: vec![SecretString::from(WEBHOOK_SECRET)],
            trigger_label: TRIGGER.into(),
            command_word: "autofix".into(),
            remark_wait: Duration::ZERO,
            body_limit: 5 * 1024 * 1024,
            read_timeout: Duration::from_secs(10),
            metrics: Arc::new(Metrics::default()),
            metrics_access: MetricsAccess::Public,
            job_queued: wake.clone(),
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the ingress");
        let ingress = format!("http://{}", listener.local_addr().expect("an address"));
        tokio::spawn(server::serve(
            listener,
            server::router(state),
            std::future::pending(),
        ));
        BotTester {
            forge,
            git,
            llm,
            store,
            context,
            ingress,
            wake,
            workdir,
            client: reqwest::Client::new(),
            sent: AtomicU64::new(0),
        }
    }

    /// [`github`](Self::github) with `forge.push_to = "fork"`: the fake GitHub lets the bot's
    /// user fork, copying a repository's default branch into a new bare remote.
    pub async fn github_pushing_to_fork() -> BotTester {
        let mut t = Self::github().await;
        t.github_fake().set_forker(t.git.forker());
        t.push_to(PushTo::Fork);
        t
    }

    /// [`gitlab`](Self::gitlab) with `forge.push_to = "fork"`, the fake GitLab forking into the
    /// token user's namespace.
    pub async fn gitlab_pushing_to_fork() -> BotTester {
        let mut t = Self::gitlab().await;
        t.gitlab_fake().set_forker(t.git.forker());
        t.push_to(PushTo::Fork);
        t
    }

    /// Where the bot pushes new branches from now on, as after a restart with another
    /// `forge.push_to`. Waits (a little) for the tasks of finished jobs to let go of the context.
    pub fn push_to(&mut self, push_to: PushTo) {
        self.settings().push_to = push_to;
    }

    /// Gives each job at most `attempts` attempts from now on, as `bot.max_attempts` does.
    pub fn max_attempts(&mut self, attempts: u32) {
        self.settings().max_attempts = attempts;
    }

    /// Prices the scripted model's tokens (US dollars per million), as `[llm.price]` does.
    pub fn price(&mut self, input: f64, output: f64) {
        self.settings().pipeline.pricing = autofix::llm::price::pricing(
            "claude-story",
            &autofix::llm::price::PriceOverride {
                input: Some(input),
                cached_input: None,
                output: Some(output),
            },
        );
    }

    /// The service's spending caps from now on, as `[budget]` gives them.
    pub fn spending_caps(&mut self, caps: autofix::llm::spend::ServiceCaps) {
        self.settings().pipeline.caps = caps;
    }

    /// The worker settings, to change as a restart with another configuration would. Waits (a
    /// little) for the tasks of finished jobs to let go of the context.
    fn settings(&mut self) -> &mut WorkerSettings {
        for _ in 0..500 {
            if Arc::get_mut(&mut self.context).is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        match Arc::get_mut(&mut self.context) {
            Some(context) => &mut context.settings,
            None => panic!("a worker still holds the context: stop the workers first"),
        }
    }

    pub fn gitlab_fake(&self) -> &FakeGitLab {
        match &self.forge {
            FakeForge::GitLab(fake) => fake,
            FakeForge::GitHub(_) => panic!("this story runs on GitHub"),
        }
    }

    pub fn github_fake(&self) -> &FakeGitHub {
        match &self.forge {
            FakeForge::GitHub(fake) => fake,
            FakeForge::GitLab(_) => panic!("this story runs on GitLab"),
        }
    }

    /// The token the forge and the git remotes accept.
    pub fn token(&self) -> String {
        match &self.forge {
            FakeForge::GitHub(_) => GITHUB_TOKEN.to_owned(),
            FakeForge::GitLab(fake) => {
                secrecy::ExposeSecret::expose_secret(&fake.token()).to_owned()
            }
        }
    }

    /// A repository on the forge with a real bare remote holding `files` on `main`.
    pub fn repo(&self, path: &str, files: &[(&str, &str)]) -> BareRepo {
        let bare = self.git.create_repo(path, "main", files);
        let url = self.git.url(path);
        match &self.forge {
            FakeForge::GitHub(fake) => {
                fake.repo(path, "main", &url);
            }
            FakeForge::GitLab(fake) => {
                fake.project(path)
                    .default_branch(Some("main"))
                    .clone_url(&url);
            }
        }
        bare
    }

    /// A person who may push (GitHub `write`, GitLab Developer) to `path`.
    pub fn maintainer(&self, path: &str, login: &str) -> Actor {
        match &self.forge {
            FakeForge::GitHub(fake) => {
                fake.collaborator(path, login, "write");
                deliveries::person(login, 5_000 + login.len() as u64)
            }
            FakeForge::GitLab(fake) => {
                fake.member(path, login, 30);
                deliveries::person(login, fake.user(login))
            }
        }
    }

    /// A person with a role that may not push (GitHub `triage`, GitLab Reporter).
    pub fn reporter(&self, path: &str, login: &str) -> Actor {
        match &self.forge {
            FakeForge::GitHub(fake) => {
                fake.collaborator(path, login, "triage");
                deliveries::person(login, 6_000 + login.len() as u64)
            }
            FakeForge::GitLab(fake) => {
                fake.member(path, login, 20);
                deliveries::person(login, fake.user(login))
            }
        }
    }

    /// The environment of an `autofix serve` process talking to this tester's fake GitHub and
    /// scripted model, its working folder at `workdir`: no model retries, a quick poll.
    pub fn serve_env(&self, workdir: &Path) -> Vec<(&'static str, String)> {
        vec![
            ("AUTOFIX__WORKDIR", workdir.display().to_string()),
            ("AUTOFIX__GITHUB__API_URL", self.github_fake().api_url()),
            ("AUTOFIX__GITHUB__TOKEN", GITHUB_TOKEN.to_owned()),
            ("AUTOFIX__GITHUB__WEBHOOK_SECRET", WEBHOOK_SECRET.to_owned()),
            ("AUTOFIX__LLM__PROVIDER", "anthropic".to_owned()),
            ("AUTOFIX__LLM__BASE_URL", self.llm.base_url()),
            ("AUTOFIX__LLM__MODEL", "claude-story".to_owned()),
            ("AUTOFIX__LLM__API_KEY", LLM_KEY.to_owned()),
            ("AUTOFIX__LLM__MAX_RETRIES", "0".to_owned()),
            ("AUTOFIX__BOT__POLL_INTERVAL_MS", "100".to_owned()),
        ]
    }

    /// `github` or `gitlab`: which forge this story is told on, to name its snapshots.
    pub fn forge_name(&self) -> &'static str {
        match self.forge {
            FakeForge::GitHub(_) => "github",
            FakeForge::GitLab(_) => "gitlab",
        }
    }

    /// `path` holding the Python project of the stories, with alice, who may push to it.
    pub fn python_project_kept_by_alice(&self, path: &str) -> Actor {
        self.repo(path, &python_project());
        self.maintainer(path, "alice")
    }

    /// [`BotTester::label_issue`], then the bot runs until it has nothing left to do.
    pub async fn label_issue_and_wait(&self, path: &str, number: u64, title: &str, actor: &Actor) {
        self.label_issue(path, number, title, actor).await;
        self.run_until_idle().await;
    }

    /// An open issue on the forge, and the webhook that says `actor` labelled it `auto-fix`.
    pub async fn label_issue(&self, path: &str, number: u64, title: &str, actor: &Actor) -> Sent {
        let body = "clamp(5, 0, 3) returns 5; it should return 3.";
        match &self.forge {
            FakeForge::GitHub(fake) => {
                let exists = fake
                    .state()
                    .repos
                    .get(path)
                    .is_some_and(|repo| repo.issues.contains_key(&number));
                if !exists {
                    fake.issue(path, number, title, body, "reporter");
                    fake.edit_issue(path, number, |issue| issue.labels = vec![TRIGGER.into()]);
                }
            }
            FakeForge::GitLab(fake) => {
                let exists = fake
                    .state()
                    .project(path)
                    .is_some_and(|project| project.issues.contains_key(&number));
                if !exists {
                    fake.project(path)
                        .issue(number, title)
                        .description(Some(body))
                        .labels(&[TRIGGER]);
                }
            }
        }
        let issue = LabeledIssue {
            owner_path: path,
            clone_url: &self.git.url(path),
            default_branch: "main",
            number,
            title,
            body,
            label: TRIGGER,
        };
        let payload = match &self.forge {
            FakeForge::GitHub(_) => deliveries::github_labeled(&issue, actor),
            FakeForge::GitLab(_) => deliveries::gitlab_labeled(&issue, actor),
        };
        let n = self.sent.fetch_add(1, Ordering::SeqCst) + 1;
        self.deliver(&format!("story-delivery-{n}"), payload).await
    }

    /// Sends later deliveries to another ingress (an `autofix serve` process) at `base`.
    pub fn send_deliveries_to(&mut self, base: String) {
        self.ingress = base;
    }

    /// Sends the label event `payload` as the forge would, signed, under `delivery_id`.
    pub async fn deliver(&self, delivery_id: &str, payload: Vec<u8>) -> Sent {
        let event = match &self.forge {
            FakeForge::GitHub(_) => "issues",
            FakeForge::GitLab(_) => "Issue Hook",
        };
        self.deliver_event(event, delivery_id, payload).await
    }

    /// The place remarks in `path` are made in.
    fn place<'a>(&self, path: &'a str, clone_url: &'a str) -> Place<'a> {
        Place {
            owner_path: path,
            clone_url,
            default_branch: "main",
        }
    }

    fn next_delivery(&self) -> (String, u64) {
        let n = self.sent.fetch_add(1, Ordering::SeqCst) + 1;
        (format!("story-delivery-{n}"), 90_000 + n)
    }

    /// `actor` comments `body` on an issue or on a pull/merge request of `path`.
    pub async fn comment(&self, path: &str, on: On, actor: &Actor, body: &str) -> Sent {
        let url = self.git.url(path);
        let place = self.place(path, &url);
        let (delivery, id) = self.next_delivery();
        match &self.forge {
            FakeForge::GitHub(_) => {
                let payload = deliveries::github_comment(&place, on, id, body, actor);
                self.deliver_event("issue_comment", &delivery, payload)
                    .await
            }
            FakeForge::GitLab(_) => {
                let payload = deliveries::gitlab_note(&place, on, id, body, actor);
                self.deliver_event("Note Hook", &delivery, payload).await
            }
        }
    }

    /// `actor` submits a review of pull request `number` (GitHub) in `state`.
    pub async fn review(
        &self,
        path: &str,
        number: u64,
        actor: &Actor,
        state: &str,
        body: &str,
    ) -> Sent {
        let url = self.git.url(path);
        let place = self.place(path, &url);
        let (delivery, id) = self.next_delivery();
        let payload = deliveries::github_review(&place, number, id, state, body, actor);
        self.deliver_event("pull_request_review", &delivery, payload)
            .await
    }

    /// `actor` comments `body` on line `line` of `file` in the change request's diff.
    pub async fn line_comment(
        &self,
        path: &str,
        number: u64,
        actor: &Actor,
        at: (&str, u64),
        body: &str,
    ) -> Sent {
        let url = self.git.url(path);
        let place = self.place(path, &url);
        let (delivery, id) = self.next_delivery();
        match &self.forge {
            FakeForge::GitHub(_) => {
                let payload = deliveries::github_line_comment(&place, number, id, at, body, actor);
                self.deliver_event("pull_request_review_comment", &delivery, payload)
                    .await
            }
            FakeForge::GitLab(_) => {
                let payload = deliveries::gitlab_diff_note(&place, number, id, at, body, actor);
                self.deliver_event("Note Hook", &delivery, payload).await
            }
        }
    }

    /// The forge says the checks of a change request's head failed (sent by `sender`).
    pub async fn checks_failed(
        &self,
        path: &str,
        checks: &ChecksFailed<'_>,
        sender: &Actor,
    ) -> Sent {
        let url = self.git.url(path);
        let place = self.place(path, &url);
        let (delivery, _) = self.next_delivery();
        match &self.forge {
            FakeForge::GitHub(_) => {
                let payload = deliveries::github_check_run_failed(&place, checks, sender);
                self.deliver_event("check_run", &delivery, payload).await
            }
            FakeForge::GitLab(_) => {
                let payload = deliveries::gitlab_pipeline_failed(&place, checks, sender);
                self.deliver_event("Pipeline Hook", &delivery, payload)
                    .await
            }
        }
    }

    /// The forge says `path`'s default branch moved to `after` (pushed by `pusher`).
    pub async fn pushed_to_default_branch(&self, path: &str, after: &str, pusher: &Actor) -> Sent {
        let url = self.git.url(path);
        let place = self.place(path, &url);
        let (delivery, _) = self.next_delivery();
        match &self.forge {
            FakeForge::GitHub(_) => {
                let payload = deliveries::github_push(&place, after, pusher);
                self.deliver_event("push", &delivery, payload).await
            }
            FakeForge::GitLab(_) => {
                let payload = deliveries::gitlab_push(&place, after, pusher);
                self.deliver_event("Push Hook", &delivery, payload).await
            }
        }
    }

    /// The bot's replies on change request `number` of `path` (each carries a hidden reply
    /// marker), oldest first.
    pub fn replies_on_change_request(&self, path: &str, number: u64) -> Vec<String> {
        marked(
            self.change_request_comments(path, number),
            "<!-- autofix:reply ",
        )
    }

    /// The comments on issue `number` of `path` that carry `marker`, oldest first: the bot's
    /// replies (`<!-- autofix:reply `) or status comments (`<!-- autofix:status job=`).
    pub fn comments_marked(&self, path: &str, number: u64, marker: &str) -> Vec<String> {
        marked(self.comments(path, number), marker)
    }

    /// The comments on a pull/merge request, as bodies, oldest first.
    pub fn change_request_comments(&self, path: &str, number: u64) -> Vec<String> {
        match &self.forge {
            FakeForge::GitHub(fake) => fake
                .comments(path, number)
                .into_iter()
                .map(|comment| comment.body)
                .collect(),
            FakeForge::GitLab(fake) => fake
                .merge_requests(path)
                .into_iter()
                .filter(|mr| mr.iid == number)
                .flat_map(|mr| mr.notes)
                .map(|note| note.body)
                .collect(),
        }
    }

    /// Sends `payload` as event `event` as the forge would, signed, under `delivery_id`.
    pub async fn deliver_event(&self, event: &str, delivery_id: &str, payload: Vec<u8>) -> Sent {
        let request = match &self.forge {
            FakeForge::GitHub(_) => self
                .client
                .post(format!("{}/webhooks/github", self.ingress))
                .header("X-GitHub-Event", event)
                .header("X-GitHub-Delivery", delivery_id)
                .header(
                    "X-Hub-Signature-256",
                    deliveries::github_signature(WEBHOOK_SECRET, &payload),
                ),
            FakeForge::GitLab(_) => self
                .client
                .post(format!("{}/webhooks/gitlab", self.ingress))
                .header("X-Gitlab-Event", event)
                .header("X-Gitlab-Token", WEBHOOK_SECRET)
                .header("Idempotency-Key", delivery_id),
        };
        let response = request
            .header("Content-Type", "application/json")
            .body(payload.clone())
            .send()
            .await
            .expect("the ingress answers");
        let status = response.status();
        let text = response.text().await.unwrap_or_default();
        Sent {
            delivery_id: delivery_id.to_owned(),
            body: payload,
            status,
            answer: serde_json::from_str(&text).unwrap_or(Value::String(text)),
        }
    }

    /// Sends the same delivery again (a forge's redelivery).
    pub async fn redeliver(&self, sent: &Sent) -> Sent {
        self.deliver(&sent.delivery_id, sent.body.clone()).await
    }

    /// Starts the worker pool of `autofix serve` in the background (woken by the ingress).
    pub fn start_workers(&self) -> tokio::sync::watch::Sender<bool> {
        let (stop, stopped) = tokio::sync::watch::channel(false);
        tokio::spawn(worker::run_pool(
            self.context.clone(),
            self.wake.clone(),
            stopped,
        ));
        stop
    }

    /// Runs the worker until no job is runnable.
    pub async fn run_until_idle(&self) -> Vec<autofix::store::JobId> {
        worker::run_until_idle(&self.context, "story-worker")
            .await
            .expect("the job store answers")
    }

    /// Lets time pass for the job store: every queued job's backoff and every owed failure
    /// report's wait are over (the worker compares them with the clock).
    pub fn let_backoffs_pass(&self) {
        let db = rusqlite::Connection::open(self.workdir.path().join("autofix.db"))
            .expect("the job store's file opens");
        db.busy_timeout(Duration::from_secs(10))
            .expect("a busy timeout");
        db.execute_batch(
            "UPDATE jobs SET run_after = 0 WHERE state = 'queued'; \
             UPDATE jobs SET report_due = 0 WHERE report_due IS NOT NULL;",
        )
        .expect("the backoffs end");
    }

    pub async fn jobs(&self) -> Vec<JobRecord> {
        self.store.jobs_list(100).await.expect("jobs list")
    }

    /// The bot's working folder (mirrors, worktrees, artifacts).
    /// The operator's pages over this story's job store, showing `parts` on the setup page,
    /// served on a port of their own; their address.
    pub async fn serve_pages(&self, parts: Vec<autofix::server::pages::SetupPart>) -> String {
        use autofix::server::pages::{self, ForgeLinks, PagesState, SetupFacts};
        let setup = SetupFacts {
            parts,
            public_url: String::new(),
            github_web_url: self.github_fake().url(),
            github_api_url: self.github_fake().api_url(),
            github_configured: true,
            data_dir: self.workdir(),
            trigger_label: "auto-fix".into(),
            push_to: autofix::forge::PushTo::Base,
        };
        let links = ForgeLinks {
            github_web: "https://github.example".into(),
            gitlab_web: "https://gitlab.example".into(),
        };
        let state = PagesState::new(
            self.store.clone(),
            secrecy::SecretString::from(""),
            setup,
            links,
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(autofix::server::serve(
            listener,
            pages::router(state),
            std::future::pending(),
        ));
        base
    }

    pub fn workdir(&self) -> PathBuf {
        self.workdir.path().join("work")
    }

    /// The comments on an issue, as bodies, oldest first (system notes left out).
    pub fn comments(&self, path: &str, number: u64) -> Vec<String> {
        match &self.forge {
            FakeForge::GitHub(fake) => fake
                .comments(path, number)
                .into_iter()
                .map(|comment| comment.body)
                .collect(),
            FakeForge::GitLab(fake) => fake
                .notes(path, number)
                .into_iter()
                .map(|note| note.body)
                .collect(),
        }
    }

    pub fn labels(&self, path: &str, number: u64) -> Vec<String> {
        match &self.forge {
            FakeForge::GitHub(fake) => fake.labels(path, number),
            FakeForge::GitLab(fake) => fake.labels(path, number),
        }
    }

    /// Every change request as (head branch, title, body, draft).
    pub fn change_requests(&self, path: &str) -> Vec<ChangeRequestSeen> {
        match &self.forge {
            FakeForge::GitHub(fake) => fake
                .pull_requests(path)
                .into_iter()
                .map(|pr| ChangeRequestSeen {
                    author: pr.author.login,
                    number: pr.number,
                    head: pr.head,
                    base: pr.base,
                    title: pr.title,
                    body: pr.body,
                    draft: pr.draft,
                    head_repo: pr.head_repo,
                })
                .collect(),
            FakeForge::GitLab(fake) => fake
                .merge_requests(path)
                .into_iter()
                .map(|mr| {
                    // One look at the fake's state: its lock is not re-entrant.
                    let state = fake.state();
                    let author = state
                        .user(mr.author)
                        .map(|user| user.username.clone())
                        .unwrap_or_default();
                    let head_repo = mr.source_project_id.and_then(|id| {
                        state
                            .projects
                            .iter()
                            .find(|project| project.id == id)
                            .map(|project| project.path_with_namespace.clone())
                    });
                    ChangeRequestSeen {
                        author,
                        number: mr.iid,
                        head: mr.source_branch,
                        base: mr.target_branch,
                        title: mr.title,
                        body: mr.description,
                        draft: mr.draft,
                        head_repo,
                    }
                })
                .collect(),
        }
    }
}

impl BotTester {
    /// The bot's login on the forge: the token's user, or a GitHub App's `slug[bot]`.
    pub fn bot_login(&self) -> String {
        match &self.forge {
            FakeForge::GitHub(fake) => {
                let state = fake.state();
                match (&state.personal_token, &state.app) {
                    (Some((_, user)), _) => user.login.clone(),
                    (None, Some(app)) => app.bot_user().login,
                    (None, None) => panic!("the fake GitHub knows no token and no App"),
                }
            }
            FakeForge::GitLab(fake) => fake.bot().username,
        }
    }

    /// `login`, who is no member, comments `body` on issue `number` of `path` on the forge
    /// itself (no webhook follows: the comment asks the bot nothing). The comment's id.
    pub fn outsider_comments(&self, path: &str, number: u64, login: &str, body: &str) -> u64 {
        match &self.forge {
            FakeForge::GitHub(fake) => fake.comment_by(path, number, login, body),
            FakeForge::GitLab(fake) => fake.issue(path, number).note_by(login, body),
        }
    }

    /// `login`, who is no member, opens a change request into `main` from `branch` of their
    /// fork, with `body`. Its number.
    pub fn change_request_from_fork(
        &self,
        path: &str,
        login: &str,
        branch: &str,
        title: &str,
        body: &str,
    ) -> u64 {
        match &self.forge {
            FakeForge::GitHub(fake) => {
                fake.pull_request_from_fork(path, login, branch, title, body)
            }
            FakeForge::GitLab(fake) => fake
                .project(path)
                .merge_request_from_fork(login, branch, title, body),
        }
    }

    /// The comments on issue `number` of `path` with their authors and edits, oldest first.
    pub fn comments_seen(&self, path: &str, number: u64) -> Vec<CommentSeen> {
        match &self.forge {
            FakeForge::GitHub(fake) => fake
                .comments(path, number)
                .into_iter()
                .map(|comment| CommentSeen {
                    id: comment.id,
                    author: comment.author.login,
                    body: comment.body,
                    edits: comment.edits,
                })
                .collect(),
            FakeForge::GitLab(fake) => fake
                .notes(path, number)
                .into_iter()
                .map(|note| CommentSeen {
                    id: note.id,
                    author: fake
                        .state()
                        .user(note.author)
                        .map(|user| user.username.clone())
                        .unwrap_or_default(),
                    body: note.body,
                    edits: note.edits,
                })
                .collect(),
        }
    }

    /// The next `times` comments the bot posts (GitHub issue comments, GitLab notes) are
    /// answered 502 Bad Gateway: a forge having a bad moment.
    pub fn comment_posts_fail(&self, times: usize) {
        match &self.forge {
            FakeForge::GitHub(fake) => fake.fail_next(
                "POST",
                "/comments",
                502,
                json!({"message": "Server Error"}),
                &[],
                times,
            ),
            FakeForge::GitLab(fake) => fake.fail_next(
                "POST",
                "/notes",
                502,
                json!({"message": "502 Bad Gateway"}),
                &[],
                times,
            ),
        }
    }
}

fn marked(bodies: Vec<String>, marker: &str) -> Vec<String> {
    bodies
        .into_iter()
        .filter(|body| body.contains(marker))
        .collect()
}

/// A comment as a story looks at it: who wrote it, what it says, how often it was edited.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommentSeen {
    pub id: u64,
    pub author: String,
    pub body: String,
    pub edits: u32,
}

/// A pull or merge request as a story looks at it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeRequestSeen {
    /// The login of who opened it.
    pub author: String,
    pub number: u64,
    pub head: String,
    pub base: String,
    pub title: String,
    pub body: String,
    pub draft: bool,
    /// The fork the head branch lives in (`owner/name`); `None`: the repository itself.
    pub head_repo: Option<String>,
}

/// Every file under `dir` whose bytes contain `needle`.
pub fn files_containing(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&current) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                stack.push(path);
            } else if kind.is_file()
                && std::fs::read(&path).is_ok_and(|bytes| {
                    bytes
                        .windows(needle.len())
                        .any(|window| window == needle.as_bytes())
                })
            {
                found.push(path);
            }
        }
    }
    found
}

/// A story told on each forge: the test `$github` runs `$story` with a bot on GitHub, the test
/// `$gitlab` the same story on GitLab.
#[allow(unused_macros)]
macro_rules! on_each_forge {
    ($story:ident: $github:ident, $gitlab:ident) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $github() {
            $story($crate::support::bot::BotTester::github().await).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $gitlab() {
            $story($crate::support::bot::BotTester::gitlab().await).await;
        }
    };
}
#[allow(unused_imports)]
pub(crate) use on_each_forge;
