//! Running `build.sh` and judging it: the build passes only when it exits 0 within its time
//! and prints no warning line. Which lines count as warnings is decided here, and only here.

use std::path::Path;
use std::sync::LazyLock;
use std::time::Duration;

use regex::Regex;

use crate::exec::{self, CommandSpec};

/// The outcome of one run of `build.sh`.
#[derive(Debug, Clone)]
pub struct BuildReport {
    pub passed: bool,
    /// One line: why it passed or failed (`exit 0, no warnings`, `exit 101`, `3 warning lines`, …).
    pub verdict: String,
    /// Everything build.sh printed, stdout and stderr interleaved (capped for floods).
    pub output: String,
}

pub struct BuildSettings {
    pub timeout: Duration,
    pub output_limit: usize,
}

/// Runs `./build.sh` in `project` as the program itself (its shebang decides the interpreter).
pub fn run_build(project: &Path, settings: &BuildSettings) -> BuildReport {
    let spec = CommandSpec {
        program: "./build.sh".to_string(),
        args: Vec::new(),
        cwd: project.to_path_buf(),
        timeout: settings.timeout,
        env_allow: exec::DEFAULT_ENV_ALLOW
            .iter()
            .map(|s| s.to_string())
            .collect(),
        env_set: Vec::new(),
        output_limit: settings.output_limit,
    };
    match exec::run(&spec) {
        Err(error) => BuildReport {
            passed: false,
            verdict: error.to_string(),
            output: format!("{error}\n"),
        },
        Ok(outcome) => {
            let warnings = warning_lines(&outcome.output);
            let mut output = outcome.output.clone();
            let passed = outcome.success() && warnings.is_empty();
            let verdict = if outcome.timed_out {
                format!(
                    "build.sh was killed after its timeout of {} s",
                    settings.timeout.as_secs()
                )
            } else if !outcome.success() {
                match (outcome.exit_code, outcome.signal) {
                    (Some(code), _) => format!("build.sh exited with status {code}"),
                    (None, Some(signal)) => format!("build.sh was killed by signal {signal}"),
                    (None, None) => "build.sh did not finish".to_string(),
                }
            } else if !warnings.is_empty() {
                format!(
                    "build.sh exited 0 but printed {} warning line{} (warnings count as failure)",
                    warnings.len(),
                    if warnings.len() == 1 { "" } else { "s" }
                )
            } else {
                "build.sh exited 0 with no warnings".to_string()
            };
            if !passed {
                if !output.is_empty() && !output.ends_with('\n') {
                    output.push('\n');
                }
                output.push_str(&format!("[code-commit: {verdict}]\n"));
            }
            BuildReport {
                passed,
                verdict,
                output,
            }
        }
    }
}

/// Lines that count as warnings, matched case-insensitively except where noted:
/// - `warning:` or `warning[CODE]:` at the start of a line (rustc, cargo, clang, gcc, go vet);
/// - `…: warning:` after a location (`src/a.c:3:5: warning: …`, javac `Foo.java:3: warning:`);
/// - `warning CS0168:`-style coded warnings (MSVC, C#);
/// - Python warning classes, `SomethingWarning:` (case-sensitive: `DeprecationWarning: …`);
/// - `npm WARN …`, `[WARNING]` / `[WARN]` (Maven, Gradle), and ESLint's `3:10  warning  …`.
static WARNING_PATTERNS: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        r"(?i)^\s*warning(\[[^\]]*\])?\s*:",
        r"(?i):\s*warning\s*(\[[^\]]*\])?\s*:",
        r"(?i)\bwarning\s+[a-z]+\d+\s*:",
        r"\b[A-Z][A-Za-z]*Warning:",
        r"(?i)^\s*npm\s+warn\b",
        r"(?i)^\s*\[warn(ing)?\]",
        r"(?i)^\s*\d+:\d+\s+warning\s",
    ]
    .iter()
    .map(|pattern| Regex::new(pattern).expect("valid warning pattern"))
    .collect()
});

pub fn warning_lines(output: &str) -> Vec<&str> {
    output
        .lines()
        .filter(|line| {
            WARNING_PATTERNS
                .iter()
                .any(|pattern| pattern.is_match(line))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiler_and_tool_warnings_are_recognised() {
        let output = "\
   Compiling demo v0.1.0
warning: unused variable: `x`
warning[E0170]: pattern binding named like a variant
src/main.c:3:5: warning: unused variable 'y' [-Wunused-variable]
Foo.java:3: warning: [unchecked] unchecked call
Program.cs(4,9): warning CS0168: The variable 'e' is declared but never used
/app/x.py:3: DeprecationWarning: datetime.utcnow() is deprecated
npm WARN deprecated left-pad@1.3.0
[WARNING] Using platform encoding
  3:10  warning  'x' is assigned a value but never used  no-unused-vars
warning: `demo` (bin \"demo\") generated 1 warning
";
        assert_eq!(warning_lines(output).len(), 10);
    }

    #[test]
    fn ordinary_output_is_not_a_warning() {
        let output = "\
   Compiling demo v0.1.0
    Finished `dev` profile [unoptimized] target(s) in 0.5s
test result: ok. 3 passed; 0 failed; 0 ignored
Build succeeded with 0 warnings
-Wall -Werror were passed
the function warning_lines is tested
";
        assert!(
            warning_lines(output).is_empty(),
            "{:?}",
            warning_lines(output)
        );
    }
}
