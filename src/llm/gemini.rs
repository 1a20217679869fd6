//! Google Gemini `generateContent`: the request body, the reply (skipping thought parts, thinking
//! tokens counted as output), prompt blocks, and Google-RPC error bodies with their `RetryInfo`.

use reqwest::Url;
use reqwest::header::{HeaderMap, HeaderName};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_json::{Value, json};

use super::http::{
    ErrorDetails, ReadReply, ReplyProblem, Vendor, common_error_message, secret_header,
};
use super::retry::parse_protobuf_duration;
use super::{LlmError, LlmRequest, ProviderKind, SchemaForm, TokenUsage};

pub(crate) struct Gemini;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GenerateContentResponse {
    candidates: Option<Vec<Candidate>>,
    prompt_feedback: Option<PromptFeedback>,
    usage_metadata: Option<UsageMetadata>,
    model_version: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate {
    content: Option<Content>,
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Content {
    #[serde(default)]
    parts: Vec<Part>,
}

#[derive(Debug, Deserialize)]
struct Part {
    text: Option<String>,
    #[serde(default)]
    thought: bool,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PromptFeedback {
    block_reason: Option<String>,
    block_reason_message: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct UsageMetadata {
    #[serde(default)]
    prompt_token_count: u64,
    #[serde(default)]
    candidates_token_count: u64,
    #[serde(default)]
    thoughts_token_count: u64,
    #[serde(default)]
    cached_content_token_count: u64,
    total_token_count: Option<u64>,
}

impl UsageMetadata {
    /// Thinking tokens are billed as output, so they count as output here.
    fn usage(&self) -> TokenUsage {
        let output = self.candidates_token_count + self.thoughts_token_count;
        TokenUsage {
            input_tokens: self.prompt_token_count,
            output_tokens: output,
            total_tokens: self
                .total_token_count
                .unwrap_or(self.prompt_token_count + output),
            cached_input_tokens: self.cached_content_token_count,
        }
    }
}

impl Vendor for Gemini {
    const KIND: ProviderKind = ProviderKind::Gemini;
    const REPLY_NAME: &'static str = "generateContent response";
    type Reply = GenerateContentResponse;

    fn endpoint_segments(&self, model: &str) -> Vec<String> {
        // Google's own docs write models as `models/gemini-…`; accept both spellings.
        let model = model.strip_prefix("models/").unwrap_or(model);
        vec![
            "v1beta".into(),
            "models".into(),
            format!("{model}:generateContent"),
        ]
    }

    fn auth_headers(&self, api_key: &SecretString) -> Result<HeaderMap, LlmError> {
        let mut headers = HeaderMap::new();
        headers.insert(
            HeaderName::from_static("x-goog-api-key"),
            secret_header(api_key.expose_secret())?,
        );
        Ok(headers)
    }

    fn request_body(
        &self,
        _model: &str,
        _endpoint: &Url,
        request: &LlmRequest,
        form: SchemaForm,
    ) -> Value {
        let mut body = json!({
            "contents": [{"role": "user", "parts": [{"text": request.prompt}]}],
        });
        if let Some(system) = &request.system {
            body["systemInstruction"] = json!({"parts": [{"text": system}]});
        }
        let mut generation = serde_json::Map::new();
        if let Some(temperature) = request.temperature {
            generation.insert("temperature".into(), json!(temperature));
        }
        if let Some(max) = request.max_output_tokens {
            generation.insert("maxOutputTokens".into(), json!(max));
        }
        if let Some(schema) = &request.schema {
            if form <= SchemaForm::Loose {
                generation.insert("responseMimeType".into(), json!("application/json"));
            }
            if form == SchemaForm::Strict {
                generation.insert("responseSchema".into(), openapi_schema(&schema.schema));
            }
        }
        if !generation.is_empty() {
            body["generationConfig"] = Value::Object(generation);
        }
        body
    }

    fn read_reply(&self, reply: GenerateContentResponse) -> Result<ReadReply, ReplyProblem> {
        if reply.candidates.is_none()
            && reply.prompt_feedback.is_none()
            && reply.usage_metadata.is_none()
        {
            return Err(ReplyProblem::Shape(
                "none of candidates, promptFeedback, usageMetadata".into(),
            ));
        }
        if let Some(reason) = reply.prompt_feedback.as_ref().and_then(blocked_prompt) {
            return Err(ReplyProblem::Empty(reason));
        }
        let Some(candidate) = reply.candidates.and_then(|c| c.into_iter().next()) else {
            return Err(ReplyProblem::Empty("no candidates in the reply".into()));
        };
        let text: String = candidate
            .content
            .map(|content| content.parts)
            .unwrap_or_default()
            .into_iter()
            .filter(|part| !part.thought)
            .filter_map(|part| part.text)
            .collect();
        let finish_reason = candidate.finish_reason;
        if text.trim().is_empty() {
            return Err(ReplyProblem::Empty(
                finish_reason.unwrap_or_else(|| "none given".into()),
            ));
        }
        Ok(ReadReply {
            text,
            usage: reply.usage_metadata.map(|u| u.usage()).unwrap_or_default(),
            model: reply.model_version,
            finish_reason,
        })
    }

    /// `GET /v1beta/models`: `{"models": [{"name": "models/gemini-2.5-flash", …}]}`; requests
    /// name a model without the `models/` prefix.
    fn models_segments(&self) -> Vec<String> {
        vec!["v1beta".into(), "models".into()]
    }

    fn model_names(&self, body: &Value) -> Option<Vec<String>> {
        body.get("models")?
            .as_array()?
            .iter()
            .map(|model| {
                let name = model.get("name")?.as_str()?;
                Some(name.strip_prefix("models/").unwrap_or(name).to_owned())
            })
            .collect()
    }

    fn error_details(&self, body: &Value) -> ErrorDetails {
        let error = &body["error"];
        let message = match (error["status"].as_str(), error["message"].as_str()) {
            (Some(status), Some(message)) => Some(format!("{status}: {}", message.trim_end())),
            _ => common_error_message(body),
        };
        let context_too_long = error["message"]
            .as_str()
            .is_some_and(|m| m.contains("exceeds the maximum number of tokens"));
        ErrorDetails {
            message,
            context_too_long,
            retry_delay: retry_delay(error),
            refuses_response_format: false,
        }
    }
}

fn blocked_prompt(feedback: &PromptFeedback) -> Option<String> {
    let reason = feedback.block_reason.as_deref()?;
    Some(match &feedback.block_reason_message {
        Some(why) => format!("prompt blocked: {reason} ({why})"),
        None => format!("prompt blocked: {reason}"),
    })
}

/// `error.details[]` entry of type `google.rpc.RetryInfo`, e.g. `{"retryDelay": "37s"}`.
fn retry_delay(error: &Value) -> Option<std::time::Duration> {
    error["details"]
        .as_array()?
        .iter()
        .filter(|d| {
            d["@type"]
                .as_str()
                .is_some_and(|t| t.ends_with("google.rpc.RetryInfo"))
        })
        .find_map(|d| d["retryDelay"].as_str().and_then(parse_protobuf_duration))
}

/// A JSON Schema in the OpenAPI subset `responseSchema` takes: upper-case types, `nullable`
/// for `["x", "null"]`, and only the keywords Gemini knows.
fn openapi_schema(schema: &Value) -> Value {
    const KEPT: [&str; 7] = [
        "description",
        "enum",
        "format",
        "minItems",
        "maxItems",
        "required",
        "propertyOrdering",
    ];
    let Some(object) = schema.as_object() else {
        return schema.clone();
    };
    let mut out = serde_json::Map::new();
    match object.get("type") {
        Some(Value::String(kind)) => {
            out.insert("type".into(), json!(kind.to_ascii_uppercase()));
        }
        Some(Value::Array(kinds)) => {
            let named: Vec<&str> = kinds.iter().filter_map(Value::as_str).collect();
            if let Some(kind) = named.iter().find(|kind| **kind != "null") {
                out.insert("type".into(), json!(kind.to_ascii_uppercase()));
            }
            if named.contains(&"null") {
                out.insert("nullable".into(), json!(true));
            }
        }
        _ => {}
    }
    for key in KEPT {
        if let Some(value) = object.get(key) {
            out.insert(key.into(), value.clone());
        }
    }
    if let Some(Value::Object(properties)) = object.get("properties") {
        let converted = properties
            .iter()
            .map(|(name, property)| (name.clone(), openapi_schema(property)))
            .collect();
        out.insert("properties".into(), Value::Object(converted));
    }
    if let Some(items) = object.get("items") {
        out.insert("items".into(), openapi_schema(items));
    }
    Value::Object(out)
}
