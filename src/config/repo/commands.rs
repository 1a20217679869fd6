//! Which programs validation may run: built-in and configured deny rules (looking through
//! wrappers such as `env` and `timeout`), then the optional allow-list of `[commands]`.

use std::fmt;
use std::path::Path;

use super::CommandsSection;

/// Refused in every repository: network clients, privilege changes, and servers or watchers
/// that never end. A rule is a program name, optionally followed by the first arguments
/// (`tail -f`), compared with the program's file name (`/usr/bin/curl` is `curl`).
///
/// These rules catch mistakes; they are not a sandbox. A script (`./ci.sh`) or `sh -c` can
/// run anything, which is why validation runs without network in the sandbox.
pub const BUILTIN_DENIED_COMMANDS: &[&str] = &[
    // network clients
    "curl",
    "wget",
    "ssh",
    "scp",
    "sftp",
    "rsync",
    "nc",
    "ncat",
    "netcat",
    "socat",
    "telnet",
    "ftp",
    "tftp",
    // privilege changes
    "sudo",
    "su",
    "doas",
    "pkexec",
    "runuser",
    "nsenter",
    "chroot",
    // servers and watchers
    "python -m http.server",
    "python3 -m http.server",
    "tail -f",
    "sleep infinity",
    "npm start",
    "npm run dev",
    "npm run serve",
    "npm run watch",
];

/// Programs that run the rest of their argv as another command, so deny rules are checked
/// against every later word too (`env FOO=1 curl …`, `timeout 60 wget …`).
const WRAPPERS: &[&str] = &[
    "env", "nice", "nohup", "timeout", "stdbuf", "setsid", "time", "xargs", "ionice", "chrt",
    "taskset", "busybox",
];

/// Where a deny rule comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleOrigin {
    BuiltIn,
    Configured,
}

impl fmt::Display for RuleOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RuleOrigin::BuiltIn => "the built-in rule",
            RuleOrigin::Configured => "the commands.deny rule",
        })
    }
}

/// Why validation may not run a command; names the program and the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandRefusal {
    #[error("the command is empty")]
    Empty,
    #[error("`{program}`{} is denied by {origin} `{rule}`", through(.wrapper))]
    Denied {
        /// The words the rule matched, the program by its file name (`python3 -m http.server`).
        program: String,
        /// The wrapper it was found behind (`env`), if any.
        wrapper: Option<String>,
        rule: String,
        origin: RuleOrigin,
    },
    #[error("`{program}` is not in commands.allow ({allowed})")]
    NotAllowed { program: String, allowed: String },
}

fn through(wrapper: &Option<String>) -> String {
    wrapper
        .as_ref()
        .map(|wrapper| format!(" (run through `{wrapper}`)"))
        .unwrap_or_default()
}

pub(super) fn check<S: AsRef<str>>(
    rules: &CommandsSection,
    argv: &[S],
) -> Result<(), CommandRefusal> {
    let argv: Vec<&str> = argv.iter().map(AsRef::as_ref).collect();
    let Some(first) = argv.first() else {
        return Err(CommandRefusal::Empty);
    };
    let program = file_name(first);
    let starts = if WRAPPERS.contains(&program) {
        0..argv.len()
    } else {
        0..1
    };
    for start in starts {
        if let Some(mut refusal) = denial(rules, &argv[start..]) {
            if let CommandRefusal::Denied { wrapper, .. } = &mut refusal {
                *wrapper = (start > 0).then(|| program.to_string());
            }
            return Err(refusal);
        }
    }
    if rules.allow.is_empty() || rules.allow.iter().any(|rule| matches(rule, &argv)) {
        return Ok(());
    }
    Err(CommandRefusal::NotAllowed {
        program: program.to_string(),
        allowed: rules
            .allow
            .iter()
            .map(|rule| format!("`{}`", rule.trim()))
            .collect::<Vec<_>>()
            .join(", "),
    })
}

/// The first deny rule (built-in ones first) that `argv` starts with.
fn denial(rules: &CommandsSection, argv: &[&str]) -> Option<CommandRefusal> {
    let built_in = BUILTIN_DENIED_COMMANDS
        .iter()
        .map(|rule| (*rule, RuleOrigin::BuiltIn));
    let configured = rules
        .deny
        .iter()
        .map(|rule| (rule.as_str(), RuleOrigin::Configured));
    built_in
        .chain(configured)
        .find(|(rule, _)| matches(rule, argv))
        .map(|(rule, origin)| {
            let words = rule.split_whitespace().count();
            let mut matched = vec![file_name(argv[0])];
            matched.extend(&argv[1..words]);
            CommandRefusal::Denied {
                program: matched.join(" "),
                wrapper: None,
                rule: rule.split_whitespace().collect::<Vec<_>>().join(" "),
                origin,
            }
        })
}

