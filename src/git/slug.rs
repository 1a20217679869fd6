//! `slugify`: turns an issue title, which anyone can write, into the short lowercase ASCII words
//! a branch name may carry.

/// Longest slug, in bytes (the slug is ASCII, so also in characters).
pub const SLUG_MAX_LEN: usize = 40;

/// What a title without a single usable letter or digit becomes.
pub const EMPTY_SLUG: &str = "issue";

/// Lowercase ASCII words joined by single `-`, at most [`SLUG_MAX_LEN`] characters, cut at a word
/// boundary when one exists. Latin letters with diacritics lose them (`é` → `e`, `ß` → `ss`),
/// apostrophes vanish (`don't` → `dont`), every other character separates words, and a title
/// with nothing left becomes [`EMPTY_SLUG`].
pub fn slugify(title: &str) -> String {
    let words = ascii_words(title);
    let slug = cut_at_word_boundary(&words, SLUG_MAX_LEN);
    if slug.is_empty() {
        EMPTY_SLUG.to_string()
    } else {
        slug.to_string()
    }
}

/// The title as `a-b-c`: no leading, trailing or doubled `-`.
fn ascii_words(title: &str) -> String {
    let mut words = String::with_capacity(title.len());
    let mut separator_pending = false;
    for c in title.chars().flat_map(char::to_lowercase) {
        if is_invisible(c) {
            continue;
        }
        let mut ascii = [0u8; 4];
        let letters: &str = if c.is_ascii_alphanumeric() {
            c.encode_utf8(&mut ascii)
        } else {
            latin_letters(c)
        };
        if letters.is_empty() {
            separator_pending = true;
            continue;
        }
        if separator_pending && !words.is_empty() {
            words.push('-');
        }
        separator_pending = false;
        words.push_str(letters);
    }
    words
}

/// Characters that join rather than separate: apostrophes inside words, combining accents left
/// by decomposed text, zero-width and bidirectional formatting marks.
fn is_invisible(c: char) -> bool {
    matches!(c,
        '\'' | '\u{2019}'
        | '\u{0300}'..='\u{036F}'
        | '\u{200B}'..='\u{200F}'
        | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{2069}'
        | '\u{FEFF}')
}

/// The ASCII letters of one lowercase Latin letter with diacritics, or "" for a separator.
fn latin_letters(c: char) -> &'static str {
    match c {
        'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' | 'ā' | 'ă' | 'ą' => "a",
        'æ' => "ae",
        'ç' | 'ć' | 'ĉ' | 'ċ' | 'č' => "c",
        'ď' | 'đ' | 'ð' => "d",
        'è' | 'é' | 'ê' | 'ë' | 'ē' | 'ĕ' | 'ė' | 'ę' | 'ě' => "e",
        'ĝ' | 'ğ' | 'ġ' | 'ģ' => "g",
        'ĥ' | 'ħ' => "h",
        'ì' | 'í' | 'î' | 'ï' | 'ĩ' | 'ī' | 'ĭ' | 'į' | 'ı' => "i",
        'ĳ' => "ij",
        'ĵ' => "j",
        'ķ' => "k",
        'ĺ' | 'ļ' | 'ľ' | 'ŀ' | 'ł' => "l",
        'ñ' | 'ń' | 'ņ' | 'ň' | 'ŉ' => "n",
        'ò' | 'ó' | 'ô' | 'õ' | 'ö' | 'ø' | 'ō' | 'ŏ' | 'ő' => "o",
        'œ' => "oe",
        'ŕ' | 'ŗ' | 'ř' => "r",
        'ś' | 'ŝ' | 'ş' | 'š' | 'ș' => "s",
        'ß' => "ss",
        'ţ' | 'ť' | 'ŧ' | 'ț' => "t",
        'þ' => "th",
        'ù' | 'ú' | 'û' | 'ü' | 'ũ' | 'ū' | 'ŭ' | 'ů' | 'ű' | 'ų' => "u",
        'ŵ' => "w",
        'ý' | 'ÿ' | 'ŷ' => "y",
        'ź' | 'ż' | 'ž' => "z",
        _ => "",
    }
}

/// At most `max` bytes of `words`, ending at the last whole word that fits; a first word longer
/// than `max` is cut inside.
fn cut_at_word_boundary(words: &str, max: usize) -> &str {
    if words.len() <= max {
        return words;
    }
    if words.as_bytes()[max] == b'-' {
        return &words[..max];
    }
    match words[..max].rfind('-') {
        Some(last_separator) => &words[..last_separator],
        None => &words[..max],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_title_becomes_lowercase_words() {
        assert_eq!(
            slugify("Handle NULL values in Parser"),
            "handle-null-values-in-parser"
        );
    }

    #[test]
    fn punctuation_runs_collapse_into_one_separator() {
        assert_eq!(
            slugify("  fix: crash -- on   `save()`!! "),
            "fix-crash-on-save"
        );
    }

    #[test]
    fn accents_are_transliterated_and_apostrophes_join() {
        assert_eq!(
            slugify("Don't crash on Größe in café"),
            "dont-crash-on-grosse-in-cafe"
        );
        assert_eq!(slugify("Ÿ ÆON Łódź"), "y-aeon-lodz");
    }

    #[test]
    fn decomposed_accents_and_invisible_marks_do_not_split_words() {
        assert_eq!(slugify("cafe\u{0301} zero\u{200B}width"), "cafe-zerowidth");
    }

    #[test]
    fn scripts_without_latin_letters_are_dropped() {
        assert_eq!(slugify("Ошибка 500 в API"), "500-api");
        assert_eq!(slugify("\u{202E}תיקון באג"), EMPTY_SLUG);
        assert_eq!(slugify("🔥🔥🔥"), EMPTY_SLUG);
        assert_eq!(slugify(""), EMPTY_SLUG);
    }

    #[test]
    fn a_long_title_is_cut_at_the_last_word_that_fits() {
        let slug = slugify("the quick brown fox jumps over the lazy dog and keeps running");
        assert_eq!(slug, "the-quick-brown-fox-jumps-over-the-lazy");
        assert!(slug.len() <= SLUG_MAX_LEN);
    }

    #[test]
    fn a_word_ending_exactly_at_the_limit_is_kept_whole() {
        let title = format!("{} {}", "a".repeat(20), "b".repeat(19));
        assert_eq!(slugify(&format!("{title} more")), title.replace(' ', "-"));
    }

    #[test]
    fn a_single_overlong_word_is_cut_inside() {
        assert_eq!(slugify(&"x".repeat(500)), "x".repeat(40));
    }
}
