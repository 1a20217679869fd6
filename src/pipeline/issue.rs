//! The issue a pipeline run works on, read from a file: JSON (`{"number", "title", "body",
//! "labels"}`) or Markdown (first line the title, `# ` optional; the rest the body).

use std::path::{Path, PathBuf};

use crate::failure::Stage;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::StageOutputError;
use super::answer::{Fields, describe};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Issue {
    pub number: Option<u64>,
    pub title: String,
    pub body: String,
    pub labels: Vec<String>,
}

/// Why an issue file cannot be used: one line saying what is missing or malformed.
#[derive(Debug, thiserror::Error)]
pub enum IssueFileError {
    #[error("cannot read the issue file {}: {error}", path.display())]
    Unreadable {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("the issue file is not UTF-8 text")]
    NotUtf8,
    #[error("issue: the file is empty; it needs at least a title line")]
    Empty,
    #[error("issue: the file starts with `{{` but is not valid JSON: {0}")]
    NotJson(serde_json::Error),
    #[error("issue: the file must hold one JSON object")]
    NotAnObject,
    /// A field missing or of the wrong type, as [`Fields`] words it.
    #[error("issue: {}", .0.message)]
    Field(StageOutputError),
    #[error("issue: \"number\" must be a positive integer, not {0}")]
    Number(String),
    #[error("issue: \"labels\" must be a list of strings, not {0}")]
    Labels(String),
    #[error("issue: \"labels[{index}]\" must be a label name (a non-empty string), not {found}")]
    Label { index: usize, found: String },
    #[error("issue: the first line {0:?} has no title text after its `#`s")]
    NoTitle(String),
}

impl Issue {
    /// Reads and parses the issue file at `path`.
    pub fn read(path: &Path) -> Result<Issue, IssueFileError> {
        let bytes = std::fs::read(path).map_err(|error| IssueFileError::Unreadable {
            path: path.to_path_buf(),
            error,
        })?;
        let text = String::from_utf8(bytes).map_err(|_| IssueFileError::NotUtf8)?;
        Issue::parse(&text)
    }

    /// Parses an issue file; the error is one line saying what is missing or malformed.
    ///
    /// A file whose first non-blank character is `{` is JSON: `title` (a non-empty string) is
    /// required; `number` (a positive integer), `body` (a string) and `labels` (strings, or
    /// objects with a `name` as the GitHub API returns them) are optional, `null` counting as
    /// absent; other fields are ignored, so a GitHub issue can be saved and used as it is.
    /// Anything else is Markdown or plain text: the first non-blank line, without its leading
    /// `#`s, is the title and the rest is the body.
    pub fn parse(text: &str) -> Result<Issue, IssueFileError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        if text.trim().is_empty() {
            return Err(IssueFileError::Empty);
        }
        if text.trim_start().starts_with('{') {
            parse_json(text)
        } else {
            parse_markdown(text)
        }
    }
}

fn parse_json(text: &str) -> Result<Issue, IssueFileError> {
    let value: Value = serde_json::from_str(text).map_err(IssueFileError::NotJson)?;
    let Value::Object(object) = &value else {
        return Err(IssueFileError::NotAnObject);
    };
    // The issue file is read at preflight; its messages name the file (`issue: …`).
    let fields = Fields::new(Stage::Preflight, object);
    let title = fields.text("title").map_err(IssueFileError::Field)?;
    let number = match fields.optional("number") {
        None => None,
        Some(value) => Some(
            value
                .as_u64()
                .filter(|number| *number > 0)
                .ok_or_else(|| IssueFileError::Number(describe(value)))?,
        ),
    };
    let body = fields
        .optional_string("body")
        .map_err(IssueFileError::Field)?
        .unwrap_or_default();
    let labels = match fields.optional("labels") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(index, item)| label_name(index, item))
            .collect::<Result<_, _>>()?,
        Some(other) => return Err(IssueFileError::Labels(describe(other))),
    };
    Ok(Issue {
        number,
        title,
        // GitHub sends bodies with CRLF line ends; prompts and comments want one kind.
        body: body.replace("\r\n", "\n").trim().to_string(),
        labels,
    })
}

/// A label as a string, or as the GitHub API's `{"name": …}` object.
fn label_name(index: usize, item: &Value) -> Result<String, IssueFileError> {
    let name = match item {
        Value::String(name) => Some(name.as_str()),
        Value::Object(object) => object.get("name").and_then(Value::as_str),
        _ => None,
    };
    match name.map(str::trim) {
        Some(name) if !name.is_empty() => Ok(name.to_string()),
        _ => Err(IssueFileError::Label {
            index,
            found: describe(item),
        }),
    }
}

