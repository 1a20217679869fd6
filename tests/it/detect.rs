//! Detection stories: real repositories' manifests and CI files (copied at a known commit,
//! see `tests/data/detect/SOURCES.md`) and small trees that attack one rule each.

use std::path::Path;

use autofix::config::repo::RepoConfig;
use autofix::detect::{Detected, Detection, FileList, FolderTree};

fn detect(project: &str) -> Detection {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/detect")
        .join(project);
    Detection::detect(&FolderTree::open(&root).expect("the fixture folder opens"))
}

fn detect_files(files: &[(&str, &str)]) -> Detection {
    Detection::detect(&FileList::new(files.iter().copied()))
}

/// Each proposal as (argv, folder, why).
fn steps(list: &[Detected]) -> Vec<(Vec<&str>, &str, &str)> {
    list.iter()
        .map(|found| {
            (
                found.run.iter().map(String::as_str).collect(),
                found.cwd.as_str(),
                found.why.as_str(),
            )
        })
        .collect()
}

fn left_out(found: &Detection) -> Vec<(&str, &str)> {
    found
        .left_out
        .iter()
        .map(|left| (left.what.as_str(), left.why.as_str()))
        .collect()
}

fn runs(list: &[Detected]) -> Vec<String> {
    list.iter().map(|found| found.run.join(" ")).collect()
}

#[test]
fn a_pyproject_with_a_pytest_section_installs_its_tests_group_into_a_venv_and_runs_pytest() {
    // Flask declares its test dependencies as a dependency group, not an extra.
    let found = detect("flask");
    assert_eq!(
        steps(&found.setup),
        [
            (
                vec!["python3", "-m", "venv", ".venv"],
                ".",
                "Python project (`pyproject.toml`); asks for Python `>=3.10` (`pyproject.toml` requires-python)",
            ),
            (
                vec![
                    ".venv/bin/python",
                    "-m",
                    "pip",
                    "install",
                    "-e",
                    ".",
                    "--group",
                    "tests"
                ],
                ".",
                "`pyproject.toml` dependency group `tests`",
            ),
        ]
    );
    assert_eq!(
        steps(&found.validate),
        [(
            vec![".venv/bin/python", "-m", "pytest"],
            ".",
            "pytest: `pyproject.toml` [tool.pytest]",
        ),]
    );
    assert!(found.left_out.is_empty(), "{:?}", found.left_out);
}

#[test]
fn a_setup_py_with_a_requirement_file_installs_the_project_and_the_file_then_runs_pytest() {
    // requests has no test extra; `requirements-dev.txt` is how it declares them.
    let found = detect("requests");
    assert_eq!(
        steps(&found.setup),
        [
            (
                vec!["python3", "-m", "venv", ".venv"],
                ".",
                "Python project (`pyproject.toml`); asks for Python `>=3.10` (`pyproject.toml` requires-python)",
            ),
            (
                vec![
                    ".venv/bin/python",
                    "-m",
                    "pip",
                    "install",
                    "-e",
                    ".",
                    "-r",
                    "requirements-dev.txt"
                ],
                ".",
                "requirement files `requirements-dev.txt`",
            ),
        ]
    );
    assert_eq!(
        steps(&found.validate),
        [(
            vec![".venv/bin/python", "-m", "pytest"],
            ".",
            "pytest: `pyproject.toml` [tool.pytest]",
        ),]
    );
    assert!(found.left_out.is_empty(), "{:?}", found.left_out);
}

#[test]
fn a_tox_project_installs_the_deps_of_its_test_environment_and_runs_pytest_from_them() {
    // mccabe declares its test dependencies only in tox's `[testenv] deps`.
    let found = detect("mccabe");
    assert_eq!(
        steps(&found.setup),
        [
            (
                vec!["python3", "-m", "venv", ".venv"],
                ".",
                "Python project (`setup.py`); asks for Python `>=3.6` (`setup.py` python_requires)",
            ),
            (
                vec![
                    ".venv/bin/python",
                    "-m",
                    "pip",
                    "install",
                    "-e",
                    ".",
                    "pytest",
                    "hypothesis ; python_version >= \"3.6\"",
                    "hypothesmith ; python_version >= \"3.6\""
                ],
                ".",
                "`tox.ini` [testenv] deps",
            ),
        ]
    );
    assert_eq!(
        steps(&found.validate),
        [(
            vec![".venv/bin/python", "-m", "pytest"],
            ".",
            "pytest: pytest is among the test dependencies",
        ),]
    );
    assert!(found.left_out.is_empty(), "{:?}", found.left_out);
}

#[test]
fn a_single_crate_without_a_lockfile_is_fetched_built_and_tested_without_locked() {
    let found = detect("anyhow");
    assert_eq!(
        steps(&found.setup),
        [(vec!["cargo", "fetch"], ".", "`Cargo.toml`, no `Cargo.lock`",),]
    );
    assert_eq!(
        steps(&found.validate),
        [
            (
                vec!["cargo", "build", "--all-targets"],
                ".",
                "`Cargo.toml`, no `Cargo.lock`",
            ),
            (vec!["cargo", "test"], ".", "`Cargo.toml`, no `Cargo.lock`",),
        ]
    );
    assert!(found.left_out.is_empty(), "{:?}", found.left_out);
}

