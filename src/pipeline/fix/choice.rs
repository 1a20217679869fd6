//! The choice among a job's candidates, by evidence in this order: the reproduction passes, no
//! check worse than on the base, fewer failing tests, the review's verdict, more candidates
//! making the same change, the smaller change; and the one line that tells people why.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};

use super::FixSummary;
use super::candidates::CandidateReport;
use super::preflight::Ready;
use crate::failure::{Failure, FailureCode, Stage};
use crate::git::CommitSha;
use crate::pipeline::checks::Verdict;
use crate::pipeline::proof::{Reproduction, TestOutcome};

/// How a started candidate ended: its result and every file it wrote.
pub(super) struct CandidateEnd {
    pub number: u32,
    pub result: Result<(), Failure>,
    /// Path → content (`None`: deleted), the reproduction's files included.
    pub applied: BTreeMap<String, Option<String>>,
    /// The reproduction's files, which are not the candidate's change.
    pub proof_files: Vec<String>,
    /// The earlier candidate whose change this one's equals (validated once, as that one).
    pub same_as: Option<u32>,
}

/// What the review said of a candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Review {
    Rejected,
    NotReviewed,
    Accepted,
}

/// What a candidate's run showed, read for the choice.
#[derive(Debug, Clone)]
pub(super) struct Evidence {
    number: u32,
    /// The earlier candidate with the same change, validated in its stead.
    same_as: Option<u32>,
    result: Result<(), Failure>,
    /// Its change, as the diff against the work base (the reproduction's files left out).
    pub diff: String,
    changed_lines: usize,
    /// The changed lines, trimmed and sorted: equal for changes that agree line for line.
    signature: Vec<String>,
    /// `Some(passes)` when the job has reproducing tests and the candidate's checks ran.
    reproduction_passes: Option<bool>,
    /// The first check the candidate made worse, with what it broke.
    worse: Option<String>,
    /// Every check ran and none is worse.
    clean: bool,
    failing_tests: usize,
    review: Review,
}

impl Evidence {
    fn applied(&self) -> bool {
        !self.signature.is_empty() || self.changed_lines > 0
    }

    fn stopped(&self) -> bool {
        matches!(&self.result, Err(failed) if failed.code == FailureCode::Cancelled)
    }
}

/// Reads what candidate `end` showed, from its summary and its tree.
pub(super) fn evidence(
    end: &CandidateEnd,
    summary: &FixSummary,
    ready: &Ready,
    work_base: &CommitSha,
) -> Evidence {
    let paths: Vec<String> = end
        .applied
        .keys()
        .filter(|path| !end.proof_files.contains(path))
        .cloned()
        .collect();
    let diff = ready
        .workspace
        .diff_paths_from(work_base, &paths)
        .unwrap_or_default();
    let changed = changed_lines(&diff);
    let signature = signature(&diff);
    let checks = &summary.checks;
    let worse = checks.iter().find_map(|check| match &check.verdict {
        Verdict::Worse { why } => {
            let broken: Vec<String> = check
                .new_failures
                .iter()
                .chain(&check.new_failing_tests)
                .map(|test| format!("`{test}`"))
                .collect();
            Some(if broken.is_empty() {
                format!("makes `{}` fail: {why}", check.name)
            } else {
                format!("breaks {}", broken.join(", "))
            })
        }
        _ => None,
    });
    let ran_all = !checks.is_empty() && checks.len() == ready.validation.len();
    let clean = worse.is_none() && (ran_all || ready.validation.is_empty());
    let reproduction_passes = summary
        .reproduction
        .as_ref()
        .filter(|reproduction| !reproduction.tests.is_empty())
        .and_then(|reproduction| reproduction.change)
        .map(|outcome| outcome == TestOutcome::Passed);
    let review = match &end.result {
        Ok(()) if summary.reviews > 0 => Review::Accepted,
        Err(failed) if failed.stage == Stage::Audit => Review::Rejected,
        _ => Review::NotReviewed,
    };
    Evidence {
        number: end.number,
        same_as: end.same_as,
        result: end.result.clone(),
        changed_lines: changed.len(),
        diff,
        signature,
        reproduction_passes,
        worse,
        clean,
        failing_tests: checks
            .iter()
            .map(|check| check.change.failing().len())
            .sum(),
        review,
    }
}

