//! A model answer in the `fenced` edit format: parsed, its paths confined and its writes applied.
#![no_main]

use autofix::edits::EditFormat;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (original, response) = autofix_fuzz::original_and_response(data);
    autofix_fuzz::parse_and_apply(EditFormat::Fenced, original, &response);
});
