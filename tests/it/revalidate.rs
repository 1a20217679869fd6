//! A change made elsewhere (a change request's commits replayed onto a moved base) validated
//! the way a fix is: its files written over the base, the repository's checks run and compared
//! with the base's, the work tree put back, and the model never asked.

use std::collections::BTreeMap;

use crate::support::fix_cli::{revalidation_options, unreachable_model};
use crate::support::posted::stable;
use crate::support::repo::{BUGGY_PY, Repo};
use autofix::pipeline::fix::{self, FixSummary};

const FIXED_PY: &str = "def clamp(value, low, high):\n    return max(low, min(value, high))\n";
const BROKEN_PY: &str = "def clamp(value, low, high):\n    return low\n";
const PYTEST: &str = "[[validate]]\nname = \"pytest\"\nrun = [\"python3\", \"-m\", \"pytest\", \"-q\", \"-p\", \"no:cacheprovider\"]\n";

/// The files of `calc.py` as `content`, validated on the Python project's base.
async fn revalidated(repo: &Repo, content: &str) -> FixSummary {
    let out = tempfile::tempdir().unwrap();
    let options = revalidation_options(repo.path(), out.path());
    let files = BTreeMap::from([("calc.py".to_owned(), Some(content.to_owned()))]);
    fix::revalidate(&options, unreachable_model().as_ref(), files)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_change_that_passes_on_the_base_is_validated_and_the_tree_put_back() {
    let repo = Repo::python_project(&[(".autofix.toml", PYTEST)]);
    let head = repo.head();

    let summary = revalidated(&repo, FIXED_PY).await;

    assert!(summary.failure.is_none(), "{:?}", summary.failure);
    assert!(summary.validated);
    assert_eq!(summary.changed_files, ["calc.py"]);
    assert_eq!(summary.checks.len(), 1);
    assert!(summary.checks[0].change.passed());
    assert_eq!(summary.input_tokens, 0, "the model is not asked");
    assert_eq!(repo.read("calc.py"), BUGGY_PY, "the work tree is put back");
    assert_eq!(repo.head(), head);
    assert_eq!(repo.status(), "");
}

#[tokio::test]
async fn a_change_that_makes_a_check_worse_on_the_base_fails_naming_it() {
    let repo = Repo::python_project(&[(".autofix.toml", PYTEST)]);
    // On a base where the test passes, a change that breaks it is worse.
    repo.write("calc.py", FIXED_PY);
    repo.git(&["commit", "-q", "-am", "fix clamp"]);

    let summary = revalidated(&repo, BROKEN_PY).await;

    assert_eq!(
        summary.failure.as_ref().map(|failure| failure.code),
        Some(autofix::failure::FailureCode::ValidationFailed)
    );
    // The check that fails on the new base, named.
    insta::assert_snapshot!(
        "worse_on_the_new_base_reason",
        stable(&summary.failure.unwrap().reason)
    );
    assert_eq!(repo.read("calc.py"), FIXED_PY);
    assert_eq!(repo.status(), "");
}
