//! The sections every stage's prompt shares: the issue, the repository's instructions, the
//! file list, and fences that text from the issue or the repository cannot break out of.

use super::issue::Issue;

/// The most repository paths a prompt lists; the rest are counted, not named.
pub const MAX_LISTED_FILES: usize = 2_000;

/// The issue: its number and title as a heading, its labels, its body in a fence so that
/// Markdown headings inside it cannot pass for sections of the prompt.
pub fn issue_section(issue: &Issue) -> String {
    let mut section = match issue.number {
        Some(number) => format!("\n## Issue #{number}: {}\n", issue.title),
        None => format!("\n## Issue: {}\n", issue.title),
    };
    if !issue.labels.is_empty() {
        section.push_str(&format!("Labels: {}\n", issue.labels.join(", ")));
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

/// The repository's files, one path a line, at most [`MAX_LISTED_FILES`] of them.
pub fn file_list_section(repo_files: &[String]) -> String {
    let mut section = format!("\n## Repository files ({})\n", repo_files.len());
    for path in repo_files.iter().take(MAX_LISTED_FILES) {
        section.push_str(path);
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

/// `text` in a code fence long enough that no backtick run inside it can close it early.
pub fn fenced(info: &str, text: &str) -> String {
    let longest_run = text
        .split(|c| c != '`')
        .map(str::len)
        .max()
        .unwrap_or_default();
    let fence = "`".repeat(longest_run.max(2) + 1);
    let newline = if text.ends_with('\n') || text.is_empty() {
        ""
    } else {
        "\n"
    };
    format!("{fence}{info}\n{text}{newline}{fence}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fence_outgrows_the_backticks_inside_the_text() {
        assert_eq!(fenced("", "plain"), "```\nplain\n```\n");
        assert_eq!(
            fenced("", "a\n```rust\nb\n```\n"),
            "````\na\n```rust\nb\n```\n````\n"
        );
        assert_eq!(
            fenced("diff", "x ````` y"),
            "``````diff\nx ````` y\n``````\n"
        );
    }

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
