//! Context: what the model sees of the repository while editing — the planned files, then the
//! files the repository index ranks for the issue — whole when they fit, else by the spans that
//! matter with some lines around them, within a token budget; with each file's sha256.

use super::plan::{Operation, Plan, allowed_path};
use crate::anchored::{Tree, TreeError};
use crate::edits::apply::sha256_hex;
use crate::edits::paths::{PathRefusal, ProjectRoot, ProtectedPaths};
use crate::index::{Ranking, Span};

/// Bytes per token in the budget's estimate (a common rule of thumb for code and English).
pub const BYTES_PER_TOKEN: usize = 4;

/// Larger files are not read at all: no token budget would show them whole.
pub const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// Lines shown around each span, so an edit has context to anchor on.
pub const SPAN_PADDING: u32 = 6;

/// A file is shown whole when it takes at most this share of what is left of the budget.
const WHOLE_SHARE: f32 = 0.6;

/// A file without spans shows its first lines, at most this share of what is left.
const HEAD_SHARE: f32 = 0.15;

/// Tokens a file's heading costs in the prompt (path, hash, line numbers).
const HEADING_TOKENS: usize = 24;

/// One part of a file that is shown: its lines and their text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    pub span: Span,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextFile {
    pub path: String,
    /// The sha256 of the whole file on disk, whatever part of it is shown.
    pub sha256: String,
    pub total_lines: u32,
    /// What is shown, in line order; one piece holding every line when the file is whole.
    pub pieces: Vec<Piece>,
    /// Its place in the ranking (1 is first), `None` for a planned file the ranking missed.
    pub rank: Option<usize>,
    /// Why it is here: `planned`, then the ranking's reasons.
    pub why: Vec<String>,
}

impl ContextFile {
    /// Whether every line of the file is shown.
    pub fn whole(&self) -> bool {
        self.pieces.len() == 1
            && self.pieces[0].span.start == 1
            && self.pieces[0].span.end >= self.total_lines
    }

    /// The spans shown; empty when the file is whole.
    pub fn spans(&self) -> Vec<Span> {
        if self.whole() {
            Vec::new()
        } else {
            self.pieces.iter().map(|piece| piece.span).collect()
        }
    }

