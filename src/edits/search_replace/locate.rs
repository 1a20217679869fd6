//! Finds the one place a block's SEARCH text sits in a file and swaps in its REPLACE text,
//! tolerating only the slips whose intent is certain; anything else becomes a [`Refusal`].

use super::Block;
use super::closest;

/// A file's line: its text and its own terminator (`""` on a last line without one).
#[derive(Debug, Clone, Copy)]
struct Line<'a> {
    body: &'a str,
    ending: &'a str,
}

fn split_lines(text: &str) -> Vec<Line<'_>> {
    text.split_inclusive('\n')
        .map(|raw| {
            let body = raw.strip_suffix('\n').unwrap_or(raw);
            let body_without_cr = body.strip_suffix('\r').unwrap_or(body);
            Line {
                body: body_without_cr,
                ending: &raw[body_without_cr.len()..],
            }
        })
        .collect()
}

fn bodies(text: &str) -> Vec<&str> {
    split_lines(text)
        .into_iter()
        .map(|line| line.body)
        .collect()
}

fn is_blank(line: &str) -> bool {
    line.trim().is_empty()
}

/// The slips a SEARCH text may contain and still be found, mildest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tolerance {
    Exact,
    TrailingWhitespace,
    Indentation,
}

impl Tolerance {
    const LADDER: [Tolerance; 3] = [
        Tolerance::Exact,
        Tolerance::TrailingWhitespace,
        Tolerance::Indentation,
    ];

    fn phrase(self) -> &'static str {
        match self {
            Tolerance::Exact => "",
            Tolerance::TrailingWhitespace => " once trailing whitespace is ignored",
            Tolerance::Indentation => " once indentation is ignored",
        }
    }
}

/// Why a block could not be applied; turned into words once the block's name is known.
#[derive(Debug)]
pub(super) enum Refusal {
    NotFound,
    Ambiguous {
        starts: Vec<usize>,
        tolerance: Tolerance,
        without_blank_edges: bool,
    },
}

impl Refusal {
    /// The rest of the sentence after the block's name, for the file content it was tried on.
    pub(super) fn explain(&self, content: &str, block: &Block) -> String {
        match self {
            Refusal::NotFound => not_found(content, block),
            Refusal::Ambiguous {
                starts,
                tolerance,
                without_blank_edges,
            } => {
                let places: Vec<String> = starts.iter().map(|s| (s + 1).to_string()).collect();
                let edges = if *without_blank_edges {
                    " without its opening and closing blank lines"
                } else {
                    ""
                };
                format!(
                    "matches {} places{edges}{} (starting at lines {}); include more \
                     surrounding lines so that it matches exactly one",
                    starts.len(),
                    tolerance.phrase(),
                    places.join(", ")
                )
            }
        }
    }
}

fn not_found(content: &str, block: &Block) -> String {
    let file = bodies(content);
    let mut message = "matches no lines of the file, even ignoring trailing whitespace, \
                       indentation and opening or closing blank lines"
        .to_string();
    message.push_str(&closest::describe(&file, &bodies(&block.search)));
    if let Some(line) = already_present(&file, &bodies(&block.replace)) {
        message.push_str(&format!(
            "\nIts REPLACE text is already in the file at line {}: was this block applied before?",
            line + 1
        ));
    }
    message
}

/// Where the REPLACE text already sits verbatim, if it does (a block sent twice).
fn already_present(file: &[&str], replace: &[&str]) -> Option<usize> {
    if replace.iter().all(|line| is_blank(line)) || replace.len() > file.len() {
        return None;
    }
    (0..=file.len() - replace.len()).find(|&start| file[start..start + replace.len()] == *replace)
}

