//! Reading a model's strict-JSON answer: one object, at most one code fence around it, nothing
//! else; then typed fields, each refusal one sentence naming the field (`"risk" must be …`).

use serde_json::{Map, Value};

use super::StageOutputError;
use crate::failure::Stage;

/// How much of a stray text or a wrong value an error message quotes.
const QUOTE_CHARS: usize = 40;

/// The answer's single JSON object, or why the text is not exactly that.
pub(super) fn object(stage: Stage, text: &str) -> Result<Map<String, Value>, StageOutputError> {
    let fail = |message: String| StageOutputError::new(stage, message);
    let json = strip_one_fence(stage, text.trim())?;
    if json.is_empty() {
        return Err(fail(
            "the answer is empty; it must be one JSON object".into(),
        ));
    }
    if !json.starts_with('{') {
        return Err(fail(format!(
            "the answer must be one JSON object and nothing else (one code fence allowed), but \
             it starts with {}",
            quote_text(json)
        )));
    }
    let mut stream = serde_json::Deserializer::from_str(json).into_iter::<Map<String, Value>>();
    let object = match stream.next() {
        Some(Ok(object)) => object,
        Some(Err(error)) => return Err(fail(format!("the answer is not valid JSON: {error}"))),
        None => {
            return Err(fail(
                "the answer is empty; it must be one JSON object".into(),
            ));
        }
    };
    let rest = json[stream.byte_offset()..].trim();
    if !rest.is_empty() {
        return Err(fail(format!(
            "the answer must be one JSON object and nothing else, but text follows it: {}",
            quote_text(rest)
        )));
    }
    Ok(object)
}

/// Removes one ```json or ``` fence wrapping the whole text, if there is one.
fn strip_one_fence(stage: Stage, text: &str) -> Result<&str, StageOutputError> {
    let fail = |message: String| StageOutputError::new(stage, message);
    let Some(rest) = text.strip_prefix("```") else {
        return Ok(text);
    };
    let (info, body) = rest.split_once('\n').unwrap_or((rest, ""));
    let info = info.trim();
    if !info.is_empty() && !info.eq_ignore_ascii_case("json") {
        return Err(fail(format!(
            "the answer's code fence is marked {}; only ```json or ``` is accepted",
            quote_text(info)
        )));
    }
    // JSON strings cannot hold a raw newline, so the first line ending in ``` closes the fence.
    let mut offset = 0;
    for line in body.split_inclusive('\n') {
        let end = offset + line.trim_end().len();
        offset += line.len();
        if let Some(inner) = body[..end].strip_suffix("```") {
            let after = body[offset..].trim();
            if !after.is_empty() {
                return Err(fail(format!(
                    "the answer must be one JSON object and nothing else, but text follows its \
                     code fence: {}",
                    quote_text(after)
                )));
            }
            return Ok(inner.trim());
        }
    }
    Err(fail(
        "the code fence around the answer is never closed".to_string(),
    ))
}

/// The fields of one JSON object, named in messages as `"prefix.key"`.
pub(super) struct Fields<'a> {
    stage: Stage,
    object: &'a Map<String, Value>,
    prefix: String,
}

impl<'a> Fields<'a> {
    pub(super) fn new(stage: Stage, object: &'a Map<String, Value>) -> Self {
        Fields {
            stage,
            object,
            prefix: String::new(),
        }
    }

