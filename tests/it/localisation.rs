//! How autofix finds the code an issue is about, without a model: each signal on a small
//! repository (a stack trace, an identifier, a module path, a file named outright), docs and
//! tests ranked below source, span-based context that edits still apply to, and the planner's
//! bounded, read-only look-ups.

use std::fs;
use std::path::Path;

use autofix::config::repo::RepoConfig;
use autofix::edits::paths::{ProjectRoot, ProtectedPaths, project_files};
use autofix::edits::{Change, detect, search_replace, udiff};
use autofix::index::kinds::FileKind;
use autofix::index::query::IssueQuery;
use autofix::index::retrieve::{Method, rank};
use autofix::index::{Ranking, RepoIndex, Span};
use autofix::pipeline::context;
use autofix::pipeline::plan::Plan;
use autofix::pipeline::repo_map::{MAX_NAMES_PER_LOOKUP, look_up, looked_up_section};

/// A small Python web framework with a router, sessions, utilities, docs and tests.
fn shop() -> Vec<(&'static str, String)> {
    let mut files = vec![
        (
            "shop/sessions.py",
            "class Session:\n    def __init__(self):\n        self.proxies = {}\n\n    def send(self, request):\n        proxies = self.proxies\n        return request.go(proxies)\n\n    def rebuild_proxies(self, request):\n        return dict(self.proxies)\n"
                .to_string(),
        ),
        (
            "shop/router.py",
            "def route(path):\n    parts = path.split('/')\n    return parts[1]\n\n\ndef mount(app, prefix):\n    app.prefix = prefix\n"
                .to_string(),
        ),
        (
            "shop/utils.py",
            "def clamp(value, low, high):\n    return max(low, min(value, high))\n".to_string(),
        ),
        (
            "docs/sessions.md",
            "# Sessions\n\nA Session keeps proxies. Call send to send a request through the session's proxies; proxies proxies proxies.\n"
                .to_string(),
        ),
        (
            "tests/test_sessions.py",
            "from shop.sessions import Session\n\ndef test_send_uses_proxies():\n    session = Session()\n    assert session.send(Req()) is not None\n"
                .to_string(),
        ),
    ];
    // Enough unrelated modules that rarity means something.
    for i in 0..30 {
        files.push((
            Box::leak(format!("shop/plugins/plugin_{i}.py").into_boxed_str()),
            format!("def hook_{i}(request):\n    return request\n"),
        ));
    }
    files
}

struct Repo {
    dir: tempfile::TempDir,
    index: RepoIndex,
}

impl Repo {
    fn with(files: &[(&str, String)]) -> Repo {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let absolute = dir.path().join(path);
            fs::create_dir_all(absolute.parent().unwrap()).unwrap();
            fs::write(absolute, text).unwrap();
        }
        let listed = project_files(dir.path()).unwrap();
        let index = RepoIndex::build(dir.path(), &listed);
        Repo { dir, index }
    }

    fn rank(&self, title: &str, body: &str) -> Ranking {
        rank(&self.index, &IssueQuery::parse(title, body), Method::Full)
    }

    fn root(&self) -> ProjectRoot {
        ProjectRoot::new(self.dir.path()).unwrap()
    }

    fn protected(&self) -> ProtectedPaths {
        RepoConfig::default().protected_paths(&self.root()).unwrap()
    }
}

fn first(ranking: &Ranking) -> &str {
    &ranking.files[0].path
}

#[test]
fn a_stack_trace_points_at_the_file_and_the_function_of_its_frame() {
    let repo = Repo::with(&shop());
    let ranking = repo.rank(
        "Crash when mounting",
        "Traceback (most recent call last):\n  File \"/srv/app/venv/lib/python3.11/site-packages/shop/router.py\", line 3, in route\n    return parts[1]\nIndexError: list index out of range\n",
    );
    assert_eq!(first(&ranking), "shop/router.py");
    let file = &ranking.files[0];
    assert!(
        file.why.contains(&"stack trace line 3".to_string()),
        "{:?}",
        file.why
    );
    assert_eq!(file.spans[0], Span::new(1, 3), "the frame's function");
}

#[test]
fn an_identifier_the_issue_writes_as_code_finds_the_file_that_defines_it() {
    let repo = Repo::with(&shop());
    let ranking = repo.rank(
        "proxies lost on redirect",
        "After a redirect `rebuild_proxies` forgets the settings.",
    );
    assert_eq!(first(&ranking), "shop/sessions.py");
    let file = &ranking.files[0];
    assert!(
        file.why.contains(&"defines rebuild_proxies".to_string()),
        "{:?}",
        file.why
    );
    assert_eq!(file.spans[0], Span::new(9, 10));
}