#[test]
fn a_workspace_with_a_lockfile_is_checked_once_from_its_root_and_locked() {
    let found = detect("ripgrep");
    assert_eq!(
        steps(&found.setup),
        [(
            vec!["cargo", "fetch", "--locked"],
            ".",
            "`Cargo.toml` (a workspace, checked from its root), `Cargo.lock` committed",
        ),]
    );
    assert_eq!(
        steps(&found.validate),
        [
            (
                vec!["cargo", "build", "--workspace", "--all-targets", "--locked"],
                ".",
                "`Cargo.toml` (a workspace, checked from its root), `Cargo.lock` committed",
            ),
            (
                vec!["cargo", "test", "--workspace", "--locked"],
                ".",
                "`Cargo.toml` (a workspace, checked from its root), `Cargo.lock` committed",
            ),
        ]
    );
    assert!(found.left_out.is_empty(), "{:?}", found.left_out);
}

#[test]
fn an_npm_project_installs_from_its_lockfile_and_runs_its_test_script() {
    let found = detect("axios");
    assert_eq!(
        steps(&found.setup),
        [(vec!["npm", "ci"], ".", "`package-lock.json`",),]
    );
    assert_eq!(
        steps(&found.validate),
        [(vec!["npm", "test"], ".", "`package.json` scripts.test",),]
    );
    assert!(found.left_out.is_empty(), "{:?}", found.left_out);
}

#[test]
fn a_pnpm_project_installs_frozen_and_runs_its_test_and_lint_scripts_with_pnpm() {
    let found = detect("vite");
    assert_eq!(
        steps(&found.setup),
        [(
            vec!["pnpm", "install", "--frozen-lockfile"],
            ".",
            "`pnpm-lock.yaml`",
        ),]
    );
    assert_eq!(
        steps(&found.validate),
        [
            (vec!["pnpm", "test"], ".", "`package.json` scripts.test",),
            (
                vec!["pnpm", "run", "lint"],
                ".",
                "`package.json` scripts.lint",
            ),
        ]
    );
    assert!(found.left_out.is_empty(), "{:?}", found.left_out);
}

#[test]
fn a_go_module_is_downloaded_then_built_vetted_and_tested_and_its_makefile_is_not_needed() {
    // cobra's Makefile has a `test:` target, but the Go rules already give checks.
    let found = detect("cobra");
    assert_eq!(
        steps(&found.setup),
        [(vec!["go", "mod", "download"], ".", "`go.mod`",),]
    );
    assert_eq!(
        steps(&found.validate),
        [
            (vec!["go", "build", "./..."], ".", "`go.mod`",),
            (vec!["go", "vet", "./..."], ".", "`go.mod`",),
            (vec!["go", "test", "./..."], ".", "`go.mod`",),
        ]
    );
    assert!(found.left_out.is_empty(), "{:?}", found.left_out);
}

#[test]
fn a_github_actions_matrix_job_runs_on_linux_and_leaves_out_docker_actions_and_windows() {
    // `runs-on: ${{ matrix.platform }}-latest` is `ubuntu-latest` with the first platform.
    let found = detect("cobra-ci");
    assert_eq!(
        steps(&found.setup),
        [
            (
                vec!["go", "install", "github.com/kyoh86/richgo@latest"],
                ".",
                "`.github/workflows/test.yml` job `test-unix` step 3 line 2",
            ),
            (
                vec!["go", "install", "github.com/mitchellh/gox@latest"],
                ".",
                "`.github/workflows/test.yml` job `test-unix` step 3 line 3",
            ),
        ]
    );
    assert_eq!(
        steps(&found.validate),
        [(
            vec![
                "sh",
                "-c",
                "RICHGO_FORCE_COLOR=1 PATH=$HOME/go/bin/:$PATH make richtest"
            ],
            ".",
            "`.github/workflows/test.yml` job `test-unix` step 4, run through `sh -c` for its shell syntax",
        ),]
    );
    assert_eq!(
        left_out(&found),
        [
            (
                "`.github/workflows/test.yml` job `lic-headers` step 1: uses `actions/checkout@v4`",
                "runs an action, which autofix does not run"
            ),
            (
                "`.github/workflows/test.yml` job `lic-headers` step 2: docker run -v $(pwd):/wrk -w /wrk ghcr.io/google/addlicense -c 'The Cobra Authors' -y '2013-2023' -l apache -ignore '.github/**' -check .",
                "uses containers (`docker`)"
            ),
            (
                "`.github/workflows/test.yml` job `golangci-lint` step 1: uses `actions/checkout@v4`",
                "runs an action, which autofix does not run"
            ),
            (
                "`.github/workflows/test.yml` job `golangci-lint` step 2: uses `actions/setup-go@v6`",
                "runs an action, which autofix does not run"
            ),
            (
                "`.github/workflows/test.yml` job `golangci-lint` step 3: uses `golangci/golangci-lint-action@v8.0.0`",
                "runs an action, which autofix does not run"
            ),
            (
                "`.github/workflows/test.yml` job `test-unix` step 1: uses `actions/checkout@v4`",
                "runs an action, which autofix does not run"
            ),
            (
                "`.github/workflows/test.yml` job `test-unix` step 2: uses `actions/setup-go@v6`",
                "runs an action, which autofix does not run"
            ),
            (
                "`.github/workflows/test.yml` job `test-unix` step 3 line 1: export GOBIN=$HOME/go/bin",
                "does not build, lint, test or install"
            ),
            (
                "`.github/workflows/test.yml` job `test-win`",
                "runs on `windows-latest`, not Linux"
            ),
        ]
    );
}

