//! The environment a command sees: nothing inherited except allow-listed variables that do
//! not look like secrets, plus the variables the caller sets explicitly.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::io;

/// Variables passed through by default: what builds of Rust, Python, Go, Node and Java
/// projects need to find their toolchains, caches and locale, and nothing that carries
/// credentials.
///
/// Left out on purpose: proxy variables (`HTTPS_PROXY` and friends, which often embed a
/// user and password in their URL), registry URLs and tokens, `SSH_AUTH_SOCK`, and flags
/// such as `RUSTFLAGS` or `PYTHONPATH` that change what a build means. A caller that needs
/// one adds it to `env_allow` or sets it through `env_set`.
pub const DEFAULT_ENV_ALLOW: &[&str] = &[
    // Every process
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TERM",
    "TZ",
    "TMPDIR",
    "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    // C toolchains that language builds call into
    "CC",
    "CXX",
    "AR",
    "PKG_CONFIG_PATH",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    // Rust
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    // Go
    "GOPATH",
    "GOROOT",
    "GOCACHE",
    "GOMODCACHE",
    "GOFLAGS",
    "GOTOOLCHAIN",
    // Python
    "VIRTUAL_ENV",
    "PIP_CACHE_DIR",
    "UV_CACHE_DIR",
    "POETRY_CACHE_DIR",
    // Node
    "NVM_DIR",
    "NPM_CONFIG_CACHE",
    "PNPM_HOME",
    "YARN_CACHE_FOLDER",
    "COREPACK_HOME",
    // Java
    "JAVA_HOME",
    "MAVEN_HOME",
    "M2_HOME",
    "GRADLE_HOME",
    "GRADLE_USER_HOME",
];

/// Whether a variable's name says it holds a secret. Such a variable never reaches a
/// command: it is skipped when passing variables through (even when named in
/// `env_allow`) and refused when set through `env_set`.
///
/// The rule, compared without regard to case: the name contains `TOKEN`, `SECRET`,
/// `PASSWORD`, `PASSWD`, `CREDENTIAL` or `API_KEY`; or it ends in `_KEY` or `_PAT`; or it
/// starts with `AUTOFIX_`, the prefix of this service's own configuration (forge tokens,
/// database URLs).
pub fn looks_like_secret(name: &str) -> bool {
    const SECRET_WORDS: &[&str] = &[
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "CREDENTIAL",
        "API_KEY",
    ];
    let name = name.to_ascii_uppercase();
    SECRET_WORDS.iter().any(|word| name.contains(word))
        || name.ends_with("_KEY")
        || name.ends_with("_PAT")
        || name.starts_with("AUTOFIX_")
}

/// The complete environment for one command.
pub(super) struct ChildEnvironment {
    variables: BTreeMap<OsString, OsString>,
}

impl ChildEnvironment {
    /// Builds the environment from the variables set in this process that `allow` names,
    /// then `set` on top.
    pub fn build(allow: &[String], set: &[(String, String)]) -> io::Result<Self> {
        let mut variables = BTreeMap::new();
        for name in allow {
            check_name(name)?;
            if looks_like_secret(name) {
                tracing::debug!(variable = %name, "not passing a secret-looking variable to a command");
                continue;
            }
            if let Some(value) = std::env::var_os(name) {
                variables.insert(OsString::from(name), value);
            }
        }
        for (name, value) in set {
            check_name(name)?;
            if looks_like_secret(name) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "refusing to set `{name}` for the command: its name looks like a secret"
                    ),
                ));
            }
            if value.contains('\0') {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("the value given for `{name}` contains a NUL byte"),
                ));
            }
            variables.insert(OsString::from(name), OsString::from(value));
        }
        Ok(Self { variables })
    }

    /// The PATH the command will see, which is the one its program is looked up on.
    pub fn path(&self) -> Option<&OsStr> {
        self.variables
            .get(OsStr::new("PATH"))
            .map(OsString::as_os_str)
    }

    pub fn variables(&self) -> impl Iterator<Item = (&OsString, &OsString)> {
        self.variables.iter()
    }
}

fn check_name(name: &str) -> io::Result<()> {
    if name.is_empty() || name.contains(['=', '\0']) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "`{}` is not a valid environment variable name",
                name.escape_debug()
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_carry_credentials_look_like_secrets() {
        for name in [
            "GITHUB_TOKEN",
            "npm_token",
            "AWS_SECRET_ACCESS_KEY",
            "DB_PASSWORD",
            "OPENAI_API_KEY",
            "SIGNING_KEY",
            "GITLAB_PAT",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "AUTOFIX__DATABASE__URL",
        ] {
            assert!(looks_like_secret(name), "{name} should look like a secret");
        }
    }

    #[test]
    fn everyday_build_variables_do_not_look_like_secrets() {
        for name in DEFAULT_ENV_ALLOW {
            assert!(
                !looks_like_secret(name),
                "{name} should not look like a secret"
            );
        }
        assert!(!looks_like_secret("KEYBOARD_LAYOUT"));
    }
}
