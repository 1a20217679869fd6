//! JSON answers the way each vendor enforces them: the stage's schema sent as OpenAI
//! `response_format`, Gemini `responseSchema` or an Anthropic forced tool call; a server that
//! refuses one form asked again in a weaker one (and so from then on); answers cut off at the cap.

use std::time::Duration;

use crate::support::scripted_llm::{Reply, ScriptedLlm, llm_fixture};
use autofix::llm::{
    LlmError, LlmProvider, LlmRequest, ProviderConfig, ProviderKind, ResponseSchema, provider,
};
use secrecy::SecretString;
use serde_json::{Value, json};

fn config(kind: ProviderKind, base_url: String) -> ProviderConfig {
    ProviderConfig {
        kind,
        base_url,
        model: "model-under-test".into(),
        api_key: SecretString::from("test-key-0123456789"),
        request_timeout: Duration::from_secs(5),
        max_retries: 0,
        initial_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(5),
    }
}

fn schema() -> ResponseSchema {
    ResponseSchema {
        name: "triage".into(),
        schema: json!({
            "type": "object",
            "properties": {
                "actionable": {"type": "boolean"},
                "risk": {"type": "string", "enum": ["LOW", "HIGH"]},
                "files": {"type": "array", "items": {"type": "string"}}
            },
            "required": ["actionable"]
        }),
    }
}

fn triage_request() -> LlmRequest {
    LlmRequest {
        stage: "triage".into(),
        prompt: "Is this actionable?".into(),
        max_output_tokens: Some(256),
        schema: Some(schema()),
        ..Default::default()
    }
}

/// A 400 as OpenAI-compatible servers word one, for a parameter they do not know.
fn refusal() -> Reply {
    Reply::json(
        400,
        json!({"error": {"message": "response_format type not supported", "type": "invalid_request_error", "param": "response_format", "code": null}}).to_string(),
    )
}

fn openai(llm: &ScriptedLlm) -> Box<dyn LlmProvider> {
    provider(config(ProviderKind::Openai, llm.openai_base_url())).unwrap()
}

fn response_formats(llm: &ScriptedLlm) -> Vec<Value> {
    llm.requests()
        .iter()
        .map(|request| request.body["response_format"].clone())
        .collect()
}

