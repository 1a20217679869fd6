//! The sections every stage's prompt shares: the issue and the repository's instructions,
//! their text fenced (and cut first should the prompt be over its budget), one-line fields flat.

use super::budget::{Keep, Part};
use super::issue::Issue;
use crate::config::repo::Instructions;
use crate::quote::one_line;

/// The issue: its number and title as a heading, its labels, its body in a fence so that
/// Markdown headings inside it cannot pass for sections of the prompt. The title and labels
/// are flattened: a line break in them cannot start a section either.
pub fn issue_section(issue: &Issue) -> String {
    issue_part(issue).whole()
}

/// [`issue_section`] as a prompt part: its body is kept from the start when cut.
pub fn issue_part(issue: &Issue) -> Part {
    let title = one_line(&issue.title);
    let mut section = match issue.number {
        Some(number) => format!("\n## Issue #{number}: {title}\n"),
        None => format!("\n## Issue: {title}\n"),
    };
    if !issue.labels.is_empty() {
        let labels: Vec<String> = issue.labels.iter().map(|label| one_line(label)).collect();
        section.push_str(&format!("Labels: {}\n", labels.join(", ")));
    }
    if issue.body.trim().is_empty() {
        section.push_str("(The issue has no description beyond its title.)\n");
        return Part::fixed(section);
    }
    Part::fenced(issue.body.clone(), Keep::Head, "the issue's text").before(section)
}

/// The repository's instruction files (AGENTS.md and the like), when it has any.
pub fn instructions_section(instructions: &str) -> String {
    instructions_part(instructions).whole()
}

/// [`instructions_section`] as a prompt part: kept from the start when cut.
pub fn instructions_part(instructions: &str) -> Part {
    if instructions.trim().is_empty() {
        return Part::fixed("");
    }
    Part::fenced(
        instructions.trim_end(),
        Keep::Head,
        "the repository's instructions",
    )
    .before(
        "\n## Repository instructions\nThe maintainers' guidance for contributors; follow it \
         where it applies.\n",
    )
}

/// The instruction files as the prompts show them: each under its path.
pub fn instruction_text(instructions: &Instructions) -> String {
    instructions
        .files
        .iter()
        .map(|file| format!("## {}\n{}", file.path, file.text))
        .collect::<Vec<_>>()
        .join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_issue_without_number_labels_or_body_still_reads_well() {
        let section = issue_section(&Issue {
            number: None,
            title: "Add a --verbose flag".into(),
            body: String::new(),
            labels: vec![],
        });
        assert_eq!(
            section,
            "\n## Issue: Add a --verbose flag\n(The issue has no description beyond its title.)\n"
        );
    }

    #[test]
    fn empty_instructions_leave_no_section() {
        assert_eq!(instructions_section(" \n"), "");
    }
}
