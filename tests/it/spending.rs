//! Prices and spending caps: a job stops before the model call that would cross its cap, a
//! repository over its daily cap is told so once and no job starts, and what the model cost shows
//! in the status comment, the pull request, the jobs pages and the metrics.

use crate::support::bot::{BotTester, script_python_fix};
use crate::support::fix_cli::Fix;
use crate::support::posted::stable;
use crate::support::repo::Repo;
use crate::support::scripted_llm::ScriptedLlm;
use autofix::forge::ForgeKind;
use autofix::llm::price::dollars;
use autofix::llm::spend::ServiceCaps;
use autofix::store::{JobId, JobKey, JobState, Spend};
use serde_json::{Value, json};

const PROJECT: &str = "acme/widgets";
const PY_VALIDATE: &str = "[[validate]]\nname = \"pytest\"\nrun = [\"python3\", \"-m\", \"pytest\", \"-q\", \"-p\", \"no:cacheprovider\"]\ntimeout_secs = 120\n";

fn triage() -> String {
    json!({"actionable": true, "classification": "fix", "risk": "LOW",
           "affected_files": ["calc.py"], "reason": "clamp ignores its bounds"})
    .to_string()
}

fn issue() -> Value {
    json!({"number": 7, "title": "clamp ignores its bounds", "body": "clamp(5, 0, 3) is 5.", "labels": []})
}

/// `autofix fix` on the Python project with `budget` as its `[budget]` section, the model priced
/// at nothing in and $100 per million tokens out, so that each call's worst case is its output cap
/// (triage 1024 tokens: $0.1024; plan 2048: $0.2048), and `service` variables added.
fn fix_with_budget(budget: &str, service: &[(&str, &str)], llm: &ScriptedLlm) -> Fix {
    let repo = Repo::python_project(&[(
        ".autofix.toml",
        &format!("{PY_VALIDATE}\n[budget]\n{budget}"),
    )]);
    Fix::run_with(repo.path(), llm, &issue(), |command| {
        command
            .env("AUTOFIX__LLM__PRICE__INPUT", "0")
            .env("AUTOFIX__LLM__PRICE__OUTPUT", "100");
        for (name, value) in service {
            command.env(name, value);
        }
    })
}

/// What the triage answer cost: its tokens (a quarter of its bytes, as the scripted model
/// counts them) at $100 per million.
fn triage_cost() -> f64 {
    (triage().len() as f64 / 4.0).ceil() * 100.0 / 1e6
}

#[test]
fn a_job_stops_before_the_call_whose_worst_case_would_cross_its_max_usd() {
    let llm = ScriptedLlm::start();
    llm.reply_text_for_stage("triage", triage());

    let fix = fix_with_budget("max_usd = 0.15\n", &[], &llm);

    let result = fix.result();
    assert_eq!(
        result["failure_code"],
        "BUDGET_EXCEEDED",
        "{}",
        fix.run_log()
    );
    assert_eq!(result["failure_stage"], "plan");
    let reason = result["reason"].as_str().unwrap();
    assert_eq!(
        reason,
        format!(
            "the next model call could cost up to $0.2048 and would cross [budget] max_usd ($0.1500): {} spent so far",
            dollars(triage_cost())
        )
    );
    let stages: Vec<String> = llm
        .requests()
        .iter()
        .map(|r| r.header("x-autofix-stage").unwrap_or_default().to_string())
        .collect();
    assert_eq!(stages, ["triage"], "the plan was never asked for");
    let cost = result["cost_usd"].as_f64().unwrap();
    assert!((cost - triage_cost()).abs() < 1e-9, "{cost}");
    assert_eq!(result["price_unknown"], false);
    let log = fix.run_log();
    assert!(
        log.contains(&format!(" out, {}\n", dollars(triage_cost()))),
        "each exchange's cost is in the run log: {log}"
    );
}

#[test]
fn a_max_usd_above_the_service_s_max_usd_per_job_is_lowered_to_it_and_the_log_says_so() {
    let llm = ScriptedLlm::start();
    llm.reply_text_for_stage("triage", triage());

    let fix = fix_with_budget(
        "max_usd = 5\n",
        &[("AUTOFIX__BUDGET__MAX_USD_PER_JOB", "0.15")],
        &llm,
    );

    let log = fix.run_log();
    assert!(
        log.contains(
            "budget: [budget] max_usd = $5.00 is above the service's budget.max_usd_per_job; lowered to $0.1500"
        ),
        "{log}"
    );
    let result = fix.result();
    assert_eq!(result["failure_code"], "BUDGET_EXCEEDED");
    // The next call would cross the lowered budget.max_usd_per_job ($0.1500).
    insta::assert_snapshot!(
        "over_the_lowered_cap_reason",
        stable(result["reason"].as_str().unwrap())
    );
}

