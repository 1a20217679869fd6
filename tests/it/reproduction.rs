//! The reproduce stage end to end: a real git repository, real pytest, and a scripted model
//! that writes a test before the fix. A change is proven when a test it did not write fails on
//! the base commit and passes with it.

use crate::support::fix_cli::{Fix, search_replace};
use crate::support::posted::stable;
use crate::support::repo::Repo;
use crate::support::scripted_llm::ScriptedLlm;
use serde_json::{Value, json};

const CALC_PY: &str =
    "def clamp(value, low, high):\n    return value\n\n\ndef add(a, b):\n    return a + b\n";
const TEST_ADD: &str = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n";

/// The project: `clamp` ignores its bounds, and no test says so; `add` is tested and right.
fn project(mode: &str) -> Repo {
    project_with(mode, &[])
}

/// [`project`], with `more` files.
fn project_with(mode: &str, more: &[(&str, &str)]) -> Repo {
    let config = format!(
        "[[validate]]\nname = \"pytest\"\nrun = [\"python3\", \"-m\", \"pytest\", \"-q\", \"-p\", \
         \"no:cacheprovider\"]\ntimeout_secs = 120\n\n[reproduce]\nmode = \"{mode}\"\n"
    );
    let mut files = vec![
        ("calc.py", CALC_PY),
        ("tests/test_calc.py", TEST_ADD),
        (".gitignore", "__pycache__/\n"),
        (".autofix.toml", config.as_str()),
    ];
    files.extend_from_slice(more);
    Repo::with(&files)
}

fn issue() -> Value {
    json!({"number": 42, "title": "clamp ignores its upper bound",
           "body": "`clamp(5, 0, 3)` returns 5; it should return 3.", "labels": []})
}

fn triage(classification: &str) -> String {
    json!({"actionable": true, "classification": classification, "risk": "LOW",
           "affected_files": ["calc.py"], "reason": "clamp returns its value unchanged"})
    .to_string()
}

fn plan() -> String {
    json!({"plan_steps": ["make clamp respect both bounds", "test the upper bound"],
           "file_changes": [{"path": "calc.py", "operation": "MODIFY"}],
           "commit_summary": "make clamp respect its bounds", "scope": "calc"})
    .to_string()
}

/// A new test file holding `body`.
fn new_test(path: &str, body: &str) -> String {
    search_replace(path, "", body)
}

const UPPER_BOUND_TEST: &str = "from calc import clamp\n\n\ndef test_clamp_keeps_values_under_the_upper_bound():\n    assert clamp(5, 0, 3) == 3\n";
const PASSING_TEST: &str = "from calc import clamp\n\n\ndef test_clamp_keeps_values_inside():\n    assert clamp(2, 0, 3) == 2\n";
const IMPORT_ERROR_TEST: &str = "from calc import clamp_strictly\n\n\ndef test_clamp_strictly():\n    assert clamp_strictly(5, 0, 3) == 3\n";

fn the_fix() -> String {
    search_replace(
        "calc.py",
        "    return value\n",
        "    return max(low, min(value, high))\n",
    )
}

fn accepted() -> String {
    json!({"decision": "accepted", "reasons": ["fixes the bug"], "must_fixes": [], "nice_to_haves": []})
        .to_string()
}

/// A model that triages and plans the clamp fix, then answers the reproduce stage with
/// `reproductions` in turn.
fn model(reproductions: &[String]) -> ScriptedLlm {
    let llm = ScriptedLlm::start();
    llm.reply_text_for_stage("triage", triage("fix"));
    llm.reply_text_for_stage("plan", plan());
    for answer in reproductions {
        llm.reply_text_for_stage("reproduce", answer.clone());
    }
    llm
}

fn stages(llm: &ScriptedLlm) -> Vec<String> {
    llm.requests()
        .iter()
        .filter_map(|request| request.header("x-autofix-stage").map(str::to_string))
        .collect()
}

