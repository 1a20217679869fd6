//! Stories about the durable job store, each told twice: on a real SQLite file and on a real
//! PostgreSQL server the harness starts itself.

use std::collections::HashSet;
use std::time::Duration;

use autofix::failure::{Failure, FailureCode, Stage};
use autofix::forge::{BotEvent, ForgeKind, IssueNumber, RepoRef};
use autofix::store::{
    DaySpend, Delivery, EnqueueOutcome, Finish, JobId, JobKey, JobState, REPORT_RETRY_BASE,
    REPORT_RETRY_CAP, RETRY_BASE, RETRY_CAP, RepoKey, Spend, Store, StoreError, report_backoff,
    retry_backoff,
};
use chrono::{DateTime, TimeZone, Utc};

const LEASE: Duration = Duration::from_secs(60);

/// A store on one backend, with the temp dir an SQLite file lives in kept alive.
struct Harness {
    store: Store,
    url: String,
    _dir: Option<tempfile::TempDir>,
}

async fn sqlite() -> Harness {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = dir.path().join("autofix.db").display().to_string();
    let store = Store::open(&url).await.expect("open SQLite store");
    Harness {
        store,
        url,
        _dir: Some(dir),
    }
}

async fn postgres() -> Harness {
    let url = crate::support::postgres::fresh_database().await;
    let store = Store::open(&url).await.expect("open PostgreSQL store");
    Harness {
        store,
        url,
        _dir: None,
    }
}

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 22, 9, 0, 0).unwrap()
}

fn after(seconds: i64) -> DateTime<Utc> {
    t0() + chrono::TimeDelta::seconds(seconds)
}

fn labelled(id: &str) -> Delivery {
    Delivery {
        id: id.to_owned(),
        forge: ForgeKind::GitHub,
        event: "issues".to_owned(),
        received_at: t0(),
        payload: format!("{{\"delivery\":\"{id}\",\"action\":\"labeled\"}}").into_bytes(),
        parsed: BotEvent::Ignored {
            reason: format!("delivery {id}, as the store keeps it"),
        },
    }
}

fn issue(number: u64) -> JobKey {
    JobKey::new(ForgeKind::GitHub, "acme/widgets", number)
}

async fn enqueue(store: &Store, delivery: &str, number: u64) -> JobId {
    match store
        .record_delivery_and_enqueue(&labelled(delivery), &issue(number), t0())
        .await
        .expect("enqueue")
    {
        EnqueueOutcome::NewJob(id) => id,
        other => panic!("expected a new job for {delivery}, got {other:?}"),
    }
}

async fn a_delivery_enqueues_one_job(t: Harness) {
    let job = enqueue(&t.store, "d-1", 7).await;

    let jobs = t.store.jobs_list(10).await.unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].id, job);
    assert_eq!(jobs[0].state, JobState::Queued);
    assert_eq!(jobs[0].key, issue(7));
    assert_eq!(jobs[0].attempts, 0);
    let stored = t
        .store
        .delivery("d-1")
        .await
        .unwrap()
        .expect("delivery kept");
    let sent = labelled("d-1");
    assert_eq!(
        (
            stored.forge,
            stored.event,
            stored.received_at,
            stored.payload
        ),
        (sent.forge, sent.event, sent.received_at, sent.payload)
    );
    assert_eq!(stored.job_id, Some(job));
    assert_eq!(t.store.delivery("never-sent").await.unwrap(), None);
}

async fn the_same_delivery_again_is_a_duplicate(t: Harness) {
    enqueue(&t.store, "d-1", 7).await;

    let again = t
        .store
        .record_delivery_and_enqueue(&labelled("d-1"), &issue(8), after(5))
        .await
        .unwrap();

    assert_eq!(again, EnqueueOutcome::DuplicateDelivery);
    let jobs = t.store.jobs_list(10).await.unwrap();
    assert_eq!(jobs.len(), 1, "a redelivery writes nothing");
    assert_eq!(jobs[0].key, issue(7));
}

async fn another_delivery_for_the_same_issue_while_a_job_is_active_adds_no_job(t: Harness) {
    let job = enqueue(&t.store, "d-1", 7).await;

    let while_queued = t
        .store
        .record_delivery_and_enqueue(&labelled("d-2"), &issue(7), after(1))
        .await
        .unwrap();
    t.store
        .claim("worker-a", LEASE, after(2))
        .await
        .unwrap()
        .expect("claimed");
    let while_running = t
        .store
        .record_delivery_and_enqueue(&labelled("d-3"), &issue(7), after(3))
        .await
        .unwrap();

    assert_eq!(while_queued, EnqueueOutcome::ActiveJobExists(job));
    assert_eq!(while_running, EnqueueOutcome::ActiveJobExists(job));
    assert_eq!(t.store.jobs_list(10).await.unwrap().len(), 1);
    let joined = t
        .store
        .delivery("d-3")
        .await
        .unwrap()
        .expect("delivery kept");
    assert_eq!(
        joined.job_id,
        Some(job),
        "the delivery points at the active job"
    );
}

async fn two_deliveries_for_the_same_issue_arriving_at_once_make_one_job(t: Harness) {
    let racers = (0..8).map(|n| {
        let store = t.store.clone();
        tokio::spawn(async move {
            store
                .record_delivery_and_enqueue(&labelled(&format!("race-{n}")), &issue(7), t0())
                .await
                .expect("enqueue")
        })
    });
    let mut outcomes = Vec::new();
    for racer in racers.collect::<Vec<_>>() {
        outcomes.push(racer.await.expect("racing task"));
    }

    let new_jobs: Vec<JobId> = outcomes
        .iter()
        .filter_map(|outcome| match outcome {
            EnqueueOutcome::NewJob(id) => Some(*id),
            _ => None,
        })
        .collect();
    assert_eq!(
        new_jobs.len(),
        1,
        "exactly one delivery makes the job: {outcomes:?}"
    );
    let joined = outcomes
        .iter()
        .filter(|outcome| **outcome == EnqueueOutcome::ActiveJobExists(new_jobs[0]))
        .count();
    assert_eq!(joined, 7, "the others join it: {outcomes:?}");
    assert_eq!(t.store.jobs_list(10).await.unwrap().len(), 1);
}

