//! Makefile: `make test` when it has a `test:` target, else `make check` when it has `check:`.

use super::super::{Findings, RepoTree, Stage, proposal};

pub(super) fn read(tree: &dyn RepoTree, findings: &mut Findings) {
    let Some(makefile) = ["Makefile", "makefile", "GNUmakefile"]
        .into_iter()
        .find(|file| tree.has(file))
    else {
        return;
    };
    let Some(text) = tree.read(makefile) else {
        return;
    };
    let has_target = |target: &str| {
        text.lines()
            .filter(|line| !line.starts_with(char::is_whitespace))
            .any(|line| {
                line.split_once(':').is_some_and(|(names, rest)| {
                    !rest.starts_with('=') && names.split_whitespace().any(|name| name == target)
                })
            })
    };
    for target in ["test", "check"] {
        if has_target(target) {
            let why = format!("`{makefile}` target `{target}`");
            findings.propose(Stage::Validate, proposal(&["make", target], ".", why));
            return;
        }
    }
}
