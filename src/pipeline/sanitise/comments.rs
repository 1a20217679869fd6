//! Comments a reader of the rendered text never sees: HTML comments, and link reference
//! definitions no link uses or that point nowhere (`[//]: # (comment)`), outside code fences.

use std::collections::HashSet;
use std::sync::LazyLock;

use regex::{Captures, Regex};

use super::{Removal, RemovalKind, tally};

/// What opens an HTML comment.
const COMMENT_OPENER: &str = "<!--";

/// Every HTML comment: from `<!--` to the first `-->` (`<!-->` and `<!--->` are whole comments,
/// and one never closed runs to the end). Where removing one leaves the halves of an opener
/// side by side, they are one opener, and that comment goes too.
pub(super) fn remove_html_comments(text: &str) -> (String, Option<Removal>) {
    let mut out = String::with_capacity(text.len());
    let mut removal = None;
    let mut rest = text;
    loop {
        let (head, start, opener_bytes) = match opener_split_across(&out, rest) {
            Some(in_out) => (
                out.split_off(out.len() - in_out),
                0,
                COMMENT_OPENER.len() - in_out,
            ),
            None => match rest.find(COMMENT_OPENER) {
                Some(at) => {
                    out.push_str(&rest[..at]);
                    (String::new(), at, COMMENT_OPENER.len())
                }
                None => break,
            },
        };
        let body = &rest[start + opener_bytes..];
        let end = start + opener_bytes + comment_body_length(body);
        let comment = format!("{head}{}", &rest[start..end]);
        tally(&mut removal, RemovalKind::HtmlComment, &comment);
        rest = &rest[end..];
    }
    out.push_str(rest);
    (out, removal)
}

/// How many of the opener's bytes `kept` ends with when `rest` starts with the others.
fn opener_split_across(kept: &str, rest: &str) -> Option<usize> {
    (1..COMMENT_OPENER.len()).find(|&in_kept| {
        kept.ends_with(&COMMENT_OPENER[..in_kept]) && rest.starts_with(&COMMENT_OPENER[in_kept..])
    })
}

/// The length of a comment after its opener, up to and including what closes it.
fn comment_body_length(body: &str) -> usize {
    if body.starts_with('>') {
        1
    } else if body.starts_with("->") {
        2
    } else {
        body.find("-->").map_or(body.len(), |at| at + 3)
    }
}

/// What may stand before a link reference definition on its line: up to three spaces, then
/// block quote and list item markers (a definition inside them renders as nothing too).
static CONTAINER_PREFIX: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\A {0,3}(?:(?:>|[-+*][ \t]|\d{1,9}[.)][ \t])[ \t]*)*")
        .expect("the container pattern compiles")
});

/// A link reference definition from its `[`: `[label]: destination "title"`, each part
/// possibly on the next line, the title optional, the destination possibly `<>` (CommonMark
/// §4.7). `[//]: # (comment)` and `[comment]: <> (comment)` are the idioms that use it as a
/// comment.
const LABEL_AND_DESTINATION: &str = concat!(
    r"\A\[(?P<label>(?:[^\[\]\\]|\\.){1,999})\]:",
    r"[ \t]*(?:\r?\n)?[ \t]*(?P<destination><(?:[^<>\r\n\\]|\\.)*>|[^\s<>]+)",
);
const TITLE: &str =
    r#"(?:[ \t]*(?:\r?\n)?[ \t]*(?:"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|\((?:[^()\\]|\\.)*\)))"#;
const LINE_END: &str = r"[ \t]*(?:\r?\n|\z)";

/// A link reference definition from the start of the text: label, destination, an optional
/// title, the end of the line.
static LINK_REFERENCE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!("{LABEL_AND_DESTINATION}{TITLE}?{LINE_END}"))
        .expect("the link reference pattern compiles")
});

/// The same without a title: what the definition is when what looked like its title runs
/// over a blank line, and so is none.
static UNTITLED_LINK_REFERENCE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!("{LABEL_AND_DESTINATION}{LINE_END}"))
        .expect("the untitled link reference pattern compiles")
});

/// A bracketed text, as a reference to a definition uses its label (`[x][label]`, `[label]`).
static BRACKETED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\[([^\[\]]{1,999})\]").expect("the bracket pattern compiles"));

/// One link reference definition found in a text.
struct Definition {
    start: usize,
    end: usize,
    label: String,
    destination: String,
}

