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
    let (start, len) = closest_window(file, &search);
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

/// The window of `file`, as long as the search, whose lines resemble the search lines most.
fn closest_window(file: &[&str], search: &[&str]) -> (usize, usize) {
    let len = search.len().clamp(1, file.len());
    let file_grams: Vec<Vec<(char, char)>> = file.iter().map(|l| bigrams(l)).collect();
    let search_grams: Vec<Vec<(char, char)>> = search.iter().map(|l| bigrams(l)).collect();
    let score = |start: usize| -> f64 {
        search_grams
            .iter()
            .zip(&file_grams[start..start + len])
            .map(|(want, have)| dice(want, have))
            .sum()
    };
    let mut best = (0, f64::MIN);
    for start in 0..=file.len() - len {
        let s = score(start);
        if s > best.1 {
            best = (start, s);
        }
    }
    (best.0, len)
}

/// The sorted character pairs of a line, indentation and trailing spaces left out.
fn bigrams(line: &str) -> Vec<(char, char)> {
    let chars: Vec<char> = line.trim().chars().collect();
    let mut grams: Vec<(char, char)> = chars.windows(2).map(|w| (w[0], w[1])).collect();
    grams.sort_unstable();
    grams
}

/// Sørensen–Dice similarity of two sorted bigram lists, 1.0 for identical lines.
fn dice(a: &[(char, char)], b: &[(char, char)]) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let (mut i, mut j, mut shared) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                shared += 1;
                i += 1;
                j += 1;
            }
        }
    }
    2.0 * shared as f64 / (a.len() + b.len()) as f64
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
