//! Stories of the git layer told on real repositories made in temporary folders, each with its
//! own local identity; what the layer did is read back with the `git` command-line tool.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use autofix::failure::FailureCode;
use autofix::git::{
    BranchName, BranchOutcome, CommitKind, CommitMessage, CommitSha, DEFAULT_BRANCH_TEMPLATE,
    DirtyKind, GitError, Identity, Workspace,
};
use tempfile::TempDir;

// ---------------------------------------------------------------------------------------------
// The harness: a repository in a temporary folder, driven through the git CLI.

struct Repo {
    dir: TempDir,
    root: PathBuf,
}

impl Repo {
    /// A repository on `main` with one commit holding `README.md` and a `.gitignore` for `*.log`
    /// and `target/`.
    fn new() -> Repo {
        let repo = Repo::empty();
        repo.write("README.md", "# demo\n");
        repo.write(".gitignore", "*.log\ntarget/\n");
        repo.git(&["add", "-A"]);
        repo.git(&["commit", "-q", "-m", "chore(repo): start the demo project"]);
        repo
    }

    /// `git init -b main` with a local identity and no commit yet.
    fn empty() -> Repo {
        crate::isolate_libgit2();
        let dir = TempDir::new().unwrap();
        let root = dir.path().join("project");
        fs::create_dir(&root).unwrap();
        let repo = Repo { dir, root };
        repo.git(&["init", "-q", "-b", "main"]);
        repo.git(&["config", "user.name", "Test Person"]);
        repo.git(&["config", "user.email", "person@example.com"]);
        repo.git(&["config", "commit.gpgsign", "false"]);
        repo
    }

    fn workspace(&self) -> Workspace {
        Workspace::open(&self.root).unwrap()
    }

    /// Runs git in the repository and returns its stdout; a failing git fails the test.
    fn git(&self, args: &[&str]) -> String {
        let output = git_command(&self.root, args).output().unwrap();
        assert!(
            output.status.success(),
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.root.join(relative)
    }

    fn write(&self, relative: &str, content: &str) {
        let path = self.path(relative);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
    }

    fn read(&self, relative: &str) -> String {
        fs::read_to_string(self.path(relative)).unwrap()
    }

    fn commit_file(&self, relative: &str, content: &str, message: &str) -> String {
        self.write(relative, content);
        self.git(&["add", relative]);
        self.git(&["commit", "-q", "-m", message]);
        self.head()
    }

    fn head(&self) -> String {
        self.git(&["rev-parse", "HEAD"]).trim().to_string()
    }

    fn branch(&self) -> String {
        self.git(&["symbolic-ref", "--short", "HEAD"])
            .trim()
            .to_string()
    }

    fn porcelain(&self) -> String {
        self.git(&["status", "--porcelain", "--untracked-files=all"])
    }

    /// Everything a read-only operation must leave as it was: HEAD, status, index bytes.
    fn snapshot(&self) -> (String, String, Vec<u8>) {
        (
            self.git(&["rev-parse", "HEAD"]),
            self.porcelain(),
            fs::read(self.path(".git/index")).unwrap(),
        )
    }
}

/// git with no global or system configuration and no `GIT_*` variables leaking in from outside.
fn git_command(cwd: &Path, args: &[&str]) -> Command {
    let mut command = Command::new("git");
    command
        .args(args)
        .current_dir(cwd)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE");
    command
}

fn sha(value: &str) -> CommitSha {
    CommitSha::parse(value).unwrap()
}

fn branch(name: &str) -> BranchName {
    BranchName::new(name).unwrap()
}

fn bot() -> Identity {
    Identity::new("autofix[bot]", "autofix@example.com").unwrap()
}

fn maintainer() -> Identity {
    Identity::new("Ada Maintainer", "ada@example.com").unwrap()
}

fn job_message(summary: &str, job_id: &str) -> CommitMessage {
    CommitMessage::new(
        CommitKind::Fix,
        "parser",
        summary,
        None,
        Some(42),
        &bot(),
        Some(job_id),
    )
    .unwrap()
}

// ---------------------------------------------------------------------------------------------
// Opening a workspace.

#[test]
fn a_clean_repository_passes_preflight() {
    let repo = Repo::new();
    let workspace = repo.workspace();
    workspace.ensure_clean().unwrap();
    assert_eq!(workspace.root(), repo.root.canonicalize().unwrap());
    assert_eq!(workspace.head_commit().unwrap().as_str(), repo.head());
    assert_eq!(workspace.current_branch().unwrap().as_str(), "main");
}

#[test]
fn a_folder_that_is_not_a_repository_is_refused() {
    crate::isolate_libgit2();
    let dir = TempDir::new().unwrap();
    let error = Workspace::open(dir.path()).unwrap_err();
    assert!(matches!(error, GitError::NotARepository { .. }), "{error}");
    assert!(
        error.to_string().contains("is not a git repository"),
        "{error}"
    );
    assert_eq!(error.failure_code(), FailureCode::Preflight);
}

#[test]
fn a_missing_folder_is_refused() {
    crate::isolate_libgit2();
    let dir = TempDir::new().unwrap();
    let error = Workspace::open(dir.path().join("nowhere")).unwrap_err();
    assert!(matches!(error, GitError::NotARepository { .. }), "{error}");
    assert!(error.to_string().contains("cannot be opened"), "{error}");
}

#[test]
fn a_bare_repository_is_refused() {
    crate::isolate_libgit2();
    let dir = TempDir::new().unwrap();
    git_command(dir.path(), &["init", "-q", "--bare", "store.git"])
        .status()
        .unwrap();
    let error = Workspace::open(dir.path().join("store.git")).unwrap_err();
    assert!(matches!(error, GitError::Bare { .. }), "{error}");
    assert!(error.to_string().contains("bare"), "{error}");
    assert_eq!(error.failure_code(), FailureCode::Preflight);
}

#[test]
fn a_subdirectory_of_a_work_tree_is_refused_naming_the_root() {
    let repo = Repo::new();
    repo.commit_file(
        "src/lib.rs",
        "pub fn f() {}\n",
        "feat(lib): add the library file",
    );
    let error = Workspace::open(repo.path("src")).unwrap_err();
    match &error {
        GitError::NotRepositoryRoot { root, .. } => {
            assert_eq!(root, &repo.root.canonicalize().unwrap())
        }
        other => panic!("expected NotRepositoryRoot, got {other:?}"),
    }
    assert!(
        error
            .to_string()
            .contains("open the repository at its root")
    );
}

#[test]
fn a_linked_worktree_opens_at_its_own_root() {
    let repo = Repo::new();
    let linked = repo.dir.path().join("linked");
    repo.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        "side",
        linked.to_str().unwrap(),
    ]);
    let workspace = Workspace::open(&linked).unwrap();
    assert_eq!(workspace.root(), linked.canonicalize().unwrap());
    assert_eq!(workspace.current_branch().unwrap().as_str(), "side");
    workspace.ensure_clean().unwrap();
}

