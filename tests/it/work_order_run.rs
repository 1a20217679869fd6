//! `autofix run` end to end: real git repositories, real acceptance commands (`cargo test`,
//! `pytest`), a scripted OpenAI-compatible LLM, and the artifact tree the harness leaves behind.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::repo::{BUGGY_LIB, BUGGY_PY, FIXED_LIB, PY_TEST, Repo, sha};
use crate::support::scripted_llm::{Reply, ScriptedLlm};
use serde_json::{Value, json};

fn writes(path: &str, base: &str, content: &str) -> String {
    json!({"summary": "fix", "writes": [{"path": path, "base_sha256": sha(base), "content": content}]})
        .to_string()
}

fn order(allowed: &[&str], context: &[&str], acceptance: &[&str]) -> Value {
    json!({
        "id": "wo-7",
        "title": "Fix the arithmetic",
        "intent": "Make the tests pass without changing them.",
        "allowed_files": allowed,
        "forbidden": ["do not edit the tests"],
        "acceptance_commands": acceptance,
        "context_files": context,
    })
}

/// One `autofix run` of `work_order` on `repo` against `llm`.
struct Run {
    output: Output,
    out: tempfile::TempDir,
}

impl Run {
    fn start(repo: &Repo, llm: &ScriptedLlm, work_order: &Value, extra: &[&str]) -> Run {
        let out = tempfile::tempdir().unwrap();
        let order_path = out.path().join("work_order.json");
        fs::write(&order_path, work_order.to_string()).unwrap();
        Run::start_with_file(repo.path(), llm, &order_path, out, extra)
    }

    fn start_with_file(
        repo: &Path,
        llm: &ScriptedLlm,
        order_path: &Path,
        out: tempfile::TempDir,
        extra: &[&str],
    ) -> Run {
        let output = Command::new(env!("CARGO_BIN_EXE_autofix"))
            .arg("run")
            .arg("--repo")
            .arg(repo)
            .arg("--work-order")
            .arg(order_path)
            .arg("--out")
            .arg(out.path().join("artifacts"))
            .args(["--llm-model", "gpt-test"])
            .args(extra)
            .env("AUTOFIX__LLM__PROVIDER", "openai")
            .env("AUTOFIX__LLM__BASE_URL", llm.openai_base_url())
            .env("AUTOFIX__LLM__API_KEY", "sk-test")
            .env("AUTOFIX__LLM__MAX_RETRIES", "0")
            .output()
            .unwrap();
        Run { output, out }
    }

    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.output.stdout).into_owned()
    }

    fn run_dir(&self) -> PathBuf {
        let artifacts = self.out.path().join("artifacts");
        let entries: Vec<PathBuf> = fs::read_dir(&artifacts)
            .unwrap_or_else(|err| panic!("no artifacts: {err}; stdout {}", self.stdout()))
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(entries.len(), 1, "{entries:?}");
        entries.into_iter().next().unwrap()
    }

    fn summary(&self) -> Value {
        serde_json::from_str(&fs::read_to_string(self.run_dir().join("run_summary.json")).unwrap())
            .unwrap()
    }

    fn artifact(&self, path: &str) -> String {
        fs::read_to_string(self.run_dir().join(path))
            .unwrap_or_else(|err| panic!("artifact {path}: {err}"))
    }

    fn code(&self) -> Option<i32> {
        self.output.status.code()
    }
}

