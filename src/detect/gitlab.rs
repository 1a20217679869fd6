//! GitLab CI (`.gitlab-ci.yml`): each job's `before_script` and `script` lines in order, with
//! `extends` and `!reference` followed, and jobs that deploy, trigger or need services left out.

use yaml_rust2::Yaml;

use super::ci::{self, Script};
use super::{Findings, RepoTree};
use crate::ci_yaml::{self, GITLAB_CI, GITLAB_KEYWORDS};

/// Stages whose jobs ship rather than check.
const SHIPPING_STAGES: &[&str] = &["deploy", "release", "publish", "upload"];
/// How many `extends` levels are followed.
const MAX_DEPTH: usize = 10;

pub(super) fn read(tree: &dyn RepoTree, findings: &mut Findings) {
    if !tree.has(GITLAB_CI) {
        return;
    }
    let Some(text) = tree.read(GITLAB_CI) else {
        findings.leave_out(format!("`{GITLAB_CI}`"), "could not be read as text");
        return;
    };
    let doc = match ci_yaml::load(&text) {
        Ok(Some(doc)) => doc,
        Ok(None) => return,
        Err(why) => {
            findings.leave_out(format!("`{GITLAB_CI}`"), why.to_string());
            return;
        }
    };
    if !doc["include"].is_badvalue() {
        findings.leave_out(
            format!("`{GITLAB_CI}` include"),
            "names other files, which are not read",
        );
    }
    let Some(jobs) = doc.as_hash() else { return };
    for (name, job) in jobs {
        let Some(name) = name.as_str() else { continue };
        if name.starts_with('.') || GITLAB_KEYWORDS.contains(&name) || job.as_hash().is_none() {
            continue;
        }
        pipeline_job(&doc, name, job, findings);
    }
}

fn pipeline_job(doc: &Yaml, name: &str, job: &Yaml, findings: &mut Findings) {
    let place = format!("`{GITLAB_CI}` job `{name}`");
    let key = |key: &str| inherited(doc, job, key, 0);
    if key("trigger").is_some() {
        findings.leave_out(place, "triggers another pipeline");
        return;
    }
    if let Some(stage) = key("stage").and_then(Yaml::as_str)
        && SHIPPING_STAGES.contains(&stage.to_ascii_lowercase().as_str())
    {
        findings.leave_out(place, format!("is in the `{stage}` stage"));
        return;
    }
    let services = key("services").or_else(|| default(doc, "services"));
    if services.is_some_and(|services| !services.is_null()) {
        findings.leave_out(place, "needs services");
        return;
    }
    let token = key("variables")
        .and_then(Yaml::as_hash)
        .into_iter()
        .flat_map(|variables| variables.keys().filter_map(Yaml::as_str))
        .find(|name| name.to_ascii_uppercase().ends_with("TOKEN"));
    if let Some(token) = token {
        findings.leave_out(place, format!("sets `{token}` in its variables"));
        return;
    }
    let mut cwd = ".".to_string();
    let before = key("before_script").or_else(|| default(doc, "before_script"));
    for (part, lines) in [("before_script", before), ("script", key("script"))] {
        let Some(lines) = lines else { continue };
        let lines = script_lines(doc, lines);
        cwd = ci::judge(
            &Script {
                place: format!("{place} {part}"),
                lines: &lines,
                cwd,
                note: String::new(),
            },
            findings,
        );
    }
}

/// `default:`'s key, or the same key at the top level (the older form).
fn default<'y>(doc: &'y Yaml, key: &str) -> Option<&'y Yaml> {
    let value = &doc["default"][key];
    if !value.is_badvalue() {
        return Some(value);
    }
    let value = &doc[key];
    (!value.is_badvalue()).then_some(value)
}

/// A job's `key`, its own or inherited through `extends` (later templates win).
fn inherited<'y>(doc: &'y Yaml, job: &'y Yaml, key: &str, depth: usize) -> Option<&'y Yaml> {
    let own = &job[key];
    if !own.is_badvalue() {
        return Some(own);
    }
    if depth > MAX_DEPTH {
        return None;
    }
    let parents: Vec<&str> = match &job["extends"] {
        Yaml::String(parent) => vec![parent.as_str()],
        Yaml::Array(parents) => parents.iter().filter_map(Yaml::as_str).collect(),
        _ => Vec::new(),
    };
    parents
        .iter()
        .rev()
        .find_map(|parent| inherited(doc, &doc[*parent], key, depth + 1))
}

/// The lines of a script: a string, or a list whose items are lines or `!reference [.job,
/// key]` lists (kept by the loader as the list of their names).
fn script_lines(doc: &Yaml, value: &Yaml) -> Vec<String> {
    let mut lines = Vec::new();
    collect(doc, value, &mut lines, 0);
    lines
}

fn collect(doc: &Yaml, value: &Yaml, lines: &mut Vec<String>, depth: usize) {
    match value {
        Yaml::String(line) => lines.push(line.clone()),
        Yaml::Array(items) if depth <= MAX_DEPTH => {
            let names: Option<Vec<&str>> = items.iter().map(Yaml::as_str).collect();
            if depth > 0
                && let Some(names) = names
                && names.len() >= 2
                && names[0].starts_with('.')
                && !doc[names[0]].is_badvalue()
            {
                let referenced = names.iter().fold(doc, |node, name| &node[*name]);
                collect(doc, referenced, lines, depth + 1);
                return;
            }
            for item in items {
                collect(doc, item, lines, depth + 1);
            }
        }
        _ => {}
    }
}
