//! Every stage's prompt stays within its budget on a huge input: a 5,000-file repository, a
//! megabyte issue, two megabytes of command output, a diff of thousands of files.

use std::fs;

use autofix::config::repo::RepoConfig;
use autofix::edits::paths::{ProjectRoot, ProtectedPaths};
use autofix::git::CommitKind;
use autofix::index::query::IssueQuery;
use autofix::index::retrieve::{Method, rank};
use autofix::index::{Ranking, RepoIndex};
use autofix::pipeline::StageOutputError;
use autofix::pipeline::budget::{Budgets, estimate_tokens};
use autofix::pipeline::checks::Judgement;
use autofix::pipeline::context;
use autofix::pipeline::issue::Issue;
use autofix::pipeline::json_stage::{Problem, corrective_prompt};
use autofix::pipeline::plan::{self, FileChange, Operation, Plan};
use autofix::pipeline::repo_map::{look_up, repo_map_section};
use autofix::pipeline::reproduce::{self, NotReproduced};
use autofix::pipeline::{audit, triage};
use regex::Regex;

const FILES: usize = 5_000;

/// A repository of 5,000 Python modules, each defining a few parsers, indexed and ranked for
/// an issue about parsing.
struct Repository {
    _dir: tempfile::TempDir,
    root: ProjectRoot,
    protected: ProtectedPaths,
    index: RepoIndex,
    ranking: Ranking,
}

fn repository() -> Repository {
    let dir = tempfile::tempdir().unwrap();
    let mut paths = Vec::new();
    for n in 0..FILES {
        let path = format!("pkg/sub_{}/parser_{n:04}.py", n % 50);
        let text: String = (0..8)
            .map(|f| format!("def parse_value_{n}_{f}(text):\n    return int(text)\n\n"))
            .collect();
        let full = dir.path().join(&path);
        fs::create_dir_all(full.parent().unwrap()).unwrap();
        fs::write(full, text).unwrap();
        paths.push(path);
    }
    let root = ProjectRoot::new(dir.path()).unwrap();
    let protected = RepoConfig::default().protected_paths(&root).unwrap();
    let index = RepoIndex::build(dir.path(), &paths);
    let issue = huge_issue();
    let ranking = rank(
        &index,
        &IssueQuery::parse(&issue.title, &issue.body),
        Method::Full,
    );
    assert!(ranking.files.len() > 1_000, "most files are ranked");
    Repository {
        _dir: dir,
        root,
        protected,
        index,
        ranking,
    }
}

/// An issue with a megabyte of pasted input after its first line.
fn huge_issue() -> Issue {
    Issue {
        number: Some(9),
        title: "parse_value fails on a large text".into(),
        body: "parse_value raises on this input:\n".to_owned() + &"1234567 text\n".repeat(80_000),
        labels: vec!["bug".into()],
    }
}

fn triaged() -> triage::Triage {
    triage::Triage {
        actionable: true,
        classification: CommitKind::Fix,
        risk: triage::Risk::Low,
        affected_files: vec!["pkg/sub_0/parser_0000.py".into()],
        reason: "parse_value does not handle large input.".into(),
    }
}

fn planned() -> Plan {
    Plan {
        branch_name: None,
        plan_steps: vec!["Accept large input".into()],
        file_changes: vec![FileChange {
            path: "pkg/sub_0/parser_0000.py".into(),
            operation: Operation::Modify,
            line_range: None,
        }],
        commit_summary: "accept large input in parse_value".into(),
        scope: None,
    }
}

fn budgets() -> Budgets {
    Budgets::from_context_tokens(60_000)
}

/// The bounded summary of what did not fit: the counted rest (`… and 4,9xx more files …`).
fn counts_the_rest(prompt: &str) -> bool {
    Regex::new(r"… and \d,\d{3} more files")
        .unwrap()
        .is_match(prompt)
}

#[test]
fn triage_sees_a_bounded_map_of_a_five_thousand_file_repository_and_the_start_of_a_huge_issue() {
    let repo = repository();
    let budget = budgets().triage;
    let map = repo_map_section(
        &repo.index,
        &repo.ranking,
        &repo.protected,
        triage::map_tokens(budget),
    );
    let prompt = triage::prompt(&huge_issue(), &map, "", budget);
    assert!(estimate_tokens(&prompt) <= budget, "{}", prompt.len());
    assert!(prompt.contains("parse_value raises on this input:\n"));
    assert!(prompt.contains("bytes of the issue's text left out here"));
    let top = &repo.ranking.files[0].path;
    assert!(
        prompt.contains(&format!("\n{top}\n")),
        "the best file is named"
    );
    assert!(counts_the_rest(&prompt), "{prompt}");
    let named = prompt.lines().filter(|l| l.starts_with("pkg/")).count();
    assert!(named < 200, "{named} paths named, not every file");
    assert!(prompt.ends_with(include_str!("../../src/pipeline/prompts/triage_answer.md")));
}