#[test]
fn a_rust_crate_is_fixed_on_the_first_attempt_and_left_uncommitted() {
    let repo = Repo::rust_crate(&[]);
    let baseline = repo.head();
    let llm = ScriptedLlm::start();
    llm.reply_text(writes("src/lib.rs", BUGGY_LIB, FIXED_LIB));

    let run = Run::start(
        &repo,
        &llm,
        &order(
            &["src/lib.rs"],
            &["src/lib.rs"],
            &["cargo test --quiet --offline"],
        ),
        &[],
    );

    assert_eq!(run.code(), Some(0), "{}", run.stdout());
    assert!(run.stdout().starts_with("PASS after 1 attempt(s)\n"));
    let summary = run.summary();
    assert_eq!(summary["verdict"], "PASS");
    assert_eq!(summary["baseline_commit"], baseline.as_str());
    assert_eq!(
        summary["attempts"][0]["touched_files"],
        json!(["src/lib.rs"])
    );
    assert!(summary["repo_tree_hash_after"].as_str().unwrap().len() == 64);
    assert_eq!(repo.read("src/lib.rs"), FIXED_LIB);
    assert_eq!(repo.head(), baseline, "PASS leaves the change uncommitted");
    assert_eq!(repo.status(), " M src/lib.rs\n");
    for file in [
        "prompt.txt",
        "llm_response.txt",
        "proposed_writes.json",
        "write_result.json",
        "acceptance_result.json",
        "logs/acceptance-1.log",
    ] {
        run.artifact(&format!("attempt_1/{file}"));
    }
    let prompt = llm.requests()[0].prompt().unwrap();
    assert!(
        prompt.contains(&format!("- src/lib.rs: {}", sha(BUGGY_LIB))),
        "{prompt}"
    );
    assert!(prompt.contains("a - b"), "context files are shown");
    assert_eq!(llm.requests()[0].header("x-autofix-stage"), Some("edit"));
}

#[test]
fn a_python_project_passes_after_a_failed_attempt_is_rolled_back_and_explained() {
    let repo = Repo::python_project(&[]);
    let llm = ScriptedLlm::start();
    let half_fix = "def clamp(value, low, high):\n    return min(value, high)\n";
    let fix = "def clamp(value, low, high):\n    return max(low, min(value, high))\n";
    llm.reply_text(writes("calc.py", BUGGY_PY, half_fix));
    llm.reply_text(writes("calc.py", BUGGY_PY, fix));

    let run = Run::start(
        &repo,
        &llm,
        &order(
            &["calc.py"],
            &["calc.py"],
            &["python3 -m pytest -q -p no:cacheprovider"],
        ),
        &[],
    );

    assert_eq!(run.code(), Some(0), "{}", run.stdout());
    let summary = run.summary();
    assert_eq!(summary["attempts"].as_array().unwrap().len(), 2);
    let brief: Value = serde_json::from_str(&run.artifact("attempt_1/failure_brief.json")).unwrap();
    assert_eq!(brief["stage"], "acceptance_failed");
    assert_eq!(brief["code"], "VALIDATION_FAILED");
    let second_prompt = llm.requests()[1].prompt().unwrap();
    assert!(
        second_prompt.contains("stage: acceptance_failed (VALIDATION_FAILED)"),
        "{second_prompt}"
    );
    assert!(
        second_prompt.contains("assert"),
        "the failing assertion reaches the model"
    );
    assert!(
        second_prompt.contains(&format!("- calc.py: {}", sha(BUGGY_PY))),
        "the second attempt starts again from the original file"
    );
    assert_eq!(llm.requests()[1].header("x-autofix-stage"), Some("repair"));
    assert_eq!(repo.read("calc.py"), fix);
    assert_eq!(
        crate::support::stage_lines(&run.output.stderr, "autofix run"),
        [
            "preflight started",
            "preflight done",
            "edit started",
            "edit done",
            "write started",
            "write done",
            "verify started",
            "verify done",
            "acceptance started",
            "acceptance failed",
            "repair started",
            "repair done",
            "write started",
            "write done",
            "verify started",
            "verify done",
            "acceptance started",
            "acceptance done",
        ],
        "one line as each stage starts and one as it ends, on standard error"
    );
    let stderr = String::from_utf8_lossy(&run.output.stderr);
    assert!(
        stderr.contains("autofix run: acceptance FAILED in ")
            && stderr.contains("VALIDATION_FAILED `python3 -m pytest"),
        "a failed stage names its code and command: {stderr}"
    );
}

