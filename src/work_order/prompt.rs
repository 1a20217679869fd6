//! The prompt of one attempt (docs/local-commands.md): intent, constraints,
//! allowed files with their current hashes, bounded context, the last failure, the JSON contract.

use std::path::Path;

use super::schema::{FailureBrief, MAX_CONTEXT_BYTES, ValidWorkOrder};
use crate::anchored::Tree;
use crate::edits::apply::sha256_hex;
use crate::quote::fenced;

const CONTRACT: &str = "\
Answer with ONE JSON object and nothing else (no prose; a single ```json fence is tolerated):
{\"summary\": \"<one sentence>\", \"writes\": [{\"path\": \"<one of the allowed files>\", \"base_sha256\": \"<the file's current sha256 shown above>\", \"content\": \"<the file's complete new content>\"}]}
Rules: `writes` is non-empty; each `content` is the WHOLE new file, text only; write only allowed
files; copy `base_sha256` exactly as listed above (a file that does not exist yet has the sha256 of
empty content); you do not run commands: the harness runs the acceptance commands itself.";

/// The prompt for attempt `attempt` of `order` in the repository at `root`.
pub fn attempt_prompt(
    root: &Path,
    order: &ValidWorkOrder,
    attempt: usize,
    brief: Option<&FailureBrief>,
) -> String {
    let work = &order.order;
    let mut prompt = String::new();
    prompt.push_str(&format!("# Work order {}: {}\n\n", work.id, work.title));
    prompt.push_str(&format!("## Intent\n{}\n\n", work.intent.trim()));
    if let Some(notes) = work.notes.as_deref().filter(|n| !n.trim().is_empty()) {
        prompt.push_str(&format!("## Notes\n{}\n\n", notes.trim()));
    }
    prompt.push_str("## Forbidden\n");
    if work.forbidden.is_empty() {
        prompt.push_str("- (nothing beyond the rules below)\n");
    }
    for rule in &work.forbidden {
        prompt.push_str(&format!("- {rule}\n"));
    }
    prompt.push_str("\n## Allowed files (path: current sha256)\n");
    for path in &order.allowed_files {
        let bytes = read_file(root, path);
        let state = match &bytes {
            Some(b) => sha256_hex(b),
            None => format!("{} (does not exist yet)", sha256_hex(b"")),
        };
        prompt.push_str(&format!("- {path}: {state}\n"));
    }
    prompt.push_str("\n## Acceptance commands (run by the harness after your writes)\n");
    for command in &work.acceptance_commands {
        prompt.push_str(&format!("- `{command}`\n"));
    }
    prompt.push_str("\n## Context files\n");
    push_context(&mut prompt, root, &order.context_files);
    if let Some(brief) = brief {
        prompt.push_str(&format!(
            "\n## Attempt {} failed; attempt {attempt} starts again from the original files\n",
            attempt - 1
        ));
        prompt.push_str(&format!(
            "stage: {} ({})\n",
            brief.stage.as_str(),
            brief.code
        ));
        if let Some(command) = &brief.command {
            prompt.push_str(&format!("command: {command}\n"));
        }
        if let Some(code) = brief.exit_code {
            prompt.push_str(&format!("exit code: {code}\n"));
        }
        prompt.push_str("error excerpt:\n");
        prompt.push_str(&fenced("", brief.primary_error_excerpt.trim_end()));
        prompt.push_str(&format!("reminder: {}\n", brief.constraints_reminder));
    }
    prompt.push_str("\n## Output contract\n");
    prompt.push_str(CONTRACT);
    prompt.push('\n');
    prompt
}

/// Largest file the prompt reads (to hash or to show the start of).
const MAX_READ_BYTES: u64 = 64 * 1024 * 1024;

/// A repository file's bytes, read through the work tree's anchored handle: `None` when it is
/// missing, is a link or lies below one, is not a regular file, or is too large.
fn read_file(root: &Path, path: &str) -> Option<Vec<u8>> {
    Tree::open(root).ok()?.read(path, MAX_READ_BYTES).ok()?
}

/// Context files in order, cut deterministically once `MAX_CONTEXT_BYTES` have been shown.
fn push_context(prompt: &mut String, root: &Path, files: &[String]) {
    if files.is_empty() {
        prompt.push_str("(none)\n");
        return;
    }
    let mut budget = MAX_CONTEXT_BYTES;
    for path in files {
        let Some(bytes) = read_file(root, path) else {
            prompt.push_str(&format!("### {path}\n(does not exist yet)\n"));
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        let shown = cut_at_char_boundary(&text, budget);
        budget -= shown.len();
        let mut block = shown.to_owned();
        if shown.len() < text.len() {
            if !block.ends_with('\n') {
                block.push('\n');
            }
            block.push_str(&format!(
                "[... {} more bytes not shown: the context limit of {MAX_CONTEXT_BYTES} bytes was reached ...]\n",
                text.len() - shown.len()
            ));
        }
        prompt.push_str(&format!("### {path}\n{}", fenced("", &block)));
    }
}

fn cut_at_char_boundary(text: &str, limit: usize) -> &str {
    if text.len() <= limit {
        return text;
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}
