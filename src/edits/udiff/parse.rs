//! Reading a reply's unified diff into file edits: `---`/`+++` headers, `@@` hunks with or
//! without usable numbers, new files and deletions, and the refusals for diffs that say nothing.

use super::{Hunk, HunkLine, hunk_name};
use crate::edits::{Change, FileEdit, ParseError};
const DEV_NULL: &str = "/dev/null";

/// Reads every file section of a (possibly multi-file) unified diff.
pub fn parse(text: &str) -> Result<Vec<FileEdit>, ParseError> {
    let lines: Vec<&str> = text
        .split('\n')
        .map(|line| line.strip_suffix('\r').unwrap_or(line))
        .collect();
    let sections = read_sections(&lines)?;
    if sections.is_empty() {
        return Err(ParseError::new(
            "udiff: no unified diff found in the response: expected a `--- a/path` line, \
             then `+++ b/path`, then `@@` hunks",
        ));
    }
    merge_sections(sections)?
        .into_iter()
        .map(Section::into_file_edit)
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SectionKind {
    NewFile,
    Delete,
    Patch,
}

impl SectionKind {
    fn describe(self) -> &'static str {
        match self {
            SectionKind::NewFile => "a new file (`--- /dev/null`)",
            SectionKind::Delete => "a deletion (`+++ /dev/null`)",
            SectionKind::Patch => "a patch",
        }
    }
}

/// One `--- `/`+++ ` header and the hunks under it.
struct Section {
    path: String,
    kind: SectionKind,
    /// 1-based line of the `--- ` header in the response, to point at it in errors.
    header_line: usize,
    hunks: Vec<Hunk>,
}

fn read_sections(lines: &[&str]) -> Result<Vec<Section>, ParseError> {
    let mut sections: Vec<Section> = Vec::new();
    let mut at = 0;
    while at < lines.len() {
        if let Some((old, new)) = file_header_at(lines, at) {
            let mut section = Section::from_header(old, new, at + 1)?;
            at += 2;
            // Some models skip the `@@` line entirely; lines that can only be hunk lines
            // right under the header are still one hunk.
            if starts_headerless_hunk(lines, at) {
                let (hunk, next) = read_hunk(lines, at, "", section.kind);
                section.hunks.push(hunk);
                at = next;
            }
            sections.push(section);
            continue;
        }
        if lines[at].starts_with("@@") {
            let Some(section) = sections.last_mut() else {
                return Err(ParseError::new(format!(
                    "udiff: the hunk `{}` at line {} comes before any `--- a/path` / `+++ b/path` \
                     header, so it names no file",
                    lines[at].trim_end(),
                    at + 1
                )));
            };
            let (hunk, next) = read_hunk(lines, at + 1, lines[at], section.kind);
            section.hunks.push(hunk);
            at = next;
            continue;
        }
        at += 1;
    }
    Ok(sections)
}

/// A `--- ` line is a file header only when a `+++ ` line follows: a removed line
/// `-- comment` is written `--- comment` too.
fn file_header_at<'t>(lines: &[&'t str], at: usize) -> Option<(&'t str, &'t str)> {
    let old = lines.get(at)?.strip_prefix("--- ")?;
    let new = lines.get(at + 1)?.strip_prefix("+++ ")?;
    Some((old, new))
}

fn starts_headerless_hunk(lines: &[&str], at: usize) -> bool {
    lines.get(at).is_some_and(|line| {
        (line.starts_with(' ') || line.starts_with('+') || line.starts_with('-'))
            && file_header_at(lines, at).is_none()
    })
}

/// Reads hunk lines from `body_start` until something that cannot be one; returns the hunk
/// and where reading stopped. Counts in the header are never trusted for this.
fn read_hunk(lines: &[&str], body_start: usize, header: &str, kind: SectionKind) -> (Hunk, usize) {
    let mut body: Vec<(HunkLine, bool)> = Vec::new();
    let mut at = body_start;
    while at < lines.len() && !ends_hunk(lines, at) {
        let Some(line) = hunk_line(lines[at], kind) else {
            break;
        };
        body.push(line);
        at += 1;
    }
    // Empty lines at the very end separate the diff from what follows; they are not context.
    while body
        .last()
        .is_some_and(|(_, from_empty_line)| *from_empty_line)
    {
        body.pop();
    }
    let hunk = Hunk {
        header: header.trim_end().to_string(),
        old_start: old_start_of(header),
        lines: body.into_iter().map(|(line, _)| line).collect(),
    };
    (hunk, at)
}

fn ends_hunk(lines: &[&str], at: usize) -> bool {
    let line = lines[at];
    line.starts_with("@@")
        || line.starts_with("```")
        || line.starts_with("~~~")
        || file_header_at(lines, at).is_some()
}

/// One hunk line, and whether it was an empty line (models drop the space of blank context
/// lines, and the `+` of blank lines in a new file).
fn hunk_line(line: &str, kind: SectionKind) -> Option<(HunkLine, bool)> {
    let rest = || line[1..].to_string();
    let parsed = match line.as_bytes().first() {
        None if kind == SectionKind::NewFile => (HunkLine::Add(String::new()), true),
        None => (HunkLine::Context(String::new()), true),
        Some(b' ') => (HunkLine::Context(rest()), false),
        Some(b'+') => (HunkLine::Add(rest()), false),
        Some(b'-') => (HunkLine::Remove(rest()), false),
        Some(b'\\') => (HunkLine::NoNewlineAtEnd, false),
        Some(_) => return None,
    };
    Some(parsed)
}

