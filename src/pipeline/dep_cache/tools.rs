//! The package tools whose downloads are kept: which files declare each one's dependencies,
//! and the variables that point it at its cache folder.

use std::path::{Path, PathBuf};

/// A family of package tools sharing one cache folder per repository and dependency key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tool {
    /// pip, uv and poetry.
    Python,
    /// npm, yarn and pnpm.
    Node,
    /// cargo: the registry and git checkouts, and the build folder.
    Cargo,
    /// go: the module cache and the build cache.
    Go,
}

/// How the folder is shown to a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// `[[setup]]`: the folder writable.
    Setup,
    /// Validation: the folder read-only; what the tool must write goes to the job's own copy.
    Validation,
}

impl Tool {
    pub const ALL: [Tool; 4] = [Tool::Python, Tool::Node, Tool::Cargo, Tool::Go];

    /// The folder name's prefix.
    pub fn name(self) -> &'static str {
        match self {
            Tool::Python => "python",
            Tool::Node => "node",
            Tool::Cargo => "cargo",
            Tool::Go => "go",
        }
    }

    /// Whether a file of the repository (its name, any folder) declares this tool's
    /// dependencies: a change to one of them starts a fresh folder.
    pub fn declared_in(self, file_name: &str) -> bool {
        match self {
            Tool::Python => {
                matches!(
                    file_name,
                    "pyproject.toml" | "setup.py" | "setup.cfg" | "poetry.lock" | "uv.lock"
                ) || (file_name.starts_with("requirements") && file_name.ends_with(".txt"))
            }
            Tool::Node => matches!(
                file_name,
                "package.json" | "package-lock.json" | "yarn.lock" | "pnpm-lock.yaml"
            ),
            Tool::Cargo => matches!(file_name, "Cargo.toml" | "Cargo.lock"),
            Tool::Go => matches!(file_name, "go.mod" | "go.sum"),
        }
    }

    /// The folders inside the tool's cache folder a validation command must be able to write
    /// (a build cache): each job gets its own copy of them, never written back.
    pub fn written_by_builds(self) -> &'static [&'static str] {
        match self {
            Tool::Cargo => &["target"],
            Tool::Go => &["build"],
            Tool::Python | Tool::Node => &[],
        }
    }

    /// The variables that point the tool at `folder` during `phase`; `private` holds the job's
    /// own copies of [`Tool::written_by_builds`] (validation only). `goflags` is the operator's
    /// `GOFLAGS`, kept.
    pub fn variables(
        self,
        folder: &Path,
        private: &Path,
        phase: Phase,
        goflags: Option<&str>,
    ) -> Vec<(String, String)> {
        let at = |name: &str| folder.join(name).display().to_string();
        let build = |name: &str| match phase {
            Phase::Setup => folder.join(name),
            Phase::Validation => private.join(name),
        };
        let pair = |name: &str, value: String| (name.to_string(), value);
        match self {
            Tool::Python => vec![
                pair("PIP_CACHE_DIR", at("pip")),
                pair("UV_CACHE_DIR", at("uv")),
                pair("POETRY_CACHE_DIR", at("poetry")),
            ],
            // Upper case, as the operator's own `NPM_CONFIG_CACHE` would be passed: one value.
            Tool::Node => vec![
                pair("NPM_CONFIG_CACHE", at("npm")),
                pair("YARN_CACHE_FOLDER", at("yarn")),
                pair("NPM_CONFIG_STORE_DIR", at("pnpm-store")),
                // npm writes its logs into its cache unless told otherwise; validation cannot.
                pair("NPM_CONFIG_LOGS_DIR", "/tmp/npm-logs".into()),
                pair("NPM_CONFIG_UPDATE_NOTIFIER", "false".into()),
            ],
            Tool::Cargo => vec![
                pair("CARGO_HOME", at("home")),
                pair("CARGO_TARGET_DIR", display(&build("target"))),
            ],
            Tool::Go => {
                // Modules are unpacked read-only unless asked; eviction must be able to delete them.
                let flags = match goflags.map(str::trim).filter(|flags| !flags.is_empty()) {
                    Some(flags) if flags.contains("-modcacherw") => flags.to_string(),
                    Some(flags) => format!("{flags} -modcacherw"),
                    None => "-modcacherw".to_string(),
                };
                vec![
                    pair("GOMODCACHE", at("mod")),
                    pair("GOCACHE", display(&build("build"))),
                    pair("GOFLAGS", flags),
                ]
            }
        }
    }
}