#[tokio::test]
async fn openai_is_asked_for_the_schema_as_json_schema() {
    let llm = ScriptedLlm::start();
    llm.reply_text(r#"{"actionable": true}"#);

    let answer = openai(&llm).complete(&triage_request()).await.unwrap();

    assert_eq!(answer.text, r#"{"actionable": true}"#);
    assert_eq!(
        response_formats(&llm),
        [json!({"type": "json_schema",
                "json_schema": {"name": "triage", "schema": schema().schema, "strict": false}})]
    );
    assert_eq!(llm.requests()[0].body["max_tokens"], 256);
}

#[tokio::test]
async fn a_server_refusing_json_schema_gets_json_object_with_the_schema_from_then_on() {
    let llm = ScriptedLlm::start();
    llm.reply(refusal());
    llm.reply_text(r#"{"actionable": true}"#);
    llm.reply_text(r#"{"actionable": false}"#);
    let provider = openai(&llm);

    provider.complete(&triage_request()).await.unwrap();
    let later = provider.complete(&triage_request()).await.unwrap();

    assert_eq!(later.text, r#"{"actionable": false}"#);
    let loose = json!({"type": "json_object", "schema": schema().schema});
    assert_eq!(
        response_formats(&llm)[1..],
        [loose.clone(), loose],
        "asked again at once, and the next request starts where the server can follow"
    );
}

#[tokio::test]
async fn a_server_refusing_every_form_is_asked_with_the_prompt_alone() {
    let llm = ScriptedLlm::start();
    llm.reply(refusal());
    llm.reply(refusal());
    llm.reply_text(r#"{"actionable": true}"#);

    openai(&llm).complete(&triage_request()).await.unwrap();

    assert_eq!(response_formats(&llm)[2], Value::Null);
}

#[tokio::test]
async fn a_refusal_of_something_else_is_not_taken_for_a_refused_schema() {
    let llm = ScriptedLlm::start();
    llm.reply(Reply::json(
        404,
        json!({"error": {"message": "model not found"}}).to_string(),
    ));

    let error = openai(&llm).complete(&triage_request()).await.unwrap_err();

    assert!(
        matches!(error, LlmError::BadRequest { status: 404, .. }),
        "{error:?}"
    );
    assert_eq!(llm.requests().len(), 1);
}

#[tokio::test]
async fn a_request_without_a_schema_asks_for_no_format() {
    let llm = ScriptedLlm::start();
    llm.reply_text("^^^src/a.rs\n^^^end\n");
    let request = LlmRequest {
        schema: None,
        ..triage_request()
    };
    openai(&llm).complete(&request).await.unwrap();
    assert_eq!(response_formats(&llm), [Value::Null]);
}

#[tokio::test]
async fn gemini_is_asked_for_json_with_the_schema_in_its_openapi_form() {
    let llm = ScriptedLlm::start();
    llm.reply_text(r#"{"actionable": true}"#);
    let gemini = provider(config(ProviderKind::Gemini, llm.base_url())).unwrap();

    gemini.complete(&triage_request()).await.unwrap();

    assert_eq!(
        llm.requests()[0].body["generationConfig"],
        json!({
            "maxOutputTokens": 256,
            "responseMimeType": "application/json",
            "responseSchema": {
                "type": "OBJECT",
                "properties": {
                    "actionable": {"type": "BOOLEAN"},
                    "risk": {"type": "STRING", "enum": ["LOW", "HIGH"]},
                    "files": {"type": "ARRAY", "items": {"type": "STRING"}}
                },
                "required": ["actionable"]
            }
        })
    );
}

#[tokio::test]
async fn gemini_refusing_the_schema_is_still_asked_for_json() {
    let llm = ScriptedLlm::start();
    llm.reply(Reply::json(
        400,
        llm_fixture("gemini/error_400_invalid_argument.json"),
    ));
    llm.reply_text(r#"{"actionable": true}"#);
    let gemini = provider(config(ProviderKind::Gemini, llm.base_url())).unwrap();

    gemini.complete(&triage_request()).await.unwrap();

    let second = &llm.requests()[1].body["generationConfig"];
    assert_eq!(second["responseMimeType"], "application/json");
    assert_eq!(second["responseSchema"], Value::Null);
}

#[tokio::test]
async fn anthropic_forces_a_tool_call_and_reads_its_input_as_the_answer() {
    let llm = ScriptedLlm::start();
    llm.reply(Reply::json(
        200,
        llm_fixture("anthropic/message_tool_use.json"),
    ));
    let anthropic = provider(config(ProviderKind::Anthropic, llm.base_url())).unwrap();

    let answer = anthropic.complete(&triage_request()).await.unwrap();

    let sent = &llm.requests()[0].body;
    assert_eq!(sent["tools"][0]["name"], "triage");
    assert_eq!(sent["tools"][0]["input_schema"], schema().schema);
    assert_eq!(
        sent["tool_choice"],
        json!({"type": "tool", "name": "triage"})
    );
    let input: Value = serde_json::from_str(&answer.text).unwrap();
    assert_eq!(input, json!({"location": "SF", "units": "c"}));
    assert_eq!(answer.finish_reason.as_deref(), Some("tool_use"));
    assert!(!answer.truncated());
}

#[tokio::test]
async fn anthropic_refusing_the_tool_is_asked_without_it() {
    let llm = ScriptedLlm::start();
    llm.reply(Reply::recorded_exchange(&llm_fixture(
        "anthropic/error_400_invalid_request.response.json",
    )));
    llm.reply_text(r#"{"actionable": true}"#);
    let anthropic = provider(config(ProviderKind::Anthropic, llm.base_url())).unwrap();

    anthropic.complete(&triage_request()).await.unwrap();

    assert_eq!(llm.requests()[1].body["tools"], Value::Null);
    assert_eq!(llm.requests()[1].body["tool_choice"], Value::Null);
}

/// A recorded reply with its stop reason replaced by `reason`.
fn stopped(fixture: &str, pointer: &str, reason: &str) -> Reply {
    let mut body: Value = serde_json::from_str(&llm_fixture(fixture)).unwrap();
    *body.pointer_mut(pointer).unwrap() = json!(reason);
    Reply::json(200, body.to_string())
}

#[tokio::test]
async fn an_answer_stopped_at_the_cap_is_known_as_truncated_for_every_vendor() {
    let cases = [
        (
            ProviderKind::Openai,
            "openai/chat_completion.json",
            "/choices/0/finish_reason",
            "length",
        ),
        (
            ProviderKind::Gemini,
            "gemini/generate_content.json",
            "/candidates/0/finishReason",
            "MAX_TOKENS",
        ),
        (
            ProviderKind::Anthropic,
            "anthropic/message_text.json",
            "/stop_reason",
            "max_tokens",
        ),
    ];
    for (kind, fixture, pointer, reason) in cases {
        let llm = ScriptedLlm::start();
        llm.reply(stopped(fixture, pointer, reason));
        let base = match kind {
            ProviderKind::Openai => llm.openai_base_url(),
            _ => llm.base_url(),
        };
        let answer = provider(config(kind, base))
            .unwrap()
            .complete(&triage_request())
            .await
            .unwrap();
        assert!(answer.truncated(), "{kind}: {reason}");
    }
}

/// A reply of llama.cpp's Python server as recorded in `tests/data/llama_cpp/`.
fn llama_cpp(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/llama_cpp")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

#[tokio::test]
async fn llama_cpp_refusing_json_schema_with_a_500_is_asked_with_json_object_not_retried() {
    let recorded = llama_cpp("json_schema_response_format.status_and_body.txt");
    let (status_line, body) = recorded.split_once('\n').unwrap();
    assert!(status_line.contains(" 500 "), "{status_line}");
    let llm = ScriptedLlm::start();
    llm.reply(Reply::json(500, body.trim_end()));
    llm.reply(Reply::json(200, llama_cpp("json_object_with_schema.json")));
    let mut retrying = config(ProviderKind::Openai, llm.openai_base_url());
    retrying.max_retries = 3;

    let answer = provider(retrying)
        .unwrap()
        .complete(&triage_request())
        .await
        .unwrap();

    let kinds: Vec<Value> = response_formats(&llm)
        .iter()
        .map(|format| format["type"].clone())
        .collect();
    assert_eq!(
        kinds,
        [json!("json_schema"), json!("json_object")],
        "no retry of the 500"
    );
    let parsed: Value = serde_json::from_str(&answer.text).unwrap();
    assert_eq!(parsed["kind"], "bug");
}

#[tokio::test]
async fn llama_cpp_stopping_at_max_tokens_is_truncated() {
    let llm = ScriptedLlm::start();
    llm.reply(Reply::json(200, llama_cpp("finish_reason_length.json")));

    let answer = openai(&llm).complete(&triage_request()).await.unwrap();

    assert!(answer.truncated());
    assert_eq!(answer.usage.output_tokens, 5);
}
