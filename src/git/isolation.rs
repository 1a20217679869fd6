//! libgit2 reads only each repository's own configuration: never the global (`~/.gitconfig`),
//! XDG or system files, where an `insteadOf` could send a push and its token somewhere else.

use std::sync::Once;

use git2::ConfigLevel;

/// Empties libgit2's search paths for the user's and the system's configuration files, once per
/// process, before the first repository or remote is opened.
pub(crate) fn ignore_user_and_system_config() {
    static ISOLATED: Once = Once::new();
    ISOLATED.call_once(|| {
        for level in [
            ConfigLevel::Global,
            ConfigLevel::XDG,
            ConfigLevel::System,
            ConfigLevel::ProgramData,
        ] {
            // SAFETY: runs once, before any other libgit2 call of this process reads the
            // search paths (every entry point of the git layer calls this first).
            if let Err(error) = unsafe { git2::opts::set_search_path(level, "") } {
                tracing::warn!(%error, ?level, "could not stop libgit2 reading a git config file");
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_global_or_system_config_file_is_searched() {
        ignore_user_and_system_config();
        for level in [ConfigLevel::Global, ConfigLevel::XDG, ConfigLevel::System] {
            // SAFETY: reads the search path set above.
            let path = unsafe { git2::opts::get_search_path(level) }.unwrap();
            assert_eq!(path.to_str().unwrap(), "", "{level:?}");
        }
    }
}
