//! How a hunk's indentation maps onto the file's, from the lines that matched, and how its
//! added lines are re-indented to the file's style.

use super::apply::Document;
use super::locate::Op;
use super::shape::Shape;
/// How the hunk's indentation maps onto the file's, from the lines that matched; and how
/// many context lines disagree with that mapping (they count as altered).
pub(super) fn fit_indentation(doc: &Document, shape: &Shape, ops: &[Op]) -> Option<(Indent, u32)> {
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
pub(super) enum Indent {
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
    pub(super) fn apply(&self, line: &str) -> Option<String> {
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
