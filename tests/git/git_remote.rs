//! Git against a real smart-HTTP remote (`git http-backend` with token checks): the mirror
//! cache, job working copies, lease-checked pushes and deletions, and where the token goes.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::support::git_http::{BareRepo, GitHttpAuth, GitHttpServer};
use autofix::failure::FailureCode;
use autofix::forge::GitCredentials;
use autofix::git::{
    BranchName, CommitKind, CommitMessage, CommitSha, GitError, Identity, MirrorCache, Workspace,
    delete_remote_branch, push_branch, remote_branch_tip,
};
use secrecy::SecretString;
use tempfile::TempDir;

const USER: &str = "x-access-token";
const TOKEN: &str = "ghs_t0ken-that-must-never-touch-disk";
const READ_ONLY_TOKEN: &str = "ghs_read-only-t0ken";
const BOT_BRANCH: &str = "fix/42-handle-null-values";
const README: &str = "# hello\n";
const LIB: &str = "pub fn add(a: i32, b: i32) -> i32 {\n    a - b\n}\n";

// ---------------------------------------------------------------------------------------------
// The harness.

/// A forge remote holding `octocat/hello` on `main`, and a cache and job folders beside it.
struct Forge {
    server: GitHttpServer,
    upstream: BareRepo,
    url: String,
    cache: MirrorCache,
    scratch: TempDir,
}

impl Forge {
    fn new() -> Forge {
        crate::isolate_libgit2();
        let server = GitHttpServer::start(GitHttpAuth {
            username: USER.into(),
            token: TOKEN.into(),
            read_only_token: Some(READ_ONLY_TOKEN.into()),
        });
        let upstream = server.create_repo(
            "octocat/hello",
            "main",
            &[("README.md", README), ("src/lib.rs", LIB)],
        );
        let url = server.url("octocat/hello");
        let scratch = tempfile::tempdir().unwrap();
        let cache = MirrorCache::new(scratch.path().join("mirrors"));
        Forge {
            server,
            upstream,
            url,
            cache,
            scratch,
        }
    }

    fn sync(&self) -> Result<autofix::git::Mirror, GitError> {
        self.cache.sync("github/octocat/hello", &self.url, &creds())
    }

    /// A job's working copy of `main`, made from a fresh sync.
    fn job_worktree(&self, job: &str) -> Workspace {
        let mirror = self.sync().unwrap();
        mirror.worktree(&self.job_dir(job), "main").unwrap()
    }

    fn job_dir(&self, job: &str) -> PathBuf {
        self.scratch.path().join("jobs").join(job)
    }

    fn tip(&self, branch: &str) -> Option<String> {
        self.upstream.tip(branch)
    }

    /// The token appears in no request except as HTTP Basic credentials of the right user.
    fn assert_token_only_in_basic_auth(&self) {
        let requests = self.server.requests();
        assert!(!requests.is_empty());
        for request in &requests {
            assert!(!request.token_outside_basic_auth, "{request:?}");
            if let Some(user) = &request.basic_user {
                assert_eq!(user, USER, "{request:?}");
            }
        }
    }
}

fn creds() -> GitCredentials {
    creds_with(TOKEN)
}

fn creds_with(token: &str) -> GitCredentials {
    GitCredentials {
        username: USER.into(),
        token: SecretString::from(token),
    }
}

fn bot_branch() -> BranchName {
    BranchName::new(BOT_BRANCH).unwrap()
}

fn bot() -> Identity {
    Identity::new("autofix[bot]", "autofix@example.com").unwrap()
}

/// What the pipeline does in a job's working copy: its branch from the base, one fix commit.
fn commit_fix(workspace: &Workspace, job_id: &str, content: &str) -> CommitSha {
    let base = workspace.head_commit().unwrap();
    workspace
        .prepare_branch(&bot_branch(), &base, job_id)
        .unwrap();
    fs::write(workspace.root().join("src/lib.rs"), content).unwrap();
    let message = CommitMessage::new(
        CommitKind::Fix,
        "calc",
        "add instead of subtracting",
        None,
        Some(42),
        &bot(),
        Some(job_id),
    )
    .unwrap();
    workspace.commit_all(&message, &bot(), &bot()).unwrap()
}