async fn two_workers_claiming_concurrently_never_get_the_same_job(t: Harness) {
    for number in 1..=20 {
        enqueue(&t.store, &format!("d-{number}"), number).await;
    }

    let workers = (0..6).map(|worker| {
        let store = t.store.clone();
        tokio::spawn(async move {
            let owner = format!("worker-{worker}");
            let mut mine = Vec::new();
            while let Some(job) = store.claim(&owner, LEASE, after(1)).await.expect("claim") {
                mine.push(job.id);
            }
            mine
        })
    });
    let mut claimed = Vec::new();
    for worker in workers.collect::<Vec<_>>() {
        claimed.extend(worker.await.expect("worker task"));
    }

    let distinct: HashSet<JobId> = claimed.iter().copied().collect();
    assert_eq!(
        claimed.len(),
        20,
        "every job claimed exactly once: {claimed:?}"
    );
    assert_eq!(distinct.len(), 20, "no job claimed twice: {claimed:?}");
}

async fn an_expired_lease_is_reclaimed(t: Harness) {
    let job = enqueue(&t.store, "d-1", 7).await;
    let first = t
        .store
        .claim("worker-a", LEASE, after(0))
        .await
        .unwrap()
        .unwrap();
    t.store
        .record_stage(job, "worker-a", Stage::Plan, "planned the fix", after(10))
        .await
        .unwrap();

    let while_leased = t.store.claim("worker-b", LEASE, after(59)).await.unwrap();
    let after_expiry = t.store.claim("worker-b", LEASE, after(60)).await.unwrap();

    assert_eq!(first.attempts, 1);
    assert_eq!(while_leased, None, "a live lease is respected");
    let reclaimed = after_expiry.expect("the crashed worker's job is reclaimed");
    assert_eq!(reclaimed.id, job);
    assert_eq!(reclaimed.attempts, 2);
    assert_eq!(
        reclaimed.stage.as_deref(),
        Some("plan"),
        "resumes after the last stage"
    );
    assert_eq!(reclaimed.lease_until, after(120));
    assert_eq!(first.taken_over_from, None, "a queued job is no takeover");
    assert_eq!(
        reclaimed.taken_over_from.as_deref(),
        Some("worker-a"),
        "the takeover names the worker whose lease ran out"
    );
}

async fn a_released_job_is_runnable_at_once_without_counting_the_attempt(t: Harness) {
    let job = enqueue(&t.store, "d-1", 7).await;
    let other = enqueue(&t.store, "d-2", 8).await;
    t.store.claim("worker-a", LEASE, after(0)).await.unwrap();
    t.store.claim("worker-b", LEASE, after(0)).await.unwrap();

    let by_a_stranger = t.store.release(job, "worker-b", "stopping", after(1)).await;
    let by_its_holder = t.store.release(job, "worker-a", "stopping", after(2)).await;
    let taken = t.store.claim("worker-c", LEASE, after(3)).await.unwrap();
    let everything_b_holds = t
        .store
        .release_all("worker-b", "stopped before the stage ended", after(4))
        .await
        .unwrap();

    assert!(!by_a_stranger.unwrap(), "only the holder releases a job");
    assert!(by_its_holder.unwrap());
    let taken = taken.expect("released long before its lease ends, and claimed at once");
    assert_eq!(taken.id, job);
    assert_eq!(taken.attempts, 1, "the released run is not counted");
    assert_eq!(taken.taken_over_from, None, "a release is no takeover");
    assert_eq!(everything_b_holds, [other]);
    let detail = t.store.job_show(other).await.unwrap();
    assert_eq!(detail.job.state.as_str(), "queued");
    assert_eq!(detail.job.lease_owner, None);
    assert!(
        detail.events.iter().any(|event| event.stage == "released"
            && event.message == "released by worker-b: stopped before the stage ended"),
        "{:?}",
        detail.events
    );
}

async fn a_renew_after_losing_the_lease_fails(t: Harness) {
    let job = enqueue(&t.store, "d-1", 7).await;
    t.store
        .claim("worker-a", LEASE, after(0))
        .await
        .unwrap()
        .unwrap();

    let renewed = t
        .store
        .renew(job, "worker-a", LEASE, after(50))
        .await
        .unwrap();
    let still_held = t.store.claim("worker-b", LEASE, after(70)).await.unwrap();
    let taken = t.store.claim("worker-b", LEASE, after(110)).await.unwrap();
    let late_renew = t.store.renew(job, "worker-a", LEASE, after(111)).await;
    let late_stage = t
        .store
        .record_stage(job, "worker-a", Stage::Edit, "too late", after(111))
        .await;
    let late_finish = t
        .store
        .finish(job, "worker-a", &Finish::Succeeded, after(111))
        .await;

    assert_eq!(renewed, after(110));
    assert_eq!(still_held, None, "the renewed lease outlived the first one");
    assert_eq!(taken.map(|job| job.id), Some(job));
    for lost in [late_renew.map(|_| ()), late_stage, late_finish] {
        match lost {
            Err(StoreError::LeaseLost {
                job: lost_job,
                owner,
            }) => {
                assert_eq!((lost_job, owner.as_str()), (job, "worker-a"));
            }
            other => panic!("expected LeaseLost, got {other:?}"),
        }
    }
    let message = StoreError::LeaseLost {
        job,
        owner: "worker-a".into(),
    }
    .to_string();
    assert!(
        message.contains("no longer leased to worker \"worker-a\""),
        "{message}"
    );
}

