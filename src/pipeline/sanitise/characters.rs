//! The characters a renderer shows as nothing or that reorder the text around them: which they
//! are, and removing them, an emoji's own presentation selector kept.

use unicode_properties::UnicodeEmoji;

use super::{Removal, RemovalKind, tally};

/// Unicode's Default_Ignorable_Code_Point property (DerivedCoreProperties.txt): characters a
/// renderer shows as nothing — zero-width characters, fillers, variation selectors (both
/// blocks, used to hide bytes after an emoji), the tag block (ASCII smuggling), and the
/// bidi controls, which [`is_bidi_control`] names apart.
pub fn is_default_ignorable(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{034F}'
            | '\u{061C}'
            | '\u{115F}'..='\u{1160}'
            | '\u{17B4}'..='\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{FFF0}'..='\u{FFF8}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0000}'..='\u{E0FFF}'
    )
}

/// The default-ignorable characters that are not bidi controls.
fn is_invisible(c: char) -> bool {
    is_default_ignorable(c) && !is_bidi_control(c)
}

/// Whether the emoji presentation selector U+FE0F between `before` and `after` belongs to an
/// emoji: right after an emoji character (`❤️`), or in a keycap (`1️⃣`). Anywhere else it
/// shows nothing and says nothing.
fn selects_an_emoji(before: Option<char>, after: Option<char>) -> bool {
    match before {
        Some(base @ ('0'..='9' | '#' | '*')) => base.is_emoji_char() && after == Some('\u{20E3}'),
        Some(base) => base.is_emoji_char(),
        None => false,
    }
}

/// Invisible characters removed, an emoji's own presentation selector kept.
pub(super) fn remove_invisible_chars(text: &str) -> (String, Option<Removal>) {
    let mut out = String::with_capacity(text.len());
    let mut removal = None;
    let mut before = None;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let kept_selector = c == '\u{FE0F}' && selects_an_emoji(before, chars.peek().copied());
        if is_invisible(c) && !kept_selector {
            tally(
                &mut removal,
                RemovalKind::InvisibleCharacter,
                c.encode_utf8(&mut [0; 4]),
            );
        } else {
            out.push(c);
        }
        before = Some(c);
    }
    (out, removal)
}

/// Characters that reorder the text around them when displayed ("Trojan Source").
pub(super) fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}'
    )
}

pub(super) fn remove_chars(
    text: &str,
    kind: RemovalKind,
    hidden: fn(char) -> bool,
) -> (String, Option<Removal>) {
    let mut out = String::with_capacity(text.len());
    let mut removal = None;
    for c in text.chars() {
        if hidden(c) {
            tally(&mut removal, kind, c.encode_utf8(&mut [0; 4]));
        } else {
            out.push(c);
        }
    }
    (out, removal)
}