fn display(path: &Path) -> String {
    path.display().to_string()
}

/// The operator's cargo configuration (`$CARGO_HOME/config.toml`, else `~/.cargo/config.toml`,
/// or the older `config`), so a mirror or a registry replacement still applies with the cache's
/// own cargo home. `credentials.toml` is never read; see [`without_credentials`].
pub fn operator_cargo_config() -> Option<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .filter(|path| path.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .map(PathBuf::from)
                .map(|home| home.join(".cargo"))
        })?;
    ["config.toml", "config"]
        .iter()
        .map(|name| home.join(name))
        .find(|path| path.is_file())
}

/// The cargo configuration `text` without what authenticates (`token`, `credential-provider`,
/// `global-credential-providers`, anything named like a secret): sandboxed commands read it.
/// `None` when it is not TOML.
pub fn without_credentials(text: &str) -> Option<String> {
    fn strip(table: &mut toml::Table) {
        table.retain(|key, _| {
            !(key == "token" || key.contains("credential") || crate::exec::looks_like_secret(key))
        });
        for (_, value) in table.iter_mut() {
            if let toml::Value::Table(inner) = value {
                strip(inner);
            }
        }
    }
    let mut table: toml::Table = text.parse().ok()?;
    strip(&mut table);
    toml::to_string(&table).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lockfiles_and_manifests_declare_their_tools_dependencies() {
        assert!(Tool::Python.declared_in("requirements-dev.txt"));
        assert!(Tool::Python.declared_in("pyproject.toml"));
        assert!(!Tool::Python.declared_in("README.txt"));
        assert!(Tool::Node.declared_in("pnpm-lock.yaml"));
        assert!(Tool::Cargo.declared_in("Cargo.lock"));
        assert!(Tool::Go.declared_in("go.sum"));
        assert!(!Tool::Go.declared_in("main.go"));
    }

    #[test]
    fn validation_builds_in_the_jobs_own_copy_and_setup_in_the_shared_folder() {
        let (folder, private) = (Path::new("/cache/cargo-1"), Path::new("/scratch/7"));
        let setup = Tool::Cargo.variables(folder, private, Phase::Setup, None);
        assert!(setup.contains(&("CARGO_TARGET_DIR".into(), "/cache/cargo-1/target".into())));
        let validation = Tool::Cargo.variables(folder, private, Phase::Validation, None);
        assert!(validation.contains(&("CARGO_TARGET_DIR".into(), "/scratch/7/target".into())));
        assert!(validation.contains(&("CARGO_HOME".into(), "/cache/cargo-1/home".into())));
    }

    #[test]
    fn the_operators_cargo_mirror_is_kept_and_its_registry_tokens_are_not() {
        let config = "[source.crates-io]\nreplace-with = \"mirror\"\n\n[source.mirror]\nregistry = \"sparse+https://mirror.example/\"\n\n[registries.corp]\nindex = \"sparse+https://corp.example/\"\ntoken = \"cio-secret\"\ncredential-provider = \"cargo:token\"\n\n[registry]\ntoken = \"cio-other\"\nglobal-credential-providers = [\"cargo:token\"]\n";

        let kept = without_credentials(config).unwrap();

        assert!(kept.contains("replace-with = \"mirror\""), "{kept}");
        assert!(kept.contains("sparse+https://corp.example/"), "{kept}");
        assert!(!kept.contains("cio-"), "{kept}");
        assert!(!kept.contains("credential"), "{kept}");
    }

    #[test]
    fn the_operators_goflags_are_kept_and_the_module_cache_made_deletable() {
        let vars = Tool::Go.variables(
            Path::new("/c"),
            Path::new("/p"),
            Phase::Setup,
            Some("-mod=mod"),
        );
        assert!(vars.contains(&("GOFLAGS".into(), "-mod=mod -modcacherw".into())));
    }
}
