//! `code-commit` end to end: the real binary, a scripted Gemini over HTTP, and a real `build.sh`
//! that compiles a small Rust program with `rustc`. Each test is one story from code-commit.md.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use crate::support::scripted_llm::{Reply, ScriptedLlm};

const KEY: &str = "AIzaSy-test-key-0123456789";

const WORKING_MAIN: &str = "fn main() {\n    println!(\"hello\");\n}\n";

const BUILD_SH: &str = "#!/bin/sh
set -e
mkdir -p target
rustc --edition 2021 --crate-name demo -o target/demo src/main.rs
./target/demo
";

const QUERY: &str = "Make the program greet the world instead of printing hello.\n";

/// A project folder as the supervisor leaves it: source, build.sh, query, rollup and key.
struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    fn rust_demo() -> Project {
        let project = Project {
            dir: tempfile::tempdir().unwrap(),
        };
        project.write("src/main.rs", WORKING_MAIN);
        project.write_executable("build.sh", BUILD_SH);
        project.write("query.txt", QUERY);
        project.write(
            "codeRollup.txt",
            &format!("--- src/main.rs ---\n{WORKING_MAIN}"),
        );
        project.write("gemini-key.txt", &format!("{KEY}\n"));
        project.write(".gitignore", "/target\nsecrets.env\n");
        project
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn write(&self, relative: &str, content: &str) {
        let path = self.path().join(relative);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
    }

    fn write_executable(&self, relative: &str, content: &str) {
        self.write(relative, content);
        let path = self.path().join(relative);
        fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
    }

    fn read(&self, relative: &str) -> String {
        fs::read_to_string(self.path().join(relative)).unwrap()
    }

    fn exists(&self, relative: &str) -> bool {
        self.path().join(relative).exists()
    }

    /// Runs the real `code-commit` binary in the project against `llm`.
    fn run(&self, llm: &ScriptedLlm, env: &[(&str, &str)]) -> Output {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_code-commit"));
        command
            .current_dir(self.path())
            .env("GEMINI_BASE_URL", llm.base_url())
            .env("GEMINI_MODEL", "gemini-2.5-flash")
            .env("CODE_COMMIT_LLM_RETRIES", "0")
            .env("CODE_COMMIT_BUILD_TIMEOUT_SECS", "120");
        for (name, value) in env {
            command.env(name, value);
        }
        command.output().unwrap()
    }

    /// The run's log folder: exactly one must exist.
    fn log_dir(&self) -> PathBuf {
        let entries: Vec<PathBuf> = fs::read_dir(self.path().join("logs"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(entries.len(), 1, "one log folder per run: {entries:?}");
        entries.into_iter().next().unwrap()
    }

    fn log(&self, name: &str) -> String {
        fs::read_to_string(self.log_dir().join(name))
            .unwrap_or_else(|err| panic!("log file {name}: {err}"))
    }

    fn log_names(&self) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(self.log_dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

fn replace(path: &str, content: &str) -> String {
    format!("^^^{path}\n{content}^^^end\n")
}

fn greeting_main() -> String {
    "fn main() {\n    println!(\"hello, world\");\n}\n".to_string()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn names(list: &[&str]) -> Vec<String> {
    let mut names: Vec<String> = list.iter().map(|s| s.to_string()).collect();
    names.sort();
    names
}

#[test]
fn a_good_first_answer_is_applied_built_and_logged() {
    let project = Project::rust_demo();
    let llm = ScriptedLlm::start();
    llm.reply_text(format!(
        "Here is the change.\n\n{}",
        replace("src/main.rs", &greeting_main())
    ));

    let output = project.run(&llm, &[]);

    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(project.read("src/main.rs"), greeting_main());
    assert!(stdout(&output).contains("replaced src/main.rs"));
    assert!(stdout(&output).contains("code-commit: build passes on the initial query"));
    assert_eq!(
        project.log_names(),
        names(&[
            "initial-query.txt",
            "initial-query-response.txt",
            "initial-query-response.json",
            "initial-query-build.txt"
        ])
    );
    insta::assert_snapshot!("initial_query", project.log("initial-query.txt"));
    let requests = llm.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].path,
        "/v1beta/models/gemini-2.5-flash:generateContent"
    );
    assert_eq!(requests[0].header("x-autofix-stage"), Some("initial"));
    assert_eq!(requests[0].header("x-goog-api-key"), Some(KEY));
    assert_eq!(
        requests[0].prompt().unwrap(),
        project.log("initial-query.txt")
    );
    assert!(
        project
            .log("initial-query-response.txt")
            .contains("^^^src/main.rs")
    );
    let json: serde_json::Value =
        serde_json::from_str(&project.log("initial-query-response.json")).unwrap();
    assert!(json["candidates"].is_array(), "the raw Gemini body is kept");
}

#[test]
fn a_broken_answer_is_repaired_with_the_build_output_query_codebase_and_replacements() {
    let project = Project::rust_demo();
    let llm = ScriptedLlm::start();
    let broken = "fn main() {\n    println!(\"hello, world\")\n    undefined_call();\n}\n";
    llm.reply_text(replace("src/main.rs", broken));
    llm.reply_text(replace("src/main.rs", &greeting_main()));

    let output = project.run(&llm, &[]);

    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("build passes after 1 repair query"));
    let repair = project.log("repair-query-1.txt");
    assert!(repair.starts_with(autofix::code_commit::REPAIR_SYSTEM_PROMPT));
    let build_output = project.log("initial-query-build.txt");
    assert!(build_output.contains("error"), "{build_output}");
    let after_prompt = &repair[autofix::code_commit::REPAIR_SYSTEM_PROMPT.len()..];
    let build_at = after_prompt.find("error").unwrap();
    let query_at = after_prompt.find(QUERY.trim()).unwrap();
    let codebase_at = after_prompt.find("--- src/main.rs ---").unwrap();
    let replacement_at = after_prompt
        .find("--- FILE REPLACEMENT src/main.rs ---\n")
        .unwrap();
    assert!(build_at < query_at && query_at < codebase_at && codebase_at < replacement_at);
    assert!(repair.ends_with(&format!("--- FILE REPLACEMENT src/main.rs ---\n{broken}")));
    assert_eq!(llm.requests()[1].header("x-autofix-stage"), Some("repair"));
    assert!(
        project
            .log("repair-query-1-response.txt")
            .contains("^^^src/main.rs")
    );
}

#[test]
fn warnings_fail_the_build_even_when_it_exits_zero() {
    let project = Project::rust_demo();
    let llm = ScriptedLlm::start();
    let warns = "fn main() {\n    let unused = 1;\n    println!(\"hello, world\");\n}\n";
    llm.reply_text(replace("src/main.rs", warns));
    llm.reply_text(replace("src/main.rs", &greeting_main()));

    let output = project.run(&llm, &[]);

    assert!(output.status.success(), "{}", stderr(&output));
    let first_build = project.log("initial-query-build.txt");
    assert!(
        first_build.starts_with("build.sh exited 0 but printed"),
        "{first_build}"
    );
    assert!(
        project
            .log("repair-query-1.txt")
            .contains("unused variable")
    );
}

#[test]
fn after_three_failed_repairs_it_gives_up_and_leaves_the_last_application() {
    let project = Project::rust_demo();
    let llm = ScriptedLlm::start();
    for attempt in 0..4 {
        llm.reply_text(replace(
            "src/main.rs",
            &format!("fn main() {{ broken_{attempt}() }}\n"),
        ));
    }

    let output = project.run(&llm, &[]);

    assert_eq!(output.status.code(), Some(1));
    let message = stderr(&output);
    assert_eq!(message.lines().count(), 1, "{message}");
    assert!(
        message.starts_with("code-commit: error: the build still fails after 3 repair queries: build.sh exited with status 1"),
        "{message}"
    );
    assert_eq!(project.read("src/main.rs"), "fn main() { broken_3() }\n");
    let logs = project.log_names();
    for n in 1..=3 {
        for suffix in ["", "-response", "-build"] {
            assert!(
                logs.contains(&format!("repair-query-{n}{suffix}.txt")),
                "{logs:?}"
            );
        }
        assert!(logs.contains(&format!("repair-query-{n}-response.json")));
    }
    assert!(!logs.iter().any(|name| name.starts_with("repair-query-4")));
    assert_eq!(llm.requests().len(), 4);
}

#[test]
fn repair_queries_list_only_the_latest_version_of_each_file() {
    let project = Project::rust_demo();
    project.write("src/old.rs", "pub fn old() {}\n");
    let llm = ScriptedLlm::start();
    llm.reply_text(format!(
        "{}{}{}",
        replace("src/main.rs", "fn main() { first() }\n"),
        replace("src/helper.rs", "pub fn helper() {}\n"),
        "^^^src/old.rs\n^^^end\n"
    ));
    llm.reply_text(replace("src/main.rs", "fn main() { second() }\n"));
    llm.reply_text(replace("src/main.rs", &greeting_main()));

    let output = project.run(&llm, &[]);

    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!project.exists("src/old.rs"));
    let second_repair = project.log("repair-query-2.txt");
    let listing = &second_repair[second_repair.find("--- FILE ").unwrap()..];
    assert_eq!(
        listing,
        "--- FILE REPLACEMENT src/helper.rs ---\npub fn helper() {}\n\
         --- FILE REMOVED src/old.rs ---\n\
         --- FILE REPLACEMENT src/main.rs ---\nfn main() { second() }\n"
    );
}

#[test]
fn a_response_touching_a_protected_file_is_not_applied_and_the_refusal_is_reported() {
    let project = Project::rust_demo();
    let llm = ScriptedLlm::start();
    llm.reply_text(format!(
        "{}{}",
        replace("src/main.rs", &greeting_main()),
        replace("build.sh", "#!/bin/sh\nexit 0\n")
    ));
    llm.reply_text(replace("src/main.rs", &greeting_main()));

    let output = project.run(&llm, &[]);

    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(project.read("build.sh"), BUILD_SH);
    assert!(
        !project
            .log_names()
            .contains(&"initial-query-build.txt".to_string())
    );
    insta::assert_snapshot!("repair_after_refusal", project.log("repair-query-1.txt"));
}

#[test]
fn hostile_paths_are_refused_whole_responses_at_a_time() {
    let hostile = [
        ("../outside.rs", "the path climbs out with `..`"),
        ("/etc/passwd", "the path is absolute"),
        (".git/config", "the path is inside `.git/`"),
        ("logs/fake.txt", "the path is protected (rule `/logs/`)"),
        ("target/demo", "the path is protected (rule `/target/`)"),
        (
            "secrets.env",
            "the path is protected (rule `secrets.env in .gitignore`)",
        ),
        (
            "gemini-key.txt",
            "the path is protected (rule `/gemini-key.txt`)",
        ),
        ("Cargo.lock", "the path is protected (rule `/Cargo.lock`)"),
    ];
    for (path, reason) in hostile {
        let project = Project::rust_demo();
        let llm = ScriptedLlm::start();
        llm.reply_text(format!(
            "{}{}",
            replace("src/main.rs", "fn main() { not_applied() }\n"),
            replace(path, "pwned\n")
        ));
        llm.reply_text(replace("src/main.rs", &greeting_main()));

        let output = project.run(&llm, &[]);

        assert!(output.status.success(), "{path}: {}", stderr(&output));
        let repair = project.log("repair-query-1.txt");
        assert!(
            repair.contains(&format!("Reason: refused `{path}`: {reason}")),
            "{path}: {repair}"
        );
        assert!(
            !repair.contains("not_applied"),
            "nothing of the refused response was applied"
        );
        assert!(!project.path().parent().unwrap().join("outside.rs").exists());
    }
}

#[test]
fn malformed_answers_become_repair_queries_that_say_what_was_wrong() {
    let cases = [
        (
            "I believe the code is already correct.",
            "the response holds no `^^^path` … `^^^end` blocks",
        ),
        ("^^^src/main.rs\nfn main() {}\n", "has no `^^^end`"),
        (
            "^^^src/main.rs\nfn main() {}\n^^^end\n^^^src/main.rs\nfn main() {}\n^^^end\n",
            "two blocks for `src/main.rs`",
        ),
    ];
    for (answer, reason) in cases {
        let project = Project::rust_demo();
        let llm = ScriptedLlm::start();
        llm.reply_text(answer);
        llm.reply_text(replace("src/main.rs", &greeting_main()));

        let output = project.run(&llm, &[]);

        assert!(output.status.success(), "{}", stderr(&output));
        assert!(
            project.log("repair-query-1.txt").contains(reason),
            "{reason}"
        );
        assert_eq!(project.read("src/main.rs"), greeting_main());
    }
}

/// A story name, a way to break the project, and the message that must explain it.
type Breakage = (&'static str, fn(&Project), &'static str);

#[test]
fn missing_or_unusable_inputs_stop_before_any_query() {
    let cases: [Breakage; 11] = [
        (
            "missing query",
            |p| fs::remove_file(p.path().join("query.txt")).unwrap(),
            "query.txt is missing",
        ),
        (
            "empty query",
            |p| p.write("query.txt", "  \n"),
            "query.txt is empty",
        ),
        (
            "missing rollup",
            |p| fs::remove_file(p.path().join("codeRollup.txt")).unwrap(),
            "codeRollup.txt is missing",
        ),
        (
            "empty rollup",
            |p| p.write("codeRollup.txt", ""),
            "codeRollup.txt is empty",
        ),
        (
            "empty key",
            |p| p.write("gemini-key.txt", "\n"),
            "gemini-key.txt is empty",
        ),
        (
            "empty build",
            |p| p.write_executable("build.sh", ""),
            "build.sh is empty",
        ),
        (
            "unreadable query",
            |p| {
                fs::remove_file(p.path().join("query.txt")).unwrap();
                fs::create_dir(p.path().join("query.txt")).unwrap();
            },
            "cannot read query.txt",
        ),
        (
            "missing key",
            |p| fs::remove_file(p.path().join("gemini-key.txt")).unwrap(),
            "gemini-key.txt is missing",
        ),
        (
            "missing build",
            |p| fs::remove_file(p.path().join("build.sh")).unwrap(),
            "build.sh is missing",
        ),
        (
            "not executable",
            |p| {
                fs::set_permissions(p.path().join("build.sh"), fs::Permissions::from_mode(0o644))
                    .unwrap()
            },
            "build.sh is not executable",
        ),
        (
            "invalid utf-8",
            |p| fs::write(p.path().join("query.txt"), b"fix \xff\xfe it").unwrap(),
            "query.txt is not UTF-8 text",
        ),
    ];
    for (story, break_project, message) in cases {
        let project = Project::rust_demo();
        break_project(&project);
        let llm = ScriptedLlm::start();

        let output = project.run(&llm, &[]);

        assert_eq!(output.status.code(), Some(2), "{story}");
        let err = stderr(&output);
        assert!(
            err.starts_with("code-commit: error: ") && err.contains(message),
            "{story}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{story}: one clear line");
        assert!(llm.requests().is_empty(), "{story}: no query sent");
        assert!(!project.exists("logs"), "{story}: nothing logged");
    }
}

#[test]
fn a_rejected_key_stops_the_run_with_the_error_logged() {
    let project = Project::rust_demo();
    let llm = ScriptedLlm::start();
    let body = r#"{"error": {"code": 401, "message": "API key not valid. Please pass a valid API key.", "status": "UNAUTHENTICATED"}}"#;
    llm.reply_raw(401, &[("content-type", "application/json")], body);

    let output = project.run(&llm, &[("CODE_COMMIT_LLM_RETRIES", "3")]);

    assert_eq!(output.status.code(), Some(3));
    let err = stderr(&output);
    assert!(
        err.starts_with(
            "code-commit: error: the initial query failed: the LLM provider rejected the API key (HTTP 401)"
        ),
        "{err}"
    );
    assert_eq!(llm.requests().len(), 1, "401 is not retried");
    let text = project.log("initial-query-response.txt");
    assert!(text.starts_with("ERROR\n"), "{text}");
    assert_eq!(project.log("initial-query-response.json"), body);
    assert_eq!(project.read("src/main.rs"), WORKING_MAIN);
}

#[test]
fn rate_limits_and_server_errors_are_retried_before_the_answer_is_used() {
    let project = Project::rust_demo();
    let llm = ScriptedLlm::start();
    llm.reply_raw(
        429,
        &[("content-type", "application/json"), ("retry-after", "0")],
        crate::support::scripted_llm::llm_fixture(
            "gemini/error_429_resource_exhausted_minimal.json",
        ),
    );
    llm.reply_raw(
        500,
        &[("content-type", "application/json")],
        r#"{"error":{"code":500}}"#,
    );
    llm.reply_text(replace("src/main.rs", &greeting_main()));

    let output = project.run(&llm, &[("CODE_COMMIT_LLM_RETRIES", "2")]);

    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(llm.requests().len(), 3);
    assert_eq!(project.read("src/main.rs"), greeting_main());
}

#[test]
fn an_html_page_or_empty_answer_is_an_llm_error_with_logs() {
    let html = Reply::raw(
        200,
        &[("content-type", "text/html")],
        "<html><body>Bad gateway</body></html>",
    );
    let empty = Reply::text("");
    for (reply, message) in [
        (html, "not what its API returns"),
        (empty, "returned no text"),
    ] {
        let project = Project::rust_demo();
        let llm = ScriptedLlm::start();
        llm.reply(reply);

        let output = project.run(&llm, &[]);

        assert_eq!(output.status.code(), Some(3));
        assert!(stderr(&output).contains(message), "{}", stderr(&output));
        assert!(
            project
                .log("initial-query-response.txt")
                .starts_with("ERROR\n")
        );
        assert!(
            project
                .log_names()
                .contains(&"initial-query-response.json".to_string())
        );
    }
}

#[test]
fn an_llm_that_never_answers_times_out_with_one_clear_line() {
    let project = Project::rust_demo();
    let llm = ScriptedLlm::start();
    llm.reply_after(
        Duration::from_secs(10),
        Reply::text(replace("src/main.rs", &greeting_main())),
    );

    let output = project.run(&llm, &[("CODE_COMMIT_LLM_TIMEOUT_SECS", "1")]);

    assert_eq!(output.status.code(), Some(3));
    let err = stderr(&output);
    assert!(err.contains("did not answer within"), "{err}");
    assert_eq!(err.lines().count(), 1);
    assert!(
        project
            .log("initial-query-response.txt")
            .starts_with("ERROR\n")
    );
    assert_eq!(project.read("src/main.rs"), WORKING_MAIN);
    // The scripted reply was taken (and timed out), so nothing is left unused.
}

#[test]
fn a_hanging_build_is_killed_and_reported_to_the_repair_query() {
    let project = Project::rust_demo();
    project.write_executable(
        "build.sh",
        &format!(
            "#!/bin/sh\nif grep -q HANG src/main.rs; then sleep 600; fi\n{}",
            &BUILD_SH[10..]
        ),
    );
    let llm = ScriptedLlm::start();
    llm.reply_text(replace("src/main.rs", "// HANG\nfn main() {}\n"));
    llm.reply_text(replace("src/main.rs", &greeting_main()));

    let output = project.run(&llm, &[("CODE_COMMIT_BUILD_TIMEOUT_SECS", "1")]);

    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        project
            .log("repair-query-1.txt")
            .contains("[code-commit: build.sh was killed after its timeout of 1 s]")
    );
}

