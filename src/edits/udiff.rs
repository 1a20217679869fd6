//! Unified diffs as models write them: exact ones, and sloppy ones (wrong or missing `@@`
//! numbers, lost spaces on blank context lines, whitespace drift, CRLF) applied only when certain.

use std::collections::HashMap;

use super::{Change, FileEdit, Mismatch, ParseError};

#[cfg(test)]
mod tests;

/// One `@@` hunk: the header as written and its lines in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// The `@@ … @@` line as the model wrote it (used to name the hunk in errors).
    pub header: String,
    /// The old-file start line from the header, if it had a usable one (1-based).
    pub old_start: Option<usize>,
    pub lines: Vec<HunkLine>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HunkLine {
    Context(String),
    Remove(String),
    Add(String),
    /// `\ No newline at end of file`: the line before it ends its side of the diff (old for a
    /// removed line, new for an added one, both for a context line) without a newline.
    NoNewlineAtEnd,
}

// ------------------------------------------------------------------------------------------
// Parsing
// ------------------------------------------------------------------------------------------

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

fn hunk_name(index: usize, hunk: &Hunk) -> String {
    if hunk.header.is_empty() {
        format!("hunk {} (no @@ header)", index + 1)
    } else {
        format!("hunk {} ({})", index + 1, hunk.header)
    }
}

// ------------------------------------------------------------------------------------------
// Applying
// ------------------------------------------------------------------------------------------

/// Applies `hunks` in order to `original`, or says which hunk does not fit and why.
pub fn apply(original: &str, hunks: &[Hunk]) -> Result<String, Mismatch> {
    let mut doc = Document::parse(original);
    let mut history = History::default();
    for (index, hunk) in hunks.iter().enumerate() {
        let shape = Shape::of(hunk);
        let stated = hunk.old_start.map(|line| line - 1);
        let placement = locate(&doc, &shape, stated, &history)
            .map_err(|failure| failure.explain(&hunk_name(index, hunk), &doc, &shape))?;
        let replacement = replacement_lines(&doc, &shape, &placement).ok_or_else(|| {
            Mismatch::new(format!(
                "{} fits {} of the file, but its added lines are indented in a way that \
                 cannot be translated to the file's indentation",
                hunk_name(index, hunk),
                line_range(placement.start, placement.end)
            ))
        })?;
        let reaches_end = placement.end == doc.lines.len();
        let added = replacement.len();
        doc.lines
            .splice(placement.start..placement.end, replacement);
        if reaches_end {
            doc.settle_end(shape.ends);
        }
        history.record(placement.start, placement.end - placement.start, added);
    }
    Ok(doc.render())
}

const LF: &str = "\n";
const CRLF: &str = "\r\n";

/// A file's lines with their own endings, so untouched lines come back byte for byte.
struct Document {
    lines: Vec<Line>,
    /// The ending given to new lines: the file's most common one.
    eol: &'static str,
    ends_with_newline: bool,
    /// Whether indented lines mostly start with a tab, for re-indenting when nothing closer says.
    uses_tabs: bool,
}

#[derive(Debug, Clone)]
struct Line {
    text: String,
    eol: &'static str,
}

impl Document {
    fn parse(text: &str) -> Document {
        let mut pieces: Vec<(&str, Option<&'static str>)> = Vec::new();
        for piece in text.split_inclusive('\n') {
            if let Some(line) = piece.strip_suffix(CRLF) {
                pieces.push((line, Some(CRLF)));
            } else if let Some(line) = piece.strip_suffix(LF) {
                pieces.push((line, Some(LF)));
            } else {
                pieces.push((piece, None));
            }
        }
        let crlf = pieces.iter().filter(|(_, eol)| *eol == Some(CRLF)).count();
        let lf = pieces.iter().filter(|(_, eol)| *eol == Some(LF)).count();
        let eol = if crlf > lf { CRLF } else { LF };
        let ends_with_newline = pieces.last().is_none_or(|(_, eol)| eol.is_some());
        let tab_indented = pieces.iter().filter(|(l, _)| l.starts_with('\t')).count();
        let space_indented = pieces.iter().filter(|(l, _)| l.starts_with(' ')).count();
        let lines = pieces
            .into_iter()
            .map(|(text, line_eol)| Line {
                text: text.to_string(),
                eol: line_eol.unwrap_or(eol),
            })
            .collect();
        Document {
            lines,
            eol,
            ends_with_newline,
            uses_tabs: tab_indented > space_indented,
        }
    }

    /// After a hunk that reached the end of the file: `\ No newline at end of file` decides
    /// the final newline when the diff has one; otherwise the file keeps its own.
    fn settle_end(&mut self, ends: EndMarkers) {
        if ends.new_side {
            self.ends_with_newline = false;
        } else if ends.old_side {
            self.ends_with_newline = true;
        }
    }

    fn render(&self) -> String {
        let mut out = String::new();
        for (index, line) in self.lines.iter().enumerate() {
            out.push_str(&line.text);
            if self.ends_with_newline || index + 1 < self.lines.len() {
                out.push_str(line.eol);
            }
        }
        out
    }
}

/// Where earlier hunks landed, to translate a current line back to the original file's
/// numbering (the numbering of every `@@` header).
#[derive(Default)]
struct History {
    /// `(start, old_len, new_len)` in the coordinates of the content each hunk was applied to.
    applied: Vec<(usize, usize, usize)>,
}

impl History {
    fn record(&mut self, start: usize, old_len: usize, new_len: usize) {
        self.applied.push((start, old_len, new_len));
    }

