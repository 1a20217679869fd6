//! Where a hunk goes in a file: how its old lines line up with the file's, and the search that
//! tries strict readings before lenient ones and refuses when several places fit.

use std::collections::HashMap;

use super::align::align_around;
use super::apply::{Document, History};
use super::indent::{Indent, fit_indentation};
use super::shape::Shape;

/// How old lines line up with the file's lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Op {
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
pub(super) struct Placement {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) ops: Vec<Op>,
    pub(super) indent: Indent,
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
pub(super) enum Failure {
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

pub(super) fn same_but_whitespace(a: &str, b: &str) -> bool {
    a.split_whitespace().eq(b.split_whitespace())
}

/// The file's lines and a hunk's old lines as numbers, equal exactly where
/// [`same_but_whitespace`] holds: the fuzzy search compares each pair many times over.
pub(super) struct WhitespaceKeys {
    pub(super) doc: Vec<u32>,
    pub(super) old: Vec<u32>,
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
pub(super) fn locate(
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