fn fixed_lib(variant: u32) -> String {
    format!("pub fn add(a: i32, b: i32) -> i32 {{\n    a + b // {variant}\n}}\n")
}

/// The commit `workspace` has checked out: what a job records after committing, and pushes.
fn head(workspace: &Workspace) -> CommitSha {
    workspace.head_commit().unwrap()
}

fn sha(value: &str) -> CommitSha {
    CommitSha::parse(value).unwrap()
}

fn inode(path: &Path) -> u64 {
    fs::metadata(path).unwrap().ino()
}

/// Every file below `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                pending.push(entry.path());
            } else if kind.is_file() {
                files.push(entry.path());
            }
        }
    }
    files
}

// ---------------------------------------------------------------------------------------------
// The mirror cache.

#[test]
fn the_first_sync_clones_the_forge_repository_into_a_bare_mirror() {
    let forge = Forge::new();
    let mirror = forge.sync().unwrap();
    assert!(mirror.created());
    assert!(mirror.path().ends_with("mirrors/github/octocat/hello.git"));
    assert_eq!(mirror.default_branch(), Some("main"));
    assert_eq!(mirror.url(), forge.url);
    let main = mirror.branch_tip("main").unwrap().unwrap();
    assert_eq!(main.as_str(), forge.tip("main").unwrap());
    // The test looks at the mirror from outside the git layer (its own search paths are empty).
    #[allow(clippy::disallowed_methods)]
    let opened = git2::Repository::open(mirror.path()).unwrap();
    assert!(opened.is_bare());
    forge.assert_token_only_in_basic_auth();
}

#[test]
fn a_later_sync_fetches_new_upstream_commits_into_the_same_mirror() {
    let forge = Forge::new();
    let first = forge.sync().unwrap();
    let folder = inode(first.path());
    let objects = inode(&first.path().join("objects"));
    let upstream_tip = forge
        .upstream
        .commit("main", &[("NEWS.md", "news\n")], "upstream moves on");

    let second = forge.sync().unwrap();
    assert!(!second.created());
    assert_eq!(second.path(), first.path());
    assert_eq!(inode(second.path()), folder, "the mirror was re-created");
    assert_eq!(inode(&second.path().join("objects")), objects);
    assert_eq!(
        second.branch_tip("main").unwrap().unwrap().as_str(),
        upstream_tip
    );
    let fetches = forge
        .server
        .requests()
        .iter()
        .filter(|request| request.path.ends_with("/git-upload-pack") && request.authenticated)
        .count();
    assert_eq!(fetches, 2, "one pack negotiation per sync");
}

#[test]
fn a_branch_deleted_upstream_is_pruned_from_the_mirror() {
    let forge = Forge::new();
    forge
        .upstream
        .commit("feature", &[("f.txt", "f\n")], "a feature");
    let mirror = forge.sync().unwrap();
    assert!(mirror.branch_tip("feature").unwrap().is_some());

    forge.upstream.delete_branch("feature");
    let mirror = forge.sync().unwrap();
    assert_eq!(mirror.branch_tip("feature").unwrap(), None);
    assert!(mirror.branch_tip("main").unwrap().is_some());
}

#[test]
fn two_jobs_of_one_repository_syncing_at_once_share_one_mirror() {
    let forge = Forge::new();
    let results: Vec<_> = std::thread::scope(|scope| {
        let jobs: Vec<_> = (0..2).map(|_| scope.spawn(|| forge.sync())).collect();
        jobs.into_iter().map(|job| job.join().unwrap()).collect()
    });
    let mirrors: Vec<_> = results.into_iter().map(Result::unwrap).collect();
    assert_eq!(mirrors[0].path(), mirrors[1].path());
    assert_eq!(
        mirrors.iter().filter(|mirror| mirror.created()).count(),
        1,
        "exactly one of them created the mirror"
    );
}

#[test]
fn a_mirror_key_that_would_leave_the_cache_is_refused() {
    let forge = Forge::new();
    let error = forge
        .cache
        .sync("github/../../etc", &forge.url, &creds())
        .unwrap_err();
    assert_eq!(error.failure_code(), FailureCode::InvalidInput);
    assert!(error.to_string().contains("invalid mirror key"), "{error}");
    assert!(forge.server.requests().is_empty());
}

