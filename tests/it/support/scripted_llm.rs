//! A scripted LLM server for tests: answers on the Gemini, OpenAI-compatible and Anthropic paths
//! with replies the test queued, and records every request so tests can read the prompts sent.
//!
//! ```ignore
//! let llm = ScriptedLlm::start();
//! llm.reply_text("^^^src/lib.rs\nfn fixed() {}\n^^^end");
//! // point the code under test at llm.base_url() (Gemini, Anthropic) or llm.openai_base_url()
//! assert_eq!(llm.prompts().len(), 1);
//! ```
//!
//! The server runs on its own thread with its own tokio runtime, so it serves plain `#[test]`s
//! that spawn a real binary as well as `#[tokio::test]`s. Replies are taken in order: first the
//! queue for the request's stage (`X-Autofix-Stage`), then the plain queue. A request with no
//! reply left gets a 500 `scripted LLM: no reply queued` and is noted as unexpected; any request
//! to another path gets a 404 and is noted too. `assert_done()` (also run on drop) fails the test
//! on unexpected requests and on replies left unused.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State as AxumState;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::Response;
use serde_json::{Value, json};

use super::served::{Runtime, Served};

/// The body a request gets when the test queued nothing for it.
pub const NO_REPLY_QUEUED: &str = "scripted LLM: no reply queued";

/// The header the providers send the pipeline stage in (lower case, as recorded).
const STAGE_HEADER: &str = "x-autofix-stage";

/// The header a job's candidate sends its number in (lower case, as recorded).
const CANDIDATE_HEADER: &str = "x-autofix-candidate";

/// Reads a recorded vendor payload from `tests/data/llm/`, e.g. `"gemini/generate_content.json"`.
pub fn llm_fixture(relative: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/llm")
        .join(relative);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|err| panic!("cannot read the fixture {}: {err}", path.display()))
}

/// Which vendor API a request was made to, told by its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vendor {
    /// `POST /v1beta/models/{model}:generateContent`
    Gemini,
    /// `POST /v1/chat/completions`
    OpenAi,
    /// `POST /v1/messages`
    Anthropic,
}

impl Vendor {
    fn of(method: &Method, path: &str) -> Option<Vendor> {
        if method != Method::POST {
            return None;
        }
        match path {
            "/v1/chat/completions" => Some(Vendor::OpenAi),
            "/v1/messages" => Some(Vendor::Anthropic),
            _ => path
                .strip_prefix("/v1beta/models/")
                .and_then(|rest| rest.strip_suffix(":generateContent"))
                .filter(|model| !model.is_empty() && !model.contains('/'))
                .map(|_| Vendor::Gemini),
        }
    }
}

/// What the server answers to one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A 200 in the vendor's real success shape holding this text, with a usage block.
    Text(String),
    /// Exactly this status, these headers and this body.
    Raw {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// `reply`, but only after `delay` (longer than the client's timeout: a server that hangs).
    After { delay: Duration, reply: Box<Reply> },
}

impl Reply {
    pub fn text(text: impl Into<String>) -> Reply {
        Reply::Text(text.into())
    }

    pub fn raw(status: u16, headers: &[(&str, &str)], body: impl Into<String>) -> Reply {
        Reply::Raw {
            status,
            headers: headers
                .iter()
                .map(|(name, value)| (name.to_string(), value.to_string()))
                .collect(),
            body: body.into(),
        }
    }

    /// A JSON body (such as a recorded fixture) with `content-type: application/json`.
    pub fn json(status: u16, body: impl Into<String>) -> Reply {
        Reply::raw(status, &[("content-type", "application/json")], body)
    }

    /// A recorded exchange `{"status_code", "headers", "body"}` as the Anthropic SDK's snapshots
    /// store them. Framing headers (`content-length`, …) are dropped: the body was re-serialized.
    pub fn recorded_exchange(recorded: &str) -> Reply {
        let recorded: Value = serde_json::from_str(recorded).expect("a recorded exchange is JSON");
        let status = recorded["status_code"]
            .as_u64()
            .and_then(|s| u16::try_from(s).ok())
            .expect("a recorded exchange has a numeric status_code");
        let headers = recorded["headers"]
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(name, _)| {
                !matches!(
                    name.as_str(),
                    "content-length" | "connection" | "transfer-encoding"
                )
            })
            .map(|(name, value)| (name.clone(), value.as_str().unwrap_or_default().to_owned()))
            .collect();
        let body = match &recorded["body"] {
            Value::String(text) => text.clone(),
            other => serde_json::to_string_pretty(other).expect("JSON serializes"),
        };
        Reply::Raw {
            status,
            headers,
            body,
        }
    }

    /// This reply, held back for `delay`.
    pub fn after(self, delay: Duration) -> Reply {
        Reply::After {
            delay,
            reply: Box::new(self),
        }
    }
}

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub method: Method,
    pub path: String,
    pub query: Option<String>,
    pub headers: HeaderMap,
    /// The body parsed as JSON; `Value::Null` when it was not JSON.
    pub body: Value,
    pub body_text: String,
    /// The `X-Autofix-Stage` header.
    pub stage: Option<String>,
    /// `None` for a path none of the vendors serve.
    pub vendor: Option<Vendor>,
}