#[test]
fn a_model_without_a_known_price_costs_nothing_and_the_run_says_price_unknown_once() {
    let llm = ScriptedLlm::start();
    let not_a_bug = json!({"actionable": false, "classification": "fix", "risk": "LOW",
                           "affected_files": [], "reason": "a question, not a bug"});
    llm.reply_text_for_stage("triage", not_a_bug.to_string());
    let repo = Repo::python_project(&[(".autofix.toml", PY_VALIDATE)]);

    let fix = Fix::run(repo.path(), &llm, &issue());

    let result = fix.result();
    assert_eq!(result["price_unknown"], true);
    assert_eq!(result["cost_usd"], 0.0);
    let log = fix.run_log();
    assert_eq!(
        log.matches("price unknown (no built-in price").count(),
        1,
        "{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repository_over_its_daily_cap_is_told_once_and_no_job_starts() {
    let mut t = BotTester::github().await;
    t.spending_caps(ServiceCaps {
        per_repository_per_day: 0.01,
        ..ServiceCaps::default()
    });
    let alice = t.python_project_kept_by_alice(PROJECT);
    let earlier = Spend {
        job: JobId(999),
        model: "claude-story".into(),
        usd: 0.0125,
        priced: true,
    };
    t.store
        .record_spend(
            &JobKey::new(ForgeKind::GitHub, PROJECT, 1),
            &earlier,
            chrono::Utc::now(),
        )
        .await
        .unwrap();

    t.label_issue_and_wait(PROJECT, 7, "clamp ignores its bounds", &alice)
        .await;
    t.label_issue_and_wait(PROJECT, 8, "clamp ignores its lower bound", &alice)
        .await;

    let told = t.comments(PROJECT, 7);
    assert_eq!(told.len(), 1, "{told:#?}");
    // The repository's daily cap ($0.0100) is reached with $0.0125 spent; it resets tomorrow.
    let tomorrow = (chrono::Utc::now() + chrono::Duration::days(1))
        .format("%Y-%m-%d")
        .to_string();
    insta::assert_snapshot!(
        "daily_cap_reached_reply",
        stable(&told[0].replace(&tomorrow, "<tomorrow>"))
    );
    assert!(
        t.comments(PROJECT, 8).is_empty(),
        "a second request the same day is not answered"
    );
    assert!(t.llm.requests().is_empty(), "no job started");
    let jobs = t.jobs().await;
    assert_eq!(jobs.len(), 2);
    for job in &jobs {
        assert_eq!(job.state, JobState::Failed);
        assert_eq!(
            job.failure_code.map(|code| code.as_str()),
            Some("BUDGET_EXCEEDED")
        );
    }
    assert!(t.change_requests(PROJECT).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_other_repositories_spent_today_stops_a_job_before_it_crosses_the_service_s_daily_cap()
{
    let mut t = BotTester::github().await;
    t.price(0.0, 100.0);
    t.spending_caps(ServiceCaps {
        per_day: 1.0,
        ..ServiceCaps::default()
    });
    let alice = t.python_project_kept_by_alice(PROJECT);
    let elsewhere = Spend {
        job: JobId(999),
        model: "claude-story".into(),
        usd: 0.95,
        priced: true,
    };
    t.store
        .record_spend(
            &JobKey::new(ForgeKind::GitLab, "acme/tools", 1),
            &elsewhere,
            chrono::Utc::now(),
        )
        .await
        .unwrap();

    t.label_issue_and_wait(PROJECT, 7, "clamp ignores its bounds", &alice)
        .await;

    assert!(
        t.llm.requests().is_empty(),
        "the triage was never asked for"
    );
    let job = &t.jobs().await[0];
    assert_eq!(
        job.failure_code.map(|code| code.as_str()),
        Some("BUDGET_EXCEEDED")
    );
    // The next call could cost up to $0.1024 and would cross the service's $1.00 a day, $0.95
    // being spent elsewhere (written as the status comment writes a reason: Markdown made inert).
    insta::assert_snapshot!(
        "service_daily_cap_report",
        stable(&t.comments(PROJECT, 7)[0])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cost_shows_in_the_status_comment_the_pull_request_the_jobs_pages_and_the_metrics() {
    let mut t = BotTester::github().await;
    t.price(1000.0, 2000.0);
    let alice = t.python_project_kept_by_alice(PROJECT);
    script_python_fix(&t.llm);

    t.label_issue_and_wait(PROJECT, 7, "clamp ignores its bounds", &alice)
        .await;

    let job = t.jobs().await[0].id;
    let spent = t.store.job_spend(job).await.unwrap();
    assert!(spent.usd > 0.0 && !spent.price_unknown, "{spent:?}");
    let cost = dollars(spent.usd);
    // Both show the cost the store recorded for the job.
    let status = &t.comments(PROJECT, 7)[0];
    insta::assert_snapshot!(
        "status_comment_with_its_cost",
        stable(&status.replace(&cost, "<the job's spend>"))
    );
    let pull = &t.change_requests(PROJECT)[0];
    insta::assert_snapshot!(
        "pull_request_body_with_its_cost",
        stable(&pull.body.replace(&cost, "<the job's spend>"))
    );

    let base = t.serve_pages(Vec::new()).await;
    let list = reqwest::get(format!("{base}/jobs"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        list.contains(&format!("<td class=\"cost\">{cost}</td>")),
        "{list}"
    );
    let detail = reqwest::get(format!("{base}/jobs/{job}"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        detail.contains(&format!(
            "<dt>Model cost</dt><dd data-field=\"model-cost\">{cost}</dd>"
        )),
        "{detail}"
    );

    let mut metrics = String::new();
    t.context.telemetry.render(&mut metrics);
    let series = format!(
        "autofix_llm_cost_usd_total{{repository=\"github:{PROJECT}\",model=\"claude-story\"}} "
    );
    let line = metrics
        .lines()
        .find(|line| line.starts_with(&series))
        .unwrap_or_else(|| panic!("{metrics}"));
    let counted: f64 = line[series.len()..].parse().unwrap();
    assert!((counted - spent.usd).abs() < 1e-9, "{line} vs {spent:?}");
}
