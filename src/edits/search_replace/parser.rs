//! Reads SEARCH/REPLACE blocks out of a reply by aider's rules: where the file name may sit,
//! how it may be decorated, which fences count, how loose the markers may be, which fences are shell.

use super::pylines::{split_keep_ends, strip};
use super::{Block, ParseError, headline_of};

const TRIPLE_BACKTICKS: &str = "```";

/// Fences a reply may wrap code in besides ```, in the order aider's tests try them: the first
/// one that opens a line of the reply is its fence, otherwise ``` is.
const OTHER_FENCES: [&str; 6] = [
    "````",
    "<source>",
    "<code>",
    "<pre>",
    "<codeblock>",
    "<sourcecode>",
];

/// Fences whose body is a command to run, not an edit (aider offers to run them).
const SHELL_FENCES: [&str; 12] = [
    "```bash",
    "```sh",
    "```shell",
    "```cmd",
    "```batch",
    "```powershell",
    "```ps1",
    "```zsh",
    "```fish",
    "```ksh",
    "```csh",
    "```tcsh",
];

/// How far back from `<<<<<<< SEARCH` a file name may be (aider looks three lines back).
const FILE_NAME_REACH: usize = 3;

pub(super) fn parse_blocks(text: &str) -> Result<Vec<(String, Block)>, ParseError> {
    let fence = fence_of(text);
    let lines = split_keep_ends(text);
    let mut blocks = Vec::new();
    let mut current_file: Option<String> = None;
    let mut i = 0;
    while i < lines.len() {
        let next_is_head = lines.get(i + 1).is_some_and(|next| is_head(next));
        if is_shell_fence(lines[i]) && !next_is_head {
            i = after_shell_fence(&lines, i);
            continue;
        }
        if is_head(lines[i]) {
            let number = blocks.len() + 1;
            // A file name next to the block wins; otherwise the block continues the last file.
            let file = find_file_name(&lines[i.saturating_sub(FILE_NAME_REACH)..i], fence)
                .or_else(|| current_file.clone())
                .ok_or_else(|| missing_file_name(number, &lines[i + 1..], fence))?;
            current_file = Some(file.clone());
            let (block, end) = read_block(&lines, i, number)?;
            blocks.push((file, block));
            i = end;
        }
        i += 1;
    }
    if blocks.is_empty() {
        return Err(ParseError::new(
            "search-replace: the reply holds no SEARCH/REPLACE block (a file path line, then \
             `<<<<<<< SEARCH`, the lines to find, `=======`, the new lines, `>>>>>>> REPLACE`)",
        ));
    }
    Ok(blocks)
}

fn fence_of(text: &str) -> &'static str {
    OTHER_FENCES
        .into_iter()
        .find(|fence| text.contains(&format!("\n{fence}")))
        .unwrap_or(TRIPLE_BACKTICKS)
}

fn is_shell_fence(line: &str) -> bool {
    let line = strip(line);
    SHELL_FENCES.iter().any(|start| line.starts_with(start))
}

/// The index just past a shell fence opened at `open` (past its closing ``` if it has one).
fn after_shell_fence(lines: &[&str], open: usize) -> usize {
    let mut i = open + 1;
    while i < lines.len() && !strip(lines[i]).starts_with(TRIPLE_BACKTICKS) {
        i += 1;
    }
    if i < lines.len() { i + 1 } else { i }
}

/// `<<<<<<< SEARCH`, with 5 to 9 `<` and an optional stray `>` after SEARCH.
fn is_head(line: &str) -> bool {
    after_run_of(strip(line), '<').is_some_and(|rest| rest == " SEARCH" || rest == " SEARCH>")
}

/// `=======`, with 5 to 9 `=`.
fn is_divider(line: &str) -> bool {
    after_run_of(strip(line), '=').is_some_and(str::is_empty)
}

/// `>>>>>>> REPLACE`, with 5 to 9 `>`.
fn is_updated(line: &str) -> bool {
    after_run_of(strip(line), '>').is_some_and(|rest| rest == " REPLACE")
}

/// What follows a leading run of 5 to 9 `marker` characters, if the line starts with one.
fn after_run_of(line: &str, marker: char) -> Option<&str> {
    let rest = line.trim_start_matches(marker);
    let run = line.len() - rest.len();
    (5..=9).contains(&run).then_some(rest)
}