    /// The original-file index of the current line `index`, or `None` if an earlier hunk wrote it.
    fn original_index(&self, mut index: usize) -> Option<usize> {
        for &(start, old_len, new_len) in self.applied.iter().rev() {
            if index >= start + new_len {
                index = index - new_len + old_len;
            } else if index >= start {
                return None;
            }
        }
        Some(index)
    }
}

/// A hunk seen from the file's side: the lines it expects (context and removed, in order)
/// and the added lines that go in each gap between them.
struct Shape<'h> {
    old: Vec<OldLine<'h>>,
    /// `gaps[g]`: the lines added between old lines `g - 1` and `g` (`old.len() + 1` gaps).
    gaps: Vec<Vec<&'h str>>,
    ends: EndMarkers,
}

#[derive(Debug, Clone, Copy)]
struct OldLine<'h> {
    text: &'h str,
    removed: bool,
}

impl OldLine<'_> {
    fn is_blank(&self) -> bool {
        self.text.trim().is_empty()
    }
}

/// Which sides of the hunk end the file without a newline (`\ No newline at end of file`).
#[derive(Debug, Default, Clone, Copy)]
struct EndMarkers {
    old_side: bool,
    new_side: bool,
}

impl<'h> Shape<'h> {
    fn of(hunk: &'h Hunk) -> Shape<'h> {
        let mut old = Vec::new();
        let mut gaps: Vec<Vec<&str>> = vec![Vec::new()];
        let mut ends = EndMarkers::default();
        let mut previous: Option<&HunkLine> = None;
        for line in &hunk.lines {
            match line {
                HunkLine::Context(text) | HunkLine::Remove(text) => {
                    let removed = matches!(line, HunkLine::Remove(_));
                    old.push(OldLine { text, removed });
                    gaps.push(Vec::new());
                }
                HunkLine::Add(text) => gaps.last_mut().expect("gaps is never empty").push(text),
                HunkLine::NoNewlineAtEnd => match previous {
                    Some(HunkLine::Context(_)) => {
                        ends.old_side = true;
                        ends.new_side = true;
                    }
                    Some(HunkLine::Remove(_)) => ends.old_side = true,
                    Some(HunkLine::Add(_)) => ends.new_side = true,
                    Some(HunkLine::NoNewlineAtEnd) | None => {}
                },
            }
            previous = Some(line);
        }
        Shape { old, gaps, ends }
    }

    fn has_removals(&self) -> bool {
        self.old.iter().any(|line| line.removed)
    }

    /// How many context lines may be altered or missing before the hunk is refused. Only a
    /// hunk whose removed lines pin it down gets any; a pure addition must fit as written.
    fn fuzz_budget(&self) -> u32 {
        if !self.has_removals() {
            return 0;
        }
        let context = self
            .old
            .iter()
            .filter(|line| !line.removed && !line.is_blank())
            .count() as u32;
        if context < 3 { 0 } else { (context / 4).max(1) }
    }

    /// The old lines a fuzzy placement is anchored on: the first run of removed lines, or for
    /// a pure addition its first non-blank context line.
    fn anchor(&self) -> Option<(usize, usize)> {
        if let Some(first) = self.old.iter().position(|line| line.removed) {
            let len = self.old[first..]
                .iter()
                .take_while(|line| line.removed)
                .count();
            return Some((first, first + len));
        }
        let first = self.old.iter().position(|line| !line.is_blank())?;
        Some((first, first + 1))
    }

    /// Whether an unmatched file line may sit in `gap`: never between two removed lines
    /// (which lines go would be a guess), nor where lines are added between context lines
    /// (whether they go before or after it would be a guess).
    fn may_skip_file_line_at(&self, gap: usize) -> bool {
        let removed_before = gap > 0 && self.old[gap - 1].removed;
        let removed_after = gap < self.old.len() && self.old[gap].removed;
        if removed_before && removed_after {
            return false;
        }
        self.gaps[gap].is_empty() || removed_before || removed_after
    }
}

/// How old lines line up with the file's lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// Equal up to whitespace.
    Match { old: usize, file: usize },
    /// A context line the file has in another form; the file's form is kept.
    Altered { old: usize, file: usize },
    /// A context line the file does not have.
    MissingInFile { old: usize },
    /// A file line the hunk does not mention; it is kept.
    ExtraInFile { file: usize },
}