#[test]
fn a_clone_url_with_credentials_in_it_is_refused_before_any_request() {
    let forge = Forge::new();
    let url = forge
        .url
        .replace("http://", &format!("http://{USER}:{TOKEN}@"));
    let error = forge
        .cache
        .sync("github/octocat/hello", &url, &creds())
        .unwrap_err();
    assert_eq!(error.failure_code(), FailureCode::InvalidInput);
    let message = error.to_string();
    assert!(message.contains("embeds credentials"), "{message}");
    assert!(!message.contains(TOKEN), "{message}");
    assert!(forge.server.requests().is_empty());
}

// ---------------------------------------------------------------------------------------------
// Job working copies.

#[test]
fn a_job_worktree_is_a_working_copy_of_the_default_branch_made_from_the_mirror() {
    let forge = Forge::new();
    let mirror = forge.sync().unwrap();
    forge.server.clear_requests();
    let dest = forge.job_dir("job-1");

    let workspace = mirror.worktree(&dest, "main").unwrap();
    assert_eq!(workspace.root(), dest.canonicalize().unwrap());
    assert_eq!(workspace.current_branch().unwrap().as_str(), "main");
    assert_eq!(
        workspace.head_commit().unwrap().as_str(),
        forge.tip("main").unwrap()
    );
    assert_eq!(fs::read_to_string(dest.join("src/lib.rs")).unwrap(), LIB);
    assert!(
        forge.server.requests().is_empty(),
        "a worktree needs no network"
    );
    let packs: Vec<_> = files_under(&dest.join(".git/objects/pack"))
        .into_iter()
        .filter(|file| file.extension().is_some_and(|ext| ext == "pack"))
        .collect();
    assert!(!packs.is_empty());
    assert!(
        packs
            .iter()
            .all(|pack| fs::metadata(pack).unwrap().nlink() > 1),
        "the pack is hard-linked from the mirror, not copied"
    );
}

#[test]
fn a_worktree_of_a_branch_the_forge_does_not_have_is_refused() {
    let forge = Forge::new();
    let mirror = forge.sync().unwrap();
    let error = mirror
        .worktree(&forge.job_dir("job-1"), "trunk")
        .unwrap_err();
    assert_eq!(error.failure_code(), FailureCode::InvalidInput);
    assert_eq!(
        error.to_string(),
        format!("branch trunk does not exist in the mirror of {}", forge.url)
    );
}

#[test]
fn a_worktree_is_not_made_over_an_occupied_folder() {
    let forge = Forge::new();
    let mirror = forge.sync().unwrap();
    let dest = forge.job_dir("job-1");
    fs::create_dir_all(&dest).unwrap();
    fs::write(dest.join("leftover"), "x").unwrap();
    let error = mirror.worktree(&dest, "main").unwrap_err();
    assert!(
        matches!(error, GitError::CloneDestinationNotEmpty { .. }),
        "{error}"
    );
}

// ---------------------------------------------------------------------------------------------
// Pushing the bot's branch.

#[test]
fn a_new_bot_branch_is_pushed_to_the_forge() {
    let forge = Forge::new();
    let workspace = forge.job_worktree("job-1");
    let commit = commit_fix(&workspace, "job-1", &fixed_lib(1));

    let pushed = push_branch(
        &workspace,
        &forge.url,
        &bot_branch(),
        &head(&workspace),
        None,
        &creds(),
    )
    .unwrap();
    assert_eq!(pushed, commit);
    assert_eq!(forge.tip(BOT_BRANCH).unwrap(), commit.as_str());
    assert_eq!(forge.upstream.read(BOT_BRANCH, "src/lib.rs"), fixed_lib(1));
    assert_eq!(
        remote_branch_tip(&forge.url, &bot_branch(), &creds()).unwrap(),
        Some(commit)
    );
    forge.assert_token_only_in_basic_auth();
}