impl RecordedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The user turn's text, wherever this request's vendor puts it.
    pub fn prompt(&self) -> Option<String> {
        match self.vendor? {
            Vendor::Gemini => self.body["contents"]
                .as_array()?
                .iter()
                .rev()
                .find(|turn| turn["role"] == "user" || turn["role"].is_null())
                .map(|turn| gemini_parts_text(&turn["parts"])),
            Vendor::OpenAi | Vendor::Anthropic => self.body["messages"]
                .as_array()?
                .iter()
                .rev()
                .find(|message| message["role"] == "user")
                .map(|message| message_content_text(&message["content"])),
        }
    }

    /// The system prompt, if the request carried one.
    pub fn system(&self) -> Option<String> {
        match self.vendor? {
            Vendor::Gemini => Some(gemini_parts_text(&self.body["systemInstruction"]["parts"])),
            Vendor::Anthropic => self.body.get("system").map(message_content_text),
            Vendor::OpenAi => self.body["messages"]
                .as_array()?
                .iter()
                .find(|message| message["role"] == "system")
                .map(|message| message_content_text(&message["content"])),
        }
    }

    /// The model asked for: in the path for Gemini, in the body for the others.
    pub fn model(&self) -> Option<String> {
        match self.vendor? {
            Vendor::Gemini => self
                .path
                .strip_prefix("/v1beta/models/")?
                .strip_suffix(":generateContent")
                .map(str::to_owned),
            Vendor::OpenAi | Vendor::Anthropic => self.body["model"].as_str().map(str::to_owned),
        }
    }
}

impl fmt::Display for RecordedRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.method, self.path)?;
        if let Some(stage) = &self.stage {
            write!(f, " (stage {stage})")?;
        }
        Ok(())
    }
}

fn gemini_parts_text(parts: &Value) -> String {
    parts
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|part| part["text"].as_str())
        .collect()
}

/// A message's `content`: a string, or (Anthropic, newer OpenAI) an array of text blocks.
fn message_content_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|block| block["text"].as_str())
            .collect(),
        _ => String::new(),
    }
}

/// What `GET /v1/models` answers: OpenAI's listing, behind a key when one is set.
#[derive(Debug, Clone)]
struct Listing {
    key: Option<String>,
    models: Vec<String>,
}

#[derive(Default)]
struct Script {
    listing: Option<Listing>,
    queue: VecDeque<Reply>,
    by_stage: HashMap<String, VecDeque<Reply>>,
    requests: Vec<RecordedRequest>,
    unexpected: Vec<String>,
}

impl Script {
    fn take_reply(&mut self, stage: Option<&str>, candidate: Option<&str>) -> Option<Reply> {
        let for_candidate = stage
            .zip(candidate)
            .and_then(|(stage, candidate)| self.by_stage.get_mut(&format!("{stage}#{candidate}")))
            .and_then(VecDeque::pop_front);
        let staged = || {
            stage
                .and_then(|stage| self.by_stage.get_mut(stage))
                .and_then(VecDeque::pop_front)
        };
        for_candidate
            .or_else(staged)
            .or_else(|| self.queue.pop_front())
    }

    fn unused_replies(&self) -> Vec<String> {
        let plain = self.queue.iter().map(|reply| format!("{reply:?}"));
        let staged = self.by_stage.iter().flat_map(|(stage, replies)| {
            replies
                .iter()
                .map(move |reply| format!("for stage {stage:?}: {reply:?}"))
        });
        plain.chain(staged).collect()
    }
}

type Shared = Arc<Mutex<Script>>;

/// The running server; stops (and checks it was used as scripted) when dropped.
pub struct ScriptedLlm {
    script: Shared,
    server: Served,
}

impl ScriptedLlm {
    /// Starts a server on `127.0.0.1` at a free port, on its own thread.
    pub fn start() -> ScriptedLlm {
        let script = Shared::default();
        let app = axum::Router::new()
            .fallback(answer)
            .with_state(script.clone());
        let server = Served::start("scripted-llm", Runtime::CurrentThread, |_| app);
        ScriptedLlm { script, server }
    }

    /// The host root, e.g. `http://127.0.0.1:41234`: the base URL for Gemini and Anthropic.
    pub fn base_url(&self) -> String {
        self.server.url()
    }

