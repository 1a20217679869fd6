//! The three LLM providers against the scripted server: what they send, how they read the vendors'
//! recorded replies (`tests/data/llm/`), and how they fail, retry and give up.

use std::time::Duration;

use crate::support::scripted_llm::{NO_REPLY_QUEUED, Reply, ScriptedLlm, llm_fixture};
use autofix::llm::{
    ANTHROPIC_DEFAULT_MAX_TOKENS, LlmError, LlmProvider, LlmRequest, LlmResponse, ProviderConfig,
    ProviderKind, TokenUsage, provider,
};
use secrecy::SecretString;
use serde_json::json;

const KEY: &str = "test-key-0123456789";

fn config(kind: ProviderKind, base_url: String) -> ProviderConfig {
    let model = match kind {
        ProviderKind::Gemini => "gemini-2.5-flash",
        ProviderKind::Openai => "gpt-5.4",
        ProviderKind::Anthropic => "claude-haiku-4-5",
    };
    ProviderConfig {
        kind,
        base_url,
        model: model.into(),
        api_key: SecretString::from(KEY),
        request_timeout: Duration::from_secs(10),
        max_retries: 2,
        initial_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(50),
    }
}

fn gemini(llm: &ScriptedLlm) -> Box<dyn LlmProvider> {
    provider(config(ProviderKind::Gemini, llm.base_url())).unwrap()
}

fn openai(llm: &ScriptedLlm) -> Box<dyn LlmProvider> {
    provider(config(ProviderKind::Openai, llm.openai_base_url())).unwrap()
}

fn anthropic(llm: &ScriptedLlm) -> Box<dyn LlmProvider> {
    provider(config(ProviderKind::Anthropic, llm.base_url())).unwrap()
}

fn request(stage: &str, prompt: &str) -> LlmRequest {
    LlmRequest {
        stage: stage.into(),
        system: None,
        prompt: prompt.into(),
        temperature: None,
        max_output_tokens: None,
        schema: None,
        candidate: None,
    }
}

fn full_request() -> LlmRequest {
    LlmRequest {
        stage: "plan".into(),
        system: Some("You fix Rust code.".into()),
        prompt: "Fix the parser.".into(),
        temperature: Some(0.5),
        max_output_tokens: Some(1000),
        schema: None,
        candidate: None,
    }
}

async fn ask(provider: &dyn LlmProvider) -> Result<LlmResponse, LlmError> {
    provider.complete(&request("initial", "Fix the bug.")).await
}

fn usage(input_tokens: u64, output_tokens: u64, total_tokens: u64) -> TokenUsage {
    TokenUsage {
        input_tokens,
        output_tokens,
        total_tokens,
        cached_input_tokens: 0,
    }
}

fn assert_no_key(error: &LlmError) {
    assert!(!error.to_string().contains(KEY), "{error}");
    assert!(!format!("{error:?}").contains(KEY), "{error:?}");
}

// ---- what each provider sends ----

#[tokio::test]
async fn gemini_sends_the_key_in_a_header_and_the_prompt_as_one_user_turn() {
    let llm = ScriptedLlm::start();
    llm.reply_text("ok");
    gemini(&llm).complete(&full_request()).await.unwrap();

    let sent = &llm.requests()[0];
    assert_eq!(sent.path, "/v1beta/models/gemini-2.5-flash:generateContent");
    assert_eq!(sent.query, None, "the key must never be in the URL");
    assert_eq!(sent.header("x-goog-api-key"), Some(KEY));
    assert_eq!(sent.header("x-autofix-stage"), Some("plan"));
    assert_eq!(sent.header("content-type"), Some("application/json"));
    assert_eq!(
        sent.body,
        json!({
            "contents": [{"role": "user", "parts": [{"text": "Fix the parser."}]}],
            "systemInstruction": {"parts": [{"text": "You fix Rust code."}]},
            "generationConfig": {"temperature": 0.5, "maxOutputTokens": 1000}
        })
    );
}

#[tokio::test]
async fn gemini_leaves_out_what_the_request_does_not_set() {
    let llm = ScriptedLlm::start();
    llm.reply_text("ok");
    gemini(&llm)
        .complete(&request("triage", "Hi"))
        .await
        .unwrap();

    assert_eq!(
        llm.requests()[0].body,
        json!({"contents": [{"role": "user", "parts": [{"text": "Hi"}]}]})
    );
}

#[tokio::test]
async fn gemini_accepts_a_model_written_with_the_models_prefix() {
    let llm = ScriptedLlm::start();
    llm.reply_text("ok");
    let mut config = config(ProviderKind::Gemini, format!("{}//", llm.base_url()));
    config.model = "models/gemini-2.0-flash".into();
    ask(provider(config).unwrap().as_ref()).await.unwrap();

    assert_eq!(
        llm.requests()[0].path,
        "/v1beta/models/gemini-2.0-flash:generateContent"
    );
}

