//! The edit stage's prompt: issue, plan, context files with their hashes, the repository's
//! instructions, and on repair rounds the validation failure or the reviewer's must-fix items.

use super::context::Context;
use super::issue::Issue;
use super::plan::Plan;

/// What the previous round is telling this one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Feedback {
    /// A validation command failed: its name, argv and the tail of its output.
    ValidationFailed {
        command: String,
        output_tail: String,
    },
    /// The reviewer sent the work back.
    ReviewRejected {
        must_fixes: Vec<String>,
        reasons: Vec<String>,
    },
    /// The previous answer could not be applied: why.
    EditRefused { reason: String },
}

/// The edit prompt; any of the four edit formats is accepted in the answer, the prompt asks
/// for SEARCH/REPLACE blocks (or whole files for new ones).
pub fn edit_prompt(
    _issue: &Issue,
    _plan: &Plan,
    _context: &Context,
    _instructions: &str,
    _feedback: Option<&Feedback>,
) -> String {
    String::new()
}
