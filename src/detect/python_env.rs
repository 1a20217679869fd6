//! Python's tools as the CI calls them, run in the project's virtual environment (a CI runner
//! installs into its own Python, which the sandbox's system Python refuses), and the Python a
//! project asks for, matched against the interpreters a machine has.

use super::Detected;
use super::shell::{self, Line};

/// The folder the Python setup creates, relative to the root.
pub(super) const VENV: &str = ".venv";

/// Python's own names: run as the environment's `python`.
fn is_python(program: &str) -> bool {
    program == "python"
        || program
            .strip_prefix("python3")
            .is_some_and(|rest| rest.is_empty() || version_suffix(rest))
}

/// pip's names: run as `python -m pip`.
fn is_pip(program: &str) -> bool {
    program == "pip"
        || program
            .strip_prefix("pip3")
            .is_some_and(|rest| rest.is_empty() || version_suffix(rest))
}

/// `.11` of `python3.11`.
fn version_suffix(rest: &str) -> bool {
    rest.strip_prefix('.')
        .is_some_and(|minor| !minor.is_empty() && minor.chars().all(|c| c.is_ascii_digit()))
}

/// Tools installed with pip that run as `python -m <module>`, by the name the CI calls them.
const TOOLS: &[(&str, &str)] = &[
    ("pytest", "pytest"),
    ("py.test", "pytest"),
    ("tox", "tox"),
    ("nox", "nox"),
    ("mypy", "mypy"),
    ("flake8", "flake8"),
    ("ruff", "ruff"),
    ("black", "black"),
    ("isort", "isort"),
    ("pylint", "pylint"),
    ("coverage", "coverage"),
];

fn module_of(program: &str) -> Option<&'static str> {
    TOOLS
        .iter()
        .find(|(name, _)| *name == program)
        .map(|(_, module)| *module)
}

/// Whether `program` is Python, pip or one of the tools pip installs.
fn is_python_tool(program: &str) -> bool {
    is_python(program) || is_pip(program) || module_of(program).is_some()
}

/// `found` run in the environment, when it calls Python's tools: an argv's program becomes
/// the environment's `python` (with `-m pip` or `-m <tool>`); a shell line gets the
/// environment first on its `PATH`. `None` when it calls none of them.
pub(super) fn in_venv(found: &Detected) -> Option<Detected> {
    let to_venv = "../".repeat(depth(&found.cwd));
    let python = format!("{to_venv}{VENV}/bin/python");
    let run = match found.run.as_slice() {
        [sh, dash_c, line] if sh == "sh" && dash_c == "-c" => {
            let calls = shell::programs_in(line)
                .iter()
                .any(|program| is_python_tool(base_name(program)));
            if !calls {
                return None;
            }
            let line = format!(
                "export VIRTUAL_ENV=\"$PWD/{to_venv}{VENV}\" PATH=\"$PWD/{to_venv}{VENV}/bin:$PATH\"; {line}"
            );
            Line::Shell(line).argv()
        }
        [program, args @ ..] => {
            let name = base_name(program);
            let mut run = vec![python];
            if is_pip(name) {
                run.extend(["-m".to_string(), "pip".to_string()]);
            } else if let Some(module) = module_of(name) {
                run.extend(["-m".to_string(), module.to_string()]);
            } else if !is_python(name) {
                return None;
            }
            run.extend(args.iter().cloned());
            run
        }
        [] => return None,
    };
    Some(Detected {
        name: found.name.clone(),
        run,
        cwd: found.cwd.clone(),
        why: format!(
            "{}, in the project's virtual environment `{VENV}`",
            found.why
        ),
    })
}

