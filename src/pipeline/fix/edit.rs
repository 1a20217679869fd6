//! The edit stage and its loop: the model's edits applied to the planned files, validated and
//! reviewed, repaired with what failed until accepted or a budget is spent.

use super::{Job, finish_stage, io_failure};
use crate::anchored::{Entry, Tree};
use crate::edits::apply::{self, ApplyError, ApplyPolicy};
use crate::edits::paths::{self, ProjectRoot};
use crate::edits::{Change, EditSet, detect};
use crate::failure::{Failure, FailureCode, Stage};
use crate::git::CommitSha;
use crate::index::Ranking;
use crate::pipeline::audit::{self, Review};
use crate::pipeline::checks::{Judgement, Verdict};
use crate::pipeline::context::{self, Context};
use crate::pipeline::plan::Plan;
use crate::pipeline::prompts::{Feedback, edit_prompt_within};

/// An edit round's outcome: applied, or refused with the feedback the next round gets.
pub(super) type Edited = Result<(), (Failure, Feedback)>;

impl Job<'_> {
    /// Edit, validate and review until the change is accepted or a budget is spent.
    pub(super) async fn edit_until_accepted(
        &mut self,
        plan: &Plan,
        ranking: &Ranking,
        work_base: &CommitSha,
    ) -> Result<(), Failure> {
        let first = self.first_edit(plan, ranking).await?;
        self.accept(first, plan, ranking, work_base).await
    }

    /// The first edit round: the model's answer asked for and applied.
    pub(super) async fn first_edit(
        &mut self,
        plan: &Plan,
        ranking: &Ranking,
    ) -> Result<Edited, Failure> {
        let clock = self.start(Stage::Edit);
        let edited = self.edit(Stage::Edit, plan, ranking, None).await;
        match &edited {
            Ok(Ok(())) => clock.ok(),
            Ok(Err((refused, _))) | Err(refused) => clock.failed(&refused.reason),
        }
        edited
    }

    /// From the `first` edit on: validate and review, repairing with what failed, until the
    /// change is accepted or a budget is spent.
    pub(super) async fn accept(
        &mut self,
        first: Edited,
        plan: &Plan,
        ranking: &Ranking,
        work_base: &CommitSha,
    ) -> Result<(), Failure> {
        let config = &self.ready.config;
        let mut repairs_left = config.repair.max_attempts;
        let mut reviews_left = if config.audit.enabled {
            config.audit.max_rounds
        } else {
            0
        };
        let mut feedback: Option<Feedback> = None;
        // The last verdict that judged the change worse: a repair whose answer cannot be
        // applied leaves that change as it was, so it stays what the job ends with.
        let mut judged_worse: Option<Failure> = None;
        let mut first = Some(first);
        loop {
            let edited = match first.take() {
                Some(first) => first,
                None => {
                    let stage = if feedback.is_none() {
                        Stage::Edit
                    } else {
                        Stage::Repair
                    };
                    let clock = self.start(stage);
                    let edited = self.edit(stage, plan, ranking, feedback.as_ref()).await;
                    match &edited {
                        Ok(Ok(())) => clock.ok(),
                        Ok(Err((refused, _))) | Err(refused) => clock.failed(&refused.reason),
                    }
                    edited?
                }
            };
            let failure = match edited {
                Err((failed, refusal)) => (failed, refusal),
                Ok(()) => {
                    let clock = self.start(Stage::Validate);
                    let validated = self.validate().await;
                    match &validated {
                        Ok((judgement, _)) => match judgement.first_worse() {
                            Some(worse) => {
                                clock.failed(&format!("`{}` is worse", worse.command.join(" ")))
                            }
                            None => clock.ok(),
                        },
                        Err(failed) => clock.failed(&failed.reason),
                    }
                    let (judgement, failing_tail) = validated?;
                    if let Some(worse) = judgement.first_worse() {
                        let code = if worse.change.last().timed_out {
                            FailureCode::Timeout
                        } else {
                            FailureCode::ValidationFailed
                        };
                        let why = match &worse.verdict {
                            Verdict::Worse { why } => why.clone(),
                            _ => String::new(),
                        };
                        let command = worse.command.join(" ");
                        let failed = Failure::new(
                            code,
                            Stage::Validate,
                            format!("`{command}` failed: {why}"),
                        );
                        judged_worse = Some(failed.clone());
                        (
                            failed,
                            Feedback::ValidationFailed {
                                command,
                                why,
                                already_failing: worse.left_alone(),
                                output_tail: failing_tail.unwrap_or_default(),
                            },
                        )
                    } else {
                        self.summary.validated = !self.ready.validation.is_empty();
                        if !config.audit.enabled {
                            return Ok(());
                        }
                        reviews_left -= 1;
                        let clock = self.start(Stage::Audit);
                        let review =
                            finish_stage(clock, self.audit(plan, work_base, &judgement).await)?;
                        if review.accepts(&judgement) {
                            return Ok(());
                        }
                        let failed = Failure::new(
                            FailureCode::ValidationFailed,
                            Stage::Audit,
                            format!(
                                "the review rejected the change: {}",
                                review.must_fixes.join("; ")
                            ),
                        );
                        if reviews_left == 0 {
                            return Err(failed);
                        }
                        feedback = Some(Feedback::ReviewRejected {
                            must_fixes: review.must_fixes,
                            reasons: review.reasons,
                        });
                        continue;
                    }
                }
            };
            let (failed, next) = failure;
            if repairs_left == 0 {
                return Err(match judged_worse {
                    Some(worse) if failed.stage == Stage::Repair => Failure::new(
                        worse.code,
                        Stage::Repair,
                        format!(
                            "{}; the last repair could not be applied, so that change stands: {}",
                            worse.reason, failed.reason
                        ),
                    ),
                    _ => failed,
                });
            }
            repairs_left -= 1;
            self.summary.repairs += 1;
            self.log.line(&format!(
                "repair {}: after {}",
                self.summary.repairs, failed.reason
            ));
            feedback = Some(next);
        }
    }

    /// Asks for edits and applies them; `Ok(Err(..))` is a refused answer the next round can fix.
    pub(super) async fn edit(
        &mut self,
        stage: Stage,
        plan: &Plan,
        ranking: &Ranking,
        feedback: Option<&Feedback>,
    ) -> Result<Edited, Failure> {
        let ready = self.ready;
        // A candidate told its own approach: the line is kept out of the budget the rest fits.
        let approach = self
            .candidate_approach()
            .map(|approach| format!("\n\n## Your approach\n\n{approach}\n"));
        let budget = self
            .budgets()
            .of(stage)
            .saturating_sub(approach.as_ref().map_or(0, |text| text.len() / 4 + 1));
        let (mut prompt, context) = edit_prompt_within(
            &ready.issue,
            plan,
            &self.instructions,
            self.proof.as_ref(),
            feedback,
            budget,
            |tokens| context::build(&ready.root, &ready.protected, plan, ranking, tokens),
        );
        if let Some(approach) = approach {
            prompt.push_str(&approach);
        }
        let cap = self
            .options
            .settings
            .output_caps
            .edit_for(planned_bytes(&ready.root, plan));
        let response = self.ask(stage, prompt, cap, None).await?;
        let refused = |code: FailureCode, reason: String| {
            Ok(Err((
                Failure::new(code, stage, reason.clone()),
                Feedback::EditRefused { reason },
            )))
        };
        if response.truncated() {
            // A cut-off answer may end inside a file: nothing of it is applied.
            return refused(
                FailureCode::LlmOutputTruncated,
                format!(
                    "the answer was cut off at the {cap}-token output cap, so none of it was \
                     applied; send smaller edits (search/replace blocks rather than whole files)"
                ),
            );
        }
        let text = response.text;
        let edits = match detect::parse(&text, None) {
            Ok(edits) => edits,
            Err(err) => return refused(FailureCode::InvalidDiff, err.to_string()),
        };
        if let Some(edit) = edits.edits.iter().find(|edit| {
            paths::normalise(&edit.path).is_ok_and(|path| self.proof_files().contains(&path))
        }) {
            return refused(
                FailureCode::WriteScopeViolation,
                format!(
                    "`{}` holds the tests that reproduce the issue, which the fix may not change; \
                     change the code under test so that they pass",
                    edit.path
                ),
            );
        }
        let planned: Vec<String> = plan
            .file_changes
            .iter()
            .filter_map(|change| paths::normalise(&change.path).ok())
            .collect();
        if let Some(outside) = edits
            .edits
            .iter()
            .find(|edit| paths::normalise(&edit.path).map_or(true, |path| !planned.contains(&path)))
        {
            return refused(
                FailureCode::WriteScopeViolation,
                format!(
                    "`{}` is not one of the planned files ({}); edit only those",
                    outside.path,
                    planned.join(", ")
                ),
            );
        }
        if let Some(refusal) = whole_write_of_a_part(&edits, &context) {
            return refused(FailureCode::InvalidDiff, refusal);
        }
        let policy = ApplyPolicy::new(ready.protected.clone());
        match apply::apply(&ready.root, &edits, &policy) {
            Ok(files) => {
                for file in &files {
                    self.log.line(&format!("{stage}: {}", file.summary()));
                    self.applied.insert(file.path.clone(), file.after.clone());
                }
                Ok(Ok(()))
            }
            Err(err @ (ApplyError::PathRefused { .. } | ApplyError::Protected { .. })) => {
                refused(FailureCode::WriteScopeViolation, err.to_string())
            }
            Err(err) => refused(FailureCode::InvalidDiff, err.to_string()),
        }
    }

    pub(super) async fn audit(
        &mut self,
        plan: &Plan,
        work_base: &CommitSha,
        judgement: &Judgement,
    ) -> Result<Review, Failure> {
        let ready = self.ready;
        let paths: Vec<String> = self.applied.keys().cloned().collect();
        let diff = ready
            .workspace
            .diff_paths_from(work_base, &paths)
            .map_err(|err| Failure::new(err.failure_code(), Stage::Audit, err.to_string()))?;
        let prompt = audit::prompt(&ready.issue, plan, &diff, judgement, self.budgets().audit);
        let cap = self.options.settings.output_caps.audit;
        let review = self
            .ask_json(Stage::Audit, prompt, audit::schema(), cap, audit::parse)
            .await?;
        self.summary.reviews += 1;
        self.log
            .write_json("REVIEW.json", &review)
            .map_err(io_failure(Stage::Audit))?;
        self.log
            .line(&format!("audit: {:?}", review.decision).to_lowercase());
        Ok(review)
    }
}

