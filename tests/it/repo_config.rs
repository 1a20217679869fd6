//! Stories about `.autofix.toml`: where it is found, what the example documents, which
//! mistakes are refused and how the refusal reads, and the rules that hold with no file at all.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use autofix::config::repo::{
    CommandRefusal, LoadedRepoConfig, RepoConfig, RepoConfigError, ValidateStep,
};
use autofix::edits::paths::{PathRefusal, ProjectRoot};
use autofix::git::CommitKind;
use tempfile::TempDir;

const EXAMPLE: &str = include_str!("../../examples/autofix.toml");
const FILE: &str = ".autofix.toml";

fn repository() -> TempDir {
    tempfile::tempdir().expect("a temporary directory")
}

fn write(root: &Path, relative: &str, content: &str) -> PathBuf {
    let path = root.join(relative);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, content).unwrap();
    path
}

fn load(root: &Path) -> LoadedRepoConfig {
    RepoConfig::load(root).unwrap_or_else(|error| panic!("the configuration loads: {error}"))
}

fn refusal(text: &str) -> String {
    RepoConfig::parse(text, FILE)
        .expect_err("the configuration is refused")
        .to_string()
}

fn parsed(text: &str) -> RepoConfig {
    RepoConfig::parse(text, FILE)
        .unwrap_or_else(|error| panic!("the configuration parses: {error}"))
}

/// Every key path in a TOML value, arrays of tables as `validate[].name`; the contents of
/// free-form maps (`env`, `type_by_label`) are data, not keys.
fn key_paths(value: &toml::Value, prefix: &str, into: &mut BTreeSet<String>) {
    match value {
        toml::Value::Table(table) => {
            for (key, inner) in table {
                let path = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                into.insert(path.clone());
                if !matches!(key.as_str(), "env" | "type_by_label") {
                    key_paths(inner, &path, into);
                }
            }
        }
        toml::Value::Array(items) => {
            for item in items.iter().filter(|item| item.is_table()) {
                key_paths(item, &format!("{prefix}[]"), into);
            }
        }
        _ => {}
    }
}

fn keys_of<T: serde::Serialize>(value: &T) -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    key_paths(&toml::Value::try_from(value).unwrap(), "", &mut keys);
    keys
}

// --- the example ---------------------------------------------------------------------------

#[test]
fn the_example_parses_and_writes_every_key_the_configuration_has() {
    let example = parsed(EXAMPLE);
    let written: toml::Value = toml::from_str(EXAMPLE).unwrap();
    let mut in_example = BTreeSet::new();
    key_paths(&written, "", &mut in_example);

    // Every field the struct has: what the parsed example serialises to (defaults fill any key
    // it left out), plus a step built field by field, so an optional field cannot hide.
    let every_step_field = ValidateStep {
        name: "n".into(),
        run: vec!["x".into()],
        timeout_secs: Some(1),
        fail_on_warnings: false,
        cwd: ".".into(),
        env: Default::default(),
        network: true,
    };
    let mut in_struct = keys_of(&example);
    in_struct.extend(
        keys_of(&every_step_field)
            .into_iter()
            .map(|key| format!("validate[].{key}")),
    );

    let missing: Vec<_> = in_struct.difference(&in_example).collect();
    assert!(
        missing.is_empty(),
        "examples/autofix.toml lacks {missing:?}"
    );
    assert_eq!(in_example, in_struct);
}

#[test]
fn the_example_means_what_its_comments_say() {
    let example = parsed(EXAMPLE);
    assert_eq!(example.validate.len(), 2);
    assert_eq!(example.validate[0].run, ["cargo", "build", "--all-targets"]);
    assert_eq!(example.setup[0].run, ["cargo", "fetch"]);
    assert!(!example.validate[0].network, "no network unless asked for");
    assert_eq!(example.validate[1].cwd, ".", "cwd defaults to the root");
    assert_eq!(
        example.validate[1].timeout(),
        Some(Duration::from_secs(1800))
    );
    assert_eq!(example.commit_type_for(&["Type: Bug"]), CommitKind::Fix);
    assert_eq!(
        example.branch_name(CommitKind::Docs, 42, "fix-typo"),
        "autofix/docs/42-fix-typo"
    );
    assert_eq!(
        example.pull_request.reviewers,
        ["alice", "acme/maintainers"]
    );
}

