//! Anthropic Messages API: the request body (with the required `max_tokens`), the reply (text
//! blocks only, cache tokens counted as input) and `{type: error, error: {type, message}}` bodies.

use reqwest::Url;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_json::{Value, json};

use super::http::{
    ErrorDetails, ReadReply, ReplyProblem, Vendor, common_error_message, secret_header,
};
use super::{LlmError, LlmRequest, ProviderKind, SchemaForm, TokenUsage};

/// Sent as `max_tokens` when the request sets no limit: the API requires one, and 8192 is
/// what every current Claude model accepts while leaving room for a whole rewritten file.
pub const ANTHROPIC_DEFAULT_MAX_TOKENS: u32 = 8192;

const API_VERSION: &str = "2023-06-01";

pub(crate) struct Anthropic;

#[derive(Debug, Deserialize)]
pub(crate) struct MessagesResponse {
    content: Vec<Block>,
    stop_reason: Option<String>,
    model: Option<String>,
    usage: Option<Usage>,
}

#[derive(Debug, Deserialize)]
struct Block {
    #[serde(rename = "type")]
    kind: String,
    text: Option<String>,
    /// A `tool_use` block's arguments.
    input: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct Usage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
}

impl Usage {
    /// `input_tokens` leaves out the cached part of the prompt; the prompt's size includes it.
    fn usage(&self) -> TokenUsage {
        let input = self.input_tokens
            + self.cache_creation_input_tokens.unwrap_or(0)
            + self.cache_read_input_tokens.unwrap_or(0);
        TokenUsage {
            input_tokens: input,
            output_tokens: self.output_tokens,
            total_tokens: input + self.output_tokens,
            cached_input_tokens: self.cache_read_input_tokens.unwrap_or(0),
        }
    }
}

impl Vendor for Anthropic {
    const KIND: ProviderKind = ProviderKind::Anthropic;
    const REPLY_NAME: &'static str = "Messages API response";
    type Reply = MessagesResponse;

    fn endpoint_segments(&self, _model: &str) -> Vec<String> {
        vec!["v1".into(), "messages".into()]
    }

    fn auth_headers(&self, api_key: &SecretString) -> Result<HeaderMap, LlmError> {
        let mut headers = HeaderMap::new();
        headers.insert(
            HeaderName::from_static("x-api-key"),
            secret_header(api_key.expose_secret())?,
        );
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(API_VERSION),
        );
        Ok(headers)
    }

    fn request_body(
        &self,
        model: &str,
        _endpoint: &Url,
        request: &LlmRequest,
        form: SchemaForm,
    ) -> Value {
        let mut body = json!({
            "model": model,
            "max_tokens": request.max_output_tokens.unwrap_or(ANTHROPIC_DEFAULT_MAX_TOKENS),
            "messages": [{"role": "user", "content": request.prompt}],
        });
        if let Some(system) = &request.system {
            body["system"] = json!(system);
        }
        if let Some(temperature) = request.temperature {
            body["temperature"] = json!(temperature);
        }
        if let (Some(schema), SchemaForm::Strict) = (&request.schema, form) {
            body["tools"] = json!([{
                "name": schema.name,
                "description": format!("Give the {} answer.", schema.name),
                "input_schema": schema.schema,
            }]);
            body["tool_choice"] = json!({"type": "tool", "name": schema.name});
        }
        body
    }

    /// A forced tool call has no form weaker than none.
    fn weaker(form: SchemaForm) -> Option<SchemaForm> {
        (form != SchemaForm::None).then_some(SchemaForm::None)
    }

    /// The text blocks; with none, the input of the (forced) tool call, as JSON text.
    fn read_reply(&self, reply: MessagesResponse) -> Result<ReadReply, ReplyProblem> {
        let mut text = String::new();
        let mut tool_input = None;
        for block in reply.content {
            match block.kind.as_str() {
                "text" => text.push_str(block.text.as_deref().unwrap_or_default()),
                "tool_use" if tool_input.is_none() => tool_input = block.input,
                _ => {}
            }
        }
        if text.trim().is_empty()
            && let Some(input) = tool_input
        {
            text = input.to_string();
        }
        if text.trim().is_empty() {
            return Err(ReplyProblem::Empty(
                reply.stop_reason.unwrap_or_else(|| "none given".into()),
            ));
        }
        Ok(ReadReply {
            text,
            usage: reply.usage.map(|u| u.usage()).unwrap_or_default(),
            model: reply.model,
            finish_reason: reply.stop_reason,
        })
    }

    /// `GET /v1/models`: `{"data": [{"type": "model", "id": "claude-…", …}], "has_more": …}`.
    fn models_segments(&self) -> Vec<String> {
        vec!["v1".into(), "models".into()]
    }

    fn model_names(&self, body: &Value) -> Option<Vec<String>> {
        super::http::ids_of(body.get("data")?)
    }

    fn error_details(&self, body: &Value) -> ErrorDetails {
        let error = &body["error"];
        let message = common_error_message(body).map(|message| {
            let kind = error["type"]
                .as_str()
                .map(|t| format!("{t}: "))
                .unwrap_or_default();
            let request = body["request_id"]
                .as_str()
                .map(|id| format!(" (request {id})"))
                .unwrap_or_default();
            format!("{kind}{message}{request}")
        });
        let context_too_long = error["message"]
            .as_str()
            .is_some_and(|m| m.contains("prompt is too long"));
        ErrorDetails {
            message,
            context_too_long,
            retry_delay: None,
            refuses_response_format: false,
        }
    }
}
