//! Which of a repository's CI jobs run with its secrets when autofix pushes a branch of its own
//! there: `.github/workflows/*.yml|yaml` and `.gitlab-ci.yml`, read through the anchored tree
//! (never through a link) and parsed as YAML, for `autofix config check --repo`.

use std::collections::BTreeMap;
use std::path::Path;

use regex::Regex;
use yaml_rust2::Yaml;

use crate::anchored::{Entry, Tree};
use crate::ci_yaml::{GITLAB_CI, GITLAB_KEYWORDS, load};
use crate::forge::PushTo;

/// The largest CI file read; a workflow is a few kilobytes.
const MAX_FILE_BYTES: u64 = 512 * 1024;
/// The most workflow files looked at.
const MAX_WORKFLOWS: usize = 200;
const WORKFLOWS: &str = ".github/workflows";
/// How many job names one warning lists before it counts the rest.
const JOBS_NAMED: usize = 8;

/// A CI job that runs with secrets on something a bot branch does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exposure {
    /// `.github/workflows/ci.yml`, `.gitlab-ci.yml`.
    pub file: String,
    pub job: String,
    /// What a bot branch does that starts it: `pull_request`, `pull_request_target`, `push`
    /// (GitHub); `merge requests`, `branch pushes` (GitLab).
    pub triggers: Vec<String>,
    /// What it gets: `secrets.NPM_TOKEN`, `secrets: inherit`, `the project's CI/CD variables`.
    pub secrets: Vec<String>,
    /// Its GitHub environment, whose required reviewers (if it has any) hold it back.
    pub environment: Option<String>,
}

/// What the scan found, and the files it could not read (with why).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Scan {
    pub exposures: Vec<Exposure>,
    pub unread: Vec<(String, String)>,
}

/// Reads the repository at `dir`'s CI definitions. Only the folder itself failing to open is
/// an error; a file that cannot be read is noted in [`Scan::unread`].
pub fn scan(dir: &Path) -> Result<Scan, String> {
    let tree = Tree::open(dir).map_err(|err| format!("cannot open {}: {err}", dir.display()))?;
    let mut scan = Scan::default();
    match tree.entry(WORKFLOWS) {
        Ok(Entry::Folder) => match tree.list(WORKFLOWS) {
            Ok(None) => {}
            Ok(Some(names)) => {
                let workflows = names
                    .into_iter()
                    .filter(|name| name.ends_with(".yml") || name.ends_with(".yaml"))
                    .take(MAX_WORKFLOWS);
                for name in workflows {
                    let file = format!("{WORKFLOWS}/{name}");
                    match read_yaml(&tree, &file) {
                        Ok(Some(doc)) => scan.exposures.extend(github_workflow(&file, &doc)),
                        Ok(None) => {}
                        Err(why) => scan.unread.push((file, why)),
                    }
                }
            }
            Err(err) => scan.unread.push((WORKFLOWS.into(), err.to_string())),
        },
        Ok(Entry::Missing) => {}
        Ok(_) => scan
            .unread
            .push((WORKFLOWS.into(), "it is not a folder".into())),
        Err(err) => scan.unread.push((WORKFLOWS.into(), err.to_string())),
    }
    match read_yaml(&tree, GITLAB_CI) {
        Ok(Some(doc)) => {
            if doc["include"] != Yaml::BadValue {
                scan.unread.push((
                    GITLAB_CI.into(),
                    "it includes other files, which were not read".into(),
                ));
            }
            scan.exposures.extend(gitlab_pipeline(GITLAB_CI, &doc));
        }
        Ok(None) => {}
        Err(why) => scan.unread.push((GITLAB_CI.into(), why)),
    }
    Ok(scan)
}