    /// `…/v1`: the base URL for OpenAI-compatible providers.
    pub fn openai_base_url(&self) -> String {
        format!("{}/v1", self.base_url())
    }

    /// Answers `GET /v1/models` with OpenAI's listing of `models` (without this, an empty
    /// listing); with a `key`, a request without `Authorization: Bearer KEY` gets OpenAI's 401
    /// body instead.
    pub fn list_models(&self, key: Option<&str>, models: &[&str]) -> &Self {
        self.script().listing = Some(Listing {
            key: key.map(str::to_owned),
            models: models.iter().map(|model| model.to_string()).collect(),
        });
        self
    }

    /// Queues any reply for the next request.
    pub fn reply(&self, reply: Reply) -> &Self {
        self.script().queue.push_back(reply);
        self
    }

    /// Queues a success holding `text`, shaped like the vendor whose path the request hits.
    pub fn reply_text(&self, text: impl Into<String>) -> &Self {
        self.reply(Reply::text(text))
    }

    /// Queues exactly this status, these headers and this body.
    pub fn reply_raw(
        &self,
        status: u16,
        headers: &[(&str, &str)],
        body: impl Into<String>,
    ) -> &Self {
        self.reply(Reply::raw(status, headers, body))
    }

    /// Queues `reply`, sent only after `delay`.
    pub fn reply_after(&self, delay: Duration, reply: Reply) -> &Self {
        self.reply(reply.after(delay))
    }

    /// Queues a reply only candidate `number`'s requests of this stage take; these go before
    /// the stage's own queue.
    pub fn reply_for_candidate(&self, stage: &str, number: u32, reply: Reply) -> &Self {
        self.reply_for_stage(&format!("{stage}#{number}"), reply)
    }

    /// Queues a reply only a request of this stage takes; these go before the plain queue.
    pub fn reply_for_stage(&self, stage: &str, reply: Reply) -> &Self {
        self.script()
            .by_stage
            .entry(stage.to_owned())
            .or_default()
            .push_back(reply);
        self
    }

    pub fn reply_text_for_stage(&self, stage: &str, text: impl Into<String>) -> &Self {
        self.reply_for_stage(stage, Reply::text(text))
    }

    /// Every request so far, in arrival order (each retry is its own request).
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.script().requests.clone()
    }

    /// The prompt of every request to a vendor path, in arrival order.
    pub fn prompts(&self) -> Vec<String> {
        self.script()
            .requests
            .iter()
            .filter_map(RecordedRequest::prompt)
            .collect()
    }

    /// The prompt of every request for `stage`, in arrival order.
    pub fn prompts_for(&self, stage: &str) -> Vec<String> {
        self.script()
            .requests
            .iter()
            .filter(|request| request.stage.as_deref() == Some(stage))
            .filter_map(RecordedRequest::prompt)
            .collect()
    }

    /// Panics if a request came that the script did not expect or a queued reply is unused.
    pub fn assert_done(&self) {
        let script = self.script();
        let unused = script.unused_replies();
        if unused.is_empty() && script.unexpected.is_empty() {
            return;
        }
        let mut report = String::from("the scripted LLM was not used as scripted:\n");
        for request in &script.unexpected {
            report.push_str(&format!("  unexpected request: {request}\n"));
        }
        for reply in &unused {
            report.push_str(&format!("  unused reply: {reply}\n"));
        }
        drop(script);
        panic!("{report}");
    }

    fn script(&self) -> MutexGuard<'_, Script> {
        lock(&self.script)
    }
}

impl Drop for ScriptedLlm {
    fn drop(&mut self) {
        self.server.stop();
        if !std::thread::panicking() {
            self.assert_done();
        }
    }
}

/// A test that panicked while holding the lock must not hide its own failure behind ours.
fn lock(script: &Shared) -> MutexGuard<'_, Script> {
    script
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

async fn answer(
    AxumState(script): AxumState<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body_text = String::from_utf8_lossy(&body).into_owned();
    let request = RecordedRequest {
        vendor: Vendor::of(&method, uri.path()),
        stage: headers
            .get(STAGE_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
        method,
        path: uri.path().to_owned(),
        query: uri.query().map(str::to_owned),
        body: serde_json::from_str(&body_text).unwrap_or(Value::Null),
        body_text,
        headers,
    };
    // Every OpenAI-compatible server lists its models, and `serve` asks at its start: answered
    // apart from the scripted exchanges, which `requests` keeps.
    if request.method == Method::GET && request.path == "/v1/models" {
        let listing = lock(&script).listing.clone().unwrap_or(Listing {
            key: None,
            models: Vec::new(),
        });
        return models_answer(&listing, &request);
    }
    let reply = {
        let mut script = lock(&script);
        script.requests.push(request.clone());
        let reply = match request.vendor {
            Some(_) => {
                script.take_reply(request.stage.as_deref(), request.header(CANDIDATE_HEADER))
            }
            None => None,
        };
        if reply.is_none() {
            script.unexpected.push(request.to_string());
        }
        reply
    };
    match (request.vendor, reply) {
        (None, _) => plain(
            StatusCode::NOT_FOUND,
            format!("scripted LLM: no such endpoint {request}"),
        ),
        (Some(_), None) => plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            NO_REPLY_QUEUED.to_owned(),
        ),
        (Some(vendor), Some(reply)) => render(vendor, &request, reply).await,
    }
}