#[test]
fn the_git_folder_itself_is_not_a_work_tree() {
    let repo = Repo::new();
    let error = Workspace::open(repo.path(".git")).unwrap_err();
    assert!(
        matches!(error, GitError::NotRepositoryRoot { .. }),
        "{error}"
    );
}

#[test]
fn a_detached_head_has_a_commit_but_no_branch() {
    let repo = Repo::new();
    let first = repo.head();
    repo.commit_file("a.txt", "a\n", "feat(a): add the letter a file");
    repo.git(&["checkout", "-q", "--detach", &first]);
    let workspace = repo.workspace();
    assert_eq!(workspace.head_commit().unwrap().as_str(), first);
    let error = workspace.current_branch().unwrap_err();
    match &error {
        GitError::DetachedHead { at } => assert_eq!(at.as_str(), first),
        other => panic!("expected DetachedHead, got {other:?}"),
    }
    assert!(error.to_string().contains("detached"), "{error}");
    assert_eq!(error.failure_code(), FailureCode::Preflight);
}

#[test]
fn an_unborn_head_is_a_clear_error() {
    let repo = Repo::empty();
    let workspace = repo.workspace();
    for error in [
        workspace.head_commit().unwrap_err(),
        workspace.current_branch().unwrap_err(),
    ] {
        assert!(
            matches!(&error, GitError::UnbornHead { branch } if branch == "main"),
            "{error:?}"
        );
        assert_eq!(
            error.to_string(),
            "HEAD points to branch main, which has no commits yet"
        );
        assert_eq!(error.failure_code(), FailureCode::Preflight);
    }
}

// ---------------------------------------------------------------------------------------------
// Cloning.

#[test]
fn a_local_path_and_a_file_url_can_be_cloned() {
    let source = Repo::new();
    let dir = TempDir::new().unwrap();
    let by_path =
        Workspace::clone_local(source.root.to_str().unwrap(), dir.path().join("by-path")).unwrap();
    let url = format!("file://{}", source.root.display());
    let by_url = Workspace::clone_local(&url, dir.path().join("by-url")).unwrap();
    for clone in [by_path, by_url] {
        assert_eq!(clone.head_commit().unwrap().as_str(), source.head());
        assert_eq!(clone.current_branch().unwrap().as_str(), "main");
        assert_eq!(
            fs::read_to_string(clone.root().join("README.md")).unwrap(),
            "# demo\n"
        );
        clone.ensure_clean().unwrap();
    }
}

#[test]
fn a_network_url_is_refused_for_now() {
    crate::isolate_libgit2();
    let dir = TempDir::new().unwrap();
    for source in [
        "https://example.com/acme/widgets.git",
        "ssh://git@example.com/acme/widgets.git",
        "git@example.com:acme/widgets.git",
    ] {
        let error = Workspace::clone_local(source, dir.path().join("clone")).unwrap_err();
        assert!(
            matches!(error, GitError::UnsupportedCloneSource { .. }),
            "{source}: {error}"
        );
        assert_eq!(error.failure_code(), FailureCode::InvalidInput);
        assert!(!dir.path().join("clone").exists());
    }
}

#[test]
fn cloning_into_a_folder_that_holds_files_is_refused() {
    let source = Repo::new();
    let dir = TempDir::new().unwrap();
    fs::write(dir.path().join("keep.txt"), "mine\n").unwrap();
    let error = Workspace::clone_local(source.root.to_str().unwrap(), dir.path()).unwrap_err();
    assert!(
        matches!(error, GitError::CloneDestinationNotEmpty { .. }),
        "{error}"
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("keep.txt")).unwrap(),
        "mine\n"
    );
}

// ---------------------------------------------------------------------------------------------
// The clean-tree preflight.

fn assert_refused_as_dirty(repo: &Repo, path: &str, kind: DirtyKind) {
    let before = repo.snapshot();
    let error = repo.workspace().ensure_clean().unwrap_err();
    match &error {
        GitError::DirtyTree { paths, total, .. } => {
            assert_eq!(*total, 1, "{error}");
            assert_eq!(paths[0].path, path);
            assert_eq!(paths[0].kind, kind);
        }
        other => panic!("expected DirtyTree, got {other:?}"),
    }
    assert!(
        error
            .to_string()
            .ends_with(&format!("is not clean: {}: {path}", kind.as_str())),
        "{error}"
    );
    assert_eq!(error.failure_code(), FailureCode::Preflight);
    assert_eq!(
        repo.snapshot(),
        before,
        "the preflight changed the repository"
    );
}

#[test]
fn a_staged_change_is_refused_and_stays_staged() {
    let repo = Repo::new();
    repo.write("README.md", "# demo, edited\n");
    repo.git(&["add", "README.md"]);
    assert_refused_as_dirty(&repo, "README.md", DirtyKind::Staged);
    assert_eq!(repo.porcelain(), "M  README.md\n");
}

#[test]
fn an_unstaged_change_is_refused_and_left_as_it_is() {
    let repo = Repo::new();
    repo.write("README.md", "# demo, edited\n");
    assert_refused_as_dirty(&repo, "README.md", DirtyKind::Unstaged);
    assert_eq!(repo.read("README.md"), "# demo, edited\n");
}

#[test]
fn a_deleted_file_is_an_unstaged_change() {
    let repo = Repo::new();
    fs::remove_file(repo.path("README.md")).unwrap();
    assert_refused_as_dirty(&repo, "README.md", DirtyKind::Unstaged);
}

#[test]
fn an_untracked_file_is_refused_and_left_in_place() {
    let repo = Repo::new();
    repo.write("notes/todo.txt", "later\n");
    assert_refused_as_dirty(&repo, "notes/todo.txt", DirtyKind::Untracked);
    assert_eq!(repo.read("notes/todo.txt"), "later\n");
}

#[test]
fn ignored_files_do_not_make_the_tree_dirty() {
    let repo = Repo::new();
    repo.write("build.log", "noise\n");
    repo.write("target/debug/app", "binary\n");
    let workspace = repo.workspace();
    workspace.ensure_clean().unwrap();
    assert!(workspace.changed_paths().unwrap().is_empty());
}

