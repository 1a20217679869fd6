//! Sanitising issue and comment text before it reaches a prompt: what a maintainer reading the
//! rendered issue does not see (HTML comments, link reference comments, default-ignorable and
//! bidi characters, alt text) is removed.
//!
//! `characters` removes invisible and bidi characters, `comments` HTML comments and link
//! reference comments, `alt_texts` the alt text of images; the passes and the tally are here.

mod alt_texts;
mod characters;
mod comments;
#[cfg(test)]
mod tests;

use alt_texts::{empty_html_alt_texts, empty_markdown_alt_texts};
use characters::{is_bidi_control, remove_chars, remove_invisible_chars};
use comments::{remove_html_comments, remove_link_reference_comments};

pub use characters::is_default_ignorable;

/// How many characters of the first removed payload a [`Removal`] keeps as its sample.
const SAMPLE_CHARS: usize = 80;

/// What was taken out of a text, for the run log: one entry per kind, with how many.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Removal {
    pub kind: RemovalKind,
    pub count: usize,
    /// Up to the first 80 characters of the first removed payload, invisible and control
    /// characters escaped (`\u{200b}`, `\n`) so the log line shows them.
    pub sample: String,
}

/// The kinds of hidden payload, in the order [`sanitise`] reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RemovalKind {
    HtmlComment,
    InvisibleCharacter,
    BidiControl,
    LinkReferenceComment,
    ImageAltText,
}

impl std::fmt::Display for Removal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let count = self.count;
        let plural = if count == 1 { "" } else { "s" };
        match self.kind {
            RemovalKind::HtmlComment => write!(f, "removed {count} HTML comment{plural}")?,
            RemovalKind::InvisibleCharacter => {
                return write!(
                    f,
                    "removed {count} zero-width or invisible character{plural}"
                );
            }
            RemovalKind::BidiControl => {
                return write!(f, "removed {count} bidirectional control character{plural}");
            }
            RemovalKind::LinkReferenceComment => {
                write!(f, "removed {count} link reference comment{plural}")?
            }
            RemovalKind::ImageAltText => {
                write!(f, "removed the alt text of {count} image{plural}")?
            }
        }
        if self.sample.is_empty() {
            Ok(())
        } else {
            write!(f, " (first: \"{}\")", self.sample)
        }
    }
}

/// The text with hidden payloads removed, and what was removed (empty when nothing was).
///
/// Default-ignorable and bidi characters go first, so none can split a marker (`<\u{200b}!--`)
/// that the model would read once it is gone; then HTML comments, as a renderer sees them, and
/// the ones that removing a comment makes (`<!-<!---->-`); then image alt text, so a bracket in
/// one names no definition; then link reference comments. An "image" that runs over a blank
/// line or a code fence is none, so no removal changes the blocks a later step reads. What
/// comes out holds nothing a second pass would remove. Everything else, code blocks
/// included, is left byte for byte (a link reference definition inside a fenced code block is
/// shown as code, so it stays).
pub fn sanitise(text: &str) -> (String, Vec<Removal>) {
    let (mut clean, mut removals) = one_pass(text);
    // Removing one payload can still make another in ways no step foresaw (the halves of a tag
    // meeting once what stood between them is gone): passes repeat until one finds nothing.
    // Each removes something, so each text is shorter than the last.
    while !removals.is_empty() {
        let (next, more) = one_pass(&clean);
        if more.is_empty() {
            break;
        }
        clean = next;
        removals = [removals, more]
            .into_iter()
            .flatten()
            .fold(Vec::new(), add_removal);
    }
    (clean, removals)
}

/// Each step once, in the order [`sanitise`] gives.
fn one_pass(text: &str) -> (String, Vec<Removal>) {
    let (text, invisibles) = remove_invisible_chars(text);
    let (text, bidis) = remove_chars(&text, RemovalKind::BidiControl, is_bidi_control);
    let (text, comments) = remove_html_comments(&text);
    let (text, markdown_alts) = empty_markdown_alt_texts(&text);
    let (text, html_alts) = empty_html_alt_texts(&text);
    let (text, references) = remove_link_reference_comments(&text);
    let alts = merge(markdown_alts, html_alts);
    let removals = [comments, invisibles, bidis, references, alts]
        .into_iter()
        .flatten()
        .collect();
    (text, removals)
}

/// `removals` with `more` counted in, one entry per kind in the report's order, each keeping
/// the first sample.
fn add_removal(mut removals: Vec<Removal>, more: Removal) -> Vec<Removal> {
    match removals
        .iter_mut()
        .find(|removal| removal.kind == more.kind)
    {
        Some(removal) => removal.count += more.count,
        None => {
            removals.push(more);
            removals.sort_by_key(|removal| removal.kind);
        }
    }
    removals
}

/// Counts one more removal of `kind`, keeping the first payload as the sample.
fn tally(removal: &mut Option<Removal>, kind: RemovalKind, payload: &str) {
    match removal {
        Some(removal) => removal.count += 1,
        None => {
            *removal = Some(Removal {
                kind,
                count: 1,
                sample: sample_of(payload),
            })
        }
    }
}

/// Two tallies of the same kind as one, the sample from the first.
fn merge(first: Option<Removal>, second: Option<Removal>) -> Option<Removal> {
    match (first, second) {
        (Some(mut first), Some(second)) => {
            first.count += second.count;
            Some(first)
        }
        (first, second) => first.or(second),
    }
}

/// The first [`SAMPLE_CHARS`] characters of `payload`, hidden and control characters escaped.
fn sample_of(payload: &str) -> String {
    let mut sample = String::new();
    for c in payload.chars().take(SAMPLE_CHARS) {
        if c.is_control() || is_default_ignorable(c) {
            sample.extend(c.escape_default());
        } else {
            sample.push(c);
        }
    }
    sample
}
