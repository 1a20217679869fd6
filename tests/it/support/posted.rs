//! What the bot posts, made stable enough to snapshot whole: the fakes' loopback addresses and
//! commit ids change every run, so they are written as placeholders.

use std::sync::OnceLock;

use regex::Regex;

/// `text` with every `http://127.0.0.1:PORT` written `http://forge.test` and every commit id
/// (7 to 40 hexadecimal digits standing alone) written `<sha>`.
pub fn stable(text: &str) -> String {
    static ADDRESS: OnceLock<Regex> = OnceLock::new();
    static SHA: OnceLock<Regex> = OnceLock::new();
    let address = ADDRESS.get_or_init(|| Regex::new(r"http://127\.0\.0\.1:\d+").unwrap());
    let sha = SHA.get_or_init(|| Regex::new(r"\b[0-9a-f]{7,40}\b").unwrap());
    let text = address.replace_all(text, "http://forge.test");
    sha.replace_all(&text, "<sha>").into_owned()
}
