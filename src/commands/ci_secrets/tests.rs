use super::*;

fn data(relative: &str) -> String {
    let path = format!("{}/tests/data/ci/{relative}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{path}: {err}"))
}

/// A repository folder holding `files`.
fn repository(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

fn jobs(scan: &Scan) -> Vec<(&str, &str, Vec<&str>)> {
    scan.exposures
        .iter()
        .map(|exposure| {
            (
                exposure.file.as_str(),
                exposure.job.as_str(),
                exposure.triggers.iter().map(String::as_str).collect(),
            )
        })
        .collect()
}

#[test]
fn polars_coverage_upload_runs_on_pull_requests_with_the_codecov_token() {
    let dir = repository(&[(
        ".github/workflows/test-coverage.yml",
        &data("github/polars-test-coverage.yml"),
    )]);
    let scan = scan(dir.path()).unwrap();
    assert_eq!(
        scan.exposures,
        [Exposure {
            file: ".github/workflows/test-coverage.yml".into(),
            job: "upload-coverage".into(),
            triggers: vec!["pull_request".into()],
            secrets: vec!["secrets.CODECOV_TOKEN".into()],
            environment: None,
        }],
        "the other jobs use no secret, and its pushes are to main only"
    );
    assert_eq!(
        warnings(&scan, PushTo::Base)[0],
        "warning: .github/workflows/test-coverage.yml: job `upload-coverage` runs on \
         pull_request with secrets.CODECOV_TOKEN"
    );
    assert!(
        warnings(&scan, PushTo::Fork).is_empty(),
        "a fork's pull request gets no secret"
    );
}

#[test]
fn a_workflow_that_inlines_its_token_and_uses_only_the_github_token_is_quiet() {
    let dir = repository(&[(
        ".github/workflows/chromatic.yml",
        &data("github/kaoto-chromatic.yml"),
    )]);
    let scan = scan(dir.path()).unwrap();
    assert_eq!(scan, Scan::default());
    let dir = repository(&[(
        ".github/workflows/ci.yaml",
        "on: pull_request\njobs:\n  lint:\n    runs-on: ubuntu-latest\n    steps:\n      \
         - run: gh pr view\n        env:\n          GH_TOKEN: ${{ secrets.GITHUB_TOKEN }}\n",
    )]);
    assert_eq!(scan_of(&dir).exposures, []);
}

fn scan_of(dir: &tempfile::TempDir) -> Scan {
    scan(dir.path()).unwrap()
}

#[test]
fn every_way_a_github_job_gets_secrets_is_seen() {
    let workflow = r#"
on:
  pull_request_target:
  push:
    branches-ignore: [main]
env:
  DEPLOY_KEY: ${{ secrets.DEPLOY_KEY }}
jobs:
  reusable:
    uses: ./.github/workflows/release.yml
    secrets: inherit
  dump:
    runs-on: ubuntu-latest
    environment: preview
    steps:
      - run: echo '${{ toJSON(secrets) }}'
      - run: echo ${{ secrets['NPM_TOKEN'] }}
"#;
    let dir = repository(&[(".github/workflows/preview.yml", workflow)]);
    let scan = scan_of(&dir);
    let found: Vec<(&str, &[String], Option<&str>)> = scan
        .exposures
        .iter()
        .map(|e| {
            (
                e.job.as_str(),
                e.secrets.as_slice(),
                e.environment.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            (
                "reusable",
                &[
                    "secrets.DEPLOY_KEY".to_owned(),
                    "secrets: inherit".to_owned()
                ][..],
                None
            ),
            (
                "dump",
                &[
                    "secrets.DEPLOY_KEY".to_owned(),
                    "every secret (`secrets` whole)".to_owned(),
                    "secrets.NPM_TOKEN".to_owned()
                ][..],
                Some("preview")
            ),
        ]
    );
    assert_eq!(scan.exposures[0].triggers, ["pull_request_target", "push"]);
    let fork = warnings(&scan, PushTo::Fork);
    assert_eq!(fork.len(), 3, "{fork:#?}");
    assert!(
        fork.iter()
            .any(|line| line.contains("job `dump` (environment `preview`) runs on")),
        "{fork:#?}"
    );
    assert!(fork[2].starts_with("warning: pull_request_target runs with the repository's secrets"));
}

#[test]
fn pushes_to_named_branches_or_tags_only_are_no_bot_branch() {
    for on in [
        "push:\n    branches: [main, 'release/**']",
        "push:\n    tags: ['v*']",
        "[schedule, workflow_dispatch]",
    ] {
        let workflow = format!(
            "on:\n  {on}\njobs:\n  release:\n    runs-on: x\n    steps:\n      - run: echo ${{{{ secrets.TOKEN }}}}\n"
        );
        let dir = repository(&[(".github/workflows/release.yml", &workflow)]);
        assert_eq!(scan_of(&dir).exposures, [], "{workflow}");
    }
    let every_branch = "on:\n  push:\n    branches: ['**']\njobs:\n  j:\n    steps:\n      - run: ${{ secrets.TOKEN }}\n";
    let dir = repository(&[(".github/workflows/all.yml", every_branch)]);
    assert_eq!(
        jobs(&scan_of(&dir)),
        [(".github/workflows/all.yml", "j", vec!["push"])]
    );
}

#[test]
fn gitlab_runner_jobs_run_on_every_branch_push_but_not_those_kept_to_named_refs() {
    let dir = repository(&[(
        ".gitlab-ci.yml",
        &data("gitlab/gitlab-runner.gitlab-ci.yml"),
    )]);
    let scan = scan_of(&dir);
    let exposed: Vec<&str> = scan.exposures.iter().map(|e| e.job.as_str()).collect();
    // Plain jobs and those only kept from docs branches: every branch pipeline.
    for job in [
        "helper images",
        "clone test repo",
        "check feature flags docs",
        "unit test with race",
        "docs lint",
        "package-deb",
        "binaries linux/386 linux/amd64 linux/arm",
        "development S3",
        "development docker images",
        "development servercore1803 helper docker image",
        "check windows 1803 test failures",
    ] {
        assert!(exposed.contains(&job), "{job} is missing from {exposed:#?}");
    }
    // Kept to tags and named branches by `only`, or manual.
    for job in [
        "prepare ci image",
        "windows 1803 tests",
        "stable S3",
        "bleeding edge packagecloud",
        // Its second merge key adds only variables and tags to the first's `only`.
        "bleeding edge servercore1803 docker images",
        "review-docs-deploy",
    ] {
        assert!(!exposed.contains(&job), "{job} is not run by a bot branch");
    }
    assert!(
        scan.exposures
            .iter()
            .all(|e| e.triggers == ["branch pushes"]
                && e.secrets == ["the project's CI/CD variables"])
    );
    assert_eq!(
        scan.unread,
        [(
            ".gitlab-ci.yml".to_owned(),
            "it includes other files, which were not read".to_owned()
        )]
    );
    let lines = warnings(&scan, PushTo::Base);
    assert!(
        lines[0].starts_with("warning: .gitlab-ci.yml: jobs `helper images`, `clone test repo`"),
        "{lines:#?}"
    );
    assert!(lines[0].ends_with("more run on branch pushes with the project's CI/CD variables"));
    assert!(
        lines[1].contains("GitLab: make the variables protected"),
        "{lines:#?}"
    );
    assert_eq!(
        lines[2],
        "note: .gitlab-ci.yml was not read: it includes other files, which were not read"
    );
    assert_eq!(warnings(&scan, PushTo::Fork), [lines[2].clone()]);
}

#[test]
fn merge_request_rules_only_and_references_are_followed() {
    let pipeline = r#"
workflow:
  rules:
    - if: $CI_PIPELINE_SOURCE == "merge_request_event"
    - if: $CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH
.if-merge-request:
  - if: '$CI_PIPELINE_SOURCE == "merge_request_event"'
    interruptible: true
.deploy:
  rules:
    - if: $CI_MERGE_REQUEST_IID
  secrets:
    DATABASE_PASSWORD:
      vault: production/db/password@ops
review:
  extends: .deploy
  script: deploy-review
legacy:
  only: [merge_requests]
  script: test
referenced:
  rules: !reference [.if-merge-request]
  script: lint
listed:
  rules:
    - !reference [.if-merge-request]
  script: lint
plain:
  script: make
kept-off:
  rules:
    - if: $CI_PIPELINE_SOURCE == "merge_request_event"
      when: never
    - when: always
  script: never-in-mr
by-hand:
  rules:
    - if: $CI_PIPELINE_SOURCE == "merge_request_event"
      when: manual
  script: deploy
"#;
    let dir = repository(&[(".gitlab-ci.yml", pipeline)]);
    let scan = scan_of(&dir);
    assert_eq!(
        jobs(&scan),
        [
            (".gitlab-ci.yml", "review", vec!["merge requests"]),
            (".gitlab-ci.yml", "legacy", vec!["merge requests"]),
            (".gitlab-ci.yml", "referenced", vec!["merge requests"]),
            (".gitlab-ci.yml", "listed", vec!["merge requests"]),
            (".gitlab-ci.yml", "plain", vec!["merge requests"]),
        ],
        "the workflow allows merge request pipelines and no branch pipelines but the default branch's"
    );
    assert_eq!(
        scan.exposures[0].secrets,
        [
            "the project's CI/CD variables".to_owned(),
            "secrets: DATABASE_PASSWORD".to_owned()
        ]
    );
}

#[test]
fn a_symlinked_github_folder_is_never_followed_and_is_said_so() {
    let outside = repository(&[(
        "workflows/leak.yml",
        "on: pull_request\njobs:\n  j:\n    steps:\n      - run: ${{ secrets.X }}\n",
    )]);
    let dir = repository(&[]);
    std::os::unix::fs::symlink(outside.path(), dir.path().join(".github")).unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("workflows/leak.yml"),
        dir.path().join(".gitlab-ci.yml"),
    )
    .unwrap();
    let scan = scan_of(&dir);
    assert_eq!(scan.exposures, []);
    assert_eq!(
        warnings(&scan, PushTo::Base),
        [
            "note: .github/workflows was not read: `.github` is a symbolic link; autofix never \
             follows a link inside a work tree",
            "note: .gitlab-ci.yml was not read: `.gitlab-ci.yml` is a symbolic link; autofix \
             never follows a link inside a work tree",
        ]
    );
}

#[test]
fn aliases_that_would_expand_past_the_limit_are_refused_unread() {
    let mut laughs = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
    for level in b'b'..=b'i' {
        let previous = (level - 1) as char;
        let level = level as char;
        let items = vec![format!("*{previous}"); 10].join(", ");
        laughs.push_str(&format!("{level}: &{level} [{items}]\n"));
    }
    let dir = repository(&[(".gitlab-ci.yml", &laughs)]);
    let scan = scan_of(&dir);
    assert_eq!(
        scan.unread,
        [(
            ".gitlab-ci.yml".to_owned(),
            "its aliases expand to more than 200000 YAML nodes".to_owned()
        )]
    );
}

#[test]
fn a_file_that_is_not_yaml_is_noted_and_the_others_still_read() {
    let dir = repository(&[
        (".github/workflows/broken.yml", "on: [pull_request\njobs: {"),
        (
            ".github/workflows/coverage.yml",
            &data("github/polars-test-coverage.yml"),
        ),
    ]);
    let scan = scan_of(&dir);
    assert_eq!(scan.exposures.len(), 1);
    assert_eq!(scan.unread.len(), 1);
    assert_eq!(scan.unread[0].0, ".github/workflows/broken.yml");
    assert!(
        scan.unread[0].1.starts_with("not YAML: "),
        "{:?}",
        scan.unread
    );
}
