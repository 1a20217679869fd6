//! The money a job may spend: its caps (per job, per repository and day, per day), what it spent,
//! and the check before each model call, in one handle every clone of which shares.

use std::fmt;
use std::sync::{Arc, Mutex};

use super::price::{Pricing, dollars};

/// Which spend a cap bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CapScope {
    Job,
    RepositoryDay,
    Day,
}

/// One spending cap: its name as the operator wrote it, its limit, and what was spent under it
/// before this handle was made (other jobs today, this job's earlier attempts).
#[derive(Debug, Clone, PartialEq)]
pub struct Cap {
    pub name: String,
    pub scope: CapScope,
    pub limit_usd: f64,
    pub spent_before_usd: f64,
}

/// A model call refused because its worst case would cross `cap`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "the next model call could cost up to {worst} and would cross {name} ({limit}): {spent} spent so far",
    worst = dollars(*worst_case_usd),
    limit = dollars(*limit_usd),
    spent = dollars(*spent_usd)
)]
pub struct CapCrossed {
    pub name: String,
    pub scope: CapScope,
    pub limit_usd: f64,
    /// Under this cap: before this job, plus this job's calls (those under way counted at their
    /// worst case).
    pub spent_usd: f64,
    pub worst_case_usd: f64,
}

/// The service's caps (`[budget]`), in US dollars; 0 is none.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ServiceCaps {
    pub per_job: f64,
    pub per_repository_per_day: f64,
    pub per_day: f64,
}

impl ServiceCaps {
    /// The caps in force for one job run, given what its repository and the whole service
    /// spent today and what the job's earlier runs spent.
    pub fn caps(&self, repository_today: f64, all_today: f64, job_before: f64) -> Vec<Cap> {
        [
            (
                "budget.max_usd_per_job",
                CapScope::Job,
                self.per_job,
                job_before,
            ),
            (
                "budget.max_usd_per_repository_per_day",
                CapScope::RepositoryDay,
                self.per_repository_per_day,
                repository_today,
            ),
            (
                "budget.max_usd_per_day",
                CapScope::Day,
                self.per_day,
                all_today,
            ),
        ]
        .into_iter()
        .filter(|(_, _, limit, _)| *limit > 0.0)
        .map(|(name, scope, limit_usd, spent_before_usd)| Cap {
            name: name.into(),
            scope,
            limit_usd,
            spent_before_usd,
        })
        .collect()
    }

    /// The first daily cap the day's spend has already reached: a new job is not started.
    pub fn daily_cap_reached(&self, repository_today: f64, all_today: f64) -> Option<Cap> {
        self.caps(repository_today, all_today, 0.0)
            .into_iter()
            .filter(|cap| cap.scope != CapScope::Job)
            .find(|cap| cap.spent_before_usd >= cap.limit_usd)
    }
}

/// Told the cost of every answer (the metrics).
pub type SpendObserver = Arc<dyn Fn(f64) + Send + Sync>;

/// One job's purse, shared by everything that calls the model for it: a clone is the same
/// purse. `allow` reserves a call's worst case under a lock, so calls made at the same time
/// cannot together cross a cap that each alone would not.
#[derive(Clone)]
pub struct SpendGuard {
    ledger: Arc<Mutex<Ledger>>,
    pricing: Arc<Pricing>,
    observer: Option<SpendObserver>,
}

#[derive(Debug, Default)]
struct Ledger {
    caps: Vec<Cap>,
    /// What the job's earlier runs spent (its earlier attempts), under every per-job cap.
    job_before: f64,
    /// The answers' cost so far.
    spent: f64,
    /// The worst cases of the calls allowed and not yet answered.
    reserved: f64,
}

impl fmt::Debug for SpendGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpendGuard")
            .field("ledger", &self.ledger)
            .field("pricing", &self.pricing)
            .finish_non_exhaustive()
    }
}

/// A call allowed, its worst case held until its cost is recorded (or released when dropped
/// unrecorded: a call that failed is not charged).
#[must_use = "an allowance holds its worst case until its cost is recorded"]
pub struct Allowance {
    guard: SpendGuard,
    worst_case_usd: f64,
}

