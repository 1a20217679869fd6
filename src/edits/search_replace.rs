//! SEARCH/REPLACE blocks (aider's format): parsing them out of a chat reply, file names
//! included, and applying them to a file's content only where the search text is certain.
//!
//! `parser` reads a reply exactly as aider's `find_original_update_blocks` does (measured
//! against aider's own gold parse by `benches/aider_gold.rs`); `locate` finds where a block's
//! SEARCH text sits in a file; `closest` explains, with real line numbers, why it sits nowhere.

mod closest;
mod locate;
mod parser;
pub mod pylines;
#[cfg(test)]
mod tests;

use super::{Change, FileEdit, Mismatch, ParseError};

/// One SEARCH/REPLACE block, its texts exactly as the reply wrote them.
///
/// A SEARCH that is empty (or only blank lines) against a missing or empty file creates it
/// with the REPLACE text; against a file with content it appends the REPLACE text, as aider
/// does, so a model can add to a file it created earlier in the same reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    pub search: String,
    pub replace: String,
}

impl Block {
    /// How messages name a block: the first non-blank line of its SEARCH text, shortened.
    fn headline(&self) -> String {
        headline_of(&self.search)
    }
}

fn headline_of(search: &str) -> String {
    const MAX_CHARS: usize = 60;
    match search.lines().map(str::trim).find(|line| !line.is_empty()) {
        None => "an empty SEARCH".to_string(),
        Some(line) if line.chars().count() > MAX_CHARS => {
            let short: String = line.chars().take(MAX_CHARS).collect();
            format!("SEARCH starting `{short}…`")
        }
        Some(line) => format!("SEARCH starting `{line}`"),
    }
}

/// Reads every SEARCH/REPLACE block of a reply, grouped per file in order of first appearance.
pub fn parse(text: &str) -> Result<Vec<FileEdit>, ParseError> {
    let mut files: Vec<(String, Vec<Block>)> = Vec::new();
    for (path, block) in parse_blocks(text)? {
        match files.iter_mut().find(|(seen, _)| *seen == path) {
            Some((_, blocks)) => blocks.push(block),
            None => files.push((path, vec![block])),
        }
    }
    Ok(files
        .into_iter()
        .map(|(path, blocks)| FileEdit {
            path,
            change: Change::Replace { blocks },
        })
        .collect())
}

/// Reads every SEARCH/REPLACE block of a reply with the file name it applies to, in the order
/// written. Shell-command fences (```bash and the like) are not edits and are skipped.
pub fn parse_blocks(text: &str) -> Result<Vec<(String, Block)>, ParseError> {
    parser::parse_blocks(text)
}

/// Applies `blocks` in order to `original`, or says which block does not fit and why.
///
/// Each block's SEARCH text must sit in exactly one place of the content as edited so far:
/// first as written, then ignoring trailing whitespace, then shifted by one uniform indentation
/// (the REPLACE text is re-indented the same way), then without the blank lines that open or
/// close it. Line endings follow the file's own. A SEARCH found twice or nowhere is refused.
pub fn apply(original: &str, blocks: &[Block]) -> Result<String, Mismatch> {
    let mut content = original.to_string();
    for (index, block) in blocks.iter().enumerate() {
        content = locate::apply_block(&content, block).map_err(|why| {
            Mismatch::new(format!(
                "SEARCH/REPLACE block {} of {} ({}) {}",
                index + 1,
                blocks.len(),
                block.headline(),
                why.explain(&content, block),
            ))
        })?;
    }
    Ok(content)
}
