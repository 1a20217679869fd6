//! Benchmark (a report, not a test): 20 issues of a small Python repository
//! (`benches/data/real_model/`) run through the whole `autofix fix` pipeline against a real
//! model server (llama-cpp-python on SmolLM2-135M-Instruct), once with each JSON stage's schema
//! sent and once without. Prints, per mode, the share of triage/plan/audit answers that could
//! be read the first time, how many jobs got a test that reproduces their issue, and how many
//! jobs ended with each failure code.
//!
//! `cargo bench --bench real_model_answers` (`REAL_MODEL_ISSUES=N` runs the first N issues).

// Shared with the tests; the benchmark uses only part of it.
#[path = "../tests/it/support/model_server.rs"]
#[allow(dead_code)]
mod model_server;
#[path = "support/real_model.rs"]
mod real_model;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use autofix::llm::{LlmError, LlmProvider, LlmRequest, LlmResponse};
use autofix::pipeline::fix::{FixSummary, fix};
use autofix::pipeline::issue::Issue;
use model_server::ModelServer;

const JSON_STAGES: [&str; 3] = ["triage", "plan", "audit"];

/// The real provider with every request's schema taken away: the "without" mode.
struct WithoutSchema(Arc<dyn LlmProvider>);

#[async_trait::async_trait]
impl LlmProvider for WithoutSchema {
    fn describe(&self) -> String {
        format!("{} without response schemas", self.0.describe())
    }

    fn model(&self) -> &str {
        self.0.model()
    }

    async fn models(&self) -> Result<Vec<String>, LlmError> {
        self.0.models().await
    }

    async fn complete(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        let mut request = request.clone();
        request.schema = None;
        self.0.complete(&request).await
    }
}

/// What one mode's jobs added up to.
#[derive(Default)]
struct Tally {
    /// Per JSON stage: first answers asked for, and those that could not be read.
    first_answers: BTreeMap<&'static str, (u32, u32)>,
    endings: BTreeMap<String, u32>,
    /// Jobs that asked for a reproduction, jobs that got one, and reproduce answers asked for.
    reproduce: (u32, u32, u32),
    seconds: f64,
}

impl Tally {
    fn add(&mut self, summary: &FixSummary) {
        let rounds = summary.artifacts.join("rounds");
        let log = std::fs::read_to_string(summary.artifacts.join("run.log")).unwrap_or_default();
        for stage in JSON_STAGES {
            let asked = std::fs::read_dir(&rounds)
                .map(|entries| {
                    entries
                        .filter_map(Result::ok)
                        .filter(|entry| {
                            let name = entry.file_name().to_string_lossy().into_owned();
                            name.ends_with(&format!("-{stage}-prompt.txt"))
                        })
                        .count() as u32
                })
                .unwrap_or(0);
            let corrected = log
                .matches(&format!("{stage}: the answer cannot be used"))
                .count() as u32;
            let entry = self.first_answers.entry(stage).or_default();
            entry.0 += asked - corrected;
            entry.1 += corrected;
        }
        *self.endings.entry(ending(summary)).or_default() += 1;
        if let Some(reproduction) = summary.reproduction.as_ref().filter(|r| r.attempts > 0) {
            self.reproduce.0 += 1;
            self.reproduce.1 += u32::from(!reproduction.tests.is_empty());
            self.reproduce.2 += reproduction.attempts;
        }
    }

    fn print(&self, mode: &str, jobs: usize) {
        println!("\n{mode} ({jobs} jobs, {:.0} s):", self.seconds);
        let (mut asked, mut unread) = (0, 0);
        for (stage, (first, bad)) in &self.first_answers {
            asked += first;
            unread += bad;
            println!(
                "  {stage:<7} first answers read the first time: {:>3} of {:>3} ({})",
                first - bad,
                first,
                share(first - bad, *first)
            );
        }
        println!(
            "  all JSON stages: {} of {} ({})",
            asked - unread,
            asked,
            share(asked - unread, asked)
        );
        let (asked_for, reproduced, answers) = self.reproduce;
        println!(
            "  reproduced: {reproduced} of {asked_for} jobs that reached the reproduce stage \
             ({answers} answers)"
        );
        for (ending, count) in &self.endings {
            println!("  ended {ending:<32} {count:>3}");
        }
    }
}

/// `committed`, or the failure code and the stage it happened at.
fn ending(summary: &FixSummary) -> String {
    match &summary.failure {
        None => "committed".to_string(),
        Some(failure) => format!("{} at {}", failure.code, failure.stage),
    }
}

fn share(part: u32, whole: u32) -> String {
    if whole == 0 {
        "n/a".into()
    } else {
        format!("{:.0} %", 100.0 * f64::from(part) / f64::from(whole))
    }
}

async fn run_mode(llm: &dyn LlmProvider, issues: &[Issue]) -> Tally {
    let mut tally = Tally::default();
    let started = Instant::now();
    for issue in issues {
        let repo = tempfile::tempdir().unwrap();
        real_model::fixture_repo(repo.path(), "");
        let artifacts = tempfile::tempdir().unwrap();
        let options = real_model::options(repo.path(), issue, artifacts.path());
        let summary = fix(&options, llm)
            .await
            .expect("the artifacts are writable");
        let reason: String = summary
            .failure
            .as_ref()
            .map(|failure| failure.reason.as_str())
            .unwrap_or_default()
            .chars()
            .take(110)
            .collect();
        println!(
            "  #{:<2} {} {reason}",
            issue.number.unwrap_or_default(),
            ending(&summary)
        );
        tally.add(&summary);
    }
    tally.seconds = started.elapsed().as_secs_f64();
    tally
}

fn main() {
    let issues = real_model::issues();
    let server = ModelServer::start_with_context(8192);
    let real = real_model::provider_at(server.base_url(), server.model());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    println!(
        "real model answers: {} issues of benches/data/real_model, {} on llama.cpp",
        issues.len(),
        server.model()
    );
    println!("with the schema:");
    let with = runtime.block_on(run_mode(real.as_ref(), &issues));
    println!("without the schema:");
    let without = runtime.block_on(run_mode(&WithoutSchema(real.clone()), &issues));
    with.print("with the schema", issues.len());
    without.print("without the schema", issues.len());
}
