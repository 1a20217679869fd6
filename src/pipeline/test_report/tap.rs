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
    /// Its own description, as a `# Failed test '…'` diagnostic quotes it.
    description: String,
    /// What the YAML block under it says went wrong (`message:`, or node's `error:`).
    reason: Option<String>,
}

/// TAP counts over every test point of every stream in the output (`prove` runs one per file).
/// Leaf tests count: a test point whose subtests were reported only sums them, unless it failed
/// while none of them did. `# SKIP` and a failing `# TODO` count as skipped; a `Bail out!` is
/// one failure named by its line. A test without a description is named by its number, and
/// under `prove -v` top-level names start with the test file's (`t/basic.t > adds`). None unless
/// a top-level plan (`1..N`) was printed; only numbered test points count, so `ok` lines in
/// other text are not TAP.
pub(super) fn parse(text: &str) -> Option<TestCounts> {
    let mut counts = TestCounts::default();
    let mut names = Vec::new();
    for leaf in leaves(text)? {
        match leaf.outcome {
            Outcome::Pass => {
                counts.add(1, 0, 0);
                counts.passes.push(leaf.name);
            }
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

/// Why TAP says `test` (as [`parse`] names it) failed: the `message:` (or node's `error:`, after
/// its `name:`) of the YAML block under its test point, else the `# Failed test '…'` diagnostic
/// `Test::More` printed for it, with the `got`/`expected` lines under it.
pub(super) fn failure_line(text: &str, test: &str) -> Option<String> {
    let leaf = leaves(text)?
        .into_iter()
        .find(|leaf| leaf.outcome == Outcome::Fail && leaf.name == test)?;
    leaf.reason
        .or_else(|| failed_test_diagnostic(text, &leaf.description))
}

/// `#   Failed test 'adds wrongly'`, then `#   at t/basic.t line 6.` and, for `is()`, the
/// `#          got: '3'` and `#     expected: '4'` lines: on one line.
fn failed_test_diagnostic(text: &str, description: &str) -> Option<String> {
    let header = format!("Failed test '{description}'");
    let mut lines = text.lines().map(diagnostic);
    lines.find(|line| *line == Some(header.as_str()))?;
    let mut said = header.clone();
    let mut details = Vec::new();
    for line in lines {
        let Some(line) = line else { break };
        if line.starts_with("Failed test") || line.starts_with("Looks like") || line.is_empty() {
            break;
        }
        if let Some(location) = line.strip_prefix("at ") {
            said.push_str(&format!(" at {location}"));
        } else {
            details.push(line.split_whitespace().collect::<Vec<_>>().join(" "));
        }
    }
    if !details.is_empty() {
        said.push_str(&format!(": {}", details.join(", ")));
    }
    Some(said)
}

/// The text of a `# …` diagnostic line, at any level.
fn diagnostic(line: &str) -> Option<&str> {
    line.trim_start().strip_prefix('#').map(str::trim)
}

/// What a YAML block says went wrong: `message:` (TAP 13's convention), or node's `error:`
/// after its `name:` (`AssertionError: Expected values to be strictly equal: 2 !== 3`). A
/// block scalar (`|-`) is joined into one line.
fn yaml_reason(block: &[&str]) -> Option<String> {
    let value_of = |key: &str| -> Option<String> {
        let prefix = format!("{key}:");
        let at = block
            .iter()
            .position(|line| line.trim_start().starts_with(&prefix))?;
        let indent = block[at].len() - block[at].trim_start().len();
        let value = block[at].trim_start()[prefix.len()..].trim();
        let value = if value.starts_with('|') || value.starts_with('>') {
            block[at + 1..]
                .iter()
                .take_while(|line| {
                    line.trim().is_empty() || line.len() - line.trim_start().len() > indent
                })
                .map(|line| line.trim())
                .filter(|line| !line.is_empty())
                .collect::<Vec<_>>()
                .join(" ")
        } else {
            unquoted(value).to_string()
        };
        (!value.is_empty() && value != "~").then_some(value)
    };
    if let Some(message) = value_of("message") {
        return Some(message);
    }
    let error = value_of("error")?;
    Some(match value_of("name") {
        Some(name) if !error.starts_with(&name) => format!("{name}: {error}"),
        _ => error,
    })
}

fn unquoted(value: &str) -> &str {
    ['\'', '"']
        .iter()
        .find_map(|quote| value.strip_prefix(*quote)?.strip_suffix(*quote))
        .unwrap_or(value)
}

/// Every test point of every stream, with the subtests of each under its name; None unless a
/// top-level plan was printed.
fn leaves(text: &str) -> Option<Vec<Leaf>> {
    let mut saw_plan = false;
    let mut file: Option<String> = None;
    // Finished subtests waiting for their parent's test point, by level; level 0 is the run's.
    let mut waiting: Vec<Vec<Leaf>> = vec![Vec::new()];
    // The YAML block being read, and where the leaf of the test point above it was put.
    let mut yaml: Option<Vec<&str>> = None;
    let mut last_leaf: Option<(usize, usize)> = None;
    let mut after_test_point = false;
    for line in text.lines() {
        let trimmed = line.trim();
        if let Some(block) = yaml.as_mut() {
            if trimmed == "..." {
                let reason = yaml_reason(block);
                if let Some((level, index)) = last_leaf
                    && let Some(leaf) = waiting.get_mut(level).and_then(|l| l.get_mut(index))
                {
                    leaf.reason = reason;
                }
                yaml = None;
            } else {
                block.push(line);
            }
            continue;
        }
        if after_test_point && trimmed == "---" {
            yaml = Some(Vec::new());
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
                _ => description.clone(),
            };
            let outcome = match directive {
                Directive::Skip => Outcome::Skip,
                Directive::Todo if !passed => Outcome::Skip,
                _ if passed => Outcome::Pass,
                _ => Outcome::Fail,
            };
            let leaf = Leaf {
                name,
                outcome,
                description,
                reason: None,
            };
            last_leaf = finish_test_point(&mut waiting, level, leaf);
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
                description: name.clone(),
                name,
                outcome: Outcome::Fail,
                reason: (!reason.is_empty()).then(|| reason.to_string()),
            });
        }
    }
    // Subtests whose parent never reported (a crash mid-run) still count, under their own names.
    saw_plan.then(|| waiting.into_iter().flatten().collect())
}

