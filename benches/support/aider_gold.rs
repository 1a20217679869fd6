//! Measures how closely `search_replace::parse_blocks` reproduces aider's own parse of a real
//! chat transcript, block by block, against the gold file aider's parser test checks in.
//!
//! Aider's test (`tests/basic/test_find_or_blocks.py`) splits the transcript before every
//! `####` followed by whitespace, skips sections mentioning `editblock_coder.py` or
//! `test_editblock.py`, takes the first line as the section header, parses the rest, and prints
//! `@@@ <header> @@@…`, then per block `@@@ SEARCH: <file> @@@…`, the SEARCH text, `@@@…`, the
//! REPLACE text, `@@@ REPLACE @@@…` (or `@@@ SHELL`…`@@@ ENDSHELL` for a command, or the error
//! text when the section does not parse). This file does the same split and reads that format.
//! It is included by several benches and tests, so it uses nothing but std and the crate.

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::path::Path;

use autofix::edits::search_replace::parse_blocks;
use autofix::edits::search_replace::pylines::{is_line_break, is_space};

/// How many of aider's gold blocks our parser found, and how many it found that aider did not.
pub struct AiderReport {
    pub gold_blocks: usize,
    pub parsed_blocks: usize,
    pub matched: usize,
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
}

impl fmt::Display for AiderReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "aider gold parse: {} gold blocks, {} parsed, {} matched; \
             precision {:.4}, recall {:.4}, F1 {:.4}",
            self.gold_blocks,
            self.parsed_blocks,
            self.matched,
            self.precision,
            self.recall,
            self.f1
        )
    }
}

/// Compares our parse of `aider-chat-history/chat-history.md` under `shared_bench_dir` with
/// aider's gold parse next to it.
pub fn report(shared_bench_dir: &Path) -> io::Result<AiderReport> {
    let dir = shared_bench_dir.join("aider-chat-history");
    let transcript = std::fs::read_to_string(dir.join("chat-history.md"))?;
    let gold = std::fs::read_to_string(dir.join("chat-history-search-replace-gold.txt"))?;
    let expected = gold_blocks(&gold)?;
    let parsed = parsed_blocks(&transcript);
    Ok(score(&expected, &parsed))
}

/// One SEARCH/REPLACE block as the gold file records it: section header, file, texts.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Entry {
    header: String,
    file: String,
    search: String,
    replace: String,
}

fn score(expected: &[Entry], parsed: &[Entry]) -> AiderReport {
    let mut unclaimed: HashMap<&Entry, usize> = HashMap::new();
    for entry in expected {
        *unclaimed.entry(entry).or_default() += 1;
    }
    let matched = parsed
        .iter()
        .filter(|entry| match unclaimed.get_mut(entry) {
            Some(left) if *left > 0 => {
                *left -= 1;
                true
            }
            _ => false,
        })
        .count();
    let ratio = |part: usize, whole: usize| {
        if whole == 0 {
            1.0
        } else {
            part as f64 / whole as f64
        }
    };
    let precision = ratio(matched, parsed.len());
    let recall = ratio(matched, expected.len());
    let f1 = if precision + recall == 0.0 {
        0.0
    } else {
        2.0 * precision * recall / (precision + recall)
    };
    AiderReport {
        gold_blocks: expected.len(),
        parsed_blocks: parsed.len(),
        matched,
        precision,
        recall,
        f1,
    }
}

// ---- our side: the transcript split and parsed as aider's test does ----

fn parsed_blocks(transcript: &str) -> Vec<Entry> {
    let mut entries = Vec::new();
    for section in sections(transcript) {
        if section.contains("editblock_coder.py") || section.contains("test_editblock.py") {
            continue;
        }
        if section.trim_matches(is_space).is_empty() {
            continue;
        }
        let header = section
            .split('\n')
            .next()
            .unwrap_or("")
            .trim_matches(is_space);
        // A section that does not parse (or holds no block) adds nothing, as in aider's test.
        let Ok(blocks) = parse_blocks(after_first_line(section)) else {
            continue;
        };
        entries.extend(blocks.into_iter().map(|(file, block)| Entry {
            header: header.to_string(),
            file,
            search: block.search,
            replace: block.replace,
        }));
    }
    entries
}

/// `re.split(r"(?=####\s)", transcript)`: a cut before every `####` followed by whitespace,
/// wherever it stands in a line.
fn sections(transcript: &str) -> Vec<&str> {
    // `match_indices` would not overlap: in `##########\n` the cut is before the last four.
    let mut cuts = vec![0];
    let mut from = 0;
    while let Some(found) = transcript[from..].find("####") {
        let at = from + found;
        if transcript[at + 4..].chars().next().is_some_and(is_space) {
            cuts.push(at);
        }
        from = at + 1;
    }
    cuts.push(transcript.len());
    cuts.windows(2).map(|w| &transcript[w[0]..w[1]]).collect()
}

