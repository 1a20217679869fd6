//! Checks in CI, on a small excerpt of aider's transcript, that our SEARCH/REPLACE parser reads
//! every block exactly as aider's own parser does (the full 577-block run is `benches/aider_gold.rs`).

#[path = "../../benches/support/aider_gold.rs"]
mod aider_gold;

use std::fs;
use std::path::{Path, PathBuf};

fn excerpt_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/search_replace")
}

#[test]
fn every_block_of_the_excerpt_parses_exactly_as_aider_parsed_it() {
    let report = aider_gold::report(&excerpt_dir()).unwrap();
    assert_eq!(
        (report.gold_blocks, report.parsed_blocks, report.matched),
        (16, 16, 16),
        "{report}"
    );
    assert_eq!(report.f1, 1.0);
}

#[test]
fn a_parse_that_differs_from_aiders_is_counted_as_a_miss() {
    let excerpt = excerpt_dir().join("aider-chat-history");
    let transcript = fs::read_to_string(excerpt.join("chat-history.md")).unwrap();
    // Renaming one file in the transcript makes that block differ from the gold entry.
    let renamed = transcript.replacen("\naider/utils.py\n", "\naider/renamed.py\n", 1);
    assert_ne!(renamed, transcript);

    let dir = tempfile::tempdir().unwrap();
    let altered = dir.path().join("aider-chat-history");
    fs::create_dir(&altered).unwrap();
    fs::write(altered.join("chat-history.md"), renamed).unwrap();
    let gold = "chat-history-search-replace-gold.txt";
    fs::copy(excerpt.join(gold), altered.join(gold)).unwrap();

    let report = aider_gold::report(dir.path()).unwrap();
    assert_eq!((report.parsed_blocks, report.matched), (16, 15), "{report}");
    assert!(report.precision < 1.0 && report.recall < 1.0);
}

#[test]
fn a_missing_transcript_is_an_error_not_a_perfect_score() {
    let dir = tempfile::tempdir().unwrap();
    assert!(aider_gold::report(dir.path()).is_err());
}
