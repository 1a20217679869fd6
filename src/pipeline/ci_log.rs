//! A failed CI job's log cut to what a model needs: terminal colours, timestamps and section
//! markers removed, the first error kept, and the end of the log within a byte budget.

/// Words that mark the line where a failure shows itself.
const ERROR_MARKERS: [&str; 8] = [
    "error",
    "FAILED",
    "FAIL:",
    "failed",
    "panicked",
    "Traceback",
    "Exception",
    "AssertionError",
];

/// Lines kept from the first error on, when the end of the log does not reach back to it.
const FIRST_ERROR_LINES: usize = 20;

/// `log` cleaned and cut to at most about `max_bytes`: its end and, when that leaves it out,
/// the lines from the first error on.
pub fn excerpt(log: &str, max_bytes: usize) -> String {
    let lines: Vec<String> = log.lines().map(clean_line).collect();
    let total: usize = lines.iter().map(|line| line.len() + 1).sum();
    if total <= max_bytes {
        return lines.join("\n");
    }
    let tail_budget = max_bytes - max_bytes / 4;
    let mut tail_start = lines.len();
    let mut used = 0;
    while tail_start > 0 && used + lines[tail_start - 1].len() < tail_budget {
        tail_start -= 1;
        used += lines[tail_start].len() + 1;
    }
    let mut text = String::new();
    let first_error = lines[..tail_start]
        .iter()
        .position(|line| ERROR_MARKERS.iter().any(|marker| line.contains(marker)));
    if let Some(first) = first_error {
        let head_budget = max_bytes / 4;
        let mut kept = 0;
        for line in lines[first..tail_start].iter().take(FIRST_ERROR_LINES) {
            if kept + line.len() > head_budget {
                break;
            }
            text.push_str(line);
            text.push('\n');
            kept += line.len() + 1;
        }
        text.push_str("…\n");
    }
    text.push_str(&format!("… ({tail_start} earlier lines left out)\n"));
    text.push_str(&lines[tail_start..].join("\n"));
    text
}

/// One line without terminal colours, GitHub's timestamp, or what a carriage return
/// overwrote (GitLab's section markers end in one, so they go too).
fn clean_line(line: &str) -> String {
    let line = line
        .rsplit('\r')
        .find(|part| !part.is_empty())
        .unwrap_or("");
    let line = strip_ansi(line);
    strip_timestamp(&line).to_owned()
}

fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'[') {
            chars.next();
            // Parameters and intermediates up to the final byte (a letter or `@`…`~`).
            for next in chars.by_ref() {
                if ('@'..='~').contains(&next) {
                    break;
                }
            }
        }
    }
    out
}

/// GitHub Actions' `2024-05-01T10:11:12.1234567Z ` line prefix.
fn strip_timestamp(line: &str) -> &str {
    let bytes = line.as_bytes();
    let looks_like = bytes.len() > 21
        && bytes[4] == b'-'
        && bytes[7] == b'-'
        && bytes[10] == b'T'
        && bytes[..4].iter().all(u8::is_ascii_digit);
    if !looks_like {
        return line;
    }
    match line.find("Z ") {
        Some(end) if end < 40 => &line[end + 2..],
        _ => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_timestamps_and_overwritten_progress_are_removed() {
        let log = "2024-05-01T10:11:12.1234567Z \u{1b}[31merror\u{1b}[0m: mismatched types\n\
                   downloading 10%\rdownloading 100%\n\
                   section_start:1700000000:step_script\r\u{1b}[0K$ cargo test";
        assert_eq!(
            excerpt(log, 10_000),
            "error: mismatched types\ndownloading 100%\n$ cargo test"
        );
    }

    #[test]
    fn a_long_log_keeps_its_first_error_and_its_end() {
        let mut log =
            String::from("compiling\nerror[E0308]: mismatched types\n  --> src/lib.rs:3:5\n");
        for index in 0..2_000 {
            log.push_str(&format!("noise line {index}\n"));
        }
        log.push_str("test result: FAILED. 1 passed; 1 failed\n");
        let cut = excerpt(&log, 2_000);
        assert!(cut.len() <= 2_100, "{}", cut.len());
        assert!(
            cut.starts_with("error[E0308]: mismatched types\n  --> src/lib.rs:3:5\n"),
            "{cut}"
        );
        assert!(cut.contains("earlier lines left out"));
        assert!(
            cut.ends_with("test result: FAILED. 1 passed; 1 failed"),
            "{cut}"
        );
    }

    #[test]
    fn a_short_log_is_kept_whole() {
        assert_eq!(excerpt("a\nb", 100), "a\nb");
    }
}
