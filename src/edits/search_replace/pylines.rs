//! Line splitting and whitespace trimming with Python's rules (`str.splitlines`, `str.strip`),
//! which aider's parser uses; following them keeps our parse identical to aider's on odd bytes.

/// Whether Python's `str.isspace` holds: Rust's White_Space plus the four ASCII separators.
pub fn is_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python's `str.strip()`.
pub fn strip(text: &str) -> &str {
    text.trim_matches(is_space)
}

/// Python's `str.splitlines` line boundaries.
pub fn is_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r'
            | '\u{0b}'
            | '\u{0c}'
            | '\u{1c}'
            | '\u{1d}'
            | '\u{1e}'
            | '\u{85}'
            | '\u{2028}'
            | '\u{2029}'
    )
}

/// Python's `str.splitlines(keepends=True)`: every line keeps its terminator, `\r\n` is one.
pub fn split_keep_ends(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if !is_line_break(c) {
            continue;
        }
        let mut end = at + c.len_utf8();
        if c == '\r' && chars.peek().is_some_and(|&(_, next)| next == '\n') {
            chars.next();
            end += 1;
        }
        lines.push(&text[start..end]);
        start = end;
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crlf_is_one_terminator_and_a_lone_cr_is_another() {
        assert_eq!(
            split_keep_ends("a\r\nb\rc\nd"),
            ["a\r\n", "b\r", "c\n", "d"]
        );
    }

    #[test]
    fn form_feeds_and_unicode_separators_end_lines_as_in_python() {
        assert_eq!(
            split_keep_ends("a\u{0c}b\u{2028}c\u{85}"),
            ["a\u{0c}", "b\u{2028}", "c\u{85}"]
        );
    }

    #[test]
    fn empty_text_has_no_lines() {
        assert!(split_keep_ends("").is_empty());
    }

    #[test]
    fn strip_removes_the_ascii_separators_python_counts_as_space() {
        assert_eq!(strip("\u{1f} x \n"), "x");
    }
}