fn parse_markdown(text: &str) -> Result<Issue, IssueFileError> {
    let mut lines = text.lines();
    let first = lines
        .by_ref()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or_default();
    let title = first.trim_start_matches('#').trim();
    if title.is_empty() {
        return Err(IssueFileError::NoTitle(first.to_string()));
    }
    let body = lines
        .skip_while(|line| line.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    Ok(Issue {
        number: None,
        title: title.to_string(),
        body: body.trim_end().to_string(),
        labels: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_issue_with_every_field_is_read() {
        let issue = Issue::parse(
            r#"{"number": 42, "title": " Fix typo in README ", "body": "Line 15:\r\n'teh'\r\n",
                "labels": ["bug", "docs"], "state": "open"}"#,
        )
        .unwrap();
        assert_eq!(
            issue,
            Issue {
                number: Some(42),
                title: "Fix typo in README".into(),
                body: "Line 15:\n'teh'".into(),
                labels: vec!["bug".into(), "docs".into()],
            }
        );
    }

    #[test]
    fn a_json_issue_needs_only_a_title() {
        let issue = Issue::parse(r#"{"title": "Crash on empty input", "body": null}"#).unwrap();
        assert_eq!(issue.number, None);
        assert_eq!(issue.body, "");
        assert!(issue.labels.is_empty());
    }

    #[test]
    fn labels_may_be_github_label_objects() {
        let issue =
            Issue::parse(r#"{"title": "t", "labels": [{"name": "bug", "color": "f29513"}]}"#)
                .unwrap();
        assert_eq!(issue.labels, ["bug"]);
    }

    #[test]
    fn a_json_issue_without_a_usable_title_is_refused() {
        assert_eq!(
            Issue::parse(r#"{"number": 1}"#).unwrap_err().to_string(),
            "issue: \"title\" is missing"
        );
        assert_eq!(
            Issue::parse(r#"{"title": "  "}"#).unwrap_err().to_string(),
            "issue: \"title\" must not be empty"
        );
        assert_eq!(
            Issue::parse(r#"{"title": 7}"#).unwrap_err().to_string(),
            "issue: \"title\" must be a string, not 7"
        );
    }

    #[test]
    fn a_number_that_is_not_a_positive_integer_is_refused() {
        for (number, shown) in [
            ("0", "0"),
            ("-3", "-3"),
            ("4.5", "4.5"),
            ("\"42\"", "\"42\""),
        ] {
            assert_eq!(
                Issue::parse(&format!(r#"{{"title": "t", "number": {number}}}"#))
                    .unwrap_err()
                    .to_string(),
                format!("issue: \"number\" must be a positive integer, not {shown}")
            );
        }
    }

    #[test]
    fn labels_that_are_not_names_are_refused() {
        assert_eq!(
            Issue::parse(r#"{"title": "t", "labels": "bug"}"#)
                .unwrap_err()
                .to_string(),
            "issue: \"labels\" must be a list of strings, not \"bug\""
        );
        assert_eq!(
            Issue::parse(r#"{"title": "t", "labels": ["bug", 5]}"#)
                .unwrap_err()
                .to_string(),
            "issue: \"labels[1]\" must be a label name (a non-empty string), not 5"
        );
    }

    #[test]
    fn a_body_that_is_not_a_string_is_refused() {
        assert_eq!(
            Issue::parse(r#"{"title": "t", "body": ["a"]}"#)
                .unwrap_err()
                .to_string(),
            "issue: \"body\" must be a string, not [\"a\"]"
        );
    }

    #[test]
    fn broken_json_is_refused_with_the_parsers_position() {
        assert_eq!(
            Issue::parse("{\"title\": \"t\",}").unwrap_err().to_string(),
            "issue: the file starts with `{` but is not valid JSON: trailing comma at line 1 column 15"
        );
    }

    #[test]
    fn a_markdown_issue_takes_its_first_line_as_the_title() {
        let issue = Issue::parse(
            "\n\n## Parser crashes on empty input\n\nRun `parse(\"\")`:\n\n    panic\n\n",
        )
        .unwrap();
        assert_eq!(issue.title, "Parser crashes on empty input");
        assert_eq!(issue.body, "Run `parse(\"\")`:\n\n    panic");
        assert_eq!(issue.number, None);
    }

    #[test]
    fn a_plain_text_issue_may_be_a_single_line() {
        let issue = Issue::parse("\u{feff}Make the greeting friendlier").unwrap();
        assert_eq!(issue.title, "Make the greeting friendlier");
        assert_eq!(issue.body, "");
    }

    #[test]
    fn an_empty_file_or_a_bare_heading_mark_is_refused() {
        assert_eq!(
            Issue::parse(" \n\t\n").unwrap_err().to_string(),
            "issue: the file is empty; it needs at least a title line"
        );
        assert_eq!(
            Issue::parse("###\nbody").unwrap_err().to_string(),
            "issue: the first line \"###\" has no title text after its `#`s"
        );
    }
}
