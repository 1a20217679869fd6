//! The checks serde cannot make: bounds, uniqueness, confined paths, branch templates,
//! patterns and command rules; each problem names the key path it is about.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use ignore::gitignore::GitignoreBuilder;

use super::commands::{self, CommandRefusal};
use super::{
    BRANCH_PLACEHOLDERS, BUILTIN_DENIED_PATHS, RepoConfig, SetupStep, ValidateStep, render_branch,
};
use crate::edits::paths::{PathRefusal, normalise};
use crate::exec::looks_like_secret;
use crate::git::CommitKind;

/// Three hours: longer than any build a bot should wait for, short enough to catch a typo.
pub(super) const MAX_TIMEOUT_SECS: u64 = 3 * 60 * 60;
pub(super) const MAX_REPAIR_ATTEMPTS: u32 = 10;
/// Most candidate changes one job may ask for.
pub const MAX_CANDIDATES: u32 = 5;
pub(super) const MAX_AUDIT_ROUNDS: u32 = 5;
pub(super) const MAX_INSTRUCTION_BYTES: usize = 256 * 1024;
pub(super) const TOKEN_BOUNDS: (u64, u64) = (1_000, 100_000_000);
/// One minute to one day.
pub(super) const WALL_BOUNDS: (u64, u64) = (60, 24 * 60 * 60);
const MAX_NAME_CHARS: usize = 64;
/// GitHub's limit on label names.
const MAX_LABEL_CHARS: usize = 50;

/// Prefixes of credentials that are recognisable on sight (GitHub, GitLab, OpenAI, Anthropic,
/// Slack, AWS, PEM keys). A value starting with one is refused, and never echoed.
const CREDENTIAL_PREFIXES: &[&str] = &[
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "sk-",
    "xoxb-",
    "xoxp-",
    "AKIA",
    "-----BEGIN",
];

/// A place in the configuration: `validate[2].run`, `commit.type_by_label."type: bug"`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct KeyPath(Vec<Segment>);

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Segment {
    Key(String),
    Index(usize),
}

impl KeyPath {
    pub(super) fn root() -> Self {
        KeyPath::default()
    }

    pub(super) fn key(&self, name: &str) -> Self {
        let mut path = self.clone();
        path.0.push(Segment::Key(name.to_string()));
        path
    }

    pub(super) fn index(&self, index: usize) -> Self {
        let mut path = self.clone();
        path.0.push(Segment::Index(index));
        path
    }

    pub(super) fn segments(&self) -> &[Segment] {
        &self.0
    }
}

impl fmt::Display for KeyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (position, segment) in self.0.iter().enumerate() {
            match segment {
                Segment::Index(index) => write!(f, "[{index}]")?,
                Segment::Key(name) => {
                    if position > 0 {
                        f.write_str(".")?;
                    }
                    if is_bare_key(name) {
                        f.write_str(name)?;
                    } else {
                        write!(f, "{name:?}")?;
                    }
                }
            }
        }
        Ok(())
    }
}

fn is_bare_key(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// One problem: the key it is about and what is wrong, phrased to follow the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Found {
    pub key: KeyPath,
    pub complaint: String,
}

impl Found {
    pub(super) fn message(&self) -> String {
        format!("{} {}", self.key, self.complaint)
    }
}

/// Every problem in `config`, in file order. Also tidies what has one obvious meaning
/// (`@alice` → `alice`).
pub(super) fn check(config: &mut RepoConfig) -> Vec<Found> {
    tidy(config);
    let mut problems = Problems::default();
    check_validate(config, &mut problems);
    check_repair_and_audit(config, &mut problems);
    check_paths(config, &mut problems);
    check_branch(config, &mut problems);
    check_commit(config, &mut problems);
    check_pull_request(config, &mut problems);
    check_instructions(config, &mut problems);
    check_budget(config, &mut problems);
    check_commands(config, &mut problems);
    problems.0
}

#[derive(Default)]
struct Problems(Vec<Found>);

impl Problems {
    fn add(&mut self, key: KeyPath, complaint: impl Into<String>) {
        self.0.push(Found {
            key,
            complaint: complaint.into(),
        });
    }

    fn bounded<T: PartialOrd + fmt::Display>(
        &mut self,
        key: KeyPath,
        value: T,
        (min, max): (T, T),
    ) {
        if value < min || value > max {
            self.add(key, format!("must be between {min} and {max}, not {value}"));
        }
    }

