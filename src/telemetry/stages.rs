//! Stage observers: whoever runs a pipeline hands it a [`Stages`], and each stage reports when it
//! starts and how it ended — to a terminal (`autofix fix`, `autofix run`) or to the metrics.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::Telemetry;

/// Told when a stage starts and when it ends.
pub trait StageObserver: Send + Sync {
    fn started(&self, stage: &str);
    /// `detail` is empty for a stage that did its work, and one line of why for one that failed.
    fn ended(&self, stage: &str, ok: bool, elapsed: Duration, detail: &str);
    /// One line worth showing while `stage` runs (what was found, what will run).
    fn noted(&self, _stage: &str, _line: &str) {}
}

/// The observers of one run; none by default.
#[derive(Clone, Default)]
pub struct Stages {
    observers: Vec<Arc<dyn StageObserver>>,
}

impl std::fmt::Debug for Stages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Stages({} observers)", self.observers.len())
    }
}

impl Stages {
    /// No one is told anything.
    pub fn none() -> Stages {
        Stages::default()
    }

    /// These observers and `observer` too.
    pub fn with(mut self, observer: Arc<dyn StageObserver>) -> Stages {
        self.observers.push(observer);
        self
    }

    /// Tells every observer a line worth showing while `stage` runs.
    pub fn note(&self, stage: impl AsRef<str>, line: &str) {
        for observer in &self.observers {
            observer.noted(stage.as_ref(), line);
        }
    }

    /// Tells every observer that `stage` starts, and times it until the clock is stopped.
    pub fn start(&self, stage: impl AsRef<str>) -> StageClock {
        let stage = stage.as_ref();
        for observer in &self.observers {
            observer.started(stage);
        }
        StageClock {
            stages: self.clone(),
            stage: stage.to_owned(),
            started: Instant::now(),
        }
    }
}

/// One running stage. Stop it with [`StageClock::ok`] or [`StageClock::failed`]; a clock
/// dropped unstopped (the run returned early) reports the stage as failed.
pub struct StageClock {
    stages: Stages,
    stage: String,
    started: Instant,
}

impl StageClock {
    pub fn ok(self) {
        self.stop(true, "");
    }

    pub fn failed(self, why: &str) {
        self.stop(false, why);
    }

    /// Stops the clock as `result` says and hands `result` back; `why` renders a failure.
    pub fn finish<T, E>(self, result: Result<T, E>, why: impl Fn(&E) -> String) -> Result<T, E> {
        match &result {
            Ok(_) => self.ok(),
            Err(error) => self.failed(&why(error)),
        }
        result
    }

    fn stop(mut self, ok: bool, why: &str) {
        self.report(ok, why);
        self.stages.observers.clear();
    }

    fn report(&self, ok: bool, why: &str) {
        let elapsed = self.started.elapsed();
        for observer in &self.stages.observers {
            observer.ended(&self.stage, ok, elapsed, why);
        }
    }
}

impl Drop for StageClock {
    fn drop(&mut self) {
        if !self.stages.observers.is_empty() {
            self.report(false, "stopped before it ended");
        }
    }
}

/// Prints one line to standard error as each stage starts and as it ends, after `prefix:`.
pub struct StderrStages {
    prefix: String,
}

impl StderrStages {
    pub fn new(prefix: &str) -> StderrStages {
        StderrStages {
            prefix: prefix.to_owned(),
        }
    }

    /// The line for a stage that starts.
    pub fn start_line(&self, stage: &str) -> String {
        format!("{}: {stage} …", self.prefix)
    }

    /// The line for something noted while a stage runs.
    pub fn note_line(&self, line: &str) -> String {
        format!("{}:   {line}", self.prefix)
    }

    /// The line for a stage that ended.
    pub fn end_line(&self, stage: &str, ok: bool, elapsed: Duration, detail: &str) -> String {
        let seconds = elapsed.as_secs_f64();
        if ok {
            format!("{}: {stage} done in {seconds:.1} s", self.prefix)
        } else {
            format!(
                "{}: {stage} FAILED in {seconds:.1} s: {detail}",
                self.prefix
            )
        }
    }
}

impl StageObserver for StderrStages {
    fn started(&self, stage: &str) {
        eprintln!("{}", self.start_line(stage));
    }

    fn ended(&self, stage: &str, ok: bool, elapsed: Duration, detail: &str) {
        eprintln!("{}", self.end_line(stage, ok, elapsed, detail));
    }

    fn noted(&self, _stage: &str, line: &str) {
        eprintln!("{}", self.note_line(line));
    }
}

/// Records each stage's duration in the process's metrics.
pub struct MeteredStages {
    telemetry: Arc<Telemetry>,
}

impl MeteredStages {
    pub fn new(telemetry: Arc<Telemetry>) -> MeteredStages {
        MeteredStages { telemetry }
    }
}

impl StageObserver for MeteredStages {
    fn started(&self, _stage: &str) {}

    fn ended(&self, stage: &str, ok: bool, elapsed: Duration, _detail: &str) {
        self.telemetry.stage_ended(stage, ok, elapsed);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[derive(Default)]
    struct Recorder(Mutex<Vec<String>>);

    impl StageObserver for Recorder {
        fn started(&self, stage: &str) {
            self.0.lock().unwrap().push(format!("start {stage}"));
        }
        fn ended(&self, stage: &str, ok: bool, _elapsed: Duration, detail: &str) {
            self.0
                .lock()
                .unwrap()
                .push(format!("end {stage} {ok} {detail}"));
        }
    }

    #[test]
    fn each_stage_is_told_once_when_it_starts_and_once_when_it_ends() {
        let recorder = Arc::new(Recorder::default());
        let stages = Stages::none().with(recorder.clone());
        stages.start("triage").ok();
        let refused: anyhow::Result<()> = Err(anyhow::anyhow!("no plan"));
        let _ = stages
            .start("plan")
            .finish(refused, |why| format!("{why:#}"));
        assert_eq!(
            *recorder.0.lock().unwrap(),
            [
                "start triage",
                "end triage true ",
                "start plan",
                "end plan false no plan"
            ]
        );
    }

    #[test]
    fn a_stage_abandoned_by_an_early_return_ends_as_failed() {
        let recorder = Arc::new(Recorder::default());
        let stages = Stages::none().with(recorder.clone());
        drop(stages.start("validate"));
        assert_eq!(
            *recorder.0.lock().unwrap(),
            [
                "start validate",
                "end validate false stopped before it ended"
            ]
        );
    }

    #[test]
    fn the_terminal_lines_name_the_stage_its_time_and_why_it_failed() {
        let printer = StderrStages::new("autofix fix");
        assert_eq!(printer.start_line("plan"), "autofix fix: plan …");
        assert_eq!(
            printer.end_line("plan", true, Duration::from_millis(1250), ""),
            "autofix fix: plan done in 1.2 s"
        );
        assert_eq!(
            printer.end_line(
                "validate",
                false,
                Duration::from_secs(3),
                "`cargo test` failed"
            ),
            "autofix fix: validate FAILED in 3.0 s: `cargo test` failed"
        );
    }

    #[test]
    fn metered_stages_land_in_the_duration_histogram() {
        let telemetry = Arc::new(Telemetry::new());
        let stages = Stages::none().with(Arc::new(MeteredStages::new(telemetry.clone())));
        stages.start("push").ok();
        let mut text = String::new();
        telemetry.render(&mut text);
        assert!(
            text.contains("autofix_stage_duration_seconds_count{stage=\"push\",outcome=\"ok\"} 1")
        );
    }
}