/// Where a hunk goes: file lines `start..end`, line by line, and how to indent added lines.
struct Placement {
    start: usize,
    end: usize,
    ops: Vec<Op>,
    indent: Indent,
}

impl Placement {
    fn contiguous(start: usize, len: usize, indent: Indent) -> Placement {
        Placement {
            start,
            end: start + len,
            ops: (0..len)
                .map(|old| Op::Match {
                    old,
                    file: start + old,
                })
                .collect(),
            indent,
        }
    }

    fn from_ops(ops: Vec<Op>, indent: Indent) -> Placement {
        let files = ops.iter().filter_map(|op| match *op {
            Op::Match { file, .. } | Op::Altered { file, .. } | Op::ExtraInFile { file } => {
                Some(file)
            }
            Op::MissingInFile { .. } => None,
        });
        let (start, end) = files.fold((usize::MAX, 0), |(lo, hi), file| {
            (lo.min(file), hi.max(file + 1))
        });
        Placement {
            start,
            end,
            ops,
            indent,
        }
    }
}

/// Why a hunk could not be placed.
enum Failure {
    /// A pure addition without context lines, in a non-empty file.
    NoContext,
    /// Several equally good places, as `(start, end)` file line ranges.
    Ambiguous(Vec<(usize, usize)>),
    /// It fits only if indentation is ignored, and the indentation does not line up consistently.
    Indentation {
        start: usize,
        end: usize,
    },
    Nowhere,
}

type LineEq = fn(&str, &str) -> bool;

fn same(a: &str, b: &str) -> bool {
    a == b
}

fn same_but_trailing_whitespace(a: &str, b: &str) -> bool {
    a.trim_end() == b.trim_end()
}

fn same_but_whitespace(a: &str, b: &str) -> bool {
    a.split_whitespace().eq(b.split_whitespace())
}

/// The file's lines and a hunk's old lines as numbers, equal exactly where
/// [`same_but_whitespace`] holds: the fuzzy search compares each pair many times over.
struct WhitespaceKeys {
    doc: Vec<u32>,
    old: Vec<u32>,
}

impl WhitespaceKeys {
    fn of(doc: &Document, shape: &Shape) -> Self {
        let mut ids: HashMap<String, u32> = HashMap::new();
        let mut key = |text: &str| {
            let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
            let next = u32::try_from(ids.len()).expect("fewer lines than u32::MAX");
            *ids.entry(words).or_insert(next)
        };
        WhitespaceKeys {
            doc: doc.lines.iter().map(|line| key(&line.text)).collect(),
            old: shape.old.iter().map(|line| key(line.text)).collect(),
        }
    }
}

