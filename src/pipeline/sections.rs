//! The sections every stage's prompt shares: the issue, the repository's instructions and the
//! file list, their text fenced and their one-line fields flattened (`crate::quote`).

use super::issue::Issue;
use crate::quote::{fenced, one_line};

/// The most repository paths a prompt lists; the rest are counted, not named.
pub const MAX_LISTED_FILES: usize = 2_000;

/// The issue: its number and title as a heading, its labels, its body in a fence so that
/// Markdown headings inside it cannot pass for sections of the prompt. The title and labels
/// are flattened: a line break in them cannot start a section either.
pub fn issue_section(issue: &Issue) -> String {
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
    } else {
        section.push_str(&fenced("", &issue.body));
    }
    section
}

/// The repository's instruction files (AGENTS.md and the like), when it has any.
pub fn instructions_section(instructions: &str) -> String {
    if instructions.trim().is_empty() {
        return String::new();
    }
    format!(
        "\n## Repository instructions\nThe maintainers' guidance for contributors; follow it \
         where it applies.\n{}",
        fenced("", instructions.trim_end())
    )
}

/// The repository's files, one path a line (a line break in a name escaped), at most
/// [`MAX_LISTED_FILES`] of them.
pub fn file_list_section(repo_files: &[String]) -> String {
    let mut section = format!("\n## Repository files ({})\n", repo_files.len());
    for path in repo_files.iter().take(MAX_LISTED_FILES) {
        section.push_str(&one_line(path));
        section.push('\n');
    }
    if repo_files.len() > MAX_LISTED_FILES {
        section.push_str(&format!(
            "(and {} more files not listed)\n",
            repo_files.len() - MAX_LISTED_FILES
        ));
    }
    section
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_file_list_is_cut_and_the_rest_counted() {
        let files: Vec<String> = (0..MAX_LISTED_FILES + 5)
            .map(|i| format!("f{i}.rs"))
            .collect();
        let section = file_list_section(&files);
        assert!(section.starts_with("\n## Repository files (2005)\nf0.rs\n"));
        assert!(section.contains("f1999.rs\n(and 5 more files not listed)\n"));
        assert!(!section.contains("f2000.rs"));
    }

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