#[test]
fn a_test_that_fails_on_the_base_and_a_fix_that_makes_it_pass_are_committed_together() {
    let repo = project("preferred");
    let llm = model(&[new_test("tests/test_clamp.py", UPPER_BOUND_TEST)]);
    llm.reply_text_for_stage("edit", the_fix());
    llm.reply_text_for_stage("audit", accepted());

    let fix = Fix::run(repo.path(), &llm, &issue());

    fix.assert_exit(0);
    assert_eq!(
        stages(&llm),
        ["triage", "plan", "reproduce", "edit", "audit"]
    );
    let committed = repo.git(&["show", "--name-only", "--format=", "HEAD"]);
    assert_eq!(
        committed.trim(),
        "calc.py\ntests/test_clamp.py",
        "one commit, test and fix"
    );
    let reproduction = &fix.result()["reproduction"];
    let test = "tests/test_clamp.py::test_clamp_keeps_values_under_the_upper_bound";
    assert_eq!(reproduction["mode"], "preferred");
    assert_eq!(reproduction["tests"], json!([test]));
    assert_eq!(reproduction["base"], "failed");
    assert_eq!(reproduction["change"], "passed");
    assert_eq!(reproduction["attempts"], 1);
    let line = reproduction["failures"][0]["line"].as_str().unwrap();
    assert!(line.contains("assert 5 == 3"), "{line}");
    let edit_prompt = &llm.prompts_for("edit")[0];
    assert!(
        edit_prompt.contains("## The tests that reproduce the issue") && edit_prompt.contains(test),
        "the edit sees the reproduction: {edit_prompt}"
    );
    let audit_prompt = &llm.prompts_for("audit")[0];
    assert!(
        audit_prompt.contains("tests/test_clamp.py") && audit_prompt.contains("calc.py"),
        "the reviewer reads the test with the fix: {audit_prompt}"
    );
    // `autofix fix` prints the proof: the test that failed on the base and passes now.
    insta::assert_snapshot!("proven_fix_stdout", stable(&fix.stdout()));
    llm.assert_done();
}

#[test]
fn a_first_test_that_passes_on_the_base_is_sent_back_once_and_the_second_is_used() {
    let repo = project("preferred");
    let llm = model(&[
        new_test("tests/test_clamp.py", PASSING_TEST),
        new_test("tests/test_clamp.py", UPPER_BOUND_TEST),
    ]);
    llm.reply_text_for_stage("edit", the_fix());
    llm.reply_text_for_stage("audit", accepted());

    let fix = Fix::run(repo.path(), &llm, &issue());

    fix.assert_exit(0);
    let second = &llm.prompts_for("reproduce")[1];
    assert!(
        second.contains("## Your previous test does not reproduce the issue")
            && second.contains("pass on the base commit"),
        "{second}"
    );
    let reproduction = &fix.result()["reproduction"];
    assert_eq!(reproduction["attempts"], 2);
    assert_eq!(
        reproduction["tests"],
        json!(["tests/test_clamp.py::test_clamp_keeps_values_under_the_upper_bound"])
    );
    let committed = repo.read("tests/test_clamp.py");
    assert_eq!(
        committed, UPPER_BOUND_TEST,
        "the second test, not the first"
    );
    llm.assert_done();
}

#[test]
fn a_test_that_cannot_be_imported_is_not_a_reproduction() {
    let repo = project("required");
    let baseline = repo.head();
    let llm = model(&[
        new_test("tests/test_clamp.py", IMPORT_ERROR_TEST),
        new_test("tests/test_clamp.py", IMPORT_ERROR_TEST),
    ]);

    let fix = Fix::run(repo.path(), &llm, &issue());

    fix.assert_exit(28);
    let result = fix.result();
    assert_eq!(result["failure_code"], "REPRODUCTION_FAILED");
    assert_eq!(result["failure_stage"], "reproduce");
    // Both attempts are told, each naming the `clamp_strictly` the test could not import.
    insta::assert_snapshot!(
        "unloadable_reproduction_reason",
        stable(result["reason"].as_str().unwrap())
    );
    assert_eq!(result["reproduction"]["attempts"], 2);
    assert_eq!(result["reproduction"]["tests"], json!([]));
    repo.assert_untouched(&baseline);
    assert!(
        !stages(&llm).contains(&"edit".to_string()),
        "no fix is asked for"
    );
    llm.assert_done();
}

#[test]
fn a_fix_that_edits_the_reproduction_is_refused_and_repaired() {
    let repo = project("preferred");
    let llm = model(&[new_test("tests/test_clamp.py", UPPER_BOUND_TEST)]);
    llm.reply_text_for_stage(
        "edit",
        search_replace(
            "tests/test_clamp.py",
            "    assert clamp(5, 0, 3) == 3\n",
            "    assert clamp(5, 0, 3) == 5\n",
        ),
    );
    llm.reply_text_for_stage("repair", the_fix());
    llm.reply_text_for_stage("audit", accepted());

    let fix = Fix::run(repo.path(), &llm, &issue());

    fix.assert_exit(0);
    let repair = &llm.prompts_for("repair")[0];
    assert!(
        repair.contains("`tests/test_clamp.py` holds the tests that reproduce the issue"),
        "{repair}"
    );
    assert_eq!(repo.read("tests/test_clamp.py"), UPPER_BOUND_TEST);
    assert_eq!(fix.result()["reproduction"]["change"], "passed");
    llm.assert_done();
}