/// The old start line of `@@ -a,b +c,d @@`, when the header has a usable (non-zero) one.
fn old_start_of(header: &str) -> Option<usize> {
    let numbers = header
        .trim_start_matches('@')
        .trim_start()
        .strip_prefix('-')?;
    let digits: String = numbers.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok().filter(|start| *start > 0)
}

/// The path of a `--- `/`+++ ` header: without a tab-separated timestamp, quotes, or git's
/// `a/` and `b/` prefixes.
fn header_path(raw: &str) -> String {
    let path = raw.split('\t').next().unwrap_or_default().trim();
    let path = path
        .strip_prefix('"')
        .and_then(|p| p.strip_suffix('"'))
        .unwrap_or(path);
    if path == DEV_NULL {
        return path.to_string();
    }
    path.strip_prefix("a/")
        .or_else(|| path.strip_prefix("b/"))
        .unwrap_or(path)
        .to_string()
}

impl Section {
    fn from_header(old: &str, new: &str, header_line: usize) -> Result<Section, ParseError> {
        let (old, new) = (header_path(old), header_path(new));
        let (path, kind) = match (old == DEV_NULL, new == DEV_NULL) {
            (true, true) => {
                return Err(ParseError::new(format!(
                    "udiff: the file header at line {header_line} has `/dev/null` on both sides"
                )));
            }
            (true, false) => (new, SectionKind::NewFile),
            (false, true) => (old, SectionKind::Delete),
            (false, false) => (new, SectionKind::Patch),
        };
        if path.is_empty() {
            return Err(ParseError::new(format!(
                "udiff: the file header at line {header_line} names no path"
            )));
        }
        Ok(Section {
            path,
            kind,
            header_line,
            hunks: Vec::new(),
        })
    }

    fn into_file_edit(self) -> Result<FileEdit, ParseError> {
        let change = match self.kind {
            SectionKind::Delete => Change::Delete,
            SectionKind::NewFile => Change::Write {
                content: new_file_content(&self.hunks),
                base_sha256: None,
            },
            SectionKind::Patch => Change::Patch { hunks: self.hunks },
        };
        Ok(FileEdit {
            path: self.path,
            change,
        })
    }

    /// A deletion says all it needs in its header; every other section needs hunks.
    fn check_has_hunks(&self) -> Result<(), ParseError> {
        if self.hunks.is_empty() && self.kind != SectionKind::Delete {
            return Err(ParseError::new(format!(
                "udiff: the diff for `{}` (header at line {}) has no `@@` hunk under its \
                 `---`/`+++` header",
                self.path, self.header_line
            )));
        }
        Ok(())
    }

    fn check_hunks(&self) -> Result<(), ParseError> {
        if self.kind == SectionKind::Delete {
            return Ok(());
        }
        for (index, hunk) in self.hunks.iter().enumerate() {
            let name = hunk_name(index, hunk);
            let changes = hunk
                .lines
                .iter()
                .any(|line| matches!(line, HunkLine::Add(_) | HunkLine::Remove(_)));
            if !changes {
                return Err(ParseError::new(format!(
                    "udiff: {name} of `{}` changes nothing: it has no `+` or `-` lines",
                    self.path
                )));
            }
            let only_adds = hunk
                .lines
                .iter()
                .all(|line| matches!(line, HunkLine::Add(_) | HunkLine::NoNewlineAtEnd));
            if self.kind == SectionKind::NewFile && !only_adds {
                return Err(ParseError::new(format!(
                    "udiff: `{}` is a new file (`--- /dev/null`), but {name} has context or \
                     removed lines; a new file's hunks can only add lines",
                    self.path
                )));
            }
        }
        Ok(())
    }
}

/// Several sections for one file become one, their hunks in order.
fn merge_sections(sections: Vec<Section>) -> Result<Vec<Section>, ParseError> {
    let mut merged: Vec<Section> = Vec::new();
    for section in sections {
        section.check_has_hunks()?;
        match merged.iter_mut().find(|seen| seen.path == section.path) {
            Some(seen) if seen.kind == SectionKind::Patch && section.kind == SectionKind::Patch => {
                seen.hunks.extend(section.hunks);
            }
            Some(seen) => {
                return Err(ParseError::new(format!(
                    "udiff: `{}` has two diff sections that cannot be combined: {} (header at \
                     line {}) and {} (header at line {})",
                    section.path,
                    seen.kind.describe(),
                    seen.header_line,
                    section.kind.describe(),
                    section.header_line
                )));
            }
            None => merged.push(section),
        }
    }
    for section in &merged {
        section.check_hunks()?;
    }
    Ok(merged)
}

fn new_file_content(hunks: &[Hunk]) -> String {
    let mut lines: Vec<&str> = Vec::new();
    let mut ends_without_newline = false;
    for line in hunks.iter().flat_map(|hunk| &hunk.lines) {
        match line {
            HunkLine::Add(text) => {
                lines.push(text);
                ends_without_newline = false;
            }
            HunkLine::NoNewlineAtEnd => ends_without_newline = true,
            HunkLine::Context(_) | HunkLine::Remove(_) => {}
        }
    }
    let mut content = lines.join("\n");
    if !ends_without_newline {
        content.push('\n');
    }
    content
}
