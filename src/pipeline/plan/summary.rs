//! The commit summary and scope made to fit `type(scope): <summary>`: the model's own cut at a
//! word and freed of a type prefix, or one made from the title.

use super::{SUMMARY_MAX_CHARS, SUMMARY_MIN_CHARS};
use crate::git::CommitKind;

/// The model's summary made to fit `type(scope): <summary>`: its first line, without control
/// characters or a commit-type prefix, cut at a word to at most 100 characters; `None` when
/// fewer than 10 are left.
pub(super) fn usable_summary(summary: &str) -> Option<String> {
    let line = summary.lines().find(|line| !line.trim().is_empty())?;
    let mut line: String = line.chars().filter(|c| !c.is_control()).collect();
    if let Some(prefix) = type_prefix(&line) {
        line = line[prefix.len() + 2..].to_string();
    }
    let fitted = fit(line.trim().trim_end_matches('.'));
    (fitted.chars().count() >= SUMMARY_MIN_CHARS).then_some(fitted)
}

/// A summary made from the title, for a plan that gives none (or none usable):
/// `Crash when the input is empty.` → `crash when the input is empty`.
pub fn summary_from_title(title: &str) -> String {
    if let Some(summary) = usable_summary(title) {
        let mut chars = summary.chars();
        let first = chars.next().map(|c| c.to_lowercase().to_string());
        let lowered = format!("{}{}", first.unwrap_or_default(), chars.as_str());
        return lowered;
    }
    let title: String = title.chars().filter(|c| !c.is_control()).collect();
    let title = title.trim();
    if title.is_empty() {
        "resolve the reported issue".to_string()
    } else {
        fit(&format!("resolve the issue \"{title}\""))
    }
}

/// `text` cut at a word boundary to at most 100 characters.
fn fit(text: &str) -> String {
    if text.chars().count() <= SUMMARY_MAX_CHARS {
        return text.to_string();
    }
    let cut: String = text.chars().take(SUMMARY_MAX_CHARS + 1).collect();
    let at_word = cut
        .rfind(' ')
        .filter(|at| *at >= SUMMARY_MIN_CHARS)
        .map_or_else(
            || cut.chars().take(SUMMARY_MAX_CHARS).collect::<String>(),
            |at| cut[..at].to_string(),
        );
    at_word.trim_end().to_string()
}

/// The `fix:` / `feat(parser):` a model may put in front of the summary, which would end up
/// twice in the subject.
fn type_prefix(summary: &str) -> Option<&str> {
    let (head, _) = summary.split_once(": ")?;
    let kind = head.split_once('(').map_or(head, |(kind, _)| kind);
    let kind = kind.trim_end_matches('!');
    CommitKind::ALL
        .iter()
        .any(|known| known.as_str().eq_ignore_ascii_case(kind))
        .then_some(head)
}

/// The scope as `[a-z-]+`: lower case, anything else a `-`; `None` when nothing is left.
pub(super) fn usable_scope(scope: &str) -> Option<String> {
    let mut cleaned = String::new();
    for c in scope.trim().chars() {
        let c = c.to_ascii_lowercase();
        let c = if c.is_ascii_lowercase() { c } else { '-' };
        if !(c == '-' && (cleaned.is_empty() || cleaned.ends_with('-'))) {
            cleaned.push(c);
        }
    }
    let cleaned = cleaned.trim_end_matches('-').to_string();
    (!cleaned.is_empty()).then_some(cleaned)
}