#[test]
fn a_very_dirty_tree_lists_ten_paths_and_counts_the_rest() {
    let repo = Repo::new();
    repo.write("README.md", "# staged\n");
    repo.git(&["add", "README.md"]);
    for n in 0..14 {
        repo.write(&format!("new/file-{n:02}.txt"), "x\n");
    }
    let error = repo.workspace().ensure_clean().unwrap_err();
    let GitError::DirtyTree { paths, total, .. } = &error else {
        panic!("expected DirtyTree, got {error:?}");
    };
    assert_eq!(*total, 15);
    assert_eq!(paths.len(), 10);
    assert_eq!(paths[0].kind, DirtyKind::Staged, "staged paths come first");
    let message = error.to_string();
    assert!(
        message.contains("staged: README.md; untracked: new/file-00.txt, new/file-01.txt"),
        "{message}"
    );
    assert!(
        message.ends_with("new/file-08.txt (and 5 more)"),
        "{message}"
    );
}

#[test]
fn a_merge_in_progress_fails_preflight_and_cannot_be_committed() {
    let repo = Repo::new();
    let baseline = repo.commit_file("a.txt", "base\n", "feat(a): add the shared a file");
    repo.git(&["checkout", "-q", "-b", "other"]);
    repo.commit_file("a.txt", "theirs\n", "fix(a): change the a file on other");
    repo.git(&["checkout", "-q", "main"]);
    repo.commit_file("a.txt", "ours\n", "fix(a): change the a file on main");
    let merge = git_command(&repo.root, &["merge", "-q", "other"])
        .output()
        .unwrap();
    assert!(!merge.status.success(), "the merge should conflict");

    let workspace = repo.workspace();
    let preflight = workspace.ensure_clean().unwrap_err();
    assert!(
        matches!(&preflight, GitError::OperationInProgress { operation, .. } if operation == "merge"),
        "{preflight:?}"
    );
    let commit = workspace
        .commit_all(
            &job_message("resolve the merge by force", "job-1"),
            &bot(),
            &bot(),
        )
        .unwrap_err();
    assert!(
        matches!(&commit, GitError::UnresolvedConflicts { paths } if paths == &["a.txt"]),
        "{commit:?}"
    );
    assert_eq!(commit.failure_code(), FailureCode::GitConflict);

    workspace.rollback(&sha(&baseline)).unwrap();
    assert_eq!(repo.read("a.txt"), "base\n");
    workspace.ensure_clean().unwrap();
}

#[test]
fn changed_paths_lists_every_kind_of_change_once_and_sorted() {
    let repo = Repo::new();
    repo.commit_file("src/a.rs", "a\n", "feat(src): add the a source file");
    repo.commit_file("src/b.rs", "b\n", "feat(src): add the b source file");
    repo.write("src/b.rs", "b2\n");
    repo.git(&["add", "src/b.rs"]);
    repo.write("src/b.rs", "b3\n");
    fs::remove_file(repo.path("src/a.rs")).unwrap();
    repo.write("docs/new/guide.md", "# guide\n");
    repo.write("debug.log", "ignored\n");
    assert_eq!(
        repo.workspace().changed_paths().unwrap(),
        ["docs/new/guide.md", "src/a.rs", "src/b.rs"]
    );
}

// ---------------------------------------------------------------------------------------------
// Branches.

#[test]
fn a_branch_is_created_from_the_default_template_at_the_base() {
    let repo = Repo::new();
    let base = repo.head();
    repo.commit_file(
        "later.txt",
        "later\n",
        "feat(later): move main past the base",
    );
    let name = BranchName::from_template(
        DEFAULT_BRANCH_TEMPLATE,
        CommitKind::Fix,
        42,
        "Handle NULL values in the parser",
    )
    .unwrap();
    assert_eq!(name.as_str(), "fix/42-handle-null-values-in-the-parser");

    let outcome = repo
        .workspace()
        .prepare_branch(&name, &sha(&base), "job-7")
        .unwrap();
    assert_eq!(outcome, BranchOutcome::Created { head: sha(&base) });
    assert_eq!(repo.branch(), name.as_str());
    assert_eq!(repo.head(), base);
    assert!(
        !repo.path("later.txt").exists(),
        "the work tree is at the base"
    );
}

#[test]
fn a_branch_holding_only_this_jobs_commits_is_reused() {
    let repo = Repo::new();
    let base = sha(&repo.head());
    let name = branch("fix/42-parser");
    let workspace = repo.workspace();
    workspace.prepare_branch(&name, &base, "job-7").unwrap();
    repo.write("src/parser.rs", "fn parse() {}\n");
    let first = workspace
        .commit_all(
            &job_message("handle empty input in parse", "job-7"),
            &bot(),
            &bot(),
        )
        .unwrap();
    repo.write("src/parser.rs", "fn parse() { todo() }\n");
    let second = workspace
        .commit_all(
            &job_message("handle null input in parse", "job-7"),
            &bot(),
            &bot(),
        )
        .unwrap();
    assert_ne!(first, second);
    repo.git(&["checkout", "-q", "main"]);

    let outcome = workspace.prepare_branch(&name, &base, "job-7").unwrap();
    assert_eq!(
        outcome,
        BranchOutcome::Reused {
            head: second.clone()
        }
    );
    assert_eq!(outcome.head(), &second);
    assert_eq!(repo.branch(), "fix/42-parser");
    assert_eq!(repo.read("src/parser.rs"), "fn parse() { todo() }\n");
}

#[test]
fn a_branch_is_left_by_autofix_only_when_every_commit_beyond_main_is_an_autofix_commit() {
    let repo = Repo::new();
    let base = sha(&repo.head());
    let main = branch("main");
    let workspace = repo.workspace();
    workspace
        .prepare_branch(&branch("fix/42-parser"), &base, "job-3")
        .unwrap();
    repo.write("src/parser.rs", "fn parse() {}\n");
    let earlier_run = workspace
        .commit_all(
            &job_message("handle empty input in parse", "job-3"),
            &bot(),
            &bot(),
        )
        .unwrap();
    let touched_by_hand = sha(&repo.commit_file(
        "NOTES.md",
        "by hand\n",
        "docs(notes): a person's note on the branch",
    ));
    repo.git(&["checkout", "-q", "main"]);

    assert!(workspace.is_left_by_autofix(&earlier_run, &main).unwrap());
    assert!(
        workspace.is_left_by_autofix(&base, &main).unwrap(),
        "a branch main already holds loses nothing when replaced"
    );
    assert!(
        !workspace
            .is_left_by_autofix(&touched_by_hand, &main)
            .unwrap()
    );
    let never_fetched = sha("0123456789abcdef0123456789abcdef01234567");
    assert!(
        !workspace.is_left_by_autofix(&never_fetched, &main).unwrap(),
        "a tip this copy does not hold cannot be vouched for"
    );
}

