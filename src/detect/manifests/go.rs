//! Go: `go mod download` to set up; `go build`, `go vet` and `go test` over every package.

use super::super::{Findings, RepoTree, Stage, proposal};

pub(super) fn read(tree: &dyn RepoTree, findings: &mut Findings) {
    if !tree.has("go.mod") {
        return;
    }
    let why = "`go.mod`";
    findings.propose(Stage::Setup, proposal(&["go", "mod", "download"], ".", why));
    for check in ["build", "vet", "test"] {
        findings.propose(Stage::Validate, proposal(&["go", check, "./..."], ".", why));
    }
}
