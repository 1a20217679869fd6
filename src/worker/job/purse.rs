//! A job's money: the purse each pipeline run spends from (the service's caps over what today and
//! the job's earlier runs spent), the run's cost kept in the store, and the once-a-day refusal.

use chrono::{DateTime, Duration as Days, Utc};

use crate::failure::{FailureCode, Stage};
use crate::forge::Forge;
use crate::llm::price::dollars;
use crate::llm::spend::{CapScope, SpendGuard};
use crate::store::{Finish, Spend};
use crate::worker::replies::daily_cap_reached;

use super::stop::Stop;
use super::{JobRun, Request};

impl JobRun {
    /// The purse of one pipeline run: the model's price, and the caps with what was spent
    /// under them before; every answer's cost goes to the metrics as it comes.
    pub(super) async fn purse(&self, request: &Request) -> Result<SpendGuard, Stop> {
        let key = &self.job.key;
        let today = self.ctx.store.day_spend(&key.repo, Utc::now()).await?;
        let job_before = self.ctx.store.job_spend(self.job.id).await?.usd;
        let settings = &self.ctx.settings;
        let caps = settings
            .pipeline
            .caps
            .caps(today.repository_usd, today.all_usd, job_before);
        let telemetry = self.ctx.telemetry.clone();
        let repository = format!("{}:{}", key.repo.forge, request.repo.owner_path);
        let model = settings.pipeline.pricing.model.clone();
        Ok(
            SpendGuard::new(settings.pipeline.pricing.clone(), caps).observed_by(
                std::sync::Arc::new(move |usd| telemetry.llm_cost(&repository, &model, usd)),
            ),
        )
    }

    /// Keeps what a pipeline run spent from `purse` (beyond `before`) in the store, for the
    /// daily caps and the jobs pages.
    pub(super) async fn book(&self, purse: &SpendGuard, before: f64) -> Result<(), Stop> {
        let usd = purse.spent() - before;
        if usd <= 0.0 && purse.pricing().known() {
            return Ok(());
        }
        let spend = Spend {
            job: self.job.id,
            model: purse.pricing().model.clone(),
            usd: usd.max(0.0),
            priced: purse.pricing().known(),
        };
        self.ctx
            .store
            .record_spend(&self.job.key, &spend, Utc::now())
            .await?;
        Ok(())
    }

    /// A new job on a repository whose spend today has reached a daily cap is not started: the
    /// issue is told once a day (the cap, today's spend, when it resets), later ones nothing.
    pub(super) async fn stop_if_over_daily_cap(
        &mut self,
        forge: &dyn Forge,
        request: &Request,
    ) -> Result<(), Stop> {
        let key = &self.job.key;
        let now = Utc::now();
        let today = self.ctx.store.day_spend(&key.repo, now).await?;
        let Some(cap) = self
            .ctx
            .settings
            .pipeline
            .caps
            .daily_cap_reached(today.repository_usd, today.all_usd)
        else {
            return Ok(());
        };
        let resets = next_utc_midnight(now);
        let whose = match cap.scope {
            CapScope::RepositoryDay => "this repository",
            _ => "all repositories",
        };
        let reason = format!(
            "{} ({}) reached: {} spent today on {whose}; resets at {} UTC",
            cap.name,
            dollars(cap.limit_usd),
            dollars(cap.spent_before_usd),
            resets.format("%Y-%m-%d %H:%M")
        );
        if self.ctx.store.first_spend_notice(key, now).await? {
            let text = daily_cap_reached(&cap, whose, resets, self.job.id);
            if let Err(error) = forge
                .create_comment(&request.repo, request.issue, &self.redactor.redact(&text))
                .await
            {
                tracing::warn!(job = self.job.id.0, %error, "could not post the spending cap's notice");
            }
        } else {
            self.event(
                Stage::Authorize,
                &format!("not started, not told again: {reason}"),
            )
            .await?;
        }
        Err(Stop::Finished(Finish::failed(
            FailureCode::BudgetExceeded,
            Stage::Authorize,
            format!("not started: {reason}"),
        )))
    }
}

/// The start of the next UTC day, when the daily caps start again from nothing.
fn next_utc_midnight(now: DateTime<Utc>) -> DateTime<Utc> {
    let tomorrow = now.date_naive() + Days::days(1);
    tomorrow
        .and_hms_opt(0, 0, 0)
        .expect("midnight exists")
        .and_utc()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn the_daily_caps_reset_at_the_next_utc_midnight() {
        let late = Utc.with_ymd_and_hms(2026, 11, 26, 23, 59, 59).unwrap();
        assert_eq!(
            next_utc_midnight(late),
            Utc.with_ymd_and_hms(2026, 11, 27, 0, 0, 0).unwrap()
        );
    }
}
