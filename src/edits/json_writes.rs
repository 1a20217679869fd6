//! Strict JSON direct writes (docs/local-commands.md): `{"summary", "writes": [{"path",
//! "base_sha256", "content"}]}`, each write carrying the hash of the content it replaces.

use serde::Deserialize;

use super::{Change, FileEdit, ParseError};

#[derive(Debug, Deserialize)]
struct WriteProposal {
    summary: String,
    writes: Vec<FileWrite>,
}

#[derive(Debug, Deserialize)]
struct FileWrite {
    path: String,
    base_sha256: String,
    content: String,
}

/// Reads a proposal; the JSON may be wrapped in one code fence, nothing else around it.
/// Returns the summary and one `Change::Write` per file.
pub fn parse(text: &str) -> Result<(String, Vec<FileEdit>), ParseError> {
    let json = strip_code_fence(text.trim());
    if !json.starts_with('{') {
        return Err(ParseError::new(
            "the response is not a JSON object (expected {\"summary\": …, \"writes\": […]})",
        ));
    }
    let proposal: WriteProposal = serde_json::from_str(json).map_err(|err| {
        ParseError::new(format!("the response is not a valid write proposal: {err}"))
    })?;
    if proposal.writes.is_empty() {
        return Err(ParseError::new("the write proposal has no writes"));
    }
    let mut edits: Vec<FileEdit> = Vec::with_capacity(proposal.writes.len());
    for (index, write) in proposal.writes.into_iter().enumerate() {
        let number = index + 1;
        if !is_sha256_hex(&write.base_sha256) {
            return Err(ParseError::new(format!(
                "write {number} (`{}`) has base_sha256 `{}`, not 64 hexadecimal digits",
                write.path, write.base_sha256
            )));
        }
        if edits
            .iter()
            .any(|edit| edit.path.trim() == write.path.trim())
        {
            return Err(ParseError::new(format!(
                "write {number} names `{}` a second time; send one write per file",
                write.path
            )));
        }
        edits.push(FileEdit {
            path: write.path,
            change: Change::Write {
                content: write.content,
                base_sha256: Some(write.base_sha256.to_ascii_lowercase()),
            },
        });
    }
    Ok((proposal.summary, edits))
}

/// Whether `text` looks like a JSON write proposal (for format detection).
pub fn looks_like(text: &str) -> bool {
    strip_code_fence(text.trim()).starts_with('{')
}

fn strip_code_fence(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    let Some(newline) = rest.find('\n') else {
        return text;
    };
    let info = &rest[..newline];
    if !info.trim().is_empty() && !info.trim().eq_ignore_ascii_case("json") {
        return text;
    }
    rest[newline + 1..]
        .trim_end()
        .strip_suffix("```")
        .map(str::trim)
        .unwrap_or(text)
}

fn is_sha256_hex(value: &str) -> bool {
    value.len() == 64 && value.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    const EMPTY_SHA: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    fn proposal(writes: &str) -> String {
        format!(r#"{{"summary": "fix it", "writes": [{writes}]}}"#)
    }

    #[test]
    fn a_proposal_becomes_writes_with_their_base_hashes() {
        let text = proposal(&format!(
            r#"{{"path": "src/a.rs", "base_sha256": "{EMPTY_SHA}", "content": "fn a() {{}}\n"}}"#
        ));
        let (summary, edits) = parse(&text).unwrap();
        assert_eq!(summary, "fix it");
        assert_eq!(
            edits[0].change,
            Change::Write {
                content: "fn a() {}\n".into(),
                base_sha256: Some(EMPTY_SHA.into())
            }
        );
    }

    #[test]
    fn a_json_code_fence_around_the_proposal_is_tolerated() {
        let text = format!(
            "```json\n{}\n```",
            proposal(&format!(
                r#"{{"path": "a", "base_sha256": "{EMPTY_SHA}", "content": ""}}"#
            ))
        );
        assert!(parse(&text).is_ok());
    }

    #[test]
    fn chatter_around_the_json_is_refused() {
        let text = format!("Sure! {}", proposal(""));
        assert!(
            parse(&text)
                .unwrap_err()
                .to_string()
                .contains("not a JSON object")
        );
    }

    #[test]
    fn invalid_json_is_refused_with_the_parsers_reason() {
        let err = parse(r#"{"summary": "x", "writes": [}"#).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("the response is not a valid write proposal"),
            "{err}"
        );
    }

    #[test]
    fn an_empty_writes_list_is_refused() {
        assert_eq!(
            parse(&proposal("")).unwrap_err().to_string(),
            "the write proposal has no writes"
        );
    }

    #[test]
    fn a_missing_or_malformed_base_hash_is_refused() {
        let missing = proposal(r#"{"path": "a", "content": "x"}"#);
        assert!(
            parse(&missing)
                .unwrap_err()
                .to_string()
                .contains("base_sha256")
        );
        let short = proposal(r#"{"path": "a", "base_sha256": "abc", "content": "x"}"#);
        assert_eq!(
            parse(&short).unwrap_err().to_string(),
            "write 1 (`a`) has base_sha256 `abc`, not 64 hexadecimal digits"
        );
    }

    #[test]
    fn two_writes_for_one_file_are_refused() {
        let one = format!(r#"{{"path": "a", "base_sha256": "{EMPTY_SHA}", "content": "x"}}"#);
        let err = parse(&proposal(&format!("{one}, {one}"))).unwrap_err();
        assert_eq!(
            err.to_string(),
            "write 2 names `a` a second time; send one write per file"
        );
    }
}
