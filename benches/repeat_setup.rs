//! Benchmark (not a test): how much of a repeat job's setup the dependency caches save. For a
//! small Python project (pytest and one package from the index) and a small Rust crate (one
//! crates.io dependency), both without `.autofix.toml` — the jobs run the commands detection
//! finds — two jobs run as the bot runs them (each in a fresh clone at its own
//! path, sandboxed, sharing one cache pool), then the same commands by hand with `sh` (a fresh
//! clone each, the tools' download caches cold, then warm). Prints setup and total times and
//! the ratio of the second job's setup to the first's (aim: under 20 %).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use autofix::detect::{Detection, FileList};
use autofix::exec::{Limits, Sandbox, SandboxMode};
use autofix::git::Identity;
use autofix::pipeline::fix::{self, DepCacheOptions, FixOptions, IssueInput};
use autofix::pipeline::issue::Issue;
use autofix::redact::Redactor;
use autofix::telemetry::{StageObserver, Stages};

const PYPROJECT: &str = r#"[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "calc"
version = "0.1.0"
dependencies = ["attrs"]

[project.optional-dependencies]
test = ["pytest"]

[tool.setuptools]
py-modules = ["calc"]

[tool.pytest.ini_options]
addopts = "-q"
"#;
const CALC_PY: &str = "import attrs\n\n\n@attrs.define\nclass Range:\n    low: int\n    high: int\n\n    def clamp(self, value):\n        return max(self.low, min(value, self.high))\n";
const TEST_PY: &str =
    "from calc import Range\n\n\ndef test_clamp():\n    assert Range(0, 3).clamp(5) == 3\n";

const CARGO_TOML: &str = "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nitoa = \"1\"\n";
const LIB_RS: &str = "pub fn show(n: u32) -> String {\n    itoa::Buffer::new().format(n).to_string()\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn shows() {\n        assert_eq!(super::show(42), \"42\");\n    }\n}\n";

fn main() {
    let scratch = tempfile::tempdir().expect("a scratch folder");
    println!("{:<8} {:<34} {:>9} {:>9}", "story", "run", "setup", "total");
    for story in [Story::python(), Story::rust()] {
        story.measure(scratch.path());
    }
}

struct Story {
    name: &'static str,
    files: Vec<(&'static str, String)>,
    /// The file each job "changes" (written back unchanged: the benchmark is about setup).
    changed: (&'static str, &'static str),
}

impl Story {
    fn python() -> Story {
        Story {
            name: "python",
            files: vec![
                ("pyproject.toml", PYPROJECT.into()),
                ("calc.py", CALC_PY.into()),
                ("test_calc.py", TEST_PY.into()),
                (".gitignore", ".venv/\n__pycache__/\n*.egg-info/\n".into()),
            ],
            changed: ("calc.py", CALC_PY),
        }
    }

    fn rust() -> Story {
        Story {
            name: "rust",
            files: vec![
                ("Cargo.toml", CARGO_TOML.into()),
                ("src/lib.rs", LIB_RS.into()),
                (".gitignore", "/target\n".into()),
            ],
            changed: ("src/lib.rs", LIB_RS),
        }
    }

