//! Talking to the model and keeping to the job's limits: each exchange kept as artifacts, JSON
//! answers read with one corrective round, the budget and a maintainer's cancel checked.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::{Job, io_failure};
use crate::failure::{Failure, FailureCode, Stage};
use crate::llm::price::dollars;
use crate::llm::{LlmRequest, LlmResponse, ResponseSchema};
use crate::pipeline::StageOutputError;
use crate::pipeline::context::BYTES_PER_TOKEN;
use crate::pipeline::json_stage::{Problem, corrective_prompt};
use crate::telemetry::StageClock;

/// The sampling temperature of candidates after the first.
const CANDIDATE_TEMPERATURE: f32 = 0.8;

impl Job<'_> {
    /// One LLM exchange for `stage` (its answer capped at `cap` tokens, in `schema` when
    /// given), with its prompt and answer kept as artifacts.
    pub(super) async fn ask(
        &mut self,
        stage: Stage,
        prompt: String,
        cap: u32,
        schema: Option<ResponseSchema>,
    ) -> Result<LlmResponse, Failure> {
        self.check_budget(stage)?;
        self.round += 1;
        let stem = format!("{:02}-{stage}", self.round);
        // The prompt quotes command output and files a command may have written: what the
        // model reads is what the artifact shows, secrets redacted.
        let prompt = self.options.redactor.redact(&prompt);
        self.log
            .write_text(&format!("rounds/{stem}-prompt.txt"), &prompt)
            .map_err(io_failure(stage))?;
        let spend = &self.options.spend;
        // The schema travels with the prompt and is read (and billed) as part of it.
        let schema_bytes = schema.as_ref().map_or(0, |s| s.schema.to_string().len());
        let prompt_tokens = (prompt.len() + schema_bytes).div_ceil(BYTES_PER_TOKEN) as u64;
        let worst_case = spend.pricing().worst_case(prompt_tokens, u64::from(cap));
        let allowance = spend.allow(worst_case).map_err(|crossed| {
            Failure::new(FailureCode::BudgetExceeded, stage, crossed.to_string())
        })?;
        let request = LlmRequest {
            stage: stage.to_string(),
            system: None,
            prompt,
            temperature: Some(self.temperature()),
            max_output_tokens: Some(cap),
            schema,
            candidate: self.candidate,
        };
        let response = self
            .llm
            .complete(&request)
            .await
            .map_err(|err| Failure::new(FailureCode::LlmError, stage, err.to_string()))?;
        let usage = response.usage;
        let cost = spend.pricing().cost(&usage);
        allowance.record(cost);
        self.summary.input_tokens += usage.input_tokens;
        self.summary.output_tokens += usage.output_tokens;
        let cached = match usage.cached_input_tokens {
            0 => String::new(),
            cached => format!(" ({cached} cached)"),
        };
        self.log.line(&format!(
            "{stage}: {} tokens in{cached}, {} out, {}",
            usage.input_tokens,
            usage.output_tokens,
            dollars(cost),
        ));
        self.tokens
            .fetch_add(usage.input_tokens + usage.output_tokens, Ordering::SeqCst);
        self.log
            .write_text(&format!("rounds/{stem}-response.txt"), &response.text)
            .map_err(io_failure(stage))?;
        if response.truncated() {
            self.log.line(&format!(
                "{stage}: the answer stopped at the {cap}-token cap ({})",
                response.finish_reason.as_deref().unwrap_or_default()
            ));
        }
        self.check_budget(stage)?;
        Ok(response)
    }

    /// A JSON stage's exchange: the answer in the stage's schema, read by `parse`. An answer
    /// that cannot be read (or was cut off) gets one corrective round naming the problem; a
    /// second failure ends the job.
    pub(super) async fn ask_json<T>(
        &mut self,
        stage: Stage,
        prompt: String,
        schema: ResponseSchema,
        cap: u32,
        parse: impl Fn(&str) -> Result<T, StageOutputError>,
    ) -> Result<T, Failure> {
        let read = |response: &LlmResponse| {
            if response.truncated() {
                return Err(Problem::CutOff {
                    cap,
                    finish_reason: response.finish_reason.clone().unwrap_or_default(),
                });
            }
            parse(&response.text).map_err(Problem::Unreadable)
        };
        let first = self
            .ask(stage, prompt.clone(), cap, Some(schema.clone()))
            .await?;
        let problem = match read(&first) {
            Ok(answer) => return Ok(answer),
            Err(problem) => problem,
        };
        self.summary.corrections += 1;
        self.log.line(&format!(
            "{stage}: the answer cannot be used ({}); asking once more",
            problem.describe()
        ));
        let retry = corrective_prompt(&prompt, &problem, &first.text, &schema);
        let second = self.ask(stage, retry, cap, Some(schema)).await?;
        read(&second).map_err(|problem| {
            let (code, reason) = problem.failure(stage, &format!("llm.max_output_tokens_{stage}"));
            Failure::new(code, stage, reason)
        })
    }

    /// A maintainer's `cancel` ends the run at the next stage boundary (and before every
    /// model call and command, which check the budget too).
    pub(super) fn check_cancelled(&self, stage: Stage) -> Result<(), Failure> {
        if self.options.cancel.is_cancelled() {
            return Err(Failure::new(
                FailureCode::Cancelled,
                stage,
                "cancelled by a maintainer",
            ));
        }
        if self.stop.is_stopped() {
            return Err(Failure::new(
                FailureCode::Cancelled,
                stage,
                "stopped: another candidate passed everything first",
            ));
        }
        Ok(())
    }

    pub(super) fn check_budget(&self, stage: Stage) -> Result<(), Failure> {
        self.check_cancelled(stage)?;
        let budget = &self.ready.config.budget;
        // Every candidate of the job counts against the one budget.
        let tokens = self.tokens.load(Ordering::SeqCst);
        if tokens > budget.max_tokens {
            return Err(Failure::new(
                FailureCode::BudgetExceeded,
                stage,
                format!(
                    "{tokens} tokens used, over the budget of {}",
                    budget.max_tokens
                ),
            ));
        }
        let elapsed = self.started.elapsed();
        if elapsed > Duration::from_secs(budget.max_wall_secs) {
            return Err(Failure::new(
                FailureCode::BudgetExceeded,
                stage,
                format!(
                    "{} s spent, over the budget of {} s",
                    elapsed.as_secs(),
                    budget.max_wall_secs
                ),
            ));
        }
        Ok(())
    }

    /// Candidate 1 (and a job of one) asks for the likeliest answer; the others sample, when
    /// the model takes a temperature.
    fn temperature(&self) -> f32 {
        match self.candidate {
            Some(number) if number > 1 && crate::llm::accepts_temperature(self.llm.model()) => {
                CANDIDATE_TEMPERATURE
            }
            _ => 0.0,
        }
    }

    pub(super) fn start(&self, stage: Stage) -> StageClock {
        self.options.stages.start(stage)
    }

    pub(super) fn job_id(&self) -> String {
        self.options
            .job_id
            .clone()
            .unwrap_or_else(|| format!("fix-{}", self.ready.number))
    }
}