    /// Refuses blank entries and entries repeated (compared by `identity`) in a list.
    fn distinct_entries<'a, K: Eq + std::hash::Hash>(
        &mut self,
        key: &KeyPath,
        entries: impl IntoIterator<Item = &'a String>,
        identity: impl Fn(&str) -> K,
    ) {
        let mut seen: HashMap<K, usize> = HashMap::new();
        for (index, entry) in entries.into_iter().enumerate() {
            if entry.trim().is_empty() {
                self.add(key.index(index), "must not be empty");
            } else if let Some(first) = seen.insert(identity(entry), index) {
                self.add(
                    key.index(index),
                    format!("`{entry}` repeats {}", key.index(first)),
                );
            }
        }
    }
}

fn tidy(config: &mut RepoConfig) {
    for reviewer in &mut config.pull_request.reviewers {
        if let Some(name) = reviewer.strip_prefix('@') {
            *reviewer = name.to_string();
        }
    }
}

fn check_validate(config: &RepoConfig, problems: &mut Problems) {
    check_steps(config, "validate", &config.validate, problems);
    let setup: Vec<ValidateStep> = config.setup.iter().map(SetupStep::as_step).collect();
    check_steps(config, "setup", &setup, problems);
}

fn check_steps(
    config: &RepoConfig,
    section: &str,
    steps: &[ValidateStep],
    problems: &mut Problems,
) {
    let mut names: HashMap<&str, usize> = HashMap::new();
    for (index, step) in steps.iter().enumerate() {
        let key = KeyPath::root().key(section).index(index);
        check_step_name(&step.name, &key.key("name"), problems);
        if !step.name.trim().is_empty()
            && let Some(first) = names.insert(step.name.as_str(), index)
        {
            problems.add(
                key.key("name"),
                format!(
                    "`{}` is already the name of {section}[{first}]; names must be unique",
                    step.name
                ),
            );
        }
        check_run(config, &step.run, &step.cwd, &key.key("run"), problems);
        if let Some(timeout) = step.timeout_secs {
            check_timeout(config, timeout, &key.key("timeout_secs"), problems);
        }
        if let Err(refusal) = normalise(&step.cwd).or_else(root_is_fine) {
            problems.add(key.key("cwd"), format!("`{}`: {refusal}", step.cwd));
        }
        check_env(&step.env, &key.key("env"), problems);
    }
}

fn root_is_fine(refusal: PathRefusal) -> Result<String, PathRefusal> {
    match refusal {
        PathRefusal::RootItself => Ok(String::new()),
        other => Err(other),
    }
}

fn check_step_name(name: &str, key: &KeyPath, problems: &mut Problems) {
    if name.trim().is_empty() {
        problems.add(key.clone(), "must not be empty");
    } else if name.chars().any(char::is_control) {
        problems.add(key.clone(), "must not hold control characters");
    } else if name.chars().count() > MAX_NAME_CHARS {
        problems.add(
            key.clone(),
            format!("must be at most {MAX_NAME_CHARS} characters"),
        );
    }
}

fn check_run(
    config: &RepoConfig,
    run: &[String],
    cwd: &str,
    key: &KeyPath,
    problems: &mut Problems,
) {
    let Some(program) = run.first() else {
        problems.add(key.clone(), "must not be empty");
        return;
    };
    for (index, word) in run.iter().enumerate() {
        if word.contains('\0') {
            problems.add(key.index(index), "holds a NUL character");
        }
    }
    if program.trim().is_empty() {
        problems.add(key.index(0), "(the program) must not be empty");
    } else if !program.contains('/') && program.contains(char::is_whitespace) {
        let words: Vec<String> = program
            .split_whitespace()
            .map(|word| format!("{word:?}"))
            .collect();
        problems.add(
            key.index(0),
            format!(
                "`{program}` is one string, but commands never go through a shell; write each \
                 argument as its own string: [{}]",
                words.join(", ")
            ),
        );
    } else if leaves_the_repository(cwd, program) {
        problems.add(
            key.index(0),
            format!("`{program}` leads outside the repository"),
        );
    } else if let Err(refusal) = config.check_command(run) {
        let complaint = match refusal {
            CommandRefusal::Empty => "must not be empty".to_string(),
            refusal => format!("is refused: {refusal}"),
        };
        problems.add(key.clone(), complaint);
    }
}

/// Whether a relative program path, taken from the step's directory, climbs above the root.
fn leaves_the_repository(cwd: &str, program: &str) -> bool {
    if !program.contains('/') || program.starts_with('/') {
        return false;
    }
    let mut depth: i64 = 0;
    for part in cwd.split('/').chain(program.split('/')) {
        match part {
            "" | "." => {}
            ".." => depth -= 1,
            _ => depth += 1,
        }
        if depth < 0 {
            return true;
        }
    }
    false
}

