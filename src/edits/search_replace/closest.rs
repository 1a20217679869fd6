//! Finds the lines of a file that most resemble a SEARCH text that matched nowhere, and shows
//! them with their line numbers, so the person or model that wrote the block can see the slip.

/// The most lines a message quotes from the file.
const MAX_QUOTED_LINES: usize = 12;

/// A sentence fragment quoting the closest lines of `file` to `search`, numbered from 1.
pub(super) fn describe(file: &[&str], search: &[&str]) -> String {
    let search: Vec<&str> = search
        .iter()
        .copied()
        .filter(|l| !l.trim().is_empty())
        .collect();
    if file.is_empty() {
        return "; the file is empty".to_string();
    }
    let (start, len) = crate::edits::closest::closest_window(file, &search);
    let quoted = len.min(MAX_QUOTED_LINES);
    let width = (start + quoted).to_string().len();
    let mut text = "; the closest lines of the file are:".to_string();
    for (n, line) in file[start..start + quoted].iter().enumerate() {
        text.push_str(&format!("\n{:>width$} | {line}", start + n + 1));
    }
    if quoted < len {
        text.push_str(&format!("\n{:>width$} | …", ""));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_with_the_nearly_identical_line_is_quoted_with_its_number() {
        let file = [
            "use std::io;",
            "",
            "fn parse(input: &str) -> u32 {",
            "    0",
            "}",
        ];
        let described = describe(&file, &["fn parse(input: &String) -> u32 {", "    0"]);
        assert_eq!(
            described,
            "; the closest lines of the file are:\n3 | fn parse(input: &str) -> u32 {\n4 |     0"
        );
    }

    #[test]
    fn a_long_search_is_quoted_only_in_part() {
        let file: Vec<String> = (1..=40).map(|n| format!("line {n}")).collect();
        let file: Vec<&str> = file.iter().map(String::as_str).collect();
        let described = describe(&file, &file[..20]);
        assert!(described.ends_with("12 | line 12\n   | …"), "{described}");
    }

    #[test]
    fn an_empty_file_is_said_to_be_empty() {
        assert_eq!(describe(&[], &["x"]), "; the file is empty");
    }
}