#[test]
fn a_fix_that_leaves_the_reproduction_failing_is_not_committed() {
    let repo = project("preferred");
    let baseline = repo.head();
    let llm = model(&[new_test("tests/test_clamp.py", UPPER_BOUND_TEST)]);
    // Only the lower bound: the reproduction still fails.
    let half_fix = search_replace(
        "calc.py",
        "    return value\n",
        "    return max(low, value)\n",
    );
    llm.reply_text_for_stage("edit", half_fix.clone());
    for _ in 0..3 {
        llm.reply_text_for_stage("repair", half_fix.clone());
    }

    let fix = Fix::run(repo.path(), &llm, &issue());

    fix.assert_exit(11);
    let result = fix.result();
    assert_eq!(result["failure_code"], "VALIDATION_FAILED");
    assert_eq!(
        result["failure_stage"], "repair",
        "the repairs that could not be applied leave the judged change standing"
    );
    insta::assert_snapshot!(
        "reproduction_still_failing_reason",
        stable(result["reason"].as_str().unwrap())
    );
    assert_eq!(result["reproduction"]["change"], "failed");
    repo.assert_untouched(&baseline);
    llm.assert_done();
}

#[test]
fn required_without_a_reproduction_fails_and_puts_the_repository_back() {
    let repo = project("required");
    let baseline = repo.head();
    let llm = model(&[
        new_test("tests/test_clamp.py", PASSING_TEST),
        new_test("tests/test_clamp.py", PASSING_TEST),
    ]);

    let fix = Fix::run(repo.path(), &llm, &issue());

    fix.assert_exit(28);
    let result = fix.result();
    assert_eq!(result["failure_code"], "REPRODUCTION_FAILED");
    assert_eq!(result["committed"], false);
    repo.assert_untouched(&baseline);
    assert_eq!(repo.current_branch(), "main");
    assert!(
        !repo
            .branches()
            .iter()
            .any(|branch| branch.starts_with("fix/"))
    );
    llm.assert_done();
}

#[test]
fn preferred_without_a_reproduction_goes_on_and_says_it_is_not_proven() {
    let repo = project("preferred");
    let llm = model(&[
        new_test("tests/test_clamp.py", PASSING_TEST),
        new_test("tests/test_clamp.py", PASSING_TEST),
    ]);
    llm.reply_text_for_stage("edit", the_fix());
    llm.reply_text_for_stage("audit", accepted());

    let fix = Fix::run(repo.path(), &llm, &issue());

    fix.assert_exit(0);
    let reproduction = &fix.result()["reproduction"];
    assert_eq!(reproduction["tests"], json!([]));
    assert_eq!(reproduction["base"], Value::Null);
    assert_eq!(reproduction["change"], Value::Null);
    assert_eq!(reproduction["attempts"], 2);
    insta::assert_snapshot!(
        "unproven_because_the_tests_pass_on_the_base",
        stable(reproduction["unproven"].as_str().unwrap())
    );
    let committed = repo.git(&["show", "--name-only", "--format=", "HEAD"]);
    assert_eq!(
        committed.trim(),
        "calc.py",
        "the refused test is not committed"
    );
    insta::assert_snapshot!("unproven_fix_stdout", stable(&fix.stdout()));
    llm.assert_done();
}

#[test]
fn a_reproduction_may_write_only_test_files() {
    let repo = project("required");
    let llm = model(&[the_fix(), new_test("tests/test_clamp.py", UPPER_BOUND_TEST)]);
    llm.reply_text_for_stage("edit", the_fix());
    llm.reply_text_for_stage("audit", accepted());

    let fix = Fix::run(repo.path(), &llm, &issue());

    fix.assert_exit(0);
    let second = &llm.prompts_for("reproduce")[1];
    assert!(second.contains("`calc.py` is not a test file"), "{second}");
    assert_eq!(fix.result()["reproduction"]["attempts"], 2);
    llm.assert_done();
}

