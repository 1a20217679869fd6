//! `autofix config init` and the proposal in `autofix config check --repo`, as a maintainer runs
//! them on real projects' files (`tests/data/detect/`, see its `SOURCES.md`) in real git
//! repositories: what init writes is what check accepts and what detection proposed.

use std::path::{Path, PathBuf};
use std::process::Command;

use autofix::config::repo::RepoConfig;
use autofix::detect::{Detection, FolderTree};
use autofix::failure::FailureCode;

/// What one run printed and how it ended.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// `autofix ARGS` with only `PATH`, `HOME` and a data directory in `home`, and a local model.
fn autofix(home: &Path, args: &[&str]) -> Run {
    autofix_with_path(home, args, &std::env::var("PATH").unwrap_or_default())
}

fn autofix_with_path(home: &Path, args: &[&str], path: &str) -> Run {
    let output = Command::new(env!("CARGO_BIN_EXE_autofix"))
        .args(args)
        .env_clear()
        .env("PATH", path)
        .env("HOME", home)
        .env("AUTOFIX__WORKDIR", home.join("data"))
        .env("AUTOFIX__LLM__BASE_URL", "http://127.0.0.1:9/v1")
        .output()
        .expect("autofix runs");
    let run = Run {
        code: output.status.code(),
        stdout: String::from_utf8(output.stdout).unwrap(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    };
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    run
}

fn init(home: &Path, repo: &Path) -> Run {
    autofix(home, &["config", "init", "--repo", repo.to_str().unwrap()])
}

fn check(home: &Path, repo: &Path) -> Run {
    autofix(home, &["config", "check", "--repo", repo.to_str().unwrap()])
}

/// The exit status of a refused input.
fn invalid_input() -> Option<i32> {
    Some(i32::from(FailureCode::InvalidInput.exit_status()))
}

/// A maintainer's checkout: a temporary folder with a git repository, and a home beside it.
struct Checkout {
    dir: tempfile::TempDir,
}

impl Checkout {
    /// A git repository holding a copy of the fixture project `project` (or nothing).
    fn of(project: Option<&str>) -> Checkout {
        let checkout = Checkout {
            dir: tempfile::tempdir().unwrap(),
        };
        let repo = checkout.repo();
        std::fs::create_dir_all(&repo).unwrap();
        if let Some(project) = project {
            copy_tree(&fixture(project), &repo);
        }
        git(&repo, &["init", "-q", "-b", "main"]);
        checkout
    }

    fn repo(&self) -> PathBuf {
        self.dir.path().join("repo")
    }

    fn home(&self) -> PathBuf {
        let home = self.dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        home
    }

    fn config_file(&self) -> PathBuf {
        self.repo().join(".autofix.toml")
    }

    /// What detection proposes for the checkout as it is now.
    fn detection(&self) -> Detection {
        Detection::detect(&FolderTree::open(&self.repo()).unwrap())
    }
}

fn fixture(project: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/detect")
        .join(project)
}

fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn git(repo: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(args)
        .current_dir(repo)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

/// Whether `program` is on this machine's PATH, asked of the shell.
fn on_path(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .unwrap()
        .status
        .success()
}

#[test]
fn init_writes_what_detection_proposes_and_the_file_loads_as_exactly_those_steps() {
    let projects = [
        "flask",
        "requests",
        "mccabe",
        "anyhow",
        "ripgrep",
        "axios",
        "vite",
        "cobra",
        "cobra-ci",
        "pluggy",
        "axios-release",
    ];
    for project in projects {
        let checkout = Checkout::of(Some(project));
        let proposed = checkout.detection().to_config();

        let written = init(&checkout.home(), &checkout.repo());

        assert_eq!(written.code, Some(0), "{project}: {}", written.stderr);
        assert!(
            written
                .stdout
                .starts_with(&format!("wrote {}", checkout.config_file().display())),
            "{project}: {}",
            written.stdout
        );
        let loaded = RepoConfig::load(&checkout.repo()).expect("the written file loads");
        assert_eq!(
            loaded.source.as_deref(),
            Some(Path::new(".autofix.toml")),
            "{project}"
        );
        assert_eq!(
            (loaded.config.setup, loaded.config.validate),
            proposed,
            "{project}: the file's steps are detection's, name for name, argv for argv"
        );
        assert!(!proposed.1.is_empty(), "{project} has checks to write");
    }
}

#[test]
fn config_check_accepts_the_written_file_and_stops_proposing() {
    let checkout = Checkout::of(Some("pluggy"));
    let before = check(&checkout.home(), &checkout.repo());
    assert_eq!(before.code, Some(0), "{}", before.stderr);
    assert!(
        before
            .stdout
            .contains("no [[validate]] steps: autofix proposes these"),
        "{}",
        before.stdout
    );

    let written = init(&checkout.home(), &checkout.repo());
    assert_eq!(written.code, Some(0), "{}", written.stderr);
    let after = check(&checkout.home(), &checkout.repo());

    assert_eq!(after.code, Some(0), "{}", after.stderr);
    assert!(
        after
            .stdout
            .lines()
            .any(|line| line == ".autofix.toml: valid"),
        "{}",
        after.stdout
    );
    assert!(
        after.stdout.contains(
            ".autofix.toml has [[validate]] steps: autofix runs those, and finding checks \
             without configuration is not used"
        ),
        "{}",
        after.stdout
    );
    assert!(
        !after.stdout.contains("autofix proposes"),
        "{}",
        after.stdout
    );
    // Nothing was committed: the file is new to git.
    let status = Command::new("git")
        .args(["status", "--porcelain", "--", ".autofix.toml"])
        .current_dir(checkout.repo())
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8(status.stdout).unwrap(),
        "?? .autofix.toml\n"
    );
}

#[test]
fn the_written_file_says_where_each_step_came_from_and_what_was_left_out() {
    let checkout = Checkout::of(Some("pluggy"));
    let written = init(&checkout.home(), &checkout.repo());
    assert_eq!(written.code, Some(0), "{}", written.stderr);
    let text = std::fs::read_to_string(checkout.config_file()).unwrap();
    insta::assert_snapshot!("pluggy_autofix_toml", text);
}

#[test]
fn a_second_init_refuses_and_leaves_the_maintainers_file_as_it_was() {
    let checkout = Checkout::of(Some("flask"));
    let first = init(&checkout.home(), &checkout.repo());
    assert_eq!(first.code, Some(0), "{}", first.stderr);
    // The maintainer adjusts it.
    let mut adjusted = std::fs::read(checkout.config_file()).unwrap();
    adjusted.extend_from_slice(b"\n[repair]\nmax_attempts = 1\n");
    std::fs::write(checkout.config_file(), &adjusted).unwrap();

    let second = init(&checkout.home(), &checkout.repo());

    assert_eq!(second.code, invalid_input(), "{}", second.stdout);
    assert_eq!(
        second.stderr,
        format!(
            "autofix config init: {} already has `.autofix.toml`: autofix config init never \
             replaces a configuration (edit it, or remove it to generate a new one)\n",
            checkout.repo().display()
        )
    );
    assert!(second.stdout.is_empty(), "{}", second.stdout);
    assert_eq!(std::fs::read(checkout.config_file()).unwrap(), adjusted);
    let leftovers: Vec<_> = std::fs::read_dir(checkout.repo())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn a_configuration_kept_under_github_or_misnamed_is_not_written_beside() {
    for (existing, says) in [
        (
            ".github/autofix.toml",
            "already has `.github/autofix.toml`: autofix config init never replaces",
        ),
        (
            ".autofix.yml",
            ".autofix.yml: autofix does not read this file; name it `.autofix.toml`",
        ),
    ] {
        let checkout = Checkout::of(Some("ripgrep"));
        let path = checkout.repo().join(existing);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "[repair]\nmax_attempts = 1\n").unwrap();

        let refused = init(&checkout.home(), &checkout.repo());

        assert_eq!(
            refused.code,
            invalid_input(),
            "{existing}: {}",
            refused.stdout
        );
        assert!(
            refused.stderr.contains(says),
            "{existing}: {}",
            refused.stderr
        );
        assert_eq!(refused.stderr.lines().count(), 1, "{}", refused.stderr);
        assert!(!checkout.config_file().exists(), "{existing}");
    }
}

#[test]
fn an_empty_repository_has_nothing_to_write() {
    let checkout = Checkout::of(None);

    let refused = init(&checkout.home(), &checkout.repo());

    assert_eq!(refused.code, invalid_input(), "{}", refused.stdout);
    assert!(
        refused
            .stderr
            .starts_with("autofix config init: nothing to write: no checks found"),
        "{}",
        refused.stderr
    );
    assert!(!checkout.config_file().exists());
    assert_eq!(
        std::fs::read_dir(checkout.repo()).unwrap().count(),
        1,
        "only .git is there"
    );
}

#[test]
fn a_folder_that_is_not_the_root_of_a_git_work_tree_is_refused() {
    // Project files, but no repository.
    let plain = tempfile::tempdir().unwrap();
    copy_tree(&fixture("anyhow"), plain.path());
    let home = tempfile::tempdir().unwrap();
    let refused = init(home.path(), plain.path());
    assert_eq!(refused.code, invalid_input(), "{}", refused.stdout);
    assert!(refused.stderr.contains("git"), "{}", refused.stderr);
    assert!(!plain.path().join(".autofix.toml").exists());

    // A folder inside a repository: the file belongs at the root.
    let checkout = Checkout::of(Some("anyhow"));
    let inner = checkout.repo().join("src");
    std::fs::create_dir_all(&inner).unwrap();
    copy_tree(&fixture("anyhow"), &inner);
    let refused = init(&checkout.home(), &inner);
    assert_eq!(refused.code, invalid_input(), "{}", refused.stdout);
    assert!(
        refused.stderr.contains("open the repository at its root"),
        "{}",
        refused.stderr
    );
    assert!(!inner.join(".autofix.toml").exists());
    assert!(!checkout.config_file().exists());
}

#[test]
fn config_check_shows_the_proposal_with_why_and_how_to_pin_it() {
    let checkout = Checkout::of(Some("axios-release"));
    let detection = checkout.detection();

    let checked = check(&checkout.home(), &checkout.repo());

    assert_eq!(checked.code, Some(0), "{}", checked.stderr);
    let out = &checked.stdout;
    for step in detection.setup.iter().chain(&detection.validate) {
        let line = out
            .lines()
            .position(|line| line.contains(&format!("`{}`", step.shown())))
            .unwrap_or_else(|| panic!("no line for {}:\n{out}", step.shown()));
        assert_eq!(
            out.lines().nth(line + 1),
            Some(format!("    why: {}", step.why).as_str()),
            "{out}"
        );
    }
    for left in &detection.left_out {
        assert!(
            out.contains(&format!(
                "  left out: {}\n    why: {}\n",
                left.what, left.why
            )),
            "{out}"
        );
    }
    assert!(
        !detection.left_out.is_empty(),
        "axios-release leaves its publishing out"
    );
    assert!(
        out.contains(&format!(
            "to pin this proposal: `autofix config init --repo {}`",
            checkout.repo().display()
        )),
        "{out}"
    );
    assert!(
        out.contains("toolchains a sandboxed command finds (PATH "),
        "{out}"
    );
}

#[test]
fn a_program_the_sandbox_lacks_is_warned_about_and_one_setup_makes_is_not() {
    // vite installs and tests with pnpm.
    let checkout = Checkout::of(Some("vite"));
    let checked = check(&checkout.home(), &checkout.repo());
    assert_eq!(checked.code, Some(0), "{}", checked.stderr);
    let warned = checked
        .stdout
        .lines()
        .any(|line| line.starts_with("warning: validate `pnpm test` would fail: `pnpm` is not"));
    let listed = checked
        .stdout
        .lines()
        .any(|line| line.starts_with("  pnpm: "));
    if on_path("pnpm") {
        assert!(!warned && listed, "{}", checked.stdout);
    } else {
        assert!(warned && !listed, "{}", checked.stdout);
        assert!(
            checked
                .stdout
                .lines()
                .any(|line| line.starts_with("  not found: ") && line.contains("pnpm")),
            "{}",
            checked.stdout
        );
    }

    // flask runs `.venv/bin/python`, which its own setup makes, and python3 is here.
    assert!(on_path("python3"), "these stories need python3");
    let checkout = Checkout::of(Some("flask"));
    let checked = check(&checkout.home(), &checkout.repo());
    assert_eq!(checked.code, Some(0), "{}", checked.stderr);
    assert!(
        checked
            .stdout
            .contains("  validate: `.venv/bin/python -m pytest`"),
        "{}",
        checked.stdout
    );
    assert!(!checked.stdout.contains("would fail"), "{}", checked.stdout);
    let python = checked
        .stdout
        .lines()
        .find(|line| line.starts_with("  python3: "))
        .unwrap_or_else(|| panic!("{}", checked.stdout));
    assert!(python.contains("Python 3."), "{python}");
}

#[test]
fn a_configured_step_whose_program_is_nowhere_is_warned_about_too() {
    let checkout = Checkout::of(Some("anyhow"));
    std::fs::write(
        checkout.config_file(),
        "[[validate]]\nname = \"lint\"\nrun = [\"./scripts/lint.sh\"]\n\n[[validate]]\nname = \"unit\"\nrun = [\"autofix-no-such-program\", \"test\"]\n",
    )
    .unwrap();

    let checked = check(&checkout.home(), &checkout.repo());

    assert_eq!(checked.code, Some(0), "{}", checked.stderr);
    let warnings: Vec<&str> = checked
        .stdout
        .lines()
        .filter(|line| line.contains("would fail"))
        .collect();
    assert_eq!(
        warnings,
        [
            "warning: validate `./scripts/lint.sh` would fail: `./scripts/lint.sh` is not in \
             the repository and no setup step makes it",
            "warning: validate `autofix-no-such-program test` would fail: \
             `autofix-no-such-program` is not on the sandbox's PATH; add it to the image or \
             host (see \"Adding toolchains\")",
        ],
        "{}",
        checked.stdout
    );
}

#[test]
fn a_program_on_path_in_a_folder_the_sandbox_does_not_show_is_named_with_where_it_is() {
    // The operator's own HOME is on PATH; commands get an empty private HOME instead.
    let checkout = Checkout::of(Some("anyhow"));
    let home = checkout.home();
    let tool = home.join("autofix-home-tool");
    std::fs::write(&tool, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&tool, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::write(
        checkout.config_file(),
        "[[validate]]\nname = \"tool\"\nrun = [\"autofix-home-tool\"]\n",
    )
    .unwrap();
    let path = format!(
        "{}:{}",
        std::env::var("PATH").unwrap_or_default(),
        home.display()
    );

    let checked = autofix_with_path(
        &home,
        &[
            "config",
            "check",
            "--repo",
            checkout.repo().to_str().unwrap(),
        ],
        &path,
    );

    assert_eq!(checked.code, Some(0), "{}", checked.stderr);
    assert!(
        checked.stdout.lines().any(|line| line
            == format!(
                "warning: validate `autofix-home-tool` would fail: `autofix-home-tool` is on \
                 PATH at {}, in a folder the sandbox does not show; install it elsewhere or list \
                 its folder in exec.toolchain_paths",
                tool.display()
            )),
        "{}",
        checked.stdout
    );
}