#[tokio::test]
async fn openai_sends_a_bearer_token_and_system_then_user_messages() {
    let llm = ScriptedLlm::start();
    llm.reply_text("ok");
    openai(&llm).complete(&full_request()).await.unwrap();

    let sent = &llm.requests()[0];
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(
        sent.header("authorization"),
        Some(&*format!("Bearer {KEY}"))
    );
    assert_eq!(sent.stage.as_deref(), Some("plan"));
    assert_eq!(
        sent.body,
        json!({
            "model": "gpt-5.4",
            "messages": [
                {"role": "system", "content": "You fix Rust code."},
                {"role": "user", "content": "Fix the parser."}
            ],
            "temperature": 0.5,
            "max_tokens": 1000
        })
    );
}

#[tokio::test]
async fn a_local_openai_compatible_server_without_a_key_gets_no_authorization_header() {
    let llm = ScriptedLlm::start();
    llm.reply_text("ok");
    let mut config = config(ProviderKind::Openai, format!("{}/", llm.openai_base_url()));
    config.api_key = SecretString::from("");
    ask(provider(config).unwrap().as_ref()).await.unwrap();

    let sent = &llm.requests()[0];
    assert_eq!(sent.header("authorization"), None);
    assert_eq!(
        sent.body["messages"],
        json!([{"role": "user", "content": "Fix the bug."}])
    );
}

#[tokio::test]
async fn anthropic_sends_its_key_version_and_the_required_max_tokens() {
    let llm = ScriptedLlm::start();
    llm.reply_text("ok");
    anthropic(&llm).complete(&full_request()).await.unwrap();

    let sent = &llm.requests()[0];
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some(KEY));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent.header("x-autofix-stage"), Some("plan"));
    assert_eq!(
        sent.body,
        json!({
            "model": "claude-haiku-4-5",
            "max_tokens": 1000,
            "messages": [{"role": "user", "content": "Fix the parser."}],
            "system": "You fix Rust code.",
            "temperature": 0.5
        })
    );
}

#[tokio::test]
async fn anthropic_uses_the_documented_default_when_no_output_limit_is_set() {
    let llm = ScriptedLlm::start();
    llm.reply_text("ok");
    ask(anthropic(&llm).as_ref()).await.unwrap();

    assert_eq!(
        llm.requests()[0].body["max_tokens"],
        json!(ANTHROPIC_DEFAULT_MAX_TOKENS)
    );
}

#[tokio::test]
async fn a_provider_describes_itself_by_vendor_and_model() {
    let llm = ScriptedLlm::start();
    assert_eq!(gemini(&llm).describe(), "gemini gemini-2.5-flash");
    assert_eq!(openai(&llm).describe(), "openai gpt-5.4");
}

// ---- reading the vendors' recorded replies ----

#[tokio::test]
async fn gemini_text_and_usage_come_from_the_recorded_reply() {
    let llm = ScriptedLlm::start();
    let body = llm_fixture("gemini/generate_content.json");
    llm.reply(Reply::json(200, body.clone()));
    let answer = ask(gemini(&llm).as_ref()).await.unwrap();

    assert!(answer.text.starts_with("This clip is an audio recording"));
    assert!(answer.text.ends_with("Members of the Congress.\n"));
    assert_eq!(answer.usage, usage(754, 49, 803));
    assert_eq!(answer.model.as_deref(), Some("gemini-2.0-flash"));
    assert_eq!(answer.finish_reason.as_deref(), Some("STOP"));
    assert_eq!(answer.raw_json, body, "the raw body is kept as received");
}

#[tokio::test]
async fn gemini_thinking_tokens_count_as_output() {
    let llm = ScriptedLlm::start();
    llm.reply(Reply::json(
        200,
        llm_fixture("gemini/generate_content_2.5_flash_thinking.json"),
    ));
    let answer = ask(gemini(&llm).as_ref()).await.unwrap();

    assert_eq!(
        answer.text,
        "AI learns patterns from data to make decisions or predictions."
    );
    assert_eq!(answer.usage, usage(8, 11 + 829, 848));
}

#[tokio::test]
async fn gemini_safety_ratings_do_not_disturb_the_text() {
    let llm = ScriptedLlm::start();
    llm.reply(Reply::json(
        200,
        llm_fixture("gemini/generate_content_with_safety_ratings.json"),
    ));
    let answer = ask(gemini(&llm).as_ref()).await.unwrap();

    assert!(
        answer
            .text
            .starts_with("```python\n# Example list to be sorted")
    );
    assert_eq!(answer.usage, usage(9, 87, 96));
    assert_eq!(answer.model, None);
}

