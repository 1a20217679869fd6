//! Dependency caches between jobs on one repository, with real bubblewrap, git, Python and
//! cargo: validation cannot write into them, a lockfile change starts a fresh folder, the
//! least recently used go first, 0 turns them off, and setup is put back instead of run again.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use crate::support::fix_cli::{Fix, revalidation_options, unreachable_model};
use crate::support::repo::{FIXED_LIB, Repo};
use crate::support::scripted_llm::ScriptedLlm;
use autofix::pipeline::fix::{self, DepCacheOptions, FixSummary};
use serde_json::json;

const FIXED_PY: &str = "def clamp(value, low, high):\n    return max(low, min(value, high))\n";

/// One job as the bot runs it (setup, the checks on the base and on a change), its caches in
/// `pool`, bounded by `max_bytes`.
struct Job {
    summary: FixSummary,
    log: String,
    out: tempfile::TempDir,
}

impl Job {
    /// Fails the story unless the job's `run.log` holds `text`.
    fn says(&self, text: &str) {
        assert!(self.log.contains(text), "{}", self.log);
    }

    async fn run(tree: &Path, pool: &Path, max_bytes: u64) -> Job {
        Job::run_changing(tree, pool, max_bytes, "calc.py", FIXED_PY).await
    }

    async fn run_changing(
        tree: &Path,
        pool: &Path,
        max_bytes: u64,
        path: &str,
        content: &str,
    ) -> Job {
        let out = tempfile::tempdir().unwrap();
        let mut options = revalidation_options(tree, out.path());
        options.dep_cache = DepCacheOptions {
            pool: Some(pool.to_path_buf()),
            repository: "github/acme/calc".into(),
            max_bytes,
        };
        let files = BTreeMap::from([(path.to_owned(), Some(content.to_owned()))]);
        let summary = fix::revalidate(&options, unreachable_model().as_ref(), files)
            .await
            .unwrap();
        let log = fs::read_to_string(out.path().join("run/run.log")).unwrap();
        Job { summary, log, out }
    }

    /// What the validation command `name` printed on the change.
    fn output_of(&self, name: &str) -> String {
        let logs = self.out.path().join("run/logs");
        let file = fs::read_dir(&logs)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .find(|file| file.get(2..) == Some(&format!("-{name}.log")))
            .unwrap_or_else(|| panic!("no log of {name}"));
        fs::read_to_string(logs.join(file)).unwrap()
    }

    fn passed(&self, check: &str) -> bool {
        self.summary
            .checks
            .iter()
            .find(|comparison| comparison.change.last().name == check)
            .unwrap_or_else(|| panic!("no check {check}: {}", self.log))
            .change
            .passed()
    }

    /// The name of the tool folder the run log names for `tool` (`python-…`).
    fn folder(&self, tool: &str) -> String {
        let prefix = format!("cache: {tool} folder ");
        let line = self
            .log
            .lines()
            .find_map(|line| line.split_once(&prefix).map(|(_, rest)| rest))
            .unwrap_or_else(|| panic!("no {tool} folder in:\n{}", self.log));
        line.split_whitespace().next().unwrap().to_string()
    }
}

fn tool_dir(pool: &Path, folder: &str) -> PathBuf {
    pool.join("github/acme/calc/tools").join(folder)
}

const MARKER_SETUP: &str = r#"
[[setup]]
name = "fill"
run = ["sh", "-c", "mkdir -p \"$PIP_CACHE_DIR\" && test -f \"$PIP_CACHE_DIR/marker\" || echo original > \"$PIP_CACHE_DIR/marker\""]

[[validate]]
name = "poison"
run = ["sh", "-c", "echo poisoned > \"$PIP_CACHE_DIR/marker\" || echo refused"]

[[validate]]
name = "marker"
run = ["sh", "-c", "grep -qx original \"$PIP_CACHE_DIR/marker\""]
"#;

