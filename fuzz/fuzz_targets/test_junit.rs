//! A JUnit XML report a test command wrote, read for test counts as the judge does.
#![no_main]

use autofix::pipeline::test_report::parse_junit_xml;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some(counts) = parse_junit_xml(&autofix_fuzz::text(data)) {
        autofix_fuzz::check_counts(&counts);
    }
});
