//! Why a hunk was refused, in words a model can act on: what did not fit, where it fits several
//! times, and the file's closest real lines, numbered.

use super::apply::Document;
use super::locate::{Failure, same_but_whitespace};
use super::shape::Shape;
use crate::edits::Mismatch;
impl Failure {
    pub(super) fn explain(self, name: &str, doc: &Document, shape: &Shape) -> Mismatch {
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
    let (start, len) = crate::edits::closest::closest_window(&file, &old);
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
pub(super) fn line_range(start: usize, end: usize) -> String {
    if end <= start + 1 {
        format!("line {}", start + 1)
    } else {
        format!("lines {}-{}", start + 1, end)
    }
}
