//! OpenAI-compatible chat completions (OpenAI, Ollama, vLLM, LM Studio): the request body, the
//! reply (refusals and tool calls give no text), and the `{error: {message, type, code}}` bodies.

use reqwest::Url;
use reqwest::header::{AUTHORIZATION, HeaderMap};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_json::{Value, json};

use super::http::{
    ErrorDetails, ReadReply, ReplyProblem, Vendor, common_error_message, ids_of, secret_header,
};
use super::{LlmError, LlmRequest, ProviderKind, SchemaForm, TokenUsage};

pub(crate) struct OpenAi;

#[derive(Debug, Deserialize)]
pub(crate) struct ChatCompletion {
    choices: Vec<Choice>,
    usage: Option<Usage>,
    model: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    message: Option<Message>,
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Message {
    content: Option<String>,
    refusal: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Usage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    total_tokens: Option<u64>,
    prompt_tokens_details: Option<PromptTokensDetails>,
}

#[derive(Debug, Deserialize)]
struct PromptTokensDetails {
    #[serde(default)]
    cached_tokens: u64,
}

impl Vendor for OpenAi {
    const KIND: ProviderKind = ProviderKind::Openai;
    const REPLY_NAME: &'static str = "chat completion";
    type Reply = ChatCompletion;

    fn endpoint_segments(&self, _model: &str) -> Vec<String> {
        vec!["chat".into(), "completions".into()]
    }

    fn auth_headers(&self, api_key: &SecretString) -> Result<HeaderMap, LlmError> {
        let mut headers = HeaderMap::new();
        headers.insert(
            AUTHORIZATION,
            secret_header(&format!("Bearer {}", api_key.expose_secret()))?,
        );
        Ok(headers)
    }

    fn request_body(
        &self,
        model: &str,
        endpoint: &Url,
        request: &LlmRequest,
        form: SchemaForm,
    ) -> Value {
        let mut messages = Vec::new();
        if let Some(system) = &request.system {
            messages.push(json!({"role": "system", "content": system}));
        }
        messages.push(json!({"role": "user", "content": request.prompt}));
        let mut body = json!({"model": model, "messages": messages});
        if let Some(temperature) = request.temperature {
            body["temperature"] = json!(temperature);
        }
        if let Some(max) = request.max_output_tokens {
            body[output_limit_field(endpoint)] = json!(max);
        }
        if let Some(schema) = &request.schema {
            match form {
                SchemaForm::Strict => {
                    body["response_format"] = json!({
                        "type": "json_schema",
                        "json_schema": {"name": schema.name, "schema": schema.schema, "strict": false},
                    });
                }
                SchemaForm::Loose => {
                    body["response_format"] =
                        json!({"type": "json_object", "schema": schema.schema});
                }
                SchemaForm::None => {}
            }
        }
        body
    }

    fn read_reply(&self, reply: ChatCompletion) -> Result<ReadReply, ReplyProblem> {
        let Some(choice) = reply.choices.into_iter().next() else {
            return Err(ReplyProblem::Empty("no choices in the reply".into()));
        };
        let finish_reason = choice.finish_reason;
        let message = choice
            .message
            .ok_or_else(|| ReplyProblem::Shape("choices[0] has no message".into()))?;
        if let Some(refusal) = message.refusal.filter(|r| !r.is_empty()) {
            return Err(ReplyProblem::Empty(format!("refusal: {refusal}")));
        }
        let text = message.content.unwrap_or_default();
        if text.trim().is_empty() {
            return Err(ReplyProblem::Empty(
                finish_reason.unwrap_or_else(|| "none given".into()),
            ));
        }
        Ok(ReadReply {
            text,
            usage: reply.usage.map(|u| u.usage()).unwrap_or_default(),
            model: reply.model,
            finish_reason,
        })
    }

    /// `GET /v1/models`: `{"object": "list", "data": [{"id": "gpt-4.1", …}]}` (also llama.cpp,
    /// Ollama, vLLM).
    fn models_segments(&self) -> Vec<String> {
        vec!["models".into()]
    }

    fn model_names(&self, body: &Value) -> Option<Vec<String>> {
        ids_of(body.get("data")?)
    }

    fn error_details(&self, body: &Value) -> ErrorDetails {
        let error = &body["error"];
        let code = error["code"].as_str().or(error["type"].as_str());
        let message = common_error_message(body).map(|message| match code {
            Some(code) => format!("{code}: {message}"),
            None => message,
        });
        // vLLM and other local servers send the same text without OpenAI's `code`.
        let context_too_long = error["code"] == "context_length_exceeded"
            || message
                .as_deref()
                .is_some_and(|m| m.contains("maximum context length"));
        // llama.cpp's Python server: `'loc': ('body', 'response_format', 'type')`, HTTP 500.
        let refuses_response_format = message
            .as_deref()
            .is_some_and(|m| m.contains("response_format"));
        ErrorDetails {
            message,
            context_too_long,
            retry_delay: None,
            refuses_response_format,
        }
    }
}

impl Usage {
    fn usage(&self) -> TokenUsage {
        TokenUsage {
            input_tokens: self.prompt_tokens,
            output_tokens: self.completion_tokens,
            total_tokens: self
                .total_tokens
                .unwrap_or(self.prompt_tokens + self.completion_tokens),
            cached_input_tokens: self
                .prompt_tokens_details
                .as_ref()
                .map_or(0, |details| details.cached_tokens),
        }
    }
}

/// OpenAI's reasoning models refuse `max_tokens`; the compatible local servers only know it.
fn output_limit_field(endpoint: &Url) -> &'static str {
    if endpoint.host_str() == Some("api.openai.com") {
        "max_completion_tokens"
    } else {
        "max_tokens"
    }
}
