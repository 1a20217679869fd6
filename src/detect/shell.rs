//! One line of a CI script read as a shell would: whether it needs a shell, its argv when it
//! does not, and the commands a shell line chains together.

/// What makes a line more than one plain command: chaining, pipes, redirects, variables,
/// substitutions, globs and grouping.
const SHELL_MARKS: &[&str] = &[
    "&&", "||", "|", ";", ">", "<", "$", "`", "(", ")", "*", "?", "[", "{", "~", "&", "\n",
];

/// How a line is run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Line {
    /// A plain command: its words.
    Plain(Vec<String>),
    /// A line only a shell can run: `sh -c line`.
    Shell(String),
}

impl Line {
    pub(super) fn argv(&self) -> Vec<String> {
        match self {
            Line::Plain(words) => words.clone(),
            Line::Shell(line) => vec!["sh".into(), "-c".into(), line.clone()],
        }
    }
}

/// `line` as argv, or as a shell line when it uses shell syntax or starts with variable
/// assignments (`FOO=1 make`). `None` when its quotes do not close.
pub(super) fn read(line: &str) -> Option<Line> {
    let words = shlex::split(line)?;
    let assigns = words.first().is_some_and(|word| is_assignment(word));
    if assigns || needs_shell(line) {
        return Some(Line::Shell(line.to_string()));
    }
    (!words.is_empty()).then_some(Line::Plain(words))
}

fn needs_shell(line: &str) -> bool {
    // Quoted text is still shell syntax to look at: `"$HOME"` expands.
    SHELL_MARKS.iter().any(|mark| line.contains(mark))
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit())
    })
}

/// The commands a shell line runs, each as its words with leading assignments dropped: the
/// line cut at `&&`, `||`, `;` and `|` (outside quotes).
pub(super) fn commands_in(line: &str) -> Vec<Vec<String>> {
    pieces(line)
        .into_iter()
        .filter_map(|piece| {
            let words = shlex::split(&piece)
                .unwrap_or_else(|| piece.split_whitespace().map(String::from).collect());
            let words: Vec<String> = words
                .into_iter()
                .skip_while(|word| is_assignment(word))
                .collect();
            (!words.is_empty()).then_some(words)
        })
        .collect()
}

/// Words that start or end a shell construct rather than name a program.
const SHELL_KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "while", "until", "for", "do", "done", "case", "esac", "!",
    "{", "}", "time",
];

/// Commands the shell runs itself, with nothing to find on PATH.
const SHELL_BUILTINS: &[&str] = &[
    "cd", "export", "set", "unset", "exit", "return", "source", ".", ":", "eval", "exec", "shift",
    "trap", "umask", "ulimit", "wait", "read", "alias", "type", "command", "hash", "local",
];

/// The programs a shell line runs: the first word of each command it chains, past shell
/// keywords; builtins and words the shell would expand (`$VAR`, `$(…)`) are not programs.
pub(super) fn programs_in(line: &str) -> Vec<String> {
    commands_in(line)
        .into_iter()
        .filter_map(|words| {
            words
                .into_iter()
                .find(|word| !SHELL_KEYWORDS.contains(&word.as_str()))
        })
        .filter(|word| !SHELL_BUILTINS.contains(&word.as_str()))
        .filter(|word| !word.contains(['$', '`', '(', ')', '*', '?', '[', '{', '~']))
        .collect()
}

fn pieces(line: &str) -> Vec<String> {
    let mut pieces = vec![String::new()];
    let mut quote: Option<char> = None;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(open), c) if c == open => quote = None,
            (None, '\'' | '"') => quote = Some(c),
            (None, ';' | '\n') => {
                pieces.push(String::new());
                continue;
            }
            (None, '&' | '|') => {
                if chars.peek() == Some(&c) {
                    chars.next();
                }
                pieces.push(String::new());
                continue;
            }
            _ => {}
        }
        pieces.last_mut().expect("one piece at least").push(c);
    }
    pieces
        .into_iter()
        .filter(|piece| !piece.trim().is_empty())
        .collect()
}

/// `cd DIR` alone: the folder later lines run in.
pub(super) fn cd_alone(line: &str) -> Option<String> {
    let words = shlex::split(line)?;
    match words.as_slice() {
        [cd, dir] if cd == "cd" && !needs_shell(dir) => Some(dir.clone()),
        _ => None,
    }
}

/// `cd DIR && rest`: the folder and the rest of the line.
pub(super) fn cd_then(line: &str) -> Option<(String, String)> {
    let (head, rest) = line.split_once("&&")?;
    let dir = cd_alone(head.trim())?;
    Some((dir, rest.trim().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_line_is_split_into_words_and_a_shell_line_is_kept_whole() {
        assert_eq!(
            read("cargo test --features 'a b'"),
            Some(Line::Plain(vec![
                "cargo".into(),
                "test".into(),
                "--features".into(),
                "a b".into()
            ]))
        );
        assert_eq!(
            read("make -C docs html > out.log"),
            Some(Line::Shell("make -C docs html > out.log".into()))
        );
        assert_eq!(
            read("RUST_LOG=1 cargo test"),
            Some(Line::Shell("RUST_LOG=1 cargo test".into()))
        );
        assert_eq!(read("echo 'unclosed"), None);
    }

    #[test]
    fn a_shell_line_names_every_command_it_chains() {
        assert_eq!(
            commands_in("A=1 cargo test && curl -s x | sh; echo 'a;b'"),
            vec![
                vec!["cargo".to_string(), "test".into()],
                vec!["curl".into(), "-s".into(), "x".into()],
                vec!["sh".into()],
                vec!["echo".into(), "a;b".into()],
            ]
        );
    }

    #[test]
    fn the_programs_of_a_shell_line_skip_keywords_builtins_and_expansions() {
        assert_eq!(
            programs_in(
                "cd web && if [ -f x ]; then make test; fi; $(go env GOPATH)/bin/lint | tee log"
            ),
            vec!["make".to_string(), "tee".into()]
        );
    }

    #[test]
    fn a_change_of_folder_is_read_alone_or_before_a_command() {
        assert_eq!(cd_alone("cd web"), Some("web".into()));
        assert_eq!(
            cd_then("cd build && ctest -j 4"),
            Some(("build".into(), "ctest -j 4".into()))
        );
        assert_eq!(cd_alone("cd $HOME"), None);
    }
}
