//! The reproduce stage's rules: its prompt, which files it may write, and whether the tests it
//! wrote reproduce the issue — failing on the base commit, in their assertions, alone.

use std::collections::BTreeSet;

use super::budget::{Keep, Part, bounded_list, fit_with_files};
use super::checks::CheckRun;
use super::context::Context;
use super::issue::Issue;
use super::plan::{FileChange, Operation, Plan};
use super::prompts::{context_section, plan_part};
use super::proof::{self, BaseFailure, Reproduction};
use super::sections::{instructions_part, issue_part};
use super::test_report;
use crate::index::Ranking;
use crate::index::kinds::FileKind;
use crate::quote::{fenced, one_line};

const REPRODUCE_INTRO: &str = include_str!("prompts/reproduce.md");
const SEARCH_REPLACE_CONTRACT: &str = include_str!("prompts/edit_search_replace.md");

/// Most reproduce answers a job asks for: the first, and once more with why it was not one.
pub const MAX_ANSWERS: u32 = 2;

/// Whether the reproduce stage may write `path`: a file the repository's layout makes a test
/// (in a `tests/` folder, `test_*.py`, `*_test.go`, `*.test.ts`, `*Test.java`, …).
pub fn may_write(path: &str) -> bool {
    FileKind::of(path) == FileKind::Test
}

/// The reproduce prompt within `budget_tokens`: the issue, the plan (what is wrong and
/// where), the test files and the code under test (`build_context` makes them within the tokens
/// the rest leaves), and on the second answer why the first was not a reproduction; the prompt
/// and the context shown.
pub fn prompt(
    issue: &Issue,
    plan: &Plan,
    instructions: &str,
    test_layout: &[String],
    previous: Option<&NotReproduced>,
    budget_tokens: usize,
    mut build_context: impl FnMut(usize) -> Context,
) -> (String, Context) {
    let mut parts = vec![
        Part::fixed(REPRODUCE_INTRO),
        issue_part(issue),
        plan_part(plan),
        instructions_part(instructions),
        Part::fixed(""),
    ];
    if !test_layout.is_empty() {
        let paths: Vec<String> = test_layout.iter().map(|path| one_line(path)).collect();
        parts.push(Part::fixed(format!(
            "\n## Test files of this repository\n{}",
            bounded_list(&paths, "test files")
        )));
    }
    if let Some(previous) = previous {
        let heading = format!(
            "\n## Your previous test does not reproduce the issue\n{}\n",
            one_line(&previous.why)
        );
        let retry = "It was taken out again. Write a test that fails on the code as it is now.\n";
        if previous.output_tail.trim().is_empty() {
            parts.push(Part::fixed(format!("{heading}{retry}")));
        } else {
            parts.push(
                Part::fenced(previous.output_tail.trim_end(), Keep::Tail, "the output")
                    .before(format!("{heading}The end of the output:\n"))
                    .after(retry),
            );
        }
    }
    parts.push(Part::fixed(format!(
        "\n## Answer format\n{SEARCH_REPLACE_CONTRACT}- Change only test files: one shown above, \
         or a new one beside the repository's tests.\n"
    )));
    fit_with_files(parts, FILES_SLOT, budget_tokens, |tokens| {
        let context = build_context(tokens);
        (context_section(&context), context)
    })
}

/// Where the reproduce prompt's files go among its parts.
const FILES_SLOT: usize = 4;

/// Most existing test files shown to the reproduce stage as examples of the repository's style.
const MAX_TEST_FILES_SHOWN: usize = 3;

/// The plan whose files the reproduce stage sees: up to three of the repository's test files
/// (see [`test_files_to_show`]) as MODIFY, then the plan's own files.
pub fn plan_shown(plan: &Plan, repo_files: &[String], ranking: &Ranking) -> Plan {
    let mut shown = plan.clone();
    shown.file_changes = test_files_to_show(plan, repo_files, ranking)
        .into_iter()
        .map(|path| FileChange {
            path,
            operation: Operation::Modify,
            line_range: None,
        })
        .chain(plan.file_changes.iter().cloned())
        .collect();
    shown
}

/// The repository's test files, to show where it keeps its tests (the prompt names a few and
/// counts the rest).
pub fn test_layout(repo_files: &[String]) -> Vec<String> {
    repo_files
        .iter()
        .filter(|path| may_write(path))
        .cloned()
        .collect()
}

