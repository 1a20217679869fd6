//! Ready means verified: each configured service (forges, model, database, public address) is
//! asked once through the bot's own clients, and its part of the setup report says what it said.

use std::sync::Arc;
use std::time::Duration;

use super::preflight::{self, Part, Readiness};
use crate::config::ServiceConfig;
use crate::forge::{Access, Forge, ForgeError};
use crate::llm::{LlmError, LlmProvider, error_chain};
use crate::redact::Redactor;
use crate::store::{Store, StoreError};

/// How long one service may take to answer before its part stays "configured, not verified".
pub const ANSWER_LIMIT: Duration = Duration::from_secs(10);

/// The clients a verification asks through: the ones `serve` runs the jobs with.
pub struct Services {
    pub github: Option<Arc<dyn Forge>>,
    pub gitlab: Option<Arc<dyn Forge>>,
    pub llm: Arc<dyn LlmProvider>,
    /// The job store's URL (`ServiceConfig::database_url`).
    pub database_url: String,
    /// `server.public_url`, asked for `/healthz`.
    pub public_url: String,
    /// Whether the model's base URL is a hosted vendor's, where a model the key cannot use is
    /// broken rather than a local server's naming.
    pub hosted_llm: bool,
    /// Every secret of the configuration: a service's answer may echo what it was sent.
    pub redactor: Redactor,
}

impl Services {
    /// The services `config` names, asked through these clients.
    pub fn new(
        config: &ServiceConfig,
        github: Option<Arc<dyn Forge>>,
        gitlab: Option<Arc<dyn Forge>>,
        llm: Arc<dyn LlmProvider>,
        redactor: Redactor,
    ) -> Services {
        Services {
            github,
            gitlab,
            llm,
            database_url: config.database_url(),
            public_url: config.server.public_url.clone(),
            hosted_llm: crate::llm::is_hosted_vendor(&config.llm.base_url),
            redactor,
        }
    }
}

/// What one service said when asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// It answered and works: what it said.
    Verified(String),
    /// It answered that it cannot work: its own words.
    Broken(String),
    /// It could not be asked (unreachable, too slow, a fault of its own): why.
    NotVerified(String),
}

/// `report` with every part that is configured but not yet verified asked of its service, all
/// at once, each within [`ANSWER_LIMIT`]. Broken and missing parts are left as they are.
pub async fn verify(mut report: Vec<Part>, services: &Services) -> Vec<Part> {
    let wanted = |name: &str| {
        report
            .iter()
            .any(|part| part.name == name && part.readiness == Readiness::Configured)
    };
    let (github, gitlab, llm, database, public_url) = tokio::join!(
        ask(wanted(preflight::GITHUB), || forge(services.github.clone())),
        ask(wanted(preflight::GITLAB), || forge(services.gitlab.clone())),
        ask(wanted(preflight::LLM), || model(services)),
        ask(wanted(preflight::DATABASE), || database(
            &services.database_url
        )),
        ask(wanted(preflight::PUBLIC_URL), || public_address(
            &services.public_url
        )),
    );
    for (name, verdict) in [
        (preflight::GITHUB, github),
        (preflight::GITLAB, gitlab),
        (preflight::LLM, llm),
        (preflight::DATABASE, database),
        (preflight::PUBLIC_URL, public_url),
    ] {
        let (Some(verdict), Some(part)) = (verdict, report.iter_mut().find(|p| p.name == name))
        else {
            continue;
        };
        apply(part, redacted(verdict, &services.redactor));
    }
    report
}

/// `verdict` with every secret it repeats hidden (a vendor may echo the key it refused).
fn redacted(verdict: Verdict, redactor: &Redactor) -> Verdict {
    match verdict {
        Verdict::Verified(said) => Verdict::Verified(redactor.redact(&said)),
        Verdict::Broken(said) => Verdict::Broken(redactor.redact(&said)),
        Verdict::NotVerified(said) => Verdict::NotVerified(redactor.redact(&said)),
    }
}

/// The part as its service's answer leaves it: the configured facts, then what was said.
fn apply(part: &mut Part, verdict: Verdict) {
    let (readiness, said) = match verdict {
        Verdict::Verified(said) => (Readiness::Verified, said),
        Verdict::Broken(said) => (Readiness::Broken, said),
        // The state already says "not verified": the detail says why.
        Verdict::NotVerified(said) => (Readiness::Configured, said),
    };
    part.readiness = readiness;
    part.detail = format!("{}; {said}", part.detail);
}

/// `question`'s verdict within the time limit, or none when the part is not to be asked.
async fn ask<Question, Asked>(wanted: bool, question: Question) -> Option<Verdict>
where
    Question: FnOnce() -> Asked,
    Asked: Future<Output = Verdict>,
{
    if !wanted {
        return None;
    }
    Some(
        tokio::time::timeout(ANSWER_LIMIT, question())
            .await
            .unwrap_or_else(|_| {
                Verdict::NotVerified(format!("no answer within {} s", ANSWER_LIMIT.as_secs()))
            }),
    )
}

async fn forge(client: Option<Arc<dyn Forge>>) -> Verdict {
    let Some(client) = client else {
        return Verdict::NotVerified("no client was built".into());
    };
    forge_verdict(client.verify_access().await)
}

/// A refused or unreadable answer is broken; a fault of the way there is not the credential's.
fn forge_verdict(answer: Result<Access, ForgeError>) -> Verdict {
    match answer {
        Ok(Access {
            facts,
            problem: None,
        }) => Verdict::Verified(facts),
        Ok(Access {
            facts,
            problem: Some(problem),
        }) => Verdict::Broken(format!("{facts}; {problem}")),
        Err(err) if err.is_retryable() => Verdict::NotVerified(err.to_string()),
        Err(err) => Verdict::Broken(err.to_string()),
    }
}