    /// The fields of the object at `value`, which is `name` (e.g. `file_changes[0]`).
    pub(super) fn nested(
        &self,
        name: &str,
        value: &'a Value,
    ) -> Result<Fields<'a>, StageOutputError> {
        match value {
            Value::Object(object) => Ok(Fields {
                stage: self.stage,
                object,
                prefix: format!("{name}."),
            }),
            other => Err(self.error(format!(
                "\"{name}\" must be an object, not {}",
                describe(other)
            ))),
        }
    }

    /// The field's name as messages show it: `"risk"`, `"file_changes[0].path"`.
    pub(super) fn name(&self, key: &str) -> String {
        format!("\"{}{key}\"", self.prefix)
    }

    /// The field's path without quotes, to build names of its items.
    fn path(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    pub(super) fn error(&self, message: String) -> StageOutputError {
        StageOutputError::new(self.stage, message)
    }

    /// The value, or none when the field is absent or `null`, for checks of the caller's own.
    pub(super) fn optional(&self, key: &str) -> Option<&'a Value> {
        self.object.get(key).filter(|value| !value.is_null())
    }

    fn required(&self, key: &str) -> Result<&'a Value, StageOutputError> {
        match self.object.get(key) {
            None => Err(self.error(format!("{} is missing", self.name(key)))),
            Some(value) => Ok(value),
        }
    }

    fn wrong(&self, key: &str, expected: &str, value: &Value) -> StageOutputError {
        self.error(format!(
            "{} must be {expected}, not {}",
            self.name(key),
            describe(value)
        ))
    }

    pub(super) fn bool(&self, key: &str) -> Result<bool, StageOutputError> {
        let value = self.required(key)?;
        value
            .as_bool()
            .ok_or_else(|| self.wrong(key, "true or false", value))
    }

    pub(super) fn string(&self, key: &str) -> Result<String, StageOutputError> {
        let value = self.required(key)?;
        value
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| self.wrong(key, "a string", value))
    }

    /// A string that must hold more than whitespace; returned trimmed.
    pub(super) fn text(&self, key: &str) -> Result<String, StageOutputError> {
        let text = self.string(key)?;
        if text.trim().is_empty() {
            return Err(self.error(format!("{} must not be empty", self.name(key))));
        }
        Ok(text.trim().to_string())
    }

    /// A string when present; absent and `null` are `None`.
    pub(super) fn optional_string(&self, key: &str) -> Result<Option<String>, StageOutputError> {
        match self.optional(key) {
            None => Ok(None),
            Some(value) => value
                .as_str()
                .map(|text| Some(text.to_string()))
                .ok_or_else(|| self.wrong(key, "a string", value)),
        }
    }

    pub(super) fn list(&self, key: &str) -> Result<&'a Vec<Value>, StageOutputError> {
        let value = self.required(key)?;
        value
            .as_array()
            .ok_or_else(|| self.wrong(key, "a list", value))
    }

    /// A list whose items are strings with more than whitespace, trimmed.
    pub(super) fn texts(&self, key: &str) -> Result<Vec<String>, StageOutputError> {
        let value = self.required(key)?;
        let items = value
            .as_array()
            .ok_or_else(|| self.wrong(key, "a list of strings", value))?;
        items
            .iter()
            .enumerate()
            .map(|(index, item)| {
                let name = format!("\"{}[{index}]\"", self.path(key));
                match item.as_str() {
                    Some(text) if !text.trim().is_empty() => Ok(text.trim().to_string()),
                    Some(_) => Err(self.error(format!("{name} must not be empty"))),
                    None => {
                        Err(self.error(format!("{name} must be a string, not {}", describe(item))))
                    }
                }
            })
            .collect()
    }

    /// [`texts`](Self::texts) for a field that only explains: absent or `null` is empty.
    pub(super) fn optional_texts(&self, key: &str) -> Result<Vec<String>, StageOutputError> {
        match self.optional(key) {
            None => Ok(Vec::new()),
            Some(_) => self.texts(key),
        }
    }

    /// [`one_of`](Self::one_of) for a field that only explains: absent or `null` is `default`.
    pub(super) fn optional_one_of<T: Copy>(
        &self,
        key: &str,
        choices: &[(&str, T)],
        default: T,
    ) -> Result<T, StageOutputError> {
        match self.optional(key) {
            None => Ok(default),
            Some(_) => self.one_of(key, choices),
        }
    }

    /// One of `choices`, compared without regard to case; a refusal lists them all.
    pub(super) fn one_of<T: Copy>(
        &self,
        key: &str,
        choices: &[(&str, T)],
    ) -> Result<T, StageOutputError> {
        let value = self.required(key)?;
        let names: Vec<&str> = choices.iter().map(|(name, _)| *name).collect();
        let expected = format!("one of {}", names.join(", "));
        let text = value
            .as_str()
            .ok_or_else(|| self.wrong(key, &expected, value))?;
        choices
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(text.trim()))
            .map(|(_, choice)| *choice)
            .ok_or_else(|| self.wrong(key, &expected, value))
    }
}

