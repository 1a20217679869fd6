//! The crate's shape, read from its sources: which top-level module uses which (`crate::x`), so
//! that no import runs up a floor and no two modules need each other, and no file grows too long.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Each top-level module of `src/` and the other top-level modules its files name.
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut modules: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in rust_files(&src) {
        let relative = file.strip_prefix(&src).unwrap();
        let top = relative
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_owned();
        if matches!(top.as_str(), "main" | "lib" | "bin") {
            continue;
        }
        let used = modules.entry(top.clone()).or_default();
        for line in fs::read_to_string(&file).unwrap().lines() {
            // Doc comments name items of other modules in prose and links; code is what counts.
            if line.trim_start().starts_with("//") {
                continue;
            }
            for (at, _) in line.match_indices("crate::") {
                let name: String = line[at + "crate::".len()..]
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                    .collect();
                if !name.is_empty() && name != top {
                    used.insert(name);
                }
            }
        }
    }
    modules
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            files.push(path);
        }
    }
    files
}

/// The modules `module` reaches through its imports, itself excluded unless in a circle.
fn reachable(graph: &BTreeMap<String, BTreeSet<String>>, module: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut next: Vec<&str> = graph
        .get(module)
        .map(|used| used.iter().map(String::as_str).collect())
        .unwrap_or_default();
    while let Some(name) = next.pop() {
        if seen.insert(name.to_owned())
            && let Some(used) = graph.get(name)
        {
            next.extend(used.iter().map(String::as_str));
        }
    }
    seen
}

#[test]
fn no_two_modules_need_each_other() {
    let graph = imports();
    let circles: Vec<&String> = graph
        .keys()
        .filter(|module| reachable(&graph, module).contains(*module))
        .collect();
    assert!(
        circles.is_empty(),
        "modules in an import circle: {circles:?}"
    );
}

#[test]
fn no_import_runs_up_a_floor() {
    let graph = imports();
    // From the front doors down: each floor may use the floors below it, never one above.
    let floors: &[(&[&str], &[&str])] = &[
        (&["worker"], &["server", "commands"]),
        (&["store"], &["worker", "server", "commands"]),
        (
            &["pipeline", "work_order"],
            &["store", "worker", "server", "commands"],
        ),
        (
            &["forge", "git", "llm", "edits", "exec", "index"],
            &[
                "config", "pipeline", "store", "worker", "server", "commands",
            ],
        ),
        (
            &["failure", "quote", "redact", "anchored", "telemetry"],
            &[
                "config", "forge", "git", "llm", "edits", "exec", "pipeline", "store", "worker",
                "server", "commands",
            ],
        ),
    ];
    let mut upward = Vec::new();
    for (modules, above) in floors {
        for module in *modules {
            for used in graph.get(*module).into_iter().flatten() {
                if above.contains(&used.as_str()) {
                    upward.push(format!("{module} uses {used}"));
                }
            }
        }
    }
    assert!(upward.is_empty(), "imports running up a floor: {upward:#?}");
}

#[test]
fn no_source_file_is_longer_than_a_reader_can_hold() {
    const MOST_LINES: usize = 800;
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let long: Vec<String> = rust_files(&src)
        .into_iter()
        .filter_map(|file| {
            let lines = fs::read_to_string(&file).unwrap().lines().count();
            (lines > MOST_LINES).then(|| format!("{} ({lines} lines)", file.display()))
        })
        .collect();
    assert!(
        long.is_empty(),
        "files over {MOST_LINES} lines, to split by what they do: {long:#?}"
    );
}
