//! Which files a plan changes without creating them that are not in the work tree, each with
//! the repository's paths most like it, so the planner can be told what is really there.

use crate::anchored::{Entry, Tree};
use crate::edits::closest::closest_paths;
use crate::edits::paths::{self, ProjectRoot, ProtectedPaths};
use crate::quote::one_line;

use super::plan::{Operation, Plan};

/// Most existing paths named beside one missing file.
pub const MAX_CLOSEST: usize = 5;

/// A file the plan modifies or deletes that the work tree does not hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingFile {
    /// As the plan wrote it, normalised (`./src/a.rs` is `src/a.rs`).
    pub path: String,
    /// Up to [`MAX_CLOSEST`] of the repository's files most like it, most alike first; never
    /// a protected one.
    pub closest: Vec<String>,
}

/// The files `plan` changes without creating (MODIFY, DELETE) that are not files in the work
/// tree at `root`, seen without following a link; `repo_files` are the candidates for the
/// closest paths. A path that is there in any form (a link, a folder, …) is left to the checks
/// that refuse writing it, and one that cannot be read as a path to the edit stage, which
/// refuses it by name.
pub fn missing_files(
    plan: &Plan,
    root: &ProjectRoot,
    protected: &ProtectedPaths,
    repo_files: &[String],
) -> Vec<MissingFile> {
    let Ok(tree) = Tree::open(root.path()) else {
        return Vec::new();
    };
    let candidates: Vec<String> = repo_files
        .iter()
        .filter(|path| protected.rule_for(path, false).is_none())
        .cloned()
        .collect();
    plan.file_changes
        .iter()
        .filter(|change| change.operation != Operation::Create)
        .filter_map(|change| paths::normalise(&change.path).ok())
        .filter(|path| matches!(tree.entry(path), Ok(Entry::Missing)))
        .map(|path| MissingFile {
            closest: closest_paths(&path, &candidates, MAX_CLOSEST)
                .into_iter()
                .map(str::to_owned)
                .collect(),
            path,
        })
        .collect()
}

/// `src/parser.rs (closest: calc/parser.py, tests/test_parser.py), tests/parser.rs (…)`, each
/// path on one line whatever it holds.
pub fn describe(missing: &[MissingFile]) -> String {
    let described: Vec<String> = missing
        .iter()
        .map(|file| {
            let closest = if file.closest.is_empty() {
                "no file with a similar name".to_string()
            } else {
                let names: Vec<String> = file.closest.iter().map(|path| one_line(path)).collect();
                format!("closest: {}", names.join(", "))
            };
            format!("{} ({closest})", one_line(&file.path))
        })
        .collect();
    described.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::repo::RepoConfig;

    /// A small Python project with a `.env` beside it, and its file list.
    fn python_project() -> (tempfile::TempDir, ProjectRoot, ProtectedPaths, Vec<String>) {
        let dir = tempfile::tempdir().unwrap();
        let files = [
            "calc/__init__.py",
            "calc/parser.py",
            "tests/test_parser.py",
            ".env.parser",
            "README.md",
        ];
        for file in files {
            let path = dir.path().join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x = 1\n").unwrap();
        }
        let root = ProjectRoot::new(dir.path()).unwrap();
        let protected = RepoConfig::default().protected_paths(&root).unwrap();
        let listed = paths::project_files(dir.path()).unwrap();
        (dir, root, protected, listed)
    }

    fn plan_of(changes: &[(&str, Operation)]) -> Plan {
        Plan::changing(changes)
    }

    #[test]
    fn a_plan_copied_from_the_prompt_s_example_names_files_the_python_project_lacks() {
        let (_dir, root, protected, files) = python_project();
        let plan = plan_of(&[
            ("src/parser.rs", Operation::Modify),
            ("./tests/parser.rs", Operation::Delete),
            ("calc/parser.py", Operation::Modify),
        ]);

        let missing = missing_files(&plan, &root, &protected, &files);

        let paths: Vec<&str> = missing.iter().map(|file| file.path.as_str()).collect();
        assert_eq!(paths, ["src/parser.rs", "tests/parser.rs"]);
        assert_eq!(missing[0].closest[0], "calc/parser.py");
        assert!(
            missing[1]
                .closest
                .contains(&"tests/test_parser.py".to_string())
        );
        for file in &missing {
            assert!(file.closest.len() <= MAX_CLOSEST);
            assert!(
                !file.closest.contains(&".env.parser".to_string()),
                "a protected file is never offered: {:?}",
                file.closest
            );
        }
        assert!(
            describe(&missing)
                .starts_with("src/parser.rs (closest: calc/parser.py, tests/test_parser.py"),
            "{}",
            describe(&missing)
        );
    }

    #[test]
    fn a_file_to_create_and_files_that_exist_pass() {
        let (_dir, root, protected, files) = python_project();
        let plan = plan_of(&[
            ("calc/parser.py", Operation::Modify),
            ("tests/test_empty.py", Operation::Create),
            ("README.md", Operation::Delete),
        ]);
        assert_eq!(missing_files(&plan, &root, &protected, &files), []);
    }

    #[test]
    fn a_missing_file_like_nothing_in_the_repository_says_so() {
        let missing = [MissingFile {
            path: "q".into(),
            closest: Vec::new(),
        }];
        assert_eq!(describe(&missing), "q (no file with a similar name)");
    }
}