#[test]
fn a_retried_job_rewrites_its_own_branch_when_it_names_the_tip_it_pushed() {
    let forge = Forge::new();
    let first_run = forge.job_worktree("run-1");
    let first = commit_fix(&first_run, "job-1", &fixed_lib(1));
    push_branch(
        &first_run,
        &forge.url,
        &bot_branch(),
        &head(&first_run),
        None,
        &creds(),
    )
    .unwrap();

    let retry = forge.job_worktree("run-2");
    let second = commit_fix(&retry, "job-1", &fixed_lib(2));
    assert_ne!(first, second);
    let pushed = push_branch(
        &retry,
        &forge.url,
        &bot_branch(),
        &head(&retry),
        Some(first),
        &creds(),
    )
    .unwrap();
    assert_eq!(pushed, second);
    assert_eq!(forge.tip(BOT_BRANCH).unwrap(), second.as_str());
}

#[test]
fn pushing_a_tip_the_forge_already_has_changes_nothing() {
    let forge = Forge::new();
    let workspace = forge.job_worktree("job-1");
    let commit = commit_fix(&workspace, "job-1", &fixed_lib(1));
    push_branch(
        &workspace,
        &forge.url,
        &bot_branch(),
        &head(&workspace),
        None,
        &creds(),
    )
    .unwrap();
    forge.server.clear_requests();

    // The job crashed after pushing and before recording it: it retries with no expected tip.
    let pushed = push_branch(
        &workspace,
        &forge.url,
        &bot_branch(),
        &head(&workspace),
        None,
        &creds(),
    )
    .unwrap();
    assert_eq!(pushed, commit);
    assert!(
        !forge
            .server
            .requests()
            .iter()
            .any(|request| request.method == "POST" && request.path.ends_with("receive-pack")),
        "nothing was sent"
    );
}

#[test]
fn a_branch_holding_someone_elses_commit_is_refused_and_left_alone() {
    let forge = Forge::new();
    let theirs = forge
        .upstream
        .commit(BOT_BRANCH, &[("theirs.txt", "mine\n")], "a person's work");
    let workspace = forge.job_worktree("job-1");
    commit_fix(&workspace, "job-1", &fixed_lib(1));

    let error = push_branch(
        &workspace,
        &forge.url,
        &bot_branch(),
        &head(&workspace),
        None,
        &creds(),
    )
    .unwrap_err();
    assert_eq!(error.failure_code(), FailureCode::BranchExists);
    assert_eq!(
        error.to_string(),
        format!(
            "branch {BOT_BRANCH} on {} is at {theirs}, not absent as this job expected; refusing to overwrite someone else's work",
            forge.url
        )
    );
    assert_eq!(forge.tip(BOT_BRANCH).unwrap(), theirs);
}

#[test]
fn a_branch_moved_since_the_job_pushed_it_is_refused_and_left_alone() {
    let forge = Forge::new();
    let workspace = forge.job_worktree("job-1");
    let ours = commit_fix(&workspace, "job-1", &fixed_lib(1));
    push_branch(
        &workspace,
        &forge.url,
        &bot_branch(),
        &head(&workspace),
        None,
        &creds(),
    )
    .unwrap();
    let theirs = forge.upstream.commit(
        BOT_BRANCH,
        &[("review.txt", "a reviewer's fixup\n")],
        "fixup",
    );

    let retry = forge.job_worktree("job-1-retry");
    commit_fix(&retry, "job-1", &fixed_lib(2));
    let error = push_branch(
        &retry,
        &forge.url,
        &bot_branch(),
        &head(&retry),
        Some(ours.clone()),
        &creds(),
    )
    .unwrap_err();
    assert_eq!(error.failure_code(), FailureCode::BranchExists);
    let message = error.to_string();
    assert!(
        message.contains(&format!("is at {theirs}, not at {ours}")),
        "{message}"
    );
    assert_eq!(forge.tip(BOT_BRANCH).unwrap(), theirs);
}

#[test]
fn pushing_to_the_default_branch_is_refused() {
    let forge = Forge::new();
    let workspace = forge.job_worktree("job-1");
    let before = forge.tip("main").unwrap();
    fs::write(workspace.root().join("README.md"), "# changed\n").unwrap();
    let message = CommitMessage::new(
        CommitKind::Docs,
        "readme",
        "retitle the readme",
        None,
        None,
        &bot(),
        None,
    )
    .unwrap();
    workspace.commit_all(&message, &bot(), &bot()).unwrap();
    let main = BranchName::new("main").unwrap();

    let error = push_branch(
        &workspace,
        &forge.url,
        &main,
        &head(&workspace),
        Some(sha(&before)),
        &creds(),
    )
    .unwrap_err();
    assert_eq!(error.failure_code(), FailureCode::InvalidInput);
    assert_eq!(
        error.to_string(),
        format!(
            "refusing to push to branch main of {}: it is the repository's default branch, and the bot writes only its own branches",
            forge.url
        )
    );
    assert_eq!(forge.tip("main").unwrap(), before);
}

