//! The jobs pages: `/jobs` lists jobs newest first, filtered by state and repository; `/jobs/ID`
//! shows one job: links, outcome, durations, tokens, its stage history and the redacted log tail.

use std::fmt::Write;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use serde::Deserialize;

use super::html::{duration, escape, page as frame, query_value, time};
use super::{Shared, error_page};
use crate::forge::RepoPath;
use crate::llm::price::dollars;
use crate::store::{JobDetail, JobFilter, JobId, JobRecord, JobSpend, JobState, StoreError};
use crate::worker::JobFacts;

/// Jobs on one page of the list.
pub const PAGE_SIZE: u32 = 50;

const STATES: [JobState; 4] = [
    JobState::Queued,
    JobState::Running,
    JobState::Succeeded,
    JobState::Failed,
];

#[derive(Debug, Default, Deserialize)]
pub(super) struct ListQuery {
    #[serde(default)]
    state: String,
    #[serde(default)]
    repo: String,
    before: Option<JobId>,
}

/// `GET /jobs?state=failed&repo=acme/widgets&before=120`.
pub(super) async fn list(State(state): State<Shared>, Query(query): Query<ListQuery>) -> Response {
    let wanted_state = match query.state.trim() {
        "" => None,
        name => match name.parse::<JobState>() {
            Ok(parsed) => Some(parsed),
            Err(_) => {
                return error_page(
                    StatusCode::BAD_REQUEST,
                    "No such state",
                    &format!("`{name}` is none of queued, running, succeeded, failed."),
                );
            }
        },
    };
    let repo = query.repo.trim();
    let filter = JobFilter {
        state: wanted_state,
        repo: (!repo.is_empty()).then(|| RepoPath::new(repo)),
        issue: None,
        before: query.before,
        limit: PAGE_SIZE,
    };
    let read = async {
        let jobs = state.store.jobs_page(&filter).await?;
        let counts = state.store.job_counts().await?;
        let repos = state.store.job_repos().await?;
        let ids: Vec<JobId> = jobs.iter().map(|(job, _)| job.id).collect();
        let spent = state.store.jobs_spend(&ids).await?;
        Ok::<_, StoreError>((jobs, counts, repos, spent))
    };
    let (jobs, counts, repos, spent) = match read.await {
        Ok(read) => read,
        Err(error) => return store_error(error),
    };
    let mut body = String::new();
    let summary: Vec<String> = STATES
        .iter()
        .map(|s| {
            let count = counts.iter().find(|(c, _)| c == s).map_or(0, |(_, n)| *n);
            format!("<span class=\"{0}\">{count} {0}</span>", s.as_str())
        })
        .collect();
    let _ = write!(body, "<p id=\"counts\">{}</p>", summary.join(" · "));
    filters(&mut body, wanted_state, repo, &repos);
    if jobs.is_empty() {
        body.push_str("<p id=\"empty\">No job matches.</p>");
    } else {
        body.push_str(
            "<table id=\"jobs\"><tr><th>Job</th><th>State</th><th>Issue</th><th>Stage</th>\
             <th>Attempts</th><th>Failure</th><th>Change request</th><th>Updated</th><th>Took</th><th>Cost</th></tr>",
        );
        for (job, checkpoint) in &jobs {
            let facts = checkpoint
                .as_deref()
                .map(JobFacts::read)
                .unwrap_or_default();
            let cost = spent.get(&job.id).copied().unwrap_or_default();
            row(&mut body, &state, job, &facts, cost);
        }
        body.push_str("</table>");
    }
    if jobs.len() == PAGE_SIZE as usize {
        let oldest = jobs.last().map_or(0, |(job, _)| job.id.0);
        let _ = write!(
            body,
            "<p><a id=\"older\" href=\"/jobs?state={}&amp;repo={}&amp;before={oldest}\">Older jobs</a></p>",
            wanted_state.map_or("", JobState::as_str),
            query_value(repo),
        );
    }
    Html(frame("Jobs", &body)).into_response()
}

fn filters(body: &mut String, wanted: Option<JobState>, repo: &str, repos: &[RepoPath]) {
    body.push_str(
        "<form class=\"filters\" method=\"get\" action=\"/jobs\"><label>State<select name=\"state\">\
         <option value=\"\">any</option>",
    );
    for state in STATES {
        let selected = if wanted == Some(state) {
            " selected"
        } else {
            ""
        };
        let _ = write!(body, "<option{selected}>{}</option>", state.as_str());
    }
    body.push_str(
        "</select></label><label>Repository<select name=\"repo\"><option value=\"\">any</option>",
    );
    for known in repos {
        let selected = if known.as_str() == repo {
            " selected"
        } else {
            ""
        };
        let _ = write!(
            body,
            "<option{selected}>{}</option>",
            escape(known.as_str())
        );
    }
    body.push_str("</select></label><button type=\"submit\">Filter</button></form>");
}

fn row(body: &mut String, state: &Shared, job: &JobRecord, facts: &JobFacts, cost: JobSpend) {
    let key = &job.key;
    let issue_url = state.links.issue(key);
    let change = match &facts.change_request {
        Some((number, url)) => format!("<a href=\"{}\">#{number}</a>", escape(url)),
        None => "–".into(),
    };
    let failure = job
        .failure_label()
        .map_or_else(|| "–".into(), |label| escape(&label));
    let took = match job.state {
        JobState::Succeeded | JobState::Failed => duration(job.created_at, job.updated_at),
        _ => "–".into(),
    };
    let _ = write!(
        body,
        "<tr data-job=\"{id}\"><td><a href=\"/jobs/{id}\">{id}</a></td><td class=\"{state}\">{state}</td>\
         <td><a href=\"{issue_url}\">{forge}:{repo}#{issue}</a></td><td>{stage}</td><td>{attempts}</td>\
         <td>{failure}</td><td>{change}</td><td>{updated}</td><td>{took}</td><td class=\"cost\">{cost}</td></tr>",
        id = job.id,
        state = job.state.as_str(),
        issue_url = escape(&issue_url),
        forge = key.repo.forge,
        repo = escape(key.repo.path.as_str()),
        issue = key.issue.0,
        stage = escape(job.stage.as_deref().unwrap_or("–")),
        attempts = job.attempts,
        updated = time(job.updated_at),
        cost = cost_text(cost),
    );
}