#[test]
fn an_existing_branch_with_no_commits_beyond_the_base_is_reused() {
    let repo = Repo::new();
    let base = repo.head();
    repo.git(&["branch", "fix/42-parser"]);
    let outcome = repo
        .workspace()
        .prepare_branch(&branch("fix/42-parser"), &sha(&base), "job-7")
        .unwrap();
    assert_eq!(outcome, BranchOutcome::Reused { head: sha(&base) });
    assert_eq!(repo.branch(), "fix/42-parser");
}

#[test]
fn a_branch_with_a_foreign_commit_is_refused_and_main_stays_checked_out() {
    let repo = Repo::new();
    let base = sha(&repo.head());
    let name = branch("fix/42-parser");
    let workspace = repo.workspace();
    workspace.prepare_branch(&name, &base, "job-7").unwrap();
    repo.write("src/parser.rs", "fn parse() {}\n");
    workspace
        .commit_all(
            &job_message("handle empty input in parse", "job-7"),
            &bot(),
            &bot(),
        )
        .unwrap();
    repo.commit_file(
        "NOTES.md",
        "by hand\n",
        "docs(notes): a person's note on the branch",
    );
    repo.git(&["checkout", "-q", "main"]);

    let error = workspace.prepare_branch(&name, &base, "job-7").unwrap_err();
    assert!(
        matches!(&error, GitError::BranchExists { name, foreign: 1 } if name == "fix/42-parser"),
        "{error:?}"
    );
    assert_eq!(error.failure_code(), FailureCode::BranchExists);
    assert_eq!(
        error.to_string(),
        "branch fix/42-parser already exists with 1 commit(s) not made by this job; refusing to reuse it"
    );
    assert_eq!(repo.branch(), "main");
}

#[test]
fn a_branch_holding_another_jobs_commits_is_refused() {
    let repo = Repo::new();
    let base = sha(&repo.head());
    let name = branch("fix/42-parser");
    let workspace = repo.workspace();
    workspace.prepare_branch(&name, &base, "job-6").unwrap();
    repo.write("src/parser.rs", "fn parse() {}\n");
    workspace
        .commit_all(
            &job_message("handle empty input in parse", "job-6"),
            &bot(),
            &bot(),
        )
        .unwrap();
    repo.git(&["checkout", "-q", "main"]);

    let error = workspace.prepare_branch(&name, &base, "job-7").unwrap_err();
    assert!(
        matches!(error, GitError::BranchExists { foreign: 1, .. }),
        "{error:?}"
    );
}

#[test]
fn preparing_a_branch_on_a_dirty_tree_changes_nothing() {
    let repo = Repo::new();
    let base = sha(&repo.head());
    repo.write("README.md", "# edited\n");
    let error = repo
        .workspace()
        .prepare_branch(&branch("fix/1-x"), &base, "job-1")
        .unwrap_err();
    assert!(matches!(error, GitError::DirtyTree { .. }), "{error:?}");
    assert_eq!(repo.branch(), "main");
    assert_eq!(repo.git(&["branch", "--list", "fix/*"]), "");
    assert_eq!(repo.read("README.md"), "# edited\n");
}

#[test]
fn preparing_a_branch_from_an_unknown_base_is_refused() {
    let repo = Repo::new();
    let unknown = sha("0123456789abcdef0123456789abcdef01234567");
    let error = repo
        .workspace()
        .prepare_branch(&branch("fix/1-x"), &unknown, "job-1")
        .unwrap_err();
    assert!(matches!(error, GitError::UnknownCommit { .. }), "{error:?}");
    assert!(error.to_string().contains("0123456789abcdef"), "{error}");
    assert_eq!(repo.git(&["branch", "--list", "fix/*"]), "");
}

#[test]
fn a_job_id_that_cannot_be_a_trailer_is_refused() {
    let repo = Repo::new();
    let base = sha(&repo.head());
    for job_id in ["", "job 7", "job-7\nSigned-off-by: x", &"j".repeat(129)] {
        let error = repo
            .workspace()
            .prepare_branch(&branch("fix/1-x"), &base, job_id)
            .unwrap_err();
        assert!(
            matches!(error, GitError::InvalidJobId { .. }),
            "{job_id:?}: {error:?}"
        );
        assert_eq!(error.failure_code(), FailureCode::InvalidInput);
    }
}

#[test]
fn checkout_switches_branches_on_a_clean_tree_only() {
    let repo = Repo::new();
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.commit_file("feature.txt", "f\n", "feat(feature): add the feature file");
    repo.git(&["checkout", "-q", "main"]);
    let workspace = repo.workspace();

    workspace.checkout(&branch("feature")).unwrap();
    assert_eq!(repo.branch(), "feature");
    assert_eq!(repo.read("feature.txt"), "f\n");

    repo.write("feature.txt", "edited\n");
    let error = workspace.checkout(&branch("main")).unwrap_err();
    assert!(matches!(error, GitError::DirtyTree { .. }), "{error:?}");
    assert_eq!(repo.branch(), "feature");
    assert_eq!(repo.read("feature.txt"), "edited\n");

    repo.git(&["checkout", "-q", "--", "feature.txt"]);
    let error = workspace.checkout(&branch("nope")).unwrap_err();
    assert!(
        matches!(&error, GitError::BranchNotFound { name } if name == "nope"),
        "{error:?}"
    );
}

#[test]
fn the_checked_out_branch_cannot_be_deleted_until_another_is_checked_out() {
    let repo = Repo::new();
    let base = sha(&repo.head());
    let name = branch("fix/3-typo");
    let workspace = repo.workspace();
    workspace.prepare_branch(&name, &base, "job-3").unwrap();

    let error = workspace.delete_branch(&name).unwrap_err();
    assert!(
        matches!(error, GitError::BranchCheckedOut { .. }),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("check out another branch"),
        "{error}"
    );

    workspace.checkout(&branch("main")).unwrap();
    assert!(workspace.delete_branch(&name).unwrap());
    assert_eq!(repo.git(&["branch", "--list", "fix/*"]), "");
    assert!(
        !workspace.delete_branch(&name).unwrap(),
        "a missing branch is no error"
    );
}

// ---------------------------------------------------------------------------------------------
// Rollback.