#[test]
fn the_right_attempt_is_judged_by_its_own_code_not_the_bytecode_of_a_wrong_one() {
    // Both attempts are the same size, and the acceptance command gives calc.py the same
    // modification time each run: bytecode cached from the first attempt would pass for the
    // second one's. The .gitignore keeps `__pycache__`, so rollback leaves it.
    let repo = Repo::python_project(&[]);
    let llm = ScriptedLlm::start();
    let wrong = "def clamp(value, low, high):\n    return min(low, max(value, high))\n";
    let right = "def clamp(value, low, high):\n    return max(low, min(value, high))\n";
    assert_eq!(wrong.len(), right.len());
    llm.reply_text(writes("calc.py", BUGGY_PY, wrong));
    llm.reply_text(writes("calc.py", BUGGY_PY, right));

    let run = Run::start(
        &repo,
        &llm,
        &order(
            &["calc.py"],
            &["calc.py"],
            &[
                "sh -c 'touch -d 2020-01-01T00:00:00 calc.py && python3 -m pytest -q -p no:cacheprovider'",
            ],
        ),
        &[],
    );

    assert_eq!(run.code(), Some(0), "{}", run.stdout());
    assert_eq!(run.summary()["attempts"].as_array().unwrap().len(), 2);
    assert_eq!(repo.read("calc.py"), right);
}

#[test]
fn exhausted_attempts_leave_the_repository_at_its_baseline() {
    let repo = Repo::python_project(&[]);
    let baseline = repo.head();
    let llm = ScriptedLlm::start();
    let wrong = "def clamp(value, low, high):\n    return low\n";
    llm.reply_text(writes("calc.py", BUGGY_PY, wrong));
    llm.reply_text(writes("calc.py", BUGGY_PY, wrong));

    let run = Run::start(
        &repo,
        &llm,
        &order(
            &["calc.py"],
            &[],
            &["python3 -m pytest -q -p no:cacheprovider"],
        ),
        &[],
    );

    assert_eq!(run.code(), Some(11), "VALIDATION_FAILED: {}", run.stdout());
    assert!(run.stdout().starts_with("FAIL VALIDATION_FAILED"));
    assert_eq!(run.summary()["failure_code"], "VALIDATION_FAILED");
    assert_eq!(repo.read("calc.py"), BUGGY_PY);
    assert_eq!(repo.head(), baseline);
    assert_eq!(repo.status(), "");
}

#[test]
fn a_write_outside_the_allowed_files_is_refused_before_anything_is_written() {
    let repo = Repo::python_project(&[]);
    let llm = ScriptedLlm::start();
    let proposal = json!({"summary": "x", "writes": [
        {"path": "calc.py", "base_sha256": sha(BUGGY_PY), "content": "def clamp(v, l, h):\n    return v\n"},
        {"path": "test_calc.py", "base_sha256": sha(PY_TEST), "content": "def test_nothing():\n    pass\n"}
    ]});
    llm.reply_text(proposal.to_string());

    let run = Run::start(
        &repo,
        &llm,
        &order(&["calc.py"], &[], &["python3 -m pytest -q"]),
        &["--max-attempts", "1"],
    );

    assert_eq!(run.summary()["failure_code"], "WRITE_SCOPE_VIOLATION");
    let result: Value = serde_json::from_str(&run.artifact("attempt_1/write_result.json")).unwrap();
    assert_eq!(result["write_ok"], false);
    assert!(
        result["error"]
            .as_str()
            .unwrap()
            .contains("`test_calc.py` outside allowed_files")
    );
    assert_eq!(repo.status(), "");
    assert_eq!(repo.read("calc.py"), BUGGY_PY);
}

#[test]
fn a_stale_base_hash_is_refused_with_nothing_written() {
    let repo = Repo::python_project(&[]);
    let llm = ScriptedLlm::start();
    llm.reply_text(writes("calc.py", "an older calc.py\n", "x = 1\n"));

    let run = Run::start(
        &repo,
        &llm,
        &order(&["calc.py"], &[], &["python3 -m pytest -q"]),
        &["--max-attempts", "1"],
    );

    assert_eq!(run.summary()["failure_code"], "STALE_CONTEXT");
    assert_eq!(run.summary()["failure_stage"], "stale_context");
    assert_eq!(repo.status(), "");
}

