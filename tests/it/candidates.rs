//! Several candidates for one issue, end to end: the real `autofix fix`, real git, real pytest
//! in bubblewrap, and a scripted model that answers each candidate differently. The change
//! committed is the one the evidence proves; without proof there is no commit.

use crate::support::fix_cli::{Fix, search_replace};
use crate::support::posted::stable;
use crate::support::repo::Repo;
use crate::support::scripted_llm::{Reply, ScriptedLlm};
use serde_json::{Value, json};

const CALC_PY: &str =
    "def clamp(value, low, high):\n    return value\n\n\ndef add(a, b):\n    return a + b\n";
const TEST_ADD: &str = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n";
const UPPER_BOUND_TEST: &str = "from calc import clamp\n\n\ndef test_clamp_keeps_values_under_the_upper_bound():\n    assert clamp(5, 0, 3) == 3\n";
const REPRODUCING_TEST: &str = "tests/test_clamp.py::test_clamp_keeps_values_under_the_upper_bound";

/// The clamp project asking for `count` candidates, with no repairs and no review, so each
/// candidate's first answer is its last.
fn project(count: u32, extra: &str) -> Repo {
    let config = format!(
        "[[validate]]\nname = \"pytest\"\nrun = [\"python3\", \"-m\", \"pytest\", \"-q\", \"-p\", \
         \"no:cacheprovider\"]\ntimeout_secs = 120\n\n[reproduce]\nmode = \"preferred\"\n\n\
         [repair]\nmax_attempts = 0\n\n[audit]\nenabled = false\n\n[candidates]\ncount = {count}\n{extra}"
    );
    Repo::with(&[
        ("calc.py", CALC_PY),
        ("tests/test_calc.py", TEST_ADD),
        (".gitignore", "__pycache__/\n"),
        (".autofix.toml", config.as_str()),
    ])
}

fn issue() -> Value {
    json!({"number": 42, "title": "clamp ignores its upper bound",
           "body": "`clamp(5, 0, 3)` returns 5; it should return 3.", "labels": []})
}

/// Clamps right.
fn right_fix() -> String {
    search_replace(
        "calc.py",
        "    return value\n",
        "    return max(low, min(value, high))\n",
    )
}

/// Clamps right, written the other way round.
fn other_right_fix() -> String {
    search_replace(
        "calc.py",
        "    return value\n",
        "    return min(max(value, low), high)\n",
    )
}

/// Clamps right but breaks `add`.
fn fix_that_breaks_add() -> String {
    search_replace(
        "calc.py",
        "    return value\n\n\ndef add(a, b):\n    return a + b\n",
        "    return max(low, min(value, high))\n\n\ndef add(a, b):\n    return a - b\n",
    )
}

/// Changes nothing that matters: the reproduction still fails.
fn fix_that_misses() -> String {
    search_replace(
        "calc.py",
        "    return value\n",
        "    # the bounds are the caller's business\n    return value\n",
    )
}

/// A model that triages, plans and writes the reproduction once, then answers candidate `n`'s
/// edit with `edits[n - 1]`.
fn model(edits: &[String]) -> ScriptedLlm {
    let llm = ScriptedLlm::start();
    llm.reply_text_for_stage(
        "triage",
        json!({"actionable": true, "classification": "fix", "risk": "LOW",
               "affected_files": ["calc.py"], "reason": "clamp returns its value unchanged"})
        .to_string(),
    );
    llm.reply_text_for_stage(
        "plan",
        json!({"plan_steps": ["make clamp respect both bounds"],
               "file_changes": [{"path": "calc.py", "operation": "MODIFY"}],
               "commit_summary": "make clamp respect its bounds", "scope": "calc"})
        .to_string(),
    );
    llm.reply_text_for_stage(
        "reproduce",
        search_replace("tests/test_clamp.py", "", UPPER_BOUND_TEST),
    );
    for (index, edit) in edits.iter().enumerate() {
        llm.reply_for_candidate("edit", index as u32 + 1, Reply::text(edit.clone()));
    }
    llm
}

/// `autofix fix` validating one candidate at a time, so the order of validation is known.
fn one_at_a_time(repo: &Repo, llm: &ScriptedLlm) -> Fix {
    Fix::run_with(repo.path(), llm, &issue(), |command| {
        command.env("AUTOFIX__EXEC__PARALLEL_CANDIDATES", "1");
    })
}

/// The first log of the check `name` in candidate `number`'s artifacts.
fn check_log(fix: &Fix, number: u32, name: &str) -> String {
    let dir = fix.dir().join(format!("candidates/{number}/logs"));
    let found = std::fs::read_dir(&dir)
        .unwrap_or_else(|err| panic!("{}: {err}", dir.display()))
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|path| path.to_string_lossy().ends_with(&format!("-{name}.log")))
        .unwrap_or_else(|| {
            panic!(
                "no log of {name} in {}:\n{}\n{}",
                dir.display(),
                fix.run_log(),
                std::fs::read_to_string(dir.join("../run.log")).unwrap_or_default()
            )
        });
    std::fs::read_to_string(found).unwrap()
}

