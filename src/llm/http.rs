//! The HTTP exchange every vendor shares: one JSON POST with auth and stage headers, the status
//! mapped onto `LlmError`, the body checked to be JSON of the vendor's shape, retries around it.

use std::time::Duration;

use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use reqwest::{StatusCode, Url};
use secrecy::{ExposeSecret, SecretString};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::retry::{self, Failure, RetryPolicy};
use super::{
    LlmError, LlmProvider, LlmRequest, LlmResponse, ProviderConfig, ProviderKind, SchemaForm,
};

/// How long an idle connection is kept for reuse: below the keep-alive of common model servers
/// (uvicorn closes after 5 s), so a request never goes out on a connection the server is closing.
const IDLE_CONNECTION_LIFETIME: Duration = Duration::from_secs(2);

/// How much of an unexpected body goes into an error message.
const SNIPPET_CHARS: usize = 200;

/// What differs between vendors: where to POST, which headers, the body, and how to read replies.
pub(crate) trait Vendor: Send + Sync + 'static {
    const KIND: ProviderKind;
    /// Name of the API the success body must match, for error messages.
    const REPLY_NAME: &'static str;
    /// A success body, decoded by serde; the shape check happens there.
    type Reply: DeserializeOwned;

    /// Path segments appended to the base URL.
    fn endpoint_segments(&self, model: &str) -> Vec<String>;
    /// Authentication (and version) headers. `api_key` is never empty here.
    fn auth_headers(&self, api_key: &SecretString) -> Result<HeaderMap, LlmError>;
    /// The body, with `request.schema` (if any) sent in `form`.
    fn request_body(
        &self,
        model: &str,
        endpoint: &Url,
        request: &LlmRequest,
        form: SchemaForm,
    ) -> Value;
    /// The weaker form to try when a server refuses `form`; `None` when none is left.
    fn weaker(form: SchemaForm) -> Option<SchemaForm> {
        match form {
            SchemaForm::Strict => Some(SchemaForm::Loose),
            SchemaForm::Loose => Some(SchemaForm::None),
            SchemaForm::None => None,
        }
    }
    fn read_reply(&self, reply: Self::Reply) -> Result<ReadReply, ReplyProblem>;
    /// What an error body says, in the vendor's own error format.
    fn error_details(&self, body: &Value) -> ErrorDetails;
    /// Path segments of the vendor's model listing, appended to the base URL.
    fn models_segments(&self) -> Vec<String>;
    /// The model names a listing's body holds, as a request names them; `None` when the body
    /// is not a listing.
    fn model_names(&self, body: &Value) -> Option<Vec<String>>;
}

/// A success body turned into text and accounting; `raw_json` is added by the caller.
pub(crate) struct ReadReply {
    pub text: String,
    pub usage: super::TokenUsage,
    pub model: Option<String>,
    pub finish_reason: Option<String>,
}

/// Why a JSON success body gives no answer.
pub(crate) enum ReplyProblem {
    /// The body is well formed but holds no text; the string is the reason.
    Empty(String),
    /// The body is JSON but not the vendor's shape.
    Shape(String),
}

#[derive(Debug, Default)]
pub(crate) struct ErrorDetails {
    pub message: Option<String>,
    pub context_too_long: bool,
    /// A wait the body asks for (Gemini puts it in `RetryInfo`, not in a header).
    pub retry_delay: Option<Duration>,
    /// The body says the server does not know the response format asked for. llama.cpp's
    /// Python server says so with HTTP 500, which is then not a server fault worth a retry.
    pub refuses_response_format: bool,
}

/// Builds a header value that holds a secret: marked sensitive so hyper and `Debug` hide it.
pub(crate) fn secret_header(value: &str) -> Result<HeaderValue, LlmError> {
    let mut header = HeaderValue::from_str(value).map_err(|_| {
        LlmError::Config(
            "the API key holds characters that cannot be sent in an HTTP header \
             (a line break or a non-ASCII character?)"
                .into(),
        )
    })?;
    header.set_sensitive(true);
    Ok(header)
}