/// The lines `config check` prints: each exposure that matters with `push_to`, then what it
/// means and what to do; and each file that could not be read.
pub fn warnings(scan: &Scan, push_to: PushTo) -> Vec<String> {
    let shown: Vec<&Exposure> = scan
        .exposures
        .iter()
        .filter(|exposure| match push_to {
            PushTo::Base => true,
            // A fork's pull request runs these without the secrets, except `pull_request_target`.
            PushTo::Fork => exposure.triggers.iter().any(|t| t == "pull_request_target"),
        })
        .collect();
    let mut groups: BTreeMap<(String, String, String), Vec<&Exposure>> = BTreeMap::new();
    for exposure in &shown {
        let key = (
            exposure.file.clone(),
            exposure.triggers.join(", "),
            exposure.secrets.join(", "),
        );
        groups.entry(key).or_default().push(exposure);
    }
    let mut lines: Vec<String> = groups
        .into_iter()
        .map(|((file, triggers, secrets), jobs)| {
            let mut names: Vec<String> = jobs
                .iter()
                .take(JOBS_NAMED)
                .map(|job| match &job.environment {
                    Some(environment) => format!("`{}` (environment `{environment}`)", job.job),
                    None => format!("`{}`", job.job),
                })
                .collect();
            if jobs.len() > JOBS_NAMED {
                names.push(format!("{} more", jobs.len() - JOBS_NAMED));
            }
            let (word, verb) = if jobs.len() == 1 {
                ("job", "runs")
            } else {
                ("jobs", "run")
            };
            format!(
                "warning: {file}: {word} {} {verb} on {triggers} with {secrets}",
                names.join(", ")
            )
        })
        .collect();
    if !shown.is_empty() {
        lines.push(match push_to {
            PushTo::Base => "warning: with forge.push_to = \"base\" the bot's branches are the \
                repository's own, so the jobs above run the model-written change with those \
                secrets; require approval for them (GitHub: an environment with required \
                reviewers for each job that uses secrets; GitLab: make the variables protected, \
                exposed to protected branches only) or set forge.push_to = \"fork\""
                .to_owned(),
            PushTo::Fork => "warning: pull_request_target runs with the repository's secrets \
                for every pull request, the bot's fork's included: such jobs must never run the \
                pull request's code"
                .to_owned(),
        });
    }
    for (file, why) in &scan.unread {
        lines.push(format!("note: {file} was not read: {why}"));
    }
    lines
}

/// The file at `relative` parsed as YAML (its first document), `None` when it is missing.
fn read_yaml(tree: &Tree, relative: &str) -> Result<Option<Yaml>, String> {
    let bytes = match tree.read(relative, MAX_FILE_BYTES) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Ok(None),
        Err(err) => return Err(err.to_string()),
    };
    let text = String::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".to_owned())?;
    load(&text).map_err(|error| error.to_string())
}

/// A key of a mapping.
fn get<'y>(map: &'y Yaml, key: &str) -> Option<&'y Yaml> {
    map.as_hash()?.get(&Yaml::String(key.to_owned()))
}

fn strings(value: &Yaml) -> Vec<&str> {
    match value {
        Yaml::String(text) => vec![text.as_str()],
        Yaml::Array(items) => items.iter().filter_map(Yaml::as_str).collect(),
        _ => Vec::new(),
    }
}

/// Every string in `value`, keys included, depth first.
fn all_strings<'y>(value: &'y Yaml, out: &mut Vec<&'y str>) {
    match value {
        Yaml::String(text) => out.push(text),
        Yaml::Array(items) => items.iter().for_each(|item| all_strings(item, out)),
        Yaml::Hash(hash) => hash.iter().for_each(|(key, value)| {
            all_strings(key, out);
            all_strings(value, out);
        }),
        _ => {}
    }
}

// ---- GitHub Actions ----

/// The jobs of one workflow that a bot branch starts and that get secrets.
fn github_workflow(file: &str, doc: &Yaml) -> Vec<Exposure> {
    let on = get(doc, "on").or_else(|| doc.as_hash()?.get(&Yaml::Boolean(true)));
    let triggers = on.map(github_triggers).unwrap_or_default();
    if triggers.is_empty() {
        return Vec::new();
    }
    let mut shared = Vec::new();
    if let Some(env) = get(doc, "env") {
        all_strings(env, &mut shared);
    }
    let Some(jobs) = get(doc, "jobs").and_then(Yaml::as_hash) else {
        return Vec::new();
    };
    jobs.iter()
        .filter_map(|(id, job)| {
            let mut texts = shared.clone();
            all_strings(job, &mut texts);
            let mut secrets = secret_names(&texts);
            if get(job, "secrets").and_then(Yaml::as_str) == Some("inherit") {
                secrets.push("secrets: inherit".into());
            }
            if secrets.is_empty() {
                return None;
            }
            let environment = get(job, "environment").and_then(|environment| {
                environment
                    .as_str()
                    .or_else(|| get(environment, "name")?.as_str())
                    .map(str::to_owned)
            });
            Some(Exposure {
                file: file.to_owned(),
                job: id.as_str().unwrap_or("?").to_owned(),
                triggers: triggers.clone(),
                secrets,
                environment,
            })
        })
        .collect()
}

