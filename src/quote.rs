//! How text from outside autofix (issues, files, command output, CI logs, model answers) is
//! quoted into what autofix itself writes: prompts, logs, comments and pull request bodies.
//!
//! - [`fenced`]: a block of it in a code fence that no line inside can close.
//! - [`one_line`]: a field that must stay on one line (a title, a path, a name, a log field).
//! - [`inert`] and [`code_span`]: Markdown the bot posts that shows the text and does nothing
//!   else (no mention, link, image, HTML or reference).

mod fence;
mod line;
mod markdown;

pub use fence::fenced;
pub use line::one_line;
pub use markdown::{code_span, inert};
