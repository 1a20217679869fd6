//! Which toolchain directories a sandboxed command needs to see: the installs behind the
//! directories on PATH that lie outside the system's (rustup, pyenv, nvm, a JDK under /opt…).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// Directories every sandbox shows anyway: a PATH entry below one of them needs nothing more.
const SYSTEM_PREFIXES: &[&str] = &["/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc"];

/// The directories to show read-only for the programs on `path_var`, in PATH order.
///
/// A PATH entry named `bin` or `shims` stands for the install around it (`~/.pyenv/bin` →
/// `~/.pyenv`, a venv, a JDK), except a cargo home, whose `bin` is shown alone (it keeps
/// `credentials.toml` beside it) together with rustup's toolchains. An entry that is `HOME`
/// itself or would make `HOME` visible is shown alone.
pub fn toolchain_paths(path_var: Option<&OsStr>, home: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = Vec::new();
    let mut add = |path: PathBuf| {
        if !found.iter().any(|known| path.starts_with(known)) {
            found.retain(|known| !known.starts_with(&path));
            found.push(path);
        }
    };
    let Some(path_var) = path_var else {
        return found;
    };
    for entry in std::env::split_paths(path_var) {
        if !entry.is_absolute() || !entry.is_dir() || is_system(&entry) {
            continue;
        }
        if is_cargo_bin(&entry) {
            add(entry.clone());
            if let Some(rustup) = rustup_home(home) {
                add(rustup);
            }
            continue;
        }
        let named = |name: &str| entry.file_name() == Some(OsStr::new(name));
        let install = match entry.parent() {
            Some(parent) if (named("bin") || named("shims")) && !home.starts_with(parent) => {
                parent.to_path_buf()
            }
            _ => entry.clone(),
        };
        if install != home && !home.starts_with(&install) {
            add(install);
        }
    }
    found
}

fn is_system(path: &Path) -> bool {
    SYSTEM_PREFIXES
        .iter()
        .any(|prefix| path.starts_with(prefix))
}

/// `~/.cargo/bin` or `$CARGO_HOME/bin`: the rustup proxies live there.
fn is_cargo_bin(entry: &Path) -> bool {
    entry.file_name() == Some(OsStr::new("bin"))
        && (entry.join("rustup").exists() || entry.join("cargo").exists())
        && entry
            .parent()
            .is_some_and(|home| home.join("credentials.toml").exists() || home.ends_with(".cargo"))
}

/// Where rustup keeps its toolchains: `RUSTUP_HOME`, else `~/.rustup`, when it exists.
fn rustup_home(home: &Path) -> Option<PathBuf> {
    std::env::var_os("RUSTUP_HOME")
        .map(PathBuf::from)
        .filter(|path| path.is_absolute())
        .or_else(|| Some(home.join(".rustup")))
        .filter(|path| path.is_dir())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn installs_outside_the_system_are_found_by_their_bin_and_shims_dirs() {
        let home = tempfile::tempdir().unwrap();
        let root = home.path();
        for dir in [
            ".pyenv/shims",
            ".pyenv/bin",
            ".cargo/bin",
            ".rustup",
            "tools/jdk/bin",
            "bin",
        ] {
            fs::create_dir_all(root.join(dir)).unwrap();
        }
        fs::write(root.join(".cargo/bin/cargo"), "").unwrap();
        fs::write(root.join(".cargo/credentials.toml"), "token").unwrap();
        let path = std::env::join_paths([
            root.join(".cargo/bin"),
            root.join(".pyenv/shims"),
            root.join(".pyenv/bin"),
            root.join("tools/jdk/bin"),
            root.join("bin"),
            PathBuf::from("/usr/local/bin"),
            PathBuf::from("relative/bin"),
        ])
        .unwrap();
        let found = toolchain_paths(Some(&path), root);
        let expected_rustup = std::env::var_os("RUSTUP_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_dir())
            .unwrap_or(root.join(".rustup"));
        assert_eq!(
            found,
            [
                root.join(".cargo/bin"),
                expected_rustup,
                root.join(".pyenv"),
                root.join("tools/jdk"),
                root.join("bin"),
            ]
        );
    }
}
