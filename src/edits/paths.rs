//! Path confinement: a path written by a model becomes a real location only if it lies inside
//! the project root, outside `.git/`, and outside every protected pattern (gitignore syntax).

use std::fmt;
use std::path::{Component, Path, PathBuf};

use ignore::gitignore::{Gitignore, GitignoreBuilder};

/// A project directory, canonicalised once so every check compares real locations.
#[derive(Debug, Clone)]
pub struct ProjectRoot {
    root: PathBuf,
}

/// A requested path that passed every check: its normalised relative form and where it lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfinedPath {
    /// Normalised, `/`-separated, relative to the root (e.g. `src/main.rs`).
    pub relative: String,
    pub absolute: PathBuf,
}

/// Why a requested path is not allowed. Each variant reads as one sentence.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathRefusal {
    #[error("the path is empty")]
    Empty,
    #[error("the path holds a control character")]
    ControlCharacter,
    #[error("the path uses a backslash; write paths with `/`")]
    Backslash,
    #[error("the path is absolute; paths must be relative to the project root")]
    Absolute,
    #[error("the path starts with a drive letter; paths must be relative to the project root")]
    DriveLetter,
    #[error("the path climbs out with `..`")]
    ParentComponent,
    #[error("the path names the project root itself, not a file")]
    RootItself,
    #[error("the path is inside `.git/`")]
    InsideGit,
    #[error(
        "the path goes through a symbolic link (`{link}`); autofix writes only through real folders"
    )]
    ThroughSymlink { link: String },
    #[error("the path is a symbolic link (`{link}`); edit the file it points to instead")]
    IsSymlink { link: String },
    #[error("the path is protected (rule `{rule}`)")]
    Protected { rule: String },
}

impl ProjectRoot {
    pub fn new(dir: &Path) -> std::io::Result<Self> {
        let root = dir.canonicalize()?;
        if !root.is_dir() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotADirectory,
                format!("{} is not a directory", root.display()),
            ));
        }
        Ok(ProjectRoot { root })
    }

    pub fn path(&self) -> &Path {
        &self.root
    }

    /// Normalises `requested` and checks it lands inside the root, not in `.git/`, and not
    /// through a symlink that leaves the root. Protected patterns are checked separately.
    pub fn confine(&self, requested: &str) -> Result<ConfinedPath, PathRefusal> {
        let relative = normalise(requested)?;
        let absolute = self.root.join(&relative);
        self.check_symlinks(&relative)?;
        Ok(ConfinedPath { relative, absolute })
    }

    /// Walks the existing prefix of `relative` component by component, never following a
    /// link: a symbolic link anywhere on the way, or as the file itself, is refused, wherever it
    /// points. (Writes go through [`crate::anchored`], which refuses links too; this check says
    /// so before anything is prepared, in the words of a refusal.)
    fn check_symlinks(&self, relative: &str) -> Result<(), PathRefusal> {
        let parts: Vec<&str> = relative.split('/').collect();
        let mut walked = self.root.clone();
        for (index, part) in parts.iter().enumerate() {
            walked.push(part);
            let Ok(meta) = std::fs::symlink_metadata(&walked) else {
                return Ok(()); // the rest does not exist yet: nothing left to look at
            };
            if !meta.file_type().is_symlink() {
                continue;
            }
            let link = parts[..=index].join("/");
            return Err(if index == parts.len() - 1 {
                PathRefusal::IsSymlink { link }
            } else {
                PathRefusal::ThroughSymlink { link }
            });
        }
        Ok(())
    }
}

fn to_slash_string(path: &Path) -> Option<String> {
    let parts: Option<Vec<&str>> = path
        .components()
        .map(|c| match c {
            Component::Normal(s) => s.to_str(),
            _ => None,
        })
        .collect();
    parts.map(|p| p.join("/"))
}