#[test]
fn a_module_path_names_its_file() {
    let repo = Repo::with(&shop());
    let ranking = repo.rank(
        "wrong bounds",
        "shop.utils gives the wrong answer for negative numbers",
    );
    assert_eq!(first(&ranking), "shop/utils.py");
    assert!(ranking.files[0].why.contains(&"module path".to_string()));
}

#[test]
fn docs_and_tests_full_of_the_issue_s_words_rank_below_the_source() {
    let repo = Repo::with(&shop());
    let ranking = repo.rank(
        "Session proxies",
        "the session's proxies are not used when I send",
    );
    let place = |path: &str| ranking.position(path).unwrap();
    assert_eq!(first(&ranking), "shop/sessions.py");
    assert!(place("docs/sessions.md") > place("shop/sessions.py"));
    assert!(place("tests/test_sessions.py") > place("shop/sessions.py"));
}

#[test]
fn an_issue_about_the_docs_lets_the_docs_rank_first() {
    let repo = Repo::with(&shop());
    let ranking = repo.rank(
        "Typo in the sessions docs",
        "docs/sessions.md says proxies four times",
    );
    assert_eq!(first(&ranking), "docs/sessions.md");
}

#[test]
fn the_baselines_rank_by_words_alone_or_by_mentions_alone() {
    let repo = Repo::with(&shop());
    let query = IssueQuery::parse("Session proxies", "see shop/router.py");
    let mentions = rank(&repo.index, &query, Method::Mentions);
    assert_eq!(mentions.files.len(), 1);
    assert_eq!(first(&mentions), "shop/router.py");
    let bm25 = rank(&repo.index, &query, Method::Bm25);
    assert_ne!(
        bm25.files[0].kind,
        FileKind::Source,
        "words alone favour the prose and the tests that repeat them"
    );
}

/// A long module whose bug is deep inside: shown by its span, then edited through it.
fn long_module() -> String {
    let mut text = String::new();
    for i in 0..200 {
        text.push_str(&format!("def helper_{i}(x):\n    return x + {i}\n\n"));
    }
    text.push_str("def average(values):\n    return sum(values) / len(values)\n");
    text
}

fn span_context(repo: &Repo) -> context::Context {
    let ranking = repo.rank(
        "ZeroDivisionError",
        "`average([])` raises ZeroDivisionError",
    );
    let no_plan = Plan::none();
    context::build(&repo.root(), &repo.protected(), &no_plan, &ranking, 300)
}

#[test]
fn edits_written_against_a_span_apply_to_the_whole_file() {
    let module = long_module();
    let repo = Repo::with(&[("stats/mean.py", module.clone())]);
    let built = span_context(&repo);
    let file = built.file("stats/mean.py").unwrap();
    assert!(!file.whole());
    let shown: String = file.pieces.iter().map(|p| p.text.as_str()).collect();
    assert!(shown.contains("def average(values):"));
    assert!(
        !shown.contains("def helper_0(x)"),
        "the start of the file is not shown"
    );

    // A SEARCH/REPLACE block quoting only the shown lines applies to the whole file.
    let answer = "stats/mean.py\n```python\n<<<<<<< SEARCH\ndef average(values):\n    return sum(values) / len(values)\n=======\ndef average(values):\n    if not values:\n        return 0.0\n    return sum(values) / len(values)\n>>>>>>> REPLACE\n```\n";
    let set = detect::parse(answer, None).unwrap();
    let Change::Replace { blocks } = &set.edits[0].change else {
        panic!()
    };
    let after = search_replace::apply(&module, blocks).unwrap();
    assert!(after.starts_with("def helper_0(x):\n"));
    assert!(after.ends_with(
        "    if not values:\n        return 0.0\n    return sum(values) / len(values)\n"
    ));

    // So does a unified diff whose hunk carries the span's own line numbers.
    let line = file.pieces.last().unwrap().span.end - 1;
    let diff = format!(
        "--- a/stats/mean.py\n+++ b/stats/mean.py\n@@ -{line},2 +{line},4 @@\n def average(values):\n+    if not values:\n+        return 0.0\n     return sum(values) / len(values)\n"
    );
    let set = detect::parse(&diff, None).unwrap();
    let Change::Patch { hunks } = &set.edits[0].change else {
        panic!()
    };
    assert_eq!(udiff::apply(&module, hunks).unwrap(), after);
}