async fn retry_backoff_grows(t: Harness) {
    let job = enqueue(&t.store, "d-1", 7).await;
    t.store
        .claim("worker-a", LEASE, after(0))
        .await
        .unwrap()
        .unwrap();

    let first_retry = t
        .store
        .retry_later(job, "worker-a", "forge unreachable", None, after(1))
        .await
        .unwrap();
    let too_early = t.store.claim("worker-a", LEASE, after(15)).await.unwrap();
    let second = t
        .store
        .claim("worker-a", LEASE, after(16))
        .await
        .unwrap()
        .unwrap();
    let second_retry = t
        .store
        .retry_later(job, "worker-a", "forge unreachable again", None, after(17))
        .await
        .unwrap();

    assert_eq!(first_retry, after(16), "first retry waits the base backoff");
    assert_eq!(
        too_early, None,
        "a job waiting out its backoff is not claimed"
    );
    assert_eq!(second.attempts, 2);
    assert_eq!(
        second.last_error.as_deref(),
        Some("forge unreachable"),
        "the claim says why the attempt before stopped"
    );
    assert_eq!(
        second_retry,
        after(17 + 30),
        "the second retry waits twice as long"
    );
    let shown = t.store.job_show(job).await.unwrap();
    assert_eq!(shown.job.state, JobState::Queued);
    assert_eq!(shown.job.run_after, after(47));
    assert_eq!(
        shown.job.last_error.as_deref(),
        Some("forge unreachable again")
    );
    assert_eq!(shown.job.lease_owner, None);
    let retries: Vec<&str> = shown
        .events
        .iter()
        .filter(|event| event.stage == "retry")
        .map(|event| event.message.as_str())
        .collect();
    assert_eq!(
        retries,
        [
            "attempt 1 failed, retrying in 15s: forge unreachable",
            "attempt 2 failed, retrying in 30s: forge unreachable again",
        ]
    );
}

async fn a_rate_limited_retry_waits_for_the_reset_beyond_its_backoff(t: Harness) {
    let job = enqueue(&t.store, "d-1", 7).await;
    t.store
        .claim("worker-a", LEASE, after(0))
        .await
        .unwrap()
        .unwrap();

    let reset = after(1 + 600);
    let retry = t
        .store
        .retry_later(
            job,
            "worker-a",
            "GitHub rate-limited",
            Some(reset),
            after(1),
        )
        .await
        .unwrap();
    let before_the_reset = t.store.claim("worker-a", LEASE, after(60)).await.unwrap();
    let at_the_reset = t.store.claim("worker-a", LEASE, reset).await.unwrap();

    assert_eq!(retry, reset);
    assert_eq!(
        before_the_reset, None,
        "its backoff alone is over, not the limit"
    );
    assert_eq!(at_the_reset.map(|claimed| claimed.id), Some(job));
    let shown = t.store.job_show(job).await.unwrap();
    assert!(
        shown
            .events
            .iter()
            .any(|event| event.message == "attempt 1 failed, retrying in 600s: GitHub rate-limited"),
        "{:#?}",
        shown.events
    );
}

async fn stages_and_events_are_recorded_and_read_back(t: Harness) {
    let job = enqueue(&t.store, "d-1", 7).await;
    t.store
        .claim("worker-a", LEASE, after(1))
        .await
        .unwrap()
        .unwrap();

    t.store
        .record_stage(
            job,
            "worker-a",
            Stage::Fetch,
            "cloned acme/widgets",
            after(2),
        )
        .await
        .unwrap();
    t.store
        .record_stage(job, "worker-a", Stage::Edit, "edited src/lib.rs", after(3))
        .await
        .unwrap();

    let shown = t.store.job_show(job).await.unwrap();
    assert_eq!(shown.job.stage.as_deref(), Some("edit"));
    assert_eq!(shown.job.state, JobState::Running);
    assert_eq!(shown.job.lease_owner.as_deref(), Some("worker-a"));
    assert_eq!(shown.job.lease_until, Some(after(61)));
    let history: Vec<(DateTime<Utc>, &str, &str)> = shown
        .events
        .iter()
        .map(|event| (event.at, event.stage.as_str(), event.message.as_str()))
        .collect();
    assert_eq!(
        history,
        [
            (t0(), "queued", "delivery d-1 (issues)"),
            (after(1), "claimed", "attempt 1 by worker-a"),
            (after(2), "fetch", "cloned acme/widgets"),
            (after(3), "edit", "edited src/lib.rs"),
        ]
    );
    assert!(matches!(
        t.store.job_show(JobId(job.0 + 100)).await,
        Err(StoreError::JobNotFound(missing)) if missing == JobId(job.0 + 100)
    ));
}

