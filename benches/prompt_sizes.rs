//! Benchmark (not a test): how large is each stage's prompt on real repositories, against its
//! budget? For real issues of the localisation set's repositories (and of sympy, from its own
//! fixing commits, when it is in the folder), each stage's prompt is built as the pipeline
//! builds it, with no model call: triage (issue and map), plan (first round, and the last after
//! two rounds of look-ups), reproduce (first answer, and the second with a failing output), edit
//! (the plan: the fix's files), repair (edit with a validation failure's output) and audit (the
//! fixing commit's diff). Prints the largest prompt per repository and stage, and how many of
//! its parts were cut to fit.
//!
//! Needs the repositories as git directories in one folder, each named `owner+name`
//! (`AUTOFIX_BENCH_REPOS=DIR cargo bench --bench prompt_sizes`); `AUTOFIX_BENCH_ONLY=owner/name`
//! runs one repository, `AUTOFIX_BENCH_ISSUES=N` takes N issues per repository (default 3).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use autofix::config::repo::RepoConfig;
use autofix::edits::paths::{ProjectRoot, project_files};
use autofix::exec::output_tail;
use autofix::git::CommitKind;
use autofix::index::RepoIndex;
use autofix::index::query::IssueQuery;
use autofix::index::retrieve::{Method, rank};
use autofix::pipeline::budget::{Budgets, estimate_tokens};
use autofix::pipeline::checks::Judgement;
use autofix::pipeline::context;
use autofix::pipeline::fix::{FEEDBACK_TAIL_BYTES, LOOKUP_ROUNDS};
use autofix::pipeline::issue::Issue;
use autofix::pipeline::plan::{self, FileChange, Operation, Plan};
use autofix::pipeline::prompts::{Feedback, edit_prompt_within};
use autofix::pipeline::repo_map::{LookedUp, MAX_NAMES_PER_LOOKUP, look_up, repo_map_section};
use autofix::pipeline::reproduce::{self, NotReproduced};
use autofix::pipeline::sections::instruction_text;
use autofix::pipeline::{audit, triage};
use serde::Deserialize;

#[path = "support/checkout.rs"]
mod checkout;
use checkout::{extract, git_dir};

/// `pipeline.context_tokens`'s default.
const CONTEXT_TOKENS: usize = 60_000;
const STAGES: [&str; 6] = ["triage", "plan", "reproduce", "edit", "repair", "audit"];
/// Bytes of the failing output a repair and a second reproduce answer are built from.
const FAILING_OUTPUT_BYTES: usize = 2 * 1024 * 1024;

#[derive(Deserialize)]
struct BenchIssue {
    id: String,
    repo: String,
    language: String,
    issue: Option<u64>,
    base_commit: String,
    fix_commit: String,
    title: String,
    body: String,
    gold: Vec<Gold>,
}

#[derive(Deserialize)]
struct Gold {
    path: String,
}

/// The largest prompt of a stage so far, and whose it was.
#[derive(Default, Clone)]
struct Largest {
    bytes: usize,
    tokens: usize,
    /// The parts cut to fit, by the markers the prompt holds.
    cuts: usize,
    issue: String,
}