/// Every file of the project that git would see (ignored files and `.git/` left out), as
/// normalised relative paths in sorted order. Symlinks are listed, not followed.
pub fn project_files(root: &Path) -> std::io::Result<Vec<String>> {
    let walker = ignore::WalkBuilder::new(root)
        .hidden(false)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .require_git(false)
        .parents(false)
        .filter_entry(|entry| entry.file_name() != ".git")
        .sort_by_file_path(|a, b| a.cmp(b))
        .build();
    let mut files = Vec::new();
    for entry in walker {
        let entry = entry.map_err(std::io::Error::other)?;
        if !entry
            .file_type()
            .is_some_and(|kind| kind.is_file() || kind.is_symlink())
        {
            continue;
        }
        let relative = entry.path().strip_prefix(root).unwrap_or(entry.path());
        if let Some(path) = to_slash_string(relative) {
            files.push(path);
        }
    }
    Ok(files)
}

/// Turns a model-written path into `a/b/c` form or says why it cannot be one.
pub fn normalise(requested: &str) -> Result<String, PathRefusal> {
    let trimmed = requested.trim();
    if trimmed.is_empty() {
        return Err(PathRefusal::Empty);
    }
    if trimmed.chars().any(char::is_control) {
        return Err(PathRefusal::ControlCharacter);
    }
    if trimmed.contains('\\') {
        return Err(PathRefusal::Backslash);
    }
    if trimmed.starts_with('/') || trimmed.starts_with('~') {
        return Err(PathRefusal::Absolute);
    }
    let bytes = trimmed.as_bytes();
    if bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' {
        return Err(PathRefusal::DriveLetter);
    }
    let mut parts = Vec::new();
    for part in trimmed.split('/') {
        match part {
            "" | "." => continue,
            ".." => return Err(PathRefusal::ParentComponent),
            _ if part.eq_ignore_ascii_case(".git") => return Err(PathRefusal::InsideGit),
            _ => parts.push(part),
        }
    }
    if parts.is_empty() {
        return Err(PathRefusal::RootItself);
    }
    Ok(parts.join("/"))
}

/// Paths no edit may touch: patterns in gitignore syntax (`/Cargo.lock` anchored at the root,
/// `*.pem` anywhere, `/logs/` a whole folder), plus, optionally, the project's own ignore rules.
#[derive(Clone)]
pub struct ProtectedPaths {
    patterns: Vec<String>,
    rules: Gitignore,
    project_ignores: Option<ProjectIgnores>,
}

impl fmt::Debug for ProtectedPaths {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProtectedPaths")
            .field("patterns", &self.patterns)
            .field("project_ignores", &self.project_ignores.is_some())
            .finish()
    }
}

/// Why a pattern list could not be compiled.
#[derive(Debug, thiserror::Error)]
#[error("invalid protected-path pattern `{pattern}`: {reason}")]
pub struct PatternError {
    pub pattern: String,
    pub reason: String,
}

impl ProtectedPaths {
    /// Protects nothing beyond `.git/` (which is always refused).
    pub fn none() -> Self {
        ProtectedPaths {
            patterns: Vec::new(),
            rules: Gitignore::empty(),
            project_ignores: None,
        }
    }

    pub fn from_patterns<S: AsRef<str>>(
        root: &ProjectRoot,
        patterns: &[S],
    ) -> Result<Self, PatternError> {
        let mut builder = GitignoreBuilder::new(root.path());
        for pattern in patterns {
            let pattern = pattern.as_ref();
            builder
                .add_line(None, pattern)
                .map_err(|err| PatternError {
                    pattern: pattern.to_string(),
                    reason: err.to_string(),
                })?;
        }
        let rules = builder.build().map_err(|err| PatternError {
            pattern: patterns
                .iter()
                .map(|p| p.as_ref())
                .collect::<Vec<_>>()
                .join(", "),
            reason: err.to_string(),
        })?;
        Ok(ProtectedPaths {
            patterns: patterns.iter().map(|p| p.as_ref().to_string()).collect(),
            rules,
            project_ignores: None,
        })
    }

    /// Also protects whatever the project's `.gitignore` files and `.git/info/exclude` ignore,
    /// read as they are now.
    pub fn with_project_ignores(mut self, root: &ProjectRoot) -> Self {
        self.project_ignores = Some(ProjectIgnores::load(root.path()));
        self
    }