/// The events of `on` a bot branch causes: a pull request from it, or a push of it.
fn github_triggers(on: &Yaml) -> Vec<String> {
    let events: Vec<(String, Option<&Yaml>)> = match on {
        Yaml::String(event) => vec![(event.clone(), None)],
        Yaml::Array(items) => items
            .iter()
            .filter_map(Yaml::as_str)
            .map(|event| (event.to_owned(), None))
            .collect(),
        Yaml::Hash(hash) => hash
            .iter()
            .filter_map(|(event, filters)| Some((event.as_str()?.to_owned(), Some(filters))))
            .collect(),
        _ => Vec::new(),
    };
    events
        .into_iter()
        .filter(|(event, filters)| match event.as_str() {
            "pull_request" | "pull_request_target" => true,
            "push" => filters.is_none_or(push_reaches_any_branch),
            _ => false,
        })
        .map(|(event, _)| event)
        .collect()
}

/// Whether a `push` trigger's filters let a push of any new branch through: no `branches`
/// filter (and not only `tags`), or one that matches every branch.
fn push_reaches_any_branch(filters: &Yaml) -> bool {
    if filters.as_hash().is_none() {
        return true;
    }
    match get(filters, "branches") {
        Some(branches) => strings(branches)
            .iter()
            .any(|pattern| pattern.starts_with("**")),
        None => get(filters, "tags").is_none() && get(filters, "tags-ignore").is_none(),
    }
}

/// `secrets.NAME`, `secrets['NAME']` and `secrets` whole (`toJSON(secrets)`) in the
/// expressions of `texts`, except the workflow's own `GITHUB_TOKEN`.
fn secret_names(texts: &[&str]) -> Vec<String> {
    static EXPRESSION: std::sync::OnceLock<(Regex, Regex)> = std::sync::OnceLock::new();
    let (expression, secret) = EXPRESSION.get_or_init(|| {
        (
            Regex::new(r"\$\{\{(.*?)\}\}").expect("a valid pattern"),
            Regex::new(r#"\bsecrets\b(?:\s*\.\s*([A-Za-z_][A-Za-z0-9_-]*)|\s*\[\s*['"]([^'"]+)['"]\s*\])?"#)
                .expect("a valid pattern"),
        )
    });
    let mut names: Vec<String> = Vec::new();
    for text in texts {
        for inside in expression.captures_iter(text) {
            for found in secret.captures_iter(&inside[1]) {
                let name = match found.get(1).or_else(|| found.get(2)) {
                    Some(name) if name.as_str().eq_ignore_ascii_case("GITHUB_TOKEN") => continue,
                    Some(name) => format!("secrets.{}", name.as_str()),
                    None => "every secret (`secrets` whole)".to_owned(),
                };
                if !names.contains(&name) {
                    names.push(name);
                }
            }
        }
    }
    names
}

// ---- GitLab CI/CD ----

/// The jobs of `.gitlab-ci.yml` that run in merge request or branch pipelines: each gets the
/// project's CI/CD variables (all but the protected ones on an unprotected branch).
fn gitlab_pipeline(file: &str, doc: &Yaml) -> Vec<Exposure> {
    let Some(top) = doc.as_hash() else {
        return Vec::new();
    };
    let workflow_rules = get(doc, "workflow")
        .and_then(|workflow| get(workflow, "rules"))
        .map(|rules| resolve_rules(doc, rules));
    top.iter()
        .filter_map(|(name, job)| {
            let name = name.as_str()?;
            if name.starts_with('.') || GITLAB_KEYWORDS.contains(&name) || job.as_hash().is_none() {
                return None;
            }
            // A manual job runs only when a person starts it.
            if inherited(doc, job, "when", 0).and_then(Yaml::as_str) == Some("manual") {
                return None;
            }
            let triggers = gitlab_triggers(doc, job, workflow_rules.as_deref());
            if triggers.is_empty() {
                return None;
            }
            let mut secrets = vec!["the project's CI/CD variables".to_owned()];
            if let Some(named) = inherited(doc, job, "secrets", 0).and_then(Yaml::as_hash) {
                let names: Vec<&str> = named.keys().filter_map(Yaml::as_str).collect();
                secrets.push(format!("secrets: {}", names.join(", ")));
            }
            Some(Exposure {
                file: file.to_owned(),
                job: name.to_owned(),
                triggers,
                secrets,
                environment: None,
            })
        })
        .collect()
}

/// A job's `key`, its own or inherited through `extends` (later templates win) and merge keys.
fn inherited<'y>(doc: &'y Yaml, job: &'y Yaml, key: &str, depth: usize) -> Option<&'y Yaml> {
    if let Some(value) = get(job, key) {
        return Some(value);
    }
    if depth > 10 {
        return None;
    }
    let parents = get(job, "extends").map(strings).unwrap_or_default();
    parents
        .iter()
        .rev()
        .find_map(|parent| inherited(doc, get(doc, parent)?, key, depth + 1))
}

/// Rules with GitLab's `!reference [.template, key…]` replaced by what they name (the loader
/// keeps a reference as the list of its names).
fn resolve_rules<'y>(doc: &'y Yaml, rules: &'y Yaml) -> Vec<&'y Yaml> {
    fn reference<'y>(doc: &'y Yaml, path: &[Yaml]) -> Option<&'y Yaml> {
        path.iter().try_fold(doc, |at, key| get(at, key.as_str()?))
    }
    let Some(items) = rules.as_vec() else {
        return Vec::new();
    };
    if items.iter().all(|item| item.as_str().is_some()) {
        return reference(doc, items)
            .map(|named| resolve_rules(doc, named))
            .unwrap_or_default();
    }
    items
        .iter()
        .flat_map(|item| match item {
            Yaml::Array(path) if path.iter().all(|key| key.as_str().is_some()) => {
                reference(doc, path)
                    .map(|named| resolve_rules(doc, named))
                    .unwrap_or_default()
            }
            rule => vec![rule],
        })
        .collect()
}