fn base_name(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

/// How many folders `cwd` is below the root.
fn depth(cwd: &str) -> usize {
    cwd.split('/')
        .filter(|part| !part.is_empty() && *part != ".")
        .count()
}

/// A Python version as `(major, minor)`.
pub type PythonVersion = (u32, u32);

/// Whether `version` satisfies `requirement`: a PEP 440 specifier set (`>=3.10`,
/// `>=3.8,<4`, `~=3.11`, `==3.12.*`) or a bare version (`3.12` of `.python-version`),
/// compared on major and minor. Clauses it cannot read are ignored.
pub fn satisfies(requirement: &str, version: PythonVersion) -> bool {
    requirement
        .split(',')
        .map(str::trim)
        .filter(|clause| !clause.is_empty())
        .all(|clause| clause_holds(clause, version))
}

fn clause_holds(clause: &str, version: PythonVersion) -> bool {
    let operators = ["~=", "==", "!=", ">=", "<=", ">", "<"];
    let (operator, rest) = operators
        .iter()
        .find_map(|op| clause.strip_prefix(op).map(|rest| (*op, rest.trim())))
        .unwrap_or(("==", clause));
    let Some((wanted, parts, patch)) = parse_version(rest) else {
        return true;
    };
    match operator {
        "==" if parts == 1 => version.0 == wanted.0,
        "==" => version == wanted,
        "!=" if parts == 1 => version.0 != wanted.0,
        "!=" => version != wanted,
        ">=" => version >= wanted,
        ">" if patch => version >= wanted,
        ">" => version > wanted,
        "<=" => version <= wanted,
        "<" if patch => version <= wanted,
        "<" => version < wanted,
        "~=" if parts >= 3 => version == wanted,
        "~=" => version >= wanted && version.0 == wanted.0,
        _ => true,
    }
}

/// `3.12.1` → `((3, 12), 3 parts, a patch above 0)`; `3.12.*` → `((3, 12), 2, false)`.
fn parse_version(text: &str) -> Option<(PythonVersion, usize, bool)> {
    let text = text.trim_end_matches(".*");
    let numbers: Vec<u32> = text
        .split('.')
        .map(|part| part.parse().ok())
        .collect::<Option<Vec<u32>>>()?;
    match numbers.as_slice() {
        [major] => Some(((*major, 0), 1, false)),
        [major, minor] => Some(((*major, *minor), 2, false)),
        [major, minor, patch, ..] => Some(((*major, *minor), numbers.len(), *patch > 0)),
        [] => None,
    }
}

/// Which interpreter to make the environment with: `python3` when its version satisfies
/// `requirement` (or is not known), else the newest `python3.N` of `installed` that does.
/// `None` when none of them does.
pub fn choose_python(
    requirement: &str,
    python3: Option<PythonVersion>,
    installed: &[PythonVersion],
) -> Option<String> {
    if python3.is_none_or(|version| satisfies(requirement, version)) {
        return Some("python3".to_string());
    }
    installed
        .iter()
        .filter(|version| satisfies(requirement, **version))
        .max()
        .map(|(major, minor)| format!("python{major}.{minor}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(run: &[&str], cwd: &str) -> Detected {
        Detected {
            name: run.join(" "),
            run: run.iter().map(|word| word.to_string()).collect(),
            cwd: cwd.to_string(),
            why: "`.github/workflows/ci.yml` job `test` step 3".to_string(),
        }
    }

    #[test]
    fn pip_python_and_pip_installed_tools_run_from_the_environment() {
        let pip = in_venv(&found(&["pip", "install", "-e", ".[test]"], ".")).unwrap();
        assert_eq!(
            pip.run,
            [".venv/bin/python", "-m", "pip", "install", "-e", ".[test]"]
        );
        assert!(
            pip.why
                .ends_with("in the project's virtual environment `.venv`")
        );
        let pytest = in_venv(&found(&["pytest", "-q"], "pkg/sub")).unwrap();
        assert_eq!(pytest.run, ["../../.venv/bin/python", "-m", "pytest", "-q"]);
        let python = in_venv(&found(&["python3.11", "-m", "build"], ".")).unwrap();
        assert_eq!(python.run, [".venv/bin/python", "-m", "build"]);
        assert_eq!(in_venv(&found(&["cargo", "test"], ".")), None);
        assert_eq!(in_venv(&found(&["python3.x"], ".")), None);
    }

    #[test]
    fn a_shell_line_calling_python_gets_the_environment_first_on_its_path() {
        let line = found(&["sh", "-c", "pip install -r req.txt && make test"], "docs");
        let venv = in_venv(&line).unwrap();
        assert_eq!(
            venv.run,
            [
                "sh",
                "-c",
                "export VIRTUAL_ENV=\"$PWD/../.venv\" PATH=\"$PWD/../.venv/bin:$PATH\"; pip install -r req.txt && make test"
            ]
        );
        assert_eq!(
            in_venv(&found(&["sh", "-c", "make build && make test"], ".")),
            None
        );
    }

    #[test]
    fn requirements_are_read_as_pep_440_on_major_and_minor() {
        assert!(satisfies(">=3.10", (3, 11)));
        assert!(!satisfies(">=3.12", (3, 11)));
        assert!(satisfies(">=3.8,<4", (3, 13)));
        assert!(!satisfies(">=3.8, <3.11", (3, 11)));
        assert!(satisfies("~=3.10", (3, 12)));
        assert!(!satisfies("~=3.10", (4, 0)));
        assert!(satisfies("==3.12.*", (3, 12)));
        assert!(!satisfies("3.12", (3, 11)));
        assert!(satisfies("3.12.1", (3, 12)));
        assert!(satisfies("!=3.9.*", (3, 10)));
        assert!(satisfies(">3.7.1", (3, 7)));
        assert!(
            satisfies("pypy3.10", (3, 11)),
            "unreadable clauses are ignored"
        );
    }

    #[test]
    fn python3_is_kept_when_it_satisfies_else_the_newest_installed_one_that_does() {
        assert_eq!(
            choose_python(">=3.10", Some((3, 11)), &[(3, 12)]),
            Some("python3".into())
        );
        assert_eq!(
            choose_python("3.12", Some((3, 11)), &[(3, 11), (3, 12)]),
            Some("python3.12".into())
        );
        assert_eq!(
            choose_python(">=3.10", Some((3, 9)), &[(3, 10), (3, 13), (3, 8)]),
            Some("python3.13".into())
        );
        assert_eq!(choose_python(">=3.14", Some((3, 11)), &[(3, 12)]), None);
        assert_eq!(
            choose_python(">=3.14", None, &[]),
            Some("python3".into()),
            "an unknown python3 is trusted"
        );
    }
}