    fn measure(&self, scratch: &Path) {
        let origin = scratch.join(self.name).join("origin");
        self.make_origin(&origin);
        // No `.autofix.toml`: the jobs run what detection finds; by hand, the same commands.
        let (setup, validate) = detected(&origin);
        let pool = scratch.join(self.name).join("deps");
        let first = self.job(
            &origin,
            &scratch.join(self.name).join("jobs/1/worktree"),
            &pool,
        );
        let second = self.job(
            &origin,
            &scratch.join(self.name).join("jobs/2/worktree"),
            &pool,
        );
        let hand_caches = scratch.join(self.name).join("by-hand-caches");
        let cold = by_hand(
            &origin,
            &scratch.join(self.name).join("hand/1"),
            &hand_caches,
            &setup,
            &validate,
        );
        let warm = by_hand(
            &origin,
            &scratch.join(self.name).join("hand/2"),
            &hand_caches,
            &setup,
            &validate,
        );
        let row = |run: &str, (setup, total): (Duration, Duration)| {
            println!(
                "{:<8} {:<34} {:>7.1} s {:>7.1} s",
                self.name,
                run,
                setup.as_secs_f64(),
                total.as_secs_f64()
            );
        };
        row("first job (empty cache)", first);
        row("second job (warm cache, new tree)", second);
        row("by hand, tool caches cold", cold);
        row("by hand, tool caches warm", warm);
        let ratio = second.0.as_secs_f64() / first.0.as_secs_f64();
        println!(
            "{:<8} second job's setup / first job's setup: {:.1} % (aim: under 20 %: {})",
            self.name,
            ratio * 100.0,
            if ratio < 0.2 { "met" } else { "NOT met" }
        );
        println!(
            "{:<8} setup: {}",
            self.name,
            setup
                .iter()
                .map(|argv| argv.join(" "))
                .collect::<Vec<_>>()
                .join(" ; ")
        );
    }

    fn make_origin(&self, origin: &Path) {
        for (path, text) in &self.files {
            let full = origin.join(path);
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(full, text).unwrap();
        }
        if self.name == "rust" {
            // A committed lockfile, as a library's repository often has.
            let status = Command::new("cargo")
                .args(["generate-lockfile", "--quiet"])
                .current_dir(origin)
                .status()
                .unwrap();
            assert!(status.success(), "cargo generate-lockfile");
        }
        git(origin, &["init", "-q", "-b", "main"]);
        git(origin, &["add", "-A"]);
        git(origin, &["commit", "-q", "-m", "initial"]);
    }