/// The existing test files the reproduce stage sees as examples: the plan's own, then those
/// that test a planned file (`tests/test_calc.py` for `calc.py`), then the best-ranked.
pub fn test_files_to_show(plan: &Plan, repo_files: &[String], ranking: &Ranking) -> Vec<String> {
    let is_test = |path: &str| FileKind::of(path) == FileKind::Test;
    let mut chosen: Vec<String> = Vec::new();
    let mut take = |path: &str| {
        if chosen.len() < MAX_TEST_FILES_SHOWN
            && !chosen.iter().any(|known| known == path)
            && repo_files.iter().any(|known| known == path)
        {
            chosen.push(path.to_string());
        }
    };
    for change in &plan.file_changes {
        if is_test(&change.path) {
            take(&change.path);
        }
    }
    let stems: Vec<String> = plan
        .file_changes
        .iter()
        .filter(|change| !is_test(&change.path))
        .filter_map(|change| file_stem(&change.path))
        .collect();
    for path in repo_files.iter().filter(|path| is_test(path)) {
        let name = file_stem(path).unwrap_or_default();
        let subject = name
            .strip_prefix("test_")
            .or_else(|| name.strip_suffix("_test"))
            .or_else(|| name.strip_suffix(".test"))
            .or_else(|| name.strip_suffix(".spec"))
            .or_else(|| name.strip_suffix("test"))
            .unwrap_or(&name);
        if stems.iter().any(|stem| stem == subject) {
            take(path);
        }
    }
    for file in &ranking.files {
        if is_test(&file.path) {
            take(&file.path);
        }
    }
    chosen
}

/// `src/calc.py` → `calc`; `lib/router.spec.ts` → `router.spec`.
fn file_stem(path: &str) -> Option<String> {
    let name = path.rsplit('/').next()?;
    let stem = name.rsplit_once('.').map_or(name, |(stem, _)| stem);
    (!stem.is_empty()).then(|| stem.to_lowercase())
}

/// The section of the edit prompt that shows the reproduction: its tests, how they fail on
/// the base commit, and that their files may not change.
pub fn edit_section(reproduction: &Reproduction, output_tail: &str) -> String {
    let mut section = String::from("\n## The tests that reproduce the issue\n");
    section.push_str(&format!(
        "These tests were written before the fix and fail on the code as it is now. Your change \
         must make them pass; do not change them or their files ({}).\n",
        files_named(reproduction)
    ));
    for failure in &reproduction.failures {
        section.push_str(&format!(
            "- {}: {}\n",
            one_line(&failure.test),
            one_line(&failure.line)
        ));
    }
    if !output_tail.trim().is_empty() {
        section.push_str("The end of their output on the base commit:\n");
        section.push_str(&fenced("", output_tail.trim_end()));
    }
    section
}

/// The section of a revision's edit prompt: the tests that proved the change request, which
/// pass now and must go on passing, their files out of reach.
pub fn kept_section(reproduction: &Reproduction) -> String {
    let mut section = String::from("\n## The tests that prove this change\n");
    section.push_str(&format!(
        "These tests reproduced the issue before the change and pass with it. They must go on \
         passing; do not change them or their files ({}).\n",
        files_named(reproduction)
    ));
    for test in &reproduction.tests {
        section.push_str(&format!("- {}\n", one_line(test)));
    }
    section
}

