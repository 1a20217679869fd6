//! Benchmark (not a test): does the edit stage's starting context hold the code a real fix
//! changed? On the development set in `bench/localisation/` (real issues and their fixing
//! commits), without any model call: the right file ranked first, in the top 5, and every changed
//! line inside an 8k, 13k and 27k-token context — for autofix's retrieval and, computed the same
//! way, BM25 alone and the files the issue mentions. Then the index's build time and memory on a
//! 10,000-file tree, against reading the same files as a baseline.
//!
//! Needs the set's repositories as git directories in one folder, each named `owner+name`
//! (`AUTOFIX_BENCH_REPOS=DIR cargo bench --bench localisation`); `AUTOFIX_BENCH_ONLY=owner/name`
//! runs one repository.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use autofix::config::repo::RepoConfig;
use autofix::edits::paths::{ProjectRoot, project_files};
use autofix::index::query::IssueQuery;
use autofix::index::retrieve::{Method, rank};
use autofix::index::{Ranking, RepoIndex};
use autofix::pipeline::context;
use autofix::pipeline::plan::Plan;
use serde::Deserialize;

#[path = "support/checkout.rs"]
mod checkout;
use checkout::{extract, git_dir};

const BUDGETS: [usize; 3] = [8_000, 13_000, 27_000];
const METHODS: [(Method, &str); 3] = [
    (Method::Full, "autofix"),
    (Method::Bm25, "bm25"),
    (Method::Mentions, "mentions"),
];
const INDEX_FILES: usize = 10_000;

#[derive(Deserialize)]
struct Issue {
    id: String,
    repo: String,
    language: String,
    base_commit: String,
    title: String,
    body: String,
    gold: Vec<Gold>,
}

#[derive(Deserialize)]
struct Gold {
    path: String,
    lines: Vec<[u32; 2]>,
}

/// Per method: issues with a gold file first, with one in the top 5, with all in the top 5,
/// and with every changed line in the context at each budget.
#[derive(Default, Clone)]
struct Tally {
    issues: usize,
    top1: usize,
    top5_any: usize,
    top5_all: usize,
    covered: [usize; 3],
}

fn main() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/localisation");
    let Some(repos) = std::env::var_os("AUTOFIX_BENCH_REPOS").map(PathBuf::from) else {
        println!(
            "localisation: set AUTOFIX_BENCH_REPOS to a folder holding the repositories of {} \
             as git directories named owner+name (see bench/localisation/README.md); skipped",
            data.join("repos.json").display()
        );
        return;
    };
    let only = std::env::var("AUTOFIX_BENCH_ONLY").ok();
    let verbose = std::env::var_os("AUTOFIX_BENCH_VERBOSE").is_some();
    let issues: Vec<Issue> = std::fs::read_to_string(data.join("issues.jsonl"))
        .expect("the issues file")
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).expect("an issue line"))
        .filter(|issue: &Issue| only.as_deref().is_none_or(|repo| repo == issue.repo))
        .collect();
    let mut by_method: BTreeMap<&str, Tally> = BTreeMap::new();
    let mut by_language: BTreeMap<String, Tally> = BTreeMap::new();
    let mut index_time = Duration::ZERO;
    let started = Instant::now();
    for issue in &issues {
        let git_dir = git_dir(&repos, &issue.repo);
        let tree = tempfile::tempdir().expect("a temp dir");
        extract(&git_dir, &issue.base_commit, tree.path());
        let root = ProjectRoot::new(tree.path()).expect("a root");
        let files = project_files(tree.path()).expect("the files");
        let built = Instant::now();
        let index = RepoIndex::build(tree.path(), &files);
        index_time += built.elapsed();
        let query = IssueQuery::parse(&issue.title, &issue.body);
        for (method, name) in METHODS {
            let ranking = rank(&index, &query, method);
            let outcome = judge(&root, issue, &ranking);
            let tally = by_method.entry(name).or_default();
            outcome.add_to(tally);
            if method == Method::Full {
                outcome.add_to(by_language.entry(issue.language.clone()).or_default());
                if verbose {
                    let top: Vec<&str> = ranking
                        .files
                        .iter()
                        .take(3)
                        .map(|f| f.path.as_str())
                        .collect();
                    println!(
                        "  {:<28} gold rank {:<5} covered {:?}  top: {}",
                        issue.id,
                        outcome.best_rank.map_or("-".into(), |r| r.to_string()),
                        outcome.covered,
                        top.join(", ")
                    );
                }
            }
        }
    }
    println!(
        "localisation: {} issues over {} repositories, {:.0} s ({:.2} s indexing per issue)",
        issues.len(),
        issues
            .iter()
            .map(|i| &i.repo)
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        started.elapsed().as_secs_f64(),
        index_time.as_secs_f64() / issues.len().max(1) as f64
    );
    println!(
        "{:<12} {:>6} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "method", "issues", "top-1", "top-5", "all top-5", "8k", "13k", "27k"
    );
    for (method, _) in METHODS.iter().map(|(m, n)| (n, m)) {
        print_row(method, &by_method[method]);
    }
    println!("autofix by language:");
    for (language, tally) in &by_language {
        print_row(&format!("  {language}"), tally);
    }
    println!("aim: top-5 >= 85 %, every changed line in a 27k-token context >= 70 %");
    index_benchmark(&repos, &issues);
}