#[test]
fn a_matrix_value_in_a_run_line_is_the_first_of_its_plain_list_and_an_unreadable_workflow_is_named()
{
    // `test.yml` closes a flow list at the indentation of its key, which the YAML reader refuses.
    let found = detect("pluggy");
    assert_eq!(
        steps(&found.setup),
        [
            (
                vec!["python3", "-m", "venv", ".venv"],
                ".",
                "Python project (`pyproject.toml`); asks for Python `>=3.10` (`pyproject.toml` requires-python)",
            ),
            (
                vec![
                    ".venv/bin/python",
                    "-m",
                    "pip",
                    "install",
                    "-e",
                    ".",
                    "--group",
                    "dev"
                ],
                ".",
                "`pyproject.toml` dependency group `dev`",
            ),
        ]
    );
    assert_eq!(
        steps(&found.validate),
        [(
            vec!["uv", "run", "downstream/run_downstream.py", "conda"],
            ".",
            "`.github/workflows/downstream.yml` job `recipe` step 4, `matrix.recipe` taken as `conda`",
        ),]
    );
    assert_eq!(
        left_out(&found),
        [
            (
                "`.github/workflows/deploy.yml` job `package` step 1: uses `actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1`",
                "runs an action, which autofix does not run"
            ),
            (
                "`.github/workflows/deploy.yml` job `package` step 2: uses `hynek/build-and-inspect-python-package@d44ca7d91762de7a7d5436ddae667c6da6d1c3df`",
                "runs an action, which autofix does not run"
            ),
            (
                "`.github/workflows/deploy.yml` job `deploy` step 1: uses `actions/download-artifact@3e5f45b2cfb9172054b4087a40e8e0b5a5461e7c`",
                "runs an action, which autofix does not run"
            ),
            (
                "`.github/workflows/deploy.yml` job `deploy` step 2: uses `pypa/gh-action-pypi-publish@dc37677b2e1c63e2034f94d8a5b11f265b73ba33`",
                "runs an action, which autofix does not run"
            ),
            (
                "`.github/workflows/downstream.yml` job `recipe` step 1: uses `actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1`",
                "runs an action, which autofix does not run"
            ),
            (
                "`.github/workflows/downstream.yml` job `recipe` step 2: uses `actions/setup-python@5fda3b95a4ea91299a34e894583c3862153e4b97`",
                "runs an action, which autofix does not run"
            ),
            (
                "`.github/workflows/downstream.yml` job `recipe` step 3: uses `astral-sh/setup-uv@c771a70e6277c0a99b617c7a806ffedaca235ff9`",
                "runs an action, which autofix does not run"
            ),
            (
                "`.github/workflows/test.yml`",
                "not YAML: invalid indentation at byte 975 line 47 column 9"
            ),
        ]
    );
}