#[test]
fn the_defaults_are_what_the_readme_promises() {
    let defaults = RepoConfig::default();
    assert!(defaults.validate.is_empty());
    assert_eq!(defaults.repair.max_attempts, 3);
    assert!(defaults.audit.enabled);
    assert_eq!(defaults.audit.max_rounds, 1);
    assert_eq!(defaults.branch.template, "{type}/{number}-{slug}");
    assert!(!defaults.branch.keep_on_failure);
    assert!(defaults.pull_request.draft);
    assert_eq!(
        defaults.instructions.files,
        [
            "AGENTS.md",
            "CLAUDE.md",
            ".github/copilot-instructions.md",
            "CONVENTIONS.md"
        ]
    );
    assert_eq!(
        defaults.branch_name(CommitKind::Fix, 42, "handle-null-values"),
        "fix/42-handle-null-values"
    );
    assert_eq!(parsed(""), defaults, "an empty file means the defaults");
}

// --- finding the file ----------------------------------------------------------------------

#[test]
fn a_repository_without_a_file_gets_the_defaults_and_is_told_so() {
    let repo = repository();
    let loaded = load(repo.path());
    assert!(loaded.used_defaults());
    assert_eq!(loaded.source, None);
    assert_eq!(loaded.config, RepoConfig::default());
    assert_eq!(
        loaded.defaults_note().unwrap(),
        "This repository has no autofix configuration (looked for `.autofix.toml`, \
         `.github/autofix.toml`, `.gitlab/autofix.toml`), so the defaults apply."
    );
}

#[test]
fn a_file_at_the_root_is_read_and_named() {
    let repo = repository();
    write(repo.path(), ".autofix.toml", "[repair]\nmax_attempts = 5\n");
    let loaded = load(repo.path());
    assert_eq!(loaded.source.as_deref(), Some(Path::new(".autofix.toml")));
    assert_eq!(loaded.config.repair.max_attempts, 5);
    assert_eq!(loaded.defaults_note(), None);
}

#[test]
fn a_file_in_dot_github_or_dot_gitlab_is_read_too() {
    for place in [".github/autofix.toml", ".gitlab/autofix.toml"] {
        let repo = repository();
        write(repo.path(), place, "[pull_request]\ndraft = false\n");
        let loaded = load(repo.path());
        assert_eq!(loaded.source.as_deref(), Some(Path::new(place)));
        assert!(!loaded.config.pull_request.draft);
    }
}

#[test]
fn two_files_are_an_error_naming_both() {
    let repo = repository();
    write(repo.path(), ".autofix.toml", "");
    write(repo.path(), ".github/autofix.toml", "");
    let error = RepoConfig::load(repo.path()).unwrap_err();
    assert_eq!(
        error.to_string(),
        ".autofix.toml: `.github/autofix.toml` exists too; keep only one repository configuration"
    );
}

#[test]
fn a_misnamed_file_is_not_silently_ignored() {
    let repo = repository();
    write(repo.path(), ".github/.autofix.toml", "");
    let error = RepoConfig::load(repo.path()).unwrap_err();
    assert_eq!(
        error.to_string(),
        ".github/.autofix.toml: autofix does not read this file; name it `.github/autofix.toml`"
    );
}

#[test]
fn errors_in_a_file_in_dot_github_name_that_file() {
    let repo = repository();
    write(
        repo.path(),
        ".github/autofix.toml",
        "[repair]\nmax_attempts = 11\n",
    );
    let error = RepoConfig::load(repo.path()).unwrap_err();
    assert_eq!(
        error.to_string(),
        ".github/autofix.toml:2:16: repair.max_attempts must be between 0 and 10, not 11"
    );
}