/// How candidates after the first differ when the model takes no temperature: each its own
/// way of going at the fix.
const APPROACHES: [&str; 4] = [
    "Make the smallest change that fixes the issue.",
    "Fix the root cause of the issue, even where that takes a larger change.",
    "Follow the repository's own instructions and conventions closely.",
    "Fix it the way the surrounding code solves similar problems, reusing its helpers.",
];

impl Job<'_> {
    /// The approach candidate 2 and later are told to take, when sampling cannot vary them.
    fn candidate_approach(&self) -> Option<&'static str> {
        let number = self.candidate.filter(|number| *number > 1)?;
        if crate::llm::accepts_temperature(self.llm.model()) {
            return None;
        }
        Some(APPROACHES[(number as usize - 2) % APPROACHES.len()])
    }
}

/// The bytes of the files the plan names, as they are now (a file to create counts nothing).
pub(super) fn planned_bytes(root: &ProjectRoot, plan: &Plan) -> u64 {
    let Ok(tree) = Tree::open(root.path()) else {
        return 0;
    };
    plan.file_changes
        .iter()
        .filter_map(|change| match tree.entry(&change.path) {
            Ok(Entry::File { bytes, .. }) => Some(bytes),
            _ => None,
        })
        .sum()
}

/// Why a whole-file answer for a file shown only in part cannot be applied: it would drop
/// every line the model did not see.
pub(super) fn whole_write_of_a_part(edits: &EditSet, context: &Context) -> Option<String> {
    edits.edits.iter().find_map(|edit| {
        let Change::Write { .. } = edit.change else {
            return None;
        };
        let path = paths::normalise(&edit.path).ok()?;
        let file = context.file(&path).filter(|file| !file.whole())?;
        let shown: Vec<String> = file
            .spans()
            .iter()
            .map(|span| format!("{}-{}", span.start, span.end))
            .collect();
        Some(format!(
            "`{path}` was shown only in part (lines {} of {}), so a whole-file answer would drop \
             the rest; send SEARCH/REPLACE blocks for the lines you change",
            shown.join(", "),
            file.total_lines
        ))
    })
}
