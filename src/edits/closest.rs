//! Which lines of a file most resemble text that matched nowhere (a hunk, a SEARCH block), so a
//! refusal can show the writer the real lines next to what they wrote.

/// The window of `file`, as long as `wanted` (at least one line, at most the file), whose lines
/// resemble `wanted` line by line the most: `(start, len)`, 0-based. `file` must not be empty.
pub fn closest_window<F: AsRef<str>, W: AsRef<str>>(file: &[F], wanted: &[W]) -> (usize, usize) {
    let len = wanted.len().clamp(1, file.len());
    let file_grams: Vec<Vec<(char, char)>> = file.iter().map(|l| bigrams(l.as_ref())).collect();
    let wanted_grams: Vec<Vec<(char, char)>> = wanted.iter().map(|l| bigrams(l.as_ref())).collect();
    let score = |start: usize| -> f64 {
        wanted_grams
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

/// The distinct character pairs of a line with all whitespace left out, sorted: whitespace
/// drift does not make two lines look different.
fn bigrams(line: &str) -> Vec<(char, char)> {
    let chars: Vec<char> = line.split_whitespace().flat_map(str::chars).collect();
    let mut pairs: Vec<(char, char)> = chars.windows(2).map(|w| (w[0], w[1])).collect();
    pairs.sort_unstable();
    pairs.dedup();
    pairs
}

/// Sørensen–Dice similarity of two sorted bigram sets; two empty lines are alike.
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
    fn the_most_similar_window_wins_whatever_the_whitespace() {
        let file = [
            "fn a() {",
            "    let x = 1;",
            "}",
            "fn b() {",
            "    let y = 2;",
            "}",
        ];
        assert_eq!(closest_window(&file, &["fn b(){", "let y=2;"]), (3, 2));
        assert_eq!(
            closest_window(&file, &["something else entirely"; 9]),
            (0, 6)
        );
    }
}