/// Reads the block whose `<<<<<<< SEARCH` is at `head`; returns it with the index of its last
/// line. Like aider, a second `=======` also ends the REPLACE text.
fn read_block(lines: &[&str], head: usize, number: usize) -> Result<(Block, usize), ParseError> {
    let divider = (head + 1..lines.len())
        .find(|&i| is_divider(lines[i]))
        .ok_or_else(|| {
            let search = lines[head + 1..].concat();
            unterminated(number, &search, "never reaches its `=======` divider")
        })?;
    let search = lines[head + 1..divider].concat();
    let end = (divider + 1..lines.len())
        .find(|&i| is_updated(lines[i]) || is_divider(lines[i]))
        .ok_or_else(|| unterminated(number, &search, "has no `>>>>>>> REPLACE` line to end it"))?;
    let replace = lines[divider + 1..end].concat();
    Ok((Block { search, replace }, end))
}

fn unterminated(number: usize, search: &str, what: &str) -> ParseError {
    ParseError::new(format!(
        "search-replace: block {number} ({}) {what} before the reply ends",
        headline_of(search)
    ))
}

fn missing_file_name(number: usize, after_head: &[&str], fence: &str) -> ParseError {
    let search_lines = after_head.iter().take_while(|line| !is_divider(line));
    let search: String = search_lines.copied().collect();
    ParseError::new(format!(
        "search-replace: block {number} ({}) has no file name: put the file path alone on the \
         line before the opening fence {fence}",
        headline_of(&search)
    ))
}

/// The file name written up to three lines above a block: on the line just above it, or
/// further up through a run of fence lines (aider's reach for `word.py` / ``` / ```python).
fn find_file_name(before_head: &[&str], fence: &str) -> Option<String> {
    for line in before_head.iter().rev() {
        if let Some(name) = strip_file_name(line, fence) {
            return Some(name);
        }
        if !line.starts_with(fence) && !line.starts_with(TRIPLE_BACKTICKS) {
            return None;
        }
    }
    None
}