#[test]
fn rollback_undoes_writes_deletions_staging_and_new_folders_but_keeps_ignored_files() {
    let repo = Repo::new();
    repo.commit_file(
        "src/lib.rs",
        "pub fn one() {}\n",
        "feat(lib): add the first function",
    );
    repo.commit_file("src/old.rs", "old\n", "feat(lib): add the old module file");
    let baseline = sha(&repo.head());
    repo.write("build.log", "kept\n");
    repo.write("target/debug/app", "kept too\n");

    repo.write("src/lib.rs", "pub fn one() { broken }\n");
    fs::remove_file(repo.path("src/old.rs")).unwrap();
    repo.write("README.md", "# staged edit\n");
    repo.git(&["add", "README.md"]);
    repo.write("src/new.rs", "new\n");
    repo.write("generated/deep/nested/file.txt", "new folder\n");
    repo.write(
        "generated/also-ignored.log",
        "ignored inside a new folder\n",
    );
    repo.write(
        "generated/target/out.bin",
        "ignored folder inside a new folder\n",
    );

    let workspace = repo.workspace();
    workspace.rollback(&baseline).unwrap();

    workspace.ensure_clean().unwrap();
    assert_eq!(repo.porcelain(), "");
    assert_eq!(repo.head(), baseline.as_str());
    assert_eq!(repo.read("src/lib.rs"), "pub fn one() {}\n");
    assert_eq!(repo.read("src/old.rs"), "old\n");
    assert_eq!(repo.read("README.md"), "# demo\n");
    assert!(!repo.path("src/new.rs").exists());
    assert!(!repo.path("generated/deep").exists());
    assert_eq!(repo.read("build.log"), "kept\n");
    assert_eq!(repo.read("target/debug/app"), "kept too\n");
    assert_eq!(
        repo.read("generated/also-ignored.log"),
        "ignored inside a new folder\n",
        "git clean -fd keeps ignored files, even in an untracked folder"
    );
    assert_eq!(
        repo.read("generated/target/out.bin"),
        "ignored folder inside a new folder\n"
    );
}

#[test]
fn rollback_leaves_a_nested_repository_alone_and_says_the_tree_is_not_clean() {
    let repo = Repo::new();
    let baseline = sha(&repo.head());
    repo.write("vendor/lib/README", "someone else's work\n");
    git_command(&repo.path("vendor/lib"), &["init", "-q"])
        .status()
        .unwrap();

    let error = repo.workspace().rollback(&baseline).unwrap_err();
    assert!(
        matches!(&error, GitError::DirtyTree { paths, .. } if paths[0].path == "vendor/lib/"),
        "{error:?}"
    );
    assert_eq!(repo.read("vendor/lib/README"), "someone else's work\n");
}

#[test]
fn rollback_replaces_a_tracked_folder_turned_into_a_link_without_writing_through_it() {
    let repo = Repo::new();
    repo.commit_file(
        "keys/authorized_keys",
        "repo fixture\n",
        "test(keys): add a key fixture",
    );
    repo.commit_file(
        "tools/run.sh",
        "#!/bin/sh\n",
        "chore(tools): add the run script",
    );
    let baseline = sha(&repo.head());
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("authorized_keys"), "the owner's key\n").unwrap();
    fs::remove_dir_all(repo.path("keys")).unwrap();
    std::os::unix::fs::symlink(outside.path(), repo.path("keys")).unwrap();
    // A tracked file turned into a link, too.
    fs::remove_file(repo.path("tools/run.sh")).unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("authorized_keys"),
        repo.path("tools/run.sh"),
    )
    .unwrap();

    repo.workspace().rollback(&baseline).unwrap();

    assert_eq!(
        fs::read_to_string(outside.path().join("authorized_keys")).unwrap(),
        "the owner's key\n"
    );
    assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 1);
    assert!(fs::symlink_metadata(repo.path("keys")).unwrap().is_dir());
    assert_eq!(repo.read("keys/authorized_keys"), "repo fixture\n");
    assert!(
        fs::symlink_metadata(repo.path("tools/run.sh"))
            .unwrap()
            .is_file()
    );
    assert_eq!(repo.porcelain(), "");
}

#[test]
fn discarding_a_file_named_like_a_pattern_puts_back_that_file_alone() {
    let repo = Repo::new();
    repo.commit_file("a[1].txt", "one\n", "test(names): add a bracketed name");
    repo.commit_file("a1.txt", "plain\n", "test(names): add a plain name");
    repo.write("a[1].txt", "changed\n");
    repo.write("a1.txt", "changed too\n");
    repo.git(&["add", "a1.txt"]);

    repo.workspace().discard(&["a[1].txt".to_string()]).unwrap();

    assert_eq!(repo.read("a[1].txt"), "one\n");
    assert_eq!(repo.read("a1.txt"), "changed too\n");
    assert_eq!(
        repo.porcelain(),
        "M  a1.txt\n",
        "the other file stays staged"
    );
}

#[test]
fn rollback_moves_the_branch_back_over_the_jobs_commits() {
    let repo = Repo::new();
    let baseline = sha(&repo.head());
    let name = branch("fix/9-rollback");
    let workspace = repo.workspace();
    workspace.prepare_branch(&name, &baseline, "job-9").unwrap();
    repo.write("src/fix.rs", "fixed\n");
    workspace
        .commit_all(
            &job_message("write the fix for the bug", "job-9"),
            &bot(),
            &bot(),
        )
        .unwrap();

    workspace.rollback(&baseline).unwrap();
    assert_eq!(repo.branch(), "fix/9-rollback");
    assert_eq!(repo.head(), baseline.as_str());
    assert!(!repo.path("src/fix.rs").exists());
}

// ---------------------------------------------------------------------------------------------
// Commit messages.

fn message(scope: &str, summary: &str, body: Option<&str>) -> Result<CommitMessage, GitError> {
    CommitMessage::new(
        CommitKind::Docs,
        scope,
        summary,
        body,
        Some(42),
        &bot(),
        Some("job-42"),
    )
}

fn assert_message_refused(result: Result<CommitMessage, GitError>, part: &str, reason: &str) {
    let error = result.unwrap_err();
    match &error {
        GitError::InvalidCommitMessage { part: got, .. } => assert_eq!(*got, part, "{error}"),
        other => panic!("expected InvalidCommitMessage, got {other:?}"),
    }
    assert!(error.to_string().contains(reason), "{error}");
    assert_eq!(error.failure_code(), FailureCode::InvalidInput);
}

#[test]
fn a_good_message_has_subject_body_and_trailers_in_order() {
    let message = message(
        "readme",
        "correct typo in installation section",
        Some("'teh' was written for 'the'.\r\n\r\n"),
    )
    .unwrap();
    assert_eq!(
        message.subject(),
        "docs(readme): correct typo in installation section"
    );
    assert_eq!(
        message.to_string(),
        "docs(readme): correct typo in installation section\n\
         \n\
         'teh' was written for 'the'.\n\
         \n\
         Fixes #42\n\
         Autofix-Job: job-42\n\
         Signed-off-by: autofix[bot] <autofix@example.com>\n"
    );
}