#[tokio::test]
async fn validation_cannot_poison_the_shared_cache_and_the_next_job_sees_the_original() {
    let repo = Repo::python_project(&[
        ("requirements.txt", "# nothing yet\n"),
        (".autofix.toml", MARKER_SETUP),
    ]);
    let pool = tempfile::tempdir().unwrap();

    let first = Job::run(repo.path(), pool.path(), 1 << 30).await;

    assert_eq!(
        first.summary.failure.as_ref().map(|failure| failure.code),
        None,
        "{}",
        first.log
    );
    assert!(first.output_of("poison").contains("Read-only file system"));
    assert!(first.output_of("poison").contains("refused"));
    let marker = tool_dir(pool.path(), &first.folder("python")).join("pip/marker");
    assert_eq!(fs::read_to_string(&marker).unwrap(), "original\n");

    let second = Job::run(repo.path(), pool.path(), 1 << 30).await;

    second.says("python folder");
    second.says("(reused)");
    assert!(second.passed("marker"), "{}", second.log);
    assert_eq!(fs::read_to_string(&marker).unwrap(), "original\n");
}

const CARGO_SETUP: &str = r#"
[[setup]]
name = "build"
run = ["cargo", "build", "--offline", "--quiet"]
timeout_secs = 300

[[validate]]
name = "test"
run = ["cargo", "test", "--offline", "--quiet"]
timeout_secs = 300

[[validate]]
name = "poison-target"
run = ["sh", "-c", "touch \"$CARGO_TARGET_DIR/poison\""]

[[validate]]
name = "poison-home"
run = ["sh", "-c", "touch \"$CARGO_HOME/poison\" || echo refused"]
"#;

#[tokio::test]
async fn validation_builds_in_its_own_copy_of_the_target_folder_and_never_in_the_shared_one() {
    let repo = Repo::rust_crate(&[(".autofix.toml", CARGO_SETUP)]);
    let pool = tempfile::tempdir().unwrap();

    let job = Job::run_changing(repo.path(), pool.path(), 1 << 30, "src/lib.rs", FIXED_LIB).await;

    assert_eq!(
        job.summary.failure.as_ref().map(|failure| failure.code),
        None,
        "{}",
        job.log
    );
    assert!(job.passed("test"), "{}", job.log);
    assert!(
        job.passed("poison-target"),
        "its own copy is writable: {}",
        job.log
    );
    assert!(
        job.output_of("poison-home").contains("refused"),
        "cargo's home is read-only"
    );
    let shared = tool_dir(pool.path(), &job.folder("cargo"));
    assert!(
        shared.join("target/debug").is_dir(),
        "setup built into the shared folder"
    );
    assert!(!shared.join("target/poison").exists());
    assert!(!shared.join("home/poison").exists());
    assert!(
        fs::read_dir(pool.path().join("scratch"))
            .unwrap()
            .next()
            .is_none(),
        "the job's own copy is gone with the job"
    );
}

const QUIET_SETUP: &str = r#"
[[setup]]
name = "fill"
run = ["sh", "-c", "mkdir -p \"$PIP_CACHE_DIR\" && head -c 4096 /dev/zero > \"$PIP_CACHE_DIR/wheel\""]

[[validate]]
name = "true"
run = ["true"]
"#;

#[tokio::test]
async fn a_lockfile_change_starts_a_fresh_folder_and_an_unchanged_one_reuses_it() {
    let repo = Repo::python_project(&[
        ("requirements.txt", "attrs==23.1.0\n"),
        (".autofix.toml", QUIET_SETUP),
    ]);
    let pool = tempfile::tempdir().unwrap();

    let first = Job::run(repo.path(), pool.path(), 1 << 30).await;
    let again = Job::run(repo.path(), pool.path(), 1 << 30).await;
    repo.write("requirements.txt", "attrs==24.2.0\n");
    repo.git(&["commit", "-q", "-am", "bump attrs"]);
    let bumped = Job::run(repo.path(), pool.path(), 1 << 30).await;

    assert!(
        first
            .log
            .contains(&format!("python folder {} (new", first.folder("python")))
    );
    assert_eq!(again.folder("python"), first.folder("python"));
    again.says("(reused)");
    assert_ne!(bumped.folder("python"), first.folder("python"));
    assert!(
        bumped
            .log
            .contains(&format!("python folder {} (new", bumped.folder("python")))
    );
    assert!(tool_dir(pool.path(), &first.folder("python")).is_dir());
    assert!(tool_dir(pool.path(), &bumped.folder("python")).is_dir());
}

