//! Issue and comment text through the sanitiser, and outside text through the quoting the bot
//! uses in prompts and posts: nothing hidden survives, a second pass changes nothing, no line
//! closes a fence early and a one-line field stays one line.
#![no_main]

use autofix::pipeline::sanitise::{is_default_ignorable, sanitise};
use autofix::quote::{fenced, inert, one_line};
use libfuzzer_sys::fuzz_target;
use unicode_properties::UnicodeEmoji;

fuzz_target!(|data: &[u8]| {
    let text = autofix_fuzz::text(data);

    let (clean, removals) = sanitise(&text);
    assert_eq!(
        removals.is_empty(),
        clean == text,
        "a removal is reported iff text was removed"
    );
    assert!(
        !clean.contains("<!--"),
        "no HTML comment opener survives: {clean:?}"
    );
    let mut before = None;
    for c in clean.chars() {
        if c == '\u{FE0F}' {
            assert!(
                before.is_some_and(|b: char| b.is_emoji_char()),
                "an emoji selector follows an emoji: {clean:?}"
            );
        } else {
            assert!(
                !is_default_ignorable(c),
                "hidden {c:?} survives in {clean:?}"
            );
        }
        before = Some(c);
    }
    let (again, more) = sanitise(&clean);
    assert_eq!(again, clean, "a second pass changes nothing");
    assert!(more.is_empty(), "a second pass finds nothing: {more:?}");

    let block = fenced("text", &text);
    let fence_len = block.len() - block.trim_start_matches('`').len();
    let inner = &block[fence_len + "text\n".len()..block.len() - fence_len - 1];
    for line in inner.lines() {
        let indented = line.trim_start_matches(' ');
        let run = indented.len() - indented.trim_start_matches('`').len();
        let closes = line.len() - indented.len() <= 3
            && run >= fence_len
            && indented[run..].trim().is_empty();
        assert!(
            !closes,
            "line {line:?} closes the fence of {fence_len} in {block:?}"
        );
    }
    assert!(block.ends_with(&format!("\n{}\n", "`".repeat(fence_len))));

    let line = one_line(&text);
    assert!(
        !line
            .chars()
            .any(|c| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}')),
        "one line stays one line: {line:?}"
    );
    let posted = inert(&text);
    assert!(
        !posted.contains('\n') && !posted.contains('\r'),
        "inert text is one line"
    );
});
