//! The process's counters and histograms (jobs by outcome, stage durations, lease takeovers, LLM
//! calls), each series named by its labels, written out in the Prometheus text format.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::time::Duration;

/// Upper bounds (seconds) of the stage-duration buckets: a stage takes from a blink (a comment)
/// to many minutes (a repository's test suite).
const STAGE_BUCKETS: &[f64] = &[
    0.1, 0.5, 1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0,
];
/// Upper bounds (seconds) of the LLM-latency buckets.
const LLM_BUCKETS: &[f64] = &[0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 80.0, 160.0];

enum Kind {
    Counter,
    /// A counter of a fractional quantity (money).
    Amount,
    Histogram(&'static [f64]),
}

/// One metric family: its name, its help line and its kind.
struct Family {
    name: &'static str,
    help: &'static str,
    kind: Kind,
    /// A counter without labels is written as 0 before it is first counted, so a dashboard
    /// sees the series from the start.
    starts_at_zero: bool,
}

const JOBS_FINISHED: Family = Family {
    name: "autofix_jobs_finished_total",
    help: "Job runs this process ended, by outcome (succeeded, failed, retry) and failure code.",
    kind: Kind::Counter,
    starts_at_zero: false,
};
const STAGE_SECONDS: Family = Family {
    name: "autofix_stage_duration_seconds",
    help: "How long each stage of a job took, by stage and outcome (ok, failed).",
    kind: Kind::Histogram(STAGE_BUCKETS),
    starts_at_zero: false,
};
const LEASE_TAKEOVERS: Family = Family {
    name: "autofix_lease_takeovers_total",
    help: "Jobs this process claimed from a worker whose lease had run out.",
    kind: Kind::Counter,
    starts_at_zero: true,
};
const LLM_REQUESTS: Family = Family {
    name: "autofix_llm_requests_total",
    help: "LLM requests, by provider, model and outcome (ok, error).",
    kind: Kind::Counter,
    starts_at_zero: false,
};
const LLM_TOKENS: Family = Family {
    name: "autofix_llm_tokens_total",
    help: "LLM tokens the provider counted, by provider, model and direction (input, output).",
    kind: Kind::Counter,
    starts_at_zero: false,
};
const LLM_SECONDS: Family = Family {
    name: "autofix_llm_request_duration_seconds",
    help: "LLM request latency, the provider's own retries included, by provider and model.",
    kind: Kind::Histogram(LLM_BUCKETS),
    starts_at_zero: false,
};

const LLM_COST: Family = Family {
    name: "autofix_llm_cost_usd_total",
    help: "What the model's answers cost in US dollars at the configured prices, by repository and model.",
    kind: Kind::Amount,
    starts_at_zero: false,
};

/// Every family, in the order they are written out.
const FAMILIES: [&Family; 7] = [
    &JOBS_FINISHED,
    &STAGE_SECONDS,
    &LEASE_TAKEOVERS,
    &LLM_REQUESTS,
    &LLM_TOKENS,
    &LLM_SECONDS,
    &LLM_COST,
];

type Labels = Vec<(&'static str, String)>;

#[derive(Debug, Clone, Default)]
struct Histogram {
    /// Observations at or below each bound, in bound order (not yet cumulative).
    buckets: Vec<u64>,
    sum: f64,
    count: u64,
}

#[derive(Default)]
struct Series {
    counters: BTreeMap<(&'static str, Labels), u64>,
    amounts: BTreeMap<(&'static str, Labels), f64>,
    histograms: BTreeMap<(&'static str, Labels), Histogram>,
}

/// The registry one process shares between its workers, its LLM client and `/metrics`.
#[derive(Default)]
pub struct Telemetry {
    series: Mutex<Series>,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Telemetry")
    }
}

impl Telemetry {
    pub fn new() -> Telemetry {
        Telemetry::default()
    }

    /// A job run ended: `outcome` is `succeeded`, `failed` or `retry`; `code` the failure code.
    pub fn job_finished(&self, outcome: &str, code: Option<&str>) {
        let labels = vec![
            ("outcome", outcome.to_owned()),
            ("code", code.unwrap_or("").to_owned()),
        ];
        self.add(&JOBS_FINISHED, labels, 1);
    }

    /// A stage ended after `elapsed`; `ok` says whether it did its work.
    pub fn stage_ended(&self, stage: &str, ok: bool, elapsed: Duration) {
        let outcome = if ok { "ok" } else { "failed" };
        let labels = vec![("stage", stage.to_owned()), ("outcome", outcome.to_owned())];
        self.observe(&STAGE_SECONDS, labels, elapsed);
    }

    /// A claim took a job over from a worker whose lease had run out.
    pub fn lease_taken_over(&self) {
        self.add(&LEASE_TAKEOVERS, Vec::new(), 1);
    }

    /// One LLM request: how it ended, how long it took and the tokens it used.
    pub fn llm_request(&self, call: LlmCall<'_>) {
        let who = || {
            vec![
                ("provider", call.provider.to_owned()),
                ("model", call.model.to_owned()),
            ]
        };
        let mut outcome = who();
        outcome.push(("outcome", if call.ok { "ok" } else { "error" }.to_owned()));
        self.add(&LLM_REQUESTS, outcome, 1);
        for (direction, tokens) in [("input", call.input_tokens), ("output", call.output_tokens)] {
            let mut labels = who();
            labels.push(("direction", direction.to_owned()));
            self.add(&LLM_TOKENS, labels, tokens);
        }
        self.observe(&LLM_SECONDS, who(), call.elapsed);
    }

    /// What one model answer for `repository` cost.
    pub fn llm_cost(&self, repository: &str, model: &str, usd: f64) {
        let labels = vec![
            ("repository", repository.to_owned()),
            ("model", model.to_owned()),
        ];
        *self
            .lock()
            .amounts
            .entry((LLM_COST.name, labels))
            .or_default() += usd;
    }

    /// An amount's value (the sum over the series `labels` pick), for tests.
    pub fn amount(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let series = self.lock();
        series
            .amounts
            .iter()
            .filter(|((family, series_labels), _)| {
                *family == name && same_labels(series_labels, labels)
            })
            .map(|(_, value)| *value)
            .sum()
    }

    /// A counter's value, for tests and the benchmark (0 when never counted).
    pub fn counter(&self, name: &str, labels: &[(&str, &str)]) -> u64 {
        let series = self.lock();
        series
            .counters
            .iter()
            .filter(|((family, series_labels), _)| {
                *family == name && same_labels(series_labels, labels)
            })
            .map(|(_, value)| *value)
            .sum()
    }

    /// Every family in the Prometheus text exposition format (version 0.0.4).
    pub fn render(&self, text: &mut String) {
        let series = self.lock();
        for family in FAMILIES {
            let _ = writeln!(text, "# HELP {} {}", family.name, family.help);
            match family.kind {
                Kind::Counter => {
                    let _ = writeln!(text, "# TYPE {} counter", family.name);
                    let mut any = false;
                    for ((name, labels), value) in &series.counters {
                        if *name == family.name {
                            any = true;
                            let _ = writeln!(
                                text,
                                "{}{} {value}",
                                family.name,
                                render_labels(labels, None)
                            );
                        }
                    }
                    if !any && family.starts_at_zero {
                        let _ = writeln!(text, "{} 0", family.name);
                    }
                }
                Kind::Amount => {
                    let _ = writeln!(text, "# TYPE {} counter", family.name);
                    for ((name, labels), value) in &series.amounts {
                        if *name == family.name {
                            let _ = writeln!(
                                text,
                                "{}{} {value}",
                                family.name,
                                render_labels(labels, None)
                            );
                        }
                    }
                }
                Kind::Histogram(bounds) => {
                    let _ = writeln!(text, "# TYPE {} histogram", family.name);
                    for ((name, labels), histogram) in &series.histograms {
                        if *name == family.name {
                            render_histogram(text, family.name, labels, bounds, histogram);
                        }
                    }
                }
            }
        }
    }

    fn add(&self, family: &'static Family, labels: Labels, by: u64) {
        *self
            .lock()
            .counters
            .entry((family.name, labels))
            .or_default() += by;
    }

    fn observe(&self, family: &'static Family, labels: Labels, elapsed: Duration) {
        let Kind::Histogram(bounds) = family.kind else {
            return;
        };
        let seconds = elapsed.as_secs_f64();
        let mut series = self.lock();
        let histogram = series
            .histograms
            .entry((family.name, labels))
            .or_insert_with(|| Histogram {
                buckets: vec![0; bounds.len()],
                ..Histogram::default()
            });
        if let Some(slot) = bounds.iter().position(|bound| seconds <= *bound) {
            histogram.buckets[slot] += 1;
        }
        histogram.sum += seconds;
        histogram.count += 1;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Series> {
        self.series
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// One LLM request as the metering decorator saw it.
#[derive(Debug, Clone, Copy)]
pub struct LlmCall<'a> {
    pub provider: &'a str,
    pub model: &'a str,
    pub ok: bool,
    pub elapsed: Duration,
    pub input_tokens: u64,
    pub output_tokens: u64,
}

fn same_labels(series: &Labels, wanted: &[(&str, &str)]) -> bool {
    wanted.iter().all(|(key, value)| {
        series
            .iter()
            .any(|(series_key, series_value)| series_key == key && series_value == value)
    })
}

fn render_histogram(
    text: &mut String,
    name: &str,
    labels: &Labels,
    bounds: &[f64],
    histogram: &Histogram,
) {
    let mut cumulative = 0;
    for (bound, count) in bounds.iter().zip(&histogram.buckets) {
        cumulative += count;
        let le = format!("{bound}");
        let _ = writeln!(
            text,
            "{name}_bucket{} {cumulative}",
            render_labels(labels, Some(&le))
        );
    }
    let _ = writeln!(
        text,
        "{name}_bucket{} {}",
        render_labels(labels, Some("+Inf")),
        histogram.count
    );
    let _ = writeln!(
        text,
        "{name}_sum{} {}",
        render_labels(labels, None),
        histogram.sum
    );
    let _ = writeln!(
        text,
        "{name}_count{} {}",
        render_labels(labels, None),
        histogram.count
    );
}

/// `{key="value",…}` with the values escaped as the exposition format asks; empty without labels.
fn render_labels(labels: &Labels, le: Option<&str>) -> String {
    let mut pairs: Vec<String> = labels
        .iter()
        .map(|(key, value)| format!("{key}=\"{}\"", escape(value)))
        .collect();
    if let Some(le) = le {
        pairs.push(format!("le=\"{le}\""));
    }
    if pairs.is_empty() {
        String::new()
    } else {
        format!("{{{}}}", pairs.join(","))
    }
}

fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finished_job_is_counted_under_its_outcome_and_code() {
        let telemetry = Telemetry::new();
        telemetry.job_finished("failed", Some("VALIDATION_FAILED"));
        telemetry.job_finished("failed", Some("VALIDATION_FAILED"));
        telemetry.job_finished("succeeded", None);
        let mut text = String::new();
        telemetry.render(&mut text);
        assert!(text.contains(
            "autofix_jobs_finished_total{outcome=\"failed\",code=\"VALIDATION_FAILED\"} 2\n"
        ));
        assert!(text.contains("autofix_jobs_finished_total{outcome=\"succeeded\",code=\"\"} 1\n"));
    }

    #[test]
    fn a_stage_duration_lands_in_cumulative_buckets_with_its_sum_and_count() {
        let telemetry = Telemetry::new();
        telemetry.stage_ended("validate", true, Duration::from_millis(700));
        telemetry.stage_ended("validate", true, Duration::from_secs(20));
        let mut text = String::new();
        telemetry.render(&mut text);
        let series = "autofix_stage_duration_seconds_bucket{stage=\"validate\",outcome=\"ok\"";
        assert!(text.contains(&format!("{series},le=\"0.5\"}} 0\n")));
        assert!(text.contains(&format!("{series},le=\"1\"}} 1\n")));
        assert!(text.contains(&format!("{series},le=\"30\"}} 2\n")));
        assert!(text.contains(&format!("{series},le=\"+Inf\"}} 2\n")));
        assert!(text.contains(
            "autofix_stage_duration_seconds_count{stage=\"validate\",outcome=\"ok\"} 2\n"
        ));
        assert!(text.contains(
            "autofix_stage_duration_seconds_sum{stage=\"validate\",outcome=\"ok\"} 20.7\n"
        ));
    }

    #[test]
    fn llm_calls_count_tokens_by_direction_and_time_by_model() {
        let telemetry = Telemetry::new();
        let call = LlmCall {
            provider: "openai",
            model: "gpt-4o-mini",
            ok: true,
            elapsed: Duration::from_millis(1200),
            input_tokens: 900,
            output_tokens: 120,
        };
        telemetry.llm_request(call);
        telemetry.llm_request(LlmCall {
            ok: false,
            input_tokens: 0,
            output_tokens: 0,
            ..call
        });
        assert_eq!(
            telemetry.counter("autofix_llm_tokens_total", &[("direction", "input")]),
            900
        );
        assert_eq!(
            telemetry.counter("autofix_llm_requests_total", &[("outcome", "error")]),
            1
        );
        let mut text = String::new();
        telemetry.render(&mut text);
        assert!(text.contains(
            "autofix_llm_request_duration_seconds_count{provider=\"openai\",model=\"gpt-4o-mini\"} 2\n"
        ));
    }

    #[test]
    fn the_model_s_cost_adds_up_by_repository_and_model() {
        let telemetry = Telemetry::new();
        telemetry.llm_cost("github:acme/widgets", "gpt-4o", 0.25);
        telemetry.llm_cost("github:acme/widgets", "gpt-4o", 0.5);
        telemetry.llm_cost("gitlab:acme/tools", "gpt-4o", 0.125);
        let mut text = String::new();
        telemetry.render(&mut text);
        assert!(text.contains("# TYPE autofix_llm_cost_usd_total counter\n"));
        assert!(text.contains(
            "autofix_llm_cost_usd_total{repository=\"github:acme/widgets\",model=\"gpt-4o\"} 0.75\n"
        ));
        assert_eq!(
            telemetry.amount("autofix_llm_cost_usd_total", &[("model", "gpt-4o")]),
            0.875
        );
    }

    #[test]
    fn label_values_are_escaped_and_an_unlabelled_counter_starts_at_zero() {
        let telemetry = Telemetry::new();
        telemetry.job_finished("failed", Some("a \"quoted\"\nline"));
        let mut text = String::new();
        telemetry.render(&mut text);
        assert!(text.contains("code=\"a \\\"quoted\\\"\\nline\""));
        assert!(text.contains("autofix_lease_takeovers_total 0\n"));
    }
}