fn main() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let Some(repos) = std::env::var_os("AUTOFIX_BENCH_REPOS").map(PathBuf::from) else {
        println!(
            "prompt_sizes: set AUTOFIX_BENCH_REPOS to a folder holding the repositories of \
             bench/localisation/repos.json (and sympy) as git directories named owner+name; skipped"
        );
        return;
    };
    let only = std::env::var("AUTOFIX_BENCH_ONLY").ok();
    let per_repo: usize = std::env::var("AUTOFIX_BENCH_ISSUES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(3);
    let mut issues: Vec<BenchIssue> = Vec::new();
    for file in [
        "bench/localisation/issues.jsonl",
        "bench/prompt_sizes/issues.jsonl",
    ] {
        let text = std::fs::read_to_string(manifest.join(file)).expect("the issues file");
        issues.extend(
            text.lines()
                .filter(|line| !line.trim().is_empty())
                .map(|line| serde_json::from_str::<BenchIssue>(line).expect("an issue line")),
        );
    }
    let mut taken: BTreeMap<String, usize> = BTreeMap::new();
    issues.retain(|issue| {
        let count = taken.entry(issue.repo.clone()).or_default();
        *count += 1;
        *count <= per_repo && only.as_deref().is_none_or(|repo| repo == issue.repo)
    });
    let budgets = Budgets::from_context_tokens(CONTEXT_TOKENS);
    let started = Instant::now();
    let mut largest: BTreeMap<(String, &str), Largest> = BTreeMap::new();
    let mut files_in: BTreeMap<String, usize> = BTreeMap::new();
    let mut skipped: Vec<String> = Vec::new();
    for issue in &issues {
        let folder = repos.join(issue.repo.replace('/', "+"));
        if !folder.exists() {
            if !skipped.contains(&issue.repo) {
                skipped.push(issue.repo.clone());
            }
            continue;
        }
        let (sizes, files) = prompts_of(&git_dir(&repos, &issue.repo), issue, &budgets);
        files_in.insert(issue.repo.clone(), files);
        for (stage, prompt) in sizes {
            let entry = largest.entry((issue.repo.clone(), stage)).or_default();
            if prompt.len() > entry.bytes {
                *entry = Largest {
                    bytes: prompt.len(),
                    tokens: estimate_tokens(&prompt),
                    cuts: prompt.matches(" left out here to keep this prompt").count(),
                    issue: issue.id.clone(),
                };
            }
        }
    }
    println!(
        "prompt_sizes: {} issues, pipeline.context_tokens = {CONTEXT_TOKENS}, {:.0} s",
        issues.len()
            - issues
                .iter()
                .filter(|issue| skipped.contains(&issue.repo))
                .count(),
        started.elapsed().as_secs_f64()
    );
    println!(
        "{:<20} {:>6} {:<10} {:>9} {:>8} {:>8} {:>6} {:>5}  largest for",
        "repository", "files", "stage", "KB", "tokens", "budget", "ratio", "cuts"
    );
    let mut over = 0;
    for ((repo, stage), found) in ordered(&largest) {
        let budget = budgets.of(stage.parse().expect("a stage of the pipeline"));
        let tokens = found.tokens;
        over += usize::from(tokens > budget);
        println!(
            "{:<20} {:>6} {:<10} {:>9.1} {:>8} {:>8} {:>6.2} {:>5}  {}",
            repo,
            files_in.get(&repo).copied().unwrap_or(0),
            stage,
            found.bytes as f64 / 1024.0,
            tokens,
            budget,
            tokens as f64 / budget as f64,
            found.cuts,
            found.issue
        );
    }
    for repo in &skipped {
        println!("{repo}: not in {}; skipped", repos.display());
    }
    println!("prompts over budget: {over}");
}