/// The `+`/`-` lines of a unified diff, its file headers aside.
fn changed_lines(diff: &str) -> Vec<&str> {
    diff.lines()
        .filter(|line| {
            (line.starts_with('+') || line.starts_with('-'))
                && !line.starts_with("+++")
                && !line.starts_with("---")
        })
        .collect()
}

/// A change's lines under their file's name, trimmed, blank ones dropped, sorted: equal for
/// changes that agree line for line whatever their indentation or order of hunks.
pub(super) fn signature(diff: &str) -> Vec<String> {
    let mut file = "";
    let mut lines = Vec::new();
    for line in diff.lines() {
        if let Some(path) = line
            .strip_prefix("+++ ")
            .or_else(|| line.strip_prefix("--- "))
        {
            if path != "/dev/null" {
                file = path.trim_start_matches("a/").trim_start_matches("b/");
            }
            continue;
        }
        if !(line.starts_with('+') || line.starts_with('-')) {
            continue;
        }
        let text = line[1..].trim();
        if !text.is_empty() {
            lines.push(format!("{file}:{}{text}", &line[..1]));
        }
    }
    lines.sort();
    lines
}

/// The choice: each candidate's report, the line for people, the best candidate and whether
/// it is proven.
#[derive(Debug, Clone)]
pub(super) struct Decision {
    pub reports: Vec<CandidateReport>,
    pub line: String,
    pub best: Option<u32>,
    pub proven: bool,
}

/// Chooses among `evidence` (one per started candidate; `count` were asked for).
pub(super) fn choose(
    evidence: &[Evidence],
    count: u32,
    reproduction: Option<&Reproduction>,
) -> Decision {
    let votes = |signature: &Vec<String>| {
        evidence
            .iter()
            .filter(|other| other.applied() && other.signature == *signature)
            .count()
    };
    let key = |e: &Evidence| {
        (
            e.applied(),
            e.reproduction_passes == Some(true),
            e.clean,
            Reverse(e.failing_tests),
            e.review,
            votes(&e.signature),
            Reverse(e.changed_lines),
            Reverse(e.number),
        )
    };
    let best = evidence
        .iter()
        .filter(|e| e.applied() && e.same_as.is_none())
        .max_by_key(|e| key(e));
    let proven = best.is_some_and(|best| best.result.is_ok());
    let reproducing: Vec<String> = reproduction
        .map(|reproduction| reproduction.tests.clone())
        .unwrap_or_default();
    let mut reports = Vec::new();
    for number in 1..=count {
        let Some(e) = evidence.iter().find(|e| e.number == number) else {
            let winner = best.map_or(String::new(), |best| {
                format!(" #{} passed first", best.number)
            });
            reports.push(CandidateReport {
                number,
                verdict: "stopped".into(),
                chosen: false,
                changed_lines: 0,
                same_as: None,
                why: format!("not started:{winner}"),
            });
            continue;
        };
        let judged = e
            .same_as
            .and_then(|first| evidence.iter().find(|other| other.number == first))
            .unwrap_or(e);
        let (verdict, why) = verdict_of(judged, &reproducing, best.map(|b| b.number));
        reports.push(CandidateReport {
            number,
            verdict: verdict.into(),
            chosen: best.is_some_and(|best| best.number == number),
            changed_lines: e.changed_lines,
            same_as: e.same_as,
            why: match e.same_as {
                Some(first) => format!("the same change as #{first}"),
                None => why,
            },
        });
    }
    let line = summary_line(&reports, evidence, best, &reproducing, proven);
    Decision {
        reports,
        line,
        best: best.map(|best| best.number),
        proven,
    }
}