#[tokio::test]
async fn over_the_limit_the_least_recently_used_folder_is_evicted_and_the_running_jobs_kept() {
    let repo = Repo::python_project(&[
        ("requirements.txt", "attrs==23.1.0\n"),
        (".autofix.toml", QUIET_SETUP),
    ]);
    let pool = tempfile::tempdir().unwrap();
    let old = Job::run(repo.path(), pool.path(), 1 << 30).await;
    repo.write("requirements.txt", "attrs==24.2.0\n");
    repo.git(&["commit", "-q", "-am", "bump attrs"]);

    // Room for one folder of 4 KiB, not two.
    let new = Job::run(repo.path(), pool.path(), 6000).await;

    let evicted = format!(
        "cache: evicted github/acme/calc/tools/{}",
        old.folder("python")
    );
    new.says(&evicted);
    assert!(!tool_dir(pool.path(), &old.folder("python")).exists());
    assert!(
        tool_dir(pool.path(), &new.folder("python"))
            .join("pip/wheel")
            .is_file()
    );
}

#[tokio::test]
async fn a_bound_of_zero_turns_the_caches_off() {
    let setup = r#"
[[setup]]
name = "where"
run = ["sh", "-c", "echo ${PIP_CACHE_DIR:-unset} > where.txt"]

[[validate]]
name = "unset"
run = ["grep", "-qx", "unset", "where.txt"]
"#;
    let repo = Repo::python_project(&[("requirements.txt", "attrs\n"), (".autofix.toml", setup)]);
    let pool = tempfile::tempdir().unwrap();

    let job = Job::run(repo.path(), pool.path(), 0).await;

    job.says("cache: off (exec.cache_max_bytes = 0)");
    assert!(
        job.passed("unset"),
        "no tool was pointed anywhere: {}",
        job.log
    );
    assert!(
        fs::read_dir(pool.path()).unwrap().next().is_none(),
        "nothing kept"
    );
}

const VENV_SETUP: &str = r#"
[[setup]]
name = "venv"
run = ["python3", "-m", "venv", ".venv"]

[[setup]]
name = "install"
run = [".venv/bin/python", "-m", "pip", "install", "--quiet", "-e", "."]

[[validate]]
name = "imports-from-this-tree"
run = ["sh", "-c", ".venv/bin/python -c 'import calc; print(calc.__file__)' | grep -q \"^$PWD/calc.py$\""]

[[validate]]
name = "scripts-start"
run = [".venv/bin/pip", "--version"]
"#;

const PYPROJECT: &str = "[build-system]\nrequires = [\"setuptools\"]\nbuild-backend = \"setuptools.build_meta\"\n\n[project]\nname = \"calc\"\nversion = \"0.1.0\"\n\n[tool.setuptools]\npy-modules = [\"calc\"]\n";

#[tokio::test]
async fn a_second_job_in_another_work_tree_gets_setups_venv_moved_to_its_own_path() {
    let origin =
        Repo::python_project(&[("pyproject.toml", PYPROJECT), (".autofix.toml", VENV_SETUP)]);
    let pool = tempfile::tempdir().unwrap();
    let clones = tempfile::tempdir().unwrap();
    let clone = |name: &str| {
        let path = clones.path().join(name);
        origin.git(&["clone", "-q", ".", path.to_str().unwrap()]);
        path
    };
    let (first_tree, second_tree) = (clone("job-1"), clone("job-2"));

    let first = Job::run(&first_tree, pool.path(), 1 << 30).await;
    let second = Job::run(&second_tree, pool.path(), 1 << 30).await;

    assert_eq!(
        first.summary.failure.as_ref().map(|failure| failure.code),
        None,
        "{}",
        first.log
    );
    first.says("setup: venv passed");
    first.says("cache: setup kept as snapshot");
    assert_eq!(
        second.summary.failure.as_ref().map(|failure| failure.code),
        None,
        "{}",
        second.log
    );
    assert!(
        second
            .log
            .contains("setup: restored from the cache (snapshot"),
        "{}",
        second.log
    );
    assert!(!second.log.contains("setup: venv passed"), "{}", second.log);
    assert!(second.passed("imports-from-this-tree"), "{}", second.log);
    assert!(second.passed("scripts-start"), "{}", second.log);
}

fn answers(llm: &ScriptedLlm) {
    llm.reply_text_for_stage(
        "triage",
        json!({"actionable": true, "classification": "fix", "risk": "LOW",
               "affected_files": ["calc.py"], "reason": "no bounds"})
        .to_string(),
    );
    llm.reply_text_for_stage(
        "plan",
        json!({"branch_name": "ignored", "plan_steps": ["clamp both ends"],
               "file_changes": [{"path": "calc.py", "operation": "MODIFY", "line_range": [1, 2]}],
               "commit_summary": "clamp to both bounds", "scope": "calc"})
        .to_string(),
    );
    llm.reply_text_for_stage(
        "edit",
        "calc.py\n```\n<<<<<<< SEARCH\n    return value\n=======\n    return max(low, min(value, high))\n>>>>>>> REPLACE\n```\n",
    );
    llm.reply_text_for_stage(
        "audit",
        json!({"decision": "accepted", "reasons": ["fixed"], "must_fixes": [], "nice_to_haves": []})
            .to_string(),
    );
}