#[test]
fn a_gitlab_pipeline_proposes_its_build_and_test_lines_and_leaves_out_system_packages() {
    // The two meson jobs extend one template; the second one's lines repeat the first's.
    let found = detect("opus");
    assert_eq!(
        steps(&found.setup),
        [(
            vec![
                "pip3",
                "install",
                "--break-system-packages",
                "git+https://gitlab.freedesktop.org/freedesktop/ci-templates@7811ba9814a3bad379377241c6c6b62d78b20eac"
            ],
            ".",
            "`.gitlab-ci.yml` job `ci-fairy` script line 3",
        ),]
    );
    assert_eq!(
        steps(&found.validate),
        [
            (
                vec!["./autogen.sh"],
                ".",
                "`.gitlab-ci.yml` job `autoconf` script line 1",
            ),
            (
                vec![
                    "sh",
                    "-c",
                    "CFLAGS=\"-mavx -mfma -mavx2 -O2 -ffast-math\" ./configure --enable-float-approx --enable-dred --enable-osce"
                ],
                ".",
                "`.gitlab-ci.yml` job `autoconf` script line 2, run through `sh -c` for its shell syntax",
            ),
            (
                vec!["make", "-j16"],
                ".",
                "`.gitlab-ci.yml` job `autoconf` script line 3",
            ),
            (
                vec![
                    "sh",
                    "-c",
                    "DISTCHECK_CONFIGURE_FLAGS=\"--enable-float-approx --enable-dred --enable-osce CFLAGS='-mavx -mfma -mavx2 -O2'\" make distcheck -j16"
                ],
                ".",
                "`.gitlab-ci.yml` job `autoconf` script line 4, run through `sh -c` for its shell syntax",
            ),
            (
                vec![
                    "cmake",
                    "-S",
                    ".",
                    "-B",
                    "build",
                    "-G",
                    "Ninja",
                    "-DCMAKE_BUILD_TYPE=Release",
                    "-DOPUS_BUILD_PROGRAMS=ON",
                    "-DBUILD_TESTING=ON",
                    "-DOPUS_FAST_MATH=ON",
                    "-DOPUS_FLOAT_APPROX=ON",
                    "-DOPUS_DRED=ON",
                    "-DOPUS_OSCE=ON",
                    "-DOPUS_X86_PRESUME_AVX2=ON"
                ],
                ".",
                "`.gitlab-ci.yml` job `cmake` script line 3",
            ),
            (
                vec!["cmake", "--build", "build"],
                ".",
                "`.gitlab-ci.yml` job `cmake` script line 4",
            ),
            (
                vec!["ctest", "--output-on-failure", "-j", "16"],
                "build",
                "`.gitlab-ci.yml` job `cmake` script line 5",
            ),
            (
                vec![
                    "meson",
                    "setup",
                    "-Ddeep-plc=enabled",
                    "-Dosce=enabled",
                    "-Ddred=enabled",
                    "-Dtests=enabled",
                    "-Ddocs=enabled",
                    "-Dbuildtype=release",
                    "builddir"
                ],
                ".",
                "`.gitlab-ci.yml` job `meson x86_64` script line 3",
            ),
            (
                vec!["meson", "compile", "-C", "builddir"],
                ".",
                "`.gitlab-ci.yml` job `meson x86_64` script line 4",
            ),
            (
                vec!["meson", "test", "-C", "builddir"],
                ".",
                "`.gitlab-ci.yml` job `meson x86_64` script line 5",
            ),
            (
                vec!["make", "-f", "Makefile.unix", "-j8"],
                ".",
                "`.gitlab-ci.yml` job `makefile` script line 1",
            ),
            (
                vec!["make", "-f", "Makefile.unix", "check", "-j8"],
                ".",
                "`.gitlab-ci.yml` job `makefile` script line 2",
            ),
            (
                vec!["make", "-f", "Makefile.unix", "clean"],
                ".",
                "`.gitlab-ci.yml` job `makefile` script line 3",
            ),
        ]
    );
    assert_eq!(
        left_out(&found),
        [
            (
                "`.gitlab-ci.yml` include",
                "names other files, which are not read"
            ),
            (
                "`.gitlab-ci.yml` job `whitespace` before_script: apt-get update && apt-get install -y git",
                "installs system packages (`apt-get`), which needs root"
            ),
            (
                "`.gitlab-ci.yml` job `whitespace` script: git diff-tree --check origin/main HEAD",
                "does not build, lint, test or install"
            ),
            (
                "`.gitlab-ci.yml` job `ci-fairy` script line 1: apt update",
                "installs system packages (`apt`), which needs root"
            ),
            (
                "`.gitlab-ci.yml` job `ci-fairy` script line 2: apt install -y python3-pip git",
                "installs system packages (`apt`), which needs root"
            ),
            (
                "`.gitlab-ci.yml` job `ci-fairy` script line 4: echo Checking commits $CI_FAIRY_BASE_COMMIT..HEAD",
                "does not build, lint, test or install"
            ),
            (
                "`.gitlab-ci.yml` job `ci-fairy` script line 5: ci-fairy check-commits --gpg-signed-commit $CI_FAIRY_BASE_COMMIT..HEAD",
                "does not build, lint, test or install"
            ),
            (
                "`.gitlab-ci.yml` job `autoconf` before_script line 1: apt-get update && apt-get install -y zip doxygen git automake libtool make wget",
                "installs system packages (`apt-get`), which needs root"
            ),
            (
                "`.gitlab-ci.yml` job `autoconf` before_script line 2: git fetch https://gitlab.xiph.org/xiph/opus.git refs/tags/v1.4:refs/tags/v1.4",
                "does not build, lint, test or install"
            ),
            (
                "`.gitlab-ci.yml` job `autoconf` before_script line 3: git describe",
                "does not build, lint, test or install"
            ),
            (
                "`.gitlab-ci.yml` job `cmake` before_script line 1: apt-get update && apt-get install -y cmake ninja-build git automake libtool wget",
                "installs system packages (`apt-get`), which needs root"
            ),
            (
                "`.gitlab-ci.yml` job `cmake` before_script line 2: git fetch https://gitlab.xiph.org/xiph/opus.git refs/tags/v1.4:refs/tags/v1.4",
                "does not build, lint, test or install"
            ),
            (
                "`.gitlab-ci.yml` job `cmake` before_script line 3: git describe",
                "does not build, lint, test or install"
            ),
            (
                "`.gitlab-ci.yml` job `cmake` script line 2: mkdir build",
                "does not build, lint, test or install"
            ),
            (
                "`.gitlab-ci.yml` job `meson x86_64` before_script line 1: apt-get update && apt-get install -y ninja-build doxygen meson git automake libtool wget",
                "installs system packages (`apt-get`), which needs root"
            ),
            (
                "`.gitlab-ci.yml` job `meson x86_64` before_script line 2: git fetch https://gitlab.xiph.org/xiph/opus.git refs/tags/v1.4:refs/tags/v1.4",
                "does not build, lint, test or install"
            ),
            (
                "`.gitlab-ci.yml` job `meson x86_64` before_script line 3: git describe",
                "does not build, lint, test or install"
            ),
            (
                "`.gitlab-ci.yml` job `meson x86_64` script line 2: mkdir builddir",
                "does not build, lint, test or install"
            ),
            (
                "`.gitlab-ci.yml` job `meson arm64` before_script line 1: apt-get update && apt-get install -y ninja-build doxygen meson git automake libtool wget",
                "installs system packages (`apt-get`), which needs root"
            ),
            (
                "`.gitlab-ci.yml` job `meson arm64` before_script line 2: git fetch https://gitlab.xiph.org/xiph/opus.git refs/tags/v1.4:refs/tags/v1.4",
                "does not build, lint, test or install"
            ),
            (
                "`.gitlab-ci.yml` job `meson arm64` before_script line 3: git describe",
                "does not build, lint, test or install"
            ),
            (
                "`.gitlab-ci.yml` job `meson arm64` script line 2: mkdir builddir",
                "does not build, lint, test or install"
            ),
            (
                "`.gitlab-ci.yml` job `makefile` before_script line 1: apt-get update && apt-get install -y zip doxygen git make wget",
                "installs system packages (`apt-get`), which needs root"
            ),
            (
                "`.gitlab-ci.yml` job `makefile` before_script line 2: git fetch https://gitlab.xiph.org/xiph/opus.git refs/tags/v1.4:refs/tags/v1.4",
                "does not build, lint, test or install"
            ),
            (
                "`.gitlab-ci.yml` job `makefile` before_script line 3: git describe",
                "does not build, lint, test or install"
            ),
            (
                "`.gitlab-ci.yml` job `cmake` script line 1: ./autogen.sh",
                "repeats `.gitlab-ci.yml` job `autoconf` script line 1"
            ),
            (
                "`.gitlab-ci.yml` job `meson x86_64` script line 1: ./autogen.sh",
                "repeats `.gitlab-ci.yml` job `autoconf` script line 1"
            ),
            (
                "`.gitlab-ci.yml` job `meson arm64` script line 1: ./autogen.sh",
                "repeats `.gitlab-ci.yml` job `autoconf` script line 1"
            ),
            (
                "`.gitlab-ci.yml` job `meson arm64` script line 3: meson setup -Ddeep-plc=enabled -Dosce=enabled -Ddred=enabled -Dtests=enabled -Ddocs=enabled -Dbuildtype=release builddir",
                "repeats `.gitlab-ci.yml` job `meson x86_64` script line 3"
            ),
            (
                "`.gitlab-ci.yml` job `meson arm64` script line 4: meson compile -C builddir",
                "repeats `.gitlab-ci.yml` job `meson x86_64` script line 4"
            ),
            (
                "`.gitlab-ci.yml` job `meson arm64` script line 5: meson test -C builddir",
                "repeats `.gitlab-ci.yml` job `meson x86_64` script line 5"
            ),
        ]
    );
}