#[test]
fn a_symlinked_configuration_is_refused() {
    let repo = repository();
    let elsewhere = repository();
    let target = write(elsewhere.path(), "rules.toml", "");
    std::os::unix::fs::symlink(target, repo.path().join(".autofix.toml")).unwrap();
    assert_eq!(
        RepoConfig::load(repo.path()).unwrap_err().to_string(),
        ".autofix.toml: is a symbolic link; autofix reads its configuration only from a regular file"
    );
}

#[test]
fn an_oversized_configuration_is_refused_unread() {
    let repo = repository();
    write(repo.path(), ".autofix.toml", &"# padding\n".repeat(30_000));
    assert_eq!(
        RepoConfig::load(repo.path()).unwrap_err().to_string(),
        ".autofix.toml: is 300000 bytes; a configuration may hold at most 262144"
    );
}

#[test]
fn a_file_that_is_not_utf8_is_refused_with_where() {
    let repo = repository();
    fs::write(
        repo.path().join(".autofix.toml"),
        b"[branch]\ntemplate = \"fix/{number}-\xe9\"\n",
    )
    .unwrap();
    assert_eq!(
        RepoConfig::load(repo.path()).unwrap_err().to_string(),
        ".autofix.toml:2:26: the file is not UTF-8 (byte 0xe9); save it as UTF-8"
    );
}

// --- mistakes and how they read ------------------------------------------------------------

#[test]
fn a_toml_syntax_error_gives_line_and_column() {
    assert_eq!(
        refusal("[repair]\nmax_attempts = = 3\n"),
        ".autofix.toml:2:16: not valid TOML: extra `=`, expected nothing"
    );
}

#[test]
fn an_unknown_key_is_refused_with_its_place() {
    assert_eq!(
        refusal("[pull_request]\ndraft = true\nreviewer = [\"alice\"]\n"),
        ".autofix.toml:3:1: unknown field `reviewer`, expected one of `draft`, `reviewers`, `labels`"
    );
    let in_a_step = refusal("[[validate]]\nname = \"t\"\nrun = [\"make\"]\nshell = true\n");
    assert!(
        in_a_step.starts_with(".autofix.toml:4:1: unknown field `shell`"),
        "{in_a_step}"
    );
}

#[test]
fn the_model_cannot_supply_commands_through_a_validation_commands_key() {
    let error = refusal("validation_commands = [\"npm run lint\"]\n");
    assert!(
        error.starts_with(".autofix.toml:1:1: unknown field `validation_commands`"),
        "{error}"
    );
}

#[test]
fn a_wrongly_typed_value_is_refused_with_its_place() {
    let error = refusal("[[validate]]\nname = \"t\"\nrun = \"cargo test\"\n");
    assert!(
        error.starts_with(".autofix.toml:3:7: invalid type: string"),
        "{error}"
    );
    assert_eq!(
        refusal("[commit]\ndefault_type = \"feature\"\n"),
        ".autofix.toml:2:16: unknown variant `feature`, expected one of `fix`, `feat`, \
         `refactor`, `docs`, `chore`"
    );
}

const TWO_STEPS: &str = r#"
[[validate]]
name = "build"
run = ["make"]

[[validate]]
name = "lint"
run = ["make", "lint"]
"#;

/// The two good steps above, then a third built from `step`.
fn with_third_step(step: &str) -> String {
    format!("{TWO_STEPS}\n[[validate]]\n{step}\n")
}

#[test]
fn an_empty_run_is_refused_naming_the_step() {
    assert_eq!(
        refusal(&with_third_step("name = \"test\"\nrun = []")),
        ".autofix.toml:12:7: validate[2].run must not be empty"
    );
    assert_eq!(
        refusal(&with_third_step("name = \"test\"\nrun = [\"\", \"x\"]")),
        ".autofix.toml:12:8: validate[2].run[0] (the program) must not be empty"
    );
}

#[test]
fn a_command_written_as_one_string_is_refused_with_the_argv_to_write() {
    assert_eq!(
        refusal(&with_third_step(
            "name = \"test\"\nrun = [\"cargo test --all\"]"
        )),
        ".autofix.toml:12:8: validate[2].run[0] `cargo test --all` is one string, but commands \
         never go through a shell; write each argument as its own string: \
         [\"cargo\", \"test\", \"--all\"]"
    );
}