    /// The rule protecting `relative` (a normalised path), if any.
    pub fn rule_for(&self, relative: &str, is_dir: bool) -> Option<String> {
        let path = Path::new(relative);
        let matched = self.rules.matched_path_or_any_parents(path, is_dir);
        if matched.is_ignore() {
            return Some(
                matched
                    .inner()
                    .map(|glob| glob.original().to_string())
                    .unwrap_or_else(|| relative.to_string()),
            );
        }
        self.project_ignores
            .as_ref()
            .and_then(|ignores| ignores.rule_for(relative, is_dir))
    }
}

/// The project's ignore rules: the root `.gitignore`, nested `.gitignore` files along a path,
/// and `.git/info/exclude`, with git's precedence (deeper files win, `!` re-includes).
#[derive(Clone)]
struct ProjectIgnores {
    root: PathBuf,
    /// Ordered from the root outwards: each entry applies to paths below its directory.
    files: Vec<(PathBuf, Gitignore)>,
}

impl ProjectIgnores {
    fn load(root: &Path) -> Self {
        let mut files = Vec::new();
        let exclude = root.join(".git/info/exclude");
        if exclude.is_file() {
            let mut builder = GitignoreBuilder::new(root);
            if builder.add(&exclude).is_none()
                && let Ok(rules) = builder.build()
            {
                files.push((PathBuf::new(), rules));
            }
        }
        ProjectIgnores {
            root: root.to_path_buf(),
            files,
        }
    }

