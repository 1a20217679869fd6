//! Aligning a hunk's old lines with the file around an anchor, line by line, allowing blank
//! lines to be missing or extra and, within a budget, context lines to be altered or missing.

use std::collections::HashMap;

use super::apply::Document;
use super::locate::{Op, WhitespaceKeys};
use super::shape::Shape;
#[cfg(test)]
thread_local! {
    /// How many alignments the fuzzy search ran, for the stories about its shortcuts.
    pub(super) static ALIGNMENTS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Aligns the old lines before the anchor (backwards) and after it (forwards) with the file
/// around `position`; returns the number of mismatches and every line's fate, in order. None
/// when no alignment fits the budget, found by [`may_fit`] first where it can tell.
pub(super) fn align_around(
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
