//! What the bot posts, made stable enough to snapshot whole: the fakes' loopback addresses,
//! commit ids, how long commands took and the tests' temporary directories change every run, so
//! they are written as placeholders.

use std::sync::OnceLock;

use regex::Regex;

/// `text` with every `http://127.0.0.1:PORT` written `http://forge.test`, every commit id (7 to
/// 40 hexadecimal digits standing alone) `<sha>`, every duration (`983 ms`, `1.2 s`, pytest's `0.03s`)
/// `<duration>`, and every temporary directory a test made (`/tmp/.tmpAb12Cd`, as a traceback
/// quotes a file of the job's working copy) `<tmp>`.
pub fn stable(text: &str) -> String {
    static TEMP_DIR: OnceLock<Regex> = OnceLock::new();
    static ADDRESS: OnceLock<Regex> = OnceLock::new();
    static SHA: OnceLock<Regex> = OnceLock::new();
    static DURATION: OnceLock<Regex> = OnceLock::new();
    let temp_dir =
        TEMP_DIR.get_or_init(|| Regex::new(r"(?:/[\w.-]+)*/\.tmp[0-9A-Za-z]{6}\b").unwrap());
    let address = ADDRESS.get_or_init(|| Regex::new(r"http://127\.0\.0\.1:\d+").unwrap());
    let sha = SHA.get_or_init(|| Regex::new(r"\b[0-9a-f]{7,40}\b").unwrap());
    let duration = DURATION.get_or_init(|| Regex::new(r"\b\d+(?:\.\d+)? ?(?:ms|s|min)\b").unwrap());
    let text = temp_dir.replace_all(text, "<tmp>");
    let text = address.replace_all(&text, "http://forge.test");
    let text = sha.replace_all(&text, "<sha>");
    duration.replace_all(&text, "<duration>").into_owned()
}
