//! What an issue's text points at, read without a model: the paths and module paths it names,
//! the frames of its stack traces, the identifiers it writes as code, and its words.

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;

use super::tokens::tokens;

/// The title's words count this much more than the body's.
const TITLE_WEIGHT: f32 = 2.0;
/// A word repeated in the issue counts at most this much.
const MAX_TERM_WEIGHT: f32 = 4.0;

/// One frame of a stack trace: the file as the trace wrote it, the line, the function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub path: String,
    pub line: Option<u32>,
    pub function: Option<String>,
}

/// An identifier the issue names, and whether it was written as code (in backticks, a call,
/// `snake_case`, `CamelCase`, a dotted or `::` path) rather than a plain word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identifier {
    pub name: String,
    pub code_like: bool,
}

/// The issue's signals, in order of first appearance.
#[derive(Debug, Clone, Default)]
pub struct IssueQuery {
    /// Path-like words (`src/lib.rs`, `parser.py`, `Makefile`).
    pub mentions: Vec<String>,
    /// Module paths split into parts (`requests.sessions`, `crate::edits::apply`).
    pub modules: Vec<Vec<String>>,
    pub frames: Vec<Frame>,
    pub identifiers: Vec<Identifier>,
    /// The words for BM25, with weights (title words count more).
    pub terms: Vec<(String, f32)>,
    /// Whether the issue is about tests or documentation, which are then not ranked down.
    pub about_tests: bool,
    pub about_docs: bool,
}

static PYTHON_FRAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"File "([^"\n]+)", line (\d+)(?:, in ([A-Za-z_<>][\w<>]*))?"#).expect("regex")
});

static PATH_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"((?:[A-Za-z]:)?[\w.@+\-/\\]*[\w\-]\.(?:py|pyi|rs|go|js|jsx|mjs|cjs|ts|tsx|mts|java|kt|rb|c|h|cc|cpp|hpp|cs|php|scala|swift)):(\d+)(?::\d+)?",
    )
    .expect("regex")
});

static JAVA_FRAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"at ((?:[\w$]+\.)+)([\w$<>]+)\(([\w$]+\.(?:java|kt|scala)):(\d+)\)").expect("regex")
});

static PATH_LIKE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[A-Za-z0-9_@+./\\-]+").expect("regex"));

static BACKTICKED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"`([^`\n]{1,200})`").expect("regex"));

