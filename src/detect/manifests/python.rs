//! Python: a virtual environment `.venv` in the work tree, the project installed into it with
//! its test dependencies (an extra, requirement files, a dependency group or tox's `deps`),
//! then pytest when anything points at it, else unittest.

use std::sync::LazyLock;

use regex::Regex;

use super::super::{Findings, RepoTree, Stage, ini, proposal};

/// Extras and dependency groups that hold what the tests need, in the order tried.
const TEST_SETS: &[&str] = &["test", "tests", "dev"];
/// Requirement files at the root that a contributor installs.
const REQUIREMENT_FILES: &[&str] = &[
    "requirements.txt",
    "requirements-dev.txt",
    "requirements_dev.txt",
    "requirements-test.txt",
    "requirements_test.txt",
    "requirements-tests.txt",
    "dev-requirements.txt",
    "test-requirements.txt",
];
const PYTHON: &str = ".venv/bin/python";

static PYTHON_REQUIRES: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"python_requires\s*=\s*["']([^"']+)["']"#).expect("a valid pattern")
});
static SETUP_PY_EXTRA: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"["'](test|tests|dev)["']\s*:"#).expect("a valid pattern"));
/// A tox factor condition before a dependency (`py38: mock`).
static TOX_FACTOR: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[\w.,!-]+:\s").expect("a valid pattern"));

/// The project's Python files, read once.
struct Project {
    pyproject: Option<toml::Table>,
    setup_cfg: Option<String>,
    setup_py: Option<String>,
    tox: Option<String>,
    requirements: Vec<&'static str>,
}

pub(super) fn read(tree: &dyn RepoTree, findings: &mut Findings) {
    let project = Project {
        pyproject: tree
            .read("pyproject.toml")
            .and_then(|text| text.parse::<toml::Table>().ok()),
        setup_cfg: tree.read("setup.cfg"),
        setup_py: tree.read("setup.py"),
        tox: tree.read("tox.ini"),
        requirements: REQUIREMENT_FILES
            .iter()
            .copied()
            .filter(|file| tree.has(file))
            .collect(),
    };
    let Some(marker) = project.marker() else {
        return;
    };
    let mut venv_why = format!("Python project (`{marker}`)");
    if let Some((version, source)) = project.python_version(tree) {
        venv_why.push_str(&format!("; asks for Python `{version}` ({source})"));
        findings.python_requirement = Some(version);
    }
    findings.propose(
        Stage::Setup,
        proposal(&["python3", "-m", "venv", ".venv"], ".", venv_why),
    );
    let (install, install_why, deps) = project.install();
    if !install.is_empty() {
        let mut argv = vec![PYTHON, "-m", "pip", "install"];
        argv.extend(install.iter().map(String::as_str));
        findings.propose(Stage::Setup, proposal(&argv, ".", install_why));
    }
    let requirement_texts: Vec<String> = project
        .requirements
        .iter()
        .filter_map(|file| tree.read(file))
        .collect();
    match project.pytest_sign(tree, &deps, &requirement_texts) {
        Some(sign) => findings.propose(
            Stage::Validate,
            proposal(&[PYTHON, "-m", "pytest"], ".", format!("pytest: {sign}")),
        ),
        None => findings.propose(
            Stage::Validate,
            proposal(
                &[PYTHON, "-m", "unittest"],
                ".",
                "nothing points at pytest, so the standard library's unittest",
            ),
        ),
    }
}