#[test]
fn a_release_workflow_leaves_out_its_publish_and_secret_steps_and_keeps_the_ci_checks() {
    // `publish.yml` publishes with a secret and notifies with the GitHub token.
    let found = detect("axios-release");
    assert_eq!(
        steps(&found.setup),
        [(
            vec!["npm", "ci"],
            ".",
            "`.github/workflows/ci.yml` job `build` step 6",
        ),]
    );
    assert_eq!(
        steps(&found.validate),
        [(
            vec!["npm", "test"],
            ".",
            "`.github/workflows/ci.yml` job `build` step 7",
        ),]
    );
    assert_eq!(
        left_out(&found),
        [
            (
                "`.github/workflows/ci.yml` job `build` step 1: uses `actions/checkout@v4`",
                "runs an action, which autofix does not run"
            ),
            (
                "`.github/workflows/ci.yml` job `build` step 2: uses `tj-actions/changed-files@v45`",
                "runs an action, which autofix does not run"
            ),
            (
                "`.github/workflows/ci.yml` job `build` step 3: for file in ${{ steps.changed-files.outputs.all_changed_files }}; do   echo \"$file was changed\" done",
                "uses `${{ steps.changed-files.outputs.all_changed_files }}`, which is only known on GitHub"
            ),
            (
                "`.github/workflows/ci.yml` job `build` step 4: uses `tj-actions/changed-files@v45`",
                "runs an action, which autofix does not run"
            ),
            (
                "`.github/workflows/ci.yml` job `build` step 5: uses `actions/setup-node@v4`",
                "runs an action, which autofix does not run"
            ),
            (
                "`.github/workflows/publish.yml` job `publish` step 1: echo \"PR ${{ github.event.number }}\"",
                "uses `${{ github.event.number }}`, which is only known on GitHub"
            ),
            (
                "`.github/workflows/publish.yml` job `publish` step 2: uses `actions/checkout@v4`",
                "runs an action, which autofix does not run"
            ),
            (
                "`.github/workflows/publish.yml` job `publish` step 3 line 1: git config user.name \"${GITHUB_ACTOR}\"",
                "does not build, lint, test or install"
            ),
            (
                "`.github/workflows/publish.yml` job `publish` step 3 line 2: git config user.email \"${GITHUB_ACTOR}@users.noreply.github.com\"",
                "does not build, lint, test or install"
            ),
            (
                "`.github/workflows/publish.yml` job `publish` step 4: uses `actions/setup-node@v4`",
                "runs an action, which autofix does not run"
            ),
            (
                "`.github/workflows/publish.yml` job `publish` step 6: uses `martinbeentjes/npm-get-version-action@main`",
                "runs an action, which autofix does not run"
            ),
            (
                "`.github/workflows/publish.yml` job `publish` step 7: uses `ffurrer2/extract-release-notes@v2`",
                "runs an action, which autofix does not run"
            ),
            (
                "`.github/workflows/publish.yml` job `publish` step 8: node ./bin/check-build-version.js",
                "does not build, lint, test or install"
            ),
            (
                "`.github/workflows/publish.yml` job `publish` step 9: uses `rickstaa/action-create-tag@v1`",
                "runs an action, which autofix does not run"
            ),
            (
                "`.github/workflows/publish.yml` job `publish` step 10: node ./bin/resolveNPMTag.js",
                "does not build, lint, test or install"
            ),
            (
                "`.github/workflows/publish.yml` job `publish` step 11: uses `ncipollo/release-action@v1`",
                "runs an action, which autofix does not run"
            ),
            (
                "`.github/workflows/publish.yml` job `publish` step 12: npm publish --provenance --access public --tag ${{ steps.npm_tag.outputs.tag || 'latest' }}",
                "uses the secret `secrets.npm_token`"
            ),
            (
                "`.github/workflows/publish.yml` job `notify` step 1: uses `actions/checkout@v4`",
                "runs an action, which autofix does not run"
            ),
            (
                "`.github/workflows/publish.yml` job `notify` step 2 line 1: git config user.name \"${GITHUB_ACTOR}\"",
                "does not build, lint, test or install"
            ),
            (
                "`.github/workflows/publish.yml` job `notify` step 2 line 2: git config user.email \"${GITHUB_ACTOR}@users.noreply.github.com\"",
                "does not build, lint, test or install"
            ),
            (
                "`.github/workflows/publish.yml` job `notify` step 3: uses `actions/setup-node@v4`",
                "runs an action, which autofix does not run"
            ),
            (
                "`.github/workflows/publish.yml` job `notify` step 5: node ./bin/actions/notify_published.js --tag ${{ github.event.inputs.tag || github.event.release.ta…",
                "uses the secret `secrets.GITHUB_TOKEN`"
            ),
            (
                "`.github/workflows/publish.yml` job `publish` step 5: npm ci",
                "repeats `.github/workflows/ci.yml` job `build` step 6"
            ),
            (
                "`.github/workflows/publish.yml` job `notify` step 4: npm ci",
                "repeats `.github/workflows/ci.yml` job `build` step 6"
            ),
        ]
    );
}