/// Applies one block to `content`.
pub(super) fn apply_block(content: &str, block: &Block) -> Result<String, Refusal> {
    if is_blank(&block.search) {
        return Ok(create_or_append(content, &block.replace));
    }
    let file = split_lines(content);
    let eol = dominant_ending(&file);
    let search = bodies(&block.search);
    let replace = bodies(&block.replace);
    if let Some(found) = locate(&file, &search, &replace, false)? {
        return Ok(splice(&file, found, eol));
    }
    let (trimmed, replace) = without_blank_edges(&search, &replace);
    if trimmed.len() == search.len() {
        return Err(Refusal::NotFound);
    }
    match locate(&file, trimmed, replace, true)? {
        Some(found) => Ok(splice(&file, found, eol)),
        None => Err(Refusal::NotFound),
    }
}

/// An empty SEARCH creates the file (content verbatim) or, as aider does, appends to it.
fn create_or_append(content: &str, addition: &str) -> String {
    if content.is_empty() {
        return addition.to_string();
    }
    let file = split_lines(content);
    let eol = dominant_ending(&file);
    let mut result = content.to_string();
    if !content.ends_with('\n') {
        result.push_str(eol);
    }
    for line in bodies(addition) {
        result.push_str(line);
        result.push_str(eol);
    }
    result
}

/// The terminator most of the file's lines use (`\n` when it has none).
fn dominant_ending(file: &[Line]) -> &'static str {
    let crlf = file.iter().filter(|line| line.ending == "\r\n").count();
    let lf = file.iter().filter(|line| line.ending == "\n").count();
    if crlf > lf { "\r\n" } else { "\n" }
}

/// Blank lines opening or closing the SEARCH text are dropped, and the same number of blank
/// lines from the REPLACE text, which framed the change the same way.
fn without_blank_edges<'a, 'b>(
    search: &'a [&'b str],
    replace: &'a [&'b str],
) -> (&'a [&'b str], &'a [&'b str]) {
    let (search, leading, trailing) = trim_blank_edges(search, usize::MAX, usize::MAX);
    let (replace, _, _) = trim_blank_edges(replace, leading, trailing);
    (search, replace)
}

/// `lines` without up to `max_leading` opening and `max_trailing` closing blank lines, and
/// how many of each were dropped.
fn trim_blank_edges<'a, 'b>(
    lines: &'a [&'b str],
    max_leading: usize,
    max_trailing: usize,
) -> (&'a [&'b str], usize, usize) {
    let leading = lines
        .iter()
        .take(max_leading)
        .take_while(|l| is_blank(l))
        .count();
    let rest = &lines[leading..];
    let trailing = rest
        .iter()
        .rev()
        .take(max_trailing)
        .take_while(|l| is_blank(l))
        .count();
    (&rest[..rest.len() - trailing], leading, trailing)
}

/// Where the SEARCH lines sit and the lines to put there instead.
struct Found {
    start: usize,
    len: usize,
    replacement: Vec<String>,
}

/// The single window of `file` the search fits at the mildest tolerance that fits anywhere.
fn locate(
    file: &[Line],
    search: &[&str],
    replace: &[&str],
    without_blank_edges: bool,
) -> Result<Option<Found>, Refusal> {
    if search.is_empty() || search.len() > file.len() {
        return Ok(None);
    }
    for tolerance in Tolerance::LADDER {
        let matcher = Matcher::new(tolerance, search, replace);
        let mut fits = (0..=file.len() - search.len())
            .filter_map(|start| {
                let window = &file[start..start + search.len()];
                matcher.fit(window).map(|replacement| (start, replacement))
            })
            .collect::<Vec<_>>();
        match fits.len() {
            0 => continue,
            1 => {
                let (start, replacement) = fits.remove(0);
                return Ok(Some(Found {
                    start,
                    len: search.len(),
                    replacement,
                }));
            }
            _ => {
                return Err(Refusal::Ambiguous {
                    starts: fits.into_iter().map(|(start, _)| start).collect(),
                    tolerance,
                    without_blank_edges,
                });
            }
        }
    }
    Ok(None)
}

/// Compares SEARCH lines with a window of the file at one tolerance.
struct Matcher<'a> {
    tolerance: Tolerance,
    search: Vec<&'a str>,
    replace: Vec<&'a str>,
}