async fn model(services: &Services) -> Verdict {
    let llm = services.llm.as_ref();
    model_verdict(llm.model(), llm.models().await, services.hosted_llm)
}

/// The key refused, or a hosted vendor without the model, is broken; a local server that lists
/// other names still serves (llama.cpp answers whatever model a request names).
fn model_verdict(model: &str, listed: Result<Vec<String>, LlmError>, hosted: bool) -> Verdict {
    match listed {
        Ok(models) if models.iter().any(|listed| listed == model) => {
            Verdict::Verified(format!("the server lists {model}"))
        }
        Ok(models) => {
            let shown = shown_names(&models);
            if hosted {
                Verdict::Broken(format!(
                    "the key cannot use {model}: the vendor lists {} other model(s){shown}",
                    models.len()
                ))
            } else {
                Verdict::Verified(format!(
                    "the server answers; it does not list {model} by that name{shown}"
                ))
            }
        }
        Err(err @ LlmError::Unauthorized { .. }) => Verdict::Broken(err.to_string()),
        Err(err) if err.is_retryable() => Verdict::NotVerified(err.to_string()),
        Err(err @ LlmError::BadRequest { .. }) if !hosted => {
            Verdict::NotVerified(format!("the server has no model listing to ask ({err})"))
        }
        Err(err) => Verdict::Broken(err.to_string()),
    }
}

/// `: a, b, c, …` — the first few names a listing holds.
fn shown_names(models: &[String]) -> String {
    const SHOWN: usize = 5;
    if models.is_empty() {
        return String::new();
    }
    let mut shown = models.iter().take(SHOWN).cloned().collect::<Vec<_>>();
    if models.len() > SHOWN {
        shown.push("…".into());
    }
    format!(": {}", shown.join(", "))
}

async fn database(url: &str) -> Verdict {
    match Store::probe(url).await {
        Ok(said) => Verdict::Verified(said),
        Err(StoreError::NoSqliteFile(_)) => {
            Verdict::NotVerified("no job store yet: `autofix serve` creates it at its start".into())
        }
        Err(err) if err.is_unreachable() => Verdict::NotVerified(err.to_string()),
        Err(err) => Verdict::Broken(err.to_string()),
    }
}

/// `GET {public_url}/healthz` must be answered by an autofix: how the forges will reach it.
async fn public_address(public_url: &str) -> Verdict {
    let url = format!("{}/healthz", public_url.trim_end_matches('/'));
    let client = match reqwest::Client::builder()
        .timeout(ANSWER_LIMIT)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("autofix/", env!("CARGO_PKG_VERSION")))
        .build()
    {
        Ok(client) => client,
        Err(err) => return Verdict::NotVerified(format!("cannot build an HTTP client: {err}")),
    };
    let answer = match client.get(&url).send().await {
        Ok(answer) => answer,
        Err(err) => {
            return Verdict::NotVerified(format!("GET {url}: {}", error_chain(&err.without_url())));
        }
    };
    let status = answer.status();
    let body = answer.text().await.unwrap_or_default();
    if status.is_success() && body.trim() == "ok" {
        Verdict::Verified(format!("{url} answers"))
    } else {
        Verdict::Broken(format!(
            "{url} answered HTTP {} with something other than autofix's health check",
            status.as_u16()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unauthorized() -> LlmError {
        LlmError::Unauthorized {
            status: 401,
            message: "Incorrect API key provided".into(),
            raw_body: String::new(),
        }
    }

    #[test]
    fn a_listed_model_is_verified_and_a_refused_key_is_broken_in_the_vendor_s_words() {
        let listed = Ok(vec!["gpt-4.1".to_string(), "gpt-4.1-mini".to_string()]);
        assert_eq!(
            model_verdict("gpt-4.1", listed, true),
            Verdict::Verified("the server lists gpt-4.1".into())
        );
        let Verdict::Broken(said) = model_verdict("gpt-4.1", Err(unauthorized()), true) else {
            panic!("a refused key is broken");
        };
        assert!(said.contains("Incorrect API key provided"), "{said}");
    }

    #[test]
    fn a_model_a_hosted_key_cannot_use_is_broken_and_a_local_server_s_naming_is_not() {
        let others = || Ok(vec!["gpt-4o".to_string()]);
        assert!(matches!(
            model_verdict("gpt-4.1", others(), true),
            Verdict::Broken(said) if said.contains("cannot use gpt-4.1") && said.contains("gpt-4o")
        ));
        assert!(matches!(
            model_verdict("smollm2", others(), false),
            Verdict::Verified(said) if said.contains("does not list smollm2")
        ));
    }

    #[test]
    fn an_unreachable_service_is_not_verified_rather_than_broken() {
        let down = LlmError::Transport("GET http://127.0.0.1:9/v1/models: refused".into());
        assert!(matches!(
            model_verdict("m", Err(down), false),
            Verdict::NotVerified(_)
        ));
        let forge_down = ForgeError::Transient {
            forge: "GitHub",
            action: "read the token's user".into(),
            message: "dns error".into(),
        };
        assert!(matches!(
            forge_verdict(Err(forge_down)),
            Verdict::NotVerified(said) if said.contains("dns error")
        ));
    }

    #[test]
    fn a_part_keeps_its_facts_and_adds_what_the_service_said() {
        let mut part = Part::new(preflight::LLM, Readiness::Configured, "openai m at u");
        apply(
            &mut part,
            Verdict::NotVerified("no answer within 10 s".into()),
        );
        assert_eq!(part.readiness, Readiness::Configured);
        assert_eq!(part.detail, "openai m at u; no answer within 10 s");
    }
}