/// A value as messages quote it: compact JSON, shortened.
pub(super) fn describe(value: &Value) -> String {
    shorten(&value.to_string())
}

/// A piece of prose as messages quote it: its first line, shortened, in quotes.
fn quote_text(text: &str) -> String {
    let first_line = text.lines().next().unwrap_or_default().trim();
    format!("{:?}", shorten(first_line))
}

fn shorten(text: &str) -> String {
    if text.chars().count() <= QUOTE_CHARS {
        return text.to_string();
    }
    let short: String = text.chars().take(QUOTE_CHARS).collect();
    format!("{short}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> String {
        object(Stage::Triage, text).unwrap_err().to_string()
    }

    #[test]
    fn a_bare_object_and_a_fenced_one_are_both_read() {
        assert_eq!(object(Stage::Triage, "{\"a\": 1}").unwrap()["a"], 1);
        assert_eq!(
            object(Stage::Triage, "```json\n{\"a\": 1}\n```").unwrap()["a"],
            1
        );
        assert_eq!(
            object(Stage::Triage, "```\n{\"a\": 1}\n```\n").unwrap()["a"],
            1
        );
        assert_eq!(
            object(Stage::Triage, "```JSON\n{\"a\": 1}```").unwrap()["a"],
            1
        );
    }

    #[test]
    fn prose_before_the_object_is_refused_with_a_quote_of_it() {
        assert_eq!(
            error("Sure! Here is the triage:\n{\"a\": 1}"),
            "triage: the answer must be one JSON object and nothing else (one code fence \
             allowed), but it starts with \"Sure! Here is the triage:\""
        );
    }

    #[test]
    fn prose_after_the_object_is_refused() {
        assert_eq!(
            error("{\"a\": 1}\nHope this helps!"),
            "triage: the answer must be one JSON object and nothing else, but text follows it: \
             \"Hope this helps!\""
        );
    }

    #[test]
    fn prose_around_a_fence_is_refused() {
        assert!(error("Here:\n```json\n{\"a\": 1}\n```").contains("it starts with \"Here:\""));
        assert_eq!(
            error("```json\n{\"a\": 1}\n```\nDone."),
            "triage: the answer must be one JSON object and nothing else, but text follows its \
             code fence: \"Done.\""
        );
    }

    #[test]
    fn a_fence_of_another_language_or_left_open_is_refused() {
        assert_eq!(
            error("```python\n{\"a\": 1}\n```"),
            "triage: the answer's code fence is marked \"python\"; only ```json or ``` is accepted"
        );
        assert_eq!(
            error("```json\n{\"a\": 1}"),
            "triage: the code fence around the answer is never closed"
        );
    }

    #[test]
    fn invalid_json_and_empty_answers_are_refused() {
        assert_eq!(
            error("{\"a\": 1,}"),
            "triage: the answer is not valid JSON: trailing comma at line 1 column 9"
        );
        assert_eq!(
            error("   "),
            "triage: the answer is empty; it must be one JSON object"
        );
        assert!(error("[1, 2]").contains("it starts with \"[1, 2]\""));
    }

    #[test]
    fn long_values_are_shortened_in_messages() {
        let long = Value::String("x".repeat(100));
        let shown = describe(&long);
        assert_eq!(shown.chars().count(), QUOTE_CHARS + 1);
        assert!(shown.ends_with('…'));
    }
}