#[test]
fn the_plan_keeps_its_budget_with_a_huge_issue_a_map_and_many_look_ups() {
    let repo = repository();
    let budget = budgets().plan;
    let map = repo_map_section(&repo.index, &repo.ranking, &repo.protected, 8_000);
    let names: Vec<String> = (0..8)
        .map(|n| format!("pkg/sub_{n}/parser_{n:04}.py"))
        .collect();
    let mut looked_up = look_up(&repo.index, &repo.protected, &names);
    looked_up.extend(look_up(&repo.index, &repo.protected, &names));
    let prompt = plan::prompt(&huge_issue(), &triaged(), &map, &looked_up, "", 1, budget);
    assert!(estimate_tokens(&prompt) <= budget, "{}", prompt.len());
    assert!(prompt.contains("bytes of the issue's text left out here"));
    assert!(prompt.contains("## What you asked to see\n"));
    assert!(counts_the_rest(&prompt), "{prompt}");
    assert!(
        prompt.contains("you may ask 1 more time"),
        "the answer format is whole"
    );
}

#[test]
fn reproduce_keeps_the_end_of_two_megabytes_of_output_and_names_thirty_files_it_cannot_show() {
    let repo = repository();
    let budget = budgets().reproduce;
    let previous = NotReproduced {
        why: "the test passes on the base commit".into(),
        output_tail: "PASSED tests/test_parse.py::test_case\n".repeat(55_000)
            + "1 passed in 0.01s\n",
    };
    let layout: Vec<String> = (0..100).map(|n| format!("tests/test_{n}.py")).collect();
    let (prompt, shown) = reproduce::prompt(
        &huge_issue(),
        &planned(),
        "",
        &layout,
        Some(&previous),
        budget,
        |tokens| {
            context::build(
                &repo.root,
                &repo.protected,
                &planned(),
                &repo.ranking,
                tokens,
            )
        },
    );
    assert!(estimate_tokens(&prompt) <= budget, "{}", prompt.len());
    assert!(
        shown.file("pkg/sub_0/parser_0000.py").is_some(),
        "the planned file is shown"
    );
    assert!(prompt.contains("bytes of the output left out here"));
    assert!(
        prompt.contains("1 passed in 0.01s\n```\n"),
        "the end of the output is kept"
    );
    assert!(prompt.contains("- tests/test_29.py\n… and 70 more test files\n"));
    let not_shown = &prompt[prompt.find("Not shown, best ranked first:\n").unwrap()..];
    assert_eq!(
        not_shown
            .lines()
            .filter(|l| l.starts_with("- pkg/"))
            .count(),
        30
    );
    assert!(counts_the_rest(not_shown), "{not_shown}");
}

#[test]
fn the_audit_shows_the_start_of_a_diff_of_thousands_of_files_within_its_budget() {
    let budget = budgets().audit;
    let diff: String = (0..3_000)
        .map(|n| {
            format!(
                "--- a/pkg/parser_{n}.py\n+++ b/pkg/parser_{n}.py\n@@ -1,2 +1,2 @@\n \
                 def parse_value(text):\n-    return int(text)\n+    return int(text.strip())\n"
            )
        })
        .collect();
    let judgement = Judgement {
        comparisons: Vec::new(),
    };
    let prompt = audit::prompt(&huge_issue(), &planned(), &diff, &judgement, budget);
    assert!(estimate_tokens(&prompt) <= budget, "{}", prompt.len());
    assert!(
        prompt.contains("```diff\n--- a/pkg/parser_0.py\n"),
        "the diff's start"
    );
    assert!(prompt.contains("bytes of the diff left out here"));
    assert!(prompt.contains("bytes of the issue's text left out here"));
    assert!(
        prompt.contains("\"decision\""),
        "the answer format is whole"
    );
}

#[test]
fn a_corrective_round_after_an_unreadable_triage_answer_stays_within_the_budget() {
    let repo = repository();
    let budget = budgets().triage;
    let map = repo_map_section(
        &repo.index,
        &repo.ranking,
        &repo.protected,
        triage::map_tokens(budget),
    );
    let prompt = triage::prompt(&huge_issue(), &map, "", budget);
    let problem = Problem::Unreadable(StageOutputError::new(
        autofix::failure::Stage::Triage,
        "the answer is not a JSON object",
    ));
    let answer = "Sure! Here is my analysis of the issue. ".repeat(500);
    let retry = corrective_prompt(&prompt, &problem, &answer, &triage::schema());
    assert!(retry.starts_with(&prompt));
    assert!(estimate_tokens(&retry) <= budget, "{}", retry.len());
}

#[test]
fn a_prompt_that_fits_is_not_cut() {
    let issue = Issue {
        body: "parse_value fails.".into(),
        ..huge_issue()
    };
    let prompt = audit::prompt(&issue, &planned(), "", &Judgement::default(), 3_000);
    assert!(!prompt.contains("left out here"), "{prompt}");
    assert!(prompt.contains("(The diff is empty: nothing was changed.)"));
}
