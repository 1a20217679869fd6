//! TAP (versions 13 and 14, as `node --test --test-reporter=tap` and `prove -v` print it): the
//! `ok N - name`/`not ok N - name` test points, their `# SKIP`/`# TODO` directives and subtests.

use std::sync::LazyLock;

use regex::Regex;

use super::{TestCounts, unique_in_order};

/// Indentation (four spaces per subtest level), the outcome, the number, then the rest: the
/// description after an optional ` - `, and a directive after an unescaped `#`.
static TEST_POINT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^((?:    )*)(ok|not ok) (\d+)(?:$|\s(?:- )?(.*)$)").expect("valid TAP test point")
});
/// `1..6`, `1..0 # SKIP no network`: the plan, at any level.
static PLAN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^((?:    )*)1\.\.\d+(?:\s+#.*)?$").expect("valid TAP plan pattern")
});
/// `t/basic.t .. `: `prove -v`'s line before each test file's stream, dots padding the names.
static PROVE_FILE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(\S+) \.{2,} ?$").expect("valid prove file pattern"));
/// `Bail out!` or `Bail out! no database`, which ends the whole run.
static BAIL_OUT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*Bail out!(.*)$").expect("valid TAP bail out pattern"));

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Pass,
    Fail,
    Skip,
}

/// One test point, named with its parents' descriptions joined by ` > `.
struct Leaf {
    name: String,
    outcome: Outcome,
}

/// TAP counts over every test point of every stream in the output (`prove` runs one per file).
/// Leaf tests count: a test point whose subtests were reported only sums them, unless it failed
/// while none of them did. `# SKIP` and a failing `# TODO` count as skipped; a `Bail out!` is
/// one failure named by its line. A test without a description is named by its number, and
/// under `prove -v` top-level names start with the test file's (`t/basic.t > adds`). None unless
/// a top-level plan (`1..N`) was printed; only numbered test points count, so `ok` lines in
/// other text are not TAP.
pub(super) fn parse(text: &str) -> Option<TestCounts> {
    let mut saw_plan = false;
    let mut file: Option<String> = None;
    // Finished subtests waiting for their parent's test point, by level; level 0 is the run's.
    let mut waiting: Vec<Vec<Leaf>> = vec![Vec::new()];
    let mut in_yaml_block = false;
    let mut after_test_point = false;
    for line in text.lines() {
        let trimmed = line.trim();
        if in_yaml_block {
            in_yaml_block = trimmed != "...";
            continue;
        }
        if after_test_point && trimmed == "---" {
            in_yaml_block = true;
            continue;
        }
        after_test_point = false;
        if let Some(caps) = TEST_POINT.captures(line) {
            after_test_point = true;
            let level = caps[1].len() / 4;
            let passed = &caps[2] == "ok";
            let (description, directive) = split_directive(caps.get(4).map_or("", |m| m.as_str()));
            let description = if description.is_empty() {
                format!("test {}", &caps[3])
            } else {
                description
            };
            let name = match (&file, level) {
                (Some(file), 0) => format!("{file} > {description}"),
                _ => description,
            };
            let outcome = match directive {
                Directive::Skip => Outcome::Skip,
                Directive::Todo if !passed => Outcome::Skip,
                _ if passed => Outcome::Pass,
                _ => Outcome::Fail,
            };
            finish_test_point(&mut waiting, level, name, outcome);
        } else if let Some(caps) = PLAN.captures(line) {
            saw_plan |= caps[1].is_empty();
        } else if let Some(caps) = PROVE_FILE.captures(line) {
            file = Some(caps[1].to_string());
        } else if let Some(caps) = BAIL_OUT.captures(line) {
            let reason = caps[1].trim();
            let name = if reason.is_empty() {
                "Bail out!".to_string()
            } else {
                format!("Bail out! {reason}")
            };
            waiting[0].push(Leaf {
                name,
                outcome: Outcome::Fail,
            });
        }
    }
    if !saw_plan {
        return None;
    }
    // Subtests whose parent never reported (a crash mid-run) still count, under their own names.
    let leaves = waiting.into_iter().flatten();
    let mut counts = TestCounts::default();
    let mut names = Vec::new();
    for leaf in leaves {
        match leaf.outcome {
            Outcome::Pass => counts.add(1, 0, 0),
            Outcome::Skip => counts.add(0, 0, 1),
            Outcome::Fail => {
                counts.add(0, 1, 0);
                names.push(leaf.name);
            }
        }
    }
    counts.failures = unique_in_order(names);
    Some(counts)
}

/// Records a test point at `level`: the subtests waiting one level down are its own, renamed
/// under it; without any, it is a leaf itself.
fn finish_test_point(waiting: &mut Vec<Vec<Leaf>>, level: usize, name: String, outcome: Outcome) {
    if waiting.len() <= level + 1 {
        waiting.resize_with(level + 2, Vec::new);
    }
    let children = std::mem::take(&mut waiting[level + 1]);
    if children.is_empty() {
        waiting[level].push(Leaf { name, outcome });
        return;
    }
    let a_child_failed = children.iter().any(|child| child.outcome == Outcome::Fail);
    for child in children {
        waiting[level].push(Leaf {
            name: format!("{name} > {}", child.name),
            outcome: child.outcome,
        });
    }
    if outcome == Outcome::Fail && !a_child_failed {
        waiting[level].push(Leaf { name, outcome });
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Directive {
    None,
    Skip,
    Todo,
}

/// The description before the first unescaped `#`, unescaped (`\#` is `#`, `\\` is `\`), and
/// the directive after it: `SKIP`/`skipped …` or `TODO …`, in any case.
fn split_directive(rest: &str) -> (String, Directive) {
    let mut description = String::new();
    let mut chars = rest.chars();
    let mut directive = Directive::None;
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(escaped @ ('#' | '\\')) => description.push(escaped),
                Some(other) => {
                    description.push('\\');
                    description.push(other);
                }
                None => description.push('\\'),
            },
            '#' => {
                let comment = chars.as_str().trim_start().to_ascii_lowercase();
                if comment.starts_with("skip") {
                    directive = Directive::Skip;
                } else if comment.starts_with("todo") {
                    directive = Directive::Todo;
                }
                break;
            }
            _ => description.push(c),
        }
    }
    (description.trim().to_string(), directive)
}
