//! Rust: `cargo fetch` to set up, `cargo build` and `cargo test` to check (`--locked` when
//! `Cargo.lock` is committed, `--workspace` for a workspace), `cargo clippy` when CI runs it.

use super::super::{Findings, RepoTree, Stage, proposal};

pub(super) fn read(tree: &dyn RepoTree, findings: &mut Findings) {
    let Some(manifest) = tree.read("Cargo.toml") else {
        return;
    };
    let workspace = manifest
        .parse::<toml::Table>()
        .map(|table| table.contains_key("workspace"))
        .unwrap_or(false);
    let locked = tree.has("Cargo.lock");
    let mut why = String::from("`Cargo.toml`");
    if workspace {
        why.push_str(" (a workspace, checked from its root)");
    }
    why.push_str(if locked {
        ", `Cargo.lock` committed"
    } else {
        ", no `Cargo.lock`"
    });
    let with = |words: &[&'static str]| -> Vec<&'static str> {
        let mut argv = words.to_vec();
        if workspace && words[1] != "fetch" {
            argv.insert(2, "--workspace");
        }
        if locked {
            argv.push("--locked");
        }
        argv
    };
    findings.propose(
        Stage::Setup,
        proposal(&with(&["cargo", "fetch"]), ".", &why),
    );
    findings.propose(
        Stage::Validate,
        proposal(&with(&["cargo", "build", "--all-targets"]), ".", &why),
    );
    findings.propose(
        Stage::Validate,
        proposal(&with(&["cargo", "test"]), ".", &why),
    );
    if let Some(ci_file) = ci_running_clippy(tree) {
        let mut argv = with(&["cargo", "clippy", "--all-targets"]);
        argv.extend(["--", "-D", "warnings"]);
        findings.propose(
            Stage::Validate,
            proposal(
                &argv,
                ".",
                format!("{why}; `{ci_file}` runs `cargo clippy`"),
            ),
        );
    }
}

/// The first CI file that runs `cargo clippy`.
fn ci_running_clippy(tree: &dyn RepoTree) -> Option<&String> {
    tree.paths()
        .iter()
        .filter(|path| path.starts_with(".github/workflows/") || *path == ".gitlab-ci.yml")
        .find(|path| {
            tree.read(path)
                .is_some_and(|text| text.contains("cargo clippy"))
        })
}
