//! `MirrorCache`: one bare mirror per forge repository, created on first use and fetched (never
//! re-cloned) by every later job, and the per-job working copies made from it.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use git2::build::CloneLocal;
use git2::{AutotagOption, ErrorCode, FetchOptions, FetchPrune, Repository};

use super::session::Session;
use super::timeouts::ensure_network_timeouts;
use super::url::RemoteUrl;
use crate::forge::GitCredentials;
use crate::git::error::RemoteOperation;
use crate::git::workspace::check_clone_destination;
use crate::git::{BranchName, CommitSha, GitError, Workspace};

/// Every branch of the forge, under the same name, moved or deleted as the forge moves them.
const MIRROR_REFSPEC: &str = "+refs/heads/*:refs/heads/*";
/// Every branch of the bot's fork, kept apart from the repository's own (which the fetch above
/// prunes) under a namespace of their own.
const FORK_REFSPEC: &str = "+refs/heads/*:refs/forks/heads/*";
const FORK_NAMESPACE: &str = "refs/forks/heads/";
/// What a job's working copy fetches from the mirror: the repository's branches as
/// `origin/<branch>` and the fork's as `fork/<branch>`, so the commits of a branch that lives
/// in the fork are in every working copy too.
const WORKTREE_FORK_REFSPEC: &str = "+refs/forks/heads/*:refs/remotes/fork/*";
const REMOTE_NAME: &str = "origin";
/// Where a first sync builds a mirror before moving it into place, under the cache root.
const PARTIAL_DIR: &str = ".partial";
const KEY_MAX_LEN: usize = 512;
const KEY_PART_MAX_LEN: usize = 100;

/// A folder of bare mirrors, one per repository key.
#[derive(Debug, Clone)]
pub struct MirrorCache {
    root: PathBuf,
}

/// A mirror just brought up to date with its forge repository.
#[derive(Debug, Clone)]
pub struct Mirror {
    path: PathBuf,
    url: String,
    default_branch: Option<String>,
    created: bool,
}

impl MirrorCache {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        MirrorCache { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the mirror of `key` lives: `github/octocat/Hello-World` →
    /// `<root>/github/octocat/Hello-World.git`. Keys are checked, not rewritten, so two keys
    /// never share a folder.
    pub fn mirror_path(&self, key: &str) -> Result<PathBuf, GitError> {
        let parts = key_parts(key)?;
        let (name, folders) = parts.split_last().expect("a checked key has a part");
        let mut path = self.root.clone();
        path.extend(folders);
        path.push(format!("{name}.git"));
        Ok(path)
    }

    /// Brings the mirror of `key` up to date with `url`: created by a first fetch into an empty
    /// bare repository, then fetched with pruning on every later call. Calls for one mirror are
    /// serialised within this process; separate processes must not share a cache root.
    pub fn sync(&self, key: &str, url: &str, creds: &GitCredentials) -> Result<Mirror, GitError> {
        let url = RemoteUrl::parse(url)?;
        let relative = self.mirror_path(key)?;
        std::fs::create_dir_all(&self.root).map_err(io_error("create", &self.root))?;
        let root = self
            .root
            .canonicalize()
            .map_err(io_error("resolve", &self.root))?;
        let path = root.join(relative.strip_prefix(&self.root).expect("built under root"));
        let lock = mirror_lock(&path);
        let _guard = lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let started = std::time::Instant::now();
        let created = !path.exists();
        let default_branch = if created {
            let partial = root.join(PARTIAL_DIR).join(key.replace('/', "%"));
            create_mirror(&partial, &path, &url, creds)?
        } else {
            fetch_into(&open_mirror(&path)?, &url, creds)?
        };
        tracing::info!(
            mirror = %path.display(),
            %url,
            created,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "mirror synced"
        );
        Ok(Mirror {
            path,
            url: url.to_string(),
            default_branch,
            created,
        })
    }
}

impl Mirror {
    /// The bare repository's folder.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The forge URL it was fetched from (never with credentials).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The forge's default branch (its HEAD) as of this sync; `None` for an empty repository.
    pub fn default_branch(&self) -> Option<&str> {
        self.default_branch.as_deref()
    }

    /// Whether this sync created the mirror (its first use) rather than fetching into it.
    pub fn created(&self) -> bool {
        self.created
    }

    /// The tip of `branch` in the mirror as of this sync.
    pub fn branch_tip(&self, branch: &str) -> Result<Option<CommitSha>, GitError> {
        let branch = BranchName::new(branch)?;
        let repo = open_mirror(&self.path)?;
        branch_tip(&repo, &branch)
    }

