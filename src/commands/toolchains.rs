//! The toolchains a sandboxed command finds (with their versions), and the programs a
//! repository's steps would run that it would not find: what `config check --repo` reports.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::detect::Detected;
use crate::exec::{self, CommandSpec, Sandbox};

/// The toolchains reported, each with the arguments that print its version cheaply; `None`
/// where asking would be slow (Gradle starts a daemon to answer).
const KNOWN: &[(&str, Option<&[&str]>)] = &[
    ("python3", Some(&["--version"])),
    ("pip", Some(&["--version"])),
    ("cargo", Some(&["--version"])),
    ("rustc", Some(&["--version"])),
    ("go", Some(&["version"])),
    ("node", Some(&["--version"])),
    ("npm", Some(&["--version"])),
    ("yarn", Some(&["--version"])),
    ("pnpm", Some(&["--version"])),
    ("java", Some(&["-version"])),
    ("mvn", Some(&["--version"])),
    ("gradle", None),
    ("make", Some(&["--version"])),
    ("gcc", Some(&["--version"])),
];

/// How long one version question may take before it is given up.
const VERSION_TIMEOUT: Duration = Duration::from_secs(10);
/// The most output kept from one version question.
const VERSION_OUTPUT: usize = 4096;

/// One toolchain as the sandbox sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toolchain {
    pub name: &'static str,
    pub found: Found,
}

/// Whether and where a program is found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// On PATH and visible in the sandbox; the first line of its version, or why there is none.
    Shown {
        path: PathBuf,
        version: Result<String, String>,
    },
    /// On PATH, but in a folder the sandbox does not show.
    Hidden { path: PathBuf },
    /// Not on PATH.
    Missing,
}

/// Where a program is, for a sandboxed command.
pub fn locate(program: &str, sandbox: &Sandbox) -> Found {
    match exec::find_program(program) {
        None => Found::Missing,
        Some(path) if sandbox.shows(&path) => Found::Shown {
            path,
            version: Err("version not asked".to_string()),
        },
        Some(path) => Found::Hidden { path },
    }
}

/// Every known toolchain, its version asked in the sandbox (all at once, each under a short
/// timeout).
pub fn survey(sandbox: &Sandbox) -> Vec<Toolchain> {
    std::thread::scope(|scope| {
        let asked: Vec<_> = KNOWN
            .iter()
            .map(|&(name, version_args)| {
                scope.spawn(move || {
                    let found = match locate(name, sandbox) {
                        Found::Shown { path, .. } => Found::Shown {
                            version: match version_args {
                                Some(args) => version(name, args, sandbox),
                                None => Err("version not asked: slow to answer".to_string()),
                            },
                            path,
                        },
                        other => other,
                    };
                    Toolchain { name, found }
                })
            })
            .collect();
        asked
            .into_iter()
            .map(|handle| handle.join().expect("a version question does not panic"))
            .collect()
    })
}

/// The first line `program args` prints in the sandbox, or why it printed none.
fn version(program: &str, args: &[&str], sandbox: &Sandbox) -> Result<String, String> {
    let asked = format!("`{program} {}`", args.join(" "));
    let scratch =
        tempfile::tempdir().map_err(|err| format!("{asked} not run: no scratch folder: {err}"))?;
    let spec = CommandSpec::new(program, args.iter().copied(), scratch.path())
        .with_timeout(VERSION_TIMEOUT)
        .with_output_limit(VERSION_OUTPUT)
        .confined(sandbox.jail(scratch.path()));
    let outcome = exec::run(&spec).map_err(|err| format!("{asked} did not start: {err}"))?;
    if !outcome.success() {
        return Err(format!(
            "{asked} failed in the sandbox ({})",
            outcome.describe()
        ));
    }
    outcome
        .output
        .lines()
        .map(plain)
        .find(|line| !line.is_empty())
        .ok_or_else(|| format!("{asked} printed nothing"))
}

/// `line` without terminal colour codes (Maven colours its banner) or other control
/// characters, trimmed.
fn plain(line: &str) -> String {
    let mut kept = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => {
                // ESC [ parameters… final byte (`\x1b[1m`): the whole sequence goes.
                if chars.next() == Some('[') {
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
            }
            c if c.is_control() => kept.push(' '),
            c => kept.push(c),
        }
    }
    kept.trim().to_string()
}

/// The report: the PATH, one line per toolchain found, then those not found.
pub fn lines(toolchains: &[Toolchain]) -> Vec<String> {
    let mut lines = vec![format!(
        "toolchains a sandboxed command finds (PATH {}):",
        exec::command_path().to_string_lossy()
    )];
    let mut missing = Vec::new();
    for toolchain in toolchains {
        match &toolchain.found {
            Found::Shown { path, version } => lines.push(format!(
                "  {}: {} ({})",
                toolchain.name,
                version.as_deref().unwrap_or_else(|why| why),
                path.display()
            )),
            Found::Hidden { path } => lines.push(format!(
                "  {}: on PATH at {}, in a folder the sandbox does not show",
                toolchain.name,
                path.display()
            )),
            Found::Missing => missing.push(toolchain.name),
        }
    }
    if !missing.is_empty() {
        lines.push(format!("  not found: {}", missing.join(", ")));
    }
    lines
}

