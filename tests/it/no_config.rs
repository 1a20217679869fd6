//! `autofix fix` on repositories without `.autofix.toml`, with the real toolchains in the
//! sandbox: the checks are found in the repository's manifests, set up (a virtual environment
//! and an install from the package index for Python), and they prove a right fix and refuse a
//! wrong one. The artifacts say which commands were found and why.

use crate::support::fix_cli::Fix;
use crate::support::posted::stable;
use crate::support::repo::Repo;
use crate::support::scripted_llm::ScriptedLlm;
use serde_json::{Value, json};

/// A project with one bug, its fix, a wrong fix, and the test that shows the bug.
struct Project {
    files: Vec<(&'static str, &'static str)>,
    /// The file both fixes edit.
    source: &'static str,
    buggy: &'static str,
    fixed: &'static str,
    /// An edit that does not fix the bug (and breaks a test that passes on the base).
    wrong: &'static str,
    /// The reproduction the model writes: a new test file.
    test_path: &'static str,
    test_body: &'static str,
    /// The test's name as the runner reports it.
    test_name: &'static str,
    /// Each detected command as `stage: argv` (joined by spaces), in order.
    detected: Vec<&'static str>,
    /// A word each detected command's why holds, in the same order.
    whys: Vec<&'static str>,
}

fn search_replace(path: &str, search: &str, replace: &str) -> String {
    format!("{path}\n```\n<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n```\n")
}

fn issue() -> Value {
    json!({"number": 12, "title": "clamp ignores its upper bound",
           "body": "`clamp(5, 0, 3)` gives 5; it should give 3.", "labels": []})
}

/// A model that triages and plans the fix of `source`.
fn planning(source: &str) -> ScriptedLlm {
    let llm = ScriptedLlm::start();
    llm.reply_text_for_stage(
        "triage",
        json!({"actionable": true, "classification": "fix", "risk": "LOW",
               "affected_files": [source], "reason": "clamp ignores its bounds"})
        .to_string(),
    );
    llm.reply_text_for_stage(
        "plan",
        json!({"plan_steps": ["make clamp respect both bounds"],
               "file_changes": [{"path": source, "operation": "MODIFY"}],
               "commit_summary": "make clamp respect its bounds", "scope": "calc"})
        .to_string(),
    );
    llm
}

/// [`planning`] the fix of `project.source`, then writing its reproduction.
fn model(project: &Project) -> ScriptedLlm {
    let llm = planning(project.source);
    llm.reply_text_for_stage(
        "reproduce",
        search_replace(project.test_path, "", project.test_body),
    );
    llm
}

/// The right fix of `project`, and the review that accepts it.
fn fixes_and_accepts(llm: &ScriptedLlm, project: &Project) {
    llm.reply_text_for_stage(
        "edit",
        search_replace(project.source, project.buggy, project.fixed),
    );
    llm.reply_text_for_stage(
        "audit",
        json!({"decision": "accepted", "reasons": ["fixes the bug"], "must_fixes": [],
               "nice_to_haves": []})
        .to_string(),
    );
}

fn detected(result: &Value) -> Vec<String> {
    result["detected"]
        .as_array()
        .unwrap_or_else(|| panic!("RESULT.json names what was detected: {result}"))
        .iter()
        .map(|command| {
            let run: Vec<&str> = command["run"]
                .as_array()
                .unwrap()
                .iter()
                .map(|word| word.as_str().unwrap())
                .collect();
            format!("{}: {}", command["stage"].as_str().unwrap(), run.join(" "))
        })
        .collect()
}