fn check_timeout(config: &RepoConfig, timeout: u64, key: &KeyPath, problems: &mut Problems) {
    let wall = config.budget.max_wall_secs;
    if timeout == 0 || timeout > MAX_TIMEOUT_SECS {
        problems.bounded(key.clone(), timeout, (1, MAX_TIMEOUT_SECS));
    } else if timeout > wall {
        problems.add(
            key.clone(),
            format!(
                "({timeout}) is longer than the whole job may take (budget.max_wall_secs = {wall})"
            ),
        );
    }
}

fn check_env(env: &BTreeMap<String, String>, key: &KeyPath, problems: &mut Problems) {
    for (name, value) in env {
        let at = key.key(name);
        if !is_variable_name(name) {
            problems.add(
                at,
                "is not a variable name (letters, digits and `_`, not starting with a digit)",
            );
        } else if looks_like_secret(name) {
            problems.add(
                at,
                "looks like a secret; secrets never belong in this file, and validation \
                 commands receive none",
            );
        } else if value.contains('\0') {
            problems.add(at, "holds a NUL character");
        } else if let Some(prefix) = CREDENTIAL_PREFIXES
            .iter()
            .find(|prefix| value.starts_with(*prefix))
        {
            problems.add(
                at,
                format!("looks like a credential (`{prefix}…`); secrets never belong in this file"),
            );
        }
    }
}

fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn check_repair_and_audit(config: &RepoConfig, problems: &mut Problems) {
    problems.bounded(
        KeyPath::root().key("repair").key("max_attempts"),
        config.repair.max_attempts,
        (0, MAX_REPAIR_ATTEMPTS),
    );
    problems.bounded(
        KeyPath::root().key("candidates").key("count"),
        config.candidates.count,
        (1, MAX_CANDIDATES),
    );
    problems.bounded(
        KeyPath::root().key("audit").key("max_rounds"),
        config.audit.max_rounds,
        (1, MAX_AUDIT_ROUNDS),
    );
}

fn check_paths(config: &RepoConfig, problems: &mut Problems) {
    let key = KeyPath::root().key("paths").key("deny");
    for (index, pattern) in config.paths.deny.iter().enumerate() {
        if let Some(complaint) = pattern_problem(pattern) {
            problems.add(key.index(index), complaint);
        }
    }
}

/// What is wrong with one `[paths] deny` pattern, if anything.
fn pattern_problem(pattern: &str) -> Option<String> {
    let trimmed = pattern.trim();
    if trimmed.is_empty() {
        return Some("must not be empty".into());
    }
    if trimmed.starts_with('!') {
        return Some(format!(
            "`{pattern}` would allow paths again; this list can only add denied paths"
        ));
    }
    if trimmed.starts_with('#') {
        return Some(format!(
            "`{pattern}` is a comment in gitignore syntax, not a pattern (write `\\#` for a `#`)"
        ));
    }
    let mut builder = GitignoreBuilder::new("/");
    let compiled = match builder.add_line(None, pattern) {
        Ok(_) => builder.build().map(drop),
        Err(error) => Err(error),
    };
    compiled.err().map(|error| {
        let reason = error.to_string();
        // The glob error repeats the pattern ("error parsing glob 'x': …"), which we name already.
        let reason = reason
            .split_once("': ")
            .map_or(reason.as_str(), |(_, reason)| reason);
        format!("`{pattern}` is not a valid pattern: {reason}")
    })
}

fn check_branch(config: &RepoConfig, problems: &mut Problems) {
    let key = KeyPath::root().key("branch").key("template");
    let template = &config.branch.template;
    if let Err(complaint) = check_template(template) {
        problems.add(key, complaint.to_string());
    }
}

/// What is wrong with a branch template.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
enum TemplateError {
    #[error("`{template}` has a `}}` without its `{{`")]
    UnopenedBrace { template: String },
    #[error("`{template}` has a `{{` that is never closed")]
    UnclosedBrace { template: String },
    #[error("`{template}` uses `{{{unknown}}}`, which is not a placeholder (use {allowed})")]
    UnknownPlaceholder {
        template: String,
        unknown: String,
        allowed: String,
    },
    #[error("`{template}` must contain {{number}}, so every issue gets a branch of its own")]
    NoNumber { template: String },
    #[error("`{template}` makes branch names git refuses (`{sample}` {problem})")]
    RefusedByGit {
        template: String,
        sample: String,
        problem: String,
    },
}

