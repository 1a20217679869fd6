//! What a CI command does, judged by its program and first arguments: a check (build, lint,
//! test), an install, something autofix must never run (deploy, docker, system packages), or other.

use std::path::Path;

/// What one command is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Kind {
    /// Builds, lints or tests: a validation step.
    Check,
    /// Fetches dependencies or tools: a setup step.
    Install,
    /// Never run; the reason, phrased to follow "it".
    Refused(String),
    /// Neither a check nor an install (`echo`, `git config`, a script autofix cannot judge).
    Other,
}

/// Programs that build, lint or test whatever their arguments.
const CHECK_PROGRAMS: &[&str] = &[
    "pytest",
    "tox",
    "nox",
    "mypy",
    "ruff",
    "flake8",
    "pylint",
    "black",
    "isort",
    "pyright",
    "eslint",
    "prettier",
    "tsc",
    "jest",
    "vitest",
    "mocha",
    "golangci-lint",
    "staticcheck",
    "make",
    "cmake",
    "ctest",
    "meson",
    "ninja",
    "mvn",
    "mvnw",
    "gradle",
    "gradlew",
    "configure",
    "autogen.sh",
    "shellcheck",
    "rustfmt",
    "npx",
    "rake",
    "rspec",
    "phpunit",
    "composer",
];
/// Programs that install system packages, which needs root.
const SYSTEM_INSTALLERS: &[&str] = &[
    "apt", "apt-get", "yum", "dnf", "apk", "brew", "choco", "pacman", "zypper", "snap",
];
const CONTAINERS: &[&str] = &["docker", "docker-compose", "podman", "buildah", "kubectl"];
/// Words that, as an argument that is not an option, mean the command ships something.
const SHIPPING_WORDS: &[&str] = &["deploy", "publish", "release", "upload"];

/// What `argv` (one command, assignments dropped) is for.
pub(super) fn kind(argv: &[String]) -> Kind {
    let Some((first, args)) = argv.split_first() else {
        return Kind::Other;
    };
    let program = Path::new(first)
        .file_name()
        .and_then(|name| name.to_str())
        .unwrap_or(first);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    if let Some(shipping) = ships(program, &args) {
        return Kind::Refused(shipping);
    }
    if ["sudo", "doas", "su"].contains(&program) {
        return Kind::Refused(format!("runs as root (`{program}`)"));
    }
    if CONTAINERS.contains(&program) {
        return Kind::Refused(format!("uses containers (`{program}`)"));
    }
    if SYSTEM_INSTALLERS.contains(&program) {
        return Kind::Refused(format!(
            "installs system packages (`{program}`), which needs root"
        ));
    }
    let sub = args.first().copied().unwrap_or("");
    match program {
        "cargo" => match sub {
            "build" | "check" | "test" | "clippy" | "fmt" | "doc" | "bench" => Kind::Check,
            "fetch" | "install" => Kind::Install,
            _ => Kind::Other,
        },
        "go" => match (sub, args.get(1).copied()) {
            ("build" | "test" | "vet", _) => Kind::Check,
            ("mod", Some("download")) | ("install" | "get", _) => Kind::Install,
            _ => Kind::Other,
        },
        "npm" => match sub {
            "ci" | "install" | "i" => Kind::Install,
            "test" | "t" | "run" | "run-script" => Kind::Check,
            _ => Kind::Other,
        },
        "yarn" | "pnpm" | "bun" => match sub {
            "" | "install" | "i" => Kind::Install,
            "test" | "run" | "lint" | "build" | "typecheck" | "check" | "format" | "exec"
            | "-r" | "--recursive" | "--filter" | "-w" => Kind::Check,
            _ => Kind::Other,
        },
        "pip" | "pip3" => match sub {
            "install" => Kind::Install,
            _ => Kind::Other,
        },
        "uv" => match sub {
            "sync" | "pip" => Kind::Install,
            "run" => Kind::Check,
            _ => Kind::Other,
        },
        "poetry" | "pipenv" | "pdm" | "hatch" => match sub {
            "install" | "sync" => Kind::Install,
            "run" | "test" => Kind::Check,
            _ => Kind::Other,
        },
        "bundle" => match sub {
            "install" => Kind::Install,
            "exec" => Kind::Check,
            _ => Kind::Other,
        },
        program if program.starts_with("python") => python(&args),
        program if CHECK_PROGRAMS.contains(&program) => Kind::Check,
        _ => Kind::Other,
    }
}

fn python(args: &[&str]) -> Kind {
    match args {
        ["-m", "pip", "install", ..] => Kind::Install,
        ["-m", module, ..]
            if [
                "pytest",
                "unittest",
                "tox",
                "nox",
                "mypy",
                "ruff",
                "flake8",
                "pylint",
                "black",
                "build",
                "compileall",
            ]
            .contains(module) =>
        {
            Kind::Check
        }
        ["setup.py", "test" | "build" | "check", ..] => Kind::Check,
        _ => Kind::Other,
    }
}

/// Whether the command deploys, publishes, releases or pushes, and how it reads.
fn ships(program: &str, args: &[&str]) -> Option<String> {
    if program == "git" && args.first() == Some(&"push") {
        return Some("pushes (`git push`)".into());
    }
    if ["twine", "gh", "glab"].contains(&program) {
        return Some(format!("publishes or talks to the forge (`{program}`)"));
    }
    args.iter()
        .filter(|arg| !arg.starts_with('-'))
        .find(|arg| {
            let lower = arg.to_ascii_lowercase();
            SHIPPING_WORDS.iter().any(|word| lower.starts_with(word))
        })
        .map(|arg| format!("deploys, publishes or releases (`{program} {arg}`)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(line: &str) -> Kind {
        kind(&shlex::split(line).unwrap())
    }

    #[test]
    fn a_release_build_is_a_check_but_a_publish_is_refused() {
        assert_eq!(of("cargo build --release"), Kind::Check);
        assert_eq!(
            of("npm publish --access public"),
            Kind::Refused("deploys, publishes or releases (`npm publish`)".into())
        );
        assert_eq!(
            of("git push origin HEAD"),
            Kind::Refused("pushes (`git push`)".into())
        );
    }

    #[test]
    fn installs_are_told_apart_from_checks_and_system_packages() {
        assert_eq!(of("python -m pip install -e .[test]"), Kind::Install);
        assert_eq!(of("python3 -m pytest -q"), Kind::Check);
        assert_eq!(of("go mod download"), Kind::Install);
        assert_eq!(
            of("apt-get install -y git"),
            Kind::Refused("installs system packages (`apt-get`), which needs root".into())
        );
        assert_eq!(
            of("sudo apt-get update"),
            Kind::Refused("runs as root (`sudo`)".into())
        );
        assert_eq!(of("git config user.name x"), Kind::Other);
    }
}