#[test]
fn a_second_autofix_fix_on_the_same_repository_restores_setup_instead_of_running_it() {
    let setup = r#"
[[setup]]
name = "deps"
run = ["sh", "-c", "mkdir -p deps \"$PIP_CACHE_DIR\" && echo ready > deps/state && echo kept > \"$PIP_CACHE_DIR/wheel\""]

[[validate]]
name = "deps-ready"
run = ["grep", "-qx", "ready", "deps/state"]

[[validate]]
name = "download-kept"
run = ["sh", "-c", "grep -qx kept \"$PIP_CACHE_DIR/wheel\""]
"#;
    let repo = Repo::python_project(&[
        ("requirements.txt", "attrs\n"),
        (".gitignore", "__pycache__/\ndeps/\n"),
        (".autofix.toml", setup),
    ]);

    let llm = ScriptedLlm::start();
    answers(&llm);
    let issue = |number: u64| json!({"number": number, "title": "clamp ignores its bounds", "body": "", "labels": []});
    let first = Fix::run(repo.path(), &llm, &issue(7));
    repo.git(&["checkout", "-q", "main"]);
    answers(&llm);
    let second = Fix::run(repo.path(), &llm, &issue(8));

    assert_eq!(first.output.status.code(), Some(0), "{}", first.run_log());
    assert!(
        first.run_log().contains("setup: deps passed"),
        "{}",
        first.run_log()
    );
    assert!(first.run_log().contains("cache: setup kept as snapshot"));
    assert_eq!(second.output.status.code(), Some(0), "{}", second.run_log());
    assert!(
        second
            .run_log()
            .contains("setup: restored from the cache (snapshot"),
        "{}",
        second.run_log()
    );
    assert!(!second.run_log().contains("setup: deps passed"));
    assert!(repo.path().join(".git/autofix/cache/tools").is_dir());
}

#[tokio::test]
async fn what_setup_wrote_into_cache_dir_comes_back_with_its_snapshot() {
    let setup = r#"
[[setup]]
name = "schema"
run = ["sh", "-c", "echo schema > \"$CACHE_DIR/schema\""]

[[validate]]
name = "schema-there"
run = ["sh", "-c", "grep -qx schema \"$CACHE_DIR/schema\""]
"#;
    let repo = Repo::python_project(&[("requirements.txt", "attrs\n"), (".autofix.toml", setup)]);
    let pool = tempfile::tempdir().unwrap();

    let first = Job::run(repo.path(), pool.path(), 1 << 30).await;
    let second = Job::run(repo.path(), pool.path(), 1 << 30).await;

    first.says("setup: schema passed");
    second.says("setup: restored from the cache");
    assert!(second.passed("schema-there"), "{}", second.log);
}

#[tokio::test]
async fn a_snapshot_that_breaks_halfway_leaves_the_checkout_as_it_was_and_setup_runs() {
    let setup = r#"
[[setup]]
name = "deps"
run = ["sh", "-c", "mkdir -p deps && echo ready > deps/state && echo '# pinned' >> requirements.txt"]

[[validate]]
name = "as-setup-left-it"
run = ["sh", "-c", "grep -qx ready deps/state && grep -qx attrs requirements.txt && test $(grep -c pinned requirements.txt) = 1"]
"#;
    let repo = Repo::python_project(&[("requirements.txt", "attrs\n"), (".autofix.toml", setup)]);
    let pool = tempfile::tempdir().unwrap();
    let first = Job::run(repo.path(), pool.path(), 1 << 30).await;
    let snapshot = first
        .log
        .split_once("cache: setup kept as snapshot ")
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no snapshot kept: {}", first.log))
        .to_string();
    // The snapshot loses a folder it lists, as a full disk or a person's cleanup could leave it.
    let kept = pool.path().join("github/acme/calc/setups").join(&snapshot);
    fs::remove_dir_all(kept.join("tree/deps")).unwrap();

    let second = Job::run(repo.path(), pool.path(), 1 << 30).await;

    assert!(
        second.log.contains(&format!(
            "setup: running the commands (snapshot {snapshot}: stopped halfway"
        )),
        "{}",
        second.log
    );
    second.says("setup: deps passed");
    assert!(second.passed("as-setup-left-it"), "{}", second.log);
    assert_eq!(repo.status(), "", "the tree is put back after the job");
}

