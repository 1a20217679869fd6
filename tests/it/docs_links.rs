//! Keeps the documentation navigable: every relative link in README.md and docs/ leads to a file
//! that exists and, when it names one, to a heading of that file; the README stays a short front door.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Component, Path, PathBuf};

const README_MAX_LINES: usize = 200;

/// GitHub's anchor for a heading: lower case, punctuation other than `-` and `_` removed,
/// spaces turned into `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The lines of a Markdown text that are prose, not inside a ``` fence.
fn prose_lines(text: &str) -> Vec<&str> {
    let mut in_fence = false;
    let mut lines = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if !in_fence {
            lines.push(line);
        }
    }
    lines
}

/// Every anchor a file offers: one per heading, with GitHub's `-1`, `-2`… for repeated ones.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut anchors = BTreeSet::new();
    for line in prose_lines(text) {
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if (1..=6).contains(&hashes) && line[hashes..].starts_with(' ') {
            let base = slug(&line[hashes..]);
            let count = seen.entry(base.clone()).or_insert(0);
            anchors.insert(if *count == 0 {
                base.clone()
            } else {
                format!("{base}-{count}")
            });
            *count += 1;
        }
    }
    anchors
}

/// A line with its inline code spans (between backticks) removed, so code is not read as links.
fn without_inline_code(line: &str) -> String {
    line.split('`')
        .enumerate()
        .filter(|(index, _)| index % 2 == 0)
        .map(|(_, part)| part)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The targets of every Markdown link `[text](target)` in a text.
fn link_targets(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    for line in prose_lines(text) {
        let line = without_inline_code(line);
        let mut rest = line.as_str();
        while let Some(start) = rest.find("](") {
            let after = &rest[start + 2..];
            let end = after
                .find(|c: char| c == ')' || c.is_whitespace())
                .unwrap_or(after.len());
            targets.push(after[..end].to_string());
            rest = &after[end..];
        }
    }
    targets
}

fn is_external(target: &str) -> bool {
    ["http:", "https:", "mailto:"]
        .iter()
        .any(|scheme| target.starts_with(scheme))
}

/// `a/./b/../c` as `a/c`, so the same file is named one way.
fn normalised(path: &Path) -> PathBuf {
    let mut parts: Vec<Component> = Vec::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir if matches!(parts.last(), Some(Component::Normal(_))) => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    parts.iter().collect()
}

/// Every link of `documents` (path relative to the repository root → text) that does not
/// resolve, as "file: target (why)". `exists` says whether a path that is not a document exists.
fn broken_links(
    documents: &BTreeMap<PathBuf, String>,
    exists: &dyn Fn(&Path) -> bool,
) -> Vec<String> {
    let mut broken = Vec::new();
    for (file, text) in documents {
        for target in link_targets(text) {
            if target.is_empty() || is_external(&target) {
                continue;
            }
            let (path_part, anchor) = match target.split_once('#') {
                Some((path, anchor)) => (path, Some(anchor)),
                None => (target.as_str(), None),
            };
            let linked = if path_part.is_empty() {
                file.clone()
            } else {
                normalised(&file.parent().unwrap_or(Path::new("")).join(path_part))
            };
            let linked_text = documents.get(&linked);
            if linked_text.is_none() && !exists(&linked) {
                broken.push(format!(
                    "{}: {target} (no file {})",
                    file.display(),
                    linked.display()
                ));
                continue;
            }
            if let Some(anchor) = anchor {
                let found = linked_text.is_some_and(|text| anchors(text).contains(anchor));
                if !found {
                    broken.push(format!(
                        "{}: {target} (no heading #{anchor} in {})",
                        file.display(),
                        linked.display()
                    ));
                }
            }
        }
    }
    broken
}

fn markdown_files_under(dir: &Path, found: &mut Vec<PathBuf>) {
    let entries =
        fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            markdown_files_under(&path, found);
        } else if path.extension().is_some_and(|ext| ext == "md") {
            found.push(path);
        }
    }
}

fn repository_documents(root: &Path) -> BTreeMap<PathBuf, String> {
    let mut files = vec![root.join("README.md")];
    markdown_files_under(&root.join("docs"), &mut files);
    files
        .into_iter()
        .map(|path| {
            let text = fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
            let relative = path
                .strip_prefix(root)
                .expect("under the root")
                .to_path_buf();
            (relative, text)
        })
        .collect()
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn every_relative_link_in_the_readme_and_the_docs_leads_to_a_file_and_a_heading_that_exist() {
    let root = root();
    let documents = repository_documents(&root);
    assert!(
        documents.contains_key(Path::new("docs/README.md")),
        "docs/README.md, the index of the docs, is missing"
    );
    let broken = broken_links(&documents, &|path| root.join(path).exists());
    assert!(
        broken.is_empty(),
        "{} link(s) do not resolve:\n{}",
        broken.len(),
        broken.join("\n")
    );
}

#[test]
fn the_readme_is_a_front_door_of_at_most_200_lines() {
    let readme = fs::read_to_string(root().join("README.md")).expect("README.md is readable");
    let lines = readme.lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines; at most {README_MAX_LINES} belong there, the rest in docs/"
    );
}

#[test]
fn a_heading_is_reached_by_its_github_slug() {
    let text = "# The bot (`autofix serve`)\n## Per-repository configuration (`.autofix.toml`)\n\
                ## Notes\n## Notes\n```\n# not a heading\n```\n";
    let found = anchors(text);
    assert!(found.contains("the-bot-autofix-serve"));
    assert!(found.contains("per-repository-configuration-autofixtoml"));
    assert!(found.contains("notes") && found.contains("notes-1"));
    assert!(!found.contains("not-a-heading"));
}

#[test]
fn a_link_to_a_missing_file_or_a_missing_heading_is_named_and_good_ones_are_not() {
    let documents: BTreeMap<PathBuf, String> = [
        (
            PathBuf::from("README.md"),
            "# Start\nSee [it](docs/a.md#the-part), [gone](docs/b.md), [no](docs/a.md#nowhere), \
             [self](#start), [web](https://example.com/x.md), `[code](not/a/link.md)`.\n"
                .to_string(),
        ),
        (
            PathBuf::from("docs/a.md"),
            "# A\n## The part\nBack to [the start](../README.md#start).\n".to_string(),
        ),
    ]
    .into_iter()
    .collect();
    let broken = broken_links(&documents, &|_| false);
    assert_eq!(
        broken,
        vec![
            "README.md: docs/b.md (no file docs/b.md)".to_string(),
            "README.md: docs/a.md#nowhere (no heading #nowhere in docs/a.md)".to_string(),
        ]
    );
}