static DOTTED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b[A-Za-z_][\w]*(?:(?:\.|::|#)[A-Za-z_][\w]*)+").expect("regex"));

/// `--show-capture`, `prefer-const`: options and names written in kebab case.
static KEBAB: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b[a-z][a-z0-9]*(?:-[a-z0-9]+)+\b").expect("regex"));

static WORD: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[A-Za-z_][A-Za-z0-9_]*(\()?").expect("regex"));

/// Title words that say an issue is about the tests themselves (`flaky`, `tests fail`).
const TEST_WORDS: &[&str] = &["flaky", "tests", "unittest", "conftest"];
const DOC_WORDS: &[&str] = &[
    "docs",
    "documentation",
    "docstring",
    "readme",
    "typo",
    "changelog",
];

impl IssueQuery {
    pub fn parse(title: &str, body: &str) -> IssueQuery {
        let text = format!("{title}\n{body}");
        let mut query = IssueQuery {
            terms: weighted_terms(title, body),
            ..IssueQuery::default()
        };
        kebab_forms(&text, &mut query.terms);
        query.frames = frames(&text);
        query.mentions = mentions(&text);
        query.modules = modules(&text);
        query.identifiers = identifiers(&text);
        // Plain words, stopwords kept: `tests` and `docs` are stopwords for ranking.
        let words = |text: &str| -> Vec<String> {
            text.split(|c: char| !c.is_ascii_alphanumeric())
                .filter(|word| !word.is_empty())
                .map(str::to_ascii_lowercase)
                .collect()
        };
        let title_words = words(title);
        let says =
            |list: &[&str], words: &[String]| words.iter().any(|w| list.contains(&w.as_str()));
        query.about_tests = says(TEST_WORDS, &title_words);
        query.about_docs = says(DOC_WORDS, &title_words);
        query
    }
}

fn weighted_terms(title: &str, body: &str) -> Vec<(String, f32)> {
    let mut weights: HashMap<String, f32> = HashMap::new();
    let mut order = Vec::new();
    for (text, weight) in [(title, TITLE_WEIGHT), (body, 1.0)] {
        for token in tokens(text) {
            let entry = weights.entry(token.clone()).or_insert_with(|| {
                order.push(token.clone());
                0.0
            });
            *entry = (*entry + weight).min(MAX_TERM_WEIGHT);
        }
    }
    order
        .into_iter()
        .map(|token| {
            let weight = weights[&token];
            (token, weight)
        })
        .collect()
}

/// A kebab-case word as code spells it (`show_capture`, `showcapture`), added to the terms:
/// an option `--show-capture` is usually read into such a name.
fn kebab_forms(text: &str, terms: &mut Vec<(String, f32)>) {
    for word in KEBAB.find_iter(text) {
        let parts: Vec<&str> = word.as_str().split('-').collect();
        for form in [parts.join("_"), parts.concat()] {
            if form.len() > 3 && !terms.iter().any(|(known, _)| *known == form) {
                terms.push((form, 1.0));
            }
        }
    }
}

fn frames(text: &str) -> Vec<Frame> {
    let mut found: Vec<(usize, Frame)> = Vec::new();
    for capture in PYTHON_FRAME.captures_iter(text) {
        found.push((
            capture.get(0).map_or(0, |m| m.start()),
            Frame {
                path: capture[1].to_owned(),
                line: capture[2].parse().ok(),
                function: capture.get(3).map(|m| m.as_str().to_owned()),
            },
        ));
    }
    for capture in JAVA_FRAME.captures_iter(text) {
        let package = capture[1].trim_end_matches('.').replace('.', "/");
        // `com.acme.Widget.render(Widget.java:12)`: the package folders, then the file.
        let folders = package.rsplit_once('/').map_or("", |(folders, _)| folders);
        let path = if folders.is_empty() {
            capture[3].to_owned()
        } else {
            format!("{folders}/{}", &capture[3])
        };
        found.push((
            capture.get(0).map_or(0, |m| m.start()),
            Frame {
                path,
                line: capture[4].parse().ok(),
                function: Some(capture[2].to_owned()),
            },
        ));
    }
    for capture in PATH_LINE.captures_iter(text) {
        let start = capture.get(0).map_or(0, |m| m.start());
        if found
            .iter()
            .any(|(at, frame)| *at <= start && frame.path.ends_with(&capture[1]))
        {
            continue;
        }
        found.push((
            start,
            Frame {
                path: capture[1].to_owned(),
                line: capture[2].parse().ok(),
                function: None,
            },
        ));
    }
    found.sort_by_key(|(at, _)| *at);
    found.into_iter().map(|(_, frame)| frame).collect()
}

/// Words that could be file paths: with a `/`, an extension, or a capital (`Makefile`).
fn mentions(text: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for word in PATH_LIKE.find_iter(text) {
        let mention = word
            .as_str()
            .trim_start_matches("./")
            .trim_end_matches(['.', '/', '-'])
            .replace('\\', "/");
        let plausible = mention.contains('/')
            || mention.rsplit_once('.').is_some_and(|(stem, ext)| {
                !stem.is_empty()
                    && (1..=5).contains(&ext.len())
                    && ext.chars().all(|c| c.is_ascii_alphanumeric())
            })
            || mention
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_uppercase())
            || (mention.contains(['-', '_'])
                && mention
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic()));
        if plausible && !mention.is_empty() && !found.contains(&mention) {
            found.push(mention);
        }
    }
    found
}

/// `a.b.c`, `a::b::c` and `a/b/c` names of two parts or more, as lists of parts.
fn modules(text: &str) -> Vec<Vec<String>> {
    let mut found: Vec<Vec<String>> = Vec::new();
    for word in DOTTED.find_iter(text).filter(|m| !is_file_name(text, m)) {
        let parts: Vec<String> = word
            .as_str()
            .split(['.', ':', '#'])
            .filter(|part| !part.is_empty())
            .map(str::to_owned)
            .collect();
        if parts.len() >= 2 && !found.contains(&parts) {
            found.push(parts);
        }
    }
    found
}

/// The identifiers the issue names: code-like ones first noted, plain words kept too (a
/// plain word that a file defines, such as `render`, is still a hint).
fn identifiers(text: &str) -> Vec<Identifier> {
    let mut found: Vec<Identifier> = Vec::new();
    let mut note = |name: &str, code_like: bool| {
        let name = name.trim_matches('_');
        if name.len() < 3 || name.len() > 80 || name.chars().all(|c| c.is_ascii_digit()) {
            return;
        }
        match found.iter_mut().find(|known| known.name == name) {
            Some(known) => known.code_like |= code_like,
            None => found.push(Identifier {
                name: name.to_owned(),
                code_like,
            }),
        }
    };
    for capture in BACKTICKED.captures_iter(text) {
        for word in WORD.find_iter(&capture[1]) {
            note(word.as_str().trim_end_matches('('), true);
        }
    }
    for dotted in DOTTED.find_iter(text).filter(|m| !is_file_name(text, m)) {
        for part in dotted.as_str().split(['.', ':', '#']) {
            if !part.is_empty() {
                note(part, true);
            }
        }
    }
    for word in KEBAB.find_iter(text) {
        note(&word.as_str().replace('-', "_"), true);
    }
    for capture in WORD.captures_iter(text) {
        let word = capture[0].trim_end_matches('(');
        let called = capture.get(1).is_some();
        note(word, called || looks_like_code(word));
    }
    found
}

/// Extensions that make a dotted word a file name (`api.rst`) rather than a module path.
const FILE_EXTENSIONS: &[&str] = &[
    "py", "pyi", "rs", "go", "js", "jsx", "mjs", "cjs", "ts", "tsx", "java", "kt", "rb", "c", "h",
    "cc", "cpp", "hpp", "cs", "php", "md", "rst", "txt", "toml", "yaml", "yml", "json", "cfg",
    "ini", "html", "css", "lock", "sh", "xml", "gradle",
];

/// Whether a dotted match is a file name: it follows a `/`, or ends in a file extension.
fn is_file_name(text: &str, found: &regex::Match) -> bool {
    let after_slash = text[..found.start()].ends_with(['/', '\\']);
    let extension = found.as_str().rsplit('.').next().unwrap_or_default();
    after_slash || FILE_EXTENSIONS.contains(&extension)
}

/// `snake_case`, `camelCase`, `CamelCase` with an inner capital, `SCREAMING_CASE`.
fn looks_like_code(word: &str) -> bool {
    let inner = word.trim_matches('_');
    let bytes = inner.as_bytes();
    inner.contains('_')
        || (bytes.iter().skip(1).any(u8::is_ascii_uppercase)
            && bytes.iter().any(u8::is_ascii_lowercase))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_tracebacks_give_files_lines_and_functions() {
        let query = IssueQuery::parse(
            "crash on send",
            "Traceback (most recent call last):\n  File \"/usr/lib/python3/site-packages/requests/sessions.py\", line 633, in send\n    r = adapter.send(request)\nKeyError: 'proxies'\n",
        );
        assert_eq!(
            query.frames,
            [Frame {
                path: "/usr/lib/python3/site-packages/requests/sessions.py".into(),
                line: Some(633),
                function: Some("send".into()),
            }]
        );
    }

    #[test]
    fn java_rust_go_and_javascript_frames() {
        let query = IssueQuery::parse(
            "panics",
            "at com.google.gson.Gson.fromJson(Gson.java:1227)\nthread 'main' panicked at src/parser.rs:41:9\n/home/me/go/src/cobra/command.go:1044 +0x1f\n    at Router.handle (/app/node_modules/express/lib/router/index.js:284:7)\n",
        );
        let paths: Vec<(&str, Option<u32>)> = query
            .frames
            .iter()
            .map(|frame| (frame.path.as_str(), frame.line))
            .collect();
        assert_eq!(
            paths,
            [
                ("com/google/gson/Gson.java", Some(1227)),
                ("src/parser.rs", Some(41)),
                ("/home/me/go/src/cobra/command.go", Some(1044)),
                ("/app/node_modules/express/lib/router/index.js", Some(284)),
            ]
        );
        assert_eq!(query.frames[0].function.as_deref(), Some("fromJson"));
    }

    #[test]
    fn code_like_identifiers_modules_and_mentions() {
        let query = IssueQuery::parse(
            "`Session.send` ignores proxies",
            "Calling rebuild_proxies() from requests.sessions works, see docs/api.rst and HTTPAdapter.",
        );
        let code: Vec<&str> = query
            .identifiers
            .iter()
            .filter(|id| id.code_like)
            .map(|id| id.name.as_str())
            .collect();
        assert_eq!(
            code,
            [
                "Session",
                "send",
                "requests",
                "sessions",
                "rebuild_proxies",
                "HTTPAdapter"
            ]
        );
        assert!(
            query
                .modules
                .contains(&vec!["requests".to_string(), "sessions".to_string()])
        );
        assert!(query.mentions.contains(&"docs/api.rst".to_string()));
        assert!(
            !query.about_docs,
            "a doc mentioned in passing is not a docs issue"
        );
    }

    #[test]
    fn title_words_weigh_more_than_body_words() {
        let query = IssueQuery::parse("proxy ignored", "the proxy setting");
        let weight = |word: &str| query.terms.iter().find(|(t, _)| t == word).unwrap().1;
        assert_eq!(weight("proxy"), 3.0);
        assert_eq!(weight("setting"), 1.0);
    }
}
