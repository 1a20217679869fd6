//! The `^^^path` … `^^^end` whole-file format of docs/code-commit.md: each block replaces one
//! file with its body, an empty body deletes the file, and text outside blocks is ignored.

use super::{Change, FileEdit, ParseError};

const MARKER: &str = "^^^";
const END: &str = "end";

/// Reads every `^^^` block of `text`. A block that is never closed, a `^^^end` that closes
/// nothing, a block without a file name, or two blocks for one file refuse the response.
pub fn parse(text: &str) -> Result<Vec<FileEdit>, ParseError> {
    let mut edits: Vec<FileEdit> = Vec::new();
    let mut open: Option<OpenBlock> = None;
    for (index, raw_line) in text.split('\n').enumerate() {
        let line_number = index + 1;
        let Some(name) = marker_name(raw_line) else {
            if let Some(block) = open.as_mut() {
                block.body.push(raw_line);
            }
            continue;
        };
        match (open.take(), name) {
            (Some(block), END) => edits.push(block.finish(&edits)?),
            (Some(block), other) => {
                return Err(ParseError::new(format!(
                    "the block for `{}` opened at line {} is not terminated: line {line_number} opens `^^^{other}` before its `^^^end`",
                    block.path, block.line
                )));
            }
            (None, END) => {
                return Err(ParseError::new(format!(
                    "line {line_number} has a `^^^end` that closes no block"
                )));
            }
            (None, "") => {
                return Err(ParseError::new(format!(
                    "line {line_number} opens a `^^^` block without a file name"
                )));
            }
            (None, path) => {
                open = Some(OpenBlock {
                    path: path.to_string(),
                    line: line_number,
                    body: Vec::new(),
                });
            }
        }
    }
    if let Some(block) = open {
        return Err(ParseError::new(format!(
            "the block for `{}` opened at line {} has no `^^^end` (the response may have been cut off)",
            block.path, block.line
        )));
    }
    if edits.is_empty() {
        return Err(ParseError::new(
            "the response holds no `^^^path` … `^^^end` blocks",
        ));
    }
    Ok(edits)
}

/// The text after `^^^` on a marker line, trimmed; `None` for any other line.
fn marker_name(line: &str) -> Option<&str> {
    let line = line.strip_suffix('\r').unwrap_or(line);
    line.trim_start().strip_prefix(MARKER).map(str::trim)
}

struct OpenBlock<'a> {
    path: String,
    line: usize,
    body: Vec<&'a str>,
}

impl OpenBlock<'_> {
    fn finish(self, earlier: &[FileEdit]) -> Result<FileEdit, ParseError> {
        let key = same_file_key(&self.path);
        if earlier.iter().any(|edit| same_file_key(&edit.path) == key) {
            return Err(ParseError::new(format!(
                "the response has two blocks for `{}` (the second opens at line {}); send one block per file",
                self.path, self.line
            )));
        }
        let body = strip_markdown_fence(&self.path, &self.body);
        let change = if body.iter().all(|line| line.trim().is_empty()) {
            Change::Delete
        } else {
            let mut content = body.join("\n");
            content.push('\n');
            Change::Write {
                content,
                base_sha256: None,
            }
        };
        Ok(FileEdit {
            path: self.path,
            change,
        })
    }
}

/// `./src/a.rs` and `src/a.rs` are one file; confinement normalises fully later.
fn same_file_key(path: &str) -> String {
    path.trim()
        .split('/')
        .filter(|part| !part.is_empty() && *part != ".")
        .collect::<Vec<_>>()
        .join("/")
}

/// Models often wrap the body in a ``` fence. When the first body line opens a fence and the
/// last closes it, the fence is not part of the file (except in Markdown, where it may be).
fn strip_markdown_fence<'a, 'b>(path: &str, body: &'b [&'a str]) -> &'b [&'a str] {
    let is_markdown = [".md", ".markdown", ".mdx"]
        .iter()
        .any(|ext| path.to_ascii_lowercase().ends_with(ext));
    if is_markdown || body.len() < 2 {
        return body;
    }
    let first = body[0].trim();
    let last = body[body.len() - 1].trim();
    if first.starts_with("```") && !first[3..].contains('`') && last == "```" {
        &body[1..body.len() - 1]
    } else {
        body
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(content: &str) -> Change {
        Change::Write {
            content: content.into(),
            base_sha256: None,
        }
    }

    #[test]
    fn the_spec_example_replaces_one_file() {
        let reply = "Here you go:\n^^^src/main.rs\nfn main() {\n    println!(\"example program\");\n}\n^^^end\nDone.";
        let edits = parse(reply).unwrap();
        assert_eq!(
            edits,
            [FileEdit {
                path: "src/main.rs".into(),
                change: write("fn main() {\n    println!(\"example program\");\n}\n")
            }]
        );
    }

    #[test]
    fn an_empty_body_deletes_the_file() {
        let edits = parse("^^^src/cli.rs\n^^^end\n").unwrap();
        assert_eq!(edits[0].change, Change::Delete);
    }

    #[test]
    fn several_blocks_are_read_in_order() {
        let edits = parse("^^^a.rs\na\n^^^end\ntext\n^^^b.rs\nb\n^^^end").unwrap();
        let paths: Vec<_> = edits.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, ["a.rs", "b.rs"]);
    }

    #[test]
    fn a_code_fence_around_the_body_is_not_part_of_the_file() {
        let edits = parse("^^^src/lib.rs\n```rust\npub fn f() {}\n```\n^^^end\n").unwrap();
        assert_eq!(edits[0].change, write("pub fn f() {}\n"));
    }

    #[test]
    fn a_markdown_file_keeps_its_own_fences() {
        let edits = parse("^^^README.md\n```\ncode\n```\n^^^end\n").unwrap();
        assert_eq!(edits[0].change, write("```\ncode\n```\n"));
    }

    #[test]
    fn crlf_replies_are_understood() {
        let edits = parse("^^^a.txt\r\nline\r\n^^^end\r\n").unwrap();
        assert_eq!(edits[0].change, write("line\r\n"));
    }

    #[test]
    fn an_unterminated_block_is_refused_with_its_line() {
        let err = parse("^^^src/main.rs\nfn main() {}\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "the block for `src/main.rs` opened at line 1 has no `^^^end` (the response may have been cut off)"
        );
    }

    #[test]
    fn a_block_opened_inside_another_is_refused() {
        let err = parse("^^^a.rs\nx\n^^^b.rs\ny\n^^^end\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "the block for `a.rs` opened at line 1 is not terminated: line 3 opens `^^^b.rs` before its `^^^end`"
        );
    }

    #[test]
    fn two_blocks_for_one_file_are_refused() {
        let err = parse("^^^a.rs\nx\n^^^end\n^^^./a.rs\ny\n^^^end\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "the response has two blocks for `./a.rs` (the second opens at line 4); send one block per file"
        );
    }

    #[test]
    fn a_reply_without_blocks_is_refused() {
        let err = parse("I think the code looks fine as it is.").unwrap_err();
        assert_eq!(
            err.to_string(),
            "the response holds no `^^^path` … `^^^end` blocks"
        );
    }

    #[test]
    fn a_stray_end_or_nameless_block_is_refused() {
        assert_eq!(
            parse("^^^end\n").unwrap_err().to_string(),
            "line 1 has a `^^^end` that closes no block"
        );
        assert_eq!(
            parse("x\n^^^\n").unwrap_err().to_string(),
            "line 2 opens a `^^^` block without a file name"
        );
    }
}