#[test]
fn the_proposals_become_steps_that_pass_the_rules_of_autofix_toml_setup_with_network_and_checks_without()
 {
    let found = detect("flask");
    let (setup, validate) = found.to_config();
    assert!(setup.iter().all(|step| step.as_step().network));
    assert!(validate.iter().all(|step| !step.network));
    assert_eq!(validate[0].run, [".venv/bin/python", "-m", "pytest"]);
    let config = RepoConfig {
        setup,
        validate,
        ..RepoConfig::default()
    };
    assert_eq!(config.problems(), Vec::<String>::new());
}

#[test]
fn a_ci_line_the_command_rules_deny_is_left_out_with_the_rule_that_denies_it() {
    let workflow = "\
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - run: npm run watch
      - run: cargo build && curl -X POST https://example.com/built
      - run: cargo test
";
    let found = detect_files(&[(".github/workflows/ci.yml", workflow)]);
    assert_eq!(runs(&found.validate), ["cargo test"]);
    assert_eq!(
        left_out(&found),
        [
            (
                "`.github/workflows/ci.yml` job `test` step 1: npm run watch",
                "refused by the command rules: validate[0].run is refused: `npm run watch` is \
                 denied by the built-in rule `npm run watch`"
            ),
            (
                "`.github/workflows/ci.yml` job `test` step 2: cargo build && curl -X POST \
                 https://example.com/built",
                "refused by the command rules: `curl` is denied by the built-in rule `curl`"
            ),
        ]
    );
}

#[test]
fn working_directories_and_cd_decide_where_a_command_runs_and_never_outside_the_repository() {
    let workflow = "\
jobs:
  web:
    runs-on: ubuntu-latest
    defaults:
      run:
        working-directory: ./web
    steps:
      - run: npm ci
      - run: |
          cd ../api
          go test ./...
      - run: make check
        working-directory: ../..
";
    let found = detect_files(&[(".github/workflows/ci.yml", workflow)]);
    assert_eq!(
        steps(&found.setup),
        [(
            vec!["npm", "ci"],
            "web",
            "`.github/workflows/ci.yml` job `web` step 1"
        )]
    );
    assert_eq!(
        steps(&found.validate),
        [(
            vec!["go", "test", "./..."],
            "api",
            "`.github/workflows/ci.yml` job `web` step 2 line 2"
        )]
    );
    assert_eq!(
        left_out(&found),
        [(
            "`.github/workflows/ci.yml` job `web` step 3: make check",
            "runs in `../..`, which is not a folder of the repository"
        )]
    );
}

#[test]
fn tokens_services_unresolvable_matrices_and_other_shells_are_left_out_of_github_jobs() {
    let workflow = "\
jobs:
  db:
    runs-on: ubuntu-latest
    services:
      postgres:
        image: postgres
    steps:
      - run: cargo test
  lint:
    runs-on: ubuntu-latest
    strategy:
      matrix:
        flags: ${{ fromJson(needs.plan.outputs.flags) }}
    steps:
      - run: cargo clippy ${{ matrix.flags }}
      - run: cargo fmt --check
        env:
          CODECOV_TOKEN: abc
      - run: cargo doc
        shell: pwsh
";
    let found = detect_files(&[(".github/workflows/ci.yml", workflow)]);
    assert!(found.validate.is_empty(), "{:?}", found.validate);
    assert_eq!(
        left_out(&found),
        [
            (
                "`.github/workflows/ci.yml` job `db`",
                "needs services (`postgres`)"
            ),
            (
                "`.github/workflows/ci.yml` job `lint` step 1: cargo clippy ${{ matrix.flags }}",
                "uses `${{ matrix.flags }}`, which is only known on GitHub"
            ),
            (
                "`.github/workflows/ci.yml` job `lint` step 2: cargo fmt --check",
                "sets `CODECOV_TOKEN` in its environment"
            ),
            (
                "`.github/workflows/ci.yml` job `lint` step 3: cargo doc",
                "runs in `pwsh`, not a POSIX shell"
            ),
        ]
    );
}