    /// A job's own working copy with `branch` checked out, cloned from the mirror without the
    /// network (objects are hard-linked where the file system allows). `dest` must not exist or
    /// be empty. Its `origin` is the mirror, so pushes name the forge URL explicitly.
    pub fn worktree(&self, dest: &Path, branch: &str) -> Result<Workspace, GitError> {
        let branch = BranchName::new(branch)?;
        let lock = mirror_lock(&self.path);
        let guard = lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if branch_tip(&open_mirror(&self.path)?, &branch)?.is_none() {
            return Err(GitError::MirrorBranchNotFound {
                branch: branch.to_string(),
                url: self.url.clone(),
            });
        }
        self.clone_into(dest, &branch)?;
        drop(guard);
        Workspace::open(dest)
    }

    /// Fetches every branch of the bot's fork at `url` into the mirror, beside the repository's
    /// own (a branch deleted in the fork is pruned), so working copies hold the fork's commits.
    pub fn fetch_fork(&self, url: &str, creds: &GitCredentials) -> Result<(), GitError> {
        let url = RemoteUrl::parse(url)?;
        let lock = mirror_lock(&self.path);
        let _guard = lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        ensure_network_timeouts();
        let repo = open_mirror(&self.path)?;
        forget_redirects(&repo)?;
        let mut remote = repo
            .remote_anonymous(url.as_str())
            .map_err(GitError::git(format!("prepare a fetch from {url}")))?;
        let session = Session::new(&url, creds, RemoteOperation::Fetch);
        let mut options = FetchOptions::new();
        options
            .remote_callbacks(session.callbacks())
            .prune(FetchPrune::On)
            .download_tags(AutotagOption::None)
            .update_fetchhead(false);
        remote
            .fetch(
                &[FORK_REFSPEC],
                Some(&mut options),
                Some("autofix: sync the fork"),
            )
            .map_err(|error| session.error(error))?;
        tracing::info!(mirror = %self.path.display(), %url, "the fork's branches fetched");
        Ok(())
    }

    /// The tip of `branch` of the bot's fork as of the last [`Mirror::fetch_fork`].
    pub fn fork_branch_tip(&self, branch: &str) -> Result<Option<CommitSha>, GitError> {
        let branch = BranchName::new(branch)?;
        let repo = open_mirror(&self.path)?;
        ref_tip(&repo, &format!("{FORK_NAMESPACE}{branch}"), &branch)
    }

    /// A job's own working copy of `branch` as the bot's fork has it (fetched with
    /// [`Mirror::fetch_fork`]): the repository's default branch cloned, then `branch` made at
    /// the fork's tip and checked out. `fork_url` only names the fork in errors.
    pub fn fork_worktree(
        &self,
        dest: &Path,
        branch: &str,
        fork_url: &str,
    ) -> Result<Workspace, GitError> {
        let branch = BranchName::new(branch)?;
        let default_branch =
            self.default_branch
                .clone()
                .ok_or_else(|| GitError::MirrorBranchNotFound {
                    branch: "(the default branch)".into(),
                    url: self.url.clone(),
                })?;
        let default_branch = BranchName::new(&default_branch)?;
        let lock = mirror_lock(&self.path);
        let guard = lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let Some(tip) = self.fork_branch_tip(branch.as_str())? else {
            return Err(GitError::MirrorBranchNotFound {
                branch: branch.to_string(),
                url: fork_url.to_string(),
            });
        };
        self.clone_into(dest, &default_branch)?;
        drop(guard);
        let workspace = Workspace::open(dest)?;
        let commit = workspace.find_commit(&tip)?;
        workspace
            .repo
            .branch(branch.as_str(), &commit, true)
            .map_err(GitError::git(format!(
                "make branch {branch} at the fork's {tip}"
            )))?;
        workspace.switch_to(&branch)?;
        drop(commit);
        Ok(workspace)
    }

