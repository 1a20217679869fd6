//! What the bot says back in a conversation: one reply per command or revision, each with a
//! hidden marker so a job that restarts finds the reply it already posted instead of repeating it.
//! Text the engine did not write (model answers, people's words, check names) is made inert.

use std::fmt::Write as _;

use crate::failure::Failure;
use crate::pipeline::proof::Reproduction;
use crate::quote::{code_span, inert};
use crate::store::{JobId, JobRecord};
use crate::worker::publish::proof_lines;

/// The hidden line that marks reply `key` of `job`.
pub fn reply_marker(job: JobId, key: &str) -> String {
    format!("<!-- autofix:reply job={job} key={key} -->")
}

/// To someone who may not push, for each command they gave: who may, and how to get help.
pub fn unauthorised(login: &str, permission: &str, word: &str) -> String {
    format!(
        "@{login}, thank you — only people who can push to this repository can give autofix \
         commands, and your permission here is `{permission}`. A maintainer can repeat it \
         (`/{word} …`) if it should happen."
    )
}

/// A new request on a repository whose spend today reached a daily cap: said once a day.
pub fn daily_cap_reached(
    cap: &crate::llm::spend::Cap,
    whose: &str,
    resets: chrono::DateTime<chrono::Utc>,
    job: JobId,
) -> String {
    use crate::llm::price::dollars;
    format!(
        "autofix did not start on this issue: the daily spending cap `{name}` ({limit}) for \
         {whose} is reached, with {spent} spent on the model today (UTC). It resets at {resets} \
         UTC; ask again after that. Further requests today are not started and not answered.\n\n\
         {marker}",
        name = cap.name,
        limit = dollars(cap.limit_usd),
        spent = dollars(cap.spent_before_usd),
        resets = resets.format("%Y-%m-%d %H:%M"),
        marker = reply_marker(job, "daily-cap"),
    )
}

/// `status`: the newest other job of the issue and the change request, if any.
pub fn status(login: &str, last: Option<&JobRecord>, change_request: Option<&str>) -> String {
    let mut text = format!("@{login}, ");
    match last {
        None => text.push_str("autofix has not worked on this issue yet."),
        Some(job) => {
            let _ = write!(
                text,
                "the latest autofix job here is job {}: {}",
                job.id,
                job.state.as_str()
            );
            if let Some(stage) = &job.stage {
                let _ = write!(text, " (stage `{stage}`)");
            }
            if let Some(code) = &job.failure_code {
                let _ = write!(text, ", `{code}`");
                if let Some(error) = &job.last_error {
                    let _ = write!(text, ": {}", inert(error));
                }
            }
            text.push('.');
        }
    }
    if let Some(url) = change_request {
        let _ = write!(text, "\n\nIts change request: {url}");
    }
    text
}

/// `cancel` when no job of the issue is running (it ended before the command was read).
pub fn nothing_to_cancel(login: &str) -> String {
    format!("@{login}, no autofix job is running for this issue, so there is nothing to cancel.")
}

/// `approve` or `plan` when no plan waits for approval.
pub fn no_plan_waiting(login: &str) -> String {
    format!(
        "@{login}, no autofix plan is waiting for approval on this issue (plans wait only when \
         the repository's `.autofix.toml` says `[approval] required = true`)."
    )
}

/// A revision request with no change request of autofix's open to revise.
pub fn nothing_to_revise(login: &str, word: &str) -> String {
    format!(
        "@{login}, autofix has no open change request for this issue to revise; \
         `/{word} retry` starts a new attempt."
    )
}

/// Failed checks that fail on the default branch as well: not this change's doing.
pub fn checks_fail_on_the_default_branch(names: &[String], branch: &str) -> String {
    let names: Vec<String> = names.iter().map(|name| code_span(name)).collect();
    format!(
        "The failing checks ({}) fail on `{branch}` too, so this change did not break them; \
         autofix leaves them alone.",
        names.join(", ")
    )
}

/// Failed checks after the last repair the configuration allows.
pub fn ci_repairs_stopped(max: u32, word: &str) -> String {
    format!(
        "The checks still fail after {max} repair(s), the most `ci.max_repairs` allows, so \
         autofix stops repairing them here. Reply `/{word} <what to change>` to ask for a \
         revision, or fix it by hand."
    )
}

/// The base moved, the change request no longer merges, and a person's commits are on it.
pub fn cannot_rebase(branch: &str, short: &str, theirs: usize, word: &str) -> String {
    let persons = match theirs {
        1 => "one of its commits is".to_owned(),
        _ => format!("{theirs} of its commits are"),
    };
    format!(
        "`{branch}` moved to {short} and this change request no longer merges cleanly. autofix \
         does not rebase it because {persons} a person's: please rebase it by hand (or say \
         `/{word} retry` to have the change made again from `{branch}`)."
    )
}

/// The change request's commits replayed onto the moved base and validated again, with the
/// proof when the run reported one.
pub fn rebased(
    branch: &str,
    short: &str,
    commits: usize,
    validation: &str,
    reproduction: Option<&Reproduction>,
) -> String {
    let mut text = format!(
        "`{branch}` moved to {short} and this change request no longer merged cleanly, so \
         autofix replayed its {commits} commit(s) onto it and validated them again: \
         {validation}."
    );
    text.push_str(&proof_paragraph(reproduction));
    text
}