/// `$0.0123`, or `price unknown` when a run's model had no known price.
fn cost_text(cost: JobSpend) -> String {
    if cost.price_unknown {
        "price unknown".into()
    } else {
        dollars(cost.usd)
    }
}

/// `GET /jobs/ID`.
pub(super) async fn detail(State(state): State<Shared>, Path(id): Path<String>) -> Response {
    let Ok(id) = id.parse::<JobId>() else {
        return error_page(
            StatusCode::NOT_FOUND,
            "No such job",
            "A job id is a number.",
        );
    };
    let read = async {
        let detail = state.store.job_show(id).await?;
        let cost = state.store.job_spend(id).await?;
        Ok::<_, StoreError>((detail, cost))
    };
    let (detail, cost) = match read.await {
        Ok(read) => read,
        Err(StoreError::JobNotFound(_)) => {
            return error_page(
                StatusCode::NOT_FOUND,
                "No such job",
                &format!("There is no job {id}."),
            );
        }
        Err(error) => return store_error(error),
    };
    let facts = detail
        .checkpoint
        .as_deref()
        .map(JobFacts::read)
        .unwrap_or_default();
    Html(frame(
        &format!("Job {id}"),
        &detail_body(&state, &detail, &facts, cost),
    ))
    .into_response()
}

fn detail_body(state: &Shared, detail: &JobDetail, facts: &JobFacts, cost: JobSpend) -> String {
    let job = &detail.job;
    let key = &job.key;
    let mut body = String::from("<section id=\"summary\"><dl>");
    let mut item = |name: &str, value: String| {
        let _ = write!(
            body,
            "<dt>{name}</dt><dd data-field=\"{}\">{value}</dd>",
            name.to_lowercase().replace(' ', "-")
        );
    };
    item(
        "State",
        format!(
            "<span class=\"{0}\">{0}</span> after {1} attempt(s)",
            job.state.as_str(),
            job.attempts
        ),
    );
    item("Stage", escape(job.stage.as_deref().unwrap_or("–")));
    item(
        "Repository",
        format!(
            "<a href=\"{}\">{}:{}</a>",
            escape(&state.links.repo(&key.repo)),
            key.repo.forge,
            escape(key.repo.path.as_str())
        ),
    );
    item(
        "Issue",
        format!(
            "<a href=\"{}\">#{}</a>",
            escape(&state.links.issue(key)),
            key.issue.0
        ),
    );
    if let Some((number, url)) = &facts.change_request {
        item(
            "Change request",
            format!("<a href=\"{}\">#{number}</a>", escape(url)),
        );
    }
    if let Some(subject) = &facts.subject {
        item("Commit", escape(subject));
    }
    if let Some(branch) = &facts.branch {
        item("Branch", escape(branch));
    }
    if !facts.changed_files.is_empty() {
        item("Changed", escape(&facts.changed_files.join(", ")));
    }
    if let Some(code) = &job.failure_code {
        item(
            "Failure",
            format!("<strong class=\"failed\">{}</strong>", code.as_str()),
        );
    }
    if let Some(reason) = facts
        .failure
        .as_ref()
        .map(|f| f.failure.reason.clone())
        .or(job.last_error.clone())
    {
        item("Reason", escape(&reason));
    }
    if let Some(due) = job.report_due {
        item(
            "Failure report",
            format!("not posted yet; next try at {}", time(due)),
        );
    }
    item("Created", time(job.created_at));
    item("Updated", time(job.updated_at));
    item("Took", duration(job.created_at, job.updated_at));
    if facts.input_tokens + facts.output_tokens > 0 {
        item(
            "Model tokens",
            format!(
                "{} in, {} out ({} repairs)",
                facts.input_tokens, facts.output_tokens, facts.repairs
            ),
        );
    }
    item("Model cost", cost_text(cost));
    body.push_str(
        "</dl></section><section id=\"history\"><h2>Stage history</h2><table>\
                   <tr><th>At</th><th>Stage</th><th>Took</th><th>What happened</th></tr>",
    );
    let mut previous = job.created_at;
    for event in &detail.events {
        let _ = write!(
            body,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            time(event.at),
            escape(&event.stage),
            duration(previous, event.at),
            escape(&event.message),
        );
        previous = event.at;
    }
    body.push_str("</table></section>");
    if let Some(tail) = facts
        .failure
        .as_ref()
        .and_then(|f| f.failure.output_tail.as_deref())
    {
        let _ = write!(
            body,
            "<section id=\"log\"><h2>Log tail</h2><p>The end of the failing command's output, \
             secrets redacted.</p><pre>{}</pre></section>",
            escape(tail)
        );
    }
    body
}

fn store_error(error: StoreError) -> Response {
    tracing::warn!(%error, "the jobs page could not read the job store");
    error_page(
        StatusCode::SERVICE_UNAVAILABLE,
        "The job store does not answer",
        &error.to_string(),
    )
}
