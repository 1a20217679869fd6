//! What the bot posts, made stable enough to snapshot whole: the fakes' loopback addresses,
//! commit ids and how long commands took change every run, so they are written as placeholders.

use std::sync::OnceLock;

use regex::Regex;

/// `text` with every `http://127.0.0.1:PORT` written `http://forge.test`, every commit id (7 to
/// 40 hexadecimal digits standing alone) `<sha>`, and every duration (`983 ms`, `1.2 s`, pytest's `0.03s`)
/// `<duration>`.
pub fn stable(text: &str) -> String {
    static ADDRESS: OnceLock<Regex> = OnceLock::new();
    static SHA: OnceLock<Regex> = OnceLock::new();
    static DURATION: OnceLock<Regex> = OnceLock::new();
    let address = ADDRESS.get_or_init(|| Regex::new(r"http://127\.0\.0\.1:\d+").unwrap());
    let sha = SHA.get_or_init(|| Regex::new(r"\b[0-9a-f]{7,40}\b").unwrap());
    let duration = DURATION.get_or_init(|| Regex::new(r"\b\d+(?:\.\d+)? ?(?:ms|s|min)\b").unwrap());
    let text = address.replace_all(text, "http://forge.test");
    let text = sha.replace_all(&text, "<sha>");
    duration.replace_all(&text, "<duration>").into_owned()
}