#[test]
fn when_ci_runs_clippy_in_a_way_autofix_cannot_the_manifest_rules_propose_clippy_themselves() {
    let workflow = "\
jobs:
  lint:
    runs-on: ubuntu-latest
    strategy:
      matrix:
        include:
          - features: --all-features
    steps:
      - run: cargo clippy ${{ matrix.features }}
";
    let found = detect_files(&[
        (".github/workflows/lint.yml", workflow),
        ("Cargo.toml", "[package]\nname = \"x\"\n"),
        ("Cargo.lock", ""),
    ]);
    assert_eq!(
        runs(&found.validate),
        [
            "cargo build --all-targets --locked",
            "cargo test --locked",
            "cargo clippy --all-targets --locked -- -D warnings",
        ]
    );
    assert_eq!(
        found.validate[2].why,
        "`Cargo.toml`, `Cargo.lock` committed; `.github/workflows/lint.yml` runs `cargo clippy`"
    );
    let without_ci = detect_files(&[("Cargo.toml", "[package]\nname = \"x\"\n")]);
    assert!(
        !runs(&without_ci.validate)
            .iter()
            .any(|run| run.contains("clippy"))
    );
}

#[test]
fn ci_checks_win_over_manifest_checks_but_manifest_setup_fills_in_when_ci_installs_nothing() {
    let workflow = "\
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - run: cargo test --all-features
";
    let found = detect_files(&[
        (".github/workflows/ci.yml", workflow),
        ("Cargo.toml", "[package]\nname = \"x\"\n"),
    ]);
    assert_eq!(runs(&found.setup), ["cargo fetch"]);
    assert_eq!(runs(&found.validate), ["cargo test --all-features"]);
}

#[test]
fn gitlab_jobs_that_deploy_trigger_need_services_or_carry_tokens_are_left_out() {
    let pipeline = "\
stages: [test, deploy]
unit:
  stage: test
  script:
    - npm ci
    - npm test
    - 'curl --header \"JOB-TOKEN: $CI_JOB_TOKEN\" https://gitlab.example.com/api'
integration:
  services: [postgres]
  script: [npm run integration]
pages:
  stage: deploy
  script: [npm run build]
downstream:
  trigger: group/other
publish:
  variables:
    NPM_TOKEN: x
  script: [npm run lint]
";
    let found = detect_files(&[(".gitlab-ci.yml", pipeline)]);
    assert_eq!(runs(&found.setup), ["npm ci"]);
    assert_eq!(runs(&found.validate), ["npm test"]);
    assert_eq!(
        left_out(&found),
        [
            (
                "`.gitlab-ci.yml` job `unit` script line 3: curl --header \"JOB-TOKEN: \
                 $CI_JOB_TOKEN\" https://gitlab.example.com/api",
                "uses the token `$CI_JOB_TOKEN`"
            ),
            ("`.gitlab-ci.yml` job `integration`", "needs services"),
            ("`.gitlab-ci.yml` job `pages`", "is in the `deploy` stage"),
            (
                "`.gitlab-ci.yml` job `downstream`",
                "triggers another pipeline"
            ),
            (
                "`.gitlab-ci.yml` job `publish`",
                "sets `NPM_TOKEN` in its variables"
            ),
        ]
    );
}

#[test]
fn maven_runs_through_its_committed_wrapper_and_gradle_only_through_one() {
    let maven = detect_files(&[("pom.xml", "<project/>"), ("mvnw", "#!/bin/sh")]);
    assert_eq!(runs(&maven.setup), ["./mvnw -B dependency:go-offline"]);
    assert_eq!(runs(&maven.validate), ["./mvnw -B test"]);
    assert_eq!(
        maven.validate[0].why,
        "`pom.xml`, Maven wrapper `mvnw` committed"
    );
    let plain_maven = detect_files(&[("pom.xml", "<project/>")]);
    assert_eq!(runs(&plain_maven.validate), ["mvn -B test"]);
    let gradle = detect_files(&[("build.gradle.kts", ""), ("gradlew", "#!/bin/sh")]);
    assert_eq!(runs(&gradle.validate), ["./gradlew test"]);
    let no_wrapper = detect_files(&[("build.gradle", "")]);
    assert!(no_wrapper.validate.is_empty());
    assert_eq!(
        left_out(&no_wrapper),
        [(
            "`build.gradle`",
            "no Gradle wrapper (`gradlew`) is committed, so which Gradle it needs is unknown"
        )]
    );
}

#[test]
fn a_makefile_gives_make_test_or_else_make_check_only_when_nothing_else_gives_a_check() {
    let test = detect_files(&[("Makefile", "all:\n\tcc x.c\ntest: all\n\t./run\n")]);
    assert_eq!(runs(&test.validate), ["make test"]);
    assert_eq!(test.validate[0].why, "`Makefile` target `test`");
    let check = detect_files(&[("Makefile", "check:\n\t./run test:\n")]);
    assert_eq!(runs(&check.validate), ["make check"]);
    let neither = detect_files(&[("Makefile", "all:\n\tcc x.c\nTEST := 1\n")]);
    assert!(neither.validate.is_empty());
}