/// The right fix: committed with its reproduction, proven by the detected checks, the tree
/// left clean (what setup made is ignored, never committed).
fn a_right_fix_is_proven_by_the_checks_found_in_the_repository(project: Project) {
    let repo = Repo::with(&project.files);
    let llm = model(&project);
    fixes_and_accepts(&llm, &project);

    let fix = Fix::run(repo.path(), &llm, &issue());

    let result = fix.result();
    assert_eq!(
        fix.output.status.code(),
        Some(0),
        "{result}\n{}",
        fix.run_log()
    );
    assert_eq!(detected(&result), project.detected, "{result}");
    for (command, word) in result["detected"]
        .as_array()
        .unwrap()
        .iter()
        .zip(&project.whys)
    {
        let why = command["why"].as_str().unwrap();
        assert!(why.contains(word), "why {why:?} names {word:?}");
    }
    assert_eq!(result["validated"], true);
    let reproduction = &result["reproduction"];
    assert_eq!(
        reproduction["base"],
        "failed",
        "{result}\n{}",
        fix.run_log()
    );
    assert_eq!(reproduction["change"], "passed", "{result}");
    let tests = reproduction["tests"].to_string();
    assert!(tests.contains(project.test_name), "{tests}");
    let committed = repo.git(&["show", "--name-only", "--format=", "HEAD"]);
    let mut expected = [project.source, project.test_path];
    expected.sort();
    assert_eq!(
        committed.trim(),
        expected.join("\n"),
        "the fix and its test only"
    );
    assert_eq!(repo.status(), "", "what setup made never shows as a change");

    let log = fix.run_log();
    assert!(
        log.contains("checks: the repository configures no [[validate]]"),
        "{log}"
    );
    for line in &project.detected {
        assert!(log.contains(&format!("detected {line}")), "{line}\n{log}");
    }
    let stderr = String::from_utf8_lossy(&fix.output.stderr);
    let listed = stderr
        .find(&format!("detected {}", project.detected[0]))
        .unwrap_or_else(|| panic!("autofix fix lists what it found: {stderr}"));
    let setup = stderr.find("setup …").expect("the setup stage starts");
    assert!(listed < setup, "listed before the setup stage: {stderr}");
    llm.assert_done();
}

/// A wrong fix, repaired wrongly three times: refused by the detected checks, the
/// repository as it was.
fn a_wrong_fix_fails_the_checks_found_in_the_repository(project: Project) {
    let repo = Repo::with(&project.files);
    let baseline = repo.head();
    let llm = model(&project);
    let wrong = search_replace(project.source, project.buggy, project.wrong);
    llm.reply_text_for_stage("edit", wrong.clone());
    for _ in 0..3 {
        llm.reply_text_for_stage("repair", wrong.clone());
    }

    let fix = Fix::run(repo.path(), &llm, &issue());

    let result = fix.failed_result("VALIDATION_FAILED");
    assert_eq!(detected(&result), project.detected);
    assert_eq!(result["committed"], false);
    repo.assert_untouched(&baseline);
    llm.assert_done();
}

fn python() -> Project {
    Project {
        files: vec![
            (
                "pyproject.toml",
                "[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n\n\
                 [project]\nname = \"calc\"\nversion = \"0.1.0\"\ndependencies = [\"six>=1.16\"]\n\n\
                 [project.optional-dependencies]\ntest = [\"pytest>=7\"]\n\n\
                 [tool.setuptools]\npy-modules = [\"calc\"]\n\n\
                 [tool.pytest.ini_options]\ntestpaths = [\"tests\"]\naddopts = \"-p no:cacheprovider\"\n",
            ),
            (
                "calc.py",
                "import six\n\n\ndef clamp(value, low, high):\n    return value\n\n\ndef label(value):\n    return six.text_type(value)\n",
            ),
            (
                "tests/test_calc.py",
                "from calc import clamp, label\n\n\ndef test_clamp_keeps_values_inside():\n    assert clamp(2, 0, 3) == 2\n\n\ndef test_label():\n    assert label(2) == \"2\"\n",
            ),
            (".gitignore", "__pycache__/\n*.egg-info/\n"),
        ],
        source: "calc.py",
        buggy: "    return value\n",
        fixed: "    return max(low, min(value, high))\n",
        wrong: "    return low\n",
        test_path: "tests/test_upper.py",
        test_body: "from calc import clamp\n\n\ndef test_clamp_keeps_values_under_the_upper_bound():\n    assert clamp(5, 0, 3) == 3\n",
        test_name: "test_clamp_keeps_values_under_the_upper_bound",
        detected: vec![
            "setup: python3 -m venv .venv",
            "setup: .venv/bin/python -m pip install -e .[test]",
            "validate: .venv/bin/python -m pytest",
        ],
        whys: vec!["pyproject.toml", "extra `test`", "[tool.pytest]"],
    }
}

const CARGO_TOML: &str = "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n";
const CARGO_LOCK: &str = "# This file is automatically @generated by Cargo.\n# It is not intended for manual editing.\nversion = 4\n\n[[package]]\nname = \"calc\"\nversion = \"0.1.0\"\n";

