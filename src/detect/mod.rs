//! How a repository builds and tests itself, found as a new contributor would find it: its CI
//! definitions first, then its manifests; every proposal says why, and what was left out says why.

mod ci;
mod classify;
mod github;
mod gitlab;
mod ini;
mod manifests;
mod python_env;
mod shell;
mod tree;

pub use python_env::{PythonVersion, choose_python, satisfies};
pub use tree::{FileList, FolderTree, MAX_READ_BYTES, RepoTree};

use serde::{Deserialize, Serialize};

use crate::config::repo::{CommandsSection, RepoConfig, SetupStep, ValidateStep};

/// The longest step name `.autofix.toml` accepts.
const MAX_NAME_CHARS: usize = 64;

/// What detection proposes for a repository: setup (run once, with network), validation
/// (after every edit, without network), and what it saw but would not run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Detection {
    pub setup: Vec<Detected>,
    pub validate: Vec<Detected>,
    pub left_out: Vec<LeftOut>,
    /// The Python version a Python project asks for (`>=3.10`, `3.12`), as it writes it.
    pub python_requirement: Option<String>,
}

/// One proposed command and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detected {
    /// Unique within its list, at most 64 characters.
    pub name: String,
    /// argv; a line that needs a shell is `["sh", "-c", line]`.
    pub run: Vec<String>,
    /// Relative to the repository root, `.` for the root itself.
    pub cwd: String,
    /// Where it was found: "`package.json` scripts.test", "`.github/workflows/ci.yml` job `test` step 3".
    pub why: String,
}

impl Detected {
    /// The command as a reader would type it (a shell line as the line itself).
    pub fn shown(&self) -> String {
        shown(&self.run)
    }

    /// The programs the command runs: argv[0], or, for `sh -c line`, the program of each
    /// command the line chains (shell keywords, builtins and expansions left out).
    pub fn programs(&self) -> Vec<String> {
        match self.run.as_slice() {
            [sh, dash_c, line] if sh == "sh" && dash_c == "-c" => shell::programs_in(line),
            [program, ..] => vec![program.clone()],
            [] => Vec::new(),
        }
    }
}

/// Something that looked like a check or a setup step, and why it is not proposed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LeftOut {
    pub what: String,
    pub why: String,
}

/// A proposal as a run records it (`RESULT.json` `detected`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DetectedCommand {
    pub stage: Stage,
    pub run: Vec<String>,
    pub cwd: String,
    pub why: String,
}

impl DetectedCommand {
    /// `setup: python3 -m venv .venv (in docs) — why`: one line of a run log or a terminal.
    pub fn line(&self) -> String {
        let place = if self.cwd == "." {
            String::new()
        } else {
            format!(" (in {})", self.cwd)
        };
        format!(
            "{}: {}{place} — {}",
            self.stage.as_str(),
            self.shown(),
            self.why
        )
    }

    /// The command as a reader would type it; a shell line as `sh -c "line"`.
    pub fn shown(&self) -> String {
        match self.run.as_slice() {
            [sh, dash_c, line] if sh == "sh" && dash_c == "-c" => format!("sh -c {line:?}"),
            run => shown(run),
        }
    }
}

/// Whether a proposal belongs to setup or to validation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    Setup,
    Validate,
}

/// Proposals and exclusions from one source (the CI definitions, or the manifests).
#[derive(Debug, Default)]
struct Findings {
    setup: Vec<Detected>,
    validate: Vec<Detected>,
    left_out: Vec<LeftOut>,
    python_requirement: Option<String>,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Setup => "setup",
            Stage::Validate => "validate",
        }
    }
}

impl Findings {
    fn propose(&mut self, stage: Stage, detected: Detected) {
        match stage {
            Stage::Setup => self.setup.push(detected),
            Stage::Validate => self.validate.push(detected),
        }
    }

    fn leave_out(&mut self, what: impl Into<String>, why: impl Into<String>) {
        self.left_out.push(LeftOut {
            what: what.into(),
            why: why.into(),
        });
    }
}

impl Detection {
    /// Looks at `tree` and proposes its setup and checks. CI definitions win where they give
    /// something runnable; the manifests fill setup or validation where the CI gives none.
    pub fn detect(tree: &dyn RepoTree) -> Detection {
        Detection::detect_under(tree, &CommandsSection::default())
    }

