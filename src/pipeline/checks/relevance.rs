//! Which failing tests a change may be about: those naming an identifier the issue writes as
//! code or a file the change writes, or, when there is one, the issue's reproduction.

use std::collections::BTreeSet;

/// What tells a failing test the change may be about from one that merely already failed:
/// the identifiers the issue writes as code and the files the change writes. Prose words never
/// count: an issue about "an error loading the file" says nothing of `test_loading_error`. The
/// change has to fix only one of the tests it may be about (see [`compare`](fn@super::compare)).
#[derive(Debug, Clone, Default)]
pub struct Relevance {
    /// Lower-case letters and digits of each identifier: `load_dotenv` → `loaddotenv`.
    issue_identifiers: BTreeSet<String>,
    changed_stems: BTreeSet<String>,
    /// The tests written before the fix that reproduce the issue: when there are any, they
    /// are what the change is about, all of them must pass, and nothing is guessed.
    pub(super) reproduction: BTreeSet<String>,
}

impl Relevance {
    pub fn new<'a>(issue_text: &str, changed_paths: impl IntoIterator<Item = &'a String>) -> Self {
        Relevance {
            issue_identifiers: code_identifiers(issue_text)
                .filter(|identifier| identifier.len() >= 4)
                .filter(|identifier| !GENERIC_WORDS.contains(&identifier.as_str()))
                .collect(),
            changed_stems: changed_paths
                .into_iter()
                .filter_map(|path| file_stem(path))
                .collect(),
            reproduction: BTreeSet::new(),
        }
    }

    /// The change is about `tests`, the reproduction's: each must pass.
    pub fn reproduced_by<'a>(mut self, tests: impl IntoIterator<Item = &'a String>) -> Self {
        self.reproduction = tests.into_iter().cloned().collect();
        self
    }

    /// Whether `test` may be what the issue is about: its name holds an identifier the issue
    /// writes as code (`clamp` in backticks for `test_clamp_limits_both_ends`, `loadConfig`
    /// for `test_load_config_reads_env`), or the test's file or module tests a file the change
    /// writes (`test_calc.py::…` or `calc::tests::…` for `calc.py`/`calc.rs`; a Rust crate's
    /// root `tests::…` for `lib.rs`/`main.rs`).
    pub fn is_about(&self, test: &str) -> bool {
        let segments: Vec<&str> = test
            .split("::")
            .flat_map(|part| part.split(['/', ' ']))
            .filter(|part| !part.is_empty())
            .collect();
        let Some((function, path)) = segments.split_last() else {
            return false;
        };
        let name = squeezed(function);
        if self
            .issue_identifiers
            .iter()
            .any(|identifier| name.contains(identifier.as_str()))
        {
            return true;
        }
        let modules: Vec<String> = path
            .iter()
            .filter(|segment| !matches!(**segment, "tests" | "test"))
            .filter_map(|segment| test_subject(segment))
            .collect();
        if modules.is_empty() && path.first().is_some_and(|first| *first == "tests") {
            return ["lib", "main"]
                .iter()
                .any(|root| self.changed_stems.contains(*root));
        }
        modules
            .iter()
            .any(|module| self.changed_stems.contains(module))
    }
}

/// The identifiers `text` writes as code, squeezed (see [`squeezed`]): every word inside
/// backticks, and outside them the words shaped like code — `snake_case`, `camelCase`,
/// `dotted.paths` and `rust::paths` (each part), letters with digits inside.
fn code_identifiers(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split('`').enumerate().flat_map(|(index, piece)| {
        let quoted = index % 2 == 1;
        piece
            .split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':')))
            .flat_map(|token| {
                let parts: Vec<&str> = token
                    .split(['.', ':'])
                    .filter(|part| !part.is_empty())
                    .collect();
                let path = parts.len() > 1 && parts.iter().all(|part| part.len() >= 2);
                parts
                    .into_iter()
                    .filter(move |part| quoted || path || looks_like_code(part))
                    .map(squeezed)
                    .collect::<Vec<_>>()
            })
            .collect::<Vec<_>>()
    })
}

/// `parse_line`, `parseLine`, `utf8_decode`, `v2Api`: not a word of prose.
fn looks_like_code(word: &str) -> bool {
    let letters = word.chars().any(|c| c.is_ascii_alphabetic());
    let inner_underscore = word.trim_matches('_').contains('_');
    let camel = word
        .as_bytes()
        .windows(2)
        .any(|pair| pair[0].is_ascii_lowercase() && pair[1].is_ascii_uppercase());
    let digits = word.chars().any(|c| c.is_ascii_digit());
    letters && (inner_underscore || camel || digits)
}

/// Lower-case letters and digits only, so `load_dotenv`, `loadDotenv` and
/// `test_load_dotenv_error` compare: `loaddotenv` is in `testloaddotenverror`.
fn squeezed(text: &str) -> String {
    text.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// Identifiers that say nothing about what is tested, even written as code.
const GENERIC_WORDS: [&str; 16] = [
    "test", "tests", "should", "when", "with", "returns", "return", "works", "error", "errors",
    "case", "check", "that", "file", "files", "none",
];

/// `src/calc.py` → `calc`.
fn file_stem(path: &str) -> Option<String> {
    let name = path.rsplit('/').next()?;
    let stem = name.split('.').next()?;
    (!stem.is_empty()).then(|| stem.to_lowercase())
}

/// What a test file or module tests: `test_calc.py`, `calc_test.go`, `calc.test.ts`,
/// `CalcTest.java` and the Rust module `calc` all test `calc`.
fn test_subject(segment: &str) -> Option<String> {
    let stem = file_stem(segment)?;
    let subject = stem
        .strip_prefix("test_")
        .or_else(|| stem.strip_suffix("_test"))
        .or_else(|| stem.strip_suffix("_tests"))
        .or_else(|| stem.strip_suffix("test").filter(|rest| !rest.is_empty()))
        .unwrap_or(&stem);
    (!subject.is_empty()).then(|| subject.to_string())
}