async fn finished_jobs_free_the_dedupe_key_so_a_new_label_makes_a_new_job(t: Harness) {
    let first = enqueue(&t.store, "d-1", 7).await;
    t.store
        .claim("worker-a", LEASE, after(1))
        .await
        .unwrap()
        .unwrap();
    t.store
        .finish(first, "worker-a", &Finish::Succeeded, after(2))
        .await
        .unwrap();

    let second = enqueue(&t.store, "d-2", 7).await;
    t.store
        .claim("worker-a", LEASE, after(3))
        .await
        .unwrap()
        .unwrap();
    let failure = Finish::failed(
        FailureCode::ValidationFailed,
        Stage::Validate,
        "cargo test failed twice",
    );
    t.store
        .finish(second, "worker-a", &failure, after(4))
        .await
        .unwrap();
    let third = enqueue(&t.store, "d-3", 7).await;

    assert_ne!(first, second);
    assert_ne!(second, third);
    let jobs = t.store.jobs_list(10).await.unwrap();
    let states: Vec<(JobId, JobState)> = jobs.iter().map(|job| (job.id, job.state)).collect();
    assert_eq!(
        states,
        [
            (third, JobState::Queued),
            (second, JobState::Failed),
            (first, JobState::Succeeded),
        ],
        "newest first"
    );
    assert_eq!(
        jobs[1].failure_code.map(|code| code.as_str()),
        Some("VALIDATION_FAILED")
    );
    assert_eq!(
        jobs[1].last_error.as_deref(),
        Some("cargo test failed twice")
    );
    assert_eq!(jobs[1].lease_owner, None);
    assert_eq!(
        t.store.jobs_list(1).await.unwrap().len(),
        1,
        "the limit is honoured"
    );
}

async fn migrations_run_again_on_an_existing_database(t: Harness) {
    let job = enqueue(&t.store, "d-1", 7).await;
    t.store.close().await;

    let reopened = Store::open(&t.url).await.expect("reopen the same database");

    let jobs = reopened.jobs_list(10).await.unwrap();
    assert_eq!(jobs.len(), 1, "reopening keeps the data");
    assert_eq!(jobs[0].id, job);
    assert_eq!(
        reopened
            .record_delivery_and_enqueue(&labelled("d-1"), &issue(7), after(1))
            .await
            .unwrap(),
        EnqueueOutcome::DuplicateDelivery
    );
}