    /// [`Detection::detect`] under a repository's own command rules (`[commands] allow` and
    /// `deny`): what they refuse is left out with the rule that refuses it.
    pub fn detect_under(tree: &dyn RepoTree, rules: &CommandsSection) -> Detection {
        let mut from_ci = Findings::default();
        github::read(tree, &mut from_ci);
        gitlab::read(tree, &mut from_ci);
        let from_manifests = manifests::read(tree);
        let mut detection = Detection::default();
        let mut left_out = from_ci.left_out;
        let (ci_setup, ci_validate) = (from_ci.setup, from_ci.validate);
        let (mut setup, mut validate) = (from_manifests.setup.clone(), from_manifests.validate);
        let mut in_venv = false;
        for (chosen, from_ci) in [(&mut setup, ci_setup), (&mut validate, ci_validate)] {
            if from_ci.is_empty() {
                continue;
            }
            *chosen = from_ci;
            if has_venv(&from_manifests.setup) {
                for found in chosen.iter_mut() {
                    if let Some(adapted) = python_env::in_venv(found) {
                        *found = adapted;
                        in_venv = true;
                    }
                }
            }
        }
        if in_venv {
            needs_the_venv(&mut setup, &from_manifests.setup);
        }
        left_out.extend(from_manifests.left_out);
        detection.left_out = left_out;
        detection.python_requirement = from_manifests.python_requirement;
        detection.setup = detection.vetted(Stage::Setup, setup, rules);
        detection.validate = detection.vetted(Stage::Validate, validate, rules);
        detection
    }

    /// The found setup set aside for the one the configuration has: each step is listed as
    /// left out, so what is reported as found is what runs.
    pub fn keep_configured_setup(&mut self) {
        for found in self.setup.drain(..) {
            self.left_out.push(LeftOut {
                what: format!("{}: {}", place(&found.why), shown(&found.run)),
                why: "`.autofix.toml` configures its own [[setup]]".into(),
            });
        }
    }

    /// Whether anything would be checked: a proposal with setup alone checks nothing.
    pub fn found_checks(&self) -> bool {
        !self.validate.is_empty()
    }

    /// Every proposal in the order it runs, setup first.
    pub fn commands(&self) -> Vec<DetectedCommand> {
        let stage = |stage: Stage| {
            move |found: &Detected| DetectedCommand {
                stage,
                run: found.run.clone(),
                cwd: found.cwd.clone(),
                why: found.why.clone(),
            }
        };
        self.setup
            .iter()
            .map(stage(Stage::Setup))
            .chain(self.validate.iter().map(stage(Stage::Validate)))
            .collect()
    }

    /// What the proposed commands make in the work tree and insist on keeping there (a
    /// virtual environment, `node_modules`, cargo's `target`), as ignore patterns: never part
    /// of a commit, never what makes the tree dirty.
    pub fn creates(&self) -> Vec<&'static str> {
        let words: Vec<&str> = self
            .setup
            .iter()
            .chain(&self.validate)
            .flat_map(|found| found.run.iter())
            .flat_map(|word| word.split(|c: char| c.is_whitespace() || c == '/'))
            .collect();
        let mentions = |names: &[&str]| words.iter().any(|word| names.contains(word));
        let mut creates = Vec::new();
        if mentions(&[".venv"]) {
            creates.push("/.venv/");
        }
        if mentions(&["npm", "yarn", "pnpm", "npx"]) {
            creates.push("node_modules/");
        }
        if mentions(&["cargo"]) {
            creates.push("/target/");
        }
        creates
    }

    /// The proposals as `.autofix.toml` steps: setup with network, validation without.
    pub fn to_config(&self) -> (Vec<SetupStep>, Vec<ValidateStep>) {
        let setup = self
            .setup
            .iter()
            .map(|found| SetupStep {
                name: found.name.clone(),
                run: found.run.clone(),
                timeout_secs: None,
                cwd: found.cwd.clone(),
                env: Default::default(),
            })
            .collect();
        let validate = self
            .validate
            .iter()
            .map(|found| ValidateStep {
                name: found.name.clone(),
                run: found.run.clone(),
                timeout_secs: None,
                fail_on_warnings: false,
                cwd: found.cwd.clone(),
                env: Default::default(),
                network: false,
            })
            .collect();
        (setup, validate)
    }

    /// The proposals that pass the rules `.autofix.toml` steps pass, each named uniquely; a
    /// repeated command or a refused one goes to `left_out`.
    fn vetted(
        &mut self,
        stage: Stage,
        proposals: Vec<Detected>,
        rules: &CommandsSection,
    ) -> Vec<Detected> {
        let mut kept: Vec<Detected> = Vec::new();
        for mut found in proposals {
            if let Some(first) = kept
                .iter()
                .find(|kept| kept.run == found.run && kept.cwd == found.cwd)
            {
                self.left_out.push(LeftOut {
                    what: format!("{}: {}", place(&found.why), shown(&found.run)),
                    why: format!("repeats {}", place(&first.why)),
                });
                continue;
            }
            found.name = unique_name(&found.name, &kept);
            if let Some(problem) = refusal(stage, &found, rules) {
                self.left_out.push(LeftOut {
                    what: format!("{}: {}", place(&found.why), shown(&found.run)),
                    why: problem,
                });
                continue;
            }
            kept.push(found);
        }
        kept
    }
}