fn print_row(name: &str, tally: &Tally) {
    let pct = |n: usize| format!("{:.1} %", 100.0 * n as f64 / tally.issues.max(1) as f64);
    println!(
        "{:<12} {:>6} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        name,
        tally.issues,
        pct(tally.top1),
        pct(tally.top5_any),
        pct(tally.top5_all),
        pct(tally.covered[0]),
        pct(tally.covered[1]),
        pct(tally.covered[2])
    );
}

struct Outcome {
    best_rank: Option<usize>,
    all_in_top5: bool,
    covered: [bool; 3],
}

impl Outcome {
    fn add_to(&self, tally: &mut Tally) {
        tally.issues += 1;
        tally.top1 += usize::from(self.best_rank == Some(1));
        tally.top5_any += usize::from(self.best_rank.is_some_and(|rank| rank <= 5));
        tally.top5_all += usize::from(self.all_in_top5);
        for (slot, covered) in self.covered.iter().enumerate() {
            tally.covered[slot] += usize::from(*covered);
        }
    }
}

fn judge(root: &ProjectRoot, issue: &Issue, ranking: &Ranking) -> Outcome {
    let ranks: Vec<Option<usize>> = issue
        .gold
        .iter()
        .map(|gold| ranking.position(&gold.path).map(|p| p + 1))
        .collect();
    let protected = RepoConfig::default()
        .protected_paths(root)
        .expect("the rules");
    let no_plan = Plan::none();
    let mut covered = [false; 3];
    for (slot, budget) in BUDGETS.iter().enumerate() {
        let built = context::build(root, &protected, &no_plan, ranking, *budget);
        covered[slot] = issue.gold.iter().all(|gold| {
            let Some(file) = built.file(&gold.path) else {
                return false;
            };
            gold.lines.iter().all(|[start, end]| {
                (*start..=*end).all(|line| {
                    line > file.total_lines
                        || file.pieces.iter().any(|piece| piece.span.contains(line))
                })
            })
        });
    }
    Outcome {
        best_rank: ranks.iter().flatten().min().copied(),
        all_in_top5: ranks.iter().all(|rank| rank.is_some_and(|r| r <= 5)),
        covered,
    }
}

/// The index of a 10,000-file tree (the set's repositories side by side, repeated until there
/// are that many files): build time and memory, against reading the same files.
fn index_benchmark(repos: &Path, issues: &[Issue]) {
    let tree = tempfile::tempdir().expect("a temp dir");
    let mut latest: BTreeMap<&str, &str> = BTreeMap::new();
    for issue in issues {
        latest.insert(&issue.repo, &issue.base_commit);
    }
    let mut files: Vec<String> = Vec::new();
    let mut copy = 0;
    while files.len() < INDEX_FILES && !latest.is_empty() {
        for (repo, commit) in &latest {
            let folder = format!("{copy}-{}", repo.replace('/', "+"));
            let into = tree.path().join(&folder);
            std::fs::create_dir_all(&into).expect("a folder");
            extract(&git_dir(repos, repo), commit, &into);
            for path in project_files(&into).expect("the files") {
                files.push(format!("{folder}/{path}"));
            }
            if files.len() >= INDEX_FILES {
                break;
            }
        }
        copy += 1;
    }
    files.truncate(INDEX_FILES);
    // Warm the page cache, then the baseline: read every file once.
    let read = |files: &[String]| -> u64 {
        files
            .iter()
            .map(|path| std::fs::read(tree.path().join(path)).map_or(0, |b| b.len() as u64))
            .sum()
    };
    read(&files);
    let baseline = Instant::now();
    let bytes = read(&files);
    let baseline = baseline.elapsed();
    let rss_before = resident_bytes();
    let built = Instant::now();
    let index = RepoIndex::build(tree.path(), &files);
    let elapsed = built.elapsed();
    let rss_after = resident_bytes();
    println!(
        "index: {} files, {:.1} MB: built in {:.2} s ({:.1}x reading the files, {:.2} s); \
         resident memory +{:.0} MB, index structures ~{:.0} MB",
        files.len(),
        bytes as f64 / 1e6,
        elapsed.as_secs_f64(),
        elapsed.as_secs_f64() / baseline.as_secs_f64().max(1e-9),
        baseline.as_secs_f64(),
        rss_after.saturating_sub(rss_before) as f64 / 1e6,
        index.approximate_bytes() as f64 / 1e6
    );
    println!("aim: under 2 s and 200 MB");
}

fn resident_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|statm| statm.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}