#[test]
fn a_build_that_floods_its_output_is_capped_in_the_repair_query() {
    let project = Project::rust_demo();
    project.write_executable(
        "build.sh",
        "#!/bin/sh\nif grep -q FLOOD src/main.rs; then yes 'error: flood' | head -c 50000000; exit 1; fi\nexit 0\n",
    );
    let llm = ScriptedLlm::start();
    llm.reply_text(replace("src/main.rs", "// FLOOD\nfn main() {}\n"));
    llm.reply_text(replace("src/main.rs", &greeting_main()));

    let output = project.run(&llm, &[]);

    assert!(output.status.success(), "{}", stderr(&output));
    let repair = project.log("repair-query-1.txt");
    assert!(
        repair.len() < 2 * 1024 * 1024,
        "repair query is {} bytes",
        repair.len()
    );
    assert!(repair.contains("bytes omitted"));
}

#[test]
fn the_api_key_never_reaches_a_log_file_or_the_url() {
    let project = Project::rust_demo();
    let llm = ScriptedLlm::start();
    // Even a model that echoes the key back does not get it into the logs.
    llm.reply_text(format!(
        "Using key {KEY}.\n{}",
        replace("src/main.rs", &greeting_main())
    ));

    let output = project.run(&llm, &[]);

    assert!(output.status.success(), "{}", stderr(&output));
    for name in project.log_names() {
        assert!(!project.log(&name).contains(KEY), "{name} holds the key");
    }
    assert!(
        project
            .log("initial-query-response.txt")
            .contains("Using key [REDACTED].")
    );
    assert!(!llm.requests()[0].path.contains(KEY));
}