#[tokio::test]
async fn gemini_thought_parts_are_left_out_of_the_text() {
    let llm = ScriptedLlm::start();
    let body = json!({
        "candidates": [{
            "content": {"role": "model", "parts": [
                {"text": "Let me think about the parser...", "thought": true},
                {"text": "Fixed "},
                {"text": "it."}
            ]},
            "finishReason": "STOP"
        }],
        "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 4, "thoughtsTokenCount": 5}
    });
    llm.reply(Reply::json(200, body.to_string()));
    let answer = ask(gemini(&llm).as_ref()).await.unwrap();

    assert_eq!(answer.text, "Fixed it.");
    assert_eq!(answer.usage, usage(3, 9, 12), "a missing total is the sum");
}

#[tokio::test]
async fn openai_text_and_usage_come_from_the_recorded_reply() {
    let llm = ScriptedLlm::start();
    llm.reply(Reply::json(200, llm_fixture("openai/chat_completion.json")));
    let answer = ask(openai(&llm).as_ref()).await.unwrap();

    assert_eq!(answer.text, "Hello! How can I assist you today?");
    assert_eq!(answer.usage, usage(19, 10, 29));
    assert_eq!(answer.model.as_deref(), Some("gpt-5.4"));
    assert_eq!(answer.finish_reason.as_deref(), Some("stop"));
}

#[tokio::test]
async fn anthropic_text_and_usage_come_from_the_recorded_reply() {
    let llm = ScriptedLlm::start();
    llm.reply(Reply::json(200, llm_fixture("anthropic/message_text.json")));
    let answer = ask(anthropic(&llm).as_ref()).await.unwrap();

    assert_eq!(
        answer.text,
        "The weather in SF is currently **20°C** (68°F) and **Sunny**!"
    );
    assert_eq!(answer.usage, usage(705, 25, 730));
    assert_eq!(answer.model.as_deref(), Some("claude-haiku-4-5-20251001"));
    assert_eq!(answer.finish_reason.as_deref(), Some("end_turn"));
}

#[tokio::test]
async fn anthropic_cached_prompt_tokens_count_as_input() {
    let llm = ScriptedLlm::start();
    let body = json!({
        "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
        "content": [{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "done"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "cache_creation_input_tokens": 100,
                  "cache_read_input_tokens": 1000, "output_tokens": 5}
    });
    llm.reply(Reply::json(200, body.to_string()));
    let answer = ask(anthropic(&llm).as_ref()).await.unwrap();

    assert_eq!(answer.text, "done");
    assert_eq!(
        answer.usage,
        TokenUsage {
            cached_input_tokens: 1000,
            ..usage(1110, 5, 1115)
        }
    );
}

#[tokio::test]
async fn each_vendor_says_how_much_of_the_prompt_came_from_its_cache() {
    let llm = ScriptedLlm::start();
    llm.reply(Reply::json(
        200,
        json!({
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 2000, "completion_tokens": 10, "total_tokens": 2010,
                      "prompt_tokens_details": {"cached_tokens": 1536}}
        })
        .to_string(),
    ));
    llm.reply(Reply::json(
        200,
        json!({
            "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
            "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 10, "cache_read_input_tokens": 1000, "output_tokens": 5}
        })
        .to_string(),
    ));
    llm.reply(Reply::json(
        200,
        json!({
            "candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]},
                            "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 900, "cachedContentTokenCount": 700,
                              "candidatesTokenCount": 4}
        })
        .to_string(),
    ));

    let openai = ask(openai(&llm).as_ref()).await.unwrap().usage;
    let anthropic = ask(anthropic(&llm).as_ref()).await.unwrap().usage;
    let gemini = ask(gemini(&llm).as_ref()).await.unwrap().usage;

    assert_eq!(
        (openai.input_tokens, openai.cached_input_tokens),
        (2000, 1536)
    );
    assert_eq!(
        (anthropic.input_tokens, anthropic.cached_input_tokens),
        (1010, 1000)
    );
    assert_eq!(
        (gemini.input_tokens, gemini.cached_input_tokens),
        (900, 700)
    );
}

#[tokio::test]
async fn the_recorded_replies_say_no_prompt_came_from_a_cache() {
    let llm = ScriptedLlm::start();
    llm.reply(Reply::json(200, llm_fixture("openai/chat_completion.json")));
    llm.reply(Reply::json(200, llm_fixture("anthropic/message_text.json")));
    llm.reply(Reply::json(
        200,
        llm_fixture("gemini/generate_content.json"),
    ));
    for provider in [openai(&llm), anthropic(&llm), gemini(&llm)] {
        let answer = ask(provider.as_ref()).await.unwrap();
        assert_eq!(
            answer.usage.cached_input_tokens,
            0,
            "{}",
            provider.describe()
        );
    }
}