#[test]
fn invalid_json_from_the_model_is_an_invalid_output_with_or_without_a_fence() {
    for answer in [
        "{\"summary\": \"x\", \"writes\": [",
        "```json\n{\"summary\": 1}\n```",
        "Sure! Here is the fix.",
    ] {
        let repo = Repo::python_project(&[]);
        let llm = ScriptedLlm::start();
        llm.reply_text(answer);

        let run = Run::start(
            &repo,
            &llm,
            &order(&["calc.py"], &[], &["python3 -m pytest -q"]),
            &["--max-attempts", "1"],
        );

        assert_eq!(
            run.summary()["failure_code"],
            "LLM_OUTPUT_INVALID",
            "{answer}"
        );
        assert_eq!(repo.status(), "");
    }
}

#[test]
fn a_dirty_tree_or_a_folder_that_is_not_git_is_refused_before_any_query() {
    let repo = Repo::python_project(&[]);
    repo.write("scratch.txt", "my notes\n");
    let llm = ScriptedLlm::start();

    let run = Run::start(&repo, &llm, &order(&["calc.py"], &[], &["true"]), &[]);

    assert_eq!(run.code(), Some(21), "PREFLIGHT");
    assert_eq!(run.summary()["failure_stage"], "preflight");
    assert!(llm.requests().is_empty());
    assert_eq!(repo.read("scratch.txt"), "my notes\n");
    assert!(run.artifact("preflight_error.txt").contains("scratch.txt"));

    let plain = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let order_path = out.path().join("wo.json");
    fs::write(&order_path, order(&["a.txt"], &[], &["true"]).to_string()).unwrap();
    let run = Run::start_with_file(plain.path(), &llm, &order_path, out, &[]);
    assert_eq!(run.summary()["failure_code"], "PREFLIGHT");
    assert!(llm.requests().is_empty());
}

#[test]
fn a_work_order_with_escaping_paths_is_invalid_input() {
    let repo = Repo::python_project(&[]);
    let llm = ScriptedLlm::start();

    let run = Run::start(&repo, &llm, &order(&["../outside.py"], &[], &["true"]), &[]);

    assert_eq!(run.code(), Some(22), "INVALID_INPUT");
    assert!(
        run.artifact("preflight_error.txt")
            .contains("allowed_files[0] `../outside.py` is refused")
    );
    assert!(llm.requests().is_empty());
}

#[test]
fn a_hanging_acceptance_command_times_out_and_is_rolled_back() {
    let repo = Repo::python_project(&[]);
    let llm = ScriptedLlm::start();
    llm.reply_text(writes("calc.py", BUGGY_PY, "x = 1\n"));

    let run = Run::start(
        &repo,
        &llm,
        &order(&["calc.py"], &[], &["sleep 600"]),
        &["--max-attempts", "1", "--timeout-seconds", "1"],
    );

    assert_eq!(run.summary()["failure_code"], "TIMEOUT");
    assert_eq!(
        run.summary()["attempts"][0]["acceptance"][0]["timed_out"],
        true
    );
    assert_eq!(repo.status(), "");
}

#[test]
fn an_llm_failure_mid_loop_is_an_llm_error_and_changes_nothing() {
    let repo = Repo::python_project(&[]);
    let llm = ScriptedLlm::start();
    llm.reply_text(writes(
        "calc.py",
        BUGGY_PY,
        "def clamp(v, l, h):\n    return v\n",
    ));
    llm.reply(Reply::raw(
        500,
        &[("content-type", "application/json")],
        r#"{"error": {"message": "boom"}}"#,
    ));

    let run = Run::start(
        &repo,
        &llm,
        &order(
            &["calc.py"],
            &[],
            &["python3 -m pytest -q -p no:cacheprovider"],
        ),
        &[],
    );

    assert_eq!(run.summary()["failure_code"], "LLM_ERROR");
    assert_eq!(repo.status(), "");
}