    /// One job as the bot runs it in a fresh clone: setup, the checks on the base and on the
    /// change. Returns the setup stage's time and the job's.
    fn job(&self, origin: &Path, tree: &Path, pool: &Path) -> (Duration, Duration) {
        std::fs::create_dir_all(tree.parent().unwrap()).unwrap();
        git(origin, &["clone", "-q", ".", tree.to_str().unwrap()]);
        let out = tree.parent().unwrap().join("out");
        let setup = Arc::new(SetupClock::default());
        let options = FixOptions {
            repo: tree.to_path_buf(),
            issue: IssueInput::Given(Issue {
                number: Some(1),
                title: "repeat setup".into(),
                body: String::new(),
                labels: Vec::new(),
            }),
            issue_number: Some(1),
            job_id: None,
            artifacts: Some(out.join("run")),
            identity: Identity::new("autofix", "autofix@example.com").unwrap(),
            settings: autofix::pipeline::settings::PipelineSettings {
                default_validate_timeout: Duration::from_secs(900),
                output_limit: 256 * 1024,
                context_tokens: 20_000,
                output_caps: Default::default(),
                sandbox: Sandbox::new(SandboxMode::Bwrap, "bwrap", &[], &[], Limits::default()),
                cache_max_bytes: autofix::pipeline::dep_cache::DEFAULT_MAX_BYTES,
                max_candidates: autofix::config::repo::MAX_CANDIDATES,
                parallel_candidates: 2,
                pricing: autofix::llm::price::pricing("bench", &Default::default()),
                caps: Default::default(),
            },
            redactor: Redactor::new(),
            cache_dir: Some(out.join("cache")),
            dep_cache: DepCacheOptions {
                pool: Some(pool.to_path_buf()),
                repository: format!("github/bench/{}", self.name),
                ..Default::default()
            },
            repo_config: None,
            baseline_cache: Some(out.join("baselines")),
            stages: Stages::none().with(setup.clone()),
            revision: None,
            cancel: Default::default(),
            approval: Default::default(),
            earlier_reproduction: None,
            spend: autofix::llm::spend::SpendGuard::new(
                autofix::llm::price::pricing("bench", &Default::default()),
                Vec::new(),
            ),
            candidates: Default::default(),
        };
        let files =
            BTreeMap::from([(self.changed.0.to_string(), Some(self.changed.1.to_string()))]);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let started = Instant::now();
        let summary = runtime
            .block_on(fix::revalidate(&options, &NoModel, files))
            .unwrap();
        let total = started.elapsed();
        let log = std::fs::read_to_string(out.join("run/run.log")).unwrap();
        assert!(summary.failure.is_none(), "{log}");
        for line in log.lines().filter(|line| {
            line.contains("setup: restored")
                || line.contains("cache: setup kept")
                || line.contains("using the checks found")
        }) {
            println!(
                "{:<8}   {}",
                self.name,
                line.trim_start_matches(|c: char| c != ']')
                    .trim_start_matches("] ")
            );
        }
        (setup.elapsed(), total)
    }
}

/// Setup and validation as detection proposes them for the repository at `origin`.
fn detected(origin: &Path) -> (Vec<Vec<String>>, Vec<Vec<String>>) {
    let files: Vec<(String, String)> = [
        "pyproject.toml",
        "Cargo.toml",
        "Cargo.lock",
        "calc.py",
        "test_calc.py",
        "src/lib.rs",
        ".gitignore",
    ]
    .iter()
    .filter_map(|path| {
        Some((
            path.to_string(),
            std::fs::read_to_string(origin.join(path)).ok()?,
        ))
    })
    .collect();
    let detection = Detection::detect(&FileList::new(files));
    let argv = |found: &[autofix::detect::Detected]| found.iter().map(|d| d.run.clone()).collect();
    (argv(&detection.setup), argv(&detection.validate))
}

/// The same commands with `sh` in a fresh clone at `tree`, the tools' download caches in
/// `caches`; returns the setup commands' time and the whole run's.
fn by_hand(
    origin: &Path,
    tree: &Path,
    caches: &Path,
    setup: &[Vec<String>],
    validate: &[Vec<String>],
) -> (Duration, Duration) {
    std::fs::create_dir_all(tree.parent().unwrap()).unwrap();
    git(origin, &["clone", "-q", ".", tree.to_str().unwrap()]);
    let script = |commands: &[Vec<String>]| {
        commands
            .iter()
            .map(|argv| {
                argv.iter()
                    .map(|arg| shell_quoted(arg))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect::<Vec<_>>()
            .join(" && ")
    };
    let run = |line: String| {
        let mut command = Command::new("sh");
        command.arg("-c").arg(&line).current_dir(tree);
        for (name, _) in std::env::vars() {
            if name.starts_with("PIP_") {
                command.env_remove(name);
            }
        }
        let output = command
            .env("PIP_CACHE_DIR", caches.join("pip"))
            .env("CARGO_HOME", caches.join("cargo"))
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{line}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    };
    let started = Instant::now();
    run(script(setup));
    let setup_time = started.elapsed();
    run(script(validate));
    (setup_time, started.elapsed())
}

fn shell_quoted(arg: &str) -> String {
    if arg
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_./=:".contains(c))
    {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', "'\\''"))
    }
}

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.com")
        .env("GIT_COMMITTER_NAME", "bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.com")
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

/// How long the setup stage took.
#[derive(Default)]
struct SetupClock(Mutex<Duration>);

impl SetupClock {
    fn elapsed(&self) -> Duration {
        *self.0.lock().unwrap()
    }
}

impl StageObserver for SetupClock {
    fn started(&self, _stage: &str) {}

    fn ended(&self, stage: &str, _ok: bool, elapsed: Duration, _detail: &str) {
        if stage == "setup" {
            *self.0.lock().unwrap() = elapsed;
        }
    }
}

/// A revalidation never asks the model.
struct NoModel;

#[async_trait::async_trait]
impl autofix::llm::LlmProvider for NoModel {
    fn describe(&self) -> String {
        "no model".into()
    }

    fn model(&self) -> &str {
        "none"
    }

    async fn models(&self) -> Result<Vec<String>, autofix::llm::LlmError> {
        Ok(Vec::new())
    }

    async fn complete(
        &self,
        _request: &autofix::llm::LlmRequest,
    ) -> Result<autofix::llm::LlmResponse, autofix::llm::LlmError> {
        unreachable!("a revalidation never asks the model")
    }
}
