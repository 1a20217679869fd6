//! What a file is, from its path alone: its language (for the symbol parser) and its kind
//! (source, test, documentation, example, generated or vendored), which retrieval weighs.

/// The languages whose definitions the symbol table reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Language {
    Rust,
    Python,
    JavaScript,
    TypeScript,
    Tsx,
    Go,
    Java,
}

impl Language {
    pub fn of(path: &str) -> Option<Language> {
        let extension = path.rsplit_once('.').map(|(_, ext)| ext)?;
        Some(match extension {
            "rs" => Language::Rust,
            "py" | "pyi" => Language::Python,
            "js" | "mjs" | "cjs" | "jsx" => Language::JavaScript,
            "ts" | "mts" | "cts" => Language::TypeScript,
            "tsx" => Language::Tsx,
            "go" => Language::Go,
            "java" => Language::Java,
            _ => return None,
        })
    }
}

/// What a file is for; retrieval ranks anything but source lower unless the issue is about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileKind {
    Source,
    Test,
    Doc,
    Example,
    Generated,
    Vendored,
}

impl FileKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FileKind::Source => "source",
            FileKind::Test => "test",
            FileKind::Doc => "doc",
            FileKind::Example => "example",
            FileKind::Generated => "generated",
            FileKind::Vendored => "vendored",
        }
    }

    /// Reads the path: folders first (`vendor/`, `tests/`, `docs/`), then the file name.
    pub fn of(path: &str) -> FileKind {
        let lower = path.to_ascii_lowercase();
        let mut folders: Vec<&str> = lower.split('/').collect();
        let name = folders.pop().unwrap_or_default();
        let in_folder = |names: &[&str]| folders.iter().any(|folder| names.contains(folder));
        if in_folder(&[
            "vendor",
            "vendored",
            "third_party",
            "third-party",
            "node_modules",
            "external",
            "_vendor",
        ]) {
            return FileKind::Vendored;
        }
        let web_asset = name.ends_with(".js") || name.ends_with(".css");
        if is_vendored_name(name) || (web_asset && in_folder(&["static", "assets", "public"])) {
            return FileKind::Vendored;
        }
        if is_generated_name(name) || in_folder(&["dist", "generated", "__generated__"]) {
            return FileKind::Generated;
        }
        if in_folder(&[
            "test",
            "tests",
            "testing",
            "__tests__",
            "spec",
            "specs",
            "testdata",
            "test_data",
            "fixtures",
            "__snapshots__",
            "snapshots",
        ]) || is_test_name(name)
            || folders.iter().any(|folder| is_test_support_folder(folder))
        {
            return FileKind::Test;
        }
        if is_doc_name(name) || in_folder(&["doc", "docs", "documentation", "man", "changelog.d"]) {
            return FileKind::Doc;
        }
        if in_folder(&[
            "example",
            "examples",
            "benches",
            "bench",
            "benchmarks",
            "demo",
            "samples",
        ]) {
            return FileKind::Example;
        }
        FileKind::Source
    }
}

/// `cargo-test-support`, `test_utils`, `testutil`: code that only tests use.
fn is_test_support_folder(folder: &str) -> bool {
    folder.split(['-', '_', '.']).any(|part| {
        matches!(
            part,
            "test" | "tests" | "testutil" | "testutils" | "testhelpers"
        )
    })
}

fn is_test_name(name: &str) -> bool {
    let stem = name.rsplit_once('.').map_or(name, |(stem, _)| stem);
    (name.starts_with("test_") && name.ends_with(".py"))
        || stem.ends_with("_test")
        || stem.ends_with("_tests")
        || stem.ends_with(".test")
        || stem.ends_with(".spec")
        || stem.ends_with("_spec")
        || stem == "tests"
        || stem == "conftest"
        || (name.ends_with(".java") && (stem.ends_with("test") || stem.ends_with("tests")))
}

fn is_doc_name(name: &str) -> bool {
    let extension = name.rsplit_once('.').map(|(_, ext)| ext).unwrap_or("");
    matches!(extension, "md" | "rst" | "txt" | "adoc" | "markdown")
        || name.starts_with("changelog")
        || name.starts_with("changes")
        || name.starts_with("history")
        || name.starts_with("news")
        || name.starts_with("authors")
        || name.starts_with("license")
        || name.starts_with("copying")
}

/// Well-known libraries copied into a project (`jquery-3.6.0.js`, `underscore.js`).
fn is_vendored_name(name: &str) -> bool {
    [
        "jquery",
        "underscore",
        "bootstrap",
        "lodash",
        "require.js",
        "mathjax",
    ]
    .iter()
    .any(|library| name.starts_with(library))
}

fn is_generated_name(name: &str) -> bool {
    name.ends_with(".min.js")
        || name.ends_with(".min.css")
        || name.ends_with(".lock")
        || name == "package-lock.json"
        || name == "yarn.lock"
        || name == "pnpm-lock.yaml"
        || name == "go.sum"
        || name.ends_with(".pb.go")
        || name.ends_with("_pb2.py")
        || name.ends_with(".generated.ts")
        || name.ends_with(".map")
        || name.ends_with(".snap")
        || name.ends_with(".po")
        || name.ends_with(".pot")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_come_from_folders_then_names() {
        let cases = [
            ("src/requests/sessions.py", FileKind::Source),
            ("tests/test_sessions.py", FileKind::Test),
            ("requests/test_utils.py", FileKind::Test),
            ("pkg/cmd/root_test.go", FileKind::Test),
            ("lib/router.spec.ts", FileKind::Test),
            ("src/test/java/com/acme/WidgetTest.java", FileKind::Test),
            ("docs/guide.rst", FileKind::Doc),
            ("CHANGELOG.md", FileKind::Doc),
            ("src/lib.rs", FileKind::Source),
            ("vendor/github.com/x/y.go", FileKind::Vendored),
            ("dist/app.min.js", FileKind::Generated),
            ("examples/basic.rs", FileKind::Example),
            ("Cargo.lock", FileKind::Generated),
            ("crates/cargo-test-support/src/git.rs", FileKind::Test),
            ("src/_pytest/python.py", FileKind::Source),
            (
                "sphinx/themes/basic/static/jquery-3.1.0.js",
                FileKind::Vendored,
            ),
            ("sphinx/themes/basic/static/doctools.js", FileKind::Vendored),
            (
                "sphinx/locale/te/LC_MESSAGES/sphinx.po",
                FileKind::Generated,
            ),
        ];
        for (path, kind) in cases {
            assert_eq!(FileKind::of(path), kind, "{path}");
        }
    }

    #[test]
    fn languages_come_from_the_extension() {
        assert_eq!(Language::of("a/b.rs"), Some(Language::Rust));
        assert_eq!(Language::of("x.tsx"), Some(Language::Tsx));
        assert_eq!(Language::of("Makefile"), None);
    }
}
