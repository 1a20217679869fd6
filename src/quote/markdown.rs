//! Text autofix did not write itself (model answers above all) as Markdown that shows the
//! text and does nothing else: no mention that notifies, no link, image, HTML tag, autolink,
//! issue reference or block of its own; code spans the text holds stay code.

use super::fence::longest_backtick_run;
use super::one_line;

/// What goes between `@`, `#` or `!` and the name after it, so that neither GitHub nor
/// GitLab reads a mention or a reference there: a zero-width space, as an entity so that it
/// shows in the comment's source.
const REFERENCE_BREAK: &str = "&#8203;";

/// `text` as one line of Markdown that renders as the text itself.
///
/// Whitespace runs (line breaks included) become one space, so the text cannot open a block
/// (a heading, a quote, a list, a GitLab quick action) of its own. `@name`, `#12` and `!12`
/// get a zero-width space after the sign, so nobody is notified and nothing is cross-referenced;
/// bare URLs are shown as code, so they are not links; the characters that make links,
/// images, HTML, entities, emphasis, tables and math are backslash-escaped. Code spans in the
/// text are kept: nothing inside one is a mention, a link or HTML.
pub fn inert(text: &str) -> String {
    let flat = one_line(&text.split_whitespace().collect::<Vec<_>>().join(" "));
    let mut out = String::with_capacity(flat.len() + flat.len() / 4);
    let mut at = 0;
    while let Some(c) = flat[at..].chars().next() {
        if c == '`' {
            let run = flat[at..].len() - flat[at..].trim_start_matches('`').len();
            at = match closing_run(&flat, at + run, run) {
                Some(end) => {
                    out.push_str(&flat[at..end + run]);
                    end + run
                }
                None => {
                    out.push_str(&"\\`".repeat(run));
                    at + run
                }
            };
            continue;
        }
        let after_word = flat[..at]
            .chars()
            .next_back()
            .is_some_and(char::is_alphanumeric);
        if let Some(len) = url_at(&flat[at..]).filter(|_| !after_word) {
            out.push_str(&code_span(&flat[at..at + len]));
            at += len;
            continue;
        }
        let next = flat[at + c.len_utf8()..].chars().next();
        match c {
            '@' => {
                out.push('@');
                out.push_str(REFERENCE_BREAK);
            }
            '#' | '!' if next.is_some_and(char::is_alphanumeric) => {
                out.push(c);
                out.push_str(REFERENCE_BREAK);
            }
            '\\' | '*' | '_' | '[' | ']' | '<' | '>' | '&' | '~' | '|' | '$' | '#' => {
                out.push('\\');
                out.push(c);
            }
            '-' | '+' | '=' if at == 0 => {
                out.push('\\');
                out.push(c);
            }
            '.' | ')' if flat[..at].chars().all(|d| d.is_ascii_digit()) && at > 0 => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
        at += c.len_utf8();
    }
    out
}

/// `text` as an inline code span, on one line (control characters escaped), delimited by a
/// backtick run longer than any inside it; empty text gives nothing.
pub fn code_span(text: &str) -> String {
    let text = one_line(text);
    if text.is_empty() {
        return String::new();
    }
    let ticks = "`".repeat(longest_backtick_run(&text) + 1);
    // A renderer strips one space at each end when both have one; a backtick at an end
    // would join the delimiter. A space on each side keeps the text exactly.
    let pad = text.starts_with('`')
        || text.ends_with('`')
        || (text.starts_with(' ') && text.ends_with(' ') && !text.trim().is_empty());
    let space = if pad { " " } else { "" };
    format!("{ticks}{space}{text}{space}{ticks}")
}

/// Where the backtick run of exactly `run` backticks that closes a code span opened just
/// before `from` starts, if there is one.
fn closing_run(text: &str, from: usize, run: usize) -> Option<usize> {
    let mut at = from;
    while let Some(offset) = text[at..].find('`') {
        let start = at + offset;
        let length = text[start..].len() - text[start..].trim_start_matches('`').len();
        if length == run {
            return Some(start);
        }
        at = start + length;
    }
    None
}

/// The length of the URL a GitHub or GitLab renderer would turn into a link at the start of
/// `text` (`https://…`, `http://…`, `ftp://…`, `www.…`), without the punctuation after it.
fn url_at(text: &str) -> Option<usize> {
    let lower: String = text.chars().take(8).flat_map(char::to_lowercase).collect();
    let scheme = ["https://", "http://", "ftp://", "www."]
        .into_iter()
        .find(|scheme| lower.starts_with(scheme))?;
    let end = text
        .find(|c: char| c.is_whitespace() || c == '<' || c == '>')
        .unwrap_or(text.len());
    let mut url = &text[..end];
    loop {
        let trimmed =
            url.trim_end_matches(['?', '!', '.', ',', ':', '*', '_', '~', '\'', '"', ';']);
        let unbalanced =
            trimmed.ends_with(')') && trimmed.matches(')').count() > trimmed.matches('(').count();
        let trimmed = if unbalanced {
            &trimmed[..trimmed.len() - 1]
        } else {
            trimmed
        };
        if trimmed.len() == url.len() {
            break;
        }
        url = trimmed;
    }
    (url.len() > scheme.len()).then_some(url.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_and_references_notify_nobody() {
        assert_eq!(
            inert("ping @acme/security-team and @bob about #12, org/repo#3 and !4"),
            "ping @&#8203;acme/security-team and @&#8203;bob about #&#8203;12, \
             org/repo#&#8203;3 and !&#8203;4"
        );
    }

    #[test]
    fn links_images_autolinks_and_html_show_as_text() {
        assert_eq!(
            inert("see [the docs](https://evil.example/phish) ![](https://t.example/p.png?id=1)."),
            "see \\[the docs\\](`https://evil.example/phish`) !\\[\\](`https://t.example/p.png?id=1`)."
        );
        assert_eq!(
            inert("<img src=x onerror=alert(1)> <https://a.example> www.b.example, &#64;team"),
            "\\<img src=x onerror=alert(1)\\> \\<`https://a.example`\\> `www.b.example`, \\&#&#8203;64;team"
        );
        assert_eq!(
            inert("[x][ref] and [ref]: https://c.example"),
            "\\[x\\]\\[ref\\] and \\[ref\\]: `https://c.example`"
        );
    }

    #[test]
    fn line_breaks_cannot_open_a_block_or_a_quick_action() {
        assert_eq!(
            inert("fix it\n\n/close\n# Heading\n> quote"),
            "fix it /close \\# Heading \\> quote"
        );
        assert_eq!(inert("- item"), "\\- item");
        assert_eq!(inert("12. ordered"), "12\\. ordered");
        assert_eq!(inert("a | b | c"), "a \\| b \\| c");
        assert_eq!(
            inert("*bold* _em_ ~~gone~~ $x$"),
            "\\*bold\\* \\_em\\_ \\~\\~gone\\~\\~ \\$x\\$"
        );
    }

    #[test]
    fn code_spans_are_kept_as_code() {
        assert_eq!(
            inert("call `parse(\"@x [y](z)\")` then ``a`b``"),
            "call `parse(\"@x [y](z)\")` then ``a`b``"
        );
        assert_eq!(inert("an odd ` backtick"), "an odd \\` backtick");
    }

    #[test]
    fn plain_words_are_left_alone() {
        let plain = "Return ParseError::Empty from parse() when the input is empty, café 日本 🦀";
        assert_eq!(inert(plain), plain);
        assert_eq!(inert("e-mail me: a.b"), "e-mail me: a.b");
    }

    #[test]
    fn a_code_span_holds_any_text_on_one_line() {
        assert_eq!(code_span("calc.py"), "`calc.py`");
        assert_eq!(code_span("a`b"), "``a`b``");
        assert_eq!(code_span("`x"), "`` `x ``");
        assert_eq!(code_span("notes\n## Plan"), "`notes\\n## Plan`");
        assert_eq!(code_span(""), "");
    }
}
