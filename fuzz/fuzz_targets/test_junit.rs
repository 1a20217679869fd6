//! A JUnit XML report a test command wrote, read for test counts as the judge does.
#![no_main]

use std::collections::HashSet;

use autofix::pipeline::test_report::parse_junit_xml;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some(counts) = parse_junit_xml(&autofix_fuzz::text(data)) {
        let _ = counts.total();
        let names: HashSet<&String> = counts.failures.iter().collect();
        assert_eq!(
            names.len(),
            counts.failures.len(),
            "each failing test named once"
        );
    }
});