/// Whether `argv` starts with the rule's words, its program compared by file name.
fn matches(rule: &str, argv: &[&str]) -> bool {
    let mut words = rule.split_whitespace();
    let Some(program) = words.next() else {
        return false;
    };
    let Some((first, args)) = argv.split_first() else {
        return false;
    };
    let expected: Vec<&str> = words.collect();
    file_name(first) == program
        && args.len() >= expected.len()
        && args.iter().zip(&expected).all(|(arg, word)| arg == word)
}

/// `/usr/bin/curl` → `curl`; a name without a slash is itself.
fn file_name(program: &str) -> &str {
    Path::new(program)
        .file_name()
        .and_then(|name| name.to_str())
        .unwrap_or(program)
}

/// What is wrong with one configured rule, if anything.
pub(super) fn rule_problem(rule: &str) -> Option<String> {
    let program = rule.split_whitespace().next()?;
    program.contains('/').then(|| {
        format!(
            "`{}` names a path; name the program (`{}`), which matches it wherever it lives",
            rule.trim(),
            file_name(program)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(allow: &[&str], deny: &[&str]) -> CommandsSection {
        CommandsSection {
            allow: allow.iter().map(|s| s.to_string()).collect(),
            deny: deny.iter().map(|s| s.to_string()).collect(),
            ..CommandsSection::default()
        }
    }

    #[test]
    fn a_program_is_matched_by_its_file_name_wherever_it_lives() {
        let refusal = check(&rules(&[], &[]), &["/usr/bin/curl", "-s", "x"]).unwrap_err();
        assert_eq!(
            refusal.to_string(),
            "`curl` is denied by the built-in rule `curl`"
        );
    }

    #[test]
    fn a_rule_with_arguments_matches_only_that_prefix() {
        let none = rules(&[], &[]);
        assert!(check(&none, &["tail", "-n", "5", "log"]).is_ok());
        assert_eq!(
            check(&none, &["python3", "-m", "http.server", "8000"])
                .unwrap_err()
                .to_string(),
            "`python3 -m http.server` is denied by the built-in rule `python3 -m http.server`"
        );
        assert!(check(&none, &["python3", "-m", "pytest"]).is_ok());
    }

    #[test]
    fn a_denied_program_behind_a_wrapper_is_still_denied() {
        let refusal = check(
            &rules(&[], &[]),
            &["env", "A=1", "timeout", "5", "wget", "x"],
        )
        .unwrap_err();
        assert_eq!(
            refusal.to_string(),
            "`wget` (run through `env`) is denied by the built-in rule `wget`"
        );
    }

    #[test]
    fn arguments_of_an_ordinary_program_are_not_taken_for_programs() {
        assert!(check(&rules(&[], &[]), &["cargo", "test", "ssh"]).is_ok());
    }

    #[test]
    fn configured_denials_add_to_the_built_in_ones() {
        let configured = rules(&[], &["make  deploy"]);
        assert_eq!(
            check(&configured, &["make", "deploy", "--now"])
                .unwrap_err()
                .to_string(),
            "`make deploy` is denied by the commands.deny rule `make deploy`"
        );
        assert!(check(&configured, &["make", "test"]).is_ok());
        assert!(check(&configured, &["sudo", "make"]).is_err());
    }

    #[test]
    fn an_allow_list_admits_only_what_it_names_and_never_a_denied_program() {
        let allowed = rules(&["cargo", "npm test"], &[]);
        assert!(check(&allowed, &["cargo", "clippy"]).is_ok());
        assert!(check(&allowed, &["npm", "test", "--", "-u"]).is_ok());
        assert_eq!(
            check(&allowed, &["npm", "publish"])
                .unwrap_err()
                .to_string(),
            "`npm` is not in commands.allow (`cargo`, `npm test`)"
        );
        let allows_curl = rules(&["curl"], &[]);
        assert!(matches!(
            check(&allows_curl, &["curl", "x"]),
            Err(CommandRefusal::Denied {
                origin: RuleOrigin::BuiltIn,
                ..
            })
        ));
    }

    #[test]
    fn an_empty_command_is_refused() {
        let empty: [&str; 0] = [];
        assert_eq!(check(&rules(&[], &[]), &empty), Err(CommandRefusal::Empty));
    }

    #[test]
    fn a_rule_naming_a_path_is_a_problem() {
        assert_eq!(
            rule_problem("/usr/bin/curl -s").as_deref(),
            Some(
                "`/usr/bin/curl -s` names a path; name the program (`curl`), which matches it \
                 wherever it lives"
            )
        );
        assert_eq!(rule_problem("npm test"), None);
    }
}