#[test]
fn zero_and_huge_timeouts_are_refused() {
    assert_eq!(
        refusal("[[validate]]\nname = \"t\"\nrun = [\"make\"]\ntimeout_secs = 0\n"),
        ".autofix.toml:4:16: validate[0].timeout_secs must be between 1 and 10800, not 0"
    );
    assert_eq!(
        refusal("[[validate]]\nname = \"t\"\nrun = [\"make\"]\ntimeout_secs = 86400\n"),
        ".autofix.toml:4:16: validate[0].timeout_secs must be between 1 and 10800, not 86400"
    );
    let negative = refusal("[[validate]]\nname = \"t\"\nrun = [\"make\"]\ntimeout_secs = -5\n");
    assert!(
        negative.starts_with(".autofix.toml:4:16: invalid value"),
        "{negative}"
    );
}

#[test]
fn a_timeout_longer_than_the_job_may_take_is_refused() {
    assert_eq!(
        refusal(
            "[[validate]]\nname = \"t\"\nrun = [\"make\"]\ntimeout_secs = 7200\n\n\
             [budget]\nmax_wall_secs = 3600\n"
        ),
        ".autofix.toml:4:16: validate[0].timeout_secs (7200) is longer than the whole job may \
         take (budget.max_wall_secs = 3600)"
    );
}

#[test]
fn duplicate_step_names_are_refused() {
    assert_eq!(
        refusal(&with_third_step(
            "name = \"lint\"\nrun = [\"cargo\", \"clippy\"]"
        )),
        ".autofix.toml:11:8: validate[2].name `lint` is already the name of validate[1]; names \
         must be unique"
    );
}

#[test]
fn a_step_must_have_a_name() {
    let error = refusal("[[validate]]\nrun = [\"make\"]\n");
    assert!(error.contains("missing field `name`"), "{error}");
    assert_eq!(
        refusal("[[validate]]\nname = \" \"\nrun = [\"make\"]\n"),
        ".autofix.toml:2:8: validate[0].name must not be empty"
    );
}

#[test]
fn a_working_directory_must_stay_inside_the_repository() {
    assert_eq!(
        refusal("[[validate]]\nname = \"t\"\nrun = [\"make\"]\ncwd = \"/tmp\"\n"),
        ".autofix.toml:4:7: validate[0].cwd `/tmp`: the path is absolute; paths must be \
         relative to the project root"
    );
    assert_eq!(
        refusal("[[validate]]\nname = \"t\"\nrun = [\"make\"]\ncwd = \"sub/../../x\"\n"),
        ".autofix.toml:4:7: validate[0].cwd `sub/../../x`: the path climbs out with `..`"
    );
    assert!(
        parsed("[[validate]]\nname = \"t\"\nrun = [\"make\"]\ncwd = \"crates/core\"\n").validate[0]
            .cwd
            .eq("crates/core")
    );
}

#[test]
fn a_relative_program_must_not_lead_outside_the_repository() {
    assert_eq!(
        refusal("[[validate]]\nname = \"t\"\nrun = [\"../tools/check.sh\"]\n"),
        ".autofix.toml:3:8: validate[0].run[0] `../tools/check.sh` leads outside the repository"
    );
}

#[test]
fn secrets_in_step_variables_are_refused_without_echoing_them() {
    assert_eq!(
        refusal("[[validate]]\nname = \"t\"\nrun = [\"make\"]\nenv = { GITHUB_TOKEN = \"x\" }\n"),
        ".autofix.toml:4:24: validate[0].env.GITHUB_TOKEN looks like a secret; secrets never \
         belong in this file, and validation commands receive none"
    );
    let credential = refusal(
        "[[validate]]\nname = \"t\"\nrun = [\"make\"]\nenv = { SERVICE = \"ghp_abcdef123456\" }\n",
    );
    assert_eq!(
        credential,
        ".autofix.toml:4:19: validate[0].env.SERVICE looks like a credential (`ghp_…`); secrets \
         never belong in this file"
    );
    assert!(!credential.contains("abcdef"));
    assert_eq!(
        refusal("[[validate]]\nname = \"t\"\nrun = [\"make\"]\nenv = { \"1X\" = \"a\" }\n"),
        ".autofix.toml:4:16: validate[0].env.1X is not a variable name (letters, digits and \
         `_`, not starting with a digit)"
    );
}

