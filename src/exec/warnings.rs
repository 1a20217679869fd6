//! Which lines of a command's output count as warnings: the one rule behind code-commit's
//! "no warnings" build and every validation step with `fail_on_warnings`.

use std::sync::LazyLock;

use regex::Regex;

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
