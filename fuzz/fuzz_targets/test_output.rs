//! A validation command's captured output, read for test counts by every runner's reader
//! (cargo test, nextest, pytest, go test, unittest, TAP) as the judge does.
#![no_main]

use autofix::pipeline::test_report::parse_output;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let output = autofix_fuzz::text(data);
    if let Some((parser, counts)) = parse_output(&output) {
        assert!(!parser.is_empty());
        autofix_fuzz::check_counts(&counts);
    }
});