/// Which stage a step belongs to, as the warnings name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    Setup,
    Validate,
}

impl Stage {
    fn as_str(self) -> &'static str {
        match self {
            Stage::Setup => "setup",
            Stage::Validate => "validate",
        }
    }
}

/// One warning per step whose program (or one of whose programs) a sandboxed command would not
/// find. A relative path counts when the repository has it, or when a setup step makes the
/// folder it is in (`.venv/bin/python` after `python3 -m venv .venv`).
pub fn missing_programs(
    repo: &Path,
    setup: &[Detected],
    validate: &[Detected],
    sandbox: &Sandbox,
) -> Vec<String> {
    let steps = setup
        .iter()
        .map(|step| (Stage::Setup, step))
        .chain(validate.iter().map(|step| (Stage::Validate, step)));
    let mut warnings = Vec::new();
    for (stage, step) in steps {
        let problems: Vec<String> = step
            .programs()
            .iter()
            .filter_map(|program| problem(repo, program, step, setup, sandbox))
            .collect();
        if !problems.is_empty() {
            warnings.push(format!(
                "warning: {} `{}`{} would fail: {}",
                stage.as_str(),
                step.shown(),
                folder_note(&step.cwd),
                problems.join("; ")
            ));
        }
    }
    warnings
}

/// ` (in `web`)` for a step that does not run at the root.
pub fn folder_note(cwd: &str) -> String {
    if cwd == "." {
        String::new()
    } else {
        format!(" (in `{cwd}`)")
    }
}

/// Why `program` would not be found when `step` runs, if it would not.
fn problem(
    repo: &Path,
    program: &str,
    step: &Detected,
    setup: &[Detected],
    sandbox: &Sandbox,
) -> Option<String> {
    if program.starts_with('/') {
        let path = Path::new(program);
        return match (path.is_file(), sandbox.shows(path)) {
            (true, true) => None,
            (true, false) => Some(format!("`{program}` is not visible in the sandbox")),
            (false, _) => Some(format!("`{program}` does not exist")),
        };
    }
    if program.contains('/') {
        let relative = joined(&step.cwd, program);
        if repo.join(&relative).is_file() || made_by_setup(&relative, setup) {
            return None;
        }
        return Some(format!(
            "`{program}` is not in the repository and no setup step makes it"
        ));
    }
    match locate(program, sandbox) {
        Found::Shown { .. } => None,
        Found::Hidden { path } => Some(format!(
            "`{program}` is on PATH at {}, in a folder the sandbox does not show; install it \
             elsewhere or list its folder in exec.toolchain_paths",
            path.display()
        )),
        Found::Missing => Some(format!(
            "`{program}` is not on the sandbox's PATH; add it to the image or host (see \
             \"Adding toolchains\")"
        )),
    }
}

/// `cwd/path` relative to the repository root, without `.` components.
fn joined(cwd: &str, path: &str) -> String {
    cwd.split('/')
        .chain(path.split('/'))
        .filter(|part| !part.is_empty() && *part != ".")
        .collect::<Vec<_>>()
        .join("/")
}

/// Whether some setup step names, as an argument, a folder that holds `relative`
/// (`python3 -m venv .venv` makes `.venv/bin/python`), or installs Node packages when
/// `relative` is under `node_modules/`.
fn made_by_setup(relative: &str, setup: &[Detected]) -> bool {
    let under = |folder: &str| {
        !folder.is_empty()
            && relative
                .strip_prefix(folder)
                .is_some_and(|rest| rest.starts_with('/'))
    };
    setup.iter().any(|step| {
        let named = step
            .run
            .iter()
            .skip(1)
            .any(|argument| under(&joined(&step.cwd, argument)));
        let installs_node = step
            .programs()
            .iter()
            .any(|program| ["npm", "yarn", "pnpm"].contains(&program.as_str()));
        named || (installs_node && under(&joined(&step.cwd, "node_modules")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(run: &[&str], cwd: &str) -> Detected {
        Detected {
            name: run.join(" "),
            run: run.iter().map(|word| word.to_string()).collect(),
            cwd: cwd.to_string(),
            why: String::new(),
        }
    }

    #[test]
    fn a_program_in_a_folder_a_setup_step_makes_counts_as_there() {
        let setup = [
            step(&["python3", "-m", "venv", ".venv"], "."),
            step(&["npm", "ci"], "web"),
        ];
        assert!(made_by_setup(".venv/bin/python", &setup));
        assert!(made_by_setup("web/node_modules/.bin/jest", &setup));
        assert!(!made_by_setup("node_modules/.bin/jest", &setup));
        assert!(!made_by_setup(".venvs/bin/python", &setup));
        assert!(!made_by_setup("bin/python", &setup));
    }

    #[test]
    fn a_version_line_loses_its_colour_codes() {
        assert_eq!(
            plain("\u{1b}[1mApache Maven 3.8.7\u{1b}[m (b3d2)\r"),
            "Apache Maven 3.8.7 (b3d2)"
        );
    }

    #[test]
    fn a_relative_program_is_joined_to_its_folder() {
        assert_eq!(joined(".", "./gradlew"), "gradlew");
        assert_eq!(joined("web", ".venv/bin/python"), "web/.venv/bin/python");
    }
}