#[test]
fn a_denied_validation_program_is_refused_at_load() {
    assert_eq!(
        refusal("[[validate]]\nname = \"fetch\"\nrun = [\"curl\", \"-sSf\", \"https://x\"]\n"),
        ".autofix.toml:3:7: validate[0].run is refused: `curl` is denied by the built-in rule `curl`"
    );
    assert_eq!(
        refusal(
            "[[validate]]\nname = \"t\"\nrun = [\"make\", \"deploy\"]\n\n\
             [commands]\ndeny = [\"make deploy\"]\n"
        ),
        ".autofix.toml:3:7: validate[0].run is refused: `make deploy` is denied by the \
         commands.deny rule `make deploy`"
    );
    assert_eq!(
        refusal(
            "[[validate]]\nname = \"t\"\nrun = [\"make\"]\n\n[commands]\nallow = [\"cargo\"]\n"
        ),
        ".autofix.toml:3:7: validate[0].run is refused: `make` is not in commands.allow (`cargo`)"
    );
}

#[test]
fn command_rules_naming_a_path_are_refused() {
    assert_eq!(
        refusal("[commands]\ndeny = [\"/usr/bin/make\"]\n"),
        ".autofix.toml:2:9: commands.deny[0] `/usr/bin/make` names a path; name the program \
         (`make`), which matches it wherever it lives"
    );
}

#[test]
fn bad_branch_templates_are_refused() {
    assert_eq!(
        refusal("[branch]\ntemplate = \"{type}/{issue}-{slug}\"\n"),
        ".autofix.toml:2:12: branch.template `{type}/{issue}-{slug}` uses `{issue}`, which is \
         not a placeholder (use {type}, {number}, {slug})"
    );
    assert_eq!(
        refusal("[branch]\ntemplate = \"{type}/{slug}\"\n"),
        ".autofix.toml:2:12: branch.template `{type}/{slug}` must contain {number}, so every \
         issue gets a branch of its own"
    );
    assert_eq!(
        refusal("[branch]\ntemplate = \"{type}/{number\"\n"),
        ".autofix.toml:2:12: branch.template `{type}/{number` has a `{` that is never closed"
    );
    assert_eq!(
        refusal("[branch]\ntemplate = \"bot fix/{number}\"\n"),
        ".autofix.toml:2:12: branch.template `bot fix/{number}` makes branch names git refuses \
         (`bot fix/42` holds ' ')"
    );
}

#[test]
fn bad_deny_patterns_are_refused() {
    assert_eq!(
        refusal("[paths]\ndeny = [\"src/{a,b\"]\n"),
        ".autofix.toml:2:9: paths.deny[0] `src/{a,b` is not a valid pattern: unclosed alternate \
         group; missing '}' (maybe escape '{' with '[{]'?)"
    );
    assert_eq!(
        refusal("[paths]\ndeny = [\"data/[z-a]\"]\n"),
        ".autofix.toml:2:9: paths.deny[0] `data/[z-a]` is not a valid pattern: invalid range; \
         'z' > 'a'"
    );
    assert_eq!(
        refusal("[paths]\ndeny = [\"*.sql\", \"!.env.example\"]\n"),
        ".autofix.toml:2:18: paths.deny[1] `!.env.example` would allow paths again; this list \
         can only add denied paths"
    );
    assert_eq!(
        refusal("[paths]\ndeny = [\"\"]\n"),
        ".autofix.toml:2:9: paths.deny[0] must not be empty"
    );
}

#[test]
fn out_of_range_numbers_are_refused() {
    assert_eq!(
        refusal("[audit]\nmax_rounds = 0\n"),
        ".autofix.toml:2:14: audit.max_rounds must be between 1 and 5, not 0"
    );
    assert_eq!(
        refusal("[budget]\nmax_tokens = 10\n"),
        ".autofix.toml:2:14: budget.max_tokens must be between 1000 and 100000000, not 10"
    );
    assert_eq!(
        refusal("[instructions]\nmax_bytes = 0\n"),
        ".autofix.toml:2:13: instructions.max_bytes must be between 1 and 262144, not 0"
    );
}

