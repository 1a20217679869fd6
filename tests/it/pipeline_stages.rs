//! The pipeline's stage prompts, snapshotted for one small fixed issue, plan and repository so a
//! changed prompt shows up as a reviewed diff; and an issue file as GitHub's API returns it.

use std::fs;

use autofix::config::repo::RepoConfig;
use autofix::edits::paths::{ProjectRoot, ProtectedPaths};
use autofix::git::CommitKind;
use autofix::index::RepoIndex;
use autofix::index::query::IssueQuery;
use autofix::index::retrieve::{Method, rank};
use autofix::pipeline::checks::{self, CheckRun, Judgement};
use autofix::pipeline::context::{self, Context};
use autofix::pipeline::issue::Issue;
use autofix::pipeline::plan::{self, FileChange, Operation, Plan};
use autofix::pipeline::prompts::{Feedback, edit_prompt};
use autofix::pipeline::repo_map::{look_up, repo_map_section};
use autofix::pipeline::test_report::{CommandReport, TestCounts, TestReport};
use autofix::pipeline::{audit, triage};

const PARSER_RS: &str = "\
pub fn first_word(input: &str) -> &str {
    let end = input.find(' ').unwrap();
    &input[..end]
}
";

const README_MD: &str = "\
# words

```rust
assert_eq!(words::first_word(\"hello world\"), \"hello\");
```
";

const INSTRUCTIONS: &str = "Run `cargo test` before you finish.\nKeep functions small.\n";

const DIFF: &str = "\
--- a/src/parser.rs
+++ b/src/parser.rs
@@ -1,4 +1,4 @@
 pub fn first_word(input: &str) -> &str {
-    let end = input.find(' ').unwrap();
+    let end = input.find(' ').unwrap_or(input.len());
     &input[..end]
 }
";

fn issue() -> Issue {
    Issue::parse(
        r#"{"number": 42, "title": "first_word panics on a single word",
            "body": "Calling `first_word(\"hello\")` in src/parser.rs panics:\n\n## Panic\n\n    called `Option::unwrap()` on a `None` value\n\nThe README.md example only shows two words.",
            "labels": ["bug"]}"#,
    )
    .unwrap()
}

fn repo_files() -> Vec<String> {
    ["Cargo.toml", "README.md", "src/lib.rs", "src/parser.rs"]
        .map(String::from)
        .to_vec()
}

fn triage() -> triage::Triage {
    triage::Triage {
        actionable: true,
        classification: CommitKind::Fix,
        risk: triage::Risk::Low,
        affected_files: vec!["src/parser.rs".into()],
        reason: "first_word unwraps a missing space.".into(),
    }
}

fn plan() -> Plan {
    Plan {
        branch_name: None,
        plan_steps: vec![
            "Use the whole input when it holds no space".into(),
            "Add a test for a single word".into(),
        ],
        file_changes: vec![
            FileChange {
                path: "src/parser.rs".into(),
                operation: Operation::Modify,
                line_range: Some((2, 2)),
            },
            FileChange {
                path: "tests/single_word.rs".into(),
                operation: Operation::Create,
                line_range: None,
            },
        ],
        commit_summary: "return the whole input when it has no space".into(),
        scope: Some("parser".into()),
    }
}

/// The repository on disk, and the context the edit stage would get for `plan`.
fn context_for(plan: &Plan) -> (tempfile::TempDir, Context) {
    let (dir, root, protected, index) = repository();
    plan::check(plan, &root, &protected).unwrap();
    let ranking = rank(&index, &query(), Method::Full);
    let context = context::build(&root, &protected, plan, &ranking, 10_000);
    (dir, context)
}

fn query() -> IssueQuery {
    let issue = issue();
    IssueQuery::parse(&issue.title, &issue.body)
}

/// The small repository on disk, its protected paths and its index.
fn repository() -> (tempfile::TempDir, ProjectRoot, ProtectedPaths, RepoIndex) {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("src")).unwrap();
    fs::write(dir.path().join("src/parser.rs"), PARSER_RS).unwrap();
    fs::write(dir.path().join("src/lib.rs"), "pub mod parser;\n").unwrap();
    fs::write(dir.path().join("README.md"), README_MD).unwrap();
    fs::write(
        dir.path().join("Cargo.toml"),
        "[package]\nname = \"words\"\n",
    )
    .unwrap();
    let root = ProjectRoot::new(dir.path()).unwrap();
    let protected = RepoConfig::default().protected_paths(&root).unwrap();
    let index = RepoIndex::build(dir.path(), &repo_files());
    (dir, root, protected, index)
}

/// The report as judged with no base run: every failure counts against the change.
fn judgement(passed: bool) -> Judgement {
    Judgement {
        comparisons: report(passed)
            .commands
            .into_iter()
            .map(|command| checks::compare(None, CheckRun::new(command, None), &Default::default()))
            .collect(),
    }
}

fn report(passed: bool) -> TestReport {
    TestReport {
        commands: vec![
            CommandReport {
                name: "build".into(),
                command: vec!["cargo".into(), "build".into()],
                exit_code: Some(0),
                timed_out: false,
                passed: true,
                duration_ms: 3100,
                warnings: 0,
                output_truncated: false,
                parser: None,
                tests: None,
            },
            CommandReport {
                name: "test".into(),
                command: vec!["cargo".into(), "test".into(), "--quiet".into()],
                exit_code: Some(if passed { 0 } else { 101 }),
                timed_out: false,
                passed,
                duration_ms: 5400,
                warnings: 0,
                output_truncated: false,
                parser: Some("cargo-test".into()),
                tests: Some(TestCounts {
                    passed: 4,
                    failed: u64::from(!passed),
                    skipped: 0,
                    failures: if passed {
                        vec![]
                    } else {
                        vec!["single_word_is_returned_whole".into()]
                    },
                    ..TestCounts::default()
                }),
            },
        ],
    }
}