/// Records a test point at `level`: the subtests waiting one level down are its own, renamed
/// under it; without any, it is a leaf itself. Returns where its own leaf was put, if it was.
fn finish_test_point(
    waiting: &mut Vec<Vec<Leaf>>,
    level: usize,
    point: Leaf,
) -> Option<(usize, usize)> {
    if waiting.len() <= level + 1 {
        waiting.resize_with(level + 2, Vec::new);
    }
    let children = std::mem::take(&mut waiting[level + 1]);
    let is_leaf = children.is_empty();
    let a_child_failed = children.iter().any(|child| child.outcome == Outcome::Fail);
    for child in children {
        waiting[level].push(Leaf {
            name: format!("{} > {}", point.name, child.name),
            ..child
        });
    }
    if is_leaf || (point.outcome == Outcome::Fail && !a_child_failed) {
        waiting[level].push(point);
        return Some((level, waiting[level].len() - 1));
    }
    None
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

/// `SyntaxError: Unexpected token ';'`, `Error [ERR_MODULE_NOT_FOUND]: Cannot find module …`.
static ERROR_DIAGNOSTIC: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[A-Z]\w*(?:Error|Exception)(?: \[\w+\])?: .+$").expect("valid error pattern")
});
/// `/tmp/x/test/broken.test.js:4`: where node says the error it is about to show is.
static LOCATION_DIAGNOSTIC: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(\S+):(\d+)$").expect("valid location pattern"));

/// Why one of `files` could not be loaded, when `node --test` failed the file as a whole (a
/// test point named by its path) after printing the error as `#` diagnostics: `(file,
/// file:line: SyntaxError: …)`. A test that fails on a `SyntaxError` its code throws is a test
/// point of its own name, its error in its YAML block.
pub(super) fn load_failure(text: &str, files: &[String]) -> Option<(String, String)> {
    let failed_files: Vec<&String> = leaves(text)?
        .iter()
        .filter(|leaf| leaf.outcome == Outcome::Fail)
        .filter_map(|leaf| {
            files
                .iter()
                .find(|file| super::same_file(&leaf.description, file))
        })
        .collect();
    let lines: Vec<&str> = text.lines().collect();
    lines
        .split(|line| diagnostic(line).is_none())
        .find_map(|block| {
            let said: Vec<&str> = block.iter().filter_map(|line| diagnostic(line)).collect();
            let error = said.iter().find(|line| ERROR_DIAGNOSTIC.is_match(line))?;
            // `/path/test/x.test.js:4` above a syntax error, `- /path/test/x.test.js` in a
            // missing module's `Require stack:`.
            said.iter().find_map(|line| {
                let (path, line_number) = match LOCATION_DIAGNOSTIC.captures(line) {
                    Some(caps) => (caps.get(1)?.as_str(), Some(caps.get(2)?.as_str())),
                    None => (line.trim_start_matches("- "), None),
                };
                let file = failed_files
                    .iter()
                    .find(|file| super::same_file(path, file))?;
                Some(match line_number {
                    Some(number) => ((*file).clone(), format!("{file}:{number}: {error}")),
                    None => ((*file).clone(), format!("{file}: {error}")),
                })
            })
        })
}