/// `merge requests` and/or `branch pushes`: the pipelines a bot branch starts that run `job`.
fn gitlab_triggers(doc: &Yaml, job: &Yaml, workflow: Option<&[&Yaml]>) -> Vec<String> {
    let branch_pipelines = workflow.is_none_or(|rules| rules.iter().any(|rule| branch_rule(rule)));
    let mr_pipelines =
        workflow.is_some_and(|rules| rules.iter().any(|rule| merge_request_rule(rule)));
    let mut triggers = Vec::new();
    if let Some(rules) = inherited(doc, job, "rules", 0) {
        let rules = resolve_rules(doc, rules);
        if rules.iter().any(|rule| merge_request_rule(rule)) {
            triggers.push("merge requests".to_owned());
        }
        if branch_pipelines && rules.iter().any(|rule| branch_rule(rule)) {
            triggers.push("branch pushes".to_owned());
        }
        return triggers;
    }
    match inherited(doc, job, "only", 0) {
        Some(only) => {
            let refs: Vec<&str> = match get(only, "refs") {
                Some(refs) => strings(refs),
                None if only.as_hash().is_some() => vec!["branches"],
                None => strings(only),
            };
            if refs.contains(&"merge_requests") {
                triggers.push("merge requests".to_owned());
            }
            if branch_pipelines
                && refs
                    .iter()
                    .any(|r| *r == "branches" || r.starts_with("branches@"))
            {
                triggers.push("branch pushes".to_owned());
            }
        }
        None => {
            // Without `rules` or `only`, a job runs in every branch pipeline (and in merge
            // request pipelines the workflow allows), unless `except` leaves branches out.
            let excepted = inherited(doc, job, "except", 0)
                .map(|except| strings(get(except, "refs").unwrap_or(except)))
                .unwrap_or_default();
            if mr_pipelines {
                triggers.push("merge requests".to_owned());
            }
            if branch_pipelines && !excepted.contains(&"branches") {
                triggers.push("branch pushes".to_owned());
            }
        }
    }
    triggers
}

/// The `if:` of a rule, and whether it runs the job on its own (any `when` but `never` and
/// `manual`).
fn rule_parts(rule: &Yaml) -> (Option<&str>, bool) {
    let when = get(rule, "when").and_then(Yaml::as_str);
    let runs = !matches!(when, Some("never" | "manual"));
    (get(rule, "if").and_then(Yaml::as_str), runs)
}

/// A rule that runs the job in merge request pipelines.
fn merge_request_rule(rule: &Yaml) -> bool {
    match rule_parts(rule) {
        (_, false) => false,
        (None, true) => false,
        (Some(condition), true) => {
            (condition.contains("merge_request_event") && !condition.contains("!="))
                || condition.contains("$CI_MERGE_REQUEST_IID")
                || condition.contains("$CI_MERGE_REQUEST_ID")
        }
    }
}

/// A rule that runs the job in the pipeline of a push to any branch: no condition, or one
/// that asks only that it be a branch or a push.
fn branch_rule(rule: &Yaml) -> bool {
    match rule_parts(rule) {
        (_, false) => false,
        (None, true) => true,
        (Some(condition), true) => {
            let condition = condition.trim().trim_matches(['\'', '"']).trim();
            condition == "$CI_COMMIT_BRANCH"
                || (condition.contains("\"push\"") || condition.contains("'push'"))
                    && !condition.contains("&&")
        }
    }
}

#[cfg(test)]
mod tests;
