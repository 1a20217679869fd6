//! Context: the files the model sees while editing — the planned files, then files the issue
//! names, ranked, cut to a token budget — with their current sha256 for precondition checks.

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::sync::LazyLock;

use regex::Regex;

use super::issue::Issue;
use super::plan::{Operation, Plan, allowed_path};
use crate::edits::apply::sha256_hex;
use crate::edits::paths::{ProjectRoot, ProtectedPaths};

/// Bytes per token in the budget's estimate (a common rule of thumb for code and English).
pub const BYTES_PER_TOKEN: usize = 4;

/// A bare file name the issue mentions is followed only when it names at most this many
/// repository files; `mod.rs` in a big repository names too many to mean any one of them.
pub const MAX_FILES_PER_BARE_NAME: usize = 3;

/// Larger files are not read at all: no token budget would show them whole.
pub const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextFile {
    pub path: String,
    pub content: String,
    pub sha256: String,
    /// True when the content was cut to fit the budget.
    pub truncated: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Context {
    pub files: Vec<ContextFile>,
    /// Files that were wanted but left out (budget, missing, protected, binary), with why.
    pub omitted: Vec<(String, String)>,
}

/// Builds the context for `plan` within `max_tokens` (estimated as bytes / 4).
///
/// Ranked: the planned files in plan order, then repository files the issue's title or body
/// names (by path, path suffix, or bare file name), in order of first mention. Whole files are
/// taken while they fit; the first that does not is cut at a line boundary and every later
/// one is omitted. A planned CREATE of a file that does not exist is simply absent.
pub fn build(
    root: &ProjectRoot,
    protected: &ProtectedPaths,
    issue: &Issue,
    plan: &Plan,
    repo_files: &[String],
    max_tokens: usize,
) -> Context {
    let mut context = Context::default();
    let mut budget = Budget::new(max_tokens);
    for wanted in ranked(plan, issue, repo_files) {
        match read_wanted(root, protected, &wanted) {
            Ok(None) => {}
            Ok(Some((path, bytes, content))) => match budget.take(&content) {
                Some((shown, truncated)) => context.files.push(ContextFile {
                    path,
                    content: shown,
                    sha256: sha256_hex(&bytes),
                    truncated,
                }),
                None => context.omitted.push((path, budget.refusal())),
            },
            Err(reason) => context.omitted.push((wanted.path, reason)),
        }
    }
    context
}

/// A file the context would like to show, and whether the plan creates it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Wanted {
    path: String,
    created: bool,
}

/// The planned files, then the files the issue names, each once.
fn ranked(plan: &Plan, issue: &Issue, repo_files: &[String]) -> Vec<Wanted> {
    let mut seen = HashSet::new();
    let mut wanted = Vec::new();
    let planned = plan.file_changes.iter().map(|change| Wanted {
        path: change.path.clone(),
        created: change.operation == Operation::Create,
    });
    let named = files_named_in(issue, repo_files)
        .into_iter()
        .map(|path| Wanted {
            path,
            created: false,
        });
    for candidate in planned.chain(named) {
        let key = crate::edits::paths::normalise(&candidate.path)
            .unwrap_or_else(|_| candidate.path.clone());
        if seen.insert(key) {
            wanted.push(candidate);
        }
    }
    wanted
}

/// Words that could be file names: letters, digits and `_ . / -`.
static PATH_LIKE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[A-Za-z0-9_./-]+").expect("the path pattern compiles"));

/// Repository files the issue's title and body mention, in order of first mention.
///
/// A mention is a whole repository path (`src/lib.rs`), the end of one at a folder boundary
/// (`pipeline/plan.rs`), or a bare file name (`parser.py`) naming at most
/// [`MAX_FILES_PER_BARE_NAME`] files. A mention without a `.`, a `/` or a capital letter is
/// taken for an ordinary word (`build`, `test`), not a file (`Makefile` still counts).
pub fn files_named_in(issue: &Issue, repo_files: &[String]) -> Vec<String> {
    let text = format!("{}\n{}", issue.title, issue.body);
    let by_name = index_by_file_name(repo_files);
    let mut found: Vec<String> = Vec::new();
    for word in PATH_LIKE.find_iter(&text) {
        let mention = word
            .as_str()
            .trim_start_matches("./")
            .trim_end_matches(['.', '/']);
        if !looks_like_a_file(mention) {
            continue;
        }
        for path in files_matching(mention, &by_name) {
            if !found.contains(path) {
                found.push(path.clone());
            }
        }
    }
    found
}

