//! `CommitMessage`: a conventional-commit subject (`type(scope): summary`, docs/how-it-works.md), an
//! optional body and the trailer block (`Fixes #N`, `Autofix-Job`, `Signed-off-by`) of every commit.

use std::fmt;
use std::str::FromStr;
use std::sync::LazyLock;

use regex::Regex;

use super::ids::check_job_id;
use super::{GitError, Identity};

/// The subject rule (a type, a lower-case scope, 10 to 100 characters of summary), checked as
/// written after the parts are checked one by one.
pub const SUBJECT_PATTERN: &str = r"^(fix|feat|docs|chore|refactor)\([a-z-]+\): .{10,100}$";

static SUBJECT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(SUBJECT_PATTERN).expect("the subject pattern compiles"));

const SUMMARY_MIN_CHARS: usize = 10;
const SUMMARY_MAX_CHARS: usize = 100;

/// The trailer that marks a commit as made by one autofix job.
pub const JOB_TRAILER: &str = "Autofix-Job";

/// The conventional-commit types autofix writes; also the `{type}` of branch templates.
/// Declared in order of precedence: when an issue's labels map to several, the first wins.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum CommitKind {
    Fix,
    Feat,
    Refactor,
    Docs,
    Chore,
}

impl CommitKind {
    pub const ALL: [CommitKind; 5] = [
        CommitKind::Fix,
        CommitKind::Feat,
        CommitKind::Refactor,
        CommitKind::Docs,
        CommitKind::Chore,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            CommitKind::Fix => "fix",
            CommitKind::Feat => "feat",
            CommitKind::Docs => "docs",
            CommitKind::Chore => "chore",
            CommitKind::Refactor => "refactor",
        }
    }
}

impl fmt::Display for CommitKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for CommitKind {
    type Err = GitError;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        CommitKind::ALL
            .into_iter()
            .find(|kind| kind.as_str() == value)
            .ok_or_else(|| GitError::InvalidCommitMessage {
                part: "type",
                reason: format!("{value:?} is not one of fix, feat, docs, chore, refactor"),
            })
    }
}

/// A complete commit message; it can only be built valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitMessage {
    subject: String,
    body: Option<String>,
    /// Whole lines: `Fixes #N` is GitHub's closing keyword, not a `Key: value` trailer.
    trailers: Vec<String>,
}

impl CommitMessage {
    /// `kind(scope): summary`, then the body (trailing blank lines dropped; an empty body is no
    /// body), then `Fixes #N`, `Autofix-Job: id` and `Signed-off-by: Name <email>` as given.
    pub fn new(
        kind: CommitKind,
        scope: &str,
        summary: &str,
        body: Option<&str>,
        issue: Option<u64>,
        sign_off: &Identity,
        job_id: Option<&str>,
    ) -> Result<Self, GitError> {
        check_scope(scope)?;
        check_summary(summary)?;
        let subject = format!("{kind}({scope}): {summary}");
        if !SUBJECT.is_match(&subject) {
            return Err(invalid(
                "subject",
                format!("{subject:?} does not match {SUBJECT_PATTERN}"),
            ));
        }
        if body.is_some_and(|body| body.contains('\0')) {
            return Err(invalid("body", "it contains a NUL character".into()));
        }
        let body = body.map(normalise_body).filter(|body| !body.is_empty());
        let mut trailers = Vec::new();
        if let Some(issue) = issue {
            if issue == 0 {
                return Err(invalid("issue", "issue numbers start at 1".into()));
            }
            trailers.push(format!("Fixes #{issue}"));
        }
        if let Some(job_id) = job_id {
            check_job_id(job_id)?;
            trailers.push(format!("{JOB_TRAILER}: {job_id}"));
        }
        trailers.push(format!("Signed-off-by: {sign_off}"));
        Ok(CommitMessage {
            subject,
            body,
            trailers,
        })
    }

    /// The first line, e.g. `fix(parser): handle empty input in parse`.
    pub fn subject(&self) -> &str {
        &self.subject
    }

    pub fn body(&self) -> Option<&str> {
        self.body.as_deref()
    }

    /// The lines of the trailer block, in order.
    pub fn trailers(&self) -> &[String] {
        &self.trailers
    }
}

/// Subject, blank line, body and blank line when there is a body, trailers, final newline.
impl fmt::Display for CommitMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.subject)?;
        writeln!(f)?;
        if let Some(body) = &self.body {
            writeln!(f, "{body}")?;
            writeln!(f)?;
        }
        for trailer in &self.trailers {
            writeln!(f, "{trailer}")?;
        }
        Ok(())
    }
}

fn invalid(part: &'static str, reason: String) -> GitError {
    GitError::InvalidCommitMessage { part, reason }
}

fn check_scope(scope: &str) -> Result<(), GitError> {
    if scope.is_empty() {
        return Err(invalid("scope", "it is empty".into()));
    }
    if let Some(c) = scope
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || *c == '-'))
    {
        return Err(invalid(
            "scope",
            format!("{scope:?} contains {c:?}; only lowercase ASCII letters and '-' are allowed"),
        ));
    }
    Ok(())
}

fn check_summary(summary: &str) -> Result<(), GitError> {
    if summary.contains(['\n', '\r']) {
        return Err(invalid(
            "summary",
            "it must be one line; put the rest in the body".into(),
        ));
    }
    if let Some(c) = summary.chars().find(|c| c.is_control()) {
        return Err(invalid(
            "summary",
            format!("it contains the control character {c:?}"),
        ));
    }
    if summary.trim() != summary {
        return Err(invalid(
            "summary",
            "it must not start or end with whitespace".into(),
        ));
    }
    let chars = summary.chars().count();
    if chars < SUMMARY_MIN_CHARS {
        return Err(invalid(
            "summary",
            format!("{summary:?} has {chars} characters; at least {SUMMARY_MIN_CHARS} are needed"),
        ));
    }
    if chars > SUMMARY_MAX_CHARS {
        return Err(invalid(
            "summary",
            format!("it has {chars} characters; at most {SUMMARY_MAX_CHARS} are allowed"),
        ));
    }
    Ok(())
}

/// Line endings become `\n` and trailing whitespace and blank lines go, so the trailer block
/// stays the message's last paragraph.
fn normalise_body(body: &str) -> String {
    body.replace("\r\n", "\n")
        .lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
        .trim_matches('\n')
        .to_string()
}