/// Finds the one place a hunk fits, trying strict readings before lenient ones; a reading
/// that fits several places refuses rather than falling through to a looser one.
fn locate(
    doc: &Document,
    shape: &Shape,
    stated: Option<usize>,
    history: &History,
) -> Result<Placement, Failure> {
    if shape.old.is_empty() {
        return if doc.lines.is_empty() {
            Ok(Placement::contiguous(0, 0, Indent::Same))
        } else {
            Err(Failure::NoContext)
        };
    }
    let len = shape.old.len();
    let strict: [LineEq; 2] = [same, same_but_trailing_whitespace];
    for eq in strict {
        let starts = contiguous_matches(doc, shape, eq);
        match starts.as_slice() {
            [] => continue,
            [start] => return Ok(Placement::contiguous(*start, len, Indent::Same)),
            many => {
                // git apply's rule: line numbers only break a tie, and only for a fit at
                // exactly the stated line (trailing whitespace aside, which moves nothing).
                let at_stated = many
                    .iter()
                    .find(|start| stated.is_some() && history.original_index(**start) == stated);
                if let Some(start) = at_stated {
                    return Ok(Placement::contiguous(*start, len, Indent::Same));
                }
                return Err(ambiguous(many.iter().map(|s| (*s, s + len))));
            }
        }
    }
    let mut misindented = None;
    let loose: Vec<Placement> = contiguous_matches(doc, shape, same_but_whitespace)
        .into_iter()
        .filter_map(|start| {
            let ops = Placement::contiguous(start, len, Indent::Same).ops;
            match fit_indentation(doc, shape, &ops) {
                Some((indent, 0)) => Some(Placement::contiguous(start, len, indent)),
                _ => {
                    misindented.get_or_insert((start, start + len));
                    None
                }
            }
        })
        .collect();
    if let Some(found) = pick_one(loose) {
        return found;
    }
    fuzzy_locate(doc, shape).map_err(|failure| match (failure, misindented) {
        (Failure::Nowhere, Some((start, end))) => Failure::Indentation { start, end },
        (failure, _) => failure,
    })
}

fn ambiguous(ranges: impl Iterator<Item = (usize, usize)>) -> Failure {
    Failure::Ambiguous(ranges.collect())
}

fn pick_one(mut candidates: Vec<Placement>) -> Option<Result<Placement, Failure>> {
    match candidates.len() {
        0 => None,
        1 => candidates.pop().map(Ok),
        _ => Some(Err(ambiguous(candidates.iter().map(|p| (p.start, p.end))))),
    }
}

fn contiguous_matches(doc: &Document, shape: &Shape, eq: LineEq) -> Vec<usize> {
    let len = shape.old.len();
    if len > doc.lines.len() {
        return Vec::new();
    }
    (0..=doc.lines.len() - len)
        .filter(|&start| {
            shape
                .old
                .iter()
                .zip(&doc.lines[start..start + len])
                .all(|(old, line)| eq(old.text, &line.text))
        })
        .collect()
}

/// Places a hunk whose lines do not appear as one block: anchored on its removed lines (or
/// first context line), the rest aligned around them allowing blank lines to be missing or
/// extra and, within the fuzz budget, context lines to be altered or missing.
fn fuzzy_locate(doc: &Document, shape: &Shape) -> Result<Placement, Failure> {
    let Some((anchor_start, anchor_end)) = shape.anchor() else {
        return Err(Failure::Nowhere);
    };
    let keys = WhitespaceKeys::of(doc, shape);
    let anchor = &keys.old[anchor_start..anchor_end];
    let anchor_len = anchor.len();
    let anchored_positions: Vec<usize> = (0..(doc.lines.len() + 1).saturating_sub(anchor_len))
        .filter(|&position| anchor == &keys.doc[position..position + anchor_len])
        .collect();
    // Removed lines found in exactly one place pin the hunk down by themselves: one altered
    // context line around them cannot move it, however little context the hunk has.
    let budget = match (anchored_positions.len(), shape.has_removals()) {
        (1, true) => shape.fuzz_budget().max(1),
        _ => shape.fuzz_budget(),
    };
    let mut exact_fits = Vec::new();
    let mut close_fits = Vec::new();
    let mut misindented = None;
    for position in anchored_positions {
        let Some((mismatches, ops)) = align_around(
            doc,
            shape,
            &keys,
            (anchor_start, anchor_end),
            position,
            budget,
        ) else {
            continue;
        };
        if !additions_are_pinned(shape, &ops) {
            continue;
        }
        let Some((indent, misfits)) = fit_indentation(doc, shape, &ops) else {
            let unplaced = Placement::from_ops(ops, Indent::Same);
            misindented.get_or_insert((unplaced.start, unplaced.end));
            continue;
        };
        let cost = mismatches + misfits;
        if cost > budget {
            continue;
        }
        let placement = Placement::from_ops(ops, indent);
        if cost == 0 {
            exact_fits.push(placement);
        } else {
            close_fits.push(placement);
        }
    }
    let nowhere = match misindented {
        Some((start, end)) => Failure::Indentation { start, end },
        None => Failure::Nowhere,
    };
    pick_one(exact_fits)
        .or_else(|| pick_one(close_fits))
        .unwrap_or(Err(nowhere))
}