#[test]
fn a_message_without_body_issue_or_job_has_only_the_sign_off() {
    let message = CommitMessage::new(
        CommitKind::Chore,
        "deps",
        "bump the parser dependency",
        Some("  \n"),
        None,
        &maintainer(),
        None,
    )
    .unwrap();
    assert_eq!(
        message.to_string(),
        "chore(deps): bump the parser dependency\n\nSigned-off-by: Ada Maintainer <ada@example.com>\n"
    );
}

#[test]
fn an_unknown_commit_type_is_refused() {
    let error = "style".parse::<CommitKind>().unwrap_err();
    assert!(
        matches!(error, GitError::InvalidCommitMessage { part: "type", .. }),
        "{error:?}"
    );
    assert!(
        error
            .to_string()
            .contains("\"style\" is not one of fix, feat"),
        "{error}"
    );
    assert_eq!(
        "refactor".parse::<CommitKind>().unwrap(),
        CommitKind::Refactor
    );
}

#[test]
fn a_scope_outside_lowercase_letters_and_dashes_is_refused() {
    assert_message_refused(message("", "correct the typo here", None), "scope", "empty");
    assert_message_refused(
        message("Readme", "correct the typo here", None),
        "scope",
        "\"Readme\" contains 'R'",
    );
    assert_message_refused(
        message("read_me", "correct the typo here", None),
        "scope",
        "contains '_'",
    );
    assert!(message("read-me", "correct the typo here", None).is_ok());
}

#[test]
fn a_summary_shorter_than_ten_characters_is_refused() {
    assert_message_refused(
        message("readme", "fix typo", None),
        "summary",
        "has 8 characters; at least 10 are needed",
    );
    assert!(message("readme", "fix typos!", None).is_ok());
}

#[test]
fn a_summary_longer_than_a_hundred_characters_is_refused() {
    assert!(
        message("readme", &"é".repeat(100), None).is_ok(),
        "characters, not bytes"
    );
    assert_message_refused(
        message("readme", &"a".repeat(101), None),
        "summary",
        "it has 101 characters; at most 100 are allowed",
    );
}

#[test]
fn a_summary_on_several_lines_is_refused() {
    assert_message_refused(
        message("readme", "correct the typo\nand more", None),
        "summary",
        "must be one line",
    );
    assert_message_refused(
        message("readme", " correct the typo", None),
        "summary",
        "whitespace",
    );
    assert_message_refused(
        message("readme", "correct the\ttypo please", None),
        "summary",
        "control character",
    );
}

#[test]
fn issue_zero_is_refused() {
    let error = CommitMessage::new(
        CommitKind::Fix,
        "parser",
        "handle empty input in parse",
        None,
        Some(0),
        &bot(),
        None,
    )
    .unwrap_err();
    assert!(matches!(
        error,
        GitError::InvalidCommitMessage { part: "issue", .. }
    ));
}

#[test]
fn identities_that_would_corrupt_a_header_are_refused() {
    for (name, email, reason) in [
        ("", "a@example.com", "empty"),
        ("Ada", "  ", "empty"),
        ("Ada <x>", "a@example.com", "'<' or '>'"),
        ("Ada", "a@example.com>", "'<' or '>'"),
        ("Ada\nEvil", "a@example.com", "control characters"),
        (" Ada", "a@example.com", "whitespace"),
    ] {
        let error = Identity::new(name, email).unwrap_err();
        assert!(
            matches!(error, GitError::InvalidIdentity { .. }),
            "{error:?}"
        );
        assert!(
            error.to_string().contains(reason),
            "{name:?} {email:?}: {error}"
        );
    }
}

#[test]
fn commit_shas_are_forty_hex_digits() {
    let upper = "0123456789ABCDEF0123456789ABCDEF01234567";
    assert_eq!(sha(upper).as_str(), upper.to_lowercase());
    for (value, reason) in [
        ("0123456", "exactly 40"),
        (
            "g123456789abcdef0123456789abcdef01234567",
            "only the hex digits",
        ),
    ] {
        let error = CommitSha::parse(value).unwrap_err();
        assert!(error.to_string().contains(reason), "{error}");
        assert_eq!(error.failure_code(), FailureCode::InvalidInput);
    }
}

// ---------------------------------------------------------------------------------------------
// Commits.

#[test]
fn a_commit_carries_its_author_committer_and_trailers() {
    let repo = Repo::new();
    let workspace = repo.workspace();
    workspace
        .prepare_branch(&branch("fix/42-parser"), &sha(&repo.head()), "job-42")
        .unwrap();
    repo.write("src/parser.rs", "fn parse() {}\n");
    let message = CommitMessage::new(
        CommitKind::Fix,
        "parser",
        "handle empty input in parse",
        Some("An empty string made parse panic."),
        Some(42),
        &bot(),
        Some("job-42"),
    )
    .unwrap();

    let commit = workspace
        .commit_all(&message, &maintainer(), &bot())
        .unwrap();

    assert_eq!(commit.as_str(), repo.head());
    assert_eq!(
        repo.git(&["log", "-1", "--format=%B"]),
        format!("{message}\n")
    );
    assert_eq!(
        repo.git(&["log", "-1", "--format=%an <%ae>|%cn <%ce>"]),
        "Ada Maintainer <ada@example.com>|autofix[bot] <autofix@example.com>\n"
    );
    // `Fixes #42` is GitHub's keyword, not a `Key: value` trailer, yet git still reads the
    // block as trailers.
    assert_eq!(
        repo.git(&["log", "-1", "--format=%(trailers:only,unfold)"]),
        "Autofix-Job: job-42\nSigned-off-by: autofix[bot] <autofix@example.com>\n\n"
    );
    workspace.ensure_clean().unwrap();
}

#[test]
fn commit_all_records_additions_modifications_and_deletions_but_not_ignored_files() {
    let repo = Repo::new();
    repo.commit_file(
        "src/gone.rs",
        "bye\n",
        "feat(src): add a file to delete later",
    );
    let workspace = repo.workspace();
    repo.write("README.md", "# demo, better\n");
    fs::remove_file(repo.path("src/gone.rs")).unwrap();
    repo.write("src/deep/new.rs", "hello\n");
    repo.write("run.log", "ignored\n");

    workspace
        .commit_all(
            &job_message("record every kind of change", "job-1"),
            &bot(),
            &bot(),
        )
        .unwrap();

    assert_eq!(
        repo.git(&["show", "--name-status", "--format="]),
        "M\tREADME.md\nA\tsrc/deep/new.rs\nD\tsrc/gone.rs\n"
    );
    workspace.ensure_clean().unwrap();
    assert_eq!(repo.read("run.log"), "ignored\n");
}