#[test]
fn the_triage_prompt() {
    insta::assert_snapshot!(
        "triage_prompt",
        triage::prompt(&issue(), &plan_map(), INSTRUCTIONS, 7_500)
    );
}

#[test]
fn the_plan_prompt() {
    insta::assert_snapshot!(
        "plan_prompt",
        plan::prompt(
            &issue(),
            &triage(),
            &plan_map(),
            &[],
            INSTRUCTIONS,
            2,
            30_000
        )
    );
}

/// The planner's repository map of the small repository, ranked for the issue.
fn plan_map() -> String {
    let (_dir, _root, protected, index) = repository();
    let ranking = rank(&index, &query(), Method::Full);
    repo_map_section(&index, &ranking, &protected, 1_000)
}

#[test]
fn the_plan_prompt_after_a_look_up() {
    let (_dir, _root, protected, index) = repository();
    let looked_up = look_up(
        &index,
        &protected,
        &[
            "first_word".into(),
            "src/lib.rs".into(),
            "nothing_here".into(),
        ],
    );
    insta::assert_snapshot!(
        "plan_prompt_after_a_look_up",
        plan::prompt(
            &issue(),
            &triage(),
            &plan_map(),
            &looked_up,
            INSTRUCTIONS,
            1,
            30_000
        )
    );
}

#[test]
fn the_context_holds_the_planned_file_then_the_ones_the_issue_names() {
    let (_dir, context) = context_for(&plan());
    let paths: Vec<&str> = context.files.iter().map(|f| f.path.as_str()).collect();
    // tests/single_word.rs is created by the plan, so it is simply not there yet.
    assert_eq!(paths[..2], ["src/parser.rs", "README.md"]);
    assert!(context.omitted.is_empty());
}

#[test]
fn the_first_edit_prompt() {
    let (_dir, context) = context_for(&plan());
    insta::assert_snapshot!(
        "edit_prompt",
        edit_prompt(
            &issue(),
            &plan(),
            &context,
            INSTRUCTIONS,
            None,
            None,
            60_000
        )
    );
}

#[test]
fn the_edit_prompt_after_a_failed_validation() {
    let (_dir, context) = context_for(&plan());
    let feedback = Feedback::ValidationFailed {
        command: "cargo test --quiet".into(),
        why: "tests that pass on the base commit fail with this change: \
              single_word_is_returned_whole"
            .into(),
        already_failing: vec!["legacy_separator_is_kept".into()],
        output_tail: "test single_word_is_returned_whole ... FAILED\n\nfailures:\n    \
                      single_word_is_returned_whole\n\ntest result: FAILED. 4 passed; 1 failed\n"
            .into(),
    };
    insta::assert_snapshot!(
        "edit_prompt_after_validation_failure",
        edit_prompt(
            &issue(),
            &plan(),
            &context,
            "",
            None,
            Some(&feedback),
            60_000
        )
    );
}

#[test]
fn the_edit_prompt_after_a_rejected_review() {
    let (_dir, context) = context_for(&plan());
    let feedback = Feedback::ReviewRejected {
        must_fixes: vec!["tests/single_word.rs: assert on \"hello\", not on its length".into()],
        reasons: vec!["The test would pass for any five-letter word.".into()],
    };
    insta::assert_snapshot!(
        "edit_prompt_after_review_rejection",
        edit_prompt(
            &issue(),
            &plan(),
            &context,
            "",
            None,
            Some(&feedback),
            60_000
        )
    );
}

#[test]
fn the_edit_prompt_after_a_refused_edit() {
    let (_dir, context) = context_for(&plan());
    let feedback = Feedback::EditRefused {
        reason: "src/parser.rs: block 1 (SEARCH starting `let end = input.find(\" \")`) is not \
                 in the file"
            .into(),
    };
    insta::assert_snapshot!(
        "edit_prompt_after_refused_edit",
        edit_prompt(
            &issue(),
            &plan(),
            &context,
            "",
            None,
            Some(&feedback),
            60_000
        )
    );
}

#[test]
fn the_edit_prompt_of_a_plan_that_deletes_a_file() {
    let mut plan = plan();
    plan.file_changes[1] = FileChange {
        path: "README.md".into(),
        operation: Operation::Delete,
        line_range: None,
    };
    let (_dir, context) = context_for(&plan);
    insta::assert_snapshot!(
        "edit_prompt_with_a_deletion",
        edit_prompt(&issue(), &plan, &context, "", None, None, 60_000)
    );
}

#[test]
fn the_audit_prompt_of_a_change_whose_tests_fail() {
    insta::assert_snapshot!(
        "audit_prompt_tests_failed",
        audit::prompt(&issue(), &plan(), DIFF, &judgement(false), 30_000)
    );
}

#[test]
fn the_audit_prompt_of_a_change_whose_tests_pass() {
    let prompt = audit::prompt(&issue(), &plan(), DIFF, &judgement(true), 30_000);
    assert!(prompt.contains("- test (`cargo test --quiet`): passed; tests: 4 passed"));
    assert!(!prompt.contains("Validation FAILED"));
}

#[test]
fn an_issue_saved_from_the_github_api_is_read_as_it_is() {
    let issue = Issue::parse(include_str!("../data/issues/github-issues-get.json")).unwrap();
    assert_eq!(
        issue,
        Issue {
            number: Some(1347),
            title: "Found a bug".into(),
            body: "I'm having a problem with this.".into(),
            labels: vec!["bug".into()],
        }
    );
}