/// Lines added between context lines go between the file lines those context lines matched;
/// next to an altered or missing context line, that place would be a guess.
fn additions_are_pinned(shape: &Shape, ops: &[Op]) -> bool {
    #[derive(Clone, Copy, PartialEq)]
    enum Fate {
        Matched,
        /// A blank line the file does not have: it says nothing about the place.
        Transparent,
        Unsure,
    }
    let mut fates = vec![Fate::Unsure; shape.old.len()];
    for op in ops {
        match *op {
            Op::Match { old, .. } => fates[old] = Fate::Matched,
            Op::MissingInFile { old } if shape.old[old].is_blank() => {
                fates[old] = Fate::Transparent;
            }
            Op::Altered { .. } | Op::MissingInFile { .. } | Op::ExtraInFile { .. } => {}
        }
    }
    let settled = |fate: Option<&Fate>| fate.is_none_or(|f| *f == Fate::Matched);
    (0..shape.gaps.len())
        .filter(|&gap| !shape.gaps[gap].is_empty())
        .filter(|&gap| {
            let removed_before = gap > 0 && shape.old[gap - 1].removed;
            let removed_after = gap < shape.old.len() && shape.old[gap].removed;
            !removed_before && !removed_after
        })
        .all(|gap| {
            let before = fates[..gap].iter().rev().find(|f| **f != Fate::Transparent);
            let after = fates[gap..].iter().find(|f| **f != Fate::Transparent);
            settled(before) && settled(after)
        })
}