/// The table's rows: repositories in the order met, stages in the pipeline's order.
fn ordered(
    largest: &BTreeMap<(String, &'static str), Largest>,
) -> Vec<((String, &'static str), Largest)> {
    let mut repos: Vec<&String> = largest.keys().map(|(repo, _)| repo).collect();
    repos.dedup();
    let mut rows = Vec::new();
    for repo in repos {
        for stage in STAGES {
            if let Some(found) = largest.get(&(repo.clone(), stage)) {
                rows.push(((repo.clone(), stage), found.clone()));
            }
        }
    }
    rows
}

/// Every stage's prompt for `issue` at its base commit, as the pipeline builds it (the larger
/// of two where a stage asks twice), and the number of files in the tree.
fn prompts_of(
    git_dir: &Path,
    bench: &BenchIssue,
    budgets: &Budgets,
) -> (Vec<(&'static str, String)>, usize) {
    let tree = tempfile::tempdir().expect("a temp dir");
    extract(git_dir, &bench.base_commit, tree.path());
    let root = ProjectRoot::new(tree.path()).expect("a root");
    let config = RepoConfig::default();
    let protected = config.protected_paths(&root).expect("the rules");
    let files = project_files(tree.path()).expect("the files");
    let index = RepoIndex::build(tree.path(), &files);
    let issue = Issue {
        number: bench.issue,
        title: bench.title.clone(),
        body: bench.body.clone(),
        labels: vec!["bug".into()],
    };
    let ranking = rank(
        &index,
        &IssueQuery::parse(&issue.title, &issue.body),
        Method::Full,
    );
    let instructions = instruction_text(&config.read_instructions(&root));
    let gold: Vec<String> = bench.gold.iter().map(|g| g.path.clone()).collect();
    let mut sizes = Vec::new();

    let map = repo_map_section(
        &index,
        &ranking,
        &protected,
        triage::map_tokens(budgets.triage),
    );
    sizes.push((
        "triage",
        triage::prompt(&issue, &map, &instructions, budgets.triage),
    ));

    let triaged = triage::Triage {
        actionable: true,
        classification: CommitKind::Fix,
        risk: triage::Risk::Medium,
        affected_files: gold.clone(),
        reason: "the issue names the failing behaviour".into(),
    };
    let map = repo_map_section(
        &index,
        &ranking,
        &protected,
        plan::map_tokens(CONTEXT_TOKENS),
    );
    let first = plan::prompt(
        &issue,
        &triaged,
        &map,
        &[],
        &instructions,
        LOOKUP_ROUNDS,
        budgets.plan,
    );
    let looked_up = look_ups(&index, &protected, &gold, &ranking);
    let last = plan::prompt(
        &issue,
        &triaged,
        &map,
        &looked_up,
        &instructions,
        0,
        budgets.plan,
    );
    sizes.push(("plan", larger(first, last)));

    let planned = Plan {
        branch_name: None,
        plan_steps: vec![format!("Fix: {}", bench.title)],
        file_changes: gold
            .iter()
            .map(|path| FileChange {
                path: path.clone(),
                operation: Operation::Modify,
                line_range: None,
            })
            .collect(),
        commit_summary: bench.title.clone(),
        scope: None,
    };
    let near = instruction_text(&config.read_instructions_near(&root, &gold));
    let failing = failing_output(tree.path(), &gold, &bench.language);
    let tail = output_tail(&failing, FEEDBACK_TAIL_BYTES);
    let shown = reproduce::plan_shown(&planned, &files, &ranking);
    let layout = reproduce::test_layout(&files);
    let previous = NotReproduced {
        why: "the new test passes on the base commit, so it does not show the problem".into(),
        output_tail: tail.clone(),
    };
    let reproduce_prompt = |previous: Option<&NotReproduced>| {
        reproduce::prompt(
            &issue,
            &planned,
            &near,
            &layout,
            previous,
            budgets.reproduce,
            |tokens| context::build(&root, &protected, &shown, &ranking, tokens),
        )
        .0
    };
    sizes.push((
        "reproduce",
        larger(reproduce_prompt(None), reproduce_prompt(Some(&previous))),
    ));

    let edit_prompt = |feedback: Option<&Feedback>, budget: usize| {
        edit_prompt_within(&issue, &planned, &near, None, feedback, budget, |tokens| {
            context::build(&root, &protected, &planned, &ranking, tokens)
        })
        .0
    };
    sizes.push(("edit", edit_prompt(None, budgets.edit)));
    let feedback = Feedback::ValidationFailed {
        command: test_command(&bench.language).into(),
        why: "tests that pass on the base commit fail with this change".into(),
        already_failing: (1..=60)
            .map(|n| format!("test_already_broken_{n}"))
            .collect(),
        output_tail: tail,
    };
    sizes.push(("repair", edit_prompt(Some(&feedback), budgets.repair)));

    let diff = git(
        git_dir,
        &["diff", "--no-color", &bench.base_commit, &bench.fix_commit],
    );
    sizes.push((
        "audit",
        audit::prompt(
            &issue,
            &planned,
            &diff,
            &Judgement::default(),
            budgets.audit,
        ),
    ));
    (sizes, files.len())
}

fn larger(one: String, other: String) -> String {
    if other.len() > one.len() { other } else { one }
}

/// Two rounds of look-ups, as a planner that asks for the most would make them: the fix's
/// files and the best-ranked ones, eight names a round.
fn look_ups(
    index: &RepoIndex,
    protected: &autofix::edits::paths::ProtectedPaths,
    gold: &[String],
    ranking: &autofix::index::Ranking,
) -> Vec<LookedUp> {
    let names: Vec<String> = gold
        .iter()
        .cloned()
        .chain(ranking.files.iter().map(|file| file.path.clone()))
        .take(MAX_NAMES_PER_LOOKUP * LOOKUP_ROUNDS)
        .collect();
    names
        .chunks(MAX_NAMES_PER_LOOKUP)
        .flat_map(|round| look_up(index, protected, round))
        .collect()
}

/// A failing run's output, about 2 MB: the test runner's progress, then tracebacks quoting the
/// fix's files line by line, then the summary.
fn failing_output(tree: &Path, gold: &[String], language: &str) -> String {
    let mut output = String::new();
    let sources: Vec<(String, String)> = gold
        .iter()
        .filter_map(|path| Some((path.clone(), std::fs::read_to_string(tree.join(path)).ok()?)))
        .collect();
    let mut n = 0;
    while output.len() < FAILING_OUTPUT_BYTES {
        n += 1;
        output.push_str(&format!("test_case_{n} ... ok\n"));
        for (path, text) in &sources {
            for (line, code) in text.lines().enumerate().skip(n % 200).take(3) {
                output.push_str(&format!(
                    "  {path}:{}: in {language} code\n    {code}\n",
                    line + 1
                ));
            }
        }
    }
    output.push_str("FAILED test_the_issue - AssertionError: expected the fixed behaviour\n");
    output.push_str(&format!("1 failed, {n} passed\n"));
    output
}

fn test_command(language: &str) -> &'static str {
    match language {
        "rust" => "cargo test",
        "go" => "go test ./...",
        "javascript" => "npm test",
        _ => "python -m pytest",
    }
}

fn git(git_dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .arg("--git-dir")
        .arg(git_dir)
        .args(args)
        .output()
        .expect("git runs");
    assert!(output.status.success(), "git {args:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}
