//! Guesses from the manifests at the repository root, one module per ecosystem, used where
//! the CI definitions give nothing runnable.

mod go;
mod java;
mod make;
mod node;
mod python;
mod rust;

use super::{Findings, RepoTree};

/// Every ecosystem's proposals, in a fixed order; `make` only when no other gives a check.
pub(super) fn read(tree: &dyn RepoTree) -> Findings {
    let mut findings = Findings::default();
    rust::read(tree, &mut findings);
    python::read(tree, &mut findings);
    node::read(tree, &mut findings);
    go::read(tree, &mut findings);
    java::read(tree, &mut findings);
    if findings.validate.is_empty() {
        make::read(tree, &mut findings);
    }
    findings
}