fn files_named(reproduction: &Reproduction) -> String {
    reproduction
        .files
        .iter()
        .map(|path| format!("`{}`", one_line(path)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Why an answer of the reproduce stage is not a reproduction, and the output that shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotReproduced {
    pub why: String,
    pub output_tail: String,
}

impl NotReproduced {
    pub fn new(why: impl Into<String>) -> NotReproduced {
        NotReproduced {
            why: why.into(),
            output_tail: String::new(),
        }
    }
}

/// One validation command run on the base commit and on the base with the new tests.
pub struct RunPair<'a> {
    /// The command as shown to people.
    pub command: String,
    pub base: &'a CheckRun,
    pub with_tests: &'a CheckRun,
    /// The whole output of the last run with the new tests.
    pub output: &'a str,
}

/// What the reproduce stage wrote: the files, and the lines it added or changed in them.
pub struct Written<'a> {
    pub files: &'a [String],
    pub added_text: &'a str,
}

/// The tests that reproduce the issue, each with the line that shows its failure, when the
/// new tests fail on the base commit in their assertions and change nothing else; otherwise
/// why not.
pub fn judge(
    pairs: &[RunPair<'_>],
    written: &Written<'_>,
) -> Result<Vec<BaseFailure>, NotReproduced> {
    let mut reproduced = Vec::new();
    let mut passing_commands = Vec::new();
    for pair in pairs {
        let refused = |why: String| NotReproduced {
            why,
            output_tail: crate::exec::output_tail(pair.output, OUTPUT_TAIL_BYTES),
        };
        let (base, with) = (pair.base, pair.with_tests);
        if with.passed() {
            if !base.passed() {
                return Err(refused(format!(
                    "`{}` fails on the base commit but passes with the new tests: a reproduction \
                     may only add failing tests, never change how other tests end",
                    pair.command
                )));
            }
            passing_commands.push(pair.command.clone());
            continue;
        }
        if let Some(line) = test_report::load_failure(pair.output, written.files) {
            return Err(refused(format!(
                "the new test does not load, so it shows nothing about the issue: {}",
                one_line(&line)
            )));
        }
        if with.last().timed_out {
            return Err(refused(format!(
                "`{}` timed out with the new tests",
                pair.command
            )));
        }
        let Some(counts) = with.tests() else {
            return Err(refused(format!(
                "`{}` fails with the new tests, but its output names no test results autofix \
                 can read, so it cannot tell which test failed or why",
                pair.command
            )));
        };
        let flaky: BTreeSet<String> = with.flaky().union(&base.flaky()).cloned().collect();
        let base_failing = base.failing();
        let with_failing = with.failing();
        let now_passing: Vec<&String> = base_failing
            .difference(&with_failing)
            .filter(|name| !flaky.contains(*name))
            .collect();
        if !now_passing.is_empty() {
            return Err(refused(format!(
                "tests that fail on the base commit pass with the new tests ({}): a reproduction \
                 may only add failing tests, never change other tests",
                names(now_passing)
            )));
        }
        if let Some(before) = base.tests() {
            let comparable = !before.only_failures_listed && !counts.only_failures_listed;
            if comparable && counts.total() < before.total() {
                return Err(refused(format!(
                    "`{}` runs fewer tests with the new tests ({} → {}): a reproduction may only \
                     add tests",
                    pair.command,
                    before.total(),
                    counts.total()
                )));
            }
        }
        let new_failures: Vec<&String> = with_failing
            .difference(&base_failing)
            .filter(|name| !flaky.contains(*name))
            .collect();
        let (ours, others): (Vec<&String>, Vec<&String>) = new_failures
            .into_iter()
            .partition(|name| belongs(name, written));
        if !others.is_empty() {
            return Err(refused(format!(
                "the new tests make other tests fail ({}); a reproduction may only add tests \
                 that fail",
                names(others)
            )));
        }
        for test in ours {
            let line = test_report::failure_line(pair.output, test)
                .map(|line| proof::failure_line(&line))
                .unwrap_or_else(|| "fails (the output shows no assertion line)".to_string());
            reproduced.push(BaseFailure {
                test: test.clone(),
                line,
            });
        }
    }
    if reproduced.is_empty() {
        let passing = new_passing_tests(pairs, written);
        if !passing.is_empty() {
            let verb = if passing.len() == 1 { "passes" } else { "pass" };
            return Err(NotReproduced::new(format!(
                "{} {verb} on the base commit, so it does not show the problem",
                names(passing.iter().collect())
            )));
        }
        let files = written
            .files
            .iter()
            .map(|path| format!("`{path}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let why = if passing_commands.is_empty() {
            format!("no test in {files} fails on the base commit, so it does not show the problem")
        } else {
            format!(
                "the tests in {files} pass on the base commit ({} passes), so they do not show \
                 the problem",
                passing_commands
                    .iter()
                    .map(|command| format!("`{command}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        return Err(NotReproduced::new(why));
    }
    Ok(reproduced)
}

/// The tests the answer wrote that the runner names as passing on the base (where it names
/// passing tests at all).
fn new_passing_tests(pairs: &[RunPair<'_>], written: &Written<'_>) -> Vec<String> {
    let mut passing = Vec::new();
    for pair in pairs {
        let Some(with) = pair.with_tests.tests() else {
            continue;
        };
        let known: BTreeSet<&String> = pair
            .base
            .tests()
            .map(|base| base.passes.iter().chain(&base.failures).collect())
            .unwrap_or_default();
        passing.extend(
            with.passes
                .iter()
                .filter(|name| !known.contains(name) && belongs(name, written))
                .cloned(),
        );
    }
    passing
}

/// Most bytes of output quoted back to the model with a refused reproduction.
const OUTPUT_TAIL_BYTES: usize = 4 * 1024;

/// Whether a test the runner names is one the reproduce stage wrote: a name of it appears in
/// the lines it added, or it lives in a file it wrote (`tests/test_calc.py::…`,
/// `tests.test_calc.TestCalc`, `calc_test.go` for a Go package's test).
pub fn belongs(test: &str, written: &Written<'_>) -> bool {
    let added: BTreeSet<&str> = identifiers(written.added_text).collect();
    let named_in_added = identifiers(test)
        .filter(|word| word.len() >= 4 && !matches!(*word, "test" | "tests" | "self"))
        .filter(|word| {
            !written
                .files
                .iter()
                .any(|file| file_words(file).contains(word))
        })
        .any(|word| added.contains(word));
    if named_in_added {
        return true;
    }
    written.files.iter().any(|file| {
        let module = file
            .rsplit_once('.')
            .map_or(file.as_str(), |(stem, _)| stem)
            .replace('/', ".");
        let stem = module.rsplit('.').next().unwrap_or(&module).to_string();
        test.contains(file.as_str())
            || test.contains(&module)
            || identifiers(test).any(|word| word == stem)
    })
}

/// The words of a file's path: a test named after its file alone is not named in the text.
fn file_words(path: &str) -> Vec<&str> {
    identifiers(path).collect()
}

fn identifiers(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|word| !word.is_empty())
}

/// The lines of `after` that `before` does not have (each line counted as often as it occurs),
/// blank lines left out.
pub fn added_lines(before: &str, after: &str) -> String {
    let mut old: Vec<&str> = before.lines().collect();
    let mut added = String::new();
    for line in after.lines().filter(|line| !line.trim().is_empty()) {
        match old.iter().position(|known| *known == line) {
            Some(at) => {
                old.swap_remove(at);
            }
            None => {
                added.push_str(line);
                added.push('\n');
            }
        }
    }
    added
}

fn names(tests: Vec<&String>) -> String {
    tests
        .iter()
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::test_report::{CommandReport, TestCounts};

    fn run(passed: bool, counts: Option<(u64, &[&str])>) -> CheckRun {
        let tests = counts.map(|(passed, names)| TestCounts {
            passed,
            failed: names.len() as u64,
            failures: names.iter().map(|name| name.to_string()).collect(),
            ..TestCounts::default()
        });
        let report = CommandReport::pytest_run("pytest", passed, tests);
        let rerun = (!passed).then(|| report.clone());
        CheckRun::new(report, rerun)
    }

    const FILES: &[&str] = &["tests/test_clamp.py"];
    const ADDED: &str = "def test_clamp_upper_bound():\n    assert clamp(5, 0, 3) == 3\n";
    /// `python3 -m pytest -q` (pytest 8.4.2) on a new test of the buggy `clamp`.
    const OUTPUT: &str = "\
F.                                                                       [100%]
=================================== FAILURES ===================================
____________________________ test_clamp_upper_bound ____________________________

    def test_clamp_upper_bound():
>       assert clamp(5, 0, 3) == 3
E       assert 5 == 3
E        +  where 5 = clamp(5, 0, 3)

tests/test_clamp.py:5: AssertionError
=========================== short test summary info ============================
FAILED tests/test_clamp.py::test_clamp_upper_bound - assert 5 == 3
1 failed, 1 passed in 0.01s
";

    fn judged(base: &CheckRun, with_tests: &CheckRun) -> Result<Vec<BaseFailure>, NotReproduced> {
        let files: Vec<String> = FILES.iter().map(|file| file.to_string()).collect();
        let pairs = [RunPair {
            command: "python3 -m pytest".into(),
            base,
            with_tests,
            output: OUTPUT,
        }];
        judge(
            &pairs,
            &Written {
                files: &files,
                added_text: ADDED,
            },
        )
    }

    #[test]
    fn a_new_test_failing_in_its_assertion_on_the_base_reproduces_the_issue() {
        let base = run(true, Some((1, &[])));
        let with_tests = run(
            false,
            Some((1, &["tests/test_clamp.py::test_clamp_upper_bound"])),
        );
        let failures = judged(&base, &with_tests).unwrap();
        assert_eq!(failures.len(), 1);
        assert_eq!(
            failures[0].test,
            "tests/test_clamp.py::test_clamp_upper_bound"
        );
        assert!(
            failures[0].line.contains("assert 5 == 3"),
            "{:?}",
            failures[0]
        );
    }

    #[test]
    fn a_new_test_that_passes_on_the_base_shows_nothing() {
        let base = run(true, Some((1, &[])));
        let with_tests = run(true, Some((2, &[])));
        let not = judged(&base, &with_tests).unwrap_err();
        assert!(
            not.why.contains("pass on the base commit") && not.why.contains("tests/test_clamp.py"),
            "{}",
            not.why
        );
    }

    #[test]
    fn a_new_test_the_runner_names_as_passing_is_named_in_the_refusal() {
        let base = run(true, Some((1, &[])));
        let mut with_tests = run(true, Some((2, &[])));
        let names = [
            "tests/test_calc.py::test_add",
            "tests/test_clamp.py::test_clamp_upper_bound",
        ];
        with_tests.first.tests.as_mut().unwrap().passes = names.map(String::from).to_vec();
        let mut base = base;
        base.first.tests.as_mut().unwrap().passes = vec!["tests/test_calc.py::test_add".into()];
        let not = judged(&base, &with_tests).unwrap_err();
        assert_eq!(
            not.why,
            "`tests/test_clamp.py::test_clamp_upper_bound` passes on the base commit, so it does \
             not show the problem"
        );
    }

    #[test]
    fn a_reproduction_that_breaks_another_test_or_mends_a_failing_one_is_refused() {
        let base = run(true, Some((1, &[])));
        let breaks = run(false, Some((0, &["tests/test_calc.py::test_add"])));
        let not = judged(&base, &breaks).unwrap_err();
        assert!(not.why.contains("make other tests fail"), "{}", not.why);

        let base = run(false, Some((0, &["tests/test_calc.py::test_add"])));
        let mends = run(
            false,
            Some((1, &["tests/test_clamp.py::test_clamp_upper_bound"])),
        );
        let not = judged(&base, &mends).unwrap_err();
        assert!(
            not.why.contains("tests that fail on the base commit pass"),
            "{}",
            not.why
        );
    }

    #[test]
    fn a_run_whose_results_cannot_be_read_names_no_reproduction() {
        let base = run(true, None);
        let with_tests = run(false, None);
        let not = judged(&base, &with_tests).unwrap_err();
        assert!(not.why.contains("names no test results"), "{}", not.why);
    }

    #[test]
    fn a_test_belongs_to_the_reproduction_by_its_name_or_its_file() {
        let files = vec!["tests/test_clamp.py".to_string()];
        let written = Written {
            files: &files,
            added_text: ADDED,
        };
        assert!(belongs("tests/test_clamp.py::test_other", &written));
        assert!(belongs(
            "test_clamp_upper_bound (tests.test_clamp.TestClamp.test_clamp_upper_bound)",
            &written
        ));
        assert!(belongs("calc::tests::test_clamp_upper_bound", &written));
        assert!(!belongs("tests/test_calc.py::test_add", &written));
    }

    #[test]
    fn only_the_lines_an_answer_adds_count_as_what_it_wrote() {
        let before = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n";
        let after = "from calc import add, clamp\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\ndef test_clamp():\n    assert clamp(5, 0, 3) == 3\n";
        assert_eq!(
            added_lines(before, after),
            "from calc import add, clamp\ndef test_clamp():\n    assert clamp(5, 0, 3) == 3\n"
        );
    }

    #[test]
    fn a_path_is_writable_by_the_reproduction_only_when_it_is_a_test() {
        for test in [
            "tests/test_clamp.py",
            "test_calc.py",
            "pkg/calc_test.go",
            "src/calc.test.ts",
        ] {
            assert!(may_write(test), "{test}");
        }
        for source in ["calc.py", "src/lib.rs", ".github/workflows/ci.yml"] {
            assert!(!may_write(source), "{source}");
        }
    }
}