/// The `error.message`-like text of an error body in the shapes servers commonly use.
pub(crate) fn common_error_message(body: &Value) -> Option<String> {
    let error = body.get("error");
    error
        .and_then(|e| e.get("message"))
        .or_else(|| error.filter(|e| e.is_string()))
        .or_else(|| body.get("message"))
        .or_else(|| body.get("detail"))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// The `id` of every entry of a listing's `data` array (OpenAI's and Anthropic's shape).
pub(crate) fn ids_of(data: &Value) -> Option<Vec<String>> {
    data.as_array()?
        .iter()
        .map(|entry| entry.get("id")?.as_str().map(str::to_owned))
        .collect()
}

pub(crate) struct HttpProvider<V> {
    vendor: V,
    client: reqwest::Client,
    endpoint: Url,
    /// Where the vendor lists the models the key may use.
    models_endpoint: Url,
    model: String,
    api_key: SecretString,
    request_timeout: Duration,
    retry: RetryPolicy,
    /// The strongest schema form this server has not refused, remembered for the process.
    schema_form: std::sync::Mutex<SchemaForm>,
}

impl<V: Vendor> HttpProvider<V> {
    pub fn boxed(vendor: V, config: ProviderConfig) -> Result<Box<dyn LlmProvider>, LlmError> {
        let model = config.model.trim().to_owned();
        if model.is_empty() {
            return Err(LlmError::Config(format!(
                "no model is configured for the {} provider",
                V::KIND
            )));
        }
        let base = parse_base_url(&config.base_url)?;
        let segments = vendor.endpoint_segments(&model);
        let endpoint = join_path(&base, &segments);
        let models_endpoint = join_path(&base, &vendor.models_segments());
        let client = reqwest::Client::builder()
            .timeout(config.request_timeout)
            .pool_idle_timeout(IDLE_CONNECTION_LIFETIME)
            .user_agent(concat!("autofix/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|err| {
                LlmError::Config(format!(
                    "cannot build the HTTP client: {}",
                    error_chain(&err)
                ))
            })?;
        Ok(Box::new(HttpProvider {
            vendor,
            client,
            endpoint,
            models_endpoint,
            model,
            api_key: config.api_key,
            request_timeout: config.request_timeout,
            retry: RetryPolicy {
                max_retries: config.max_retries,
                initial_backoff: config.initial_backoff,
                max_backoff: config.max_backoff,
            },
            schema_form: std::sync::Mutex::new(SchemaForm::Strict),
        }))
    }

    fn schema_form(&self) -> SchemaForm {
        *self
            .schema_form
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// After a server refused `refused`: the next weaker form, kept for every later request.
    fn weaken(&self, refused: SchemaForm, error: &LlmError) -> Option<SchemaForm> {
        let weaker = V::weaker(refused)?;
        let mut form = self
            .schema_form
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if *form == refused {
            *form = weaker;
            tracing::warn!(
                provider = %V::KIND,
                refused = ?refused,
                now = ?weaker,
                %error,
                "the LLM server refused the response schema; asking in a weaker form from now on"
            );
        }
        Some(*form)
    }

    async fn exchange(
        &self,
        request: &LlmRequest,
        form: SchemaForm,
    ) -> Result<LlmResponse, Failure> {
        let headers = self.headers_for(request)?;
        let body = self
            .vendor
            .request_body(&self.model, &self.endpoint, request, form);
        tracing::debug!(provider = %V::KIND, stage = %request.stage, "calling the LLM");
        let response = self
            .client
            .post(self.endpoint.clone())
            .headers(headers)
            .json(&body)
            .send()
            .await
            .map_err(|err| self.transport_error(err))?;
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = response
            .bytes()
            .await
            .map_err(|err| self.transport_error(err))?;
        let raw_body = String::from_utf8_lossy(&bytes).into_owned();
        if status.is_success() {
            Ok(self.read_success(status, &headers, raw_body)?)
        } else {
            Err(self.read_failure(status, &headers, raw_body))
        }
    }

    fn headers_for(&self, request: &LlmRequest) -> Result<HeaderMap, LlmError> {
        let mut headers = if self.api_key.expose_secret().is_empty() {
            HeaderMap::new()
        } else {
            self.vendor.auth_headers(&self.api_key)?
        };
        let stage = HeaderValue::from_str(&request.stage).map_err(|_| {
            LlmError::Config(format!(
                "the stage name {:?} cannot be sent in the {} header",
                request.stage,
                super::STAGE_HEADER
            ))
        })?;
        headers.insert(HeaderName::from_static("x-autofix-stage"), stage);
        if let Some(candidate) = request.candidate {
            headers.insert(
                HeaderName::from_static("x-autofix-candidate"),
                HeaderValue::from(candidate),
            );
        }
        Ok(headers)
    }

    fn read_success(
        &self,
        status: StatusCode,
        headers: &HeaderMap,
        raw_body: String,
    ) -> Result<LlmResponse, LlmError> {
        let invalid = |what: String, raw_body: String| LlmError::InvalidResponse {
            message: format!(
                "{} answered HTTP {} with {what} (content-type: {}): {}",
                V::KIND,
                status.as_u16(),
                content_type(headers),
                snippet(&raw_body)
            ),
            raw_body,
        };
        let json: Value = match serde_json::from_str(&raw_body) {
            Ok(json) => json,
            Err(_) => return Err(invalid("a body that is not JSON".into(), raw_body)),
        };
        if !json.is_object() {
            let what = format!("JSON that is not a {} (not an object)", V::REPLY_NAME);
            return Err(invalid(what, raw_body));
        }
        let reply: V::Reply = match serde_json::from_value(json) {
            Ok(reply) => reply,
            Err(err) => {
                let what = format!("JSON that is not a {} ({err})", V::REPLY_NAME);
                return Err(invalid(what, raw_body));
            }
        };
        match self.vendor.read_reply(reply) {
            Ok(read) => Ok(LlmResponse {
                text: read.text,
                raw_json: raw_body,
                usage: read.usage,
                model: read.model,
                finish_reason: read.finish_reason,
            }),
            Err(ReplyProblem::Empty(finish_reason)) => Err(LlmError::EmptyResponse {
                finish_reason,
                raw_body,
            }),
            Err(ReplyProblem::Shape(what)) => {
                let what = format!("JSON that is not a {} ({what})", V::REPLY_NAME);
                Err(invalid(what, raw_body))
            }
        }
    }

    fn read_failure(&self, status: StatusCode, headers: &HeaderMap, raw_body: String) -> Failure {
        let details = serde_json::from_str::<Value>(&raw_body)
            .map(|json| self.vendor.error_details(&json))
            .unwrap_or_default();
        let message = details.message.unwrap_or_else(|| {
            format!(
                "(content-type: {}) {}",
                content_type(headers),
                snippet(&raw_body)
            )
        });
        let requested_wait = retry::requested_wait(headers).or(details.retry_delay);
        let code = status.as_u16();
        let error = match code {
            401 | 403 => LlmError::Unauthorized {
                status: code,
                message,
                raw_body,
            },
            429 => LlmError::RateLimited {
                status: code,
                message,
                retry_after: requested_wait,
                raw_body,
            },
            500..=599 if details.refuses_response_format => LlmError::BadRequest {
                status: code,
                message,
                raw_body,
            },
            500..=599 => LlmError::Server {
                status: code,
                message,
                raw_body,
            },
            // 413 is the byte-size form of the same problem: the caller must shrink the prompt.
            413 => LlmError::ContextTooLong { message, raw_body },
            400..=499 if details.context_too_long => LlmError::ContextTooLong { message, raw_body },
            400..=499 => LlmError::BadRequest {
                status: code,
                message,
                raw_body,
            },
            _ => LlmError::InvalidResponse {
                message: format!("{} answered with HTTP {code}: {message}", V::KIND),
                raw_body,
            },
        };
        Failure {
            error,
            requested_wait,
        }
    }

    /// Never includes headers; the URL is shown without any user-info it may carry.
    fn transport_error(&self, err: reqwest::Error) -> LlmError {
        self.transport_error_at("POST", &self.endpoint, err)
    }

    fn transport_error_at(&self, method: &str, url: &Url, err: reqwest::Error) -> LlmError {
        if err.is_timeout() {
            return LlmError::Timeout(self.request_timeout);
        }
        LlmError::Transport(format!(
            "{method} {}: {}",
            displayable(url),
            error_chain(&err.without_url())
        ))
    }

    /// One GET of the vendor's model listing, without retries: what the key may use, or the
    /// vendor's own words on why not.
    async fn list_models(&self) -> Result<Vec<String>, LlmError> {
        let headers = if self.api_key.expose_secret().is_empty() {
            HeaderMap::new()
        } else {
            self.vendor.auth_headers(&self.api_key)?
        };
        let url = &self.models_endpoint;
        let at = |err| self.transport_error_at("GET", url, err);
        let response = self
            .client
            .get(url.clone())
            .headers(headers)
            .send()
            .await
            .map_err(at)?;
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = response.bytes().await.map_err(at)?;
        let raw_body = String::from_utf8_lossy(&bytes).into_owned();
        if !status.is_success() {
            return Err(self.read_failure(status, &headers, raw_body).error);
        }
        serde_json::from_str::<Value>(&raw_body)
            .ok()
            .and_then(|body| self.vendor.model_names(&body))
            .ok_or_else(|| LlmError::InvalidResponse {
                message: format!(
                    "GET {} is not a model listing: {}",
                    displayable(url),
                    snippet(&raw_body)
                ),
                raw_body,
            })
    }
}

#[async_trait::async_trait]
impl<V: Vendor> LlmProvider for HttpProvider<V> {
    fn describe(&self) -> String {
        format!("{} {}", V::KIND, self.model)
    }

    fn model(&self) -> &str {
        &self.model
    }

    async fn models(&self) -> Result<Vec<String>, LlmError> {
        self.list_models().await
    }

    /// With a schema, a request the server refuses (HTTP 400 or 422, or a 5xx that says it does
    /// not know the response format) is sent again with the schema in a weaker form, down to
    /// none; the form that worked is kept for later requests.
    async fn complete(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        let label = self.describe();
        let mut form = self.schema_form();
        loop {
            let result = self
                .retry
                .run(&label, || self.exchange(request, form))
                .await;
            match result {
                Err(
                    error @ LlmError::BadRequest {
                        status: 400 | 422 | 500..=599,
                        ..
                    },
                ) if request.schema.is_some() && form != SchemaForm::None => {
                    match self.weaken(form, &error) {
                        Some(weaker) => form = weaker,
                        None => return Err(error),
                    }
                }
                other => return other,
            }
        }
    }
}

fn parse_base_url(raw: &str) -> Result<Url, LlmError> {
    let trimmed = raw.trim().trim_end_matches('/');
    let bad = |why: &str| {
        LlmError::Config(format!(
            "the LLM base URL {raw:?} is not usable: {why} (expected e.g. \
             https://api.openai.com/v1 or http://127.0.0.1:11434/v1)"
        ))
    };
    let url = Url::parse(trimmed).map_err(|err| bad(&err.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad("only http and https are supported"));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(bad("it must not carry a query or a fragment"));
    }
    Ok(url)
}

/// Appends path segments, percent-encoding each (a model name could hold `/` or `?`).
fn join_path(base: &Url, segments: &[String]) -> Url {
    let mut url = base.clone();
    url.path_segments_mut()
        .expect("http(s) URLs always have a path")
        .pop_if_empty()
        .extend(segments);
    url
}

fn displayable(url: &Url) -> Url {
    let mut shown = url.clone();
    // Both only fail for URLs without a host, which http(s) URLs always have.
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown
}

/// The error and its causes, so "connection refused" is not hidden behind "error sending request".
pub(crate) fn error_chain(err: &dyn std::error::Error) -> String {
    let mut parts: Vec<String> = vec![err.to_string()];
    let mut source = err.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if parts.last() != Some(&text) {
            parts.push(text);
        }
        source = cause.source();
    }
    parts.join(": ")
}

fn content_type(headers: &HeaderMap) -> &str {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("none")
}

/// The start of a body on one line, for error messages.
fn snippet(body: &str) -> String {
    let flat = body.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.is_empty() {
        return "<empty body>".into();
    }
    match flat.char_indices().nth(SNIPPET_CHARS) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Why `raw` is refused as a base URL.
    fn refusal(raw: &str) -> String {
        parse_base_url(raw).unwrap_err().to_string()
    }

    #[test]
    fn trailing_slashes_on_the_base_url_are_ignored() {
        let base = parse_base_url("http://127.0.0.1:8080/v1//").unwrap();
        let joined = join_path(&base, &["chat".into(), "completions".into()]);
        assert_eq!(joined.as_str(), "http://127.0.0.1:8080/v1/chat/completions");
    }

    #[test]
    fn a_root_base_url_gets_the_path_appended() {
        let base = parse_base_url("https://generativelanguage.googleapis.com/").unwrap();
        let joined = join_path(&base, &["v1beta".into(), "models".into(), "m:x".into()]);
        assert_eq!(
            joined.as_str(),
            "https://generativelanguage.googleapis.com/v1beta/models/m:x"
        );
    }

    #[test]
    fn a_model_name_cannot_escape_its_path_segment() {
        let base = parse_base_url("http://h").unwrap();
        let joined = join_path(&base, &["a/b?c".into()]);
        assert_eq!(joined.as_str(), "http://h/a%2Fb%3Fc");
    }

    #[test]
    fn base_urls_that_cannot_work_are_refused_with_the_reason() {
        let err = refusal("api.openai.com/v1");
        assert!(err.contains("\"api.openai.com/v1\""), "{err}");
        assert!(err.contains("relative URL without a base"), "{err}");
        let err = refusal("ftp://example.com");
        assert!(err.contains("only http and https"), "{err}");
        let err = refusal("http://example.com/v1?key=x");
        assert!(err.contains("query"), "{err}");
        assert!(parse_base_url("").is_err());
    }

    #[test]
    fn snippets_are_one_line_and_cut_at_a_character_boundary() {
        assert_eq!(
            snippet("<html>\n  <body>x</body>\n</html>"),
            "<html> <body>x</body> </html>"
        );
        assert_eq!(snippet(" \n"), "<empty body>");
        let long = "é".repeat(300);
        let cut = snippet(&long);
        assert_eq!(cut.chars().count(), SNIPPET_CHARS + 1);
        assert!(cut.ends_with('…'));
    }

    #[test]
    fn user_info_in_a_url_is_not_shown() {
        let url = Url::parse("https://user:pw@example.com/v1").unwrap();
        assert_eq!(displayable(&url).as_str(), "https://example.com/v1");
    }

    #[test]
    fn common_error_messages_are_found_in_the_usual_places() {
        let json = |s: &str| serde_json::from_str::<Value>(s).unwrap();
        assert_eq!(
            common_error_message(&json(r#"{"error":{"message":"m"}}"#)).as_deref(),
            Some("m")
        );
        assert_eq!(
            common_error_message(&json(r#"{"error":"plain"}"#)).as_deref(),
            Some("plain")
        );
        assert_eq!(
            common_error_message(&json(r#"{"detail":"Not Found"}"#)).as_deref(),
            Some("Not Found")
        );
        assert_eq!(common_error_message(&json("[1]")), None);
    }
}
