//! The metering decorator: every request a provider answers (or fails) is counted in the
//! process's metrics by provider and model — tokens in and out, latency, outcome.

use std::sync::Arc;
use std::time::Instant;

use super::{LlmError, LlmProvider, LlmRequest, LlmResponse};
use crate::telemetry::{LlmCall, Telemetry};

/// `inner`, measured.
pub struct Metered {
    inner: Arc<dyn LlmProvider>,
    provider: String,
    model: String,
    telemetry: Arc<Telemetry>,
}

impl Metered {
    /// Measures `inner` under `provider` and `model` (the configured ones, so a dashboard's
    /// series keep their names whatever model id the vendor echoes back).
    pub fn new(
        inner: Arc<dyn LlmProvider>,
        provider: &str,
        model: &str,
        telemetry: Arc<Telemetry>,
    ) -> Metered {
        Metered {
            inner,
            provider: provider.to_owned(),
            model: model.to_owned(),
            telemetry,
        }
    }
}

#[async_trait::async_trait]
impl LlmProvider for Metered {
    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn model(&self) -> &str {
        self.inner.model()
    }

    async fn models(&self) -> Result<Vec<String>, LlmError> {
        self.inner.models().await
    }

    async fn complete(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        let started = Instant::now();
        let result = self.inner.complete(request).await;
        let usage = result
            .as_ref()
            .map(|response| response.usage)
            .unwrap_or_default();
        self.telemetry.llm_request(LlmCall {
            provider: &self.provider,
            model: &self.model,
            ok: result.is_ok(),
            elapsed: started.elapsed(),
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
        });
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::TokenUsage;

    struct Answers;

    #[async_trait::async_trait]
    impl LlmProvider for Answers {
        fn describe(&self) -> String {
            "test answers".into()
        }
        fn model(&self) -> &str {
            "test"
        }
        async fn models(&self) -> Result<Vec<String>, LlmError> {
            Ok(vec!["test".into()])
        }
        async fn complete(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
            if request.prompt == "fail" {
                return Err(LlmError::Timeout(std::time::Duration::from_secs(1)));
            }
            Ok(LlmResponse {
                text: "ok".into(),
                raw_json: "{}".into(),
                usage: TokenUsage {
                    input_tokens: 40,
                    output_tokens: 2,
                    total_tokens: 42,
                    cached_input_tokens: 0,
                },
                model: Some("vendor-echo".into()),
                finish_reason: None,
            })
        }
    }

    #[tokio::test]
    async fn answers_and_failures_are_counted_under_the_configured_provider_and_model() {
        let telemetry = Arc::new(Telemetry::new());
        let llm = Metered::new(Arc::new(Answers), "openai", "smollm2", telemetry.clone());
        let ask = |prompt: &str| LlmRequest {
            prompt: prompt.into(),
            ..LlmRequest::default()
        };
        llm.complete(&ask("hello")).await.unwrap();
        llm.complete(&ask("hello")).await.unwrap();
        llm.complete(&ask("fail")).await.unwrap_err();
        let by = |labels: &[(&str, &str)]| telemetry.counter("autofix_llm_tokens_total", labels);
        assert_eq!(by(&[("model", "smollm2"), ("direction", "input")]), 80);
        assert_eq!(by(&[("model", "smollm2"), ("direction", "output")]), 4);
        assert_eq!(
            telemetry.counter(
                "autofix_llm_requests_total",
                &[("provider", "openai"), ("outcome", "error")]
            ),
            1
        );
    }
}
