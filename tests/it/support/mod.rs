//! Test harnesses shared by the stories of both test binaries, `it` and `git`: the fakes, the
//! scripted model, the git remote. The git layer's stories use only part of them, hence
//! `allow(dead_code)`.
#![allow(dead_code)]

pub mod bot;
pub mod browser;
pub mod deliveries;
pub mod fake_github;
pub mod fake_gitlab;
pub mod fake_log;
pub mod fix_cli;
pub mod git_http;
pub mod model_server;
pub mod posted;
pub mod postgres;
pub mod repo;
pub mod reports;
pub mod scripted_llm;
pub mod serve;
pub mod served;

/// The stage lines `autofix fix` and `autofix run` print on standard error, reduced to
/// `<stage> started|done|failed` in the order printed (times and reasons left out).
pub fn stage_lines(stderr: &[u8], command: &str) -> Vec<String> {
    let prefix = format!("{command}: ");
    String::from_utf8_lossy(stderr)
        .lines()
        .filter_map(|line| line.strip_prefix(&prefix))
        .filter_map(|rest| {
            if let Some(stage) = rest.strip_suffix(" …") {
                Some(format!("{stage} started"))
            } else if let Some((stage, _)) = rest.split_once(" done in ") {
                Some(format!("{stage} done"))
            } else {
                rest.split_once(" FAILED in ")
                    .map(|(stage, _)| format!("{stage} failed"))
            }
        })
        .collect()
}