const PACKAGE_JSON: &str = r#"{"name": "calc", "version": "1.0.0", "private": true,
 "scripts": {"test": "node -e \"if (!require('is-number')(3)) process.exit(1)\""},
 "dependencies": {"is-number": "7.0.0"}}
"#;

const PACKAGE_LOCK: &str = r#"{
  "name": "calc",
  "version": "1.0.0",
  "lockfileVersion": 3,
  "requires": true,
  "packages": {
    "": {"name": "calc", "version": "1.0.0", "dependencies": {"is-number": "7.0.0"}},
    "node_modules/is-number": {
      "version": "7.0.0",
      "resolved": "https://registry.npmjs.org/is-number/-/is-number-7.0.0.tgz",
      "integrity": "sha512-41Cifkg6e8TylSpdtTpeLVMqvSBEVzTttHvERD741+pnZ8ANv0004MRL43QKPDlK9cGvNp6NZWZUBlbGXYxxng==",
      "engines": {"node": ">=0.12.0"}
    }
  }
}
"#;

#[tokio::test]
async fn npm_installs_into_the_shared_cache_once_and_tests_run_with_it_read_only() {
    let setup = r#"
[[setup]]
name = "npm-ci"
run = ["npm", "ci", "--no-audit", "--no-fund"]

[[validate]]
name = "npm-test"
run = ["npm", "test"]
"#;
    let origin = Repo::with(&[
        ("package.json", PACKAGE_JSON),
        ("package-lock.json", PACKAGE_LOCK),
        (".gitignore", "node_modules/\n"),
        (".autofix.toml", setup),
    ]);
    let pool = tempfile::tempdir().unwrap();
    let clones = tempfile::tempdir().unwrap();
    let clone = |name: &str| {
        let path = clones.path().join(name);
        origin.git(&["clone", "-q", ".", path.to_str().unwrap()]);
        path
    };

    let first = Job::run_changing(&clone("1"), pool.path(), 1 << 30, "README", "calc\n").await;
    let second = Job::run_changing(&clone("2"), pool.path(), 1 << 30, "README", "calc\n").await;

    assert_eq!(
        first.summary.failure.as_ref().map(|failure| failure.code),
        None,
        "{}",
        first.log
    );
    first.says("setup: npm-ci passed");
    let npm_cache = tool_dir(pool.path(), &first.folder("node")).join("npm");
    assert!(
        npm_cache.join("_cacache").is_dir(),
        "npm downloaded into the cache"
    );
    assert!(first.passed("npm-test"), "{}", first.log);
    second.says("setup: restored from the cache");
    assert!(second.passed("npm-test"), "{}", second.log);
}

