//! One story per test runner autofix reads, with the real runner: the repository's suite
//! already fails on the base commit, and a change that breaks a test that passed there is
//! refused — never waved through because "both runs fail".

mod support;

use serde_json::json;
use support::fix_cli::Fix;
use support::repo::Repo;
use support::scripted_llm::ScriptedLlm;

/// A repository for one runner: its files, the validation command, the file the change edits,
/// and the edit that breaks the test that passes on the base.
struct Runner {
    files: Vec<(&'static str, &'static str)>,
    run: &'static str,
    edited: &'static str,
    search: &'static str,
    replace: &'static str,
    /// The broken test, as the runner names it.
    broken: &'static str,
}

fn search_replace(path: &str, search: &str, replace: &str) -> String {
    format!("{path}\n```\n<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n```\n")
}

/// `autofix fix` with no repair allowed: the change that breaks a passing test must end the
/// job `VALIDATION_FAILED`, naming that test, with the repository put back.
fn a_change_that_breaks_a_passing_test_is_refused(runner: Runner) {
    let config = format!(
        "[[validate]]\nname = \"tests\"\nrun = {}\ntimeout_secs = 300\n\n[repair]\nmax_attempts = 0\n",
        runner.run
    );
    let mut files = runner.files.clone();
    files.push((".autofix.toml", &config));
    let repo = Repo::with(&files);
    let baseline = repo.head();
    let llm = ScriptedLlm::start();
    llm.reply_text_for_stage(
        "triage",
        json!({"actionable": true, "classification": "fix", "risk": "LOW",
               "affected_files": [runner.edited], "reason": "double is wrong"})
        .to_string(),
    );
    llm.reply_text_for_stage(
        "plan",
        json!({"plan_steps": ["rewrite double"],
               "file_changes": [{"path": runner.edited, "operation": "MODIFY"}],
               "commit_summary": "rewrite double", "scope": "calc"})
        .to_string(),
    );
    llm.reply_text_for_stage(
        "edit",
        search_replace(runner.edited, runner.search, runner.replace),
    );
    let issue = json!({"number": 5, "title": "double is slow", "body": "Make `double` simpler.", "labels": []});

    let fix = Fix::run(repo.path(), &llm, &issue);

    let result = fix.result();
    assert_eq!(
        result["failure_code"],
        "VALIDATION_FAILED",
        "{result}\n{}",
        fix.run_log()
    );
    let reason = result["reason"].as_str().unwrap();
    assert!(
        reason.contains("fail with this change") && reason.contains(runner.broken),
        "{reason}\n{}",
        fix.run_log()
    );
    let base = fix.json("BASE_REPORT.json");
    assert_eq!(
        base[0]["first"]["passed"], false,
        "the base already fails: {base}"
    );
    repo.assert_untouched(&baseline);
    llm.assert_done();
}

#[test]
fn python_unittest() {
    a_change_that_breaks_a_passing_test_is_refused(Runner {
        files: vec![
            (
                "calc.py",
                "def double(x):\n    return 2 * x\n\n\ndef legacy():\n    return 'old'\n",
            ),
            ("tests/__init__.py", ""),
            (
                "tests/test_calc.py",
                "import unittest\n\nfrom calc import double, legacy\n\n\nclass CalcTest(unittest.TestCase):\n    def test_double(self):\n        self.assertEqual(double(2), 4)\n\n    def test_legacy(self):\n        self.assertEqual(legacy(), 'new')\n",
            ),
        ],
        run: r#"["python3", "-m", "unittest", "discover", "-s", "tests", "-t", "."]"#,
        edited: "calc.py",
        search: "    return 2 * x\n",
        replace: "    return x + 1\n",
        broken: "test_double",
    });
}

#[test]
fn node_test_with_the_tap_reporter() {
    a_change_that_breaks_a_passing_test_is_refused(Runner {
        files: vec![
            (
                "calc.js",
                "exports.double = (x) => 2 * x;\nexports.legacy = () => 'old';\n",
            ),
            (
                "test/calc.test.js",
                "const test = require('node:test');\nconst assert = require('node:assert');\nconst { double, legacy } = require('../calc.js');\n\ntest('double', () => {\n  assert.strictEqual(double(2), 4);\n});\n\ntest('legacy', () => {\n  assert.strictEqual(legacy(), 'new');\n});\n",
            ),
        ],
        run: r#"["node", "--test", "--test-reporter=tap"]"#,
        edited: "calc.js",
        search: "exports.double = (x) => 2 * x;\n",
        replace: "exports.double = (x) => x + 1;\n",
        broken: "double",
    });
}

#[test]
fn perl_prove_verbose() {
    a_change_that_breaks_a_passing_test_is_refused(Runner {
        files: vec![
            (
                "lib/Calc.pm",
                "package Calc;\nsub double { return 2 * $_[0]; }\nsub legacy { return 'old'; }\n1;\n",
            ),
            (
                "t/calc.t",
                "use strict;\nuse warnings;\nuse lib 'lib';\nuse Test::More tests => 2;\nuse Calc;\n\nis(Calc::double(2), 4, 'double');\nis(Calc::legacy(), 'new', 'legacy');\n",
            ),
        ],
        run: r#"["prove", "-v", "t"]"#,
        edited: "lib/Calc.pm",
        search: "sub double { return 2 * $_[0]; }\n",
        replace: "sub double { return $_[0] + 1; }\n",
        broken: "double",
    });
}

#[test]
fn cargo_test() {
    a_change_that_breaks_a_passing_test_is_refused(Runner {
        files: vec![
            ("Cargo.toml", support::repo::CARGO_TOML),
            ("Cargo.lock", support::repo::CARGO_LOCK),
            (".gitignore", "/target\n"),
            (
                "src/lib.rs",
                "pub fn double(x: i32) -> i32 {\n    2 * x\n}\n\npub fn legacy() -> &'static str {\n    \"old\"\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn doubles() {\n        assert_eq!(super::double(2), 4);\n    }\n\n    #[test]\n    fn legacy_format() {\n        assert_eq!(super::legacy(), \"new\");\n    }\n}\n",
            ),
        ],
        run: r#"["cargo", "test", "--quiet", "--offline"]"#,
        edited: "src/lib.rs",
        search: "    2 * x\n",
        replace: "    x + 1\n",
        broken: "tests::doubles",
    });
}

#[test]
fn pytest() {
    a_change_that_breaks_a_passing_test_is_refused(Runner {
        files: vec![
            (
                "calc.py",
                "def double(x):\n    return 2 * x\n\n\ndef legacy():\n    return 'old'\n",
            ),
            (
                "test_calc.py",
                "from calc import double, legacy\n\n\ndef test_double():\n    assert double(2) == 4\n\n\ndef test_legacy():\n    assert legacy() == 'new'\n",
            ),
            (".gitignore", "__pycache__/\n"),
        ],
        run: r#"["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider"]"#,
        edited: "calc.py",
        search: "    return 2 * x\n",
        replace: "    return x + 1\n",
        broken: "test_calc.py::test_double",
    });
}