    /// Clones the mirror into `dest` (which must not exist or be empty) with `branch` checked
    /// out; the caller holds the mirror's lock.
    fn clone_into(&self, dest: &Path, branch: &BranchName) -> Result<(), GitError> {
        check_clone_destination(dest)?;
        let source = self.path.to_str().ok_or_else(|| GitError::Io {
            action: "clone from",
            path: self.path.clone(),
            source: io::Error::new(io::ErrorKind::InvalidInput, "the path is not valid UTF-8"),
        })?;
        crate::git::isolation::clone_builder()
            .and_then(|mut builder| {
                builder
                    .branch(branch.as_str())
                    .clone_local(CloneLocal::Local)
                    .remote_create(|repo, name, url| {
                        repo.remote(name, url)?;
                        repo.remote_add_fetch(name, WORKTREE_FORK_REFSPEC)?;
                        repo.find_remote(name)
                    })
                    .clone(source, dest)
            })
            .map_err(GitError::git(format!(
                "make a working copy of {branch} from the mirror {} in {}",
                self.path.display(),
                dest.display()
            )))?;
        Ok(())
    }
}

/// Fetches into a fresh bare repository beside the cache, then moves it into place: a first
/// sync that fails (a refused token, a dead forge) leaves no half-made mirror behind.
fn create_mirror(
    partial: &Path,
    path: &Path,
    url: &RemoteUrl,
    creds: &GitCredentials,
) -> Result<Option<String>, GitError> {
    if partial.exists() {
        std::fs::remove_dir_all(partial).map_err(io_error("remove the leftover", partial))?;
    }
    let repo = crate::git::isolation::init_bare(partial).map_err(GitError::git(format!(
        "create a bare repository in {}",
        partial.display()
    )))?;
    repo.remote_with_fetch(REMOTE_NAME, url.as_str(), MIRROR_REFSPEC)
        .map_err(GitError::git(format!(
            "record {url} as the mirror's origin"
        )))?;
    let fetched = fetch_into(&repo, url, creds);
    drop(repo);
    let default_branch = match fetched {
        Ok(default_branch) => default_branch,
        Err(error) => {
            let _ = std::fs::remove_dir_all(partial);
            return Err(error);
        }
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io_error("create", parent))?;
    }
    std::fs::rename(partial, path).map_err(io_error("move the new mirror to", path))?;
    Ok(default_branch)
}

/// Removes every `url.*.insteadOf`/`pushInsteadOf` and push URL from the mirror's own config:
/// the fetch goes to the URL autofix computed, and nothing written there (by a command of an
/// older autofix, or by hand) can point it, or its token, elsewhere.
fn forget_redirects(repo: &Repository) -> Result<(), GitError> {
    let failed = GitError::git("remove redirections from the mirror's config");
    let config = repo.config().map_err(&failed)?;
    let mut local = config
        .open_level(git2::ConfigLevel::Local)
        .map_err(&failed)?;
    let mut names = Vec::new();
    {
        let mut entries = local.entries(None).map_err(&failed)?;
        while let Some(entry) = entries.next() {
            let entry = entry.map_err(&failed)?;
            let Some(name) = entry.name() else { continue };
            let lower = name.to_ascii_lowercase();
            let redirects = (lower.starts_with("url.")
                && (lower.ends_with(".insteadof") || lower.ends_with(".pushinsteadof")))
                || (lower.starts_with("remote.") && lower.ends_with(".pushurl"));
            if redirects && !names.contains(&name.to_string()) {
                names.push(name.to_string());
            }
        }
    }
    for name in names {
        tracing::warn!(mirror = %repo.path().display(), key = %name, "removed a redirection from the mirror's config");
        local.remove_multivar(&name, ".*").map_err(&failed)?;
    }
    drop(config);
    Ok(())
}

/// Fetches every branch (pruning those deleted upstream) and points the mirror's HEAD at the
/// forge's default branch, which it returns.
fn fetch_into(
    repo: &Repository,
    url: &RemoteUrl,
    creds: &GitCredentials,
) -> Result<Option<String>, GitError> {
    ensure_network_timeouts();
    forget_redirects(repo)?;
    let recorded = repo
        .find_remote(REMOTE_NAME)
        .map_err(GitError::git("read the mirror's origin"))?
        .url()
        .map(str::to_string);
    if recorded.as_deref() != Some(url.as_str()) {
        repo.remote_set_url(REMOTE_NAME, url.as_str())
            .map_err(GitError::git(format!("point the mirror's origin at {url}")))?;
    }
    let mut remote = repo
        .find_remote(REMOTE_NAME)
        .map_err(GitError::git("read the mirror's origin"))?;
    let session = Session::new(url, creds, RemoteOperation::Fetch);
    let mut options = FetchOptions::new();
    options
        .remote_callbacks(session.callbacks())
        .prune(FetchPrune::On)
        .download_tags(AutotagOption::None)
        .update_fetchhead(false);
    remote
        .fetch(&[MIRROR_REFSPEC], Some(&mut options), Some("autofix: sync"))
        .map_err(|error| session.error(error))?;
    // The advertisement stays readable after the fetch disconnects; an empty repository has
    // no HEAD to report.
    let Ok(head) = remote.default_branch() else {
        return Ok(None);
    };
    let head = head.as_str().unwrap_or_default().to_string();
    let Some(short) = head.strip_prefix("refs/heads/") else {
        return Ok(None);
    };
    repo.set_head(&head)
        .map_err(GitError::git(format!("point the mirror's HEAD at {head}")))?;
    Ok(Some(short.to_string()))
}