#[test]
fn commit_and_pull_request_values_are_checked() {
    assert_eq!(
        refusal("[commit]\ndefault_scope = \"Core\"\n"),
        ".autofix.toml:2:17: commit.default_scope `Core` must be lowercase letters and `-` only, \
         as commit scopes are"
    );
    assert_eq!(
        refusal("[commit.type_by_label]\nbug = \"fix\"\nBug = \"feat\"\n"),
        ".autofix.toml:2:7: commit.type_by_label.bug repeats `Bug`; labels are compared without \
         regard to case"
    );
    assert_eq!(
        refusal("[pull_request]\nreviewers = [\"alice\", \"@alice\"]\n"),
        ".autofix.toml:2:23: pull_request.reviewers[1] `alice` repeats pull_request.reviewers[0]"
    );
    assert_eq!(
        refusal("[pull_request]\nreviewers = [\"alice smith\"]\n"),
        ".autofix.toml:2:14: pull_request.reviewers[0] `alice smith` is not a user or team name"
    );
}

#[test]
fn an_instruction_file_that_is_a_denied_path_is_refused() {
    assert_eq!(
        refusal("[instructions]\nfiles = [\"AGENTS.md\", \".env\"]\n"),
        ".autofix.toml:2:23: instructions.files[1] `.env` is a denied path, so it is never given \
         to the model"
    );
    assert_eq!(
        refusal("[instructions]\nfiles = [\"../notes.md\"]\n"),
        ".autofix.toml:2:10: instructions.files[0] `../notes.md`: the path climbs out with `..`"
    );
}

#[test]
fn every_problem_in_a_file_is_reported_one_per_line() {
    let error: RepoConfigError = RepoConfig::parse(
        "[repair]\nmax_attempts = 20\n\n[branch]\ntemplate = \"{type}\"\n",
        FILE,
    )
    .unwrap_err();
    assert_eq!(error.problems().len(), 2);
    assert_eq!(
        error.to_string(),
        ".autofix.toml:2:16: repair.max_attempts must be between 0 and 10, not 20\n\
         .autofix.toml:5:12: branch.template `{type}` must contain {number}, so every issue gets \
         a branch of its own"
    );
    assert_eq!(error.failure_code().as_str(), "INVALID_INPUT");
}

// --- the rules in use ----------------------------------------------------------------------

#[test]
fn built_in_denied_paths_apply_even_when_the_repository_denies_nothing() {
    let repo = repository();
    let root = ProjectRoot::new(repo.path()).unwrap();
    let config = parsed("[paths]\ndeny = []\n");
    let protected = config.protected_paths(&root).unwrap();
    for denied in [
        ".github/workflows/ci.yml",
        ".gitlab-ci.yml",
        ".env",
        ".env.production",
        "deploy/certs/site.pem",
        "secrets/signing.key",
        "home/id_rsa.pub",
        "certs/client.p12",
        ".autofix.toml",
        ".github/autofix.toml",
        "CODEOWNERS",
        ".git/config",
    ] {
        assert!(
            protected.rule_for(denied, false).is_some(),
            "{denied} should be denied"
        );
    }
    for free in [
        "src/lib.rs",
        ".github/ISSUE_TEMPLATE/bug.md",
        "README.md",
        "keys.rs",
    ] {
        assert_eq!(
            protected.rule_for(free, false),
            None,
            "{free} should be editable"
        );
    }
}

#[test]
fn the_repositorys_denied_paths_add_to_the_built_in_ones() {
    let repo = repository();
    let root = ProjectRoot::new(repo.path()).unwrap();
    let config = parsed("[paths]\ndeny = [\"/migrations/\", \"*.sql\"]\n");
    let protected = config.protected_paths(&root).unwrap();
    assert_eq!(
        protected
            .rule_for("migrations/001_init.rs", false)
            .as_deref(),
        Some("/migrations/")
    );
    assert_eq!(
        protected.rule_for("db/schema.sql", false).as_deref(),
        Some("*.sql")
    );
    assert!(protected.rule_for(".env", false).is_some());
}

