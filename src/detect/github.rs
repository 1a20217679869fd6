//! GitHub Actions workflows (`.github/workflows/*.yml`): each job's `run:` steps in order, with
//! matrix values and plain `env` resolved, and what cannot run here (actions, secrets,
//! services, other systems, shells) left out with why.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;
use yaml_rust2::Yaml;

use super::ci::{self, Script};
use super::{Findings, shortened};
use crate::ci_yaml;

const WORKFLOWS: &str = ".github/workflows/";

/// `${{ expression }}`.
static EXPRESSION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\$\{\{\s*(.*?)\s*\}\}").expect("a valid pattern"));
static SECRET: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\$\{\{[^}]*\bsecrets\.([A-Za-z0-9_]+)").expect("a valid pattern")
});
static NAMED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(matrix|env)\.([A-Za-z0-9_-]+)$").expect("a valid pattern"));

/// Reads every workflow file, in name order.
pub(super) fn read(tree: &dyn super::RepoTree, findings: &mut Findings) {
    let files: Vec<&String> = tree
        .paths()
        .iter()
        .filter(|path| {
            path.strip_prefix(WORKFLOWS).is_some_and(|name| {
                !name.contains('/') && (name.ends_with(".yml") || name.ends_with(".yaml"))
            })
        })
        .collect();
    for file in files {
        let Some(text) = tree.read(file) else {
            findings.leave_out(format!("`{file}`"), "could not be read as text");
            continue;
        };
        match ci_yaml::load(&text) {
            Ok(Some(doc)) => workflow(file, &doc, findings),
            Ok(None) => {}
            Err(why) => findings.leave_out(format!("`{file}`"), why.to_string()),
        }
    }
}

fn workflow(file: &str, doc: &Yaml, findings: &mut Findings) {
    let Some(jobs) = doc["jobs"].as_hash() else {
        return;
    };
    let workflow_env = plain_map(&doc["env"]);
    for (id, job) in jobs {
        let Some(id) = id.as_str() else { continue };
        let place = format!("`{file}` job `{id}`");
        if let Some(called) = job["uses"].as_str() {
            findings.leave_out(place, format!("calls the reusable workflow `{called}`"));
            continue;
        }
        if let Some(services) = job["services"].as_hash() {
            let names: Vec<String> = services
                .keys()
                .filter_map(Yaml::as_str)
                .map(|name| format!("`{name}`"))
                .collect();
            findings.leave_out(place, format!("needs services ({})", names.join(", ")));
            continue;
        }
        let matrix = first_matrix_values(&job["strategy"]["matrix"]);
        let runs_on = scalars(&job["runs-on"])
            .into_iter()
            .map(|label| {
                let resolved = resolve(&label, &matrix, &BTreeMap::new()).ok();
                resolved.map_or(label, |(text, _)| text)
            })
            .collect::<Vec<_>>()
            .join(", ");
        let lower = runs_on.to_ascii_lowercase();
        if lower.contains("windows") || lower.contains("macos") {
            findings.leave_out(place, format!("runs on `{runs_on}`, not Linux"));
            continue;
        }
        let mut env = workflow_env.clone();
        env.extend(plain_map(&job["env"]));
        let job_context = Context {
            place: &place,
            matrix: &matrix,
            env: &env,
            envs: [&doc["env"], &job["env"]],
            shell: job["defaults"]["run"]["shell"]
                .as_str()
                .or(doc["defaults"]["run"]["shell"].as_str()),
            cwd: job["defaults"]["run"]["working-directory"]
                .as_str()
                .or(doc["defaults"]["run"]["working-directory"].as_str()),
        };
        let Some(steps) = job["steps"].as_vec() else {
            continue;
        };
        for (index, step) in steps.iter().enumerate() {
            job_context.step(index + 1, step, findings);
        }
    }
}

/// What a job's steps inherit.
struct Context<'a> {
    place: &'a str,
    matrix: &'a BTreeMap<String, String>,
    /// Plain variables of the workflow and the job.
    env: &'a BTreeMap<String, String>,
    /// The workflow's and the job's `env` as written, for secrets and tokens.
    envs: [&'a Yaml; 2],
    shell: Option<&'a str>,
    cwd: Option<&'a str>,
}