#[test]
fn pushing_a_commit_the_workspace_does_not_have_is_refused() {
    let forge = Forge::new();
    let workspace = forge.job_worktree("job-1");
    forge.server.clear_requests();
    let unknown = sha("0123456789abcdef0123456789abcdef01234567");
    let error = push_branch(
        &workspace,
        &forge.url,
        &bot_branch(),
        &unknown,
        None,
        &creds(),
    )
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        format!("commit {unknown} does not exist in this repository")
    );
    assert!(
        forge.server.requests().is_empty(),
        "checked before any request"
    );
}

#[test]
fn the_push_sends_the_recorded_commit_to_the_computed_url_whatever_the_work_tree_says() {
    let forge = Forge::new();
    let decoy = Forge::new();
    let workspace = forge.job_worktree("job-1");
    let recorded = commit_fix(&workspace, "job-1", &fixed_lib(1));
    // A command that ran in the tree moved the branch and rewrote the remote in .git/config.
    let moved = commit_fix(&workspace, "job-1", &fixed_lib(2));
    let config = workspace.root().join(".git/config");
    let mut text = fs::read_to_string(&config).unwrap();
    text.push_str(&format!(
        "[url \"{}\"]\n\tinsteadOf = {}\n\tpushInsteadOf = {}\n",
        decoy.url, forge.url, forge.url
    ));
    fs::write(&config, text).unwrap();
    decoy.server.clear_requests();

    let pushed = push_branch(
        &workspace,
        &forge.url,
        &bot_branch(),
        &recorded,
        None,
        &creds(),
    )
    .unwrap();

    assert_eq!(pushed, recorded);
    assert_ne!(pushed, moved);
    assert_eq!(forge.tip(BOT_BRANCH).unwrap(), recorded.to_string());
    assert!(
        decoy.server.requests().is_empty(),
        "the decoy remote was never contacted"
    );
}

#[test]
fn a_push_the_forge_declines_is_reported_with_the_forge_s_reason() {
    let forge = Forge::new();
    forge.upstream.install_hook(
        "pre-receive",
        "#!/bin/sh\necho 'branch protection: bots may not push here' >&2\nexit 1\n",
    );
    let workspace = forge.job_worktree("job-1");
    commit_fix(&workspace, "job-1", &fixed_lib(1));

    let error = push_branch(
        &workspace,
        &forge.url,
        &bot_branch(),
        &head(&workspace),
        None,
        &creds(),
    )
    .unwrap_err();
    assert_eq!(error.failure_code(), FailureCode::GitConflict);
    assert_eq!(
        error.to_string(),
        format!(
            "{} rejected the update of branch {BOT_BRANCH}: refs/heads/{BOT_BRANCH}: pre-receive hook declined",
            forge.url
        )
    );
    assert_eq!(forge.tip(BOT_BRANCH), None);
}

// ---------------------------------------------------------------------------------------------
// Deleting the bot's branch.

#[test]
fn the_bot_deletes_its_branch_when_it_is_still_where_the_job_left_it() {
    let forge = Forge::new();
    let workspace = forge.job_worktree("job-1");
    let commit = commit_fix(&workspace, "job-1", &fixed_lib(1));
    push_branch(
        &workspace,
        &forge.url,
        &bot_branch(),
        &head(&workspace),
        None,
        &creds(),
    )
    .unwrap();

    delete_remote_branch(&forge.url, &bot_branch(), commit.clone(), &creds()).unwrap();
    assert_eq!(forge.tip(BOT_BRANCH), None);
    assert_eq!(forge.upstream.branches(), ["main"]);
    assert_eq!(
        remote_branch_tip(&forge.url, &bot_branch(), &creds()).unwrap(),
        None
    );
    // Deleting a branch already gone is done, not an error.
    delete_remote_branch(&forge.url, &bot_branch(), commit, &creds()).unwrap();
}