/// Link reference definitions a reader never sees anything of: those no link of the text
/// uses, and those pointing nowhere (`#`, `<>`), as comments written this way do. A
/// definition a link uses is kept: the link shows where it goes.
pub(super) fn remove_link_reference_comments(text: &str) -> (String, Option<Removal>) {
    let definitions = link_reference_definitions(text);
    if definitions.is_empty() {
        return (text.to_owned(), None);
    }
    let mut rest = String::with_capacity(text.len());
    let mut kept_up_to = 0;
    for definition in &definitions {
        rest.push_str(&text[kept_up_to..definition.start]);
        rest.push('\n');
        kept_up_to = definition.end;
    }
    rest.push_str(&text[kept_up_to..]);
    let used: HashSet<String> = BRACKETED
        .captures_iter(&rest)
        .map(|bracketed| normalised_label(&bracketed[1]))
        .collect();
    let mut out = String::with_capacity(text.len());
    let mut removal = None;
    let mut kept_up_to = 0;
    let mut line_break = None;
    for definition in &definitions {
        let nowhere = matches!(definition.destination.as_str(), "#" | "<>");
        if !nowhere && used.contains(&normalised_label(&definition.label)) {
            continue;
        }
        push_kept(
            &mut out,
            &text[kept_up_to..definition.start],
            &mut line_break,
        );
        kept_up_to = definition.end;
        let whole = &text[definition.start..definition.end];
        line_break = line_break.or(["\r\n", "\n"].into_iter().find(|end| whole.ends_with(end)));
        tally(
            &mut removal,
            RemovalKind::LinkReferenceComment,
            whole.trim_end(),
        );
    }
    push_kept(&mut out, &text[kept_up_to..], &mut line_break);
    (out, removal)
}

/// Appends text kept between removed definitions. Where definitions were removed between two
/// lines, a blank line stays, unless one is already there, so the lines around them cannot
/// join into a definition of their own (a label may run over lines, never over a blank one)
/// and a second pass finds nothing more.
fn push_kept(out: &mut String, kept: &str, line_break: &mut Option<&str>) {
    if kept.is_empty() {
        return;
    }
    if let Some(line_break) = line_break.take()
        && !ends_with_blank_line(out)
    {
        out.push_str(line_break);
    }
    out.push_str(kept);
}

fn ends_with_blank_line(text: &str) -> bool {
    match text
        .strip_suffix('\n')
        .map(|rest| rest.trim_end_matches('\r'))
    {
        None => text.is_empty(),
        Some(rest) => rest[rest.rfind('\n').map_or(0, |at| at + 1)..]
            .trim()
            .is_empty(),
    }
}

/// The link reference definitions of `text`, each with the whole of its lines, in order; none
/// inside a fenced code block.
fn link_reference_definitions(text: &str) -> Vec<Definition> {
    let mut definitions = Vec::new();
    let mut fence: Option<(char, usize)> = None;
    let mut line_start = 0;
    while line_start < text.len() {
        let line_end = text[line_start..]
            .find('\n')
            .map_or(text.len(), |at| line_start + at + 1);
        let line = &text[line_start..line_end];
        match fence {
            Some(open) => {
                if closes_fence(line, open) {
                    fence = None;
                }
            }
            None => {
                fence = opens_fence(line);
                if fence.is_none()
                    && let Some(definition) = definition_at(text, line_start, line_end)
                {
                    line_start = definition.end;
                    definitions.push(definition);
                    continue;
                }
            }
        }
        line_start = line_end;
    }
    definitions
}

/// The definition starting on the line `start..end` of `text`, if one does. Inside a block
/// quote or list item it must fit on its line; at the margin its title may go on below.
fn definition_at(text: &str, start: usize, end: usize) -> Option<Definition> {
    let line = &text[start..end];
    let prefix = CONTAINER_PREFIX.find(line)?.end();
    let indent = line.len() - line.trim_start_matches(' ').len();
    let from = start + prefix;
    let within = if prefix > indent {
        &text[from..end]
    } else {
        &text[from..]
    };
    // A blank line ends a paragraph, so neither a label nor a title can span one.
    let spans_a_blank_line =
        |found: &Captures<'_>| found[0].lines().any(|line| line.trim().is_empty());
    let found = LINK_REFERENCE
        .captures(within)
        .filter(|found| !spans_a_blank_line(found))
        .or_else(|| UNTITLED_LINK_REFERENCE.captures(within))
        .filter(|found| !spans_a_blank_line(found))?;
    let whole = found.get(0)?;
    let label = found.name("label")?.as_str();
    if label.trim().is_empty() {
        return None;
    }
    Some(Definition {
        start,
        end: from + whole.end(),
        label: label.to_owned(),
        destination: found.name("destination")?.as_str().to_owned(),
    })
}

/// A label as matching compares it: case-folded, inner whitespace collapsed.
fn normalised_label(label: &str) -> String {
    label
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// The fence (its character and length) a line opens: three or more backticks or tildes after
/// at most three spaces; a backtick fence's info string holds no backtick.
pub(super) fn opens_fence(line: &str) -> Option<(char, usize)> {
    let trimmed = line.trim_start_matches(' ');
    if line.len() - trimmed.len() > 3 {
        return None;
    }
    let marker = trimmed.chars().next().filter(|c| matches!(c, '`' | '~'))?;
    let length = trimmed.len() - trimmed.trim_start_matches(marker).len();
    let info = &trimmed[length..];
    (length >= 3 && !(marker == '`' && info.contains('`'))).then_some((marker, length))
}

/// Whether `line` closes the fence `open`: at least as long, the same character, nothing after.
fn closes_fence(line: &str, (marker, length): (char, usize)) -> bool {
    let trimmed = line.trim_start_matches(' ');
    let run = trimmed.len() - trimmed.trim_start_matches(marker).len();
    line.len() - trimmed.len() <= 3 && run >= length && trimmed[run..].trim().is_empty()
}
