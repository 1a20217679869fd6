//! Applying hunks in order to a file's content: the file as lines that keep their own endings,
//! where earlier hunks landed, and the lines that replace each hunk's place.

use super::explain::line_range;
use super::locate::{Op, Placement, locate};
use super::shape::{EndMarkers, Shape};
use super::{Hunk, hunk_name};
use crate::edits::Mismatch;
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

const LF: &str = "\n";
const CRLF: &str = "\r\n";

/// A file's lines with their own endings, so untouched lines come back byte for byte.
pub(super) struct Document {
    pub(super) lines: Vec<Line>,
    /// The ending given to new lines: the file's most common one.
    pub(super) eol: &'static str,
    pub(super) ends_with_newline: bool,
    /// Whether indented lines mostly start with a tab, for re-indenting when nothing closer says.
    pub(super) uses_tabs: bool,
}

#[derive(Debug, Clone)]
pub(super) struct Line {
    pub(super) text: String,
    pub(super) eol: &'static str,
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
pub(super) struct History {
    /// `(start, old_len, new_len)` in the coordinates of the content each hunk was applied to.
    applied: Vec<(usize, usize, usize)>,
}

impl History {
    fn record(&mut self, start: usize, old_len: usize, new_len: usize) {
        self.applied.push((start, old_len, new_len));
    }

    /// The original-file index of the current line `index`, or `None` if an earlier hunk wrote it.
    pub(super) fn original_index(&self, mut index: usize) -> Option<usize> {
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
