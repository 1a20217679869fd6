//! Edit-apply benchmark: runs `udiff::parse` + `udiff::apply` over `bench/edit-apply/cases.jsonl`
//! and reports exact applies, wrong applies and correct refusals, then aider's parse figures.
//!
//! Case file conventions: `expected` is the file's content after the diff; for a deleted file
//! it is the empty string; for a negative control (`desired: "reject"`) it is the unchanged
//! `base`. Only the edits for the case's `file` are checked; other files in a diff must parse.

#[path = "support/aider_gold.rs"]
mod aider_gold;

use std::path::{Path, PathBuf};
use std::time::Instant;

use autofix::edits::{Change, udiff};
use serde::Deserialize;

#[derive(Deserialize)]
struct Case {
    id: String,
    file: String,
    base: String,
    diff: String,
    expected: String,
    desired: String,
}

/// What the case asks for, from its `desired` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Desired {
    /// `apply…`: the diff's intent is certain; it must apply exactly.
    Apply,
    /// `reject`: a negative control; applying it is wrong.
    Reject,
    /// `reject_or_apply…`: refusing is fine, applying is fine only if exact.
    Either,
}

impl Desired {
    fn of(desired: &str) -> Desired {
        if desired.starts_with("reject_or_apply") {
            Desired::Either
        } else if desired.starts_with("reject") {
            Desired::Reject
        } else if desired.starts_with("apply") {
            Desired::Apply
        } else {
            panic!(
                "unknown desired outcome `{desired}`: expected apply…, reject or reject_or_apply…"
            )
        }
    }
}

enum Outcome {
    Exact,
    Wrong(String),
    Refused(String),
}

fn main() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cases_path = manifest.join("bench/edit-apply/cases.jsonl");
    let cases = load_cases(&cases_path);
    let started = Instant::now();
    let results: Vec<(&Case, Desired, Outcome)> = cases
        .iter()
        .map(|case| (case, Desired::of(&case.desired), run(case)))
        .collect();
    let elapsed = started.elapsed();
    print_summary(&cases_path, &results, elapsed);
    print_aider(&shared_bench_dir(manifest));
}

fn load_cases(path: &Path) -> Vec<Case> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(n, line)| {
            serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{}:{}: not a case: {e}", path.display(), n + 1))
        })
        .collect()
}

fn run(case: &Case) -> Outcome {
    let edits = match udiff::parse(&case.diff) {
        Ok(edits) => edits,
        Err(e) => return Outcome::Refused(format!("parse: {e}")),
    };
    let Some(edit) = edits.iter().find(|edit| edit.path == case.file) else {
        let paths: Vec<&str> = edits.iter().map(|e| e.path.as_str()).collect();
        return Outcome::Refused(format!(
            "the diff has no section for `{}` (it names {paths:?})",
            case.file
        ));
    };
    let result = match &edit.change {
        Change::Patch { hunks } => udiff::apply(&case.base, hunks),
        Change::Write { content, .. } => Ok(content.clone()),
        Change::Delete => Ok(String::new()),
        Change::Replace { .. } => unreachable!("udiff::parse never yields SEARCH/REPLACE blocks"),
    };
    let content = match result {
        Ok(content) => content,
        Err(e) => return Outcome::Refused(format!("apply: {e}")),
    };
    if Desired::of(&case.desired) == Desired::Reject {
        Outcome::Wrong("applied a negative control".to_string())
    } else if content == case.expected {
        Outcome::Exact
    } else {
        Outcome::Wrong(first_difference(&case.expected, &content))
    }
}

fn first_difference(expected: &str, actual: &str) -> String {
    let mut expected_lines = expected.split_inclusive('\n');
    let mut actual_lines = actual.split_inclusive('\n');
    for line in 1.. {
        match (expected_lines.next(), actual_lines.next()) {
            (None, None) => break,
            (e, a) if e == a => continue,
            (e, a) => return format!("line {line}: expected {e:?}, got {a:?}"),
        }
    }
    "contents differ".to_string()
}

fn print_summary(
    cases_path: &Path,
    results: &[(&Case, Desired, Outcome)],
    elapsed: std::time::Duration,
) {
    let count = |desired: Desired, pred: fn(&Outcome) -> bool| {
        results
            .iter()
            .filter(|(_, d, o)| *d == desired && pred(o))
            .count()
    };
    let is_exact = |o: &Outcome| matches!(o, Outcome::Exact);
    let is_refused = |o: &Outcome| matches!(o, Outcome::Refused(_));
    let is_any = |_: &Outcome| true;
    let wrong = results
        .iter()
        .filter(|(_, _, o)| matches!(o, Outcome::Wrong(_)))
        .count();
    let (apply_total, apply_exact) = (
        count(Desired::Apply, is_any),
        count(Desired::Apply, is_exact),
    );
    let (reject_total, reject_refused) = (
        count(Desired::Reject, is_any),
        count(Desired::Reject, is_refused),
    );
    let either_total = count(Desired::Either, is_any);

    println!("edit-apply benchmark: {}", cases_path.display());
    println!("cases:                  {}", results.len());
    println!(
        "exact-apply rate:       {} ({apply_exact}/{apply_total} cases whose desired outcome is to apply)",
        percent(apply_exact, apply_total)
    );
    println!(
        "wrong applies:          {wrong} (over all {} cases)",
        results.len()
    );
    println!(
        "correct-refusal rate:   {} ({reject_refused}/{reject_total} negative controls)",
        percent(reject_refused, reject_total)
    );
    println!(
        "reject-or-apply cases:  {either_total} ({} applied exactly, {} refused)",
        count(Desired::Either, is_exact),
        count(Desired::Either, is_refused)
    );
    println!(
        "time:                   {:.1} ms for parse + apply of every case",
        elapsed.as_secs_f64() * 1e3
    );

    println!("\nnon-exact cases:");
    for (case, desired, outcome) in results {
        let (verdict, reason) = match outcome {
            Outcome::Exact => continue,
            Outcome::Wrong(reason) => ("WRONG", reason),
            Outcome::Refused(reason) if *desired == Desired::Apply => {
                ("refused, should apply", reason)
            }
            Outcome::Refused(reason) => ("refused (correct)", reason),
        };
        let mut lines = reason.lines();
        println!(
            "  {:<44} {verdict}: {}",
            case.id,
            lines.next().unwrap_or_default()
        );
        for line in lines {
            println!("  {:<44}   {line}", "");
        }
    }
}

fn percent(part: usize, whole: usize) -> String {
    if whole == 0 {
        "n/a".to_string()
    } else {
        format!("{:.1} %", 100.0 * part as f64 / whole as f64)
    }
}

/// `$AUTOFIX_SHARED_DIR/bench` if set, else the shared directory next to the crate.
fn shared_bench_dir(manifest: &Path) -> PathBuf {
    match std::env::var_os("AUTOFIX_SHARED_DIR") {
        Some(dir) => PathBuf::from(dir).join("bench"),
        None => manifest.join("../shared/bench"),
    }
}

fn print_aider(dir: &Path) {
    println!("\naider SEARCH/REPLACE parse ({}):", dir.display());
    match aider_gold::report(dir) {
        Ok(r) => {
            println!("  gold blocks:   {}", r.gold_blocks);
            println!("  parsed blocks: {}", r.parsed_blocks);
            println!("  matched:       {}", r.matched);
            println!(
                "  precision {:.3}  recall {:.3}  F1 {:.3}",
                r.precision, r.recall, r.f1
            );
        }
        Err(e) => println!("  unavailable: {e}"),
    }
}