#[test]
fn an_empty_commit_is_refused() {
    let repo = Repo::new();
    repo.write("noise.log", "ignored changes do not count\n");
    let before = repo.snapshot();
    let error = repo
        .workspace()
        .commit_all(
            &job_message("commit nothing at all here", "job-1"),
            &bot(),
            &bot(),
        )
        .unwrap_err();
    assert!(matches!(error, GitError::EmptyCommit { .. }), "{error:?}");
    assert!(
        error.to_string().starts_with("nothing to commit"),
        "{error}"
    );
    assert_eq!(repo.snapshot(), before);
}

#[test]
fn committing_on_a_detached_head_is_refused() {
    let repo = Repo::new();
    repo.git(&["checkout", "-q", "--detach"]);
    repo.write("a.txt", "a\n");
    let error = repo
        .workspace()
        .commit_all(
            &job_message("commit without a branch", "job-1"),
            &bot(),
            &bot(),
        )
        .unwrap_err();
    assert!(matches!(error, GitError::DetachedHead { .. }), "{error:?}");
    assert_eq!(repo.git(&["rev-list", "--count", "HEAD"]), "1\n");
}

#[test]
fn the_first_commit_of_an_unborn_branch_has_no_parent() {
    let repo = Repo::empty();
    repo.write("README.md", "# first\n");
    let commit = repo
        .workspace()
        .commit_all(
            &job_message("write the very first file", "job-1"),
            &bot(),
            &bot(),
        )
        .unwrap();
    assert_eq!(
        repo.git(&["rev-list", "--parents", "HEAD"]).trim(),
        commit.as_str()
    );
    assert_eq!(repo.branch(), "main");
}

// ---------------------------------------------------------------------------------------------
// Branch names.

/// Asks git itself whether `name` is a valid branch name.
fn git_accepts_branch(name: &str) -> bool {
    crate::isolate_libgit2();
    git_command(
        &std::env::temp_dir(),
        &["check-ref-format", "--branch", name],
    )
    .output()
    .unwrap()
    .status
    .success()
}

#[test]
fn hostile_titles_still_yield_valid_branch_names() {
    let long = "word ".repeat(100);
    let titles = [
        ("🔥🔥 crash on save 🔥", "fix/7-crash-on-save"),
        ("../../x", "fix/7-x"),
        ("refs/heads/main", "fix/7-refs-heads-main"),
        ("!!!???...///", "fix/7-issue"),
        ("", "fix/7-issue"),
        ("--force", "fix/7-force"),
        ("\u{202E}תיקון באג בטופס", "fix/7-issue"),
        ("عطل في النموذج form", "fix/7-form"),
        ("name.lock", "fix/7-name-lock"),
        ("a@{u} ~1 ^2 :x ?*[\\", "fix/7-a-u-1-2-x"),
        (
            "line\nbreak\ttab\0nul\x7fdel",
            "fix/7-line-break-tab-nul-del",
        ),
        ("Ünïcödé Façade", "fix/7-unicode-facade"),
    ];
    for (title, expected) in titles {
        let name =
            BranchName::from_template(DEFAULT_BRANCH_TEMPLATE, CommitKind::Fix, 7, title).unwrap();
        assert_eq!(name.as_str(), expected, "title {title:?}");
        assert!(git_accepts_branch(name.as_str()), "git refuses {name}");
    }
    let name =
        BranchName::from_template(DEFAULT_BRANCH_TEMPLATE, CommitKind::Fix, 7, &long).unwrap();
    assert!(name.as_str().len() <= "fix/7-".len() + 40, "{name}");
    assert!(!name.as_str().ends_with('-'), "{name}");
    assert!(git_accepts_branch(name.as_str()));
}

#[test]
fn a_custom_template_is_filled() {
    let name = BranchName::from_template(
        "autofix/{type}-{number}/{slug}",
        CommitKind::Docs,
        108,
        "Typo in README",
    )
    .unwrap();
    assert_eq!(name.as_str(), "autofix/docs-108/typo-in-readme");
    assert!(git_accepts_branch(name.as_str()));
}

#[test]
fn bad_templates_are_refused_with_the_reason() {
    for (template, reason) in [
        ("{type}/{issue}-{slug}", "unknown placeholder {issue}"),
        (
            "{type}/{number-{slug}",
            "unknown placeholder {number-{slug}",
        ),
        ("{type}/{number}-{slug", "is never closed"),
        ("{type}/{number}}-{slug}", "'}' that closes no placeholder"),
        ("{type}/{slug}", "has no {number}"),
        (
            "{type}/../{number}",
            "gives the branch name \"fix/../1\", which contains \"..\"",
        ),
        ("-{type}/{number}", "starts with '-'"),
        ("{type}/{number}.lock", "ending with \".lock\""),
    ] {
        let error = BranchName::from_template(template, CommitKind::Fix, 1, "title").unwrap_err();
        assert!(
            matches!(error, GitError::InvalidBranchTemplate { .. }),
            "{template}: {error:?}"
        );
        assert!(error.to_string().contains(reason), "{template}: {error}");
        assert_eq!(error.failure_code(), FailureCode::InvalidInput);
    }
}

#[test]
fn branch_names_breaking_git_rules_are_refused_and_git_agrees() {
    let long = "a".repeat(201);
    for (name, reason) in [
        ("", "is empty"),
        ("a..b", "contains \"..\""),
        ("a@{1}", "contains \"@{\""),
        ("a\\b", "contains '\\\\'"),
        ("a\u{1}b", "control character"),
        ("a b", "contains ' '"),
        ("-x", "starts with '-'"),
        ("x.lock", "ending with \".lock\""),
        ("x.", "ends with '.'"),
        ("a//b", "contains \"//\""),
        ("/a", "starts or ends with '/'"),
        ("a/", "starts or ends with '/'"),
        ("a/.hidden", "starting with '.'"),
        ("a~1", "contains '~'"),
        ("a^", "contains '^'"),
        ("a:b", "contains ':'"),
        ("a?*[", "contains '?'"),
        ("@", "git reserves"),
        ("HEAD", "git reserves"),
        (long.as_str(), "longer than 200 bytes"),
    ] {
        let error = BranchName::new(name).unwrap_err();
        assert!(
            matches!(error, GitError::InvalidBranchName { .. }),
            "{name:?}: {error:?}"
        );
        assert!(error.to_string().contains(reason), "{name:?}: {error}");
        // `git check-ref-format --branch @` expands `@` to the current branch.
        if name.len() <= 200 && name != "@" {
            assert!(!git_accepts_branch(name), "git accepts {name:?}");
        }
    }
    let error = BranchName::new("refs/heads/main").unwrap_err();
    assert!(
        error.to_string().contains("mistaken for a full ref"),
        "{error}"
    );
    assert_eq!(branch("feature/über").as_str(), "feature/über");
}