impl SpendGuard {
    /// A purse for `pricing` with `caps`.
    pub fn new(pricing: Pricing, caps: Vec<Cap>) -> SpendGuard {
        SpendGuard {
            ledger: Arc::new(Mutex::new(Ledger {
                caps,
                ..Ledger::default()
            })),
            pricing: Arc::new(pricing),
            observer: None,
        }
    }

    /// Counts `usd`, spent by the job's earlier runs, under the per-job caps (the service's,
    /// given in `caps` already, and the repository's once [`limit_job`](Self::limit_job) adds it).
    pub fn after_earlier_runs(self, usd: f64) -> SpendGuard {
        self.lock().job_before = usd;
        self
    }

    /// Tells `observer` the cost of every answer.
    pub fn observed_by(mut self, observer: SpendObserver) -> SpendGuard {
        self.observer = Some(observer);
        self
    }

    pub fn pricing(&self) -> &Pricing {
        &self.pricing
    }

    /// The answers' cost so far, on every clone.
    pub fn spent(&self) -> f64 {
        self.lock().spent
    }

    /// The caps in force.
    pub fn caps(&self) -> Vec<Cap> {
        self.lock().caps.clone()
    }

    /// Puts the repository's own per-job cap (`[budget] max_usd`) in force, bounded by the
    /// service's `budget.max_usd_per_job` when it has one: a larger one is lowered to it, and
    /// the returned sentence says so.
    pub fn limit_job(&self, max_usd: f64) -> Option<String> {
        const NAME: &str = "[budget] max_usd";
        let mut ledger = self.lock();
        let spent_before = ledger.job_before;
        ledger.caps.retain(|cap| cap.name != NAME);
        let ceiling = ledger
            .caps
            .iter()
            .filter(|cap| cap.scope == CapScope::Job)
            .map(|cap| cap.limit_usd)
            .reduce(f64::min);
        if let Some(ceiling) = ceiling.filter(|ceiling| max_usd > *ceiling) {
            return Some(format!(
                "budget: [budget] max_usd = {} is above the service's budget.max_usd_per_job; lowered to {}",
                dollars(max_usd),
                dollars(ceiling)
            ));
        }
        ledger.caps.push(Cap {
            name: NAME.into(),
            scope: CapScope::Job,
            limit_usd: max_usd,
            spent_before_usd: spent_before,
        });
        None
    }

    /// Allows a call that could cost up to `worst_case_usd`, unless that would cross a cap.
    pub fn allow(&self, worst_case_usd: f64) -> Result<Allowance, CapCrossed> {
        let mut ledger = self.lock();
        let ours = ledger.spent + ledger.reserved;
        for cap in &ledger.caps {
            let spent = cap.spent_before_usd + ours;
            if spent + worst_case_usd > cap.limit_usd {
                return Err(CapCrossed {
                    name: cap.name.clone(),
                    scope: cap.scope,
                    limit_usd: cap.limit_usd,
                    spent_usd: spent,
                    worst_case_usd,
                });
            }
        }
        ledger.reserved += worst_case_usd;
        Ok(Allowance {
            guard: self.clone(),
            worst_case_usd,
        })
    }

