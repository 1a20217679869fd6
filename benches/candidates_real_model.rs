//! Benchmark (a report, not a test): the issues of the real-model benchmark
//! (`benches/data/real_model/`) run through the whole `autofix fix` pipeline against a real
//! model server (llama-cpp-python on SmolLM2-135M-Instruct), once with `[candidates] count = 1`
//! and once with `count = 3`. Prints, side by side, the issues resolved (a commit, which is only
//! made for a proven change), the tokens and cost per job, and the wall time.
//!
//! `cargo bench --bench candidates_real_model` (`REAL_MODEL_ISSUES=N` runs the first N issues).
//! The model is local and free; the cost is what the same tokens would cost at a hosted model's
//! list price (`REFERENCE_MODEL`, from autofix's own price table).

// Shared with the tests; the benchmark uses only part of it.
#[path = "../tests/it/support/model_server.rs"]
#[allow(dead_code)]
mod model_server;
#[path = "support/real_model.rs"]
mod real_model;

use std::time::Instant;

use autofix::llm::price::{PriceOverride, pricing};
use autofix::llm::{LlmProvider, TokenUsage};
use autofix::pipeline::fix::{FixSummary, fix};
use autofix::pipeline::issue::Issue;
use model_server::ModelServer;

/// The hosted model whose list price (autofix's own table) the tokens are costed at.
const REFERENCE_MODEL: &str = "gpt-4o-mini";

/// What one setting's jobs added up to.
#[derive(Default)]
struct Tally {
    jobs: u32,
    resolved: u32,
    input_tokens: u64,
    output_tokens: u64,
    seconds: f64,
}

impl Tally {
    fn add(&mut self, summary: &FixSummary) {
        self.jobs += 1;
        self.resolved += u32::from(summary.committed && summary.failure.is_none());
        self.input_tokens += summary.input_tokens;
        self.output_tokens += summary.output_tokens;
    }

    fn per_job(&self, total: f64) -> f64 {
        total / f64::from(self.jobs.max(1))
    }

    fn cost(&self) -> f64 {
        let usage = TokenUsage {
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            ..TokenUsage::default()
        };
        pricing(REFERENCE_MODEL, &PriceOverride::default()).cost(&usage)
    }
}

async fn run_setting(llm: &dyn LlmProvider, issues: &[Issue], count: u32) -> Tally {
    let mut tally = Tally::default();
    let started = Instant::now();
    for issue in issues {
        let repo = tempfile::tempdir().unwrap();
        real_model::fixture_repo(repo.path(), &format!("\n[candidates]\ncount = {count}\n"));
        let artifacts = tempfile::tempdir().unwrap();
        let options = real_model::options(repo.path(), issue, artifacts.path());
        let summary = fix(&options, llm)
            .await
            .expect("the artifacts are writable");
        let ending = match &summary.failure {
            None => "committed".to_string(),
            Some(failure) => failure.code.to_string(),
        };
        println!(
            "  count {count} #{:<2} {ending:<20} {:>6} tokens {}",
            issue.number.unwrap_or_default(),
            summary.input_tokens + summary.output_tokens,
            summary.candidates_line.as_deref().unwrap_or("")
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
        "candidates on a real model: {} issues of benches/data/real_model, {} on llama.cpp",
        issues.len(),
        server.model()
    );
    let one = runtime.block_on(run_setting(real.as_ref(), &issues, 1));
    let three = runtime.block_on(run_setting(real.as_ref(), &issues, 3));
    println!("\n{:<28} {:>12} {:>12}", "", "count = 1", "count = 3");
    let row = |name: &str, a: String, b: String| println!("{name:<28} {a:>12} {b:>12}");
    row(
        "issues resolved",
        format!("{} of {}", one.resolved, one.jobs),
        format!("{} of {}", three.resolved, three.jobs),
    );
    row(
        "tokens per job",
        format!(
            "{:.0}",
            one.per_job((one.input_tokens + one.output_tokens) as f64)
        ),
        format!(
            "{:.0}",
            three.per_job((three.input_tokens + three.output_tokens) as f64)
        ),
    );
    row(
        &format!("cost per job ({REFERENCE_MODEL})"),
        format!("${:.5}", one.per_job(one.cost())),
        format!("${:.5}", three.per_job(three.cost())),
    );
    row(
        "wall time per job",
        format!("{:.1} s", one.per_job(one.seconds)),
        format!("{:.1} s", three.per_job(three.seconds)),
    );
    row(
        "wall time in all",
        format!("{:.0} s", one.seconds),
        format!("{:.0} s", three.seconds),
    );
}