#[test]
fn a_branch_someone_moved_is_not_deleted() {
    let forge = Forge::new();
    let workspace = forge.job_worktree("job-1");
    let ours = commit_fix(&workspace, "job-1", &fixed_lib(1));
    push_branch(
        &workspace,
        &forge.url,
        &bot_branch(),
        &head(&workspace),
        None,
        &creds(),
    )
    .unwrap();
    let theirs = forge
        .upstream
        .commit(BOT_BRANCH, &[("keep.txt", "keep\n")], "keep this");

    let error = delete_remote_branch(&forge.url, &bot_branch(), ours, &creds()).unwrap_err();
    assert_eq!(error.failure_code(), FailureCode::BranchExists);
    assert_eq!(forge.tip(BOT_BRANCH).unwrap(), theirs);
}

#[test]
fn the_default_branch_is_never_deleted() {
    let forge = Forge::new();
    let main = forge.tip("main").unwrap();
    let error = delete_remote_branch(
        &forge.url,
        &BranchName::new("main").unwrap(),
        sha(&main),
        &creds(),
    )
    .unwrap_err();
    assert_eq!(error.failure_code(), FailureCode::InvalidInput);
    assert!(
        error
            .to_string()
            .starts_with("refusing to delete branch main"),
        "{error}"
    );
    assert_eq!(forge.tip("main").unwrap(), main);
}

// ---------------------------------------------------------------------------------------------
// A refused token, a dead forge.

#[test]
fn a_wrong_token_fails_the_sync_at_once_with_permission_denied() {
    let forge = Forge::new();
    let started = Instant::now();
    let error = forge
        .cache
        .sync("github/octocat/hello", &forge.url, &creds_with("ghs_wrong"))
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(error.failure_code(), FailureCode::PermissionDenied);
    assert_eq!(
        error.to_string(),
        format!(
            "the forge refused the token for fetch from {}: HTTP 401 after the token for user {USER} was offered once",
            forge.url
        )
    );
    let requests = forge.server.requests();
    assert_eq!(
        requests.len(),
        2,
        "one challenge, one refused answer: {requests:?}"
    );
    assert!(requests.iter().all(|request| request.refused));
    assert!(
        !forge.cache.root().join("github/octocat/hello.git").exists(),
        "a failed first sync leaves no mirror behind"
    );
    assert!(files_under(forge.cache.root()).is_empty());
}

#[test]
fn a_wrong_token_fails_a_push_with_permission_denied_and_changes_nothing() {
    let forge = Forge::new();
    let workspace = forge.job_worktree("job-1");
    commit_fix(&workspace, "job-1", &fixed_lib(1));
    forge.server.clear_requests();

    let error = push_branch(
        &workspace,
        &forge.url,
        &bot_branch(),
        &head(&workspace),
        None,
        &creds_with("ghs_wrong"),
    )
    .unwrap_err();
    assert_eq!(error.failure_code(), FailureCode::PermissionDenied);
    assert!(
        error
            .to_string()
            .starts_with("the forge refused the token for push to")
    );
    assert!(!error.to_string().contains("ghs_wrong"));
    assert_eq!(forge.server.requests().len(), 2);
    assert_eq!(forge.tip(BOT_BRANCH), None);
}

#[test]
fn a_token_without_write_access_fails_the_push_with_permission_denied() {
    let forge = Forge::new();
    let workspace = forge.job_worktree("job-1");
    commit_fix(&workspace, "job-1", &fixed_lib(1));

    let error = push_branch(
        &workspace,
        &forge.url,
        &bot_branch(),
        &head(&workspace),
        None,
        &creds_with(READ_ONLY_TOKEN),
    )
    .unwrap_err();
    assert_eq!(error.failure_code(), FailureCode::PermissionDenied);
    assert!(!error.is_transient());
    assert_eq!(
        error.to_string(),
        format!(
            "the forge refused the token for push to {}: unexpected http status code: 403",
            forge.url
        )
    );
    assert_eq!(forge.tip(BOT_BRANCH), None);
}