    /// Adds a cost no allowance held (a call made without asking).
    pub fn record(&self, actual_usd: f64) {
        self.lock().spent += actual_usd;
        if let Some(observer) = &self.observer {
            observer(actual_usd);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Ledger> {
        self.ledger
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Allowance {
    /// The call was answered and cost `actual_usd`: the worst case held for it is let go.
    pub fn record(mut self, actual_usd: f64) {
        self.release();
        self.guard.record(actual_usd);
    }

    fn release(&mut self) {
        let mut ledger = self.guard.lock();
        ledger.reserved = (ledger.reserved - self.worst_case_usd).max(0.0);
        self.worst_case_usd = 0.0;
    }
}

impl Drop for Allowance {
    fn drop(&mut self) {
        if self.worst_case_usd != 0.0 {
            self.release();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::price::{PriceOverride, pricing};

    fn cap(name: &str, scope: CapScope, limit_usd: f64, spent_before_usd: f64) -> Cap {
        Cap {
            name: name.into(),
            scope,
            limit_usd,
            spent_before_usd,
        }
    }

    fn purse(caps: Vec<Cap>) -> SpendGuard {
        SpendGuard::new(pricing("gpt-4o", &PriceOverride::default()), caps)
    }

    #[test]
    fn a_call_whose_worst_case_would_cross_a_cap_is_refused_naming_the_cap_and_the_spend() {
        let guard = purse(vec![cap("[budget] max_usd", CapScope::Job, 1.0, 0.0)]);
        guard.allow(0.5).unwrap().record(0.7);
        let refused = guard.allow(0.4).err().unwrap();
        assert_eq!(refused.name, "[budget] max_usd");
        assert_eq!(
            refused.to_string(),
            "the next model call could cost up to $0.4000 and would cross [budget] max_usd ($1.00): $0.7000 spent so far"
        );
        guard.allow(0.3).unwrap().record(0.1);
        assert!((guard.spent() - 0.8).abs() < 1e-12);
    }

    #[test]
    fn the_spend_of_other_jobs_today_counts_against_the_daily_caps() {
        let guard = purse(vec![cap(
            "budget.max_usd_per_repository_per_day",
            CapScope::RepositoryDay,
            10.0,
            9.9,
        )]);
        let refused = guard.allow(0.2).err().unwrap();
        assert_eq!(refused.scope, CapScope::RepositoryDay);
        assert!((refused.spent_usd - 9.9).abs() < 1e-12);
    }

    #[test]
    fn clones_share_one_purse_and_calls_under_way_hold_their_worst_case() {
        let guard = purse(vec![cap("budget.max_usd_per_job", CapScope::Job, 1.0, 0.0)]);
        let other = guard.clone();
        let first = guard.allow(0.6).unwrap();
        assert!(
            other.allow(0.6).is_err(),
            "the first call's worst case is held"
        );
        first.record(0.1);
        other.allow(0.6).unwrap().record(0.2);
        assert!((guard.spent() - 0.3).abs() < 1e-12);
        drop(guard.allow(0.5).unwrap());
        guard.allow(0.7).unwrap().record(0.0);
    }

    #[test]
    fn many_threads_asking_at_once_never_cross_the_cap_together() {
        let guard = purse(vec![cap("budget.max_usd_per_job", CapScope::Job, 1.0, 0.0)]);
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let guard = guard.clone();
                std::thread::spawn(move || {
                    for _ in 0..100 {
                        if let Ok(allowance) = guard.allow(0.05) {
                            allowance.record(0.05);
                        }
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert!(guard.spent() <= 1.0 + 1e-9, "{}", guard.spent());
        assert!(guard.spent() >= 0.95 - 1e-9, "{}", guard.spent());
    }

    #[test]
    fn a_service_cap_of_zero_is_no_cap_and_a_day_spent_to_its_cap_starts_no_job() {
        let service = ServiceCaps {
            per_job: 0.0,
            per_repository_per_day: 5.0,
            per_day: 0.0,
        };
        assert_eq!(service.caps(1.0, 9.0, 0.0).len(), 1);
        assert!(service.daily_cap_reached(4.99, 100.0).is_none());
        let reached = service.daily_cap_reached(5.0, 5.0).unwrap();
        assert_eq!(reached.name, "budget.max_usd_per_repository_per_day");
    }

    #[test]
    fn a_repository_cap_above_the_service_ceiling_is_lowered_to_it_and_said() {
        let guard = purse(vec![cap("budget.max_usd_per_job", CapScope::Job, 2.0, 0.0)]);
        let note = guard.limit_job(5.0).unwrap();
        assert_eq!(
            note,
            "budget: [budget] max_usd = $5.00 is above the service's budget.max_usd_per_job; lowered to $2.00"
        );
        assert_eq!(guard.caps().len(), 1);
        assert!(guard.limit_job(0.5).is_none());
        let refused = guard.allow(0.6).err().unwrap();
        assert_eq!(refused.name, "[budget] max_usd");
    }

    #[test]
    fn what_the_job_s_earlier_attempts_spent_counts_against_its_own_cap() {
        let guard = purse(Vec::new()).after_earlier_runs(0.4);
        assert!(guard.limit_job(0.5).is_none());
        let refused = guard.allow(0.2).err().unwrap();
        assert!((refused.spent_usd - 0.4).abs() < 1e-12, "{refused:?}");
        guard.allow(0.1).unwrap().record(0.1);
    }
}