/// `Proof:` and its lines, after a blank line; nothing without a reproduction.
fn proof_paragraph(reproduction: Option<&Reproduction>) -> String {
    let Some(reproduction) = reproduction else {
        return String::new();
    };
    let mut text = String::from("\n\nProof:\n\n");
    text.push_str(&proof_lines(reproduction).join("\n"));
    text.push('\n');
    text
}

/// The change made again on the moved base, its commits having conflicted or failed there.
pub fn redone(branch: &str) -> String {
    format!(
        "`{branch}` moved and this change request's commits no longer applied or passed on it, \
         so autofix made the change again on the new `{branch}` and replaced the branch; see \
         the issue's status comment for the checks."
    )
}

/// What a revision did: the commit, the files, the validation, and what it answered.
pub struct Revised<'a> {
    pub commit: &'a str,
    pub subject: &'a str,
    pub changed_files: &'a [String],
    pub validation: &'a str,
    pub asked: &'a [String],
    /// The proof the revision's run reported (its reproducing tests run again).
    pub reproduction: Option<&'a Reproduction>,
}

/// The one reply after a revision was pushed.
pub fn revised(facts: &Revised<'_>) -> String {
    let short: String = facts.commit.chars().take(7).collect();
    let mut text = format!("Revised in {short}: {}\n\n", code_span(facts.subject));
    text.push_str("What was asked:\n");
    for ask in facts.asked {
        let _ = writeln!(text, "- {}", inert(ask));
    }
    let files: Vec<String> = facts
        .changed_files
        .iter()
        .map(|file| code_span(file))
        .collect();
    let _ = write!(
        text,
        "\nChanged: {}\n\nValidation: {}\n",
        if files.is_empty() {
            "nothing".to_owned()
        } else {
            files.join(", ")
        },
        facts.validation
    );
    let proof = proof_paragraph(facts.reproduction);
    text.push_str(proof.strip_prefix('\n').unwrap_or(&proof));
    text
}

/// The one reply after a revision that could not be made.
pub fn revision_failed(failure: &Failure) -> String {
    format!(
        "autofix could not revise this change request: `{}` at `{}`: {}\n\n\
         The branch is as it was.",
        failure.code,
        failure.stage,
        inert(&failure.reason)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_the_permission_and_the_configured_word() {
        let text = unauthorised("mallory", "read", "bot");
        assert!(
            text.contains("`read`") && text.contains("`/bot …`"),
            "{text}"
        );
    }

    #[test]
    fn a_revision_reply_lists_what_was_asked_and_the_validation() {
        let text = revised(&Revised {
            commit: "0123456789abcdef",
            subject: "fix(calc): clamp below too",
            changed_files: &["calc.py".into()],
            validation: "1 command(s) passed, 0 repair(s)",
            asked: &["@alice on `calc.py` line 2: handle low".into()],
            reproduction: None,
        });
        assert!(text.starts_with("Revised in 0123456: `fix(calc): clamp below too`"));
        assert!(text.contains("- @&#8203;alice on `calc.py` line 2: handle low"));
        assert!(text.contains("Changed: `calc.py`"));
        assert!(text.contains("Validation: 1 command(s) passed"));
        assert!(!text.contains("Proof"), "{text}");
    }

    fn reproduced() -> Reproduction {
        use crate::pipeline::proof::{BaseFailure, TestOutcome};
        Reproduction {
            mode: crate::config::repo::ReproduceMode::Preferred,
            tests: vec!["test_clamp_low".into()],
            base: Some(TestOutcome::Failed),
            change: Some(TestOutcome::Passed),
            attempts: 1,
            failures: vec![BaseFailure {
                test: "test_clamp_low".into(),
                line: "assert -5 == 0".into(),
            }],
            files: vec!["test_calc.py".into()],
            unproven: None,
        }
    }

    #[test]
    fn a_revision_reply_reports_the_proof_again() {
        let reproduction = reproduced();
        let text = revised(&Revised {
            commit: "0123456789abcdef",
            subject: "fix(calc): clamp below too",
            changed_files: &["calc.py".into()],
            validation: "1 command(s) passed, 0 repair(s)",
            asked: &["@alice: handle low".into()],
            reproduction: Some(&reproduction),
        });
        assert!(
            text.contains(
                "\nProof:\n\n- `test_clamp_low` failed on the base commit (`assert -5 == 0`) \
                 and passes with this change\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn a_replay_onto_a_moved_base_reports_the_proof_again() {
        let reproduction = reproduced();
        let text = rebased(
            "main",
            "abc1234",
            1,
            "1 command(s) passed",
            Some(&reproduction),
        );
        assert!(
            text.contains(
                "validated them again: 1 command(s) passed.\n\nProof:\n\n- `test_clamp_low`"
            ),
            "{text}"
        );
        let without = rebased("main", "abc1234", 1, "1 command(s) passed", None);
        assert!(!without.contains("Proof"), "{without}");
    }
}
