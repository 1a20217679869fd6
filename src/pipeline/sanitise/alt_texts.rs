//! The alt text of images, Markdown and HTML, which a reader of the rendered text does not see:
//! emptied, the image and its address kept, an "image" across a block boundary left alone.

use std::sync::LazyLock;

use regex::Regex;

use super::comments::opens_fence;
use super::{Removal, RemovalKind, tally};

/// `![alt](` or `![alt][`: the alt may hold escapes and one level of brackets, as in CommonMark.
static MARKDOWN_IMAGE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?s)!\[((?:[^\[\]\\]|\\.|\[[^\[\]]*\])*)\][(\[]")
        .expect("the Markdown image pattern compiles")
});

/// `![alt](url)` → `![](url)` and `![alt][ref]` → `![][ref]`. A collapsed reference `![alt][]`
/// is left alone: there the alt text is also the label that finds the image.
pub(super) fn empty_markdown_alt_texts(text: &str) -> (String, Option<Removal>) {
    let mut out = String::with_capacity(text.len());
    let mut removal = None;
    let mut kept_up_to = 0;
    for image in MARKDOWN_IMAGE.captures_iter(text) {
        let (whole, alt) = (image.get(0).unwrap(), image.get(1).unwrap());
        let collapsed = whole.as_str().ends_with('[') && text[whole.end()..].starts_with(']');
        if collapsed || alt.as_str().trim().is_empty() || crosses_a_block(text, alt.range()) {
            continue;
        }
        out.push_str(&text[kept_up_to..alt.start()]);
        kept_up_to = alt.end();
        tally(&mut removal, RemovalKind::ImageAltText, alt.as_str());
    }
    out.push_str(&text[kept_up_to..]);
    (out, removal)
}

/// An `<img` tag up to its `>` (or the end of the text), quoted values taken whole.
static HTML_IMG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)<img\b(?:[^>"']|"[^"]*"|'[^']*')*>?"#).expect("the img pattern compiles")
});

/// One attribute inside a tag: its name, and its value (quotes included) when it has one.
static HTML_ATTRIBUTE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"([^\s"'>/=]+)(?:\s*=\s*("[^"]*"|'[^']*'|[^\s"'=<>`]+))?"#)
        .expect("the attribute pattern compiles")
});

/// `<img ... alt="payload">` → `<img ... alt="">`, whether the value was double-, single- or
/// not quoted. Counted once per image.
pub(super) fn empty_html_alt_texts(text: &str) -> (String, Option<Removal>) {
    let mut out = String::with_capacity(text.len());
    let mut removal = None;
    let mut kept_up_to = 0;
    for tag in HTML_IMG.find_iter(text) {
        if crosses_a_block(text, tag.range()) {
            continue;
        }
        let mut emptied = false;
        let attributes_start = tag.start() + "<img".len();
        for attribute in HTML_ATTRIBUTE.captures_iter(&text[attributes_start..tag.end()]) {
            let Some(value) = attribute.get(2) else {
                continue;
            };
            let alt = value.as_str().trim_matches(['"', '\'']);
            if !attribute[1].eq_ignore_ascii_case("alt") || alt.trim().is_empty() {
                continue;
            }
            out.push_str(&text[kept_up_to..attributes_start + value.start()]);
            out.push_str("\"\"");
            kept_up_to = attributes_start + value.end();
            if !emptied {
                tally(&mut removal, RemovalKind::ImageAltText, alt);
                emptied = true;
            }
        }
    }
    out.push_str(&text[kept_up_to..]);
    (out, removal)
}

/// Whether the lines that `span` of `text` runs over hold one a renderer reads as a block
/// boundary (a blank line, a code fence): what spans it is not one image.
fn crosses_a_block(text: &str, span: std::ops::Range<usize>) -> bool {
    let line_end = text[span.end..]
        .find('\n')
        .map_or(text.len(), |at| span.end + at);
    text[span.start..line_end]
        .lines()
        .skip(1)
        .any(|line| line.trim().is_empty() || opens_fence(line).is_some())
}