impl Project {
    /// The file that makes this a Python project, if any does.
    fn marker(&self) -> Option<&'static str> {
        if self.pyproject.as_ref().is_some_and(|table| {
            ["project", "build-system"]
                .iter()
                .any(|key| table.contains_key(*key))
                || table
                    .get("tool")
                    .and_then(|tool| tool.get("poetry"))
                    .is_some()
        }) {
            return Some("pyproject.toml");
        }
        if self.setup_py.is_some() {
            return Some("setup.py");
        }
        if self
            .setup_cfg
            .as_deref()
            .is_some_and(|text| ini::has_section(text, "metadata"))
        {
            return Some("setup.cfg");
        }
        if let Some(file) = self.requirements.first() {
            return Some(file);
        }
        self.tox.as_ref().map(|_| "tox.ini")
    }

    fn installable(&self) -> bool {
        self.marker()
            .is_some_and(|marker| ["pyproject.toml", "setup.py", "setup.cfg"].contains(&marker))
    }

    /// The Python version the project asks for, and where it says so.
    fn python_version(&self, tree: &dyn RepoTree) -> Option<(String, &'static str)> {
        let from_pyproject = self
            .pyproject
            .as_ref()
            .and_then(|table| table.get("project")?.get("requires-python")?.as_str())
            .map(|version| (version.to_string(), "`pyproject.toml` requires-python"));
        let from_setup_cfg = || {
            let text = self.setup_cfg.as_deref()?;
            let version = ini::value(text, "options", "python_requires")?;
            Some((version, "`setup.cfg` python_requires"))
        };
        let from_setup_py = || {
            let found = PYTHON_REQUIRES.captures(self.setup_py.as_deref()?)?;
            Some((found[1].to_string(), "`setup.py` python_requires"))
        };
        let from_file = || {
            let text = tree.read(".python-version")?;
            let version = text.lines().next()?.trim().to_string();
            (!version.is_empty()).then_some((version, "`.python-version`"))
        };
        from_pyproject
            .or_else(from_setup_cfg)
            .or_else(from_setup_py)
            .or_else(from_file)
    }

    /// What `pip install` is given, why, and the dependencies named on the way (to look
    /// for pytest among them).
    fn install(&self) -> (Vec<String>, String, Vec<String>) {
        let editable = |extra: Option<&str>| -> Vec<String> {
            if !self.installable() {
                return Vec::new();
            }
            let target = extra.map_or(".".to_string(), |extra| format!(".[{extra}]"));
            vec!["-e".into(), target]
        };
        if let Some((extra, file, deps)) = self.test_extra() {
            let why = format!("`{file}` extra `{extra}`");
            return (editable(Some(extra)), why, deps);
        }
        if !self.requirements.is_empty() {
            let mut args = editable(None);
            for file in &self.requirements {
                args.extend(["-r".to_string(), file.to_string()]);
            }
            let files: Vec<String> = self
                .requirements
                .iter()
                .map(|file| format!("`{file}`"))
                .collect();
            return (
                args,
                format!("requirement files {}", files.join(", ")),
                Vec::new(),
            );
        }
        if let Some((group, deps)) = self.test_group() {
            let mut args = editable(None);
            args.extend(["--group".to_string(), group.to_string()]);
            let why = format!("`pyproject.toml` dependency group `{group}`");
            return (args, why, deps);
        }
        if let Some(deps) = self.tox_deps() {
            let mut args = editable(None);
            args.extend(deps.iter().cloned());
            return (args, "`tox.ini` [testenv] deps".into(), deps);
        }
        let why = format!("`{}`", self.marker().unwrap_or("pyproject.toml"));
        (editable(None), why, Vec::new())
    }

    /// The first test extra declared, the file that declares it, and its dependencies.
    fn test_extra(&self) -> Option<(&'static str, &'static str, Vec<String>)> {
        let pyproject_extras = self.pyproject.as_ref().and_then(|table| {
            table
                .get("project")?
                .get("optional-dependencies")?
                .as_table()
        });
        for extra in TEST_SETS {
            if let Some(deps) = pyproject_extras.and_then(|extras| extras.get(*extra)) {
                return Some((extra, "pyproject.toml", strings(deps)));
            }
            if let Some(deps) = self
                .setup_cfg
                .as_deref()
                .and_then(|text| ini::value(text, "options.extras_require", extra))
            {
                return Some((extra, "setup.cfg", ini::lines(&deps)));
            }
        }
        let setup_py = self.setup_py.as_deref()?;
        let (_, after) = setup_py.split_once("extras_require")?;
        let found = SETUP_PY_EXTRA.captures(after)?;
        let extra = TEST_SETS.iter().find(|extra| **extra == &found[1])?;
        let mentions_pytest = after.contains("pytest");
        Some((
            extra,
            "setup.py",
            mentions_pytest
                .then(|| "pytest".to_string())
                .into_iter()
                .collect(),
        ))
    }

    fn test_group(&self) -> Option<(&'static str, Vec<String>)> {
        let groups = self
            .pyproject
            .as_ref()?
            .get("dependency-groups")?
            .as_table()?;
        TEST_SETS
            .iter()
            .find_map(|group| Some((*group, strings(groups.get(*group)?))))
    }

    fn tox_deps(&self) -> Option<Vec<String>> {
        let deps = ini::value(self.tox.as_deref()?, "testenv", "deps")?;
        let deps: Vec<String> = ini::lines(&deps)
            .into_iter()
            .filter(|dep| !dep.contains('{') && !TOX_FACTOR.is_match(dep))
            .collect();
        (!deps.is_empty()).then_some(deps)
    }

    /// The first thing that points at pytest, said for the reader.
    fn pytest_sign(
        &self,
        tree: &dyn RepoTree,
        deps: &[String],
        requirement_texts: &[String],
    ) -> Option<String> {
        let tool_pytest = self
            .pyproject
            .as_ref()
            .and_then(|table| table.get("tool")?.get("pytest"))
            .is_some();
        if tool_pytest {
            return Some("`pyproject.toml` [tool.pytest]".into());
        }
        if tree.has("pytest.ini") {
            return Some("`pytest.ini`".into());
        }
        for (file, text) in [("tox.ini", &self.tox), ("setup.cfg", &self.setup_cfg)] {
            let Some(text) = text else { continue };
            if let Some(section) = ["pytest", "tool:pytest"]
                .into_iter()
                .find(|section| ini::has_section(text, section))
            {
                return Some(format!("`{file}` [{section}]"));
            }
        }
        if deps.iter().any(|dep| names_pytest(dep)) {
            return Some("pytest is among the test dependencies".into());
        }
        if requirement_texts
            .iter()
            .any(|text| text.lines().any(names_pytest))
        {
            return Some("pytest is in the requirement files".into());
        }
        if let Some(commands) = self
            .tox
            .as_deref()
            .and_then(|text| ini::value(text, "testenv", "commands"))
            && commands.contains("pytest")
        {
            return Some("`tox.ini` [testenv] commands run pytest".into());
        }
        tree.paths()
            .iter()
            .find(|path| *path == "conftest.py" || path.ends_with("/conftest.py"))
            .map(|path| format!("`{path}`"))
    }
}

fn names_pytest(requirement: &str) -> bool {
    let requirement = requirement.trim();
    requirement.strip_prefix("pytest").is_some_and(|rest| {
        !rest.starts_with(|c: char| c.is_alphanumeric() || c == '-' || c == '_')
    })
}

fn strings(value: &toml::Value) -> Vec<String> {
    value
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|item| item.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}
