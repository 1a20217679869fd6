//! A model answer in SEARCH/REPLACE blocks and the file it edits (`file NUL answer`): parsed,
//! and each block matched and applied to the file as the applier does.
#![no_main]

use autofix::edits::EditFormat;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (original, response) = autofix_fuzz::original_and_response(data);
    autofix_fuzz::parse_and_apply(EditFormat::SearchReplace, original, &response);
});