/// A candidate's verdict and its reason, in a few words.
fn verdict_of(e: &Evidence, reproducing: &[String], best: Option<u32>) -> (&'static str, String) {
    let tests = listed(reproducing);
    if e.stopped() {
        let why = match &e.result {
            Err(failed) if failed.reason.starts_with("not validated") => failed.reason.clone(),
            _ => match best {
                Some(best) => format!("stopped before its checks ended: #{best} passed first"),
                None => "stopped before its checks ended".to_string(),
            },
        };
        return ("stopped", why);
    }
    if !e.applied() {
        let why = match &e.result {
            Err(failed) => format!("made no change that could be applied: {}", failed.reason),
            Ok(()) => "made no change".to_string(),
        };
        return ("not_applied", why);
    }
    if e.reproduction_passes == Some(false) {
        return ("reproduction_failing", format!("leaves {tests} failing"));
    }
    if let Some(worse) = &e.worse {
        return ("checks_worse", worse.clone());
    }
    match &e.result {
        Ok(()) if e.reproduction_passes == Some(true) => {
            ("passed", format!("passes {tests} and every check"))
        }
        Ok(()) => ("passed", "passes every check".to_string()),
        Err(failed) if failed.stage == Stage::Audit => (
            "review_rejected",
            format!("passes its checks; {}", failed.reason),
        ),
        Err(failed) => ("failed", failed.reason.clone()),
    }
}

/// "3 candidates: #2 chosen — the only one that passes `t`; #1 breaks `u`; #3 leaves `t` failing".
fn summary_line(
    reports: &[CandidateReport],
    evidence: &[Evidence],
    best: Option<&Evidence>,
    reproducing: &[String],
    proven: bool,
) -> String {
    let count = reports.len();
    let Some(best) = best else {
        let whys: Vec<String> = reports
            .iter()
            .map(|report| format!("#{} {}", report.number, report.why))
            .collect();
        return format!(
            "{count} candidates, none with a change: {}",
            whys.join("; ")
        );
    };
    let passing = evidence.iter().filter(|e| e.result.is_ok()).count();
    let agreeing = evidence
        .iter()
        .filter(|e| e.applied() && e.signature == best.signature)
        .count();
    let passing = passing.max(usize::from(proven));
    let chosen_why = if !proven {
        let (_, why) = verdict_of(best, reproducing, None);
        format!("the best, though not proven: it {why}")
    } else if agreeing > 1 {
        format!(
            "{agreeing} candidates made this change, and it passes {}",
            if reproducing.is_empty() {
                "every check".to_string()
            } else {
                listed(reproducing)
            }
        )
    } else if passing == 1 && !reproducing.is_empty() {
        format!("the only one that passes {}", listed(reproducing))
    } else if passing == 1 {
        "the only one that passes every check".to_string()
    } else {
        format!(
            "of the {passing} that pass, the one ranked first by the evidence ({} changed lines)",
            best.changed_lines
        )
    };
    let others: Vec<String> = reports
        .iter()
        .filter(|report| report.number != best.number)
        .map(|report| format!("#{} {}", report.number, report.why))
        .collect();
    let mut line = format!("{count} candidates: #{} chosen — {chosen_why}", best.number);
    for other in others {
        line.push_str("; ");
        line.push_str(&other);
    }
    line
}

/// Names as `a`, `b` and `c`; "the reproduction" when there are none.
fn listed(names: &[String]) -> String {
    let unique: BTreeSet<&String> = names.iter().collect();
    let quoted: Vec<String> = unique.iter().map(|name| format!("`{name}`")).collect();
    match quoted.len() {
        0 => "the reproduction".to_string(),
        1 => quoted[0].clone(),
        _ => {
            let (last, rest) = quoted.split_last().unwrap_or((&quoted[0], &[]));
            format!("{} and {last}", rest.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_that_differ_only_in_indentation_agree_and_changes_to_other_files_do_not() {
        let diff = |path: &str, line: &str| {
            format!("--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-    return value\n+{line}\n")
        };
        let one = signature(&diff("calc.py", "    return min(value, high)"));
        let same = signature(&diff("calc.py", "        return min(value, high)"));
        let elsewhere = signature(&diff("other.py", "    return min(value, high)"));
        assert_eq!(one, same);
        assert_ne!(one, elsewhere);
        assert_eq!(changed_lines(&diff("calc.py", "x")).len(), 2);
    }

    #[test]
    fn test_names_are_listed_as_people_write_them() {
        let names = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(listed(&[]), "the reproduction");
        assert_eq!(listed(&names(&["a"])), "`a`");
        assert_eq!(listed(&names(&["a", "b", "c"])), "`a`, `b` and `c`");
    }
}