impl Context<'_> {
    fn step(&self, number: usize, step: &Yaml, findings: &mut Findings) {
        let place = format!("{} step {number}", self.place);
        if let Some(action) = step["uses"].as_str() {
            findings.leave_out(
                format!("{place}: uses `{action}`"),
                "runs an action, which autofix does not run",
            );
            return;
        }
        let Some(run) = step["run"].as_str() else {
            return;
        };
        let what = format!("{place}: {}", shortened(run, 100));
        let shell = step["shell"].as_str().or(self.shell);
        if let Some(shell) = shell.filter(|shell| !is_posix_shell(shell)) {
            findings.leave_out(what, format!("runs in `{shell}`, not a POSIX shell"));
            return;
        }
        let mut texts = Vec::new();
        for env in [self.envs[0], self.envs[1], &step["env"], step] {
            all_strings(env, &mut texts);
        }
        if let Some(secret) = texts.iter().find_map(|text| SECRET.captures(text)) {
            findings.leave_out(what, format!("uses the secret `secrets.{}`", &secret[1]));
            return;
        }
        let token = [self.envs[0], self.envs[1], &step["env"]]
            .into_iter()
            .filter_map(Yaml::as_hash)
            .flat_map(|env| env.keys().filter_map(Yaml::as_str))
            .find(|name| name.to_ascii_uppercase().ends_with("TOKEN"));
        if let Some(token) = token {
            findings.leave_out(what, format!("sets `{token}` in its environment"));
            return;
        }
        let mut env = self.env.clone();
        env.extend(plain_map(&step["env"]));
        let (run, mut notes) = match resolve(run, self.matrix, &env) {
            Ok(resolved) => resolved,
            Err(unknown) => {
                findings.leave_out(what, unknown.to_string());
                return;
            }
        };
        let cwd = match step["working-directory"].as_str().or(self.cwd) {
            None => ".".to_string(),
            Some(dir) => {
                let joined = resolve(dir, self.matrix, &env)
                    .ok()
                    .and_then(|(dir, more)| {
                        notes.extend(more);
                        ci::joined(".", &dir)
                    });
                match joined {
                    Some(dir) => dir,
                    None => {
                        findings.leave_out(
                            what,
                            format!("runs in `{dir}`, which is not a folder of the repository"),
                        );
                        return;
                    }
                }
            }
        };
        notes.dedup();
        let note: String = notes.iter().map(|note| format!(", {note}")).collect();
        let lines = ci::lines_of(&run);
        ci::judge(
            &Script {
                place,
                lines: &lines,
                cwd,
                note,
            },
            findings,
        );
    }
}

fn is_posix_shell(shell: &str) -> bool {
    let program = shell.split_whitespace().next().unwrap_or("");
    matches!(program, "bash" | "sh")
}

/// An expression in a step that only GitHub can work out (`${{ secrets.X }}`, `${{ github.sha }}`).
#[derive(Debug, thiserror::Error)]
#[error("uses `${{{{ {expression} }}}}`, which is only known on GitHub")]
struct OnlyOnGitHub<'t> {
    expression: &'t str,
}

/// `text` with `${{ matrix.x }}` (the first value of a plain list) and `${{ env.X }}` (a plain
/// value) put in, and a note for each matrix value used; the first other expression is the error.
fn resolve<'t>(
    text: &'t str,
    matrix: &BTreeMap<String, String>,
    env: &BTreeMap<String, String>,
) -> Result<(String, Vec<String>), OnlyOnGitHub<'t>> {
    let mut notes = Vec::new();
    let mut out = String::new();
    let mut rest = 0;
    for found in EXPRESSION.captures_iter(text) {
        let whole = found.get(0).expect("the whole match");
        let expression = found.get(1).expect("the expression").as_str();
        let value = NAMED
            .captures(expression)
            .and_then(|named| match &named[1] {
                "matrix" => matrix.get(&named[2]).inspect(|value| {
                    notes.push(format!("`matrix.{}` taken as `{value}`", &named[2]));
                }),
                _ => env.get(&named[2]),
            })
            .ok_or(OnlyOnGitHub { expression })?;
        out.push_str(&text[rest..whole.start()]);
        out.push_str(value);
        rest = whole.end();
    }
    out.push_str(&text[rest..]);
    Ok((out, notes))
}

/// The first value of each matrix key whose value is a plain list of scalars.
fn first_matrix_values(matrix: &Yaml) -> BTreeMap<String, String> {
    let Some(matrix) = matrix.as_hash() else {
        return BTreeMap::new();
    };
    matrix
        .iter()
        .filter_map(|(key, values)| {
            let key = key.as_str()?;
            let first = values.as_vec()?.first()?;
            Some((key.to_string(), scalar(first)?))
        })
        .filter(|(key, _)| key != "include" && key != "exclude")
        .collect()
}

/// The entries of an `env` mapping whose values hold no expression.
fn plain_map(env: &Yaml) -> BTreeMap<String, String> {
    env.as_hash()
        .map(|env| {
            env.iter()
                .filter_map(|(key, value)| {
                    // `KEY:` with nothing after it is an empty variable.
                    let value = if value.is_null() {
                        String::new()
                    } else {
                        scalar(value)?
                    };
                    Some((key.as_str()?.to_string(), value))
                })
                .filter(|(_, value)| !value.contains("${{"))
                .collect()
        })
        .unwrap_or_default()
}

fn scalar(value: &Yaml) -> Option<String> {
    match value {
        Yaml::String(text) => Some(text.clone()),
        Yaml::Integer(number) => Some(number.to_string()),
        Yaml::Real(text) => Some(text.clone()),
        Yaml::Boolean(flag) => Some(flag.to_string()),
        _ => None,
    }
}

fn scalars(value: &Yaml) -> Vec<String> {
    match value {
        Yaml::Array(items) => items.iter().filter_map(scalar).collect(),
        other => scalar(other).into_iter().collect(),
    }
}

fn all_strings(value: &Yaml, out: &mut Vec<String>) {
    match value {
        Yaml::String(text) => out.push(text.clone()),
        Yaml::Array(items) => items.iter().for_each(|item| all_strings(item, out)),
        Yaml::Hash(map) => map.values().for_each(|item| all_strings(item, out)),
        _ => {}
    }
}
