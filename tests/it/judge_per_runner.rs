//! One story per test runner autofix reads, with the real runner (Jest and Vitest installed by the
//! repository's `[[setup]]` from npm): the repository's suite
//! already fails on the base commit, and a change that breaks a test that passed there is
//! refused — never waved through because "both runs fail".

use crate::support::fix_cli::Fix;
use crate::support::repo::Repo;
use crate::support::scripted_llm::ScriptedLlm;
use serde_json::json;

/// A repository for one runner: its files, the validation command, the file the change edits,
/// and the edit that breaks the test that passes on the base.
struct Runner {
    files: Vec<(&'static str, &'static str)>,
    /// `[[setup]]` tables, when the runner must be installed first.
    setup: &'static str,
    run: &'static str,
    /// More keys of the `[[validate]]` table (`env = {…}`).
    validate_keys: &'static str,
    /// The operator's settings for autofix itself (`AUTOFIX__…` variables).
    service: &'static [(&'static str, &'static str)],
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
        "{}[[validate]]\nname = \"tests\"\nrun = {}\ntimeout_secs = 300\n{}\n[repair]\nmax_attempts = 0\n",
        runner.setup, runner.run, runner.validate_keys
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

    let fix = Fix::run_with(repo.path(), &llm, &issue, |command| {
        command.envs(runner.service.iter().copied());
    });

    let result = fix.failed_result("VALIDATION_FAILED");
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
        setup: "",
        validate_keys: "",
        service: &[],
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
        setup: "",
        validate_keys: "",
        service: &[],
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
        setup: "",
        validate_keys: "",
        service: &[],
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
            ("Cargo.toml", crate::support::repo::CARGO_TOML),
            ("Cargo.lock", crate::support::repo::CARGO_LOCK),
            (".gitignore", "/target\n"),
            (
                "src/lib.rs",
                "pub fn double(x: i32) -> i32 {\n    2 * x\n}\n\npub fn legacy() -> &'static str {\n    \"old\"\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn doubles() {\n        assert_eq!(super::double(2), 4);\n    }\n\n    #[test]\n    fn legacy_format() {\n        assert_eq!(super::legacy(), \"new\");\n    }\n}\n",
            ),
        ],
        setup: "",
        validate_keys: "",
        service: &[],
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
        setup: "",
        validate_keys: "",
        service: &[],
        run: r#"["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider"]"#,
        edited: "calc.py",
        search: "    return 2 * x\n",
        replace: "    return x + 1\n",
        broken: "test_calc.py::test_double",
    });
}

#[test]
fn go_test_verbose() {
    a_change_that_breaks_a_passing_test_is_refused(Runner {
        files: vec![
            ("go.mod", "module example.com/calc\n\ngo 1.19\n"),
            (
                "calc.go",
                "package calc\n\nfunc Double(x int) int {\n\treturn 2 * x\n}\n\nfunc Legacy() string {\n\treturn \"old\"\n}\n",
            ),
            (
                "calc_test.go",
                "package calc\n\nimport \"testing\"\n\nfunc TestDouble(t *testing.T) {\n\tif Double(2) != 4 {\n\t\tt.Fatalf(\"Double(2) = %d\", Double(2))\n\t}\n}\n\nfunc TestLegacy(t *testing.T) {\n\tif Legacy() != \"new\" {\n\t\tt.Fatalf(\"Legacy() = %q\", Legacy())\n\t}\n}\n",
            ),
        ],
        setup: "",
        run: r#"["go", "test", "-v", "./..."]"#,
        validate_keys: GO_ENV,
        service: &[],
        edited: "calc.go",
        search: "\treturn 2 * x\n",
        replace: "\treturn x + 1\n",
        broken: "TestDouble",
    });
}

/// Go's caches in the sandbox's own `/tmp`, and no toolchain download.
const GO_ENV: &str = "env = { GOCACHE = \"/tmp/go-cache\", GOPATH = \"/tmp/go\", GOTOOLCHAIN = \"local\", GOFLAGS = \"-mod=mod\" }\n";

/// The runner's own output, without colours; npm's cache in the sandbox's `/tmp` (`[[setup]]`
/// installs the runner with network, its cache there too).
const NPM_ENV: &str =
    "env = { npm_config_cache = \"/tmp/npm-cache\", CI = \"1\", NO_COLOR = \"1\" }\n";

#[test]
fn jest() {
    a_change_that_breaks_a_passing_test_is_refused(Runner {
        files: vec![
            (
                "package.json",
                "{\"name\": \"calc\", \"version\": \"1.0.0\", \"private\": true}\n",
            ),
            (".gitignore", "node_modules/\n"),
            (
                "calc.js",
                "exports.double = (x) => 2 * x;\nexports.legacy = () => 'old';\n",
            ),
            (
                "calc.test.js",
                "const { double, legacy } = require('./calc');\n\ntest('double', () => {\n  expect(double(2)).toBe(4);\n});\n\ntest('legacy', () => {\n  expect(legacy()).toBe('new');\n});\n",
            ),
        ],
        setup: "[[setup]]\nname = \"jest\"\nrun = [\"npm\", \"install\", \"--no-audit\", \"--no-fund\", \"--no-save\", \"jest@29.7.0\"]\ntimeout_secs = 600\nenv = { npm_config_cache = \"/tmp/npm-cache\" }\n\n",
        run: r#"["node_modules/.bin/jest", "--ci"]"#,
        validate_keys: NPM_ENV,
        service: &[],
        edited: "calc.js",
        search: "exports.double = (x) => 2 * x;\n",
        replace: "exports.double = (x) => x + 1;\n",
        broken: "double",
    });
}

#[test]
fn vitest() {
    a_change_that_breaks_a_passing_test_is_refused(Runner {
        files: vec![
            (
                "package.json",
                "{\"name\": \"calc\", \"version\": \"1.0.0\", \"private\": true, \"type\": \"module\"}\n",
            ),
            (".gitignore", "node_modules/\n"),
            (
                "calc.js",
                "export const double = (x) => 2 * x;\nexport const legacy = () => 'old';\n",
            ),
            (
                "calc.test.js",
                "import { expect, test } from 'vitest';\nimport { double, legacy } from './calc.js';\n\ntest('double', () => {\n  expect(double(2)).toBe(4);\n});\n\ntest('legacy', () => {\n  expect(legacy()).toBe('new');\n});\n",
            ),
        ],
        setup: "[[setup]]\nname = \"vitest\"\nrun = [\"npm\", \"install\", \"--no-audit\", \"--no-fund\", \"--no-save\", \"vitest@3\"]\ntimeout_secs = 600\nenv = { npm_config_cache = \"/tmp/npm-cache\" }\n\n",
        run: r#"["node_modules/.bin/vitest", "run"]"#,
        validate_keys: NPM_ENV,
        // Vite's WebAssembly reserves more address space than the default 8 GiB `RLIMIT_AS`
        // allows ("Cannot allocate Wasm memory"): an operator serving such repositories lifts it.
        service: &[("AUTOFIX__EXEC__MAX_MEMORY_BYTES", "0")],
        edited: "calc.js",
        search: "export const double = (x) => 2 * x;\n",
        replace: "export const double = (x) => x + 1;\n",
        broken: "double",
    });
}