async fn a_checkpoint_survives_a_crashed_worker_and_comes_back_with_the_reclaim(t: Harness) {
    let job = enqueue(&t.store, "d-1", 7).await;
    let first = t
        .store
        .claim("worker-a", LEASE, after(0))
        .await
        .unwrap()
        .unwrap();
    t.store
        .save_checkpoint(job, "worker-a", r#"{"branch":"autofix/issue-7"}"#, after(5))
        .await
        .unwrap();
    t.store
        .save_checkpoint(
            job,
            "worker-a",
            r#"{"branch":"autofix/issue-7","comment":42}"#,
            after(6),
        )
        .await
        .unwrap();

    let reclaimed = t
        .store
        .claim("worker-b", LEASE, after(61))
        .await
        .unwrap()
        .expect("the expired lease is reclaimed");

    assert_eq!(first.checkpoint, None, "a fresh job has no checkpoint");
    assert_eq!(
        reclaimed.checkpoint.as_deref(),
        Some(r#"{"branch":"autofix/issue-7","comment":42}"#),
        "the latest checkpoint replaces the earlier one"
    );
    let shown = t.store.job_show(job).await.unwrap();
    assert_eq!(shown.checkpoint, reclaimed.checkpoint);
}

async fn a_checkpoint_from_a_worker_that_lost_its_lease_is_refused(t: Harness) {
    let job = enqueue(&t.store, "d-1", 7).await;
    t.store
        .claim("worker-a", LEASE, after(0))
        .await
        .unwrap()
        .unwrap();
    t.store
        .claim("worker-b", LEASE, after(60))
        .await
        .unwrap()
        .expect("worker-b takes the expired lease");

    let late = t
        .store
        .save_checkpoint(job, "worker-a", r#"{"stale":true}"#, after(61))
        .await;
    let unknown = t
        .store
        .save_checkpoint(JobId(job.0 + 100), "worker-b", "{}", after(61))
        .await;

    assert!(
        matches!(&late, Err(StoreError::LeaseLost { job: lost, owner }) if *lost == job && owner == "worker-a"),
        "{late:?}"
    );
    assert!(
        matches!(unknown, Err(StoreError::LeaseLost { .. })),
        "{unknown:?}"
    );
    assert_eq!(t.store.job_show(job).await.unwrap().checkpoint, None);
}

async fn the_job_delivery_is_the_one_that_created_the_job(t: Harness) {
    let mut late_but_early_stamped = labelled("d-joined");
    late_but_early_stamped.received_at = t0() - chrono::TimeDelta::seconds(30);
    let job = enqueue(&t.store, "d-origin", 7).await;
    let joined = t
        .store
        .record_delivery_and_enqueue(&late_but_early_stamped, &issue(7), after(1))
        .await
        .unwrap();
    let other = enqueue(&t.store, "d-other", 8).await;

    let origin = t.store.job_delivery(job).await.unwrap();

    assert_eq!(joined, EnqueueOutcome::ActiveJobExists(job));
    assert_eq!(
        origin.map(|delivery| (delivery.id, delivery.parsed)),
        Some(("d-origin".to_owned(), labelled("d-origin").parsed)),
        "the creating delivery, even when a joiner carries an earlier time"
    );
    assert_eq!(
        t.store.job_delivery(other).await.unwrap().map(|d| d.id),
        Some("d-other".to_owned())
    );
    assert_eq!(
        t.store.job_delivery(JobId(other.0 + 100)).await.unwrap(),
        None
    );
}

async fn ping_answers_while_open_and_fails_once_closed(t: Harness) {
    t.store.ping().await.expect("an open store answers");

    t.store.close().await;

    let closed = t
        .store
        .ping()
        .await
        .expect_err("a closed store does not answer");
    assert!(
        closed.to_string().starts_with("database does not answer: "),
        "{closed}"
    );
}

async fn a_burst_of_deliveries_for_distinct_issues_makes_one_job_each(t: Harness) {
    let senders = (1..=64u64).map(|number| {
        let store = t.store.clone();
        tokio::spawn(async move {
            store
                .record_delivery_and_enqueue(
                    &labelled(&format!("burst-{number}")),
                    &issue(number),
                    t0(),
                )
                .await
                .expect("enqueue")
        })
    });
    let mut jobs = HashSet::new();
    for sender in senders.collect::<Vec<_>>() {
        match sender.await.expect("sender task") {
            EnqueueOutcome::NewJob(id) => assert!(jobs.insert(id), "job {id} answered twice"),
            other => panic!("expected a new job, got {other:?}"),
        }
    }

    assert_eq!(jobs.len(), 64);
    assert_eq!(t.store.jobs_list(100).await.unwrap().len(), 64);
    for number in [1, 32, 64] {
        let stored = t
            .store
            .delivery(&format!("burst-{number}"))
            .await
            .unwrap()
            .expect("every delivery is kept");
        assert!(jobs.contains(&stored.job_id.expect("linked to its job")));
    }
}

async fn the_same_delivery_arriving_several_times_at_once_is_recorded_once(t: Harness) {
    let earlier = enqueue(&t.store, "d-earlier", 3).await;
    let racers = (0..12).map(|n| {
        let store = t.store.clone();
        tokio::spawn(async move {
            let (id, number) = match n % 3 {
                0 => ("d-twice", 7),
                1 => ("d-earlier", 3),
                _ => ("d-other", 7),
            };
            store
                .record_delivery_and_enqueue(&labelled(id), &issue(number), t0())
                .await
                .expect("enqueue")
        })
    });
    let mut outcomes = Vec::new();
    for racer in racers.collect::<Vec<_>>() {
        outcomes.push(racer.await.expect("racing task"));
    }

    let count = |wanted: fn(&EnqueueOutcome) -> bool| outcomes.iter().filter(|o| wanted(o)).count();
    assert_eq!(
        count(|o| matches!(o, EnqueueOutcome::NewJob(_))),
        1,
        "{outcomes:?}"
    );
    assert_eq!(
        count(|o| matches!(o, EnqueueOutcome::ActiveJobExists(_))),
        1,
        "{outcomes:?}"
    );
    assert_eq!(
        count(|o| *o == EnqueueOutcome::DuplicateDelivery),
        10,
        "{outcomes:?}"
    );
    let jobs = t.store.jobs_list(10).await.unwrap();
    assert_eq!(jobs.len(), 2);
    let issue_7 = jobs
        .iter()
        .find(|job| job.key == issue(7))
        .expect("a job for issue 7");
    for id in ["d-twice", "d-other"] {
        let stored = t.store.delivery(id).await.unwrap().expect("recorded once");
        assert_eq!(stored.job_id, Some(issue_7.id));
    }
    assert_eq!(
        t.store.delivery("d-earlier").await.unwrap().unwrap().job_id,
        Some(earlier)
    );
    let history = t.store.job_show(issue_7.id).await.unwrap().events;
    assert_eq!(history.len(), 1, "one queued event: {history:?}");
}

async fn a_failed_job_whose_report_was_not_posted_is_claimed_again_only_for_the_report(t: Harness) {
    let job = enqueue(&t.store, "d-1", 7).await;
    let claimed = t.store.claim("w1", LEASE, t0()).await.unwrap().unwrap();
    let due = t
        .store
        .finish_unreported(
            job,
            "w1",
            &Failure::new(FailureCode::LlmError, Stage::Fix, "the model refused"),
            "503 from the forge",
            3,
            after(1),
        )
        .await
        .unwrap()
        .expect("a second try is due");
    assert_eq!(due, after(1) + chrono::TimeDelta::seconds(30));
    let record = &t.store.jobs_list(10).await.unwrap()[0];
    assert_eq!(record.state, JobState::Failed);
    assert_eq!(
        record.failure_code.map(|code| code.as_str()),
        Some("LLM_ERROR")
    );
    assert_eq!(record.report_due, Some(due));
    assert!(
        t.store
            .claim("w2", LEASE, after(2))
            .await
            .unwrap()
            .is_none(),
        "not before it is due"
    );
    // A new label while the report is owed makes a new job: the failed one holds no issue.
    let newer = enqueue(&t.store, "d-2", 7).await;
    assert_ne!(newer, job);

    let again = t
        .store
        .claim("w2", LEASE, after(40))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(again.id, job, "the oldest due work first");
    assert_eq!(
        again.attempts, claimed.attempts,
        "a report's try is no attempt of the job"
    );
    let given_up = t
        .store
        .finish_unreported(
            job,
            "w2",
            &Failure::new(FailureCode::LlmError, Stage::Fix, "the model refused"),
            "503",
            2,
            after(41),
        )
        .await
        .unwrap();
    assert_eq!(given_up, None, "two tries of two: given up");
    let shown = t.store.job_show(job).await.unwrap();
    assert_eq!(shown.job.report_due, None);
    assert!(
        shown
            .events
            .last()
            .unwrap()
            .message
            .ends_with("given up after 2 tries"),
        "{:?}",
        shown.events.last()
    );
    let next = t
        .store
        .claim("w3", LEASE, after(10_000))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(next.id, newer, "only the new job is left to run");
}

async fn a_delivery_that_joins_a_running_job_goes_to_a_follow_up_when_it_finishes(t: Harness) {
    let job = enqueue(&t.store, "label", 7).await;
    let claimed = t.store.claim("w1", LEASE, t0()).await.unwrap().unwrap();
    assert_eq!(claimed.id, job);
    let joined = t
        .store
        .record_delivery_and_enqueue(&labelled("comment"), &issue(7), after(1))
        .await
        .unwrap();
    assert_eq!(joined, EnqueueOutcome::ActiveJobExists(job));

    let next = t
        .store
        .finish_and_follow_up(
            job,
            "w1",
            &Finish::Succeeded,
            &["label".to_owned()],
            after(2),
        )
        .await
        .unwrap()
        .expect("a follow-up job");

    assert_ne!(next, job);
    let delivered: Vec<String> = t
        .store
        .job_deliveries(next)
        .await
        .unwrap()
        .into_iter()
        .map(|delivery| delivery.id)
        .collect();
    assert_eq!(delivered, ["comment"]);
    assert_eq!(
        t.store.job_delivery(next).await.unwrap().unwrap().id,
        "comment"
    );
    let again = t.store.claim("w2", LEASE, after(3)).await.unwrap().unwrap();
    assert_eq!((again.id, again.key), (next, issue(7)));
    let none = t
        .store
        .finish_and_follow_up(
            next,
            "w2",
            &Finish::Succeeded,
            &["comment".to_owned()],
            after(4),
        )
        .await
        .unwrap();
    assert_eq!(none, None, "nothing unhandled, no follow-up");
}

async fn change_requests_are_found_by_number_and_by_issue_and_closed(t: Harness) {
    use autofix::store::ChangeRequestRecord;
    let record = ChangeRequestRecord {
        key: issue(7),
        number: 12,
        branch: "fix/7-clamp".into(),
        url: "https://github.com/acme/widgets/pull/12".into(),
        job: JobId(1),
        ci_repairs: 0,
        ci_head: None,
        home: autofix::forge::BranchHome::Base,
    };
    t.store.record_change_request(&record, t0()).await.unwrap();
    let found = t
        .store
        .change_request(&RepoKey::new(ForgeKind::GitHub, "acme/widgets"), 12)
        .await
        .unwrap();
    assert_eq!(found.as_ref(), Some(&record));
    assert_eq!(
        t.store.change_request_for_issue(&issue(7)).await.unwrap(),
        Some(record.clone())
    );
    assert_eq!(
        t.store
            .change_request(&RepoKey::new(ForgeKind::GitHub, "acme/widgets"), 7)
            .await
            .unwrap(),
        None
    );

    t.store.record_ci(&record, "abc123", true).await.unwrap();
    let counted = t
        .store
        .change_request_for_issue(&issue(7))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (counted.ci_repairs, counted.ci_head.as_deref()),
        (1, Some("abc123"))
    );

    assert_eq!(
        t.store
            .open_change_requests(&RepoKey::new(ForgeKind::GitHub, "acme/widgets"))
            .await
            .unwrap(),
        std::slice::from_ref(&counted)
    );
    t.store.close_change_request(&record).await.unwrap();
    assert!(
        t.store
            .open_change_requests(&RepoKey::new(ForgeKind::GitHub, "acme/widgets"))
            .await
            .unwrap()
            .is_empty()
    );
    // Opened (adopted) again by a later job: open again, its repairs still counted.
    t.store
        .record_change_request(&record, after(5))
        .await
        .unwrap();
    assert_eq!(
        t.store
            .open_change_requests(&RepoKey::new(ForgeKind::GitHub, "acme/widgets"))
            .await
            .unwrap(),
        [counted]
    );
}

async fn a_change_request_from_the_bots_fork_is_found_with_the_fork_it_lives_in(t: Harness) {
    use autofix::forge::{BranchHome, ForgeKind, RepoRef};
    use autofix::store::ChangeRequestRecord;
    let fork = RepoRef {
        forge: ForgeKind::GitHub,
        owner_path: "autofix-bot/widgets".into(),
        clone_url: "https://github.com/autofix-bot/widgets.git".into(),
        default_branch: None,
    };
    let mut record = ChangeRequestRecord {
        key: issue(8),
        number: 13,
        branch: "fix/8-clamp".into(),
        url: "https://github.com/acme/widgets/pull/13".into(),
        job: JobId(2),
        ci_repairs: 0,
        ci_head: None,
        home: BranchHome::Fork(fork.clone()),
    };
    t.store.record_change_request(&record, t0()).await.unwrap();
    let by_issue = t.store.change_request_for_issue(&issue(8)).await.unwrap();
    assert_eq!(by_issue.as_ref(), Some(&record));
    assert_eq!(
        t.store
            .change_request(&RepoKey::new(ForgeKind::GitHub, "acme/widgets"), 13)
            .await
            .unwrap()
            .map(|found| found.home),
        Some(BranchHome::Fork(fork))
    );
    // Recorded again (adopted by a later job) from the repository itself: the home follows.
    record.home = BranchHome::Base;
    t.store
        .record_change_request(&record, after(1))
        .await
        .unwrap();
    assert_eq!(
        t.store
            .open_change_requests(&RepoKey::new(ForgeKind::GitHub, "acme/widgets"))
            .await
            .unwrap(),
        [record]
    );
}

async fn the_model_s_cost_is_summed_per_repository_and_utc_day_and_per_job(h: Harness) {
    let widgets = JobKey::new(ForgeKind::GitHub, "acme/widgets", 7);
    let tools = JobKey::new(ForgeKind::GitLab, "acme/tools", 3);
    let spend = |job: i64, usd: f64, priced: bool| Spend {
        job: JobId(job),
        model: "gpt-4o".into(),
        usd,
        priced,
    };
    let late = Utc.with_ymd_and_hms(2026, 11, 22, 23, 59, 0).unwrap();
    let next_day = Utc.with_ymd_and_hms(2026, 11, 23, 0, 1, 0).unwrap();
    h.store
        .record_spend(&widgets, &spend(1, 0.25, true), t0())
        .await
        .unwrap();
    h.store
        .record_spend(&widgets, &spend(1, 0.5, true), late)
        .await
        .unwrap();
    h.store
        .record_spend(&tools, &spend(2, 1.0, true), t0())
        .await
        .unwrap();
    h.store
        .record_spend(&widgets, &spend(3, 2.0, true), next_day)
        .await
        .unwrap();
    h.store
        .record_spend(&tools, &spend(4, 0.0, false), t0())
        .await
        .unwrap();

    let day = h
        .store
        .day_spend(&RepoKey::new(ForgeKind::GitHub, "acme/widgets"), t0())
        .await
        .unwrap();
    assert_eq!(
        day,
        DaySpend {
            repository_usd: 0.75,
            all_usd: 1.75
        }
    );
    let after_midnight = h
        .store
        .day_spend(&RepoKey::new(ForgeKind::GitHub, "acme/widgets"), next_day)
        .await
        .unwrap();
    assert_eq!(
        after_midnight.repository_usd, 2.0,
        "a new UTC day starts from nothing"
    );
    let quiet = h
        .store
        .day_spend(&RepoKey::new(ForgeKind::GitHub, "acme/quiet"), t0())
        .await
        .unwrap();
    assert_eq!(quiet.repository_usd, 0.0);

    let jobs = h
        .store
        .jobs_spend(&[JobId(1), JobId(3), JobId(4), JobId(99)])
        .await
        .unwrap();
    assert_eq!(jobs[&JobId(1)].usd, 0.75);
    assert!(!jobs.contains_key(&JobId(2)), "only the jobs asked for");
    assert!(jobs[&JobId(4)].price_unknown);
    assert!(!jobs.contains_key(&JobId(99)));
    assert_eq!(h.store.job_spend(JobId(99)).await.unwrap().usd, 0.0);
}

async fn the_daily_cap_notice_is_noted_once_per_repository_and_day(h: Harness) {
    let first = JobKey::new(ForgeKind::GitHub, "acme/widgets", 7);
    let second = JobKey::new(ForgeKind::GitHub, "acme/widgets", 8);
    let elsewhere = JobKey::new(ForgeKind::GitHub, "acme/tools", 8);
    assert!(h.store.first_spend_notice(&first, t0()).await.unwrap());
    assert!(
        !h.store
            .first_spend_notice(&second, after(60))
            .await
            .unwrap()
    );
    assert!(
        h.store
            .first_spend_notice(&elsewhere, after(60))
            .await
            .unwrap()
    );
    let tomorrow = t0() + chrono::TimeDelta::days(1);
    assert!(h.store.first_spend_notice(&second, tomorrow).await.unwrap());
}

/// Runs each story once per backend, in `on_sqlite::` and `on_postgres::`.
macro_rules! stories {
    ($($story:ident),* $(,)?) => {
        mod on_sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $story() {
                    super::$story(super::sqlite().await).await;
                }
            )*
        }
        mod on_postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $story() {
                    super::$story(super::postgres().await).await;
                }
            )*
        }
    };
}

