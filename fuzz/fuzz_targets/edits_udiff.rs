//! A unified diff, sloppy as models write them, and the file it patches (`file NUL diff`):
//! parsed, and its hunks located and applied to the file as the applier does.
#![no_main]

use autofix::edits::EditFormat;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (original, response) = autofix_fuzz::original_and_response(data);
    autofix_fuzz::parse_and_apply(EditFormat::Udiff, original, &response);
});
