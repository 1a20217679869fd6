//! Reading a CI definition (`.github/workflows/*.yml`, `.gitlab-ci.yml`) as GitHub and GitLab
//! read it: merge keys merged, repeated keys' last value kept, alias bombs refused.

use std::collections::BTreeMap;

use yaml_rust2::Yaml;
use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::scanner::TScalarStyle;

/// GitLab's pipeline definition, at the repository's root.
pub const GITLAB_CI: &str = ".gitlab-ci.yml";

/// Top-level keys of `.gitlab-ci.yml` that are not jobs.
pub const GITLAB_KEYWORDS: [&str; 12] = [
    "default",
    "include",
    "stages",
    "variables",
    "workflow",
    "image",
    "services",
    "cache",
    "before_script",
    "after_script",
    "types",
    "spec",
];

/// The most YAML nodes a file may stand for once its aliases are expanded: anchors and aliases
/// can make a small file mean billions of nodes.
pub const MAX_NODES: usize = 200_000;

/// Why a CI file is not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum YamlError {
    /// The text is not YAML (what the scanner said, or a collection that ends unopened).
    #[error("not YAML: {0}")]
    NotYaml(String),
    /// Its anchors and aliases stand for more than [`MAX_NODES`] nodes.
    #[error("its aliases expand to more than {MAX_NODES} YAML nodes")]
    TooBig,
}

/// A collection being read: a sequence's items, or a mapping's pairs and the key waiting for
/// its value.
enum Open {
    Sequence(Vec<Yaml>),
    Mapping(Vec<(Yaml, Yaml)>, Option<Yaml>),
}

/// The first document of `text`, read as GitLab and GitHub read CI files: merge keys
/// (`<<: *defaults`, even given twice) merged in order, a repeated key's last value kept.
/// Refused once it stands for more than [`MAX_NODES`] nodes: every alias is a copy, and
/// anchors can make a small file mean billions of them.
pub fn load(text: &str) -> Result<Option<Yaml>, YamlError> {
    let mut parser = Parser::new_from_str(text);
    // Each open collection with its anchor and the node count when it began.
    let mut open: Vec<(Open, usize, usize)> = Vec::new();
    let mut anchored: BTreeMap<usize, (Yaml, usize)> = BTreeMap::new();
    let mut nodes: usize = 0;
    loop {
        let (event, _) = parser
            .next_token()
            .map_err(|err| YamlError::NotYaml(err.to_string()))?;
        let (node, anchor, size) = match event {
            Event::StreamEnd | Event::DocumentEnd => return Ok(None),
            Event::Scalar(value, style, anchor, _) => {
                nodes += 1;
                let node = if style == TScalarStyle::Plain {
                    Yaml::from_str(&value)
                } else {
                    Yaml::String(value)
                };
                (node, anchor, 1)
            }
            Event::Alias(anchor) => {
                let (node, size) = anchored.get(&anchor).cloned().unwrap_or((Yaml::Null, 1));
                nodes = nodes.saturating_add(size);
                (node, 0, size)
            }
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                nodes += 1;
                let collection = if matches!(event, Event::SequenceStart(..)) {
                    Open::Sequence(Vec::new())
                } else {
                    Open::Mapping(Vec::new(), None)
                };
                open.push((collection, anchor, nodes));
                if nodes > MAX_NODES {
                    return Err(YamlError::TooBig);
                }
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let Some((collection, anchor, began)) = open.pop() else {
                    return Err(YamlError::NotYaml(
                        "a collection ends that never began".into(),
                    ));
                };
                let node = match collection {
                    Open::Sequence(items) => Yaml::Array(items),
                    Open::Mapping(pairs, _) => Yaml::Hash(merged(pairs)),
                };
                (node, anchor, nodes - began + 1)
            }
            _ => continue,
        };
        if nodes > MAX_NODES {
            return Err(YamlError::TooBig);
        }
        if anchor > 0 {
            anchored.insert(anchor, (node.clone(), size));
        }
        match open.last_mut() {
            None => return Ok(Some(node)),
            Some((Open::Sequence(items), _, _)) => items.push(node),
            Some((Open::Mapping(_, key @ None), _, _)) => *key = Some(node),
            Some((Open::Mapping(pairs, key), _, _)) => {
                pairs.push((key.take().expect("a key waits"), node));
            }
        }
    }
}

/// A mapping's pairs in order, as Ruby's YAML (GitLab's) builds them: a merge key's mapping
/// (or each of a list of them, the first winning) is merged in where it stands, a repeated key
/// keeps its last value.
fn merged(pairs: Vec<(Yaml, Yaml)>) -> yaml_rust2::yaml::Hash {
    let merge_key = Yaml::String("<<".into());
    let mut hash = yaml_rust2::yaml::Hash::new();
    for (key, value) in pairs {
        match (key == merge_key, value) {
            (true, Yaml::Hash(merged)) => hash.extend(merged),
            (true, Yaml::Array(maps)) => {
                for map in maps.into_iter().rev() {
                    if let Yaml::Hash(merged) = map {
                        hash.extend(merged);
                    }
                }
            }
            (_, value) => {
                hash.insert(key, value);
            }
        }
    }
    hash
}
