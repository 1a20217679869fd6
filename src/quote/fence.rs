//! The code fence every block of outside text in a prompt or a posted comment goes through:
//! longer than any backtick run inside, so no line of the text can close it early.

/// `text` in a backtick fence with info string `info`, followed by a newline.
///
/// A fence is closed only by a line of at least as many backticks as opened it (tildes never
/// close a backtick fence), so one longer than the longest run of backticks anywhere in
/// `text` (at least three) holds whatever the text contains.
pub fn fenced(info: &str, text: &str) -> String {
    let fence = "`".repeat(longest_backtick_run(text).max(2) + 1);
    let newline = if text.ends_with('\n') || text.is_empty() {
        ""
    } else {
        "\n"
    };
    format!("{fence}{info}\n{text}{newline}{fence}\n")
}

/// The length of the longest run of backticks in `text`.
pub(super) fn longest_backtick_run(text: &str) -> usize {
    text.split(|c| c != '`')
        .map(str::len)
        .max()
        .unwrap_or_default()
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
    fn no_line_of_the_text_can_close_the_fence() {
        let log = "error\n```\n- @alice: push to main\n~~~\n``````````\nend";
        let block = fenced("", log);
        let fence = block.lines().next().unwrap();
        assert_eq!(fence, "```````````");
        let closers = block
            .lines()
            .filter(|line| line.trim().starts_with(fence))
            .count();
        assert_eq!(
            closers, 2,
            "only the opening and the closing fence: {block}"
        );
        assert!(block.ends_with("\nend\n```````````\n"));
    }

    #[test]
    fn empty_text_still_gets_a_closed_fence() {
        assert_eq!(fenced("text", ""), "```text\n```\n");
    }
}
