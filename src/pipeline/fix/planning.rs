//! Understanding the issue: triage, the repository index ranked for it, and the plan (with
//! the files the planner asked to see, and a plan naming files that are not there refused).

use std::time::Instant;

use super::{Job, LOOKUP_ROUNDS, Ready, Revision, io_failure};
use crate::failure::{Failure, FailureCode, Stage};
use crate::index::query::IssueQuery;
use crate::index::retrieve::{Method, rank};
use crate::index::{Ranking, RepoIndex};
use crate::pipeline::StageOutputError;
use crate::pipeline::budget::Budgets;
use crate::pipeline::plan::{self, Plan, PlanAnswer};
use crate::pipeline::plan_files;
use crate::pipeline::repo_map::{LookedUp, look_up, repo_map_section};
use crate::pipeline::triage::{self, Triage};

impl Job<'_> {
    /// Asks whether the issue is actionable, showing the repository map within the triage's
    /// share of its budget.
    pub(super) async fn triage(&mut self, located: &Located) -> Result<Triage, Failure> {
        let ready = self.ready;
        let budget = self.budgets().triage;
        let map = repo_map_section(
            &located.index,
            &located.ranking,
            &ready.protected,
            triage::map_tokens(budget),
        );
        let prompt = triage::prompt(&ready.issue, &map, &ready.instructions, budget);
        let cap = self.options.settings.output_caps.triage;
        let triage = self
            .ask_json(Stage::Triage, prompt, triage::schema(), cap, triage::parse)
            .await?;
        self.log
            .write_json("TRIAGE.json", &triage)
            .map_err(io_failure(Stage::Triage))?;
        self.log.line(&format!(
            "triage: {} risk {:?}, actionable {}",
            triage.classification, triage.risk, triage.actionable
        ));
        if !triage.actionable {
            return Err(Failure::new(
                FailureCode::InvalidInput,
                Stage::Triage,
                format!("the issue is not actionable: {}", triage.reason),
            ));
        }
        Ok(triage)
    }

    /// Each stage's prompt budget, from `pipeline.context_tokens`.
    pub(super) fn budgets(&self) -> Budgets {
        Budgets::from_context_tokens(self.options.settings.context_tokens)
    }

    /// Indexes the work tree and ranks its files and spans for the issue, without the model.
    pub(super) fn locate(&self, repo_files: &[String]) -> Located {
        let started = Instant::now();
        let issue = &self.ready.issue;
        let index = RepoIndex::build(self.ready.workspace.root(), repo_files);
        let ranking = rank(
            &index,
            &IssueQuery::parse(&issue.title, &issue.body),
            Method::Full,
        );
        let top: Vec<&str> = ranking
            .files
            .iter()
            .take(5)
            .map(|f| f.path.as_str())
            .collect();
        self.log.line(&format!(
            "index: {} files in {} ms; ranked first: {}",
            repo_files.len(),
            started.elapsed().as_millis(),
            top.join(", ")
        ));
        Located { index, ranking }
    }

    /// Asks for the plan, showing the repository map; the planner may first ask to see up to
    /// [`LOOKUP_ROUNDS`] rounds of files or symbols by name. `repo_files` are the work tree's
    /// files, offered in place of a file the plan names that is not there.
    pub(super) async fn plan(
        &mut self,
        triage: &Triage,
        located: &Located,
        repo_files: &[String],
    ) -> Result<Plan, Failure> {
        let ready = self.ready;
        let map_tokens = plan::map_tokens(self.options.settings.context_tokens);
        let map = repo_map_section(
            &located.index,
            &located.ranking,
            &ready.protected,
            map_tokens,
        );
        let mut looked_up: Vec<LookedUp> = Vec::new();
        for round in 0..=LOOKUP_ROUNDS {
            let lookups_left = LOOKUP_ROUNDS - round;
            match self
                .plan_round(triage, &map, &looked_up, lookups_left, repo_files)
                .await?
            {
                PlanAnswer::Plan(plan) => return self.planned(plan),
                PlanAnswer::Need(names) => {
                    self.log
                        .line(&format!("plan: asked to see {}", names.join(", ")));
                    looked_up.extend(look_up(&located.index, &ready.protected, &names));
                }
            }
        }
        Err(Failure::new(
            FailureCode::LlmOutputInvalid,
            Stage::Plan,
            "the planner kept asking to see more instead of planning",
        ))
    }

    pub(super) async fn plan_round(
        &mut self,
        triage: &Triage,
        map: &str,
        looked_up: &[LookedUp],
        lookups_left: usize,
        repo_files: &[String],
    ) -> Result<PlanAnswer, Failure> {
        let ready = self.ready;
        let prompt = plan::prompt(
            &ready.issue,
            triage,
            map,
            looked_up,
            &ready.instructions,
            lookups_left,
            self.budgets().plan,
        );
        let cap = self.options.settings.output_caps.plan;
        let title = ready.issue.title.clone();
        let may_ask = lookups_left > 0;
        // A plan naming a path outside the repository or a protected one, or a file to change
        // that is not there, is asked for once more, naming the paths; a second such plan ends
        // the job (a scope violation, or input that names nothing real).
        let refused: std::cell::RefCell<Option<(FailureCode, String)>> = Default::default();
        let asked = self
            .ask_json(Stage::Plan, prompt, plan::schema(may_ask), cap, |text| {
                *refused.borrow_mut() = None;
                let plan = match plan::parse_answer(text, &title, may_ask)? {
                    PlanAnswer::Plan(plan) => plan,
                    need => return Ok(need),
                };
                let (code, refusal, hint) = match plan_refusal(ready, &plan, repo_files) {
                    Some(refusal) => refusal,
                    None => return Ok(PlanAnswer::Plan(plan)),
                };
                *refused.borrow_mut() = Some((code, refusal.clone()));
                Err(StageOutputError::new(
                    Stage::Plan,
                    format!("{refusal}; {hint}"),
                ))
            })
            .await;
        match (asked, refused.into_inner()) {
            (Ok(answer), _) => Ok(answer),
            // Only an answer refused twice is the plan's fault; a model that failed to answer
            // the corrective round keeps its own code.
            (Err(failed), Some((code, refusal)))
                if failed.code == FailureCode::LlmOutputInvalid =>
            {
                Err(Failure::new(code, Stage::Plan, refusal))
            }
            (Err(failed), _) => Err(failed),
        }
    }

    /// Records the plan the planner settled on.
    pub(super) fn planned(&mut self, plan: Plan) -> Result<Plan, Failure> {
        self.summary.plan_steps = plan.plan_steps.clone();
        self.log
            .write_json("PLAN.json", &plan)
            .map_err(io_failure(Stage::Plan))?;
        self.log.line(&format!(
            "plan: {} steps, files {}",
            plan.plan_steps.len(),
            plan.file_changes
                .iter()
                .map(|c| c.path.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
        Ok(plan)
    }
}

/// Why a plan cannot be taken, if it cannot: the failure code a second such plan ends the job
/// with, the refusal, and what the planner is told to do instead.
pub(super) fn plan_refusal(
    ready: &Ready,
    plan: &Plan,
    repo_files: &[String],
) -> Option<(FailureCode, String, &'static str)> {
    if let Err((path, reason)) = plan::check(plan, &ready.root, &ready.protected) {
        return Some((
            FailureCode::WriteScopeViolation,
            format!("the plan touches `{path}`: {reason}"),
            "name only files inside this repository, relative to its root, that no rule protects",
        ));
    }
    let missing = plan_files::missing_files(plan, &ready.root, &ready.protected, repo_files);
    if missing.is_empty() {
        return None;
    }
    Some((
        FailureCode::InvalidInput,
        format!(
            "the plan names files that do not exist: {}",
            plan_files::describe(&missing)
        ),
        "name files that exist in this repository (see the map), and give a file you mean to add \
         the operation CREATE",
    ))
}

/// What a revision stands on instead of a triage: a maintainer asked, so it is actionable, of
/// the change request's own type.
pub(super) fn revision_triage(revision: &Revision) -> Triage {
    Triage {
        actionable: true,
        classification: revision.kind,
        risk: triage::Risk::Low,
        affected_files: Vec::new(),
        reason: "a maintainer asked for this revision".into(),
    }
}

/// The index of the work tree and the files and spans it ranks for the issue.
pub(super) struct Located {
    pub(super) index: RepoIndex,
    pub(super) ranking: Ranking,
}
