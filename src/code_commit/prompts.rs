//! The two system prompts code-commit sends, word for word (docs/code-commit.md), and the assembly
//! of the initial and repair queries from them, the query, the codebase, the build output and the
//! replacements.

/// "Initial Query System Prompt (hardcoded into binary)", word for word as code-commit sends it.
pub const INITIAL_SYSTEM_PROMPT: &str = include_str!("prompts/initial.txt");
/// "Repair Query System Prompt (hardcoded into binary)", word for word as code-commit sends it.
pub const REPAIR_SYSTEM_PROMPT: &str = include_str!("prompts/repair.txt");

/// `[initial query system prompt] [query] [codebase]`, one blank line between the parts.
pub fn initial_query(query: &str, codebase: &str) -> String {
    join_sections(&[INITIAL_SYSTEM_PROMPT, query, codebase])
}

/// `[repair query system prompt] [build.sh output] [query] [codebase] [file replacements]`.
pub fn repair_query(build_output: &str, query: &str, codebase: &str, replacements: &str) -> String {
    join_sections(&[
        REPAIR_SYSTEM_PROMPT,
        build_output,
        query,
        codebase,
        replacements,
    ])
}

/// Each part keeps its text; parts are separated by exactly one blank line.
fn join_sections(parts: &[&str]) -> String {
    let mut prompt = String::new();
    for part in parts {
        let part = part.trim_end_matches(['\n', '\r']);
        if part.is_empty() {
            continue;
        }
        if !prompt.is_empty() {
            prompt.push_str("\n\n");
        }
        prompt.push_str(part);
    }
    prompt.push('\n');
    prompt
}

/// The latest state of every file the model has replaced or removed so far, in the order of
/// their latest change: a later replacement of a file supersedes the earlier one.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FileReplacements {
    entries: Vec<(String, Option<String>)>,
}

impl FileReplacements {
    pub fn replaced(&mut self, path: &str, content: &str) {
        self.set(path, Some(content.to_string()));
    }

    pub fn removed(&mut self, path: &str) {
        self.set(path, None);
    }

    fn set(&mut self, path: &str, state: Option<String>) {
        self.entries.retain(|(existing, _)| existing != path);
        self.entries.push((path.to_string(), state));
    }

    /// `replaced src/a.rs` / `removed src/b.rs`, one per file, for the closing summary.
    pub fn describe(&self) -> Vec<String> {
        self.entries
            .iter()
            .map(|(path, state)| match state {
                Some(_) => format!("replaced {path}"),
                None => format!("removed {path}"),
            })
            .collect()
    }

    /// `--- FILE REPLACEMENT [filename] ---` with the data, or `--- FILE REMOVED [filename] ---`.
    pub fn render(&self) -> String {
        let mut text = String::new();
        for (path, state) in &self.entries {
            match state {
                Some(content) => {
                    text.push_str(&format!("--- FILE REPLACEMENT {path} ---\n"));
                    text.push_str(content);
                    if !content.ends_with('\n') {
                        text.push('\n');
                    }
                }
                None => text.push_str(&format!("--- FILE REMOVED {path} ---\n")),
            }
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_system_prompts_are_the_specifications_words() {
        assert!(INITIAL_SYSTEM_PROMPT.starts_with(
            "You are taking the role of an expert software developer in a fully automatic,\nagentic workflow."
        ));
        assert!(INITIAL_SYSTEM_PROMPT.ends_with(
            "while also adhering to the query and maintaining the highest possible quality\nof code for all replaced files.\n"
        ));
        assert!(REPAIR_SYSTEM_PROMPT.ends_with("Let's get the build working again.\n"));
        assert!(!INITIAL_SYSTEM_PROMPT.contains("##"));
    }

    #[test]
    fn the_initial_query_is_prompt_then_query_then_codebase() {
        let prompt = initial_query("Add a flag.\n", "--- src/main.rs ---\nfn main() {}\n");
        let expected = format!(
            "{}\nAdd a flag.\n\n--- src/main.rs ---\nfn main() {{}}\n",
            INITIAL_SYSTEM_PROMPT
        );
        assert_eq!(prompt, expected);
    }

    #[test]
    fn only_the_latest_version_of_each_file_is_listed() {
        let mut files = FileReplacements::default();
        files.replaced("src/a.rs", "first\n");
        files.replaced("src/b.rs", "b\n");
        files.removed("src/c.rs");
        files.replaced("src/a.rs", "second\n");
        assert_eq!(
            files.render(),
            "--- FILE REPLACEMENT src/b.rs ---\nb\n--- FILE REMOVED src/c.rs ---\n--- FILE REPLACEMENT src/a.rs ---\nsecond\n"
        );
    }
}