#[cfg(test)]
thread_local! {
    /// How many alignments the fuzzy search ran, for the stories about its shortcuts.
    static ALIGNMENTS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Aligns the old lines before the anchor (backwards) and after it (forwards) with the file
/// around `position`; returns the number of mismatches and every line's fate, in order. None
/// when no alignment fits the budget, found by [`may_fit`] first where it can tell.
fn align_around(
    doc: &Document,
    shape: &Shape,
    keys: &WhitespaceKeys,
    (anchor_start, anchor_end): (usize, usize),
    position: usize,
    budget: u32,
) -> Option<(u32, Vec<Op>)> {
    if !may_fit(
        doc,
        shape,
        keys,
        (anchor_start, anchor_end),
        position,
        budget,
    ) {
        return None;
    }
    #[cfg(test)]
    ALIGNMENTS.with(|count| count.set(count.get() + 1));
    let before_olds: Vec<usize> = (0..anchor_start).rev().collect();
    let before_window = window_len(before_olds.len(), position);
    let before_files: Vec<usize> = (position - before_window..position).rev().collect();
    let (before_cost, mut before_ops) = align(
        doc,
        shape,
        keys,
        &before_olds,
        &before_files,
        |step| anchor_start - step,
        budget,
    )?;
    let after_olds: Vec<usize> = (anchor_end..shape.old.len()).collect();
    let after_start = position + (anchor_end - anchor_start);
    let after_window = window_len(after_olds.len(), doc.lines.len() - after_start);
    let after_files: Vec<usize> = (after_start..after_start + after_window).collect();
    let (after_cost, after_ops) = align(
        doc,
        shape,
        keys,
        &after_olds,
        &after_files,
        |step| anchor_end + step,
        budget - before_cost.mismatches,
    )?;
    before_ops.reverse();
    let anchor_ops = (anchor_start..anchor_end).map(|old| Op::Match {
        old,
        file: position + old - anchor_start,
    });
    let ops = before_ops
        .into_iter()
        .chain(anchor_ops)
        .chain(after_ops)
        .collect();
    Some((before_cost.mismatches + after_cost.mismatches, ops))
}

/// Whether the lines within reach of `position` hold enough of the hunk's old lines for an
/// alignment within `budget` (every removed line, all but `budget` of the other non-blank
/// ones), order aside: a test linear in the hunk and its window, where an alignment is their
/// product, so a common anchor (a blank or a lone brace) does not make a search quadratic.
fn may_fit(
    doc: &Document,
    shape: &Shape,
    keys: &WhitespaceKeys,
    (anchor_start, anchor_end): (usize, usize),
    position: usize,
    budget: u32,
) -> bool {
    let before = position - window_len(anchor_start, position)..position;
    let after_start = position + (anchor_end - anchor_start);
    let after_len = window_len(shape.old.len() - anchor_end, doc.lines.len() - after_start);
    let mut counts: HashMap<u32, usize> = HashMap::new();
    for file in before.chain(after_start..after_start + after_len) {
        *counts.entry(keys.doc[file]).or_default() += 1;
    }
    let mut unmatched = 0;
    for index in (0..anchor_start).chain(anchor_end..shape.old.len()) {
        let old = shape.old[index];
        if old.is_blank() {
            continue;
        }
        match counts.get_mut(&keys.old[index]) {
            Some(left) if *left > 0 => *left -= 1,
            _ if old.removed => return false,
            _ => unmatched += 1,
        }
    }
    unmatched <= budget
}

/// How far from the anchor an alignment may reach: every old line plus room for blank
/// lines the hunk left out.
fn window_len(old_lines: usize, available: usize) -> usize {
    (old_lines * 2 + 16).min(available)
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Cost {
    mismatches: u32,
    /// Lines skipped on either side: fewer is the more literal reading.
    skips: u32,
}

impl Cost {
    fn plus(self, mismatch: bool, skip: bool) -> Cost {
        Cost {
            mismatches: self.mismatches + u32::from(mismatch),
            skips: self.skips + u32::from(skip),
        }
    }
}

/// Edit-distance alignment of `olds` (old line indices, in walking order) against `files`
/// (file line indices, same order), starting at both first elements and ending anywhere in
/// the file once every old line is placed. Removed lines must match; `gap_of(i)` names the
/// gap a file line skipped before the `i`-th old line falls into.
fn align(
    doc: &Document,
    shape: &Shape,
    keys: &WhitespaceKeys,
    olds: &[usize],
    files: &[usize],
    gap_of: impl Fn(usize) -> usize,
    budget: u32,
) -> Option<(Cost, Vec<Op>)> {
    let (rows, cols) = (olds.len() + 1, files.len() + 1);
    let mut table: Vec<Option<(Cost, Op)>> = vec![None; rows * cols];
    // The start cell's op is never read: walking back stops there.
    table[0] = Some((Cost::default(), Op::MissingInFile { old: usize::MAX }));
    let cell = |table: &Vec<Option<(Cost, Op)>>, i: usize, j: usize| table[i * cols + j];
    for i in 0..rows {
        for j in 0..cols {
            if i == 0 && j == 0 {
                continue;
            }
            let mut best: Option<(Cost, Op)> = None;
            let mut consider = |from: Option<(Cost, Op)>, mismatch: bool, skip: bool, op: Op| {
                if let Some((cost, _)) = from {
                    let cost = cost.plus(mismatch, skip);
                    if cost.mismatches <= budget && best.is_none_or(|(b, _)| cost < b) {
                        best = Some((cost, op));
                    }
                }
            };
            if i > 0 {
                let index = olds[i - 1];
                let old = shape.old[index];
                if j > 0 {
                    let file = files[j - 1];
                    let from = cell(&table, i - 1, j - 1);
                    if keys.old[index] == keys.doc[file] {
                        consider(from, false, false, Op::Match { old: index, file });
                    } else if !old.removed {
                        consider(from, true, false, Op::Altered { old: index, file });
                    }
                }
                if !old.removed {
                    let op = Op::MissingInFile { old: index };
                    consider(cell(&table, i - 1, j), !old.is_blank(), true, op);
                }
            }
            if j > 0 && i < olds.len() && shape.may_skip_file_line_at(gap_of(i)) {
                let file = files[j - 1];
                let blank = doc.lines[file].text.trim().is_empty();
                let op = Op::ExtraInFile { file };
                consider(cell(&table, i, j - 1), !blank, true, op);
            }
            table[i * cols + j] = best;
        }
    }
    let (end, (cost, _)) = (0..cols)
        .filter_map(|j| cell(&table, rows - 1, j).map(|c| (j, c)))
        .min_by_key(|(_, (cost, _))| *cost)?;
    let mut ops = Vec::new();
    let (mut i, mut j) = (rows - 1, end);
    while i > 0 || j > 0 {
        let (_, op) = cell(&table, i, j).expect("every reached cell has a path back");
        ops.push(op);
        match op {
            Op::Match { .. } | Op::Altered { .. } => (i, j) = (i - 1, j - 1),
            Op::MissingInFile { .. } => i -= 1,
            Op::ExtraInFile { .. } => j -= 1,
        }
    }
    ops.reverse();
    Some((cost, ops))
}

/// How the hunk's indentation maps onto the file's, from the lines that matched; and how
/// many context lines disagree with that mapping (they count as altered).
fn fit_indentation(doc: &Document, shape: &Shape, ops: &[Op]) -> Option<(Indent, u32)> {
    let pairs: Vec<(bool, &str, &str)> = ops
        .iter()
        .filter_map(|op| match *op {
            Op::Match { old, file } if !shape.old[old].is_blank() => Some((
                shape.old[old].removed,
                indentation(shape.old[old].text),
                indentation(&doc.lines[file].text),
            )),
            _ => None,
        })
        .collect();
    let all: Vec<(&str, &str)> = pairs.iter().map(|&(_, d, f)| (d, f)).collect();
    if let Some(indent) = Indent::infer(&all, doc.uses_tabs) {
        return Some((indent, 0));
    }
    let removed: Vec<(&str, &str)> = pairs
        .iter()
        .filter(|(removed, _, _)| *removed)
        .map(|&(_, d, f)| (d, f))
        .collect();
    if removed.is_empty() {
        return None;
    }
    let indent = Indent::infer(&removed, doc.uses_tabs)?;
    let misfits = all.iter().filter(|(d, f)| !indent.fits(d, f)).count() as u32;
    Some((indent, misfits))
}

fn indentation(line: &str) -> &str {
    let rest = line.trim_start_matches([' ', '\t']);
    &line[..line.len() - rest.len()]
}

/// How to turn the hunk's indentation into the file's for the lines it adds.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Indent {
    Same,
    /// The file is indented by this much more than the hunk.
    Prepend(String),
    /// The hunk is indented by this much more than the file.
    Strip(String),
    /// Equal up to a constant shift in columns, with tabs `tab` columns wide; new lines are
    /// written in the file's style.
    Columns {
        tab: usize,
        shift: isize,
        tabs: bool,
    },
}

impl Indent {
    /// The one mapping consistent with every `(hunk indent, file indent)` pair, preferring
    /// those that keep the hunk's own characters.
    fn infer(pairs: &[(&str, &str)], doc_uses_tabs: bool) -> Option<Indent> {
        let Some(&(diff0, file0)) = pairs.first() else {
            return Some(Indent::Same);
        };
        let candidates = [
            Some(Indent::Same),
            file0
                .strip_suffix(diff0)
                .map(|extra| Indent::Prepend(extra.to_string())),
            diff0
                .strip_suffix(file0)
                .map(|extra| Indent::Strip(extra.to_string())),
        ];
        if let Some(found) = candidates
            .into_iter()
            .flatten()
            .find(|indent| pairs.iter().all(|(d, f)| indent.fits(d, f)))
        {
            return Some(found);
        }
        let tabs = file_style_is_tabs(pairs).unwrap_or(doc_uses_tabs);
        [4, 8, 2].into_iter().find_map(|tab| {
            let shift = columns(file0, tab) as isize - columns(diff0, tab) as isize;
            let indent = Indent::Columns { tab, shift, tabs };
            pairs
                .iter()
                .all(|(d, f)| indent.fits(d, f))
                .then_some(indent)
        })
    }

    fn fits(&self, diff: &str, file: &str) -> bool {
        match self {
            Indent::Same => diff == file,
            Indent::Prepend(extra) => file.strip_prefix(extra.as_str()) == Some(diff),
            Indent::Strip(extra) => diff.strip_prefix(extra.as_str()) == Some(file),
            Indent::Columns { tab, shift, .. } => {
                columns(file, *tab) as isize == columns(diff, *tab) as isize + shift
            }
        }
    }

    /// The added line in the file's indentation, or `None` if that is not certain.
    fn apply(&self, line: &str) -> Option<String> {
        if line.trim().is_empty() {
            return Some(line.to_string());
        }
        let indent = indentation(line);
        let body = &line[indent.len()..];
        match self {
            Indent::Same => Some(line.to_string()),
            Indent::Prepend(extra) => Some(format!("{extra}{line}")),
            Indent::Strip(extra) => indent
                .strip_prefix(extra.as_str())
                .map(|rest| format!("{rest}{body}")),
            Indent::Columns { tab, shift, tabs } => {
                let width = usize::try_from(columns(indent, *tab) as isize + shift).ok()?;
                let new_indent = if *tabs {
                    format!("{}{}", "\t".repeat(width / tab), " ".repeat(width % tab))
                } else {
                    " ".repeat(width)
                };
                Some(format!("{new_indent}{body}"))
            }
        }
    }
}

/// Whether the matched file lines are indented with tabs (`Some(true)`), spaces, or unknown.
fn file_style_is_tabs(pairs: &[(&str, &str)]) -> Option<bool> {
    let indented: Vec<&str> = pairs
        .iter()
        .map(|(_, f)| *f)
        .filter(|f| !f.is_empty())
        .collect();
    if indented.is_empty() {
        None
    } else if indented.iter().all(|f| f.starts_with('\t')) {
        Some(true)
    } else if indented.iter().all(|f| !f.contains('\t')) {
        Some(false)
    } else {
        None
    }
}

fn columns(indent: &str, tab: usize) -> usize {
    indent.chars().fold(0, |col, c| match c {
        '\t' => (col / tab + 1) * tab,
        _ => col + 1,
    })
}

/// The lines that replace `placement.start..placement.end`: kept context and extra file lines
/// as the file has them, added lines re-indented and with the file's line ending.
fn replacement_lines(doc: &Document, shape: &Shape, placement: &Placement) -> Option<Vec<Line>> {
    let mut out = Vec::new();
    let mut emitted = vec![false; shape.gaps.len()];
    let mut emit_gap = |gap: usize, out: &mut Vec<Line>| -> Option<()> {
        if !std::mem::replace(&mut emitted[gap], true) {
            for added in &shape.gaps[gap] {
                out.push(Line {
                    text: placement.indent.apply(added)?,
                    eol: doc.eol,
                });
            }
        }
        Some(())
    };
    let mut next_old = 0;
    for op in &placement.ops {
        match *op {
            Op::Match { old, file } | Op::Altered { old, file } => {
                emit_gap(old, &mut out)?;
                if !shape.old[old].removed {
                    out.push(doc.lines[file].clone());
                }
                next_old = old + 1;
            }
            Op::MissingInFile { old } => {
                emit_gap(old, &mut out)?;
                next_old = old + 1;
            }
            Op::ExtraInFile { file } => {
                // Lines added right after a removed line replace it in place.
                if next_old > 0 && shape.old[next_old - 1].removed {
                    emit_gap(next_old, &mut out)?;
                }
                out.push(doc.lines[file].clone());
            }
        }
    }
    emit_gap(shape.old.len(), &mut out)?;
    Some(out)
}

// ------------------------------------------------------------------------------------------
// Explaining refusals
// ------------------------------------------------------------------------------------------

impl Failure {
    fn explain(self, name: &str, doc: &Document, shape: &Shape) -> Mismatch {
        let message = match self {
            Failure::NoContext => format!(
                "{name} only adds lines and has no unchanged lines around them, so where they \
                 go is uncertain; include a few unchanged lines before and after the addition"
            ),
            Failure::Ambiguous(ranges) => {
                let places: Vec<String> = ranges
                    .iter()
                    .map(|(start, end)| line_range(*start, *end))
                    .collect();
                format!(
                    "{name} fits {} places in the file ({}) and nothing singles one out; \
                     refusing to guess: include more unchanged lines around the change",
                    ranges.len(),
                    places.join(", ")
                )
            }
            Failure::Indentation { start, end } => format!(
                "{name} fits {} only if indentation is ignored, and its indentation differs \
                 from the file's inconsistently, so the result would be a guess",
                line_range(start, end)
            ),
            Failure::Nowhere => match missing_removed_line(doc, shape) {
                Some(text) => format!(
                    "{name} removes a line that is not in the file: `{}`; {}",
                    text.trim(),
                    closest_lines(doc, shape)
                ),
                None => format!(
                    "{name} matches nowhere in the file; {}",
                    closest_lines(doc, shape)
                ),
            },
        };
        Mismatch::new(message)
    }
}

fn missing_removed_line<'h>(doc: &Document, shape: &Shape<'h>) -> Option<&'h str> {
    shape
        .old
        .iter()
        .filter(|old| old.removed && !old.is_blank())
        .find(|old| {
            !doc.lines
                .iter()
                .any(|line| same_but_whitespace(old.text, &line.text))
        })
        .map(|old| old.text)
}

/// The file lines most like the hunk's old lines, numbered, for the refusal message.
fn closest_lines(doc: &Document, shape: &Shape) -> String {
    if doc.lines.is_empty() {
        return "the file is empty".to_string();
    }
    let old: Vec<&str> = shape.old.iter().map(|o| o.text).collect();
    let file: Vec<&str> = doc.lines.iter().map(|l| l.text.as_str()).collect();
    let (start, len) = super::closest::closest_window(&file, &old);
    let shown: Vec<String> = (start..start + len)
        .map(|i| format!("{:>5} | {}", i + 1, doc.lines[i].text))
        .collect();
    format!(
        "closest real {}:\n{}",
        line_range(start, start + len),
        shown.join("\n")
    )
}

/// `lines 14-16`, or `line 14`, for the 0-based half-open range `start..end`.
fn line_range(start: usize, end: usize) -> String {
    if end <= start + 1 {
        format!("line {}", start + 1)
    } else {
        format!("lines {}-{}", start + 1, end)
    }
}
