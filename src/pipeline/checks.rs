//! The repository's checks as they really are: each validation command's result on the base
//! commit and on the change (a failing run rerun once to tell flaky tests apart), compared.
//!
//! A change is judged by what it makes worse: a command that already failed on the base may
//! still fail, as long as its results are read test by test on both trees (never on exit
//! statuses alone), no test fails that passed before, no new test fails (a test is new when the
//! base's run named its passing and failing tests and not this one), no test disappears or is
//! skipped, and, when tests the change may be about (naming an identifier the issue writes as
//! code, or testing a changed file) already failed, at least one of them now passes or a new
//! test the change adds passes.
//!
//! `run` holds one command's run on one tree, `relevance` which failing tests the change may
//! be about, and `compare` the verdict of each command and of the whole validation.

mod compare;
mod relevance;
mod run;
#[cfg(test)]
mod tests;

pub use compare::{CANNOT_TELL, Comparison, Judgement, Verdict, compare};
pub use relevance::Relevance;
pub use run::CheckRun;