#[test]
fn npm_placeholder_test_is_left_out_and_yarn_installs_from_its_lockfile() {
    let manifest = r#"{"scripts": {"test": "echo \"Error: no test specified\" && exit 1", "lint": "eslint ."}}"#;
    let found = detect_files(&[("package.json", manifest), ("yarn.lock", "")]);
    assert_eq!(runs(&found.setup), ["yarn install --frozen-lockfile"]);
    assert_eq!(runs(&found.validate), ["yarn run lint"]);
    assert_eq!(
        left_out(&found),
        [(
            "`package.json` scripts.test",
            "is npm's placeholder that fails on purpose"
        )]
    );
}

#[test]
fn a_setup_cfg_test_extra_is_installed_and_without_any_sign_of_pytest_unittest_runs() {
    let setup_cfg = "\
[metadata]
name = x

[options]
python_requires = >=3.9

[options.extras_require]
test =
    hypothesis
";
    let found = detect_files(&[("setup.cfg", setup_cfg), (".python-version", "3.12\n")]);
    assert_eq!(
        steps(&found.setup),
        [
            (
                vec!["python3", "-m", "venv", ".venv"],
                ".",
                "Python project (`setup.cfg`); asks for Python `>=3.9` (`setup.cfg` python_requires)"
            ),
            (
                vec![".venv/bin/python", "-m", "pip", "install", "-e", ".[test]"],
                ".",
                "`setup.cfg` extra `test`"
            ),
        ]
    );
    assert_eq!(
        steps(&found.validate),
        [(
            vec![".venv/bin/python", "-m", "unittest"],
            ".",
            "nothing points at pytest, so the standard library's unittest"
        )]
    );
    let with_conftest = detect_files(&[("setup.cfg", setup_cfg), ("tests/conftest.py", "")]);
    assert_eq!(with_conftest.validate[0].why, "pytest: `tests/conftest.py`");
}

#[test]
fn a_folder_tree_reads_nothing_through_a_symbolic_link() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(
        outside.path().join("Cargo.toml"),
        "[package]\nname = \"x\"\n",
    )
    .unwrap();
    let repo = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("Cargo.toml"),
        repo.path().join("Cargo.toml"),
    )
    .unwrap();
    std::fs::write(repo.path().join("go.mod"), "module x\n").unwrap();
    let found = Detection::detect(&FolderTree::open(repo.path()).unwrap());
    assert_eq!(
        runs(&found.validate),
        ["go build ./...", "go vet ./...", "go test ./..."]
    );
}

const PYTHON_PROJECT: &str = "[project]\nname = \"widgets\"\nrequires-python = \">=3.9\"\n\n[project.optional-dependencies]\ntest = [\"pytest\"]\n";

#[test]
fn ci_lines_that_call_python_tools_run_in_the_projects_virtual_environment() {
    let workflow = "\
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - run: pip install -r requirements-dev.txt
      - run: pytest -q
      - run: python -m pytest tests/unit && mypy src
";
    let found = detect_files(&[
        ("pyproject.toml", PYTHON_PROJECT),
        (".github/workflows/ci.yml", workflow),
    ]);

    assert_eq!(
        runs(&found.setup),
        [
            "python3 -m venv .venv",
            ".venv/bin/python -m pip install -r requirements-dev.txt"
        ]
    );
    assert!(
        found.setup[1]
            .why
            .starts_with("`.github/workflows/ci.yml` job `test` step 2"),
        "the install is the CI's: {}",
        found.setup[1].why
    );
    assert_eq!(
        steps(&found.validate),
        [
            (
                vec![".venv/bin/python", "-m", "pytest", "-q"],
                ".",
                "`.github/workflows/ci.yml` job `test` step 3, in the project's virtual environment `.venv`",
            ),
            (
                vec![
                    "sh",
                    "-c",
                    "export VIRTUAL_ENV=\"$PWD/.venv\" PATH=\"$PWD/.venv/bin:$PATH\"; python -m pytest tests/unit && mypy src"
                ],
                ".",
                "`.github/workflows/ci.yml` job `test` step 4, run through `sh -c` for its shell syntax, in the project's virtual environment `.venv`",
            ),
        ]
    );
    assert_eq!(found.python_requirement.as_deref(), Some(">=3.9"));
}

#[test]
fn a_ci_that_installs_nothing_for_python_gets_the_projects_own_install_before_its_tests() {
    let workflow = "\
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - run: npm ci
      - run: pytest
";
    let found = detect_files(&[
        ("pyproject.toml", PYTHON_PROJECT),
        ("package.json", "{\"name\": \"widgets\"}"),
        (".github/workflows/ci.yml", workflow),
    ]);

    assert_eq!(
        runs(&found.setup),
        [
            "python3 -m venv .venv",
            ".venv/bin/python -m pip install -e .[test]",
            "npm ci"
        ]
    );
    assert_eq!(runs(&found.validate), [".venv/bin/python -m pytest"]);
}

#[test]
fn ci_python_lines_are_left_as_written_when_the_repository_is_not_a_python_project() {
    let workflow = "\
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - run: pip install meson ninja
      - run: meson test -C build
";
    let found = detect_files(&[(".github/workflows/ci.yml", workflow)]);

    assert_eq!(runs(&found.setup), ["pip install meson ninja"]);
}
