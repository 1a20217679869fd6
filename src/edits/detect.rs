//! Which of the four formats a response is written in, and parsing it into an [`EditSet`]:
//! the format whose first marker comes earliest in the text wins.

use super::{EditFormat, EditSet, ParseError, fenced, json_writes, search_replace, udiff};

/// The format of `text`, judged by which format's opening marker appears first.
pub fn detect(text: &str) -> Option<EditFormat> {
    if json_writes::looks_like(text) {
        return Some(EditFormat::Json);
    }
    let lines: Vec<&str> = text.lines().collect();
    lines.iter().enumerate().find_map(|(index, line)| {
        let line = line.trim_end();
        if is_search_marker(line) {
            Some(EditFormat::SearchReplace)
        } else if is_fenced_opening(line) {
            Some(EditFormat::Fenced)
        } else if is_diff_start(line, lines.get(index + 1).copied()) {
            Some(EditFormat::Udiff)
        } else {
            None
        }
    })
}

/// Parses `text` in `format`, or in the detected format when none is given.
pub fn parse(text: &str, format: Option<EditFormat>) -> Result<EditSet, ParseError> {
    let format = match format.or_else(|| detect(text)) {
        Some(format) => format,
        None if text.trim().is_empty() => return Err(ParseError::new("the response is empty")),
        None => {
            return Err(ParseError::new(
                "the response holds no edits in any known format (`^^^path` blocks, JSON writes, a unified diff, or SEARCH/REPLACE blocks)",
            ));
        }
    };
    let (summary, edits) = match format {
        EditFormat::Fenced => (None, fenced::parse(text)?),
        EditFormat::Json => {
            let (summary, edits) = json_writes::parse(text)?;
            (Some(summary), edits)
        }
        EditFormat::Udiff => (None, udiff::parse(text)?),
        EditFormat::SearchReplace => (None, search_replace::parse(text)?),
    };
    Ok(EditSet {
        format,
        summary,
        edits,
    })
}

fn is_search_marker(line: &str) -> bool {
    let trimmed = line.trim_start();
    let arrows = trimmed.bytes().take_while(|b| *b == b'<').count();
    (5..=9).contains(&arrows) && trimmed[arrows..].trim() == "SEARCH"
}

fn is_fenced_opening(line: &str) -> bool {
    line.trim_start()
        .strip_prefix("^^^")
        .is_some_and(|name| !name.trim().is_empty() && name.trim() != "end")
}

fn is_diff_start(line: &str, next: Option<&str>) -> bool {
    line.starts_with("diff --git ")
        || (line.starts_with("--- ") && next.is_some_and(|n| n.starts_with("+++ ")))
        || line.starts_with("@@")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_format_is_recognised_by_its_marker() {
        assert_eq!(detect("^^^src/a.rs\nx\n^^^end"), Some(EditFormat::Fenced));
        assert_eq!(
            detect("```json\n{\"writes\": []}\n```"),
            Some(EditFormat::Json)
        );
        assert_eq!(
            detect("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"),
            Some(EditFormat::Udiff)
        );
        assert_eq!(
            detect("x.py\n```\n<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n```"),
            Some(EditFormat::SearchReplace)
        );
        assert_eq!(detect("just words"), None);
    }

    #[test]
    fn the_earliest_marker_wins_when_a_file_body_quotes_another_format() {
        let text = "^^^notes.txt\n<<<<<<< SEARCH\n^^^end\n";
        assert_eq!(detect(text), Some(EditFormat::Fenced));
    }

    #[test]
    fn a_response_with_no_edits_says_what_was_looked_for() {
        let err = parse("Looks good to me!", None).unwrap_err();
        assert!(
            err.to_string().contains("no edits in any known format"),
            "{err}"
        );
        assert_eq!(
            parse("  \n", None).unwrap_err().to_string(),
            "the response is empty"
        );
    }
}