fn rust() -> Project {
    Project {
        files: vec![
            ("Cargo.toml", CARGO_TOML),
            ("Cargo.lock", CARGO_LOCK),
            (
                "src/lib.rs",
                "pub fn clamp(value: i64, low: i64, high: i64) -> i64 {\n    let _ = (low, high);\n    value\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn keeps_values_inside() {\n        assert_eq!(super::clamp(2, 0, 3), 2);\n    }\n}\n",
            ),
        ],
        source: "src/lib.rs",
        buggy: "    let _ = (low, high);\n    value\n",
        fixed: "    value.clamp(low, high)\n",
        wrong: "    let _ = (value, high);\n    low\n",
        test_path: "tests/upper_bound.rs",
        test_body: "#[test]\nfn clamp_keeps_values_under_the_upper_bound() {\n    assert_eq!(calc::clamp(5, 0, 3), 3);\n}\n",
        test_name: "clamp_keeps_values_under_the_upper_bound",
        detected: vec![
            "setup: cargo fetch --locked",
            "validate: cargo build --all-targets --locked",
            "validate: cargo test --locked",
        ],
        whys: vec!["Cargo.lock", "Cargo.toml", "Cargo.toml"],
    }
}

fn go() -> Project {
    Project {
        files: vec![
            ("go.mod", "module example.com/calc\n\ngo 1.19\n"),
            (
                "calc.go",
                "package calc\n\n// Clamp keeps value between low and high.\nfunc Clamp(value, low, high int) int {\n\t_, _ = low, high\n\treturn value\n}\n",
            ),
            (
                "calc_test.go",
                "package calc\n\nimport \"testing\"\n\nfunc TestClampKeepsValuesInside(t *testing.T) {\n\tif got := Clamp(2, 0, 3); got != 2 {\n\t\tt.Fatalf(\"Clamp(2, 0, 3) = %d, want 2\", got)\n\t}\n}\n",
            ),
        ],
        source: "calc.go",
        buggy: "\t_, _ = low, high\n\treturn value\n",
        fixed: "\tif value < low {\n\t\treturn low\n\t}\n\tif value > high {\n\t\treturn high\n\t}\n\treturn value\n",
        wrong: "\t_, _ = value, high\n\treturn low\n",
        test_path: "upper_test.go",
        test_body: "package calc\n\nimport \"testing\"\n\nfunc TestClampKeepsValuesUnderTheUpperBound(t *testing.T) {\n\tif got := Clamp(5, 0, 3); got != 3 {\n\t\tt.Fatalf(\"Clamp(5, 0, 3) = %d, want 3\", got)\n\t}\n}\n",
        test_name: "TestClampKeepsValuesUnderTheUpperBound",
        detected: vec![
            "setup: go mod download",
            "validate: go build ./...",
            "validate: go vet ./...",
            "validate: go test ./...",
        ],
        whys: vec!["go.mod", "go.mod", "go.mod", "go.mod"],
    }
}

fn node() -> Project {
    Project {
        files: vec![
            (
                "package.json",
                "{\n  \"name\": \"calc\",\n  \"version\": \"1.0.0\",\n  \"scripts\": {\n    \"test\": \"node --test\"\n  }\n}\n",
            ),
            (
                "package-lock.json",
                "{\n  \"name\": \"calc\",\n  \"version\": \"1.0.0\",\n  \"lockfileVersion\": 3,\n  \"requires\": true,\n  \"packages\": {\n    \"\": {\n      \"name\": \"calc\",\n      \"version\": \"1.0.0\"\n    }\n  }\n}\n",
            ),
            (
                "calc.js",
                "function clamp(value, low, high) {\n  void low, high;\n  return value;\n}\n\nmodule.exports = { clamp };\n",
            ),
            (
                "test/calc.test.js",
                "const test = require('node:test');\nconst assert = require('node:assert');\nconst { clamp } = require('../calc');\n\ntest('clamp keeps values inside', () => {\n  assert.strictEqual(clamp(2, 0, 3), 2);\n});\n",
            ),
        ],
        source: "calc.js",
        buggy: "  void low, high;\n  return value;\n",
        fixed: "  return Math.max(low, Math.min(value, high));\n",
        wrong: "  void value, high;\n  return low;\n",
        test_path: "test/upper.test.js",
        test_body: "const test = require('node:test');\nconst assert = require('node:assert');\nconst { clamp } = require('../calc');\n\ntest('clamp keeps values under the upper bound', () => {\n  assert.strictEqual(clamp(5, 0, 3), 3);\n});\n",
        test_name: "clamp keeps values under the upper bound",
        detected: vec!["setup: npm ci", "validate: npm test"],
        whys: vec!["package-lock.json", "scripts.test"],
    }
}

