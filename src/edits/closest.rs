//! What most resembles text that matched nowhere: the lines of a file (for a hunk, a SEARCH
//! block) or the paths of a repository (for a file that is not there), shown beside a refusal.

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

/// Up to `most` of `paths` that most resemble `wanted`, most alike first (ties in path order):
/// by file name without its extension (`parser` in `src/parser.rs` and `lib/parser.py`) counted
/// twice, and by the whole path, both case-blind. A path sharing no character pair with `wanted`
/// in either is never listed.
pub fn closest_paths<'a>(wanted: &str, paths: &'a [String], most: usize) -> Vec<&'a str> {
    let wanted_stem = bigrams(&stem(wanted));
    let wanted_path = bigrams(&wanted.to_lowercase());
    let mut scored: Vec<(f64, &str)> = paths
        .iter()
        .map(|path| {
            let by_name = shared_pairs(&wanted_stem, &bigrams(&stem(path)));
            let by_path = shared_pairs(&wanted_path, &bigrams(&path.to_lowercase()));
            ((2.0 * by_name + by_path) / 3.0, path.as_str())
        })
        .filter(|(score, _)| *score > 0.0)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    scored
        .into_iter()
        .take(most)
        .map(|(_, path)| path)
        .collect()
}

/// A path's file name without its last extension, in lower case: `src/Parser.rs` → `parser`.
/// A name of one character is kept with its dot so that it still has a character pair.
fn stem(path: &str) -> String {
    let name = path.rsplit('/').next().unwrap_or(path).to_lowercase();
    match name.rsplit_once('.') {
        Some((stem, _)) if stem.chars().count() > 1 => stem.to_string(),
        _ => name,
    }
}

/// [`dice`], where names without a character pair resemble nothing.
fn shared_pairs(a: &[(char, char)], b: &[(char, char)]) -> f64 {
    if a.is_empty() || b.is_empty() {
        0.0
    } else {
        dice(a, b)
    }
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

    fn paths(list: &[&str]) -> Vec<String> {
        list.iter().map(|path| path.to_string()).collect()
    }

    #[test]
    fn the_closest_paths_share_the_file_name_first_and_then_most_of_the_path() {
        let repo = paths(&[
            "README.md",
            "calc/lexer.py",
            "calc/parser.py",
            "docs/parsing.md",
            "setup.py",
            "tests/test_parser.py",
        ]);
        assert_eq!(
            closest_paths("src/parser.rs", &repo, 3),
            ["calc/parser.py", "tests/test_parser.py", "docs/parsing.md"]
        );
        assert_eq!(
            closest_paths("Calc/Lexer.PY", &repo, 1),
            ["calc/lexer.py"],
            "case-blind"
        );
        assert_eq!(closest_paths("src/parser.rs", &repo, 0), Vec::<&str>::new());
    }

    #[test]
    fn a_path_with_nothing_in_common_is_never_offered() {
        let repo = paths(&["zz", "x", "calc.py"]);
        assert_eq!(closest_paths("q", &repo, 5), Vec::<&str>::new());
        assert_eq!(closest_paths("calc.rs", &repo, 5), ["calc.py"]);
    }

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
