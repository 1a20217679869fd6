//! A repository without `.autofix.toml`, on GitHub and GitLab: the bot finds how it tests
//! itself, says so in the status comment with each command and why, and the pull request says
//! its checks were detected.

use crate::support::bot::{BUGGY_PY, BotTester, FIXED_PY, on_each_forge};
use crate::support::posted::stable;

const PROJECT: &str = "acme/widgets";

on_each_forge!(
    the_checks_found_are_listed_and_the_change_request_says_so:
    the_checks_found_in_a_repository_are_listed_and_the_pull_request_says_so_on_github,
    the_checks_found_in_a_repository_are_listed_and_the_merge_request_says_so_on_gitlab
);

/// A Python project declaring pytest as its test extra, and nothing for autofix.
fn unconfigured_project() -> Vec<(&'static str, &'static str)> {
    vec![
        (
            "pyproject.toml",
            "[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n\n\
             [project]\nname = \"calc\"\nversion = \"0.1.0\"\n\n\
             [project.optional-dependencies]\ntest = [\"pytest>=7\"]\n\n\
             [tool.setuptools]\npy-modules = [\"calc\"]\n\n\
             [tool.pytest.ini_options]\naddopts = \"-p no:cacheprovider\"\n",
        ),
        ("calc.py", BUGGY_PY),
        (
            "tests/test_calc.py",
            "from calc import clamp\n\n\ndef test_clamp_inside():\n    assert clamp(2, 0, 3) == 2\n",
        ),
        (".gitignore", "__pycache__/\n*.egg-info/\n"),
    ]
}

const REPRODUCING_TEST: &str = "tests/test_clamp.py\n```\n<<<<<<< SEARCH\n=======\nfrom calc import clamp\n\n\ndef test_clamp_upper_bound():\n    assert clamp(5, 0, 3) == 3\n>>>>>>> REPLACE\n```\n";

async fn the_checks_found_are_listed_and_the_change_request_says_so(t: BotTester) {
    let remote = t.repo(PROJECT, &unconfigured_project());
    let alice = t.maintainer(PROJECT, "alice");
    t.llm
        .reply_text_for_stage("triage", crate::support::bot::triage());
    t.llm
        .reply_text_for_stage("plan", crate::support::bot::plan());
    t.llm.reply_text_for_stage("reproduce", REPRODUCING_TEST);
    t.llm
        .reply_text_for_stage("edit", crate::support::bot::clamp_edit(FIXED_PY));
    t.llm
        .reply_text_for_stage("audit", crate::support::bot::accepted());

    t.label_issue_and_wait(PROJECT, 21, "clamp ignores its upper bound", &alice)
        .await;

    let status = &t.comments(PROJECT, 21)[0];
    // The checks found (two setups, one check, each with why), that the setup ran with network
    // access, and how to write them into `.autofix.toml` (`autofix config init --repo .`).
    insta::assert_snapshot!(
        format!("status_with_the_checks_found_{}", t.forge_name()),
        stable(status)
    );
    let requests = t.change_requests(PROJECT);
    assert_eq!(requests.len(), 1, "{status}\n{requests:#?}");
    let body = &requests[0].body;
    // The checks were **detected**, and they prove the fix.
    insta::assert_snapshot!(
        format!(
            "change_request_body_with_the_checks_found_{}",
            t.forge_name()
        ),
        stable(body)
    );
    let files = remote.files_at(&requests[0].head);
    assert!(
        !files.iter().any(|file| file.starts_with(".venv")),
        "what setup made is never pushed: {files:?}"
    );
}