fn open_mirror(path: &Path) -> Result<Repository, GitError> {
    let repo =
        crate::git::isolation::open_bare(path).map_err(|error| GitError::NotARepository {
            path: path.to_path_buf(),
            detail: format!("the mirror cannot be opened: {}", error.message()),
        })?;
    if !repo.is_bare() {
        return Err(GitError::NotARepository {
            path: path.to_path_buf(),
            detail: "a mirror must be a bare repository".into(),
        });
    }
    Ok(repo)
}

fn branch_tip(repo: &Repository, branch: &BranchName) -> Result<Option<CommitSha>, GitError> {
    ref_tip(repo, &branch.full_ref(), branch)
}

fn ref_tip(
    repo: &Repository,
    full_ref: &str,
    branch: &BranchName,
) -> Result<Option<CommitSha>, GitError> {
    match repo.refname_to_id(full_ref) {
        Ok(oid) => Ok(Some(CommitSha::from_oid(oid))),
        Err(error) if error.code() == ErrorCode::NotFound => Ok(None),
        Err(error) => Err(GitError::Git {
            action: format!("read the tip of {branch} in the mirror"),
            source: error,
        }),
    }
}

/// The key's `/`-separated parts, refused rather than rewritten when a part could escape the
/// root, collide with another key's folder or the cache's own `.partial` folder.
fn key_parts(key: &str) -> Result<Vec<&str>, GitError> {
    let refuse = |reason| GitError::InvalidMirrorKey {
        key: key.to_string(),
        reason,
    };
    if key.is_empty() {
        return Err(refuse("it is empty"));
    }
    if key.len() > KEY_MAX_LEN {
        return Err(refuse("it is longer than 512 bytes"));
    }
    let parts: Vec<&str> = key.split('/').collect();
    for part in &parts {
        if part.is_empty() {
            return Err(refuse(
                "it has an empty part (a leading, trailing or double '/')",
            ));
        }
        if *part == "." || *part == ".." {
            return Err(refuse("a part is '.' or '..'"));
        }
        if part.len() > KEY_PART_MAX_LEN {
            return Err(refuse("a part is longer than 100 bytes"));
        }
        let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
        if !part.chars().all(allowed) {
            return Err(refuse(
                "only ASCII letters, digits, '-', '_' and '.' are allowed between the '/'",
            ));
        }
        if part.to_ascii_lowercase().ends_with(".git") {
            return Err(refuse(
                "a part ends in '.git' (mirror folders get that suffix)",
            ));
        }
    }
    if parts[0].starts_with('.') {
        return Err(refuse(
            "its first part starts with '.' (reserved for the cache's own folders)",
        ));
    }
    Ok(parts)
}

/// One lock per mirror folder, shared by every `MirrorCache` of this process.
fn mirror_lock(path: &Path) -> Arc<Mutex<()>> {
    static LOCKS: OnceLock<Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>> = OnceLock::new();
    let mut locks = LOCKS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    locks.entry(path.to_path_buf()).or_default().clone()
}

fn io_error(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> GitError {
    let path = path.to_path_buf();
    move |source| GitError::Io {
        action,
        path,
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::failure::FailureCode;

    fn refusal(key: &str) -> String {
        let error = MirrorCache::new("/cache").mirror_path(key).unwrap_err();
        assert_eq!(error.failure_code(), FailureCode::InvalidInput);
        error.to_string()
    }

    #[test]
    fn a_key_becomes_nested_folders_ending_in_dot_git() {
        let cache = MirrorCache::new("/cache");
        assert_eq!(
            cache.mirror_path("github/octocat/Hello-World").unwrap(),
            Path::new("/cache/github/octocat/Hello-World.git")
        );
        assert_eq!(
            cache.mirror_path("gitlab/group/sub/project").unwrap(),
            Path::new("/cache/gitlab/group/sub/project.git")
        );
    }

    #[test]
    fn a_key_that_climbs_out_of_the_root_is_refused() {
        assert!(refusal("github/../../etc").contains("'.' or '..'"));
        assert!(refusal("/etc/passwd").contains("empty part"));
    }

    #[test]
    fn a_key_with_characters_outside_the_safe_set_is_refused() {
        assert!(refusal("github/octo cat/repo").contains("only ASCII letters"));
        assert!(refusal("github/octo%2Fcat/repo").contains("only ASCII letters"));
    }

    #[test]
    fn a_key_part_ending_in_dot_git_is_refused_so_mirrors_never_nest() {
        assert!(refusal("github/octocat/repo.git").contains("ends in '.git'"));
    }

    #[test]
    fn a_key_reaching_the_cache_s_own_folders_is_refused() {
        assert!(refusal(".partial/x").contains("reserved"));
    }

    #[test]
    fn an_empty_or_huge_key_is_refused() {
        assert!(refusal("").contains("empty"));
        assert!(refusal(&"a".repeat(101)).contains("longer than 100"));
        assert!(refusal(&["abc"; 200].join("/")).contains("longer than 512"));
    }
}