    fn rule_for(&self, relative: &str, is_dir: bool) -> Option<String> {
        // The .gitignore files from the root down to the path's own directory; the deepest
        // one with an opinion decides, as in git.
        let mut layers: Vec<(PathBuf, Gitignore)> = self.files.clone();
        let components: Vec<&str> = relative.split('/').collect();
        for depth in 0..components.len() {
            let dir: PathBuf = components[..depth].iter().collect();
            let file = self.root.join(&dir).join(".gitignore");
            if file.is_file() {
                let (rules, _) = Gitignore::new(&file);
                layers.push((dir, rules));
            }
        }
        let path = Path::new(relative);
        for (base, rules) in layers.iter().rev() {
            let Ok(below) = path.strip_prefix(base) else {
                continue;
            };
            let matched =
                rules.matched_path_or_any_parents(self.root.join(base).join(below), is_dir);
            if matched.is_whitelist() {
                return None;
            }
            if matched.is_ignore() {
                let rule = matched
                    .inner()
                    .map(|glob| glob.original().to_string())
                    .unwrap_or_default();
                let source = if base.as_os_str().is_empty() {
                    ".gitignore".to_string()
                } else {
                    format!("{}/.gitignore", base.display())
                };
                return Some(format!("{rule} in {source}"));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project() -> (tempfile::TempDir, ProjectRoot) {
        let dir = tempfile::tempdir().unwrap();
        let root = ProjectRoot::new(dir.path()).unwrap();
        (dir, root)
    }

    #[test]
    fn ordinary_paths_are_normalised() {
        assert_eq!(normalise("./src//main.rs").unwrap(), "src/main.rs");
        assert_eq!(normalise("  src/lib.rs ").unwrap(), "src/lib.rs");
    }

    #[test]
    fn escaping_and_odd_paths_are_refused() {
        assert_eq!(normalise("../x"), Err(PathRefusal::ParentComponent));
        assert_eq!(normalise("src/../../x"), Err(PathRefusal::ParentComponent));
        assert_eq!(normalise("/etc/passwd"), Err(PathRefusal::Absolute));
        assert_eq!(normalise("~/.ssh/id_rsa"), Err(PathRefusal::Absolute));
        assert_eq!(normalise("C:/Windows"), Err(PathRefusal::DriveLetter));
        assert_eq!(normalise("..\\x"), Err(PathRefusal::Backslash));
        assert_eq!(normalise(".git/config"), Err(PathRefusal::InsideGit));
        assert_eq!(
            normalise("sub/.GIT/hooks/pre-commit"),
            Err(PathRefusal::InsideGit)
        );
        assert_eq!(normalise("a\0b"), Err(PathRefusal::ControlCharacter));
        assert_eq!(normalise("./"), Err(PathRefusal::RootItself));
        assert_eq!(normalise(""), Err(PathRefusal::Empty));
    }

    #[test]
    fn a_symlinked_directory_is_refused_wherever_it_leads() {
        let (_dir, root) = project();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("escape")).unwrap();
        std::fs::create_dir(root.path().join("real")).unwrap();
        std::os::unix::fs::symlink(root.path().join("real"), root.path().join("alias")).unwrap();
        std::fs::create_dir(root.path().join(".git")).unwrap();
        std::os::unix::fs::symlink(root.path().join(".git"), root.path().join("meta")).unwrap();
        for (path, link) in [
            ("escape/evil.rs", "escape"),
            ("alias/new.rs", "alias"),
            ("meta/config", "meta"),
        ] {
            assert_eq!(
                root.confine(path),
                Err(PathRefusal::ThroughSymlink { link: link.into() }),
                "{path}"
            );
        }
        assert_eq!(
            root.confine("alias/new.rs").unwrap_err().to_string(),
            "the path goes through a symbolic link (`alias`); autofix writes only through real folders"
        );
    }

    #[test]
    fn a_file_that_is_itself_a_symlink_is_refused() {
        let (_dir, root) = project();
        std::os::unix::fs::symlink("/etc/passwd", root.path().join("passwd")).unwrap();
        assert_eq!(
            root.confine("passwd"),
            Err(PathRefusal::IsSymlink {
                link: "passwd".into()
            })
        );
    }

    #[test]
    fn project_files_are_what_git_would_see_in_sorted_order() {
        let (_dir, root) = project();
        for (path, content) in [
            ("b.rs", ""),
            ("a/z.rs", ""),
            (".gitignore", "/target\n*.log\n"),
            ("target/out", ""),
            ("debug.log", ""),
            (".git/config", ""),
            (".env.example", ""),
        ] {
            let full = root.path().join(path);
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(full, content).unwrap();
        }
        assert_eq!(
            project_files(root.path()).unwrap(),
            [".env.example", ".gitignore", "a/z.rs", "b.rs"]
        );
    }

    #[test]
    fn protected_patterns_follow_gitignore_syntax() {
        let (_dir, root) = project();
        let protected =
            ProtectedPaths::from_patterns(&root, &["/Cargo.lock", "/logs/", "*.pem"]).unwrap();
        assert_eq!(
            protected.rule_for("Cargo.lock", false).as_deref(),
            Some("/Cargo.lock")
        );
        assert_eq!(protected.rule_for("sub/Cargo.lock", false), None);
        assert_eq!(
            protected.rule_for("logs/2024/x.txt", false).as_deref(),
            Some("/logs/")
        );
        assert_eq!(
            protected.rule_for("certs/site.pem", false).as_deref(),
            Some("*.pem")
        );
        assert_eq!(protected.rule_for("src/main.rs", false), None);
    }

    #[test]
    fn the_projects_gitignore_rules_protect_too_with_nested_files_and_negations() {
        let (_dir, root) = project();
        std::fs::write(
            root.path().join(".gitignore"),
            "*.log\n/build/\n!keep.log\n",
        )
        .unwrap();
        std::fs::create_dir(root.path().join("sub")).unwrap();
        std::fs::write(root.path().join("sub/.gitignore"), "secret.txt\n").unwrap();
        let protected = ProtectedPaths::none().with_project_ignores(&root);
        assert!(protected.rule_for("debug.log", false).is_some());
        assert!(protected.rule_for("build/out.o", false).is_some());
        assert_eq!(protected.rule_for("keep.log", false), None);
        let nested = protected.rule_for("sub/secret.txt", false).unwrap();
        assert!(nested.contains("sub/.gitignore"), "{nested}");
        assert_eq!(protected.rule_for("secret.txt", false), None);
        assert_eq!(protected.rule_for("src/lib.rs", false), None);
    }
}
