//! Benchmark (not a test): how long after the label a person sees the bot's first comment, with
//! the real ingress, worker pool and GitHub client against the fake GitHub, and no LLM latency.

#[path = "../tests/it/support/mod.rs"]
#[allow(unused_imports)]
mod support;

use std::time::{Duration, Instant};

use support::bot::{BotTester, python_project};

const LABELS: u64 = 30;
const REPO: &str = "acme/widgets";

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime starts");
    runtime.block_on(async {
        let t = BotTester::github().await;
        t.repo(REPO, &python_project());
        let alice = t.maintainer(REPO, "alice");
        let _stop = t.start_workers();
        let mut samples = Vec::new();
        for number in 1..=LABELS {
            // The model declines at once, so each job ends right after its first comment.
            t.llm.reply_text_for_stage(
                "triage",
                serde_json::json!({"actionable": false, "classification": "fix", "risk": "LOW",
                    "affected_files": [], "reason": "benchmark"})
                .to_string(),
            );
            let started = Instant::now();
            t.label_issue(REPO, number, "clamp ignores its bounds", &alice)
                .await;
            while t.comments(REPO, number).is_empty() {
                tokio::time::sleep(Duration::from_micros(200)).await;
            }
            samples.push(started.elapsed());
            while !t
                .jobs()
                .await
                .iter()
                .all(|job| matches!(job.state.as_str(), "succeeded" | "failed"))
            {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
        samples.sort();
        let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
        println!(
            "time to first comment ({LABELS} labels, one at a time, worker poll interval 2 s):"
        );
        println!(
            "  p50 {:.1} ms   p90 {:.1} ms   max {:.1} ms   (aim: < 1 s)",
            ms(at(0.5)),
            ms(at(0.9)),
            ms(*samples.last().unwrap())
        );
    });
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