#[test]
fn the_pipeline_checks_commands_with_the_same_rules() {
    let config =
        parsed("[commands]\nallow = [\"cargo\", \"npm test\"]\ndeny = [\"cargo publish\"]\n");
    assert_eq!(config.check_command(&["cargo", "test"]), Ok(()));
    assert_eq!(config.check_command(&["npm", "test"]), Ok(()));
    assert_eq!(
        config
            .check_command(&["cargo", "publish"])
            .unwrap_err()
            .to_string(),
        "`cargo publish` is denied by the commands.deny rule `cargo publish`"
    );
    assert_eq!(
        config
            .check_command(&["npm", "install"])
            .unwrap_err()
            .to_string(),
        "`npm` is not in commands.allow (`cargo`, `npm test`)"
    );
    assert!(matches!(
        RepoConfig::default().check_command(&["env", "X=1", "sudo", "make"]),
        Err(CommandRefusal::Denied { .. })
    ));
    assert_eq!(
        RepoConfig::default()
            .check_command(&["npm", "start"])
            .unwrap_err()
            .to_string(),
        "`npm start` is denied by the built-in rule `npm start`"
    );
}

#[test]
fn a_step_becomes_a_command_in_its_directory_with_its_limits() {
    let repo = repository();
    fs::create_dir_all(repo.path().join("crates/core")).unwrap();
    let root = ProjectRoot::new(repo.path()).unwrap();
    let config = parsed(
        "[[validate]]\nname = \"test\"\nrun = [\"cargo\", \"test\"]\ntimeout_secs = 120\n\
         cwd = \"crates/core\"\nenv = { RUST_BACKTRACE = \"1\" }\n\n\
         [[validate]]\nname = \"lint\"\nrun = [\"cargo\", \"clippy\"]\n",
    );
    let specs = config
        .validation_specs(&root, Duration::from_secs(900))
        .unwrap();
    assert_eq!(specs[0].name, "test");
    assert!(!specs[0].fail_on_warnings);
    let test = &specs[0].spec;
    assert_eq!(test.program, "cargo");
    assert_eq!(test.args, ["test"]);
    assert_eq!(test.cwd, root.path().join("crates/core"));
    assert_eq!(test.timeout, Duration::from_secs(120));
    assert_eq!(
        test.env_set,
        [("RUST_BACKTRACE".to_string(), "1".to_string())]
    );
    let lint = &specs[1].spec;
    assert_eq!(lint.cwd, root.path());
    assert_eq!(
        lint.timeout,
        Duration::from_secs(900),
        "the service default applies"
    );
}

#[test]
fn a_step_directory_that_is_a_symlink_out_of_the_checkout_is_refused_when_run() {
    let repo = repository();
    let outside = repository();
    std::os::unix::fs::symlink(outside.path(), repo.path().join("build")).unwrap();
    let root = ProjectRoot::new(repo.path()).unwrap();
    let config = parsed("[[validate]]\nname = \"t\"\nrun = [\"make\"]\ncwd = \"build/sub\"\n");
    let refusal = config
        .validation_specs(&root, Duration::from_secs(60))
        .unwrap_err();
    assert_eq!(
        refusal.to_string(),
        "validate[0] (`t`) cwd `build/sub`: the path goes through a symbolic link (`build`); \
         autofix writes only through real folders"
    );
    assert!(matches!(
        config.validate[0].command_spec(&root, Duration::from_secs(60)),
        Err(PathRefusal::ThroughSymlink { .. })
    ));
}