impl<'a> Matcher<'a> {
    fn new(tolerance: Tolerance, search: &[&'a str], replace: &[&'a str]) -> Self {
        if tolerance != Tolerance::Indentation {
            return Matcher {
                tolerance,
                search: search.to_vec(),
                replace: replace.to_vec(),
            };
        }
        // Both texts lose the indentation they share, so a search indented too deeply can
        // still be found; the file's own indentation is then given back to the REPLACE text.
        let shared = shared_indent(search.iter().chain(replace));
        let outdent = |line: &&'a str| line.strip_prefix(shared).unwrap_or(line);
        Matcher {
            tolerance,
            search: search.iter().map(outdent).collect(),
            replace: replace.iter().map(outdent).collect(),
        }
    }

    /// The replacement lines if `window` holds the search text at this tolerance.
    fn fit(&self, window: &[Line]) -> Option<Vec<String>> {
        let pairs = || window.iter().map(|line| line.body).zip(&self.search);
        let verbatim = || self.replace.iter().map(|line| line.to_string()).collect();
        match self.tolerance {
            Tolerance::Exact => pairs().all(|(have, want)| have == *want).then(verbatim),
            Tolerance::TrailingWhitespace => pairs()
                .all(|(have, want)| have.trim_end() == want.trim_end())
                .then(verbatim),
            Tolerance::Indentation => {
                let offset = uniform_offset(pairs())?;
                Some(
                    self.replace
                        .iter()
                        .map(|line| indent(line, offset))
                        .collect(),
                )
            }
        }
    }
}

/// The longest run of leading whitespace every non-blank line shares.
fn shared_indent<'a>(lines: impl Iterator<Item = &'a &'a str>) -> &'a str {
    let mut shared: Option<&str> = None;
    for line in lines.filter(|line| !is_blank(line)) {
        let indent = &line[..line.len() - line.trim_start().len()];
        shared = Some(match shared {
            None => indent,
            Some(so_far) => common_prefix(so_far, indent),
        });
    }
    shared.unwrap_or("")
}

fn common_prefix<'a>(a: &'a str, b: &str) -> &'a str {
    let len = a
        .char_indices()
        .zip(b.chars())
        .find(|((_, x), y)| x != y)
        .map_or(a.len().min(b.len()), |((at, _), _)| at);
    &a[..len]
}

/// The whitespace the file puts before every non-blank search line, if it is the same for all
/// of them and the lines otherwise agree (trailing whitespace aside).
fn uniform_offset<'a, 'b>(pairs: impl Iterator<Item = (&'a str, &'b &'b str)>) -> Option<&'a str> {
    let mut offset: Option<&str> = None;
    for (have, want) in pairs {
        let (have, want) = (have.trim_end(), want.trim_end());
        if want.is_empty() {
            if !have.is_empty() {
                return None;
            }
            continue;
        }
        let prefix = have.strip_suffix(want)?;
        if !prefix.trim_start().is_empty() || offset.is_some_and(|seen| seen != prefix) {
            return None;
        }
        offset = Some(prefix);
    }
    offset
}

fn indent(line: &str, offset: &str) -> String {
    if is_blank(line) {
        line.to_string()
    } else {
        format!("{offset}{line}")
    }
}

/// The file with the found window replaced, every new line ending the file's way; a file that
/// ended without a newline still does when its last line was replaced.
fn splice(file: &[Line], found: Found, eol: &str) -> String {
    let end = found.start + found.len;
    let ends_unterminated = end == file.len() && file[end - 1].ending.is_empty();
    let mut result = String::new();
    for line in &file[..found.start] {
        result.push_str(line.body);
        result.push_str(line.ending);
    }
    let last = found.replacement.len();
    for (n, line) in found.replacement.iter().enumerate() {
        result.push_str(line);
        if !(ends_unterminated && n + 1 == last) {
            result.push_str(eol);
        }
    }
    for line in &file[end..] {
        result.push_str(line.body);
        result.push_str(line.ending);
    }
    result
}
