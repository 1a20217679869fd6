//! The lines of one CI script (a GitHub `run:` block, GitLab `script:` lines) turned into
//! proposals: `cd` followed, tokens refused, each line judged as check, install or neither.

use std::sync::LazyLock;

use regex::Regex;

use super::classify::{self, Kind};
use super::shell::{self, Line};
use super::{Detected, Findings, Stage, shortened};

/// A variable holding a token: `$CI_JOB_TOKEN`, `${NPM_TOKEN}`.
static TOKEN_VARIABLE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\$\{?([A-Za-z0-9_]*TOKEN[A-Za-z0-9_]*)").expect("a valid pattern")
});

/// A script and where it stands.
pub(super) struct Script<'a> {
    /// "`.github/workflows/ci.yml` job `test` step 3".
    pub place: String,
    pub lines: &'a [String],
    /// The folder the script starts in, relative to the root.
    pub cwd: String,
    /// Said after the place in every proposal's why (`, `matrix.rust` taken as `stable``).
    pub note: String,
}

/// Judges every line of `script`, in order, into `findings`; `cwd` is where the next script
/// of the same shell starts (GitLab runs a job's lines in one shell).
pub(super) fn judge(script: &Script, findings: &mut Findings) -> String {
    let mut cwd = script.cwd.clone();
    let counted = script.lines.iter().filter(|line| is_command(line)).count() > 1;
    for (index, raw) in script.lines.iter().enumerate() {
        let text = raw.trim();
        if !is_command(text) {
            continue;
        }
        let place = if counted {
            format!("{} line {}", script.place, index + 1)
        } else {
            script.place.clone()
        };
        let what = format!("{place}: {text}");
        if let Some(dir) = shell::cd_alone(text) {
            match joined(&cwd, &dir) {
                Some(next) => cwd = next,
                None => findings.leave_out(what, "changes to a folder outside the repository"),
            }
            continue;
        }
        let (line_cwd, text) = match shell::cd_then(text) {
            Some((dir, rest)) => match joined(&cwd, &dir) {
                Some(dir) => (dir, rest),
                None => {
                    findings.leave_out(what, "changes to a folder outside the repository");
                    continue;
                }
            },
            None => (cwd.clone(), text.to_string()),
        };
        if let Some(token) = TOKEN_VARIABLE.captures(&text) {
            findings.leave_out(what, format!("uses the token `${}`", &token[1]));
            continue;
        }
        let Some(line) = shell::read(&text) else {
            findings.leave_out(what, "its quotes do not close");
            continue;
        };
        let commands = match &line {
            Line::Plain(words) => vec![words.clone()],
            Line::Shell(text) => shell::commands_in(text),
        };
        let kinds: Vec<Kind> = commands.iter().map(|argv| classify::kind(argv)).collect();
        if let Some(Kind::Refused(why)) = kinds.iter().find(|kind| matches!(kind, Kind::Refused(_)))
        {
            findings.leave_out(what, why.clone());
            continue;
        }
        let stage = if kinds.contains(&Kind::Check) {
            Stage::Validate
        } else if kinds.contains(&Kind::Install) {
            Stage::Setup
        } else {
            findings.leave_out(what, "does not build, lint, test or install");
            continue;
        };
        let shell_note = match line {
            Line::Shell(_) => ", run through `sh -c` for its shell syntax",
            Line::Plain(_) => "",
        };
        findings.propose(
            stage,
            Detected {
                name: shortened(&text, 64),
                run: line.argv(),
                cwd: line_cwd,
                why: format!("{place}{}{shell_note}", script.note),
            },
        );
    }
    cwd
}

fn is_command(line: &str) -> bool {
    let line = line.trim();
    !line.is_empty() && !line.starts_with('#')
}

/// `dir` taken from `cwd`, as a path relative to the root (`.` for the root); `None` when it
/// is absolute, leaves the root, or names a variable.
pub(super) fn joined(cwd: &str, dir: &str) -> Option<String> {
    if dir.starts_with('/') || dir.starts_with('~') || dir.contains('$') {
        return None;
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in cwd.split('/').chain(dir.split('/')) {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            part => parts.push(part),
        }
    }
    Some(if parts.is_empty() {
        ".".to_string()
    } else {
        parts.join("/")
    })
}

/// The lines of a script block, a line ending in `\` joined with the next.
pub(super) fn lines_of(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut pending: Option<String> = None;
    for line in text.lines() {
        let mut joined = pending.take().unwrap_or_default();
        joined.push_str(line);
        match joined.strip_suffix('\\') {
            Some(open) => pending = Some(format!("{} ", open.trim_end())),
            None => lines.push(joined),
        }
    }
    lines.extend(pending);
    lines
}
