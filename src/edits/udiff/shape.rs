//! A hunk seen from the file's side: the old lines it expects, the lines added in each gap
//! between them, whether it ends the file without a newline, and how much fuzz it earns.

use super::{Hunk, HunkLine};
/// A hunk seen from the file's side: the lines it expects (context and removed, in order)
/// and the added lines that go in each gap between them.
pub(super) struct Shape<'h> {
    pub(super) old: Vec<OldLine<'h>>,
    /// `gaps[g]`: the lines added between old lines `g - 1` and `g` (`old.len() + 1` gaps).
    pub(super) gaps: Vec<Vec<&'h str>>,
    pub(super) ends: EndMarkers,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct OldLine<'h> {
    pub(super) text: &'h str,
    pub(super) removed: bool,
}

impl OldLine<'_> {
    pub(super) fn is_blank(&self) -> bool {
        self.text.trim().is_empty()
    }
}

/// Which sides of the hunk end the file without a newline (`\ No newline at end of file`).
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct EndMarkers {
    pub(super) old_side: bool,
    pub(super) new_side: bool,
}

impl<'h> Shape<'h> {
    pub(super) fn of(hunk: &'h Hunk) -> Shape<'h> {
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

    pub(super) fn has_removals(&self) -> bool {
        self.old.iter().any(|line| line.removed)
    }

    /// How many context lines may be altered or missing before the hunk is refused. Only a
    /// hunk whose removed lines pin it down gets any; a pure addition must fit as written.
    pub(super) fn fuzz_budget(&self) -> u32 {
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
    pub(super) fn anchor(&self) -> Option<(usize, usize)> {
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
    pub(super) fn may_skip_file_line_at(&self, gap: usize) -> bool {
        let removed_before = gap > 0 && self.old[gap - 1].removed;
        let removed_after = gap < self.old.len() && self.old[gap].removed;
        if removed_before && removed_after {
            return false;
        }
        self.gaps[gap].is_empty() || removed_before || removed_after
    }
}