/// The repository's paths grouped by their last component, so a mention is looked up once.
fn index_by_file_name(repo_files: &[String]) -> HashMap<&str, Vec<&String>> {
    let mut by_name: HashMap<&str, Vec<&String>> = HashMap::new();
    for path in repo_files {
        by_name.entry(file_name(path)).or_default().push(path);
    }
    by_name
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

fn looks_like_a_file(mention: &str) -> bool {
    !mention.is_empty()
        && mention
            .chars()
            .any(|c| c == '.' || c == '/' || c.is_ascii_uppercase())
}

/// The whole path the mention names, else the paths it ends at a folder boundary, unless
/// there are too many of those to mean any one.
fn files_matching<'a>(mention: &str, by_name: &HashMap<&str, Vec<&'a String>>) -> Vec<&'a String> {
    let Some(candidates) = by_name.get(file_name(mention)) else {
        return Vec::new();
    };
    if let Some(exact) = candidates.iter().find(|path| path.as_str() == mention) {
        return vec![*exact];
    }
    let suffix = format!("/{mention}");
    let matches: Vec<&String> = candidates
        .iter()
        .copied()
        .filter(|path| path.ends_with(&suffix))
        .collect();
    if matches.len() > MAX_FILES_PER_BARE_NAME {
        return Vec::new();
    }
    matches
}

/// The file's normalised path, bytes and text; `None` for a planned new file not there yet.
fn read_wanted(
    root: &ProjectRoot,
    protected: &ProtectedPaths,
    wanted: &Wanted,
) -> Result<Option<(String, Vec<u8>, String)>, String> {
    let path =
        allowed_path(&wanted.path, root, protected).map_err(|refusal| refusal.to_string())?;
    let absolute = root.path().join(&path);
    let metadata = match std::fs::metadata(&absolute) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return if wanted.created {
                Ok(None)
            } else {
                Err("the file does not exist".into())
            };
        }
        Err(error) => return Err(format!("the file cannot be read: {error}")),
    };
    if !metadata.is_file() {
        return Err("the path is not a regular file".into());
    }
    if metadata.len() > MAX_FILE_BYTES {
        return Err(format!(
            "the file is too large to show ({} bytes; at most {MAX_FILE_BYTES} are read)",
            metadata.len()
        ));
    }
    let bytes = read_at_most(&absolute, MAX_FILE_BYTES)
        .map_err(|error| format!("the file cannot be read: {error}"))?;
    if bytes.contains(&0) {
        return Err("binary file".into());
    }
    let content = String::from_utf8(bytes.clone()).map_err(|_| "not UTF-8 text".to_string())?;
    Ok(Some((path, bytes, content)))
}

/// Reads the file, never more than `limit` bytes even if it grew since it was measured.
fn read_at_most(path: &std::path::Path, limit: u64) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(limit)
        .read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// What is left of the budget, in bytes, and whether a file has already been cut.
struct Budget {
    max_tokens: usize,
    left: usize,
    exhausted: bool,
}

impl Budget {
    fn new(max_tokens: usize) -> Self {
        Budget {
            max_tokens,
            left: max_tokens.saturating_mul(BYTES_PER_TOKEN),
            exhausted: false,
        }
    }

    /// The content to show and whether it was cut; `None` once the budget is spent.
    fn take(&mut self, content: &str) -> Option<(String, bool)> {
        if self.exhausted {
            return None;
        }
        if content.len() <= self.left {
            self.left -= content.len();
            return Some((content.to_string(), false));
        }
        self.exhausted = true;
        let shown = whole_lines_within(content, self.left);
        self.left -= shown.len();
        (!shown.is_empty()).then(|| (shown.to_string(), true))
    }

    fn refusal(&self) -> String {
        format!(
            "over the context budget of {} tokens (estimated as bytes / {BYTES_PER_TOKEN})",
            self.max_tokens
        )
    }
}