#[tokio::test]
async fn go_builds_its_cache_in_setup_and_tests_in_the_jobs_own_copy() {
    let setup = r#"
[[setup]]
name = "build"
run = ["go", "build", "./..."]

[[validate]]
name = "go-test"
run = ["go", "test", "-v", "./..."]
"#;
    let repo = Repo::with(&[
        ("go.mod", "module example.com/calc\n\ngo 1.18\n"),
        (
            "calc.go",
            "package calc\n\nfunc Clamp(v, lo, hi int) int {\n\tif v < lo {\n\t\treturn lo\n\t}\n\tif v > hi {\n\t\treturn hi\n\t}\n\treturn v\n}\n",
        ),
        (
            "calc_test.go",
            "package calc\n\nimport \"testing\"\n\nfunc TestClamp(t *testing.T) {\n\tif Clamp(5, 0, 3) != 3 {\n\t\tt.Fatal(\"not clamped\")\n\t}\n}\n",
        ),
        (".autofix.toml", setup),
    ]);
    let pool = tempfile::tempdir().unwrap();

    let job = Job::run_changing(repo.path(), pool.path(), 1 << 30, "README", "calc\n").await;

    assert_eq!(
        job.summary.failure.as_ref().map(|failure| failure.code),
        None,
        "{}",
        job.log
    );
    job.says("setup: build passed");
    let shared = tool_dir(pool.path(), &job.folder("go")).join("build");
    assert!(
        fs::read_dir(&shared).unwrap().next().is_some(),
        "setup filled the shared build cache"
    );
    assert!(job.passed("go-test"), "{}", job.log);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bots_second_job_on_a_repository_restores_setup_from_its_workdir() {
    use crate::support::bot::{BotTester, FIXED_PY, python_project, script_python_fix};
    let config = format!(
        "[[setup]]\nname = \"deps\"\nrun = [\"sh\", \"-c\", \"mkdir -p deps && echo ready > deps/state\"]\n\n\
         [[validate]]\nname = \"deps-ready\"\nrun = [\"grep\", \"-qx\", \"ready\", \"deps/state\"]\n\n{}",
        crate::support::bot::PY_CONFIG
    );
    let mut files: Vec<(&str, &str)> = python_project()
        .into_iter()
        .filter(|(path, _)| *path != ".autofix.toml" && *path != ".gitignore")
        .collect();
    files.push((".autofix.toml", &config));
    files.push((".gitignore", "__pycache__/\n.pytest_cache/\ndeps/\n"));
    files.push(("requirements.txt", "pytest\n"));
    let t = BotTester::github().await;
    let remote = t.repo("acme/widgets", &files);
    let alice = t.maintainer("acme/widgets", "alice");

    for issue in [7, 8] {
        script_python_fix(&t.llm);
        t.label_issue_and_wait("acme/widgets", issue, "clamp ignores its bounds", &alice)
            .await;
    }

    let pull_requests = t.change_requests("acme/widgets");
    assert_eq!(pull_requests.len(), 2, "{pull_requests:#?}");
    assert_eq!(remote.read(&pull_requests[1].head, "calc.py"), FIXED_PY);
    let logs: Vec<String> = glob_run_logs(&t.workdir().join("jobs"));
    assert_eq!(logs.len(), 2, "one run per job");
    assert!(
        logs.iter()
            .any(|log| log.contains("cache: setup kept as snapshot"))
    );
    assert!(
        logs.iter()
            .any(|log| log.contains("setup: restored from the cache (snapshot")),
        "{logs:#?}"
    );
    let tools = t.workdir().join("deps/github/acme/widgets/tools");
    assert!(
        fs::read_dir(&tools).unwrap().any(|entry| entry
            .unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with("python-")),
        "the repository's caches live under the workdir"
    );
}

/// Every job's `run.log` under `jobs/<id>/artifacts/attempt-<n>/`.
fn glob_run_logs(jobs: &Path) -> Vec<String> {
    let mut logs = Vec::new();
    for job in fs::read_dir(jobs).unwrap() {
        let artifacts = job.unwrap().path().join("artifacts");
        for attempt in fs::read_dir(&artifacts).into_iter().flatten() {
            let log = attempt.unwrap().path().join("run.log");
            if let Ok(text) = fs::read_to_string(log) {
                logs.push(text);
            }
        }
    }
    logs
}

#[tokio::test]
async fn what_a_failed_setup_downloaded_still_counts_against_the_bound() {
    let failing = r#"
[[setup]]
name = "fill-then-fail"
run = ["sh", "-c", "mkdir -p \"$PIP_CACHE_DIR\" && head -c 4096 /dev/zero > \"$PIP_CACHE_DIR/wheel\" && exit 1"]

[[validate]]
name = "true"
run = ["true"]
"#;
    let repo = Repo::python_project(&[
        ("requirements.txt", "attrs==23.1.0\n"),
        (".autofix.toml", failing),
    ]);
    let pool = tempfile::tempdir().unwrap();
    let failed = Job::run(repo.path(), pool.path(), 1 << 30).await;
    assert_eq!(
        failed.summary.failure.as_ref().map(|failure| failure.stage),
        Some(autofix::failure::Stage::Setup),
        "{}",
        failed.log
    );
    repo.write("requirements.txt", "attrs==24.2.0\n");
    repo.write(".autofix.toml", QUIET_SETUP);
    repo.git(&["commit", "-q", "-am", "bump attrs, fix setup"]);

    // Room for one folder of 4 KiB, not two: the failed job's must have been counted.
    let next = Job::run(repo.path(), pool.path(), 6000).await;

    let evicted = format!(
        "cache: evicted github/acme/calc/tools/{}",
        failed.folder("python")
    );
    next.says(&evicted);
}