#[test]
fn a_python_project_gets_a_virtual_environment_its_test_extra_from_the_index_and_pytest() {
    a_right_fix_is_proven_by_the_checks_found_in_the_repository(python());
}

#[test]
fn a_wrong_fix_to_a_python_project_fails_its_detected_pytest() {
    a_wrong_fix_fails_the_checks_found_in_the_repository(python());
}

#[test]
fn a_rust_crate_is_built_and_tested_with_its_lockfile() {
    a_right_fix_is_proven_by_the_checks_found_in_the_repository(rust());
}

#[test]
fn a_wrong_fix_to_a_rust_crate_fails_its_detected_cargo_test() {
    a_wrong_fix_fails_the_checks_found_in_the_repository(rust());
}

#[test]
fn a_go_module_is_built_vetted_and_tested() {
    a_right_fix_is_proven_by_the_checks_found_in_the_repository(go());
}

#[test]
fn a_wrong_fix_to_a_go_module_fails_its_detected_go_test() {
    a_wrong_fix_fails_the_checks_found_in_the_repository(go());
}

#[test]
fn a_node_project_installs_from_its_lockfile_and_runs_its_test_script() {
    a_right_fix_is_proven_by_the_checks_found_in_the_repository(node());
}

#[test]
fn a_wrong_fix_to_a_node_project_fails_its_detected_npm_test() {
    a_wrong_fix_fails_the_checks_found_in_the_repository(node());
}

#[test]
fn a_repository_that_turns_finding_off_is_left_unchecked_and_says_so() {
    let mut project = python();
    project
        .files
        .push((".autofix.toml", "[commands]\ndetect = false\n"));
    let repo = Repo::with(&project.files);
    let llm = planning(project.source);
    fixes_and_accepts(&llm, &project);

    let fix = Fix::run(repo.path(), &llm, &issue());

    let result = fix.result();
    assert_eq!(fix.output.status.code(), Some(0), "{result}");
    assert_eq!(result["detected"], json!([]), "nothing was looked for");
    assert_eq!(result["validated"], false);
    assert!(
        fix.run_log()
            .contains("configures no [[validate]] commands and none were found in it"),
        "{}",
        fix.run_log()
    );
}

#[test]
fn a_required_reproduction_with_no_check_to_run_fails_before_the_model_is_asked() {
    let repo = Repo::with(&[
        ("notes.txt", "clamp should respect its bounds\n"),
        (".autofix.toml", "[reproduce]\nmode = \"required\"\n"),
    ]);
    let baseline = repo.head();
    let llm = ScriptedLlm::start();

    let fix = Fix::run(repo.path(), &llm, &issue());

    assert_eq!(fix.output.status.code(), Some(28), "{}", fix.run_log());
    let result = fix.result();
    assert_eq!(result["failure_code"], "REPRODUCTION_FAILED");
    assert_eq!(result["failure_stage"], "preflight");
    // The repository configures no [[validate]] commands and none were found in it.
    insta::assert_snapshot!(
        "no_check_to_reproduce_with_reason",
        stable(result["reason"].as_str().unwrap())
    );
    assert!(llm.requests().is_empty(), "the model is never asked");
    repo.assert_untouched(&baseline);
}

#[test]
fn a_configured_setup_is_kept_and_only_the_checks_are_found() {
    let mut project = rust();
    project.files.push((
        ".autofix.toml",
        "[[setup]]\nname = \"fetch offline\"\nrun = [\"cargo\", \"fetch\"]\n",
    ));
    let repo = Repo::with(&project.files);
    let llm = planning(project.source);
    fixes_and_accepts(&llm, &project);

    let fix = Fix::run(repo.path(), &llm, &issue());

    let result = fix.result();
    assert_eq!(fix.output.status.code(), Some(0), "{result}");
    assert_eq!(
        result["networked_commands"],
        json!(["fetch offline (`cargo fetch`)"]),
        "the configured setup ran, not the found one"
    );
    assert_eq!(result["validated"], true);
    assert_eq!(
        detected(&result),
        [
            "validate: cargo build --all-targets --locked",
            "validate: cargo test --locked"
        ],
        "what is reported as found is what ran"
    );
    // The setup found is left out, as the repository configures its own [[setup]].
    insta::assert_snapshot!(
        "found_setup_left_out",
        stable(&serde_json::to_string_pretty(&result["detected_left_out"]).unwrap())
    );
}