#[test]
fn issue_labels_choose_the_commit_type_by_precedence() {
    let defaults = RepoConfig::default();
    assert_eq!(defaults.commit_type_for(&["question"]), CommitKind::Fix);
    assert_eq!(
        defaults.commit_type_for(&["Documentation"]),
        CommitKind::Docs
    );
    assert_eq!(
        defaults.commit_type_for(&["documentation", "enhancement"]),
        CommitKind::Feat
    );
    assert_eq!(
        defaults.commit_type_for(&["documentation", "bug"]),
        CommitKind::Fix
    );
    let chores =
        parsed("[commit]\ndefault_type = \"chore\"\n[commit.type_by_label]\ndocs = \"docs\"\n");
    assert_eq!(
        chores.commit_type_for(&["bug"]),
        CommitKind::Chore,
        "the table replaces the defaults"
    );
}

#[test]
fn instruction_files_are_read_in_order_within_one_size_cap() {
    let repo = repository();
    write(repo.path(), "CLAUDE.md", "Use tabs.\n");
    write(
        repo.path(),
        "AGENTS.md",
        "Run cargo test.\nKeep commits small.\n",
    );
    write(
        repo.path(),
        ".github/copilot-instructions.md",
        "Prefer iterators.\n",
    );
    let root = ProjectRoot::new(repo.path()).unwrap();
    let config = parsed("[instructions]\nmax_bytes = 30\n");
    let instructions = config.read_instructions(&root);
    let read: Vec<(&str, &str, bool)> = instructions
        .files
        .iter()
        .map(|file| (file.path.as_str(), file.text.as_str(), file.truncated))
        .collect();
    assert_eq!(
        read,
        [
            ("AGENTS.md", "Run cargo test.\n", true),
            ("CLAUDE.md", "Use tabs.\n", false),
        ]
    );
    assert_eq!(instructions.skipped.len(), 1);
    assert_eq!(
        instructions.skipped[0].path,
        ".github/copilot-instructions.md"
    );
    assert_eq!(
        instructions.skipped[0].reason,
        "not even its first line fits in what is left of instructions.max_bytes (4 bytes)"
    );
}

#[test]
fn an_instruction_file_that_is_a_symlink_is_not_read() {
    let repo = repository();
    let outside = repository();
    let secret = write(outside.path(), "secret.txt", "hunter2\n");
    std::os::unix::fs::symlink(secret, repo.path().join("AGENTS.md")).unwrap();
    let root = ProjectRoot::new(repo.path()).unwrap();
    let instructions = RepoConfig::default().read_instructions(&root);
    assert!(instructions.files.is_empty());
    assert_eq!(instructions.skipped[0].path, "AGENTS.md");
    assert!(instructions.skipped[0].reason.contains("symbolic link"));
}

#[test]
fn a_configuration_built_in_code_reports_the_problems_the_same_file_would() {
    let text =
        "[[validate]]\nname = \"fetch\"\nrun = [\"curl\", \"-sO\", \"https://example.com\"]\n";
    let from_file = refusal(text);
    let built = RepoConfig {
        validate: vec![ValidateStep {
            name: "fetch".into(),
            run: vec!["curl".into(), "-sO".into(), "https://example.com".into()],
            timeout_secs: None,
            fail_on_warnings: false,
            cwd: ".".into(),
            env: Default::default(),
            network: false,
        }],
        ..RepoConfig::default()
    };
    let problems = built.problems();
    assert_eq!(
        problems,
        ["validate[0].run is refused: `curl` is denied by the built-in rule `curl`"]
    );
    assert!(from_file.ends_with(&problems[0]), "{from_file}");
    assert!(RepoConfig::default().problems().is_empty());
}

#[test]
fn a_job_may_be_given_a_cap_in_dollars_and_a_cap_of_nothing_is_refused() {
    assert_eq!(
        parsed("[budget]\nmax_usd = 2.5\n").budget.max_usd,
        Some(2.5)
    );
    assert_eq!(
        parsed("").budget.max_usd,
        None,
        "no cap of its own by default"
    );
    assert_eq!(
        refusal("[budget]\nmax_usd = 0\n"),
        ".autofix.toml:2:11: budget.max_usd must be more than 0 US dollars, not 0"
    );
    assert_eq!(
        refusal("[budget]\nmax_usd = -3.0\n"),
        ".autofix.toml:2:11: budget.max_usd must be more than 0 US dollars, not -3"
    );
}
