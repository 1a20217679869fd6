//! Finding the configuration file in a checkout, reading it safely, and turning byte offsets
//! and key paths into the line and column a person can find.

use std::path::{Path, PathBuf};

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::RepoConfigError;
use super::check::{KeyPath, Segment};
use crate::anchored::{Entry, Tree, TreeError};

/// Where the configuration may live, relative to the repository root. Exactly one may exist.
pub const CANDIDATE_PATHS: &[&str] = &[
    ".autofix.toml",
    ".github/autofix.toml",
    ".gitlab/autofix.toml",
];

/// Names people plausibly write that are not read; finding one is an error naming the right one,
/// so a configuration is never silently ignored.
const MISNAMED: &[(&str, &str)] = &[
    (".github/.autofix.toml", ".github/autofix.toml"),
    (".gitlab/.autofix.toml", ".gitlab/autofix.toml"),
    (".autofix.yml", ".autofix.toml"),
    (".autofix.yaml", ".autofix.toml"),
];

/// A configuration file larger than this is refused unread (256 KiB: far beyond any real one).
pub const MAX_FILE_BYTES: u64 = 256 * 1024;

/// The one configuration file present under `root`, if any.
pub(super) fn find(root: &Path) -> Result<Option<PathBuf>, RepoConfigError> {
    for (wrong, right) in MISNAMED {
        if exists(root, wrong)? {
            return Err(RepoConfigError::single(
                wrong,
                None,
                format!("autofix does not read this file; name it `{right}`"),
            ));
        }
    }
    let mut found = Vec::new();
    for candidate in CANDIDATE_PATHS {
        if exists(root, candidate)? {
            found.push(*candidate);
        }
    }
    match found.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(PathBuf::from(one))),
        [first, others @ ..] => Err(RepoConfigError::single(
            first,
            None,
            format!(
                "{} exists too; keep only one repository configuration",
                others
                    .iter()
                    .map(|other| format!("`{other}`"))
                    .collect::<Vec<_>>()
                    .join(" and ")
            ),
        )),
    }
}

/// Present in any form, a dangling symlink included (reading it then says what is wrong). Looked
/// for without following links: a `.github` that is a link is refused, wherever it points.
fn exists(root: &Path, relative: &str) -> Result<bool, RepoConfigError> {
    let refuse = |message: String| RepoConfigError::single(relative, None, message);
    let tree = Tree::open(root).map_err(|error| refuse(format!("cannot be checked: {error}")))?;
    match tree.entry(relative) {
        Ok(Entry::Missing) => Ok(false),
        Ok(_) => Ok(true),
        // A file where `.github` should be a folder holds no configuration.
        Err(TreeError::NotAFolder { .. }) => Ok(false),
        Err(error @ TreeError::Link { .. }) => Err(refuse(error.to_string())),
        Err(error) => Err(refuse(format!("cannot be checked: {error}"))),
    }
}

/// The file's bytes: a regular file (not a symlink, which could point anywhere, and not below
/// one), not too big, read through the work tree's anchored handle.
pub(super) fn read(root: &Path, relative: &Path, name: &str) -> Result<Vec<u8>, RepoConfigError> {
    let refuse = |message: String| RepoConfigError::single(name, None, message);
    let tree = Tree::open(root).map_err(|error| refuse(format!("cannot be read: {error}")))?;
    let relative = relative.to_string_lossy();
    match tree.read(&relative, MAX_FILE_BYTES) {
        Ok(Some(bytes)) => Ok(bytes),
        Ok(None) => Err(refuse("cannot be read: it is gone".into())),
        Err(TreeError::Link { at }) if at == relative => Err(refuse(
            "is a symbolic link; autofix reads its configuration only from a regular file".into(),
        )),
        Err(error @ TreeError::Link { .. }) => Err(refuse(error.to_string())),
        Err(TreeError::NotAFile { .. } | TreeError::IsAFolder { .. }) => {
            Err(refuse("is not a regular file".into()))
        }
        Err(TreeError::TooLarge { bytes, .. }) => Err(refuse(format!(
            "is {bytes} bytes; a configuration may hold at most {MAX_FILE_BYTES}"
        ))),
        Err(error) => Err(refuse(format!("cannot be read: {error}"))),
    }
}

/// The bytes as text, or where the first byte that is not UTF-8 sits.
pub(super) fn decode<'a>(bytes: &'a [u8], name: &str) -> Result<&'a str, RepoConfigError> {
    std::str::from_utf8(bytes).map_err(|error| {
        let valid = error.valid_up_to();
        let before = std::str::from_utf8(&bytes[..valid]).expect("valid up to here");
        RepoConfigError::single(
            name,
            Some(line_and_column(before, valid)),
            format!(
                "the file is not UTF-8 (byte 0x{:02x}); save it as UTF-8",
                bytes[valid]
            ),
        )
    })
}

/// 1-based line and column (in characters) of a byte offset.
pub(super) fn line_and_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |newline| newline + 1);
    (line, before[line_start..].chars().count() + 1)
}

/// The parsed document with the place of every key and value, to locate problems found after
/// deserialising.
pub(super) struct Spans<'a> {
    text: &'a str,
    document: Option<Spanned<DeTable<'a>>>,
}

impl<'a> Spans<'a> {
    pub(super) fn new(text: &'a str) -> Self {
        Spans {
            text,
            document: DeTable::parse(text).ok(),
        }
    }

    /// Where the value at `key` is written; when the key is absent (a default was used), where
    /// the deepest part of it that is written starts.
    pub(super) fn find(&self, key: &KeyPath) -> Option<(usize, usize)> {
        let document = self.document.as_ref()?;
        let mut span = None;
        let mut table = Some(document.get_ref());
        let mut array: Option<&[Spanned<DeValue<'a>>]> = None;
        for segment in key.segments() {
            let value = match (segment, table, array) {
                (Segment::Key(name), Some(current), _) => current.get(name.as_str()),
                (Segment::Index(index), _, Some(items)) => items.get(*index),
                _ => None,
            };
            let Some(value) = value else { break };
            span = Some(value.span());
            (table, array) = match value.get_ref() {
                DeValue::Table(inner) => (Some(inner), None),
                DeValue::Array(items) => (None, Some(&items[..])),
                _ => (None, None),
            };
        }
        span.map(|span| line_and_column(self.text, span.start))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_columns_count_from_one_in_characters() {
        let text = "a = 1\nbé = 2\n";
        assert_eq!(line_and_column(text, 0), (1, 1));
        assert_eq!(line_and_column(text, 6), (2, 1));
        assert_eq!(line_and_column(text, 9), (2, 3));
    }

    #[test]
    fn a_key_path_is_found_in_arrays_of_tables() {
        let text =
            "[[validate]]\nname = \"a\"\nrun = [\"x\"]\n\n[[validate]]\nname = \"b\"\nrun = []\n";
        let spans = Spans::new(text);
        let key = KeyPath::root().key("validate").index(1).key("run");
        assert_eq!(spans.find(&key), Some((7, 7)));
        let absent = KeyPath::root().key("validate").index(1).key("cwd");
        assert_eq!(spans.find(&absent), Some((5, 1)));
    }

    #[test]
    fn a_file_that_is_not_utf8_is_refused_with_the_place_of_the_bad_byte() {
        let error = decode(b"a = 1\nb = \"\xff\"\n", ".autofix.toml").unwrap_err();
        assert_eq!(
            error.to_string(),
            ".autofix.toml:2:6: the file is not UTF-8 (byte 0xff); save it as UTF-8"
        );
    }
}