#[test]
fn a_docs_issue_and_a_repository_that_turned_it_off_ask_for_no_reproduction() {
    for (mode, classification) in [("off", "fix"), ("required", "docs")] {
        let repo = project(mode);
        let llm = ScriptedLlm::start();
        llm.reply_text_for_stage("triage", triage(classification));
        llm.reply_text_for_stage("plan", plan());
        llm.reply_text_for_stage("edit", the_fix());
        llm.reply_text_for_stage("audit", accepted());

        let fix = Fix::run(repo.path(), &llm, &issue());

        fix.assert_exit(0);
        assert!(!stages(&llm).contains(&"reproduce".to_string()));
        let reproduction = &fix.result()["reproduction"];
        assert_eq!(reproduction["attempts"], 0);
        // Why no test was asked for: reproduction is off, or a docs change is not shown by a test.
        insta::assert_snapshot!(
            format!("no_reproduction_asked_{mode}_{classification}"),
            stable(reproduction["unproven"].as_str().unwrap())
        );
        llm.assert_done();
    }
}

/// Tests that already fail on the base commit for a reason of their own, their names sharing
/// the issue's common words ("error", "loading", "file").
const UNRELATED_FAILURES: &str = "def test_help_echo_loading_error():\n    assert False, \"the CLI library changed its help output\"\n\n\ndef test_file_error_message():\n    assert False, \"the CLI library changed its messages\"\n";

fn drifted_project(mode: &str) -> Repo {
    project_with(mode, &[("tests/test_cli.py", UNRELATED_FAILURES)])
}

fn drift_issue() -> Value {
    json!({"number": 43, "title": "An error when loading the file: values above the limit",
           "body": "Loading the file gives an error: `clamp(5, 0, 3)` returns 5; it should return 3.",
           "labels": []})
}

fn plan_with_test() -> String {
    json!({"plan_steps": ["make clamp respect both bounds", "test the upper bound"],
           "file_changes": [{"path": "calc.py", "operation": "MODIFY"},
                            {"path": "tests/test_calc.py", "operation": "MODIFY"}],
           "commit_summary": "make clamp respect its bounds", "scope": "calc"})
    .to_string()
}

/// The fix, and a test of it added to the existing test file.
fn fix_with_its_test() -> String {
    format!(
        "{}{}",
        the_fix(),
        search_replace(
            "tests/test_calc.py",
            "from calc import add\n",
            "from calc import add, clamp\n\n\ndef test_clamp_upper_bound():\n    assert clamp(5, 0, 3) == 3\n",
        )
    )
}

#[test]
fn unrelated_failures_that_share_the_issue_s_words_are_left_alone_never_demanded() {
    for mode in ["off", "preferred"] {
        let repo = drifted_project(mode);
        let llm = ScriptedLlm::start();
        llm.reply_text_for_stage("triage", triage("fix"));
        llm.reply_text_for_stage("plan", plan_with_test());
        if mode == "preferred" {
            llm.reply_text_for_stage(
                "reproduce",
                new_test("tests/test_clamp.py", UPPER_BOUND_TEST),
            );
            llm.reply_text_for_stage("edit", the_fix());
        } else {
            llm.reply_text_for_stage("edit", fix_with_its_test());
        }
        llm.reply_text_for_stage("audit", accepted());

        let fix = Fix::run(repo.path(), &llm, &drift_issue());

        fix.assert_exit(0);
        let checks = fix.json("CHECKS.json");
        let pytest = &checks["comparisons"][0];
        assert_eq!(pytest["verdict"], "no_worse", "{mode}: {pytest}");
        assert_eq!(
            pytest["still_failing"],
            json!([
                "tests/test_cli.py::test_file_error_message",
                "tests/test_cli.py::test_help_echo_loading_error"
            ]),
            "{mode}"
        );
        assert_eq!(
            pytest.get("demanded"),
            None,
            "{mode}: nothing unrelated is demanded"
        );
        let prompts = llm.prompts().join("\n");
        assert!(
            !prompts.contains("must make at least one of them pass"),
            "{mode}: no prompt asks for the unrelated tests"
        );
        let tests = &fix.result()["reproduction"]["tests"];
        if mode == "preferred" {
            assert_eq!(
                tests,
                &json!(["tests/test_clamp.py::test_clamp_keeps_values_under_the_upper_bound"])
            );
        } else {
            assert_eq!(tests, &json!([]));
        }
        llm.assert_done();
    }
}
