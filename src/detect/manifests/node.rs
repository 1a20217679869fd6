//! Node: the lockfile's installer (`npm ci`, `yarn install --frozen-lockfile`, `pnpm install
//! --frozen-lockfile`), then the `test` script (unless it is npm's placeholder) and `lint`.

use super::super::{Findings, RepoTree, Stage, proposal};

/// What `npm init` writes into `scripts.test`: a test script that fails on purpose.
const NPM_PLACEHOLDER_TEST: &str = "echo \"Error: no test specified\" && exit 1";

pub(super) fn read(tree: &dyn RepoTree, findings: &mut Findings) {
    let Some(text) = tree.read("package.json") else {
        return;
    };
    let manifest: serde_json::Value = match serde_json::from_str(&text) {
        Ok(manifest) => manifest,
        Err(error) => {
            findings.leave_out("`package.json`", format!("is not JSON: {error}"));
            return;
        }
    };
    let (manager, install, lock_why): (&str, &[&str], String) = if tree.has("pnpm-lock.yaml") {
        (
            "pnpm",
            &["pnpm", "install", "--frozen-lockfile"],
            "`pnpm-lock.yaml`".into(),
        )
    } else if tree.has("yarn.lock") {
        (
            "yarn",
            &["yarn", "install", "--frozen-lockfile"],
            "`yarn.lock`".into(),
        )
    } else if let Some(lock) = ["package-lock.json", "npm-shrinkwrap.json"]
        .into_iter()
        .find(|lock| tree.has(lock))
    {
        ("npm", &["npm", "ci"], format!("`{lock}`"))
    } else {
        (
            "npm",
            &["npm", "install"],
            "`package.json` without a lockfile".into(),
        )
    };
    findings.propose(Stage::Setup, proposal(install, ".", lock_why));
    let scripts = &manifest["scripts"];
    match scripts["test"].as_str() {
        Some(test) if test.trim() == NPM_PLACEHOLDER_TEST => findings.leave_out(
            "`package.json` scripts.test",
            "is npm's placeholder that fails on purpose",
        ),
        Some(_) => findings.propose(
            Stage::Validate,
            proposal(&[manager, "test"], ".", "`package.json` scripts.test"),
        ),
        None => {}
    }
    if scripts["lint"].is_string() {
        findings.propose(
            Stage::Validate,
            proposal(
                &[manager, "run", "lint"],
                ".",
                "`package.json` scripts.lint",
            ),
        );
    }
}
