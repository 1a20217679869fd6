//! What the planner sees of the repository: a map of the files ranked for the issue with their
//! definitions' first lines, within a token budget, and the answers to the look-ups it asked for
//! (files or symbols by name, read-only, protected paths never shown).

use crate::edits::paths::ProtectedPaths;
use crate::index::lookup::{self, Place};
use crate::index::{Ranking, RepoIndex};

use super::budget::{Keep, MAX_NAMED, Part, thousands};
use super::context::BYTES_PER_TOKEN;
use crate::quote::one_line;

/// Most names one look-up round may ask for.
pub const MAX_NAMES_PER_LOOKUP: usize = 8;
/// Most tokens one looked-up name shows.
pub const MAX_TOKENS_PER_NAME: usize = 2_000;
/// Most definitions listed under one file of the map.
const MAX_SIGNATURES_PER_FILE: usize = 40;

/// The map: ranked files with their definitions (indented by nesting) while the budget lasts,
/// then at most [`MAX_NAMED`] more ranked paths alone, then how many more files there are.
pub fn repo_map_section(
    index: &RepoIndex,
    ranking: &Ranking,
    protected: &ProtectedPaths,
    max_tokens: usize,
) -> String {
    let total = index.documents().len();
    let mut section = format!(
        "\n## Repository map\nThe files most related to the issue, best first, with the first line \
         of each definition ({total} files in the repository).\n"
    );
    let mut left = max_tokens * BYTES_PER_TOKEN;
    let mut listed = 0;
    let mut paths_only = false;
    let mut named_only = 0;
    for file in &ranking.files {
        if protected.rule_for(&file.path, false).is_some() {
            continue;
        }
        if named_only == MAX_NAMED {
            break;
        }
        let path = one_line(&file.path);
        let mut entry = format!("{path}\n");
        if !paths_only {
            if let Some(id) = index.id_of(&file.path) {
                for symbol in index.symbols(id).iter().take(MAX_SIGNATURES_PER_FILE) {
                    let indent = "  ".repeat(symbol.depth as usize + 1);
                    entry.push_str(&format!(
                        "{indent}{}: {}\n",
                        symbol.start,
                        one_line(&symbol.signature)
                    ));
                }
            }
            if entry.len() > left / 2 {
                // The rest of the map names files only, so that more of the ranking fits.
                paths_only = true;
                entry = format!("{path}\n");
            }
        }
        if entry.len() > left {
            break;
        }
        left -= entry.len();
        section.push_str(&entry);
        listed += 1;
        named_only += usize::from(paths_only);
    }
    if listed < total {
        section.push_str(&format!(
            "{MORE_FILES}{} more files not listed\n",
            thousands(total - listed)
        ));
    }
    section
}

/// The line that ends a map not listing every file.
const MORE_FILES: &str = "… and ";

/// A map from [`repo_map_section`] as a prompt part: kept from its start should the prompt be
/// over its budget, its closing count of the files not listed always kept.
pub fn map_part(map: &str) -> Part {
    let last_line = map
        .trim_end_matches('\n')
        .rfind('\n')
        .map_or(0, |newline| newline + 1);
    if map[last_line..].starts_with(MORE_FILES) {
        Part::cuttable(&map[..last_line], Keep::Head, "the repository map").after(&map[last_line..])
    } else {
        Part::cuttable(map, Keep::Head, "the repository map")
    }
}

/// What one asked-for name turned out to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LookedUp {
    pub name: String,
    /// The places shown, with their text, or why nothing is shown.
    pub found: Result<Vec<(Place, String)>, NotShown>,
}

/// Why nothing is shown for a name the model asked to see; the prompt quotes it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotShown {
    #[error("no file or definition by that name")]
    Unknown,
    #[error("the path is protected (rule `{rule}`)")]
    Protected { rule: String },
    #[error("`{path}` is not a readable text file")]
    NotText { path: String },
}

/// Resolves each name (at most [`MAX_NAMES_PER_LOOKUP`]) to what can be shown of it.
pub fn look_up(index: &RepoIndex, protected: &ProtectedPaths, names: &[String]) -> Vec<LookedUp> {
    names
        .iter()
        .take(MAX_NAMES_PER_LOOKUP)
        .map(|name| LookedUp {
            name: name.clone(),
            found: resolve(index, protected, name),
        })
        .collect()
}

fn resolve(
    index: &RepoIndex,
    protected: &ProtectedPaths,
    name: &str,
) -> Result<Vec<(Place, String)>, NotShown> {
    let places = lookup::find(index, name);
    if places.is_empty() {
        return Err(NotShown::Unknown);
    }
    let mut shown = Vec::new();
    let mut left = MAX_TOKENS_PER_NAME * BYTES_PER_TOKEN;
    for place in places {
        if let Some(rule) = protected.rule_for(&place.path, false) {
            return Err(NotShown::Protected { rule });
        }
        let Some(id) = index.id_of(&place.path) else {
            continue;
        };
        let Some(text) = index.text(id) else {
            return Err(NotShown::NotText { path: place.path });
        };
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let (start, end) = match place.span {
            Some(span) => (span.start as usize, (span.end as usize).min(lines.len())),
            None => (1, lines.len()),
        };
        let mut part = String::new();
        for line in lines.iter().take(end).skip(start.saturating_sub(1)) {
            if part.len() + line.len() > left {
                break;
            }
            part.push_str(line);
        }
        left -= part.len();
        shown.push((place, part));
        if left == 0 {
            break;
        }
    }
    Ok(shown)
}

/// The look-ups so far, in the order asked.
pub fn looked_up_section(looked_up: &[LookedUp]) -> String {
    looked_up_parts(looked_up).iter().map(Part::whole).collect()
}

/// [`looked_up_section`] as prompt parts, one per place shown, each kept from its start when
/// the prompt is cut.
pub fn looked_up_parts(looked_up: &[LookedUp]) -> Vec<Part> {
    if looked_up.is_empty() {
        return Vec::new();
    }
    let mut parts = vec![Part::fixed("\n## What you asked to see\n")];
    for item in looked_up {
        let name = one_line(&item.name);
        match &item.found {
            Err(why) => parts.push(Part::fixed(format!(
                "\n### `{name}`: {}\n",
                one_line(&why.to_string())
            ))),
            Ok(places) => {
                for (place, text) in places {
                    let path = one_line(&place.path);
                    let lines = text.lines().count();
                    let heading = match place.span {
                        Some(span) => format!(
                            "\n### `{name}`: {path} lines {}-{}\n",
                            span.start,
                            span.start as usize + lines.saturating_sub(1)
                        ),
                        None => format!(
                            "\n### `{name}`: {path} ({lines} line{})\n",
                            if lines == 1 { "" } else { "s" }
                        ),
                    };
                    parts.push(
                        Part::fenced(text.clone(), Keep::Head, "what was asked for")
                            .before(heading),
                    );
                }
            }
        }
    }
    parts
}