#[tokio::test]
async fn scripted_text_replies_parse_for_every_vendor_with_usage() {
    let llm = ScriptedLlm::start();
    llm.reply_text("from gemini")
        .reply_text("from openai")
        .reply_text("from anthropic");

    let answers = [
        ask(gemini(&llm).as_ref()).await.unwrap(),
        ask(openai(&llm).as_ref()).await.unwrap(),
        ask(anthropic(&llm).as_ref()).await.unwrap(),
    ];
    let texts: Vec<_> = answers.iter().map(|a| a.text.as_str()).collect();
    assert_eq!(texts, ["from gemini", "from openai", "from anthropic"]);
    for answer in &answers {
        assert!(answer.usage.input_tokens > 0 && answer.usage.output_tokens > 0);
        assert_eq!(
            answer.usage.total_tokens,
            answer.usage.input_tokens + answer.usage.output_tokens
        );
    }
}

// ---- answers without text ----

#[tokio::test]
async fn an_openai_tool_call_without_content_is_an_empty_response() {
    let llm = ScriptedLlm::start();
    llm.reply(Reply::json(
        200,
        llm_fixture("openai/chat_completion_tool_calls.json"),
    ));
    let error = ask(openai(&llm).as_ref()).await.unwrap_err();

    let LlmError::EmptyResponse {
        finish_reason,
        raw_body,
    } = error
    else {
        panic!("expected EmptyResponse, got {error:?}");
    };
    assert_eq!(finish_reason, "tool_calls");
    assert!(raw_body.contains("get_current_weather"));
}

#[tokio::test]
async fn an_openai_refusal_is_an_empty_response_that_quotes_it() {
    let llm = ScriptedLlm::start();
    let body = json!({
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": null, "refusal": "I can't help with that."}}]
    });
    llm.reply(Reply::json(200, body.to_string()));
    let error = ask(openai(&llm).as_ref()).await.unwrap_err();

    assert!(
        matches!(&error, LlmError::EmptyResponse { finish_reason, .. }
            if finish_reason == "refusal: I can't help with that."),
        "{error:?}"
    );
}

#[tokio::test]
async fn gemini_empty_text_is_an_empty_response_with_the_finish_reason() {
    let llm = ScriptedLlm::start();
    let body = json!({
        "candidates": [{"content": {"role": "model", "parts": []}, "finishReason": "MAX_TOKENS"}],
        "usageMetadata": {"promptTokenCount": 5, "totalTokenCount": 5}
    });
    llm.reply(Reply::json(200, body.to_string()));
    let error = ask(gemini(&llm).as_ref()).await.unwrap_err();

    assert!(
        matches!(&error, LlmError::EmptyResponse { finish_reason, .. } if finish_reason == "MAX_TOKENS"),
        "{error:?}"
    );
    assert_eq!(llm.requests().len(), 1, "an empty answer is not retried");
}