/// Whether `setup` makes the project's virtual environment.
fn has_venv(setup: &[Detected]) -> bool {
    setup.iter().any(is_venv_step)
}

fn is_venv_step(found: &Detected) -> bool {
    found.run.len() == 4
        && found.run[1..] == ["-m", "venv", python_env::VENV]
        && found.run[0].starts_with("python")
}

/// CI lines moved into the virtual environment need it made first, and the project's
/// dependencies installed into it when no CI line does: the manifests' steps for both.
fn needs_the_venv(setup: &mut Vec<Detected>, manifest_setup: &[Detected]) {
    let venv_python = format!("{}/bin/python", python_env::VENV);
    let installs_into_it = |setup: &[Detected]| {
        setup.iter().any(|found| {
            found.run.windows(3).any(|words| {
                words[0].ends_with(&venv_python) && words[1] == "-m" && words[2] == "pip"
            }) || found.run.iter().any(|word| word.contains("pip install"))
        })
    };
    let mut first: Vec<Detected> = manifest_setup
        .iter()
        .filter(|found| is_venv_step(found))
        .cloned()
        .collect();
    if first.is_empty() {
        return;
    }
    if !installs_into_it(setup) {
        first.extend(
            manifest_setup
                .iter()
                .filter(|found| {
                    !is_venv_step(found) && installs_into_it(std::slice::from_ref(found))
                })
                .cloned(),
        );
    }
    setup.retain(|found| !is_venv_step(found));
    first.append(setup);
    *setup = first;
}

/// Why the command rules refuse `found` as a step of `stage`, if they do. A shell line is
/// also checked program by program, since `sh` itself is allowed.
fn refusal(stage: Stage, found: &Detected, rules: &CommandsSection) -> Option<String> {
    let step = ValidateStep {
        name: found.name.clone(),
        run: found.run.clone(),
        timeout_secs: None,
        fail_on_warnings: false,
        cwd: found.cwd.clone(),
        env: Default::default(),
        network: stage == Stage::Setup,
    };
    let config = match stage {
        Stage::Setup => RepoConfig {
            setup: vec![SetupStep {
                name: step.name,
                run: step.run,
                timeout_secs: None,
                cwd: step.cwd,
                env: Default::default(),
            }],
            commands: rules.clone(),
            ..RepoConfig::default()
        },
        Stage::Validate => RepoConfig {
            validate: vec![step],
            commands: rules.clone(),
            ..RepoConfig::default()
        },
    };
    if let Some(problem) = config.problems().into_iter().next() {
        return Some(format!("refused by the command rules: {problem}"));
    }
    if let [sh, dash_c, line] = found.run.as_slice()
        && sh == "sh"
        && dash_c == "-c"
    {
        for argv in shell::commands_in(line) {
            if let Err(refused) = config.check_command(&argv) {
                return Some(format!("refused by the command rules: {refused}"));
            }
        }
    }
    None
}

/// `name`, or `name (2)`, `name (3)`… when a kept step has it already; cut to the length
/// `.autofix.toml` allows.
fn unique_name(name: &str, kept: &[Detected]) -> String {
    let taken = |candidate: &str| kept.iter().any(|kept| kept.name == candidate);
    let base = shortened(name, MAX_NAME_CHARS - 5);
    if !taken(&base) {
        return base;
    }
    (2..)
        .map(|n| format!("{base} ({n})"))
        .find(|candidate| !taken(candidate))
        .expect("some number is free")
}

/// `text` on one line, at most `max` characters (an ellipsis marks a cut).
fn shortened(text: &str, max: usize) -> String {
    let one_line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let one_line = one_line.trim();
    if one_line.chars().count() <= max {
        return one_line.to_string();
    }
    let mut cut: String = one_line.chars().take(max - 1).collect();
    cut.push('…');
    cut
}

/// Where a proposal was found: its why without the notes after it.
fn place(why: &str) -> &str {
    why.split_once(", ").map_or(why, |(place, _)| place)
}

/// argv as a reader would type it.
fn shown(run: &[String]) -> String {
    match run {
        [sh, dash_c, line] if sh == "sh" && dash_c == "-c" => line.clone(),
        _ => run
            .iter()
            .map(|word| {
                let plain = !word.is_empty()
                    && !word.contains(|c: char| c.is_whitespace() || "'\"\\$`".contains(c));
                if plain {
                    word.clone()
                } else {
                    format!("'{}'", word.replace('\'', "'\\''"))
                }
            })
            .collect::<Vec<_>>()
            .join(" "),
    }
}

/// A proposal whose name is the command itself.
fn proposal(run: &[&str], cwd: &str, why: impl Into<String>) -> Detected {
    let run: Vec<String> = run.iter().map(|word| word.to_string()).collect();
    Detected {
        name: shown(&run),
        run,
        cwd: cwd.to_string(),
        why: why.into(),
    }
}