/// What follows the first line, the way Python's `splitlines()` ends that line.
fn after_first_line(section: &str) -> &str {
    let mut chars = section.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if is_line_break(c) {
            let crlf = c == '\r' && chars.peek().is_some_and(|&(_, next)| next == '\n');
            return &section[at + c.len_utf8() + usize::from(crlf)..];
        }
    }
    ""
}

// ---- aider's side: the gold file read back into entries ----

const AT_RUN: &str = "@@@@@@@@@@@@@@@@@@@@";

fn gold_blocks(gold: &str) -> io::Result<Vec<Entry>> {
    let mut reader = GoldReader { gold, at: 0 };
    let mut entries = Vec::new();
    while reader.skip_blank_lines() {
        let header = reader.marker_line("@@@ ")?;
        if reader.rest().starts_with("@@@ SEARCH: ") || reader.rest().starts_with("@@@ SHELL ") {
            reader.blocks(&header, &mut entries)?;
        } else {
            reader.error_text();
        }
    }
    Ok(entries)
}

/// A cursor over the gold file.
struct GoldReader<'a> {
    gold: &'a str,
    at: usize,
}

impl<'a> GoldReader<'a> {
    fn rest(&self) -> &'a str {
        &self.gold[self.at..]
    }

    fn malformed(&self, what: &str) -> io::Error {
        let line = self.gold[..self.at].matches('\n').count() + 1;
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("aider gold file, line {line}: {what}"),
        )
    }

    /// Steps over the blank lines between sections; false at the end of the file.
    fn skip_blank_lines(&mut self) -> bool {
        let rest = self.rest();
        self.at += rest.len() - rest.trim_start_matches('\n').len();
        self.at < self.gold.len()
    }

    /// Reads `<prefix><value> @@@…\n` and returns the value.
    fn marker_line(&mut self, prefix: &str) -> io::Result<String> {
        let suffix = format!(" {AT_RUN}\n");
        let rest = self.rest();
        let value = rest
            .strip_prefix(prefix)
            .and_then(|after| after.split_once(&suffix))
            .map(|(value, _)| value)
            .filter(|value| !value.contains('\n'))
            .ok_or_else(|| self.malformed(&format!("expected a `{prefix}… {AT_RUN}` line")))?;
        self.at += prefix.len() + value.len() + suffix.len();
        Ok(value.to_string())
    }

    /// Reads the text up to `end`, and steps past `end`.
    fn text_until(&mut self, end: &str, what: &str) -> io::Result<String> {
        let text = self
            .rest()
            .split_once(end)
            .map(|(text, _)| text.to_string())
            .ok_or_else(|| self.malformed(&format!("{what} never ends")))?;
        self.at += text.len() + end.len();
        Ok(text)
    }

    /// Reads SEARCH text up to the `@@@…` line that starts a line of its own.
    fn search_text(&mut self) -> io::Result<String> {
        let rest = self.rest();
        let separator = format!("{AT_RUN}\n");
        let end = rest
            .match_indices(&separator)
            .map(|(at, _)| at)
            .find(|&at| at == 0 || rest[..at].ends_with(is_line_break))
            .ok_or_else(|| self.malformed("a SEARCH text never ends"))?;
        self.at += end + separator.len();
        Ok(rest[..end].to_string())
    }

    fn blocks(&mut self, header: &str, entries: &mut Vec<Entry>) -> io::Result<()> {
        loop {
            if self.rest().starts_with("@@@ SHELL ") {
                self.marker_line("@@@ ")?;
                self.text_until(&format!("@@@ ENDSHELL {AT_RUN}\n"), "a SHELL command")?;
            } else if self.rest().starts_with("@@@ SEARCH: ") {
                let file = self.marker_line("@@@ SEARCH: ")?;
                let search = self.search_text()?;
                let replace =
                    self.text_until(&format!("@@@ REPLACE {AT_RUN}\n"), "a REPLACE text")?;
                entries.push(Entry {
                    header: header.to_string(),
                    file,
                    search,
                    replace,
                });
            } else {
                return Ok(());
            }
        }
    }

    /// Steps over the error aider raised for a section: everything up to the next section.
    fn error_text(&mut self) {
        let rest = self.rest();
        self.at += rest.find("\n\n\n@@@ ").map_or(rest.len(), |at| at + 1);
    }
}