stories!(
    a_delivery_enqueues_one_job,
    the_same_delivery_again_is_a_duplicate,
    another_delivery_for_the_same_issue_while_a_job_is_active_adds_no_job,
    two_deliveries_for_the_same_issue_arriving_at_once_make_one_job,
    two_workers_claiming_concurrently_never_get_the_same_job,
    an_expired_lease_is_reclaimed,
    a_released_job_is_runnable_at_once_without_counting_the_attempt,
    a_renew_after_losing_the_lease_fails,
    retry_backoff_grows,
    a_rate_limited_retry_waits_for_the_reset_beyond_its_backoff,
    stages_and_events_are_recorded_and_read_back,
    finished_jobs_free_the_dedupe_key_so_a_new_label_makes_a_new_job,
    migrations_run_again_on_an_existing_database,
    a_checkpoint_survives_a_crashed_worker_and_comes_back_with_the_reclaim,
    a_checkpoint_from_a_worker_that_lost_its_lease_is_refused,
    the_job_delivery_is_the_one_that_created_the_job,
    ping_answers_while_open_and_fails_once_closed,
    a_burst_of_deliveries_for_distinct_issues_makes_one_job_each,
    the_same_delivery_arriving_several_times_at_once_is_recorded_once,
    a_failed_job_whose_report_was_not_posted_is_claimed_again_only_for_the_report,
    a_delivery_that_joins_a_running_job_goes_to_a_follow_up_when_it_finishes,
    change_requests_are_found_by_number_and_by_issue_and_closed,
    a_change_request_from_the_bots_fork_is_found_with_the_fork_it_lives_in,
    the_model_s_cost_is_summed_per_repository_and_utc_day_and_per_job,
    the_daily_cap_notice_is_noted_once_per_repository_and_day,
);