#[test]
fn the_planner_sees_what_it_asks_for_and_nothing_outside_or_denied() {
    let mut files = shop();
    files.push((".env.production", "API_TOKEN=s3cret\n".to_string()));
    files.push((
        ".github/workflows/ci.yml",
        "on: push # secret_step\n".to_string(),
    ));
    let repo = Repo::with(&files);
    let outside = repo.dir.path().parent().unwrap().join("outside_secret.py");
    fs::write(&outside, "def outside_secret():\n    return 'nope'\n").unwrap();

    let asked: Vec<String> = [
        "Session.send",
        "shop/utils.py",
        ".env.production",
        ".github/workflows/ci.yml",
        "../outside_secret.py",
        "outside_secret",
        "/etc/passwd",
    ]
    .map(String::from)
    .to_vec();
    let looked_up = look_up(&repo.index, &repo.protected(), &asked);
    let shown = looked_up_section(&looked_up);
    fs::remove_file(&outside).unwrap();

    assert!(
        shown.contains("### `Session.send`: shop/sessions.py lines 5-7\n"),
        "{shown}"
    );
    assert!(shown.contains("    def send(self, request):\n"));
    assert!(shown.contains("### `shop/utils.py`: shop/utils.py (2 lines)\n"));
    assert!(
        !shown.contains("s3cret"),
        "a denied path is never shown: {shown}"
    );
    assert!(
        !shown.contains("secret_step"),
        "CI definitions are never shown: {shown}"
    );
    assert!(
        !shown.contains("'nope'"),
        "nothing outside the work tree is shown: {shown}"
    );
    assert!(!shown.contains("root:"), "{shown}");
    assert!(shown.contains("### `.env.production`: the path is protected (rule `.env*`)"));
    assert!(shown.contains("### `../outside_secret.py`: no file or definition by that name"));
}

#[test]
fn one_look_up_round_shows_at_most_eight_names() {
    let repo = Repo::with(&shop());
    let asked: Vec<String> = (0..20).map(|i| format!("hook_{i}")).collect();
    let looked_up = look_up(&repo.index, &repo.protected(), &asked);
    assert_eq!(looked_up.len(), MAX_NAMES_PER_LOOKUP);
}

#[test]
fn a_symlink_out_of_the_work_tree_is_not_indexed() {
    let outside = tempfile::tempdir().unwrap();
    fs::write(
        outside.path().join("secret.py"),
        "def leaked_key():\n    return 'k'\n",
    )
    .unwrap();
    let repo_dir = tempfile::tempdir().unwrap();
    fs::write(repo_dir.path().join("main.py"), "def main():\n    pass\n").unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("secret.py"),
        repo_dir.path().join("link.py"),
    )
    .unwrap();
    let files = project_files(repo_dir.path()).unwrap();
    let index = RepoIndex::build(repo_dir.path(), &files);
    let ranking = rank(
        &index,
        &IssueQuery::parse("`leaked_key` is wrong", ""),
        Method::Full,
    );
    assert!(
        ranking.position("link.py").is_none(),
        "{:?}",
        ranking.files.iter().map(|f| &f.path).collect::<Vec<_>>()
    );
    assert!(Path::new(&repo_dir.path().join("link.py")).exists());
}

/// `autofix context --json` on `repo` for `issue`, within `tokens`.
fn context_json(repo: &Repo, issue: &str, tokens: &str) -> serde_json::Value {
    let issue_file = repo.dir.path().join("issue.md");
    fs::write(&issue_file, issue).unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_autofix"))
        .args([
            "context", "--tokens", tokens, "--limit", "1", "--json", "--repo",
        ])
        .arg(repo.dir.path())
        .arg("--issue-file")
        .arg(&issue_file)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn autofix_context_prints_the_ranked_files_and_spans_as_json() {
    let mut files = shop();
    files.push(("stats/mean.py", long_module()));
    let repo = Repo::with(&files);
    let issue = "average fails on an empty list\n\n`average([])` raises ZeroDivisionError\n";

    let report = context_json(&repo, issue, "300");
    let first = &report["files"][0];
    assert_eq!(first["path"], "stats/mean.py");
    assert_eq!(first["rank"], 1);
    assert_eq!(first["in_context"], true);
    assert!(
        first["why"]
            .as_array()
            .unwrap()
            .contains(&"defines average".into())
    );
    let span = &first["spans"][0];
    assert!(
        span[0].as_u64().unwrap() <= 601 && span[1].as_u64().unwrap() >= 602,
        "{report}"
    );
    assert!(report["tokens"].as_u64().unwrap() <= 300);
    assert_eq!(report["files"].as_array().unwrap().len(), 1, "--limit 1");

    // Within 20 tokens nothing fits, and the ranking is still listed to be judged.
    let report = context_json(&repo, issue, "20");
    let first = &report["files"][0];
    assert_eq!(first["path"], "stats/mean.py");
    assert_eq!(first["in_context"], false, "{report}");
    assert_eq!(
        first["tokens"],
        long_module().len().div_ceil(4),
        "the whole file's tokens"
    );
    assert_eq!(report["tokens"], 0);
}

#[test]
fn autofix_context_says_what_is_wrong_with_a_missing_issue_file() {
    let repo = Repo::with(&shop());
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_autofix"))
        .args(["context", "--tokens", "300", "--repo"])
        .arg(repo.dir.path())
        .args(["--issue-file", "/nonexistent/issue.md"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with("autofix context: cannot read the issue file /nonexistent/issue.md"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "one clear line: {stderr}");
}
