//! `BranchName`: a local branch name that git accepts whatever it was built from, and the
//! `{type}/{number}-{slug}` templates that build one from an issue.

use std::fmt;

use super::GitError;
use super::message::CommitKind;
use super::slug::slugify;

/// The branch a job works on, as `branch.template` defaults to: `fix/42-handle-null-values`.
pub const DEFAULT_BRANCH_TEMPLATE: &str = "{type}/{number}-{slug}";

/// Longest branch name accepted, in bytes: well under the 255-byte file name limit that a
/// loose ref on disk must respect, and still readable in a pull request.
pub const BRANCH_NAME_MAX_LEN: usize = 200;

/// A short branch name (`fix/42-x`, never `refs/heads/…`) that git's ref rules accept.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BranchName(String);

impl BranchName {
    /// Checks a name given as it is (by a planner, a work order or a person).
    pub fn new(name: impl Into<String>) -> Result<Self, GitError> {
        let name = name.into();
        match why_invalid(&name) {
            None => Ok(BranchName(name)),
            Some(reason) => Err(GitError::InvalidBranchName { name, reason }),
        }
    }

    /// Fills `template` for one issue; the title only ever reaches the name through [`slugify`].
    pub fn from_template(
        template: &str,
        kind: CommitKind,
        number: u64,
        title: &str,
    ) -> Result<Self, GitError> {
        BranchTemplate::parse(template)?.render(kind, number, title)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `refs/heads/<name>`.
    pub fn full_ref(&self) -> String {
        format!("refs/heads/{}", self.0)
    }
}

impl fmt::Display for BranchName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A parsed branch template: fixed text and the placeholders `{type}`, `{number}`, `{slug}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchTemplate {
    template: String,
    parts: Vec<TemplatePart>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Placeholder {
    Type,
    Number,
    Slug,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum TemplatePart {
    Text(String),
    Placeholder(Placeholder),
}

impl BranchTemplate {
    /// Refuses unknown placeholders, unbalanced braces and a template without `{number}` (two
    /// issues would then compete for one branch).
    pub fn parse(template: &str) -> Result<Self, GitError> {
        let refuse = |reason: String| GitError::InvalidBranchTemplate {
            template: template.to_string(),
            reason,
        };
        let mut parts = Vec::new();
        let mut rest = template;
        while !rest.is_empty() {
            let text_end = rest.find(['{', '}']).unwrap_or(rest.len());
            if text_end > 0 {
                parts.push(TemplatePart::Text(rest[..text_end].to_string()));
            }
            rest = &rest[text_end..];
            if rest.starts_with('}') {
                return Err(refuse("it has a '}' that closes no placeholder".into()));
            }
            if rest.is_empty() {
                break;
            }
            let Some(close) = rest.find('}') else {
                return Err(refuse(format!(
                    "the placeholder starting at {:?} is never closed",
                    rest
                )));
            };
            let placeholder = match &rest[1..close] {
                "type" => Placeholder::Type,
                "number" => Placeholder::Number,
                "slug" => Placeholder::Slug,
                unknown => {
                    return Err(refuse(format!(
                        "unknown placeholder {{{unknown}}}; use {{type}}, {{number}} and {{slug}}"
                    )));
                }
            };
            parts.push(TemplatePart::Placeholder(placeholder));
            rest = &rest[close + 1..];
        }
        if !parts.contains(&TemplatePart::Placeholder(Placeholder::Number)) {
            return Err(refuse(
                "it has no {number}, so two issues would share one branch".into(),
            ));
        }
        Ok(BranchTemplate {
            template: template.to_string(),
            parts,
        })
    }

    /// The branch for one issue. A slug is always valid, so an invalid result is the fixed
    /// text's fault and is reported against the template.
    pub fn render(
        &self,
        kind: CommitKind,
        number: u64,
        title: &str,
    ) -> Result<BranchName, GitError> {
        let mut name = String::new();
        for part in &self.parts {
            match part {
                TemplatePart::Text(text) => name.push_str(text),
                TemplatePart::Placeholder(Placeholder::Type) => name.push_str(kind.as_str()),
                TemplatePart::Placeholder(Placeholder::Number) => {
                    name.push_str(&number.to_string())
                }
                TemplatePart::Placeholder(Placeholder::Slug) => name.push_str(&slugify(title)),
            }
        }
        BranchName::new(name).map_err(|error| match error {
            GitError::InvalidBranchName { name, reason } => GitError::InvalidBranchTemplate {
                template: self.template.clone(),
                reason: format!("it gives the branch name {name:?}, which {reason}"),
            },
            other => other,
        })
    }
}

/// Characters git forbids anywhere in a ref name (see `git help check-ref-format`).
const FORBIDDEN_CHARS: [char; 8] = ['~', '^', ':', '?', '*', '[', '\\', ' '];

/// The first rule `name` breaks, worded to follow "which" or "invalid …:".
fn why_invalid(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("is empty".into());
    }
    if name.len() > BRANCH_NAME_MAX_LEN {
        return Some(format!("is longer than {BRANCH_NAME_MAX_LEN} bytes"));
    }
    if let Some(c) = name.chars().find(|c| c.is_control()) {
        return Some(format!("contains the control character {:?}", c));
    }
    if let Some(c) = name.chars().find(|c| FORBIDDEN_CHARS.contains(c)) {
        return Some(format!("contains {c:?}, which git forbids in branch names"));
    }
    for sequence in ["..", "@{", "//"] {
        if name.contains(sequence) {
            return Some(format!("contains {sequence:?}"));
        }
    }
    if name.starts_with('-') {
        return Some("starts with '-' and would read as an option".into());
    }
    if name.starts_with('/') || name.ends_with('/') {
        return Some("starts or ends with '/'".into());
    }
    if name.ends_with('.') {
        return Some("ends with '.'".into());
    }
    if name == "@" || name == "HEAD" {
        return Some(format!("is {name:?}, which git reserves"));
    }
    if name.starts_with("refs/") {
        return Some("starts with \"refs/\" and would be mistaken for a full ref".into());
    }
    for component in name.split('/') {
        if component.starts_with('.') {
            return Some(format!("has the part {component:?} starting with '.'"));
        }
        if component.ends_with(".lock") {
            return Some(format!("has the part {component:?} ending with \".lock\""));
        }
    }
    if !git2::Reference::is_valid_name(&format!("refs/heads/{name}")) {
        return Some("is not a valid ref name for libgit2".into());
    }
    None
}