/// Adds a trigger to the SQLite file that makes appending the event of issue 13's job fail,
/// after its delivery and job rows were already written.
async fn poison_issue_13(url: &str) {
    use sqlx::Connection;
    let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite://{url}"))
        .await
        .expect("open the file beside the store");
    sqlx::query(
        "CREATE TRIGGER poison_issue_13 BEFORE INSERT ON job_events \
         WHEN (SELECT issue_number FROM jobs WHERE id = NEW.job_id) = 13 \
         BEGIN SELECT RAISE(ABORT, 'issue 13 is poisoned'); END",
    )
    .execute(&mut conn)
    .await
    .expect("create the trigger");
    conn.close().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failing_delivery_does_not_sink_the_others_written_in_the_same_batch() {
    let t = sqlite().await;
    poison_issue_13(&t.url).await;

    let senders = (1..=32u64).map(|number| {
        let store = t.store.clone();
        tokio::spawn(async move {
            let outcome = store
                .record_delivery_and_enqueue(
                    &labelled(&format!("d-{number}")),
                    &issue(number),
                    t0(),
                )
                .await;
            (number, outcome)
        })
    });
    let mut outcomes = Vec::new();
    for sender in senders.collect::<Vec<_>>() {
        outcomes.push(sender.await.expect("sender task"));
    }

    for (number, outcome) in &outcomes {
        match (number, outcome) {
            (13, Err(error)) => assert!(
                error.to_string().contains("issue 13 is poisoned"),
                "{error}"
            ),
            (13, other) => panic!("issue 13 should fail, got {other:?}"),
            (_, Ok(EnqueueOutcome::NewJob(_))) => {}
            (number, other) => panic!("issue {number} should get a job, got {other:?}"),
        }
    }
    let jobs = t.store.jobs_list(100).await.unwrap();
    assert_eq!(jobs.len(), 31);
    assert!(jobs.iter().all(|job| job.key.issue.0 != 13));
    assert_eq!(
        t.store.delivery("d-13").await.unwrap(),
        None,
        "the failed delivery's rows are rolled back to its savepoint"
    );
}

#[test]
fn a_store_keeps_recording_after_the_runtime_that_opened_it_shut_down() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("autofix.db");
    let opened_in = tokio::runtime::Runtime::new().unwrap();
    let store = opened_in
        .block_on(Store::open_sqlite(&path))
        .expect("open the store");
    drop(opened_in);

    let used_in = tokio::runtime::Runtime::new().unwrap();
    let enqueued =
        used_in.block_on(store.record_delivery_and_enqueue(&labelled("d-1"), &issue(7), t0()));

    assert!(
        matches!(enqueued, Ok(EnqueueOutcome::NewJob(_))),
        "the writer is a thread of its own, not a task of the first runtime: {enqueued:?}"
    );
    used_in
        .block_on(store.ping())
        .expect("the store still answers");
}

