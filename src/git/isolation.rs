//! The one door to libgit2: every repository and remote of the process is made here, after the
//! global (`~/.gitconfig`), XDG, system and ProgramData configuration files are switched off.
//!
//! An `insteadOf` in one of those files would send a fetch or a push, and its token, elsewhere.
//! libgit2 reads a repository's configuration when the repository is first opened or created and
//! keeps it, so switching the files off has to come before the first repository object of the
//! process: every constructor below does it first, `main` does it before anything else, and
//! `clippy.toml` forbids making a repository or a remote anywhere but here.
#![allow(clippy::disallowed_methods)]

use std::ffi::OsStr;
use std::path::Path;
use std::sync::OnceLock;

use git2::build::RepoBuilder;
use git2::{ConfigLevel, Odb, Remote, Repository, RepositoryOpenFlags};

/// Every configuration level libgit2 looks for outside a repository (ProgramData exists on
/// Windows only; emptied all the same).
const OUTSIDE_LEVELS: [ConfigLevel; 4] = [
    ConfigLevel::Global,
    ConfigLevel::XDG,
    ConfigLevel::System,
    ConfigLevel::ProgramData,
];

/// Empties libgit2's search paths for the configuration files outside repositories, once per
/// process; later calls return the first outcome. When it failed, no repository or remote is
/// made: a git layer that might read the service user's configuration does not run.
pub fn ignore_global_config() -> Result<(), git2::Error> {
    static OUTCOME: OnceLock<Result<(), git2::Error>> = OnceLock::new();
    let outcome = OUTCOME.get_or_init(|| {
        for level in OUTSIDE_LEVELS {
            // SAFETY: runs once, inside `OnceLock`, and every repository or remote of this
            // process is made by a function below that waits on that lock first, so nothing
            // reads the search paths while they change.
            unsafe { git2::opts::set_search_path(level, "") }.map_err(|error| {
                git2::Error::from_str(&format!(
                    "libgit2 would not stop reading the {level:?} git configuration: {error}"
                ))
            })?;
        }
        Ok(())
    });
    // `git2::Error` is not `Clone`: each caller gets a copy of the first outcome's error.
    match outcome {
        Ok(()) => Ok(()),
        Err(error) => Err(git2::Error::new(
            error.code(),
            error.class(),
            error.message(),
        )),
    }
}

/// `git init --bare` at `path`.
pub(crate) fn init_bare(path: &Path) -> Result<Repository, git2::Error> {
    ignore_global_config()?;
    Repository::init_bare(path)
}

/// The bare repository at `path`.
pub(crate) fn open_bare(path: &Path) -> Result<Repository, git2::Error> {
    ignore_global_config()?;
    Repository::open_bare(path)
}

/// The repository at exactly `path` (no search upwards).
pub(crate) fn open_exactly(path: &Path) -> Result<Repository, git2::Error> {
    ignore_global_config()?;
    Repository::open_ext(
        path,
        RepositoryOpenFlags::NO_SEARCH,
        std::iter::empty::<&OsStr>(),
    )
}

/// The repository that contains `path`, searching upwards.
pub(crate) fn discover(path: &Path) -> Result<Repository, git2::Error> {
    ignore_global_config()?;
    Repository::discover(path)
}

/// A repository of nothing but the objects in `odb` (no work tree, no folder).
pub(crate) fn from_odb(odb: Odb<'_>) -> Result<Repository, git2::Error> {
    ignore_global_config()?;
    Repository::from_odb(odb)
}

/// A builder for a clone.
pub(crate) fn clone_builder<'cb>() -> Result<RepoBuilder<'cb>, git2::Error> {
    ignore_global_config()?;
    Ok(RepoBuilder::new())
}

/// A remote for `url` that belongs to no repository.
pub(crate) fn detached_remote(url: &str) -> Result<Remote<'static>, git2::Error> {
    ignore_global_config()?;
    Remote::create_detached(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_configuration_outside_a_repository_is_searched() {
        ignore_global_config().unwrap();
        for level in OUTSIDE_LEVELS {
            // SAFETY: reads the search path set above.
            let path = unsafe { git2::opts::get_search_path(level) }.unwrap();
            assert_eq!(path.to_str().unwrap(), "", "{level:?}");
        }
    }
}
