//! Named access into a read payload by dotted path, so every missing or mistyped field of a
//! delivery is reported by its path.

use super::WebhookParseError;
use super::payload::Node;

/// Named access into a payload, so every missing or mistyped field is reported by its path.
pub(crate) struct Fields<'a> {
    root: &'a Node<'a>,
}

impl<'a> Fields<'a> {
    pub(crate) fn new(root: &'a Node<'a>) -> Self {
        Fields { root }
    }

    /// The value at a dotted path; `None` when it or a parent is absent or null.
    pub(crate) fn optional(&self, path: &str) -> Result<Option<&'a Node<'a>>, WebhookParseError> {
        let mut current = self.root;
        let mut walked = String::new();
        for key in path.split('.') {
            if !walked.is_empty() {
                if !matches!(current, Node::Object(_)) {
                    return Err(wrong_type(&walked, "an object", current));
                }
                walked.push('.');
            }
            walked.push_str(key);
            match current.get(key) {
                None | Some(Node::Null) => return Ok(None),
                Some(next) => current = next,
            }
        }
        Ok(Some(current))
    }

    pub(crate) fn required(&self, path: &str) -> Result<&'a Node<'a>, WebhookParseError> {
        self.optional(path)?
            .ok_or_else(|| WebhookParseError::MissingField {
                field: path.to_owned(),
            })
    }

    pub(crate) fn str(&self, path: &str) -> Result<&'a str, WebhookParseError> {
        let value = self.required(path)?;
        value
            .as_str()
            .ok_or_else(|| wrong_type(path, "a string", value))
    }

    pub(crate) fn optional_str(&self, path: &str) -> Result<Option<&'a str>, WebhookParseError> {
        match self.optional(path)? {
            None => Ok(None),
            Some(value) => value
                .as_str()
                .map(Some)
                .ok_or_else(|| wrong_type(path, "a string", value)),
        }
    }

    pub(crate) fn u64(&self, path: &str) -> Result<u64, WebhookParseError> {
        match self.required(path)? {
            Node::Number {
                unsigned: Some(number),
            } => Ok(*number),
            other => Err(wrong_type(path, "a non-negative integer", other)),
        }
    }

    /// A non-negative integer that may be absent or null, such as a line number.
    pub(crate) fn optional_u64(&self, path: &str) -> Result<Option<u64>, WebhookParseError> {
        match self.optional(path)? {
            None => Ok(None),
            Some(Node::Number {
                unsigned: Some(number),
            }) => Ok(Some(*number)),
            Some(other) => Err(wrong_type(path, "a non-negative integer", other)),
        }
    }

    /// The `key` of the first object in the array at `path`, e.g. the first pull request's
    /// number; `None` when the array is empty.
    pub(crate) fn first_u64(
        &self,
        path: &str,
        key: &str,
    ) -> Result<Option<u64>, WebhookParseError> {
        let value = self.required(path)?;
        let Node::Array(items) = value else {
            return Err(wrong_type(path, "an array", value));
        };
        items
            .first()
            .map(|item| {
                Fields::new(item)
                    .u64(key)
                    .map_err(|error| error.under(&format!("{path}[0]")))
            })
            .transpose()
    }

    pub(crate) fn bool(&self, path: &str) -> Result<bool, WebhookParseError> {
        match self.required(path)? {
            Node::Bool(value) => Ok(*value),
            other => Err(wrong_type(path, "a boolean", other)),
        }
    }

    pub(crate) fn optional_bool(&self, path: &str) -> Result<Option<bool>, WebhookParseError> {
        match self.optional(path)? {
            None => Ok(None),
            Some(Node::Bool(value)) => Ok(Some(*value)),
            Some(other) => Err(wrong_type(path, "a boolean", other)),
        }
    }

    /// The `name_key` of every object in the array at `path`, e.g. each label's name.
    pub(crate) fn names(
        &self,
        path: &str,
        name_key: &str,
    ) -> Result<Vec<String>, WebhookParseError> {
        let value = self.required(path)?;
        let Node::Array(items) = value else {
            return Err(wrong_type(path, "an array", value));
        };
        items
            .iter()
            .enumerate()
            .map(|(index, item)| {
                let item_path = format!("{path}[{index}]");
                Fields::new(item)
                    .str(name_key)
                    .map(str::to_owned)
                    .map_err(|error| error.under(&item_path))
            })
            .collect()
    }
}

impl WebhookParseError {
    /// Re-roots a field error found inside a nested value at that value's own path.
    fn under(self, prefix: &str) -> Self {
        match self {
            WebhookParseError::MissingField { field } => WebhookParseError::MissingField {
                field: format!("{prefix}.{field}"),
            },
            WebhookParseError::WrongType {
                field,
                expected,
                found,
            } => WebhookParseError::WrongType {
                field: format!("{prefix}.{field}"),
                expected,
                found,
            },
            other => other,
        }
    }
}

fn wrong_type(path: &str, expected: &'static str, found: &Node<'_>) -> WebhookParseError {
    WebhookParseError::WrongType {
        field: path.to_owned(),
        expected,
        found: found.kind(),
    }
}