#[test]
fn the_same_inputs_give_the_same_run_id() {
    let repo = Repo::python_project(&[]);
    let work_order = order(&["calc.py"], &[], &["true"]);
    let ids: Vec<String> = (0..2)
        .map(|_| {
            let llm = ScriptedLlm::start();
            llm.reply_text("not json");
            let run = Run::start(&repo, &llm, &work_order, &["--max-attempts", "1"]);
            run.summary()["run_id"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(ids[0], ids[1]);
    assert_eq!(ids[0].len(), 16);
}

#[test]
fn the_repositorys_own_validation_runs_before_the_acceptance_commands() {
    let repo = Repo::with(&[
        ("calc.py", BUGGY_PY),
        ("test_calc.py", PY_TEST),
        (".gitignore", "__pycache__/\n"),
        (
            ".autofix.toml",
            "[[validate]]\nname = \"syntax\"\nrun = [\"python3\", \"-m\", \"py_compile\", \"calc.py\"]\ntimeout_secs = 60\n",
        ),
    ]);
    let llm = ScriptedLlm::start();
    llm.reply_text(writes(
        "calc.py",
        BUGGY_PY,
        "def clamp(value, low, high:\n    return value\n",
    ));

    let run = Run::start(
        &repo,
        &llm,
        &order(&["calc.py"], &[], &["true"]),
        &["--max-attempts", "1"],
    );

    let summary = run.summary();
    assert_eq!(summary["failure_stage"], "verify_failed");
    assert_eq!(
        summary["attempts"][0]["verify"][0]["command"],
        json!(["python3", "-m", "py_compile", "calc.py"])
    );
    assert!(
        run.artifact("attempt_1/logs/syntax.log")
            .contains("SyntaxError")
    );
    assert_eq!(
        summary["attempts"][0]["acceptance"],
        json!([]),
        "acceptance never ran"
    );
    assert_eq!(repo.status(), "");
}

#[test]
fn a_denied_path_is_refused_even_when_the_work_order_allows_it() {
    let repo = Repo::python_project(&[]);
    let llm = ScriptedLlm::start();
    llm.reply_text(writes(".github/workflows/ci.yml", "", "on: push\n"));

    let run = Run::start(
        &repo,
        &llm,
        &order(&[".github/workflows/ci.yml"], &[], &["true"]),
        &["--max-attempts", "1"],
    );

    assert_eq!(run.summary()["failure_code"], "WRITE_SCOPE_VIOLATION");
    assert!(!repo.path().join(".github").exists());
}

#[test]
fn an_acceptance_command_the_repository_denies_is_invalid_input() {
    let repo = Repo::python_project(&[]);
    let llm = ScriptedLlm::start();

    let run = Run::start(
        &repo,
        &llm,
        &order(&["calc.py"], &[], &["curl https://example.com"]),
        &[],
    );

    assert_eq!(run.summary()["failure_code"], "INVALID_INPUT");
    assert!(
        run.artifact("preflight_error.txt")
            .contains("acceptance_commands[0] is not allowed")
    );
    assert!(llm.requests().is_empty());
}

#[test]
fn an_invalid_autofix_toml_stops_the_run_before_any_query() {
    let repo = Repo::with(&[
        ("calc.py", BUGGY_PY),
        (".autofix.toml", "[[validate]]\nname = \"t\"\nrun = []\n"),
    ]);
    let llm = ScriptedLlm::start();

    let run = Run::start(&repo, &llm, &order(&["calc.py"], &[], &["true"]), &[]);

    assert_eq!(run.summary()["failure_code"], "INVALID_INPUT");
    assert!(
        run.artifact("preflight_error.txt")
            .contains("validate[0].run"),
        "{}",
        run.artifact("preflight_error.txt")
    );
    assert!(llm.requests().is_empty());
}

#[test]
fn a_validation_step_that_fails_on_warnings_fails_a_clean_exit_with_warnings() {
    let repo = Repo::with(&[
        ("calc.py", BUGGY_PY),
        (
            ".autofix.toml",
            "[[validate]]\nname = \"lint\"\nrun = [\"python3\", \"-c\", \"print('warning: unused import os')\"]\nfail_on_warnings = true\n",
        ),
    ]);
    let llm = ScriptedLlm::start();
    llm.reply_text(writes("calc.py", BUGGY_PY, "x = 1\n"));

    let run = Run::start(
        &repo,
        &llm,
        &order(&["calc.py"], &[], &["true"]),
        &["--max-attempts", "1"],
    );

    let summary = run.summary();
    assert_eq!(summary["failure_stage"], "verify_failed");
    assert_eq!(summary["attempts"][0]["verify"][0]["exit_code"], 0);
    assert_eq!(summary["attempts"][0]["verify"][0]["passed"], false);
    assert_eq!(repo.status(), "");
}
