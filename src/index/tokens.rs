//! Code-aware tokens: identifiers kept whole and split at `snake_case` and `CamelCase` joints,
//! lower-cased, with English and keyword noise left out. The same tokens index files and queries.

use std::collections::HashSet;
use std::sync::LazyLock;

/// Words too common in prose and code to tell one file from another.
const STOPWORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been",
    "but", "by", "can", "could", "did", "do", "does", "else", "for", "from", "had", "has", "have",
    "he", "here", "how", "if", "in", "into", "is", "it", "its", "just", "let", "like", "may", "me",
    "more", "my", "no", "not", "now", "of", "on", "one", "only", "or", "other", "our", "out",
    "self", "should", "so", "some", "than", "that", "the", "their", "them", "then", "there",
    "these", "they", "this", "to", "too", "up", "us", "use", "used", "using", "very", "was", "we",
    "were", "what", "when", "where", "which", "while", "who", "why", "will", "with", "would",
    "you", "your", "def", "fn", "func", "function", "return", "import", "from", "const", "var",
    "pub", "mut", "new", "true", "false", "none", "null", "nil", "none", "class", "elif", "end",
    "get", "set", "str", "int", "string", "value", "args", "kwargs", "err", "ok", "some", "mod",
    "crate", "impl", "type", "struct", "enum", "void", "public", "private", "static", "final",
    "package", "this", "pass", "try", "except", "catch", "throw", "raise", "await", "async",
    "yield", "lambda", "go", "http", "https", "www", "com", "org", "github", "issue", "issues",
    "bug", "error", "errors", "test", "tests", "expected", "actual", "result", "example", "file",
    "line", "code", "version",
];

static STOPWORD_SET: LazyLock<HashSet<&'static str>> =
    LazyLock::new(|| STOPWORDS.iter().copied().collect());

fn is_stopword(word: &str) -> bool {
    STOPWORD_SET.contains(word)
}

/// Calls `emit` with each token of `text`: every identifier-like run (letters, digits, `_`)
/// lower-cased, then, when it has joints, each of its parts. Runs of one character, numbers
/// and stopwords are skipped. `scratch` is reused so that a known token costs no allocation.
pub fn for_each_token(text: &str, scratch: &mut String, mut emit: impl FnMut(&str)) {
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        if !is_word_byte(bytes[at]) {
            at += 1;
            continue;
        }
        let start = at;
        while at < bytes.len() && is_word_byte(bytes[at]) {
            at += 1;
        }
        word_tokens(&text[start..at], scratch, &mut emit);
    }
}

/// The tokens of `text`, collected (for queries; files use [`for_each_token`]).
pub fn tokens(text: &str) -> Vec<String> {
    let mut scratch = String::new();
    let mut all = Vec::new();
    for_each_token(text, &mut scratch, |token| all.push(token.to_owned()));
    all
}

fn is_word_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte >= 0x80
}

/// The whole word and, if it has joints, its parts.
fn word_tokens(word: &str, scratch: &mut String, emit: &mut impl FnMut(&str)) {
    let word = word.trim_matches('_');
    if word.len() < 2 || word.len() > 64 || !word.is_ascii() {
        return;
    }
    emit_lowered(word, scratch, emit);
    let mut parts = 0;
    let mut first = true;
    let mut single = None;
    for_each_part(word, |part| {
        parts += 1;
        if first {
            single = Some(part);
            first = false;
        }
    });
    if parts < 2 || single.is_some_and(|part| part.len() == word.len()) {
        return;
    }
    for_each_part(word, |part| emit_lowered(part, scratch, emit));
}

fn emit_lowered(word: &str, scratch: &mut String, emit: &mut impl FnMut(&str)) {
    if word.len() < 2 || word.bytes().all(|b| b.is_ascii_digit()) {
        return;
    }
    scratch.clear();
    scratch.extend(word.chars().map(|c| c.to_ascii_lowercase()));
    if !is_stopword(scratch) {
        emit(scratch);
    }
}

/// The parts of an identifier: split at `_`, at a lower-to-upper change (`parseUrl`), before
/// the last capital of a run followed by lower case (`HTTPServer` → `HTTP`, `Server`), and
/// between letters and digits.
pub fn for_each_part<'a>(word: &'a str, mut part: impl FnMut(&'a str)) {
    let bytes = word.as_bytes();
    let mut start = 0;
    for i in 1..=bytes.len() {
        let boundary = if i == bytes.len() {
            true
        } else {
            let (prev, cur) = (bytes[i - 1], bytes[i]);
            let next = bytes.get(i + 1).copied();
            cur == b'_'
                || prev == b'_'
                || (prev.is_ascii_lowercase() && cur.is_ascii_uppercase())
                || (prev.is_ascii_uppercase()
                    && cur.is_ascii_uppercase()
                    && next.is_some_and(|n| n.is_ascii_lowercase()))
                || (prev.is_ascii_digit() != cur.is_ascii_digit())
        };
        if boundary {
            let piece = &word[start..i];
            let piece = piece.trim_matches('_');
            if !piece.is_empty() {
                part(piece);
            }
            start = i;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_kept_whole_and_split_at_their_joints() {
        assert_eq!(
            tokens("rebuild_proxies(HTTPServer, parseUrl2)"),
            [
                "rebuild_proxies",
                "rebuild",
                "proxies",
                "httpserver",
                "server",
                "parseurl2",
                "parse",
                "url"
            ]
        );
    }

    #[test]
    fn prose_noise_numbers_and_single_letters_are_left_out() {
        assert_eq!(tokens("the x in 404 was not a Session"), ["session"]);
    }
}
