//! `autofix context`: the ranked files and spans the edit stage would start from for an issue,
//! worked out without any model call, as text for a person or JSON for a benchmark.

use std::path::Path;

use serde::Serialize;

use crate::config::repo::RepoConfig;
use crate::edits::paths::{ProjectRoot, project_files};
use crate::index::RepoIndex;
use crate::index::query::IssueQuery;
use crate::index::retrieve::{Method, rank};
use crate::pipeline::context::{self, BYTES_PER_TOKEN, Context};
use crate::pipeline::issue::Issue;
use crate::pipeline::plan::Plan;

/// What `autofix context --json` prints.
#[derive(Debug, Serialize)]
pub struct ContextReport {
    /// Estimated tokens of everything in the context.
    pub tokens: usize,
    pub files: Vec<ReportedFile>,
}

#[derive(Debug, Serialize)]
pub struct ReportedFile {
    pub path: String,
    pub rank: usize,
    /// Tokens shown, or, for a file beyond the budget, of the whole file.
    pub tokens: usize,
    /// `[start, end]` lines shown; empty when the whole file is.
    pub spans: Vec<[u32; 2]>,
    pub why: Vec<String>,
    pub in_context: bool,
}

/// Ranks `repo`'s files for `issue` and packs them into `max_tokens` as the edit stage would
/// before any plan; lists the first `limit` ranked files, in the context or not.
pub fn report(
    repo: &Path,
    issue: &Issue,
    max_tokens: usize,
    limit: usize,
) -> Result<ContextReport, String> {
    let root = ProjectRoot::new(repo).map_err(|err| format!("--repo {}: {err}", repo.display()))?;
    let loaded = RepoConfig::load(root.path()).map_err(|err| err.to_string())?;
    let protected = loaded
        .config
        .protected_paths(&root)
        .map_err(|err| format!(".autofix.toml: {err}"))?;
    let files = project_files(root.path())
        .map_err(|err| format!("cannot list the files of {}: {err}", repo.display()))?;
    let index = RepoIndex::build(root.path(), &files);
    let ranking = rank(
        &index,
        &IssueQuery::parse(&issue.title, &issue.body),
        Method::Full,
    );
    let no_plan = Plan::none();
    let context = context::build(&root, &protected, &no_plan, &ranking, max_tokens);
    Ok(reported(&index, &ranking, &context, limit))
}

fn reported(
    index: &RepoIndex,
    ranking: &crate::index::Ranking,
    context: &Context,
    limit: usize,
) -> ContextReport {
    let files = ranking
        .files
        .iter()
        .take(limit)
        .enumerate()
        .map(|(position, ranked)| match context.file(&ranked.path) {
            Some(shown) => ReportedFile {
                path: ranked.path.clone(),
                rank: position + 1,
                tokens: shown.tokens(),
                spans: shown.spans().iter().map(|s| [s.start, s.end]).collect(),
                why: ranked.why.clone(),
                in_context: true,
            },
            None => ReportedFile {
                path: ranked.path.clone(),
                rank: position + 1,
                tokens: index
                    .id_of(&ranked.path)
                    .map_or(0, |id| index.document(id).bytes as usize)
                    .div_ceil(BYTES_PER_TOKEN),
                spans: Vec::new(),
                why: ranked.why.clone(),
                in_context: false,
            },
        })
        .collect();
    ContextReport {
        tokens: context.tokens(),
        files,
    }
}

/// The report for a person: one line per file.
pub fn render_text(report: &ContextReport) -> String {
    let mut text = format!("context: {} tokens\n", report.tokens);
    for file in &report.files {
        let shown = if !file.in_context {
            "not in context".to_owned()
        } else if file.spans.is_empty() {
            "whole".to_owned()
        } else {
            file.spans
                .iter()
                .map(|[start, end]| format!("{start}-{end}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        text.push_str(&format!(
            "{:>3}. {} ({} tokens; {shown}) — {}\n",
            file.rank,
            file.path,
            file.tokens,
            file.why.join(", ")
        ));
    }
    text
}