/// A line read as a file name, with the decorations models add (`# `, `**`, backticks, a
/// trailing colon) removed; `None` for fence lines and `...`.
fn strip_file_name(line: &str, fence: &str) -> Option<String> {
    let line = strip(line);
    if line == "..." || line.starts_with(fence) || line.starts_with(TRIPLE_BACKTICKS) {
        return None;
    }
    let name = line.trim_end_matches(':').trim_start_matches('#');
    let name = strip(name).trim_matches('`').trim_matches('*');
    (!name.is_empty()).then(|| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(search: &str, replace: &str) -> Block {
        Block {
            search: search.to_string(),
            replace: replace.to_string(),
        }
    }

    fn parsed(text: &str) -> Vec<(String, Block)> {
        parse_blocks(text).unwrap_or_else(|e| panic!("{e}"))
    }

    fn error(text: &str) -> String {
        parse_blocks(text).expect_err("should not parse").message
    }

    #[test]
    fn a_file_name_inside_the_fence_names_the_block() {
        let reply = "Here is the fix:\n\n```python\nmath.py\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n```\n";
        assert_eq!(
            parsed(reply),
            [("math.py".into(), block("x = 1\n", "x = 2\n"))]
        );
    }

    #[test]
    fn a_file_name_just_before_the_fence_names_the_block() {
        let reply = "src/lib.rs\n```rust\n<<<<<<< SEARCH\nfn a() {}\n=======\nfn b() {}\n>>>>>>> REPLACE\n```\n";
        assert_eq!(parsed(reply)[0].0, "src/lib.rs");
    }

    #[test]
    fn decorations_around_the_file_name_are_removed() {
        for (line, name) in [
            ("# src/main.rs", "src/main.rs"),
            ("**src/main.rs**", "src/main.rs"),
            ("`src/main.rs`", "src/main.rs"),
            ("src/main.rs:", "src/main.rs"),
            ("### `src/main.rs`:", "src/main.rs"),
        ] {
            let reply = format!("{line}\n<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n");
            assert_eq!(parsed(&reply)[0].0, name, "for {line:?}");
        }
    }

    #[test]
    fn the_name_may_sit_above_a_closed_fence_and_a_new_one() {
        let reply =
            "```\nnotes.txt\n```\n```python\n<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n";
        assert_eq!(parsed(reply)[0].0, "notes.txt");
    }

    #[test]
    fn prose_between_the_name_and_the_block_hides_the_name() {
        let reply = "a.py\nsome prose\n\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n";
        assert!(error(reply).contains("has no file name"));
    }

    #[test]
    fn a_block_without_a_name_continues_the_previous_file() {
        let reply = "a.py\n<<<<<<< SEARCH\n1\n=======\n2\n>>>>>>> REPLACE\n\n<<<<<<< SEARCH\n3\n=======\n4\n>>>>>>> REPLACE\n";
        let files: Vec<_> = parsed(reply).into_iter().map(|(file, _)| file).collect();
        assert_eq!(files, ["a.py", "a.py"]);
    }

    #[test]
    fn markers_with_extra_angle_brackets_or_equals_signs_still_count() {
        let reply = "a.py\n<<<<<<<<< SEARCH>\nold\n=========\nnew\n>>>>> REPLACE  \n";
        assert_eq!(parsed(reply), [("a.py".into(), block("old\n", "new\n"))]);
    }

    #[test]
    fn markers_with_too_few_characters_are_plain_text() {
        let error = error("a.py\n<<<< SEARCH\nold\n====\nnew\n>>>> REPLACE\n");
        assert!(error.contains("no SEARCH/REPLACE block"), "{error}");
    }

    #[test]
    fn a_second_divider_ends_the_replace_text_as_in_aider() {
        let reply = "a.py\n<<<<<<< SEARCH\nold\n=======\nnew\n=======\nignored\n>>>>>>> REPLACE\n";
        assert_eq!(parsed(reply), [("a.py".into(), block("old\n", "new\n"))]);
    }

    #[test]
    fn shell_command_fences_are_skipped() {
        let reply = "```bash\npip install x\n```\n\na.py\n```\n<<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE\n```\n";
        assert_eq!(parsed(reply), [("a.py".into(), block("old\n", "new\n"))]);
    }

    #[test]
    fn a_shell_fence_directly_holding_a_block_is_an_edit_after_all() {
        let reply =
            "run.sh\n```sh\n<<<<<<< SEARCH\necho 1\n=======\necho 2\n>>>>>>> REPLACE\n```\n";
        assert_eq!(parsed(reply)[0].0, "run.sh");
    }

    #[test]
    fn an_xml_fence_used_by_the_reply_is_not_a_file_name() {
        let reply =
            "a.py\n<source>\n<<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE\n</source>\n";
        assert_eq!(parsed(reply)[0].0, "a.py");
    }

    #[test]
    fn crlf_replies_keep_their_line_endings_in_the_texts() {
        let reply = "a.py\r\n<<<<<<< SEARCH\r\nold\r\n=======\r\nnew\r\n>>>>>>> REPLACE\r\n";
        assert_eq!(
            parsed(reply),
            [("a.py".into(), block("old\r\n", "new\r\n"))]
        );
    }

    #[test]
    fn an_empty_search_is_read_as_such() {
        let reply = "new.txt\n<<<<<<< SEARCH\n=======\nhello\n>>>>>>> REPLACE\n";
        assert_eq!(parsed(reply), [("new.txt".into(), block("", "hello\n"))]);
    }

    #[test]
    fn a_reply_without_blocks_is_an_error() {
        let error = error("I think the bug is in parse().\n");
        assert!(error.contains("no SEARCH/REPLACE block"), "{error}");
    }

    #[test]
    fn a_block_without_a_file_name_is_an_error_naming_it() {
        let error =
            error("<<<<<<< SEARCH\nfn main() {\n=======\nfn main() -> Result {\n>>>>>>> REPLACE\n");
        assert_eq!(
            error,
            "search-replace: block 1 (SEARCH starting `fn main() {`) has no file name: put the \
             file path alone on the line before the opening fence ```"
        );
    }

    #[test]
    fn a_block_cut_off_before_its_divider_is_an_error_naming_it() {
        let reply = "a.py\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n\na.py\n<<<<<<< SEARCH\n\n    def run(self):\n";
        assert_eq!(
            error(reply),
            "search-replace: block 2 (SEARCH starting `def run(self):`) never reaches its \
             `=======` divider before the reply ends"
        );
    }

    #[test]
    fn a_block_cut_off_before_its_replace_marker_is_an_error_naming_it() {
        let reply = "a.py\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n";
        assert_eq!(
            error(reply),
            "search-replace: block 1 (SEARCH starting `x = 1`) has no `>>>>>>> REPLACE` line \
             to end it before the reply ends"
        );
    }
}