#[test]
fn every_error_maps_to_its_failure_code() {
    let preflight = GitError::DetachedHead {
        at: sha("0123456789abcdef0123456789abcdef01234567"),
    };
    assert_eq!(preflight.failure_code(), FailureCode::Preflight);
    let conflict = GitError::CheckoutConflict {
        target: "main".into(),
        detail: "1 conflict prevents checkout".into(),
    };
    assert_eq!(conflict.failure_code(), FailureCode::GitConflict);
    let exists = GitError::BranchExists {
        name: "fix/1-x".into(),
        foreign: 2,
    };
    assert_eq!(exists.failure_code(), FailureCode::BranchExists);
    let locked = GitError::Git {
        action: "write the commit".into(),
        source: git2::Error::new(
            git2::ErrorCode::Locked,
            git2::ErrorClass::Reference,
            "the ref is locked",
        ),
    };
    assert_eq!(locked.failure_code(), FailureCode::GitConflict);
}

#[test]
fn the_diff_from_the_baseline_shows_modified_deleted_and_new_files() {
    let repo = Repo::new();
    repo.write("src/lib.rs", "pub fn a() {}\n");
    repo.commit_file(
        "old.txt",
        "gone soon\n",
        "chore(repo): add a file to delete later",
    );
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "chore(repo): add the library"]);
    let ws = repo.workspace();
    let base = ws.head_commit().unwrap();
    repo.write("src/lib.rs", "pub fn a() {}\npub fn b() {}\n");
    fs::remove_file(repo.path("old.txt")).unwrap();
    repo.write("src/new.rs", "pub fn c() {}\n");
    repo.write("target/junk", "ignored\n");

    let diff = ws.diff_from(&base).unwrap();

    assert!(
        diff.contains("+++ b/src/lib.rs\n@@ -1 +1,2 @@\n pub fn a() {}\n+pub fn b() {}\n"),
        "{diff}"
    );
    assert!(
        diff.contains("--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone soon\n"),
        "{diff}"
    );
    assert!(
        diff.contains("+++ b/src/new.rs\n@@ -0,0 +1 @@\n+pub fn c() {}\n"),
        "{diff}"
    );
    assert!(!diff.contains("junk"));
}

// ---------------------------------------------------------------------------------------------
// Following a base that moved.

/// `main` with `a.txt` and `b.txt`, and branch `fix/42` with one autofix commit changing
/// `a.txt`; `main` then moves with a change to `b.txt` (`a_too`: to `a.txt` as well).
fn a_change_request_whose_base_moved(a_too: bool) -> (Repo, CommitSha, CommitSha) {
    let repo = Repo::new();
    repo.write("a.txt", "one\n");
    repo.commit_file("b.txt", "two\n", "chore: two files");
    repo.git(&["checkout", "-q", "-b", "fix/42"]);
    let ws = repo.workspace();
    let fork = sha(&repo.head());
    let head = ws
        .commit_contents(
            &branch("fix/42"),
            &fork,
            &job_message("change the first file", "job-1"),
            &[("a.txt", Some(b"one, fixed\n".as_slice()))],
            &bot(),
        )
        .unwrap();
    repo.git(&["checkout", "-q", "-f", "main"]);
    repo.commit_file("b.txt", "two, moved\n", "chore: move b");
    if a_too {
        repo.commit_file("a.txt", "one, changed on main\n", "chore: move a");
    }
    let base = sha(&repo.head());
    (repo, head, base)
}

#[test]
fn a_change_request_that_touches_other_lines_still_merges_cleanly() {
    let (repo, head, base) = a_change_request_whose_base_moved(false);
    let ws = repo.workspace();
    assert!(ws.merges_cleanly(&head, &base).unwrap());
    let (conflicting, head, base) = a_change_request_whose_base_moved(true);
    assert!(
        !conflicting
            .workspace()
            .merges_cleanly(&head, &base)
            .unwrap()
    );
}

#[test]
fn the_branch_commits_are_listed_oldest_first_with_whose_they_are() {
    let (repo, head, base) = a_change_request_whose_base_moved(false);
    repo.git(&["checkout", "-q", "fix/42"]);
    let person = repo.commit_file("c.txt", "three\n", "docs: a person's note");
    let ws = repo.workspace();
    let commits = ws.commits_since(&sha(&person), &base).unwrap();
    assert_eq!(commits, vec![(head, true), (sha(&person), false)]);
}

#[test]
fn replaying_onto_the_moved_base_keeps_author_and_message_and_touches_no_branch() {
    let (repo, head, base) = a_change_request_whose_base_moved(false);
    let ws = repo.workspace();
    let before = repo.snapshot();

    let rebased = ws
        .replay_onto(std::slice::from_ref(&head), &base, &maintainer())
        .unwrap();

    let autofix::git::Rebased::Onto { tip, commits } = rebased else {
        panic!("expected the commit to apply: {rebased:?}");
    };
    assert_eq!(commits, 1);
    assert_eq!(repo.snapshot(), before, "no branch, index or file moved");
    let tip = tip.to_string();
    assert_eq!(
        repo.git(&["rev-parse", &format!("{tip}~1")]).trim(),
        base.to_string()
    );
    assert_eq!(repo.git(&["show", &format!("{tip}:a.txt")]), "one, fixed\n");
    assert_eq!(repo.git(&["show", &format!("{tip}:b.txt")]), "two, moved\n");
    let original = repo.git(&["log", "-1", "--format=%an|%B", &head.to_string()]);
    let replayed = repo.git(&["log", "-1", "--format=%an|%B|%cn", &tip]);
    assert!(replayed.starts_with(original.trim_end()), "{replayed}");
    assert!(
        replayed.trim_end().ends_with("|Ada Maintainer"),
        "{replayed}"
    );
    assert_eq!(
        ws.paths_changed_between(&base, &sha(&tip)).unwrap(),
        ["a.txt"]
    );
}

#[test]
fn a_commit_that_conflicts_with_the_moved_base_is_named_and_nothing_changes() {
    let (repo, head, base) = a_change_request_whose_base_moved(true);
    let ws = repo.workspace();
    let before = repo.snapshot();

    let rebased = ws
        .replay_onto(std::slice::from_ref(&head), &base, &bot())
        .unwrap();

    assert_eq!(rebased, autofix::git::Rebased::Conflict { commit: head });
    assert_eq!(repo.snapshot(), before);
}
