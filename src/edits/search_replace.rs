//! SEARCH/REPLACE blocks (aider's format): parsing them out of a chat reply, file names
//! included, and applying them to a file's content only where the search text is certain.

use super::{FileEdit, Mismatch, ParseError};

/// One SEARCH/REPLACE block. An empty `search` against a missing or empty file creates it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    pub search: String,
    pub replace: String,
}

/// Reads every SEARCH/REPLACE block of a reply, grouped per file in order of appearance.
pub fn parse(_text: &str) -> Result<Vec<FileEdit>, ParseError> {
    Err(ParseError::new(
        "SEARCH/REPLACE blocks are not supported yet",
    ))
}

/// Applies `blocks` in order to `original`, or says which block does not fit and why.
pub fn apply(_original: &str, _blocks: &[Block]) -> Result<String, Mismatch> {
    Err(Mismatch::new("SEARCH/REPLACE blocks are not supported yet"))
}