    /// Estimated tokens of what is shown.
    pub fn tokens(&self) -> usize {
        self.pieces
            .iter()
            .map(|piece| piece.text.len().div_ceil(BYTES_PER_TOKEN))
            .sum::<usize>()
            + HEADING_TOKENS
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Context {
    pub files: Vec<ContextFile>,
    /// Files that were wanted but left out (budget, missing, protected, binary), with why.
    pub omitted: Vec<(String, String)>,
    /// The budget it was built within.
    pub max_tokens: usize,
}

impl Context {
    /// Estimated tokens of everything shown.
    pub fn tokens(&self) -> usize {
        self.files.iter().map(ContextFile::tokens).sum()
    }

    pub fn file(&self, path: &str) -> Option<&ContextFile> {
        self.files.iter().find(|file| file.path == path)
    }
}

/// Builds the context for `plan` within `max_tokens` (estimated as bytes / 4).
///
/// The planned files come first (their planned line range counting as their first span), then
/// the ranked files in rank order. Each is shown whole when it takes at most 60 % of what is
/// left; otherwise its spans, padded and merged, most relevant first, while they fit; a file
/// with no span shows its first lines. Once the budget is spent, the rest is omitted. A planned
/// CREATE of a file that does not exist is simply absent.
pub fn build(
    root: &ProjectRoot,
    protected: &ProtectedPaths,
    plan: &Plan,
    ranking: &Ranking,
    max_tokens: usize,
) -> Context {
    let mut context = Context {
        max_tokens,
        ..Context::default()
    };
    let mut left = max_tokens;
    for wanted in wanted(plan, ranking) {
        if left <= HEADING_TOKENS {
            context.omitted.push((wanted.path, refusal(max_tokens)));
            continue;
        }
        let (path, bytes, text) = match read_wanted(root, protected, &wanted) {
            Ok(Some(read)) => read,
            Ok(None) => continue,
            Err(reason) => {
                context.omitted.push((wanted.path, reason.to_string()));
                continue;
            }
        };
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let pieces = choose_pieces(&lines, &wanted.spans, left);
        if pieces.is_empty() {
            context.omitted.push((path, refusal(max_tokens)));
            continue;
        }
        let file = ContextFile {
            path,
            sha256: sha256_hex(&bytes),
            total_lines: lines.len() as u32,
            pieces,
            rank: wanted.rank,
            why: wanted.why,
        };
        left = left.saturating_sub(file.tokens());
        context.files.push(file);
    }
    context
}

fn refusal(max_tokens: usize) -> String {
    format!(
        "over the context budget of {max_tokens} tokens (estimated as bytes / {BYTES_PER_TOKEN})"
    )
}

/// The whole file if it takes at most [`WHOLE_SHARE`] of `left`; else its spans, in order,
/// while they fit in that share (the first one at least in part); else (no span) its first lines.
fn choose_pieces(lines: &[&str], spans: &[Span], left: usize) -> Vec<Piece> {
    let everything = left.saturating_sub(HEADING_TOKENS) * BYTES_PER_TOKEN;
    let available = (everything as f32 * WHOLE_SHARE) as usize;
    let total: usize = lines.iter().map(|line| line.len()).sum();
    if lines.is_empty() {
        return vec![Piece {
            span: Span::new(1, 1),
            text: String::new(),
        }];
    }
    let last = lines.len() as u32;
    if total <= available {
        return vec![piece(lines, Span::new(1, last))];
    }
    let mut chosen: Vec<Span> = Vec::new();
    for span in spans {
        let padded = Span::new(
            span.start.saturating_sub(SPAN_PADDING),
            (span.end + SPAN_PADDING).min(last),
        );
        if padded.start > last {
            continue;
        }
        let mut with = chosen.clone();
        with.push(padded);
        let merged = merge(with);
        let cost: usize = merged.iter().map(|span| bytes_of(lines, *span)).sum();
        if cost <= available {
            chosen = merged;
        } else if chosen.is_empty() {
            // The best span alone does not fit: show as much of it as does.
            let cut = fit_lines(lines, padded, available);
            if let Some(cut) = cut {
                chosen.push(cut);
            }
            break;
        }
    }
    if chosen.is_empty() {
        let head_budget = (available as f32 * HEAD_SHARE) as usize;
        if let Some(head) = fit_lines(lines, Span::new(1, last), head_budget) {
            chosen.push(head);
        }
    }
    chosen.into_iter().map(|span| piece(lines, span)).collect()
}

fn piece(lines: &[&str], span: Span) -> Piece {
    Piece {
        span,
        text: lines[(span.start - 1) as usize..span.end as usize].concat(),
    }
}

fn bytes_of(lines: &[&str], span: Span) -> usize {
    lines[(span.start - 1) as usize..span.end as usize]
        .iter()
        .map(|line| line.len())
        .sum()
}

/// The longest run of whole lines from `span.start` within `limit` bytes, if any line fits.
fn fit_lines(lines: &[&str], span: Span, limit: usize) -> Option<Span> {
    let mut used = 0;
    let mut end = span.start - 1;
    for line in &lines[(span.start - 1) as usize..span.end as usize] {
        if used + line.len() > limit {
            break;
        }
        used += line.len();
        end += 1;
    }
    (end >= span.start).then(|| Span::new(span.start, end))
}

/// Sorted, with overlapping or touching spans joined.
fn merge(mut spans: Vec<Span>) -> Vec<Span> {
    spans.sort();
    let mut merged: Vec<Span> = Vec::new();
    for span in spans {
        match merged.last_mut() {
            Some(last) if span.start <= last.end + 1 => last.end = last.end.max(span.end),
            _ => merged.push(span),
        }
    }
    merged
}

/// A file the context would like to show: its spans, whether the plan creates it, its rank.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Wanted {
    path: String,
    created: bool,
    spans: Vec<Span>,
    rank: Option<usize>,
    why: Vec<String>,
}

/// The planned files (with their planned line range first among their spans), then the ranked
/// files, each once.
fn wanted(plan: &Plan, ranking: &Ranking) -> Vec<Wanted> {
    let mut wanted: Vec<Wanted> = Vec::new();
    let key = |path: &str| crate::edits::paths::normalise(path).unwrap_or_else(|_| path.to_owned());
    for change in &plan.file_changes {
        let path = key(&change.path);
        if wanted.iter().any(|known| known.path == path) {
            continue;
        }
        let ranked = ranking.position(&path);
        let mut spans: Vec<Span> = change
            .line_range
            .map(|(start, end)| Span::new(start.min(end), end.max(start)))
            .into_iter()
            .collect();
        let mut why = vec!["planned".to_owned()];
        if let Some(position) = ranked {
            spans.extend(ranking.files[position].spans.iter().copied());
            why.extend(ranking.files[position].why.iter().cloned());
        }
        wanted.push(Wanted {
            path,
            created: change.operation == Operation::Create,
            spans,
            rank: ranked.map(|position| position + 1),
            why,
        });
    }
    for (position, file) in ranking.files.iter().enumerate() {
        if wanted.iter().any(|known| known.path == file.path) {
            continue;
        }
        wanted.push(Wanted {
            path: file.path.clone(),
            created: false,
            spans: file.spans.clone(),
            rank: Some(position + 1),
            why: file.why.clone(),
        });
    }
    wanted
}

/// Why a wanted file that is there (or should be) is not shown.
#[derive(Debug, thiserror::Error)]
enum Unshown {
    #[error(transparent)]
    Refused(#[from] PathRefusal),
    #[error("the file does not exist")]
    Missing,
    #[error("the path is not a regular file")]
    NotAFile,
    #[error("the file is too large to show ({bytes} bytes; at most {MAX_FILE_BYTES} are read)")]
    TooLarge { bytes: u64 },
    #[error(transparent)]
    Link(TreeError),
    #[error("the file cannot be read: {0}")]
    NoTree(std::io::Error),
    #[error("the file cannot be read: {0}")]
    Unreadable(TreeError),
    #[error("binary file")]
    Binary,
    #[error("not UTF-8 text")]
    NotUtf8,
}

/// The file's normalised path, bytes and text; `None` for a planned new file not there yet.
fn read_wanted(
    root: &ProjectRoot,
    protected: &ProtectedPaths,
    wanted: &Wanted,
) -> Result<Option<(String, Vec<u8>, String)>, Unshown> {
    let path = allowed_path(&wanted.path, root, protected)?;
    let tree = Tree::open(root.path()).map_err(Unshown::NoTree)?;
    let bytes = match tree.read(&path, MAX_FILE_BYTES) {
        Ok(Some(bytes)) => bytes,
        Ok(None) if wanted.created => return Ok(None),
        Ok(None) => return Err(Unshown::Missing),
        Err(TreeError::NotAFile { .. } | TreeError::IsAFolder { .. }) => {
            return Err(Unshown::NotAFile);
        }
        Err(TreeError::TooLarge { bytes, .. }) => return Err(Unshown::TooLarge { bytes }),
        Err(error @ TreeError::Link { .. }) => return Err(Unshown::Link(error)),
        Err(error) => return Err(Unshown::Unreadable(error)),
    };
    if bytes.contains(&0) {
        return Err(Unshown::Binary);
    }
    let content = String::from_utf8(bytes.clone()).map_err(|_| Unshown::NotUtf8)?;
    Ok(Some((path, bytes, content)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::repo::RepoConfig;
    use crate::edits::paths::project_files;
    use crate::index::RepoIndex;
    use crate::index::query::IssueQuery;
    use crate::index::retrieve::{Method, rank};

    struct Repo {
        _dir: tempfile::TempDir,
        root: ProjectRoot,
        protected: ProtectedPaths,
    }

    impl Repo {
        fn with(files: &[(&str, &[u8])]) -> Repo {
            let dir = tempfile::tempdir().unwrap();
            for (path, content) in files {
                let absolute = dir.path().join(path);
                std::fs::create_dir_all(absolute.parent().unwrap()).unwrap();
                std::fs::write(absolute, content).unwrap();
            }
            let root = ProjectRoot::new(dir.path()).unwrap();
            let protected = RepoConfig::default().protected_paths(&root).unwrap();
            Repo {
                _dir: dir,
                root,
                protected,
            }
        }

        fn build(&self, issue: &str, plan: &Plan, max_tokens: usize) -> Context {
            let files = project_files(self.root.path()).unwrap();
            let index = RepoIndex::build(self.root.path(), &files);
            let ranking = rank(
                &index,
                &IssueQuery::parse("Something is wrong", issue),
                Method::Full,
            );
            build(&self.root, &self.protected, plan, &ranking, max_tokens)
        }
    }

    fn plan(changes: &[(&str, Operation)]) -> Plan {
        Plan {
            branch_name: None,
            plan_steps: vec!["Change it".into()],
            commit_summary: "change the thing".into(),
            ..Plan::changing(changes)
        }
    }

    fn paths(context: &Context) -> Vec<&str> {
        context.files.iter().map(|f| f.path.as_str()).collect()
    }

    fn text(file: &ContextFile) -> String {
        file.pieces
            .iter()
            .map(|piece| piece.text.as_str())
            .collect()
    }

    #[test]
    fn planned_files_come_first_then_the_files_the_issue_names() {
        let repo = Repo::with(&[
            ("README.md", b"readme\n"),
            ("src/lib.rs", b"lib\n"),
            ("src/parser.py", b"parser\n"),
            ("src/main.rs", b"main\n"),
        ]);
        let issue = "After src/main.rs calls into parser.py it fails.";
        let context = repo.build(issue, &plan(&[("src/lib.rs", Operation::Modify)]), 1000);
        let mut named = paths(&context)[1..3].to_vec();
        named.sort();
        assert_eq!(paths(&context)[0], "src/lib.rs");
        assert_eq!(named, ["src/main.rs", "src/parser.py"]);
        let lib = &context.files[0];
        assert_eq!(text(lib), "lib\n");
        assert!(lib.whole());
        assert_eq!(lib.sha256, sha256_hex(b"lib\n"));
        assert_eq!(lib.why[0], "planned");
        assert_eq!(context.files[1].why[0], "mentioned");
    }

    #[test]
    fn a_file_named_twice_is_shown_once() {
        let repo = Repo::with(&[("src/lib.rs", b"lib\n")]);
        let context = repo.build(
            "src/lib.rs, again ./src/lib.rs and lib.rs",
            &plan(&[("./src/lib.rs", Operation::Modify)]),
            1000,
        );
        assert_eq!(paths(&context), ["src/lib.rs"]);
    }

    /// A 300-line Python module whose `target` function the issue names, among filler.
    fn long_module() -> String {
        let mut text = String::new();
        for i in 0..140 {
            text.push_str(&format!("def filler_{i}():\n    return {i}\n"));
        }
        text.push_str("def target(values):\n    total = 0\n    for v in values:\n        total += v\n    return total\n");
        for i in 0..8 {
            text.push_str(&format!("X{i} = {i}\n"));
        }
        text
    }

    #[test]
    fn a_file_too_large_to_show_whole_is_shown_by_its_spans_with_lines_around_them() {
        let module = long_module();
        let repo = Repo::with(&[("pkg/sums.py", module.as_bytes())]);
        let context = repo.build("`target` returns the wrong total", &plan(&[]), 400);
        let file = context.file("pkg/sums.py").expect("the module is shown");
        assert!(!file.whole());
        // `target` is lines 281-285; six lines of padding each side.
        assert_eq!(file.spans(), [Span::new(275, 291)]);
        assert!(text(file).contains("def target(values):\n"));
        assert_eq!(
            file.sha256,
            sha256_hex(module.as_bytes()),
            "the hash is of the whole file"
        );
        assert!(
            file.why.contains(&"defines target".to_string()),
            "{:?}",
            file.why
        );
    }

    #[test]
    fn a_file_too_large_for_what_is_left_is_omitted_and_smaller_ones_still_fit() {
        let repo = Repo::with(&[
            ("a.rs", b"fn alpha() {}\n"),
            ("b.rs", &[b'/'; 400]),
            ("c.rs", b"fn gamma() {}\n"),
        ]);
        let plan = plan(&[
            ("a.rs", Operation::Modify),
            ("b.rs", Operation::Modify),
            ("c.rs", Operation::Modify),
        ]);
        let context = repo.build("", &plan, 60);
        assert_eq!(paths(&context), ["a.rs", "c.rs"]);
        assert!(
            context.omitted.iter().any(|(path, why)| path == "b.rs"
                && why.starts_with("over the context budget of 60 tokens"))
        );
        assert!(context.tokens() <= 60);
    }

    #[test]
    fn protected_missing_binary_and_non_utf8_files_are_omitted_with_why() {
        let repo = Repo::with(&[
            (".github/workflows/ci.yml", b"on: push\n"),
            ("logo.png", b"\x89PNG\r\n\x1a\n\0\0"),
            ("latin1.txt", b"caf\xe9\n"),
            ("ok.rs", b"ok\n"),
        ]);
        let plan = plan(&[
            ("ok.rs", Operation::Modify),
            ("gone.rs", Operation::Modify),
            ("logo.png", Operation::Modify),
            (".github/workflows/ci.yml", Operation::Modify),
            ("latin1.txt", Operation::Modify),
        ]);
        let context = repo.build("", &plan, 1000);
        assert_eq!(paths(&context), ["ok.rs"]);
        assert_eq!(
            context.omitted,
            [
                ("gone.rs".to_string(), "the file does not exist".to_string()),
                ("logo.png".to_string(), "binary file".to_string()),
                (
                    ".github/workflows/ci.yml".to_string(),
                    "the path is protected (rule `.github/workflows/**`)".to_string()
                ),
                ("latin1.txt".to_string(), "not UTF-8 text".to_string()),
            ]
        );
    }

    #[test]
    fn a_planned_new_file_is_simply_absent_and_an_existing_one_shown() {
        let repo = Repo::with(&[("src/new.rs", b"already here\n")]);
        let absent = repo.build("", &plan(&[("src/other.rs", Operation::Create)]), 1000);
        assert!(absent.file("src/other.rs").is_none());
        assert!(absent.omitted.is_empty());
        let present = repo.build("", &plan(&[("src/new.rs", Operation::Create)]), 1000);
        assert_eq!(paths(&present), ["src/new.rs"]);
    }

    #[test]
    fn a_planned_line_range_is_the_first_span_of_its_file() {
        let module = long_module();
        let repo = Repo::with(&[("pkg/sums.py", module.as_bytes())]);
        let mut plan = plan(&[("pkg/sums.py", Operation::Modify)]);
        plan.file_changes[0].line_range = Some((20, 21));
        let context = repo.build("", &plan, 200);
        assert_eq!(context.files[0].spans()[0], Span::new(14, 27));
    }
}