#[tokio::test]
async fn gemini_without_candidates_is_an_empty_response() {
    let llm = ScriptedLlm::start();
    llm.reply(Reply::json(
        200,
        r#"{"candidates": [], "usageMetadata": {"promptTokenCount": 5}}"#,
    ));
    let error = ask(gemini(&llm).as_ref()).await.unwrap_err();

    assert!(
        matches!(&error, LlmError::EmptyResponse { finish_reason, .. }
            if finish_reason == "no candidates in the reply"),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_gemini_prompt_blocked_for_safety_says_so() {
    let llm = ScriptedLlm::start();
    let body = json!({
        "promptFeedback": {"blockReason": "SAFETY", "safetyRatings": []},
        "usageMetadata": {"promptTokenCount": 7, "totalTokenCount": 7}
    });
    llm.reply(Reply::json(200, body.to_string()));
    let error = ask(gemini(&llm).as_ref()).await.unwrap_err();

    assert!(
        matches!(&error, LlmError::EmptyResponse { finish_reason, .. }
            if finish_reason == "prompt blocked: SAFETY"),
        "{error:?}"
    );
}

// ---- bodies that are not the vendor's answer ----

#[tokio::test]
async fn an_html_page_with_status_200_is_an_invalid_response_naming_the_content_type() {
    let llm = ScriptedLlm::start();
    let page = "<!DOCTYPE html>\n<html><head><title>Captive portal</title></head>\n<body>Log in</body></html>";
    llm.reply_raw(200, &[("content-type", "text/html; charset=utf-8")], page);
    let error = ask(openai(&llm).as_ref()).await.unwrap_err();

    let LlmError::InvalidResponse { message, raw_body } = &error else {
        panic!("expected InvalidResponse, got {error:?}");
    };
    assert!(message.contains("not JSON"), "{message}");
    assert!(
        message.contains("content-type: text/html; charset=utf-8"),
        "{message}"
    );
    assert!(
        message.contains("<!DOCTYPE html> <html><head><title>Captive portal"),
        "{message}"
    );
    assert_eq!(raw_body, page);
    assert_eq!(llm.requests().len(), 1, "a wrong body is not retried");
}

#[tokio::test]
async fn an_empty_body_with_status_200_is_an_invalid_response() {
    let llm = ScriptedLlm::start();
    llm.reply_raw(200, &[], "");
    let error = ask(anthropic(&llm).as_ref()).await.unwrap_err();

    let LlmError::InvalidResponse { message, .. } = &error else {
        panic!("expected InvalidResponse, got {error:?}");
    };
    assert!(message.contains("content-type: none"), "{message}");
    assert!(message.contains("<empty body>"), "{message}");
}

#[tokio::test]
async fn json_of_another_shape_is_an_invalid_response_naming_the_expected_api() {
    let llm = ScriptedLlm::start();
    llm.reply(Reply::json(200, llm_fixture("anthropic/message_text.json")));
    llm.reply(Reply::json(200, r#"{"status": "ok"}"#));
    llm.reply(Reply::json(200, "[1, 2]"));
    let openai = openai(&llm);
    let gemini = gemini(&llm);

    let error = ask(openai.as_ref()).await.unwrap_err();
    let LlmError::InvalidResponse { message, .. } = &error else {
        panic!("expected InvalidResponse, got {error:?}");
    };
    assert!(message.contains("not a chat completion"), "{message}");
    assert!(message.contains("missing field `choices`"), "{message}");

    let error = ask(gemini.as_ref()).await.unwrap_err();
    let LlmError::InvalidResponse { message, .. } = &error else {
        panic!("expected InvalidResponse, got {error:?}");
    };
    assert!(
        message.contains("not a generateContent response"),
        "{message}"
    );
    assert!(message.contains(r#"{"status": "ok"}"#), "{message}");

    let error = ask(anthropic(&llm).as_ref()).await.unwrap_err();
    let LlmError::InvalidResponse { message, .. } = &error else {
        panic!("expected InvalidResponse, got {error:?}");
    };
    assert!(
        message.contains("not a Messages API response (not an object)"),
        "{message}"
    );
}

// ---- errors that are not retried ----

#[tokio::test]
async fn a_rejected_key_is_not_retried_and_never_shown() {
    let llm = ScriptedLlm::start();
    llm.reply(Reply::json(
        401,
        r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
    ));
    let error = ask(anthropic(&llm).as_ref()).await.unwrap_err();

    let LlmError::Unauthorized {
        status, message, ..
    } = &error
    else {
        panic!("expected Unauthorized, got {error:?}");
    };
    assert_eq!(*status, 401);
    assert_eq!(message, "authentication_error: invalid x-api-key");
    assert_eq!(llm.requests().len(), 1);
    assert_no_key(&error);
}

#[tokio::test]
async fn a_forbidden_key_is_unauthorized_too() {
    let llm = ScriptedLlm::start();
    llm.reply(Reply::json(
        403,
        r#"{"error":{"code":403,"message":"Method doesn't allow unregistered callers.","status":"PERMISSION_DENIED"}}"#,
    ));
    let error = ask(gemini(&llm).as_ref()).await.unwrap_err();

    assert!(
        matches!(&error, LlmError::Unauthorized { status: 403, message, .. }
            if message == "PERMISSION_DENIED: Method doesn't allow unregistered callers."),
        "{error:?}"
    );
}

#[tokio::test]
async fn openai_context_length_exceeded_is_context_too_long() {
    let llm = ScriptedLlm::start();
    llm.reply(Reply::json(
        400,
        llm_fixture("openai/error_400_context_length_exceeded.json"),
    ));
    let error = ask(openai(&llm).as_ref()).await.unwrap_err();

    let LlmError::ContextTooLong { message, .. } = &error else {
        panic!("expected ContextTooLong, got {error:?}");
    };
    assert!(message.starts_with(
        "context_length_exceeded: This model's maximum context length is 4097 tokens"
    ));
    assert!(!error.is_retryable());
    assert_eq!(llm.requests().len(), 1);
}

#[tokio::test]
async fn anthropic_prompt_is_too_long_is_context_too_long() {
    let llm = ScriptedLlm::start();
    llm.reply(Reply::json(
        400,
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"},"request_id":"req_1"}"#,
    ));
    let error = ask(anthropic(&llm).as_ref()).await.unwrap_err();

    assert!(
        matches!(&error, LlmError::ContextTooLong { message, .. }
            if message == "invalid_request_error: prompt is too long: 208310 tokens > 200000 maximum (request req_1)"),
        "{error:?}"
    );
}

#[tokio::test]
async fn anthropic_recorded_invalid_request_is_a_bad_request_not_retried() {
    let llm = ScriptedLlm::start();
    llm.reply(Reply::recorded_exchange(&llm_fixture(
        "anthropic/error_400_invalid_request.response.json",
    )));
    let error = ask(anthropic(&llm).as_ref()).await.unwrap_err();

    let LlmError::BadRequest {
        status,
        message,
        raw_body,
    } = &error
    else {
        panic!("expected BadRequest, got {error:?}");
    };
    assert_eq!(*status, 400);
    assert!(
        message
            .starts_with("invalid_request_error: messages.0.content.1: unexpected `tool_use_id`")
    );
    assert!(message.ends_with("(request req_011CYHyk9NPsBYeGbC9LuDNK)"));
    assert!(raw_body.contains("\"request_id\""));
    assert_eq!(llm.requests().len(), 1);
}

#[tokio::test]
async fn gemini_recorded_invalid_argument_is_a_bad_request() {
    let llm = ScriptedLlm::start();
    llm.reply(Reply::json(
        400,
        llm_fixture("gemini/error_400_invalid_argument.json"),
    ));
    let error = ask(gemini(&llm).as_ref()).await.unwrap_err();

    assert!(
        matches!(&error, LlmError::BadRequest { status: 400, message, .. }
            if message.starts_with("INVALID_ARGUMENT: Invalid JSON payload received.")),
        "{error:?}"
    );
}

// ---- retries ----

#[tokio::test]
async fn a_rate_limit_with_retry_after_is_waited_out_then_answered() {
    let llm = ScriptedLlm::start();
    llm.reply_raw(
        429,
        &[("content-type", "application/json"), ("retry-after", "0")],
        llm_fixture("gemini/error_429_resource_exhausted.json"),
    )
    .reply_text("after the wait");
    let answer = ask(gemini(&llm).as_ref()).await.unwrap();

    assert_eq!(answer.text, "after the wait");
    assert_eq!(llm.requests().len(), 2);
}

#[tokio::test]
async fn an_openai_rate_limit_with_retry_after_ms_is_retried() {
    let llm = ScriptedLlm::start();
    llm.reply_raw(
        429,
        &[
            ("content-type", "application/json"),
            ("retry-after-ms", "6"),
        ],
        llm_fixture("openai/error_429_rate_limit_exceeded.json"),
    )
    .reply_text("ok");

    assert_eq!(ask(openai(&llm).as_ref()).await.unwrap().text, "ok");
}

#[tokio::test]
async fn gemini_retry_info_in_the_body_is_honoured() {
    let llm = ScriptedLlm::start();
    let body = json!({"error": {
        "code": 429, "message": "Resource has been exhausted (e.g. check quota).", "status": "RESOURCE_EXHAUSTED",
        "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.002s"}]
    }});
    llm.reply(Reply::json(429, body.to_string()))
        .reply_text("ok");

    assert_eq!(ask(gemini(&llm).as_ref()).await.unwrap().text, "ok");
    assert_eq!(llm.requests().len(), 2);
}

#[tokio::test]
async fn a_rate_limit_asking_for_a_longer_wait_than_the_cap_gives_up_at_once() {
    let llm = ScriptedLlm::start();
    llm.reply_raw(
        429,
        &[
            ("content-type", "application/json"),
            ("retry-after", "3600"),
        ],
        llm_fixture("gemini/error_429_resource_exhausted_minimal.json"),
    );
    let error = ask(gemini(&llm).as_ref()).await.unwrap_err();

    let LlmError::RateLimited {
        status,
        message,
        retry_after,
        raw_body,
    } = &error
    else {
        panic!("expected RateLimited, got {error:?}");
    };
    assert_eq!(*status, 429);
    assert_eq!(*retry_after, Some(Duration::from_secs(3600)));
    assert!(
        message.starts_with("RESOURCE_EXHAUSTED: Resource has been exhausted"),
        "{message}"
    );
    assert!(
        message.contains("asked to wait 3600s, longer than the 50ms"),
        "{message}"
    );
    assert!(raw_body.contains("RESOURCE_EXHAUSTED"));
    assert_eq!(llm.requests().len(), 1);
}

#[tokio::test]
async fn a_gemini_retry_delay_longer_than_the_cap_gives_up_too() {
    let llm = ScriptedLlm::start();
    let body = json!({"error": {
        "code": 429, "message": "Quota exceeded.", "status": "RESOURCE_EXHAUSTED",
        "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"}]
    }});
    llm.reply(Reply::json(429, body.to_string()));
    let error = ask(gemini(&llm).as_ref()).await.unwrap_err();

    assert!(
        matches!(&error, LlmError::RateLimited { retry_after: Some(wait), message, .. }
            if *wait == Duration::from_secs(37) && message.contains("asked to wait 37s")),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_retry_after_date_far_ahead_gives_up() {
    let llm = ScriptedLlm::start();
    llm.reply_raw(
        429,
        &[
            ("retry-after", "Wed, 21 Oct 2015 08:28:00 GMT"),
            ("date", "Wed, 21 Oct 2015 07:28:00 GMT"),
        ],
        "slow down",
    );
    let error = ask(openai(&llm).as_ref()).await.unwrap_err();

    assert!(
        matches!(&error, LlmError::RateLimited { retry_after: Some(wait), .. }
            if *wait == Duration::from_secs(3600)),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_server_error_is_retried_then_answered() {
    let llm = ScriptedLlm::start();
    llm.reply(Reply::json(
        500,
        r#"{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}"#,
    ))
    .reply_text("second time lucky");

    assert_eq!(
        ask(openai(&llm).as_ref()).await.unwrap().text,
        "second time lucky"
    );
    assert_eq!(llm.requests().len(), 2);
}

#[tokio::test]
async fn anthropic_overloaded_529_is_retried() {
    let llm = ScriptedLlm::start();
    llm.reply(Reply::json(
        529,
        llm_fixture("anthropic/error_529_overloaded.json"),
    ))
    .reply_text("ok");

    assert_eq!(ask(anthropic(&llm).as_ref()).await.unwrap().text, "ok");
    assert_eq!(llm.requests().len(), 2);
}

#[tokio::test]
async fn anthropic_recorded_rate_limit_is_retried_with_backoff() {
    let llm = ScriptedLlm::start();
    llm.reply(Reply::recorded_exchange(&llm_fixture(
        "anthropic/error_429_rate_limit.response.json",
    )))
    .reply_text("ok");

    assert_eq!(ask(anthropic(&llm).as_ref()).await.unwrap().text, "ok");
    assert_eq!(llm.requests().len(), 2);
}

#[tokio::test]
async fn when_retries_run_out_the_last_error_is_returned() {
    let llm = ScriptedLlm::start();
    for n in ["first", "second", "third"] {
        llm.reply(Reply::json(
            529,
            format!(r#"{{"type":"error","error":{{"type":"overloaded_error","message":"Overloaded {n}"}}}}"#),
        ));
    }
    let error = ask(anthropic(&llm).as_ref()).await.unwrap_err();

    let LlmError::Server {
        status, message, ..
    } = &error
    else {
        panic!("expected Server, got {error:?}");
    };
    assert_eq!(*status, 529);
    assert_eq!(
        message,
        "overloaded_error: Overloaded third; gave up after 3 tries"
    );
    assert_eq!(llm.requests().len(), 3);
}

#[tokio::test]
async fn an_html_502_from_a_proxy_is_a_server_error_quoting_the_page() {
    let llm = ScriptedLlm::start();
    for _ in 0..3 {
        llm.reply_raw(
            502,
            &[("content-type", "text/html")],
            "<html><h1>502 Bad Gateway</h1></html>",
        );
    }
    let error = ask(gemini(&llm).as_ref()).await.unwrap_err();

    assert!(
        matches!(&error, LlmError::Server { status: 502, message, .. }
            if message.starts_with("(content-type: text/html) <html><h1>502 Bad Gateway")),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_server_that_never_answers_in_time_is_a_timeout() {
    let llm = ScriptedLlm::start();
    llm.reply_after(Duration::from_secs(30), Reply::text("too late"));
    let mut config = config(ProviderKind::Gemini, llm.base_url());
    config.request_timeout = Duration::from_millis(200);
    config.max_retries = 0;
    let error = ask(provider(config).unwrap().as_ref()).await.unwrap_err();

    assert!(
        matches!(error, LlmError::Timeout(limit) if limit == Duration::from_millis(200)),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_timeout_is_retried() {
    let llm = ScriptedLlm::start();
    llm.reply_after(Duration::from_secs(30), Reply::text("too late"))
        .reply_text("in time");
    let mut config = config(ProviderKind::Openai, llm.openai_base_url());
    config.request_timeout = Duration::from_millis(200);

    assert_eq!(
        ask(provider(config).unwrap().as_ref()).await.unwrap().text,
        "in time"
    );
    assert_eq!(llm.requests().len(), 2);
}

#[tokio::test]
async fn an_unreachable_server_is_a_transport_error_without_the_key() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = closed.local_addr().unwrap();
    drop(closed);
    let mut config = config(ProviderKind::Openai, format!("http://{address}/v1"));
    config.max_retries = 1;
    let error = ask(provider(config).unwrap().as_ref()).await.unwrap_err();

    let LlmError::Transport(message) = &error else {
        panic!("expected Transport, got {error:?}");
    };
    assert!(
        message.contains(&format!("POST http://{address}/v1/chat/completions")),
        "{message}"
    );
    assert!(message.to_lowercase().contains("connect"), "{message}");
    assert!(message.ends_with("gave up after 2 tries"), "{message}");
    assert_no_key(&error);
}

// ---- configuration mistakes ----

#[test]
fn an_unparsable_base_url_is_refused_when_the_provider_is_built() {
    let error = provider(config(ProviderKind::Anthropic, "api.anthropic.com".into()))
        .err()
        .expect("a base URL without a scheme is refused");

    assert!(matches!(error, LlmError::Config(_)), "{error:?}");
    assert_eq!(
        error.to_string(),
        "the LLM provider is not set up correctly: the LLM base URL \"api.anthropic.com\" is not \
         usable: relative URL without a base (expected e.g. https://api.openai.com/v1 or \
         http://127.0.0.1:11434/v1)"
    );
}

#[test]
fn a_provider_without_a_model_is_refused() {
    let mut config = config(ProviderKind::Gemini, "http://127.0.0.1:1".into());
    config.model = "  ".into();
    let error = provider(config).err().expect("an empty model is refused");

    assert_eq!(
        error.to_string(),
        "the LLM provider is not set up correctly: no model is configured for the gemini provider"
    );
}

#[tokio::test]
async fn a_stage_name_that_cannot_be_a_header_is_refused_before_sending() {
    let llm = ScriptedLlm::start();
    let error = gemini(&llm)
        .complete(&request("plan\nX-Evil: 1", "hi"))
        .await
        .unwrap_err();

    assert!(
        matches!(&error, LlmError::Config(m) if m.contains("X-Autofix-Stage")),
        "{error:?}"
    );
    assert!(llm.requests().is_empty());
}

#[tokio::test]
async fn an_api_key_with_a_line_break_is_refused_without_showing_it() {
    let llm = ScriptedLlm::start();
    let mut config = config(ProviderKind::Anthropic, llm.base_url());
    config.api_key = SecretString::from(format!("{KEY}\n"));
    let error = ask(provider(config).unwrap().as_ref()).await.unwrap_err();

    assert!(
        matches!(&error, LlmError::Config(m) if m.contains("API key")),
        "{error:?}"
    );
    assert_no_key(&error);
}

// ---- the scripted server itself ----

#[tokio::test]
async fn replies_for_a_stage_are_taken_before_the_plain_queue() {
    let llm = ScriptedLlm::start();
    llm.reply_text("plain")
        .reply_text_for_stage("triage", "for triage");
    let gemini = gemini(&llm);

    let first = gemini.complete(&request("edit", "one")).await.unwrap();
    let second = gemini.complete(&request("triage", "two")).await.unwrap();

    assert_eq!(
        (first.text.as_str(), second.text.as_str()),
        ("plain", "for triage")
    );
    assert_eq!(llm.prompts(), ["one", "two"]);
}

#[tokio::test]
async fn the_prompts_of_every_vendor_are_read_back_in_order() {
    let llm = ScriptedLlm::start();
    llm.reply_text("a").reply_text("b").reply_text("c");
    let mut with_system = request("audit", "to anthropic");
    with_system.system = Some("be brief".into());

    gemini(&llm)
        .complete(&request("initial", "to gemini"))
        .await
        .unwrap();
    openai(&llm)
        .complete(&request("repair", "to openai"))
        .await
        .unwrap();
    anthropic(&llm).complete(&with_system).await.unwrap();

    assert_eq!(llm.prompts(), ["to gemini", "to openai", "to anthropic"]);
    let requests = llm.requests();
    let stages: Vec<_> = requests
        .iter()
        .map(|r| r.stage.as_deref().unwrap())
        .collect();
    assert_eq!(stages, ["initial", "repair", "audit"]);
    assert_eq!(requests[2].system().as_deref(), Some("be brief"));
    assert_eq!(requests[0].model().as_deref(), Some("gemini-2.5-flash"));
}

#[tokio::test]
#[should_panic(expected = "unused reply")]
async fn a_reply_left_unused_fails_the_test() {
    let llm = ScriptedLlm::start();
    llm.reply_text("nobody asks for this");
}

#[tokio::test]
#[should_panic(expected = "unexpected request: POST /v1/messages (stage initial)")]
async fn a_request_with_nothing_queued_gets_a_500_and_fails_the_test() {
    let llm = ScriptedLlm::start();
    let mut config = config(ProviderKind::Anthropic, llm.base_url());
    config.max_retries = 0;
    let error = ask(provider(config).unwrap().as_ref()).await.unwrap_err();

    assert!(
        matches!(&error, LlmError::Server { status: 500, message, .. } if message.contains(NO_REPLY_QUEUED)),
        "{error:?}"
    );
    llm.assert_done();
}

#[test]
fn the_scripted_server_answers_plain_threads_without_a_runtime() {
    use std::io::{Read, Write};

    let llm = ScriptedLlm::start();
    llm.reply_text("hello");
    let body = r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#;
    let address = llm.base_url().trim_start_matches("http://").to_owned();
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    write!(
        stream,
        "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
         X-Autofix-Stage: edit\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();

    assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
    assert!(answer.contains(r#""text":"hello""#), "{answer}");
    assert_eq!(llm.prompts(), ["hi"]);
}
