//! A webhook delivery's body as the server reads it once its signature or token is verified:
//! the first byte picks the forge and the event header, the rest is the body.
#![no_main]

use autofix::forge::{github, gitlab};
use libfuzzer_sys::fuzz_target;

/// Every event either forge's reader knows by name, and one it does not.
const EVENTS: &[(bool, &str)] = &[
    (true, "issues"),
    (true, "issue_comment"),
    (true, "pull_request_review"),
    (true, "pull_request_review_comment"),
    (true, "check_run"),
    (true, "check_suite"),
    (true, "push"),
    (true, "ping"),
    (true, "pull_request"),
    (false, "Issue Hook"),
    (false, "Confidential Issue Hook"),
    (false, "Note Hook"),
    (false, "Confidential Note Hook"),
    (false, "Pipeline Hook"),
    (false, "Push Hook"),
    (false, "Tag Push Hook"),
    (false, "Merge Request Hook"),
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let (is_github, event) = EVENTS[usize::from(pick) % EVENTS.len()];
    if is_github {
        let _ = github::parse_event(event, body, "auto-fix");
    } else {
        let _ = gitlab::parse_event(event, body, "auto-fix");
    }
});