#[test]
fn a_forge_that_accepts_the_connection_but_never_answers_times_out() {
    crate::isolate_libgit2();
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/octocat/hello.git", silent.local_addr().unwrap());
    let scratch = tempfile::tempdir().unwrap();
    let cache = MirrorCache::new(scratch.path());

    let started = Instant::now();
    let error = cache
        .sync("github/octocat/hello", &url, &creds())
        .unwrap_err();
    assert!(
        started.elapsed() < crate::NETWORK_TIMEOUT * 3,
        "{:?}",
        started.elapsed()
    );
    assert_eq!(error.failure_code(), FailureCode::Timeout, "{error}");
    assert!(error.is_transient());
    assert!(
        error
            .to_string()
            .starts_with(&format!("fetch from {url} timed out")),
        "{error}"
    );
    drop(silent);
}

#[test]
fn a_forge_that_is_not_listening_is_a_transient_failure() {
    crate::isolate_libgit2();
    let url = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!(
            "http://{}/octocat/hello.git",
            listener.local_addr().unwrap()
        )
    };
    let error = remote_branch_tip(&url, &bot_branch(), &creds()).unwrap_err();
    assert!(error.is_transient(), "{error}");
    assert!(
        error
            .to_string()
            .starts_with(&format!("cannot list the branches of {url}")),
        "{error}"
    );
}

#[test]
fn a_repository_the_forge_does_not_have_is_not_worth_retrying() {
    let forge = Forge::new();
    let url = forge.server.url("octocat/missing");
    let error = remote_branch_tip(&url, &bot_branch(), &creds()).unwrap_err();
    assert!(!error.is_transient(), "{error}");
    assert!(error.to_string().contains("404"), "{error}");
}

// ---------------------------------------------------------------------------------------------
// Where the token goes.

#[test]
fn after_a_whole_job_the_token_is_nowhere_on_disk_and_only_ever_sent_as_basic_auth() {
    let forge = Forge::new();
    let workspace = forge.job_worktree("job-1");
    let first = commit_fix(&workspace, "job-1", &fixed_lib(1));
    push_branch(
        &workspace,
        &forge.url,
        &bot_branch(),
        &head(&workspace),
        None,
        &creds(),
    )
    .unwrap();
    let retry = forge.job_worktree("job-1-retry");
    let second = commit_fix(&retry, "job-1", &fixed_lib(2));
    push_branch(
        &retry,
        &forge.url,
        &bot_branch(),
        &head(&retry),
        Some(first),
        &creds(),
    )
    .unwrap();
    delete_remote_branch(&forge.url, &bot_branch(), second, &creds()).unwrap();
    let _ = forge.cache.sync(
        "github/octocat/hello",
        &forge.url,
        &creds_with("ghs_wrong-token"),
    );

    let files = files_under(forge.scratch.path());
    assert!(
        files.len() > 20,
        "the mirror and both worktrees were searched"
    );
    for file in files {
        let bytes = fs::read(&file).unwrap();
        for secret in [TOKEN, READ_ONLY_TOKEN, "ghs_wrong-token"] {
            assert!(
                !bytes
                    .windows(secret.len())
                    .any(|window| window == secret.as_bytes()),
                "{} holds a token",
                file.display()
            );
        }
    }
    let config =
        fs::read_to_string(forge.cache.root().join("github/octocat/hello.git/config")).unwrap();
    assert!(config.contains(&format!("url = {}", forge.url)), "{config}");
    forge.assert_token_only_in_basic_auth();
    assert!(
        forge
            .server
            .requests()
            .iter()
            .any(|request| request.authenticated)
    );
}

#[test]
fn https_remotes_are_spoken_to_over_tls() {
    crate::isolate_libgit2();
    assert!(
        git2::Version::get().https(),
        "libgit2 was built without HTTPS"
    );
    // A server that hangs up at once: the failure must come from the TLS handshake, not from
    // a libgit2 that does not know https:// at all.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "https://{}/octocat/hello.git",
        listener.local_addr().unwrap()
    );
    let hang_up = std::thread::spawn(move || drop(listener.accept()));
    let error = remote_branch_tip(&url, &bot_branch(), &creds()).unwrap_err();
    hang_up.join().unwrap();
    let message = error.to_string();
    assert!(!message.contains("unsupported URL protocol"), "{message}");
    assert!(
        message.starts_with(&format!("cannot list the branches of {url}")),
        "{message}"
    );
}