/// The longest prefix of `content` made of whole lines and at most `limit` bytes long.
fn whole_lines_within(content: &str, limit: usize) -> &str {
    let mut end = 0;
    for line in content.split_inclusive('\n') {
        if end + line.len() > limit {
            break;
        }
        end += line.len();
    }
    &content[..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::repo::RepoConfig;
    use crate::pipeline::plan::FileChange;

    struct Repo {
        _dir: tempfile::TempDir,
        root: ProjectRoot,
        protected: ProtectedPaths,
        files: Vec<String>,
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
                files: files.iter().map(|(path, _)| path.to_string()).collect(),
            }
        }

        fn build(&self, issue: &Issue, plan: &Plan, max_tokens: usize) -> Context {
            build(
                &self.root,
                &self.protected,
                issue,
                plan,
                &self.files,
                max_tokens,
            )
        }
    }

    fn issue(body: &str) -> Issue {
        Issue {
            number: Some(1),
            title: "Something is wrong".into(),
            body: body.into(),
            labels: vec![],
        }
    }

    fn plan(changes: &[(&str, Operation)]) -> Plan {
        Plan {
            branch_name: None,
            plan_steps: vec!["Change it".into()],
            file_changes: changes
                .iter()
                .map(|(path, operation)| FileChange {
                    path: path.to_string(),
                    operation: *operation,
                    line_range: None,
                })
                .collect(),
            commit_summary: "change the thing".into(),
            scope: None,
        }
    }

    fn paths(context: &Context) -> Vec<&str> {
        context.files.iter().map(|f| f.path.as_str()).collect()
    }

    #[test]
    fn planned_files_come_first_then_the_files_the_issue_names() {
        let repo = Repo::with(&[
            ("README.md", b"readme\n"),
            ("src/lib.rs", b"lib\n"),
            ("src/parser.py", b"parser\n"),
            ("src/main.rs", b"main\n"),
        ]);
        let issue = issue("After src/main.rs calls into parser.py it fails; see src/lib.rs.");
        let plan = plan(&[("src/lib.rs", Operation::Modify)]);
        let context = repo.build(&issue, &plan, 1000);
        assert_eq!(
            paths(&context),
            ["src/lib.rs", "src/main.rs", "src/parser.py"]
        );
        assert!(context.omitted.is_empty());
        assert_eq!(context.files[0].content, "lib\n");
        assert_eq!(context.files[0].sha256, sha256_hex(b"lib\n"));
    }

    #[test]
    fn the_issue_may_name_a_file_by_the_end_of_its_path_or_an_extensionless_name() {
        let repo = Repo::with(&[
            ("Makefile", b"all:\n"),
            ("src/pipeline/plan.rs", b"plan\n"),
            ("src/build.rs", b"build\n"),
        ]);
        let issue = issue("The build breaks in pipeline/plan.rs, and the Makefile too.");
        let context = repo.build(&issue, &plan(&[("src/x.rs", Operation::Create)]), 1000);
        assert_eq!(paths(&context), ["src/pipeline/plan.rs", "Makefile"]);
    }

    #[test]
    fn a_bare_name_shared_by_many_files_is_too_vague_to_follow() {
        let repo = Repo::with(&[
            ("a/mod.rs", b"a\n"),
            ("b/mod.rs", b"b\n"),
            ("c/mod.rs", b"c\n"),
            ("d/mod.rs", b"d\n"),
            ("x/util.rs", b"x\n"),
            ("y/util.rs", b"y\n"),
        ]);
        let named = files_named_in(&issue("mod.rs and util.rs are wrong"), &repo.files);
        assert_eq!(named, ["x/util.rs", "y/util.rs"]);
    }

    #[test]
    fn a_file_named_twice_is_shown_once() {
        let repo = Repo::with(&[("src/lib.rs", b"lib\n")]);
        let issue = issue("src/lib.rs, again ./src/lib.rs and lib.rs");
        let context = repo.build(&issue, &plan(&[("./src/lib.rs", Operation::Modify)]), 1000);
        assert_eq!(paths(&context), ["src/lib.rs"]);
    }

    #[test]
    fn whole_files_fit_then_one_is_cut_at_a_line_and_the_rest_are_omitted() {
        let repo = Repo::with(&[
            ("a.rs", b"0123456789abcdef\n"),               // 17 bytes
            ("b.rs", b"line one\nline two\nline three\n"), // 28 bytes
            ("c.rs", b"c\n"),
        ]);
        let plan = plan(&[
            ("a.rs", Operation::Modify),
            ("b.rs", Operation::Modify),
            ("c.rs", Operation::Modify),
        ]);
        // 10 tokens = 40 bytes: a.rs whole (17), then 23 left: two lines of b.rs (18).
        let context = repo.build(&issue(""), &plan, 10);
        assert_eq!(paths(&context), ["a.rs", "b.rs"]);
        assert!(!context.files[0].truncated);
        assert_eq!(context.files[1].content, "line one\nline two\n");
        assert!(context.files[1].truncated);
        assert_eq!(
            context.files[1].sha256,
            sha256_hex(b"line one\nline two\nline three\n"),
            "the hash is of the file on disk, not of the part shown"
        );
        assert_eq!(
            context.omitted,
            [(
                "c.rs".to_string(),
                "over the context budget of 10 tokens (estimated as bytes / 4)".to_string()
            )]
        );
    }

    #[test]
    fn a_file_whose_first_line_does_not_fit_is_omitted_rather_than_shown_empty() {
        let repo = Repo::with(&[("a.rs", b"a very long first line\n")]);
        let context = repo.build(&issue(""), &plan(&[("a.rs", Operation::Modify)]), 2);
        assert!(context.files.is_empty());
        assert_eq!(context.omitted[0].0, "a.rs");
        assert!(
            context.omitted[0]
                .1
                .starts_with("over the context budget of 2 tokens")
        );
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
        ]);
        let issue = issue("See .github/workflows/ci.yml and latin1.txt");
        let context = repo.build(&issue, &plan, 1000);
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
    fn a_planned_new_file_is_simply_absent() {
        let repo = Repo::with(&[("src/lib.rs", b"lib\n")]);
        let context = repo.build(
            &issue(""),
            &plan(&[("src/new.rs", Operation::Create)]),
            1000,
        );
        assert_eq!(context, Context::default());
    }

    #[test]
    fn a_planned_new_file_that_already_exists_is_shown() {
        let repo = Repo::with(&[("src/new.rs", b"already here\n")]);
        let context = repo.build(
            &issue(""),
            &plan(&[("src/new.rs", Operation::Create)]),
            1000,
        );
        assert_eq!(paths(&context), ["src/new.rs"]);
    }

    #[test]
    fn ordinary_words_are_not_taken_for_files() {
        let repo = Repo::with(&[("build", b"#!/bin/sh\n"), ("test", b"x\n")]);
        let named = files_named_in(&issue("the build and test steps fail"), &repo.files);
        assert!(named.is_empty(), "{named:?}");
    }
}