async fn render(vendor: Vendor, request: &RecordedRequest, mut reply: Reply) -> Response {
    loop {
        match reply {
            Reply::After {
                delay,
                reply: inner,
            } => {
                tokio::time::sleep(delay).await;
                reply = *inner;
            }
            Reply::Text(text) => {
                let body = success_body(vendor, request, &text);
                return raw_response(
                    200,
                    &[("content-type".into(), "application/json".into())],
                    body.to_string(),
                );
            }
            Reply::Raw {
                status,
                headers,
                body,
            } => return raw_response(status, &headers, body),
        }
    }
}

/// OpenAI's `GET /v1/models`: the list object, or the 401 its API answers a wrong key with
/// (`{"error": {"message": "Incorrect API key provided: …", "code": "invalid_api_key"}}`), here
/// quoting the key whole.
fn models_answer(listing: &Listing, request: &RecordedRequest) -> Response {
    let json = [("content-type".to_owned(), "application/json".to_owned())];
    if let Some(key) = &listing.key {
        let given = request.header("authorization").unwrap_or_default();
        if given != format!("Bearer {key}") {
            // OpenAI masks the key it quotes; this echoes it whole, as a careless
            // OpenAI-compatible proxy would, so that a story can see it never shown.
            let presented = given.trim_start_matches("Bearer ");
            let body = json!({"error": {
                "message": format!("Incorrect API key provided: {presented}. You can find your API key at https://platform.openai.com/account/api-keys."),
                "type": "invalid_request_error",
                "param": null,
                "code": "invalid_api_key"
            }});
            return raw_response(401, &json, body.to_string());
        }
    }
    let data: Vec<Value> = listing
        .models
        .iter()
        .map(|id| json!({"id": id, "object": "model", "created": 1686935002, "owned_by": "system"}))
        .collect();
    raw_response(
        200,
        &json,
        json!({"object": "list", "data": data}).to_string(),
    )
}

fn plain(status: StatusCode, body: String) -> Response {
    raw_response(
        status.as_u16(),
        &[("content-type".into(), "text/plain; charset=utf-8".into())],
        body,
    )
}

fn raw_response(status: u16, headers: &[(String, String)], body: String) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = StatusCode::from_u16(status)
        .unwrap_or_else(|_| panic!("scripted reply has an invalid HTTP status {status}"));
    for (name, value) in headers {
        let name = HeaderName::from_bytes(name.as_bytes())
            .unwrap_or_else(|_| panic!("scripted reply has an invalid header name {name:?}"));
        let value = HeaderValue::from_str(value)
            .unwrap_or_else(|_| panic!("scripted reply has an invalid value for {name}"));
        response.headers_mut().append(name, value);
    }
    response
}

/// A rough token count (one per four bytes, at least one) so usage moves with the text.
fn tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4).max(1)
}

/// The success shapes of the recorded fixtures (`tests/data/llm/*/`), holding `text`.
fn success_body(vendor: Vendor, request: &RecordedRequest, text: &str) -> Value {
    let prompt = request.system().unwrap_or_default() + &request.prompt().unwrap_or_default();
    let (input, output) = (tokens(&prompt), tokens(text));
    let model = request.model().unwrap_or_else(|| "scripted-model".into());
    match vendor {
        Vendor::Gemini => json!({
            "candidates": [{
                "content": {"parts": [{"text": text}], "role": "model"},
                "finishReason": "STOP",
                "index": 0
            }],
            "usageMetadata": {
                "promptTokenCount": input,
                "candidatesTokenCount": output,
                "totalTokenCount": input + output
            },
            "modelVersion": model
        }),
        Vendor::OpenAi => json!({
            "id": "chatcmpl-scripted",
            "object": "chat.completion",
            "created": 1741569952,
            "model": model,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": null, "annotations": []},
                "logprobs": null,
                "finish_reason": "stop"
            }],
            "usage": {
                "prompt_tokens": input,
                "completion_tokens": output,
                "total_tokens": input + output
            },
            "service_tier": "default"
        }),
        Vendor::Anthropic => json!({
            "model": model,
            "id": "msg_scripted",
            "type": "message",
            "role": "assistant",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": null,
            "usage": {
                "input_tokens": input,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": output
            }
        }),
    }
}
