//! Every text the bot writes on a forge: the status comment (a checklist edited in place), the
//! pull/merge request body, the failure report and the polite refusals. Pure functions of data;
//! whatever in them the model (or anyone but the engine) wrote goes through `crate::quote`.
//!
//! `status` writes the status comment, `change_request` the pull/merge request body, `refusal`
//! the comments that decline a request; the markers and the cost line they share are here.

mod change_request;
mod refusal;
mod status;
#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

use crate::llm::price::dollars;
use crate::pipeline::fix::FixSummary;
use crate::store::JobId;

pub use change_request::{ChangeRequestFacts, change_request_body, proof_lines};
pub use refusal::{Refusal, refusal_comment};
pub use status::{
    FailureReport, ReproductionStatus, StatusOutcome, StatusView, Step, status_comment,
};

/// The hidden line that marks the status comment of a job, so a restarted job finds it again
/// among the bot's own comments (see `own_marks`: the line alone makes no comment the bot's).
pub fn status_marker(job: JobId) -> String {
    format!("<!-- autofix:status job={job} -->")
}

/// The hidden line in a pull request body naming the issue and job it belongs to, for people
/// and tools reading it; autofix knows its own change requests by the store and their author.
pub fn change_request_marker(job: JobId, issue: u64) -> String {
    format!("<!-- autofix:change-request job={job} issue={issue} -->")
}

/// What the job's model calls cost, as the status comment and the change request show it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    pub usd: f64,
    pub tokens: u64,
    /// The model has no known price: its calls counted as $0.
    pub price_unknown: bool,
}

impl Cost {
    /// The cost of one pipeline run.
    pub fn of(summary: &FixSummary) -> Cost {
        Cost {
            usd: summary.cost_usd,
            tokens: summary.input_tokens + summary.output_tokens,
            price_unknown: summary.price_unknown,
        }
    }

    /// `Cost: $0.0123 (12,345 tokens)`, or `Cost: price unknown (12,345 tokens)`.
    pub fn line(&self) -> String {
        let amount = if self.price_unknown {
            "price unknown".to_owned()
        } else {
            dollars(self.usd)
        };
        format!("Cost: {amount} ({} tokens)", grouped(self.tokens))
    }
}

/// `12345` → `12,345`.
fn grouped(number: u64) -> String {
    let digits = number.to_string();
    let mut text = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            text.push(',');
        }
        text.push(digit);
    }
    text
}