#[tokio::test]
async fn an_in_memory_sqlite_url_is_refused_because_it_would_lose_the_jobs() {
    for url in ["sqlite::memory:", "sqlite://file.db?mode=memory"] {
        let refused = Store::open(url).await.expect_err("in-memory is refused");
        assert!(
            refused
                .to_string()
                .starts_with("an in-memory SQLite store would lose every job"),
            "{url}: {refused}"
        );
    }
}

#[tokio::test]
async fn migrations_create_a_new_sqlite_file_on_first_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested-is-not-needed.db");
    assert!(!path.exists());

    let store = Store::open_sqlite(&path).await.expect("create the store");

    assert!(path.exists(), "the SQLite file is created on first start");
    assert_eq!(store.jobs_list(10).await.unwrap(), []);
}

#[tokio::test]
async fn an_sqlite_url_opens_the_file_it_names() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("from-url.db");

    let store = Store::open(&format!("sqlite://{}", path.display()))
        .await
        .expect("open by URL");
    enqueue(&store, "d-1", 7).await;

    assert!(matches!(store, Store::Sqlite(_)));
    assert!(path.exists(), "sqlite: URLs create their file too");
}

#[test]
fn a_job_key_names_the_forge_repo_and_issue() {
    let repo = RepoRef {
        forge: ForgeKind::GitLab,
        owner_path: "group/sub/project".into(),
        clone_url: "https://gitlab.example/group/sub/project.git".into(),
        default_branch: None,
    };

    let key = JobKey::for_issue(&repo, IssueNumber(12));

    assert_eq!(key, JobKey::new(ForgeKind::GitLab, "group/sub/project", 12));
    assert_eq!(key.dedupe_key(), "gitlab:group/sub/project:12");
}

#[test]
fn retry_backoff_doubles_from_the_base_up_to_the_cap() {
    let waits: Vec<u64> = (1..=6)
        .map(|attempts| retry_backoff(attempts).as_secs())
        .collect();

    assert_eq!(waits, [15, 30, 60, 60, 60, 60]);
    assert_eq!(retry_backoff(0), RETRY_BASE);
    assert_eq!(retry_backoff(u32::MAX), RETRY_CAP);
}

#[test]
fn the_waits_between_five_attempts_add_up_to_under_three_minutes() {
    let waited: Duration = (1..5).map(retry_backoff).sum();

    assert_eq!(waited, Duration::from_secs(15 + 30 + 60 + 60));
}

#[test]
fn a_failure_report_waits_longer_than_a_job_doubling_up_to_an_hour() {
    let waits: Vec<u64> = (1..=9)
        .map(|tries| report_backoff(tries).as_secs())
        .collect();

    assert_eq!(waits, [30, 60, 120, 240, 480, 960, 1920, 3600, 3600]);
    assert_eq!(report_backoff(0), REPORT_RETRY_BASE);
    assert_eq!(report_backoff(u32::MAX), REPORT_RETRY_CAP);
}

#[tokio::test]
async fn an_unsupported_database_url_is_refused_by_its_scheme() {
    let refused = Store::open("mysql://bot:hunter2@db.internal/autofix").await;

    let message = refused.expect_err("mysql is not supported").to_string();
    assert_eq!(
        message,
        "database URL scheme \"mysql\" is not supported: use postgres://, postgresql://, sqlite: or a file path"
    );
    assert!(
        !message.contains("hunter2"),
        "the URL's password is never echoed"
    );
}

#[tokio::test]
async fn a_malformed_postgres_url_is_reported_as_such() {
    let refused = Store::open("postgres://bot@127.0.0.1:not-a-port/autofix").await;

    let message = refused.expect_err("the port is not a number").to_string();
    assert!(
        message.starts_with("database could not connect to PostgreSQL: "),
        "{message}"
    );
}