fn candidates(fix: &Fix) -> Vec<Value> {
    fix.result()["candidates"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn only_the_second_candidate_is_right_so_it_is_chosen_and_the_line_says_why() {
    let repo = project(3, "");
    let llm = model(&[fix_that_breaks_add(), right_fix(), fix_that_misses()]);

    let fix = one_at_a_time(&repo, &llm);

    fix.assert_exit(0);
    assert!(
        repo.read("calc.py")
            .contains("return max(low, min(value, high))")
            && repo.read("calc.py").contains("return a + b"),
        "candidate 2's change is committed: {}",
        repo.read("calc.py")
    );
    let reports = candidates(&fix);
    let verdicts: Vec<(&str, bool)> = reports
        .iter()
        .map(|c| {
            (
                c["verdict"].as_str().unwrap(),
                c["chosen"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        verdicts,
        [
            ("checks_worse", false),
            ("passed", true),
            ("stopped", false)
        ],
        "{reports:#?}"
    );
    assert_eq!(reports[1]["changed_lines"], 2);
    // #2 chosen as the only one that passes the reproduction, why not #1 and #3; and a model the
    // price table does not know costs nothing, and says so.
    insta::assert_snapshot!("three_candidates_stdout", stable(&fix.stdout()));
    assert_eq!(fix.result()["reproduction"]["change"], "passed");
    for number in 1..=3 {
        let diff = std::fs::read_to_string(fix.dir().join(format!("candidates/{number}/diff")))
            .unwrap_or_else(|err| panic!("candidate {number}'s diff: {err}"));
        assert!(diff.contains("calc.py"), "{diff}");
    }
    // Each candidate asked under its own number; the first at temperature 0, the rest sampled.
    let edits: Vec<(String, f64)> = llm
        .requests()
        .iter()
        .filter(|request| request.stage.as_deref() == Some("edit"))
        .map(|request| {
            (
                request.header("x-autofix-candidate").unwrap().to_string(),
                request.body["temperature"].as_f64().unwrap(),
            )
        })
        .collect();
    let mut numbers: Vec<&str> = edits.iter().map(|(n, _)| n.as_str()).collect();
    numbers.sort();
    assert_eq!(numbers, ["1", "2", "3"]);
    for (number, temperature) in &edits {
        let expected = if number == "1" { 0.0 } else { 0.8 };
        assert!(
            (temperature - expected).abs() < 1e-6,
            "{number}: {temperature}"
        );
    }
    llm.assert_done();
}

#[test]
fn two_candidates_that_make_the_same_change_outvote_a_different_right_one() {
    // One at a time, so the order of validation is the order of votes. The third answer
    // differs from the second in its indentation only: the same change.
    let repo = project(3, "");
    let llm = model(&[
        right_fix(),
        other_right_fix(),
        other_right_fix().replace("    return min", "     return min"),
    ]);

    let fix = one_at_a_time(&repo, &llm);

    fix.assert_exit(0);
    assert!(
        repo.read("calc.py")
            .contains("return min(max(value, low), high)"),
        "the common change is committed: {}",
        repo.read("calc.py")
    );
    let reports = candidates(&fix);
    assert_eq!(reports[1]["chosen"], true, "{reports:#?}");
    assert_eq!(reports[2]["same_as"], 2, "{reports:#?}");
    assert_eq!(reports[0]["verdict"], "stopped", "{reports:#?}");
    // #2 chosen as 2 candidates made its change; #1 not validated, #3 the same change as #2.
    insta::assert_snapshot!("outvoted_candidate_stdout", stable(&fix.stdout()));
    llm.assert_done();
}

#[test]
fn two_right_candidates_that_agree_win_over_a_wrong_one_and_are_validated_once() {
    let repo = project(3, "");
    let llm = model(&[
        fix_that_misses(),
        right_fix(),
        right_fix().replace("    return max", "      return max"),
    ]);

    let fix = Fix::run(repo.path(), &llm, &issue());

    fix.assert_exit(0);
    assert!(
        repo.read("calc.py")
            .contains("return max(low, min(value, high))"),
        "{}",
        repo.read("calc.py")
    );
    let reports = candidates(&fix);
    assert_eq!(reports[1]["chosen"], true, "{reports:#?}");
    assert_eq!(reports[2]["same_as"], 2, "{reports:#?}");
    assert!(
        fix.stdout().contains(&format!(
            "3 candidates: #2 chosen — 2 candidates made this change, and it passes `{REPRODUCING_TEST}`"
        )),
        "{}",
        fix.stdout()
    );
    let validated_by_three = fix.dir().join("candidates/3/logs");
    let logs = std::fs::read_dir(&validated_by_three)
        .map(|entries| entries.count())
        .unwrap_or(0);
    assert_eq!(
        logs, 0,
        "candidate 3's change is candidate 2's: validated once"
    );
    llm.assert_done();
}

#[test]
fn with_no_candidate_proven_nothing_is_committed_and_the_best_ones_evidence_is_given() {
    let repo = project(2, "");
    let baseline = repo.head();
    let llm = model(&[fix_that_misses(), fix_that_breaks_add()]);

    let fix = Fix::run(repo.path(), &llm, &issue());

    fix.assert_exit(11);
    assert_eq!(repo.head(), baseline, "no commit");
    assert_eq!(repo.read("calc.py"), CALC_PY, "the work tree is as it was");
    let result = fix.result();
    assert_eq!(result["failure_code"], "VALIDATION_FAILED");
    let reason = result["reason"].as_str().unwrap();
    // A passing reproduction outranks a clean run: #2 is the best, though it breaks `add`.
    assert!(
        reason.starts_with(
            "2 candidates: #2 chosen — the best, though not proven: it breaks `tests/test_calc.py::test_add`; \
             #1 leaves"
        ),
        "{reason}\n{}\n{}",
        check_log(&fix, 1, "pytest"),
        std::fs::read_to_string(fix.dir().join("candidates/1/run.log")).unwrap()
    );
    let reports = candidates(&fix);
    assert_eq!(reports[1]["chosen"], true, "{reports:#?}");
    llm.assert_done();
}

#[test]
fn candidates_run_side_by_side_and_none_sees_another_ones_tree() {
    // Each validation looks for every candidate's file anywhere it can see, takes two seconds,
    // and fails on a tree holding one: neither candidate passes, so both run to their end.
    let marker = "marker_of_candidate";
    let repo = Repo::with(&[
        ("calc.py", CALC_PY),
        ("tests/test_calc.py", TEST_ADD),
        (".gitignore", "__pycache__/\n"),
        (
            ".autofix.toml",
            &format!(
                "[[validate]]\nname = \"look-around\"\nrun = [\"sh\", \"-c\", \"sleep 2; \
                 find / -path /proc -prune -o -path /sys -prune -o -path /usr -prune -o \
                 -name '{marker}_*' -print 2>/dev/null; ! ls | grep -q {marker}\"]\n\
                 timeout_secs = 120\n\n[reproduce]\nmode = \"off\"\n\n[repair]\nmax_attempts = 0\n\n\
                 [audit]\nenabled = false\n\n[candidates]\ncount = 2\n"
            ),
        ),
    ]);
    let llm = ScriptedLlm::start();
    llm.reply_text_for_stage(
        "triage",
        json!({"actionable": true, "classification": "fix", "risk": "LOW",
               "affected_files": ["calc.py"], "reason": "clamp"})
        .to_string(),
    );
    llm.reply_text_for_stage(
        "plan",
        json!({"plan_steps": ["clamp"],
               "file_changes": [{"path": "calc.py", "operation": "MODIFY"},
                                {"path": format!("{marker}_1.py"), "operation": "CREATE"},
                                {"path": format!("{marker}_2.py"), "operation": "CREATE"}],
               "commit_summary": "clamp", "scope": "calc"})
        .to_string(),
    );
    for number in 1..=2u32 {
        let edit = format!(
            "{}{}",
            right_fix(),
            search_replace(&format!("{marker}_{number}.py"), "", "SEEN = True\n")
        );
        llm.reply_for_candidate("edit", number, Reply::text(edit));
    }

    let fix = Fix::run(repo.path(), &llm, &issue());

    fix.assert_exit(11);
    for number in 1..=2u32 {
        let log = check_log(&fix, number, "look-around");
        let other = 3 - number;
        assert!(
            log.contains(&format!("{marker}_{number}.py")),
            "candidate {number} sees its own file: {log}"
        );
        assert!(
            !log.contains(&format!("{marker}_{other}.py")),
            "candidate {number} must not see candidate {other}'s tree: {log}"
        );
    }
    let result = fix.result();
    let wall = result["candidates_wall_ms"].as_u64().unwrap();
    let validations = result["candidates_validation_ms"].as_u64().unwrap();
    assert!(
        validations >= 4_000,
        "two validations of two seconds each: {result:#}"
    );
    assert!(
        wall < validations,
        "side by side, the candidates took {wall} ms in all, less than their validations' {validations} ms"
    );
    llm.assert_done();
}

#[test]
fn a_count_outside_one_to_five_is_refused_before_any_model_call() {
    let repo = project(6, "");
    let llm = ScriptedLlm::start();

    let fix = Fix::run(repo.path(), &llm, &issue());

    assert_ne!(fix.output.status.code(), Some(0));
    insta::assert_snapshot!(
        "count_out_of_bounds_reason",
        stable(fix.result()["reason"].as_str().unwrap())
    );
    assert!(llm.requests().is_empty(), "no model call");
}

#[test]
fn a_count_above_the_services_bound_is_lowered_and_the_log_says_so() {
    let repo = project(3, "");
    let llm = model(&[right_fix(), other_right_fix()]);

    let fix = Fix::run_with(repo.path(), &llm, &issue(), |command| {
        command.env("AUTOFIX__CANDIDATES__MAX", "2");
    });

    fix.assert_exit(0);
    assert!(
        fix.run_log()
            .contains("candidates: 3 asked for, lowered to the service's candidates.max = 2"),
        "{}",
        fix.run_log()
    );
    assert_eq!(fix.result()["candidates_lowered_to"], 2);
    assert_eq!(candidates(&fix).len(), 2);
}