fn check_template(template: &str) -> Result<(), TemplateError> {
    let placeholders = placeholders(template)?;
    if let Some(unknown) = placeholders
        .iter()
        .find(|name| !BRANCH_PLACEHOLDERS.contains(name))
    {
        let allowed = BRANCH_PLACEHOLDERS
            .iter()
            .map(|name| format!("{{{name}}}"))
            .collect::<Vec<_>>()
            .join(", ");
        return Err(TemplateError::UnknownPlaceholder {
            template: template.to_string(),
            unknown: unknown.to_string(),
            allowed,
        });
    }
    if !placeholders.contains(&"number") {
        return Err(TemplateError::NoNumber {
            template: template.to_string(),
        });
    }
    let sample = render_branch(template, CommitKind::Fix, 42, "sample-slug");
    ref_format_problem(&sample).map_or(Ok(()), |problem| {
        Err(TemplateError::RefusedByGit {
            template: template.to_string(),
            sample,
            problem,
        })
    })
}

/// The names between braces, or what is wrong with the braces.
fn placeholders(template: &str) -> Result<Vec<&str>, TemplateError> {
    let mut names = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find(['{', '}']) {
        if rest[open..].starts_with('}') {
            return Err(TemplateError::UnopenedBrace {
                template: template.to_string(),
            });
        }
        let after = &rest[open + 1..];
        let close = after
            .find(['{', '}'])
            .filter(|close| after[*close..].starts_with('}'))
            .ok_or_else(|| TemplateError::UnclosedBrace {
                template: template.to_string(),
            })?;
        names.push(&after[..close]);
        rest = &after[close + 1..];
    }
    Ok(names)
}

/// Why git would refuse `name` as a branch (the rules of `git check-ref-format --branch`).
fn ref_format_problem(name: &str) -> Option<String> {
    if let Some(bad) = name
        .chars()
        .find(|c| c.is_control() || c.is_whitespace() || "~^:?*[\\".contains(*c))
    {
        return Some(format!("holds {bad:?}"));
    }
    if name.starts_with('-') {
        return Some("starts with `-`".into());
    }
    if name.contains("..") || name.contains("@{") || name == "@" {
        return Some("holds `..`, `@{` or is `@`".into());
    }
    if name.ends_with('.') {
        return Some("ends with `.`".into());
    }
    name.split('/').find_map(|part| {
        if part.is_empty() {
            Some("has an empty part between slashes".into())
        } else if part.starts_with('.') {
            Some("has a part starting with `.`".into())
        } else if part.ends_with(".lock") {
            Some("has a part ending in `.lock`".into())
        } else {
            None
        }
    })
}

fn check_commit(config: &RepoConfig, problems: &mut Problems) {
    let key = KeyPath::root().key("commit");
    let scope = &config.commit.default_scope;
    if scope.is_empty() || !scope.chars().all(|c| c.is_ascii_lowercase() || c == '-') {
        problems.add(
            key.key("default_scope"),
            format!("`{scope}` must be lowercase letters and `-` only, as commit scopes are"),
        );
    }
    let mut seen: HashMap<String, &str> = HashMap::new();
    for label in config.commit.type_by_label.keys() {
        let at = key.key("type_by_label").key(label);
        if label.trim().is_empty() {
            problems.add(at, "is an empty label");
        } else if let Some(other) = seen.insert(label.to_lowercase(), label) {
            problems.add(
                at,
                format!("repeats `{other}`; labels are compared without regard to case"),
            );
        }
    }
}

fn check_pull_request(config: &RepoConfig, problems: &mut Problems) {
    let key = KeyPath::root().key("pull_request");
    let reviewers = key.key("reviewers");
    for (index, reviewer) in config.pull_request.reviewers.iter().enumerate() {
        let valid = reviewer
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c));
        if !reviewer.is_empty() && !valid {
            problems.add(
                reviewers.index(index),
                format!("`{reviewer}` is not a user or team name"),
            );
        }
    }
    problems.distinct_entries(
        &reviewers,
        &config.pull_request.reviewers,
        str::to_lowercase,
    );
    let labels = key.key("labels");
    for (index, label) in config.pull_request.labels.iter().enumerate() {
        if label.chars().count() > MAX_LABEL_CHARS {
            problems.add(
                labels.index(index),
                format!("must be at most {MAX_LABEL_CHARS} characters"),
            );
        } else if label.chars().any(char::is_control) {
            problems.add(labels.index(index), "must not hold control characters");
        }
    }
    problems.distinct_entries(&labels, &config.pull_request.labels, str::to_lowercase);
}

fn check_instructions(config: &RepoConfig, problems: &mut Problems) {
    let key = KeyPath::root().key("instructions");
    let files = key.key("files");
    let denied = denied_paths_matcher(config);
    for (index, file) in config.instructions.files.iter().enumerate() {
        match normalise(file) {
            Err(PathRefusal::Empty) => {}
            Err(refusal) => problems.add(files.index(index), format!("`{file}`: {refusal}")),
            Ok(relative) => {
                if denied.as_ref().is_some_and(|denied| {
                    denied
                        .matched_path_or_any_parents(&relative, false)
                        .is_ignore()
                }) {
                    problems.add(
                        files.index(index),
                        format!("`{file}` is a denied path, so it is never given to the model"),
                    );
                }
            }
        }
    }
    problems.distinct_entries(&files, &config.instructions.files, |file| {
        normalise(file).unwrap_or_else(|_| file.to_string())
    });
    problems.bounded(
        key.key("max_bytes"),
        config.instructions.max_bytes,
        (1, MAX_INSTRUCTION_BYTES),
    );
}

/// The denied paths as one matcher over relative paths; `None` while a pattern is broken
/// (that pattern is reported on its own).
fn denied_paths_matcher(config: &RepoConfig) -> Option<ignore::gitignore::Gitignore> {
    let mut builder = GitignoreBuilder::new("/");
    for pattern in BUILTIN_DENIED_PATHS
        .iter()
        .copied()
        .chain(config.paths.deny.iter().map(String::as_str))
    {
        builder.add_line(None, pattern).ok()?;
    }
    builder.build().ok()
}

fn check_budget(config: &RepoConfig, problems: &mut Problems) {
    let key = KeyPath::root().key("budget");
    problems.bounded(
        key.key("max_tokens"),
        config.budget.max_tokens,
        TOKEN_BOUNDS,
    );
    problems.bounded(
        key.key("max_wall_secs"),
        config.budget.max_wall_secs,
        WALL_BOUNDS,
    );
    if let Some(usd) = config.budget.max_usd
        && !(usd.is_finite() && usd > 0.0)
    {
        problems.add(
            key.key("max_usd"),
            format!("must be more than 0 US dollars, not {usd}"),
        );
    }
}

fn check_commands(config: &RepoConfig, problems: &mut Problems) {
    let key = KeyPath::root().key("commands");
    for (list, rules) in [
        ("allow", &config.commands.allow),
        ("deny", &config.commands.deny),
    ] {
        let at = key.key(list);
        for (index, rule) in rules.iter().enumerate() {
            if let Some(complaint) = commands::rule_problem(rule) {
                problems.add(at.index(index), complaint);
            }
        }
        problems.distinct_entries(&at, rules, |rule| {
            rule.split_whitespace().collect::<Vec<_>>().join(" ")
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_paths_read_like_toml() {
        let path = KeyPath::root()
            .key("commit")
            .key("type_by_label")
            .key("type: bug");
        assert_eq!(path.to_string(), r#"commit.type_by_label."type: bug""#);
        let step = KeyPath::root().key("validate").index(2).key("run").index(0);
        assert_eq!(step.to_string(), "validate[2].run[0]");
    }

    #[test]
    fn braces_in_a_branch_template_must_pair_up() {
        assert_eq!(
            placeholders("{type}/{number}-{slug}").unwrap(),
            ["type", "number", "slug"]
        );
        assert!(
            placeholders("fix/{number")
                .unwrap_err()
                .to_string()
                .contains("never closed")
        );
        assert!(
            placeholders("fix/number}")
                .unwrap_err()
                .to_string()
                .contains("without its")
        );
        assert!(
            placeholders("{ty{pe}")
                .unwrap_err()
                .to_string()
                .contains("never closed")
        );
    }

    #[test]
    fn git_branch_rules_are_enforced_on_a_sample_name() {
        assert_eq!(ref_format_problem("fix/42-a-b"), None);
        assert_eq!(ref_format_problem("fix 42").as_deref(), Some("holds ' '"));
        assert!(ref_format_problem("fix//42").is_some());
        assert!(ref_format_problem(".fix/42").is_some());
        assert!(ref_format_problem("fix/42.lock").is_some());
        assert!(ref_format_problem("fix..42").is_some());
        assert!(ref_format_problem("-fix").is_some());
    }

    #[test]
    fn a_program_path_may_climb_only_as_far_as_the_root() {
        assert!(!leaves_the_repository(
            "crates/core",
            "../../scripts/check.sh"
        ));
        assert!(leaves_the_repository("crates", "../../evil.sh"));
        assert!(leaves_the_repository(".", "../x"));
        assert!(!leaves_the_repository(".", "/usr/bin/make"));
        assert!(!leaves_the_repository(".", "cargo"));
    }
}
