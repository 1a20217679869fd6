//! Reading the wanted parts of a delivery that must be one JSON object: the keys and items an
//! edge names are kept, everything else is checked to be JSON and skipped, nesting bounded.

use std::borrow::Cow;
use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use super::{MAX_NESTING_DEPTH, WebhookParseError};

/// Which parts of a payload an edge reads: the keys kept at each level of an object, and what is
/// kept of each item of an array. Everything else is checked to be JSON and then skipped, so a
/// ~10 KB delivery costs a scan instead of a tree of maps and strings.
#[derive(Debug)]
pub(crate) struct Wanted {
    pub(crate) keys: &'static [(&'static str, Wanted)],
    pub(crate) items: Option<&'static Wanted>,
}

impl Wanted {
    /// A value read whole when it is a scalar; of an object or array only its kind is kept (as
    /// the root: a body checked to be a JSON object, nothing of it read).
    pub(crate) const VALUE: Wanted = Wanted {
        keys: &[],
        items: None,
    };

    fn key(&self, name: &str) -> Option<&(&'static str, Wanted)> {
        self.keys.iter().find(|(key, _)| *key == name)
    }
}

/// The wanted parts of a payload, borrowing its strings where they hold no escapes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node<'a> {
    Null,
    Bool(bool),
    /// Any JSON number; `unsigned` holds it when it is a non-negative integer.
    Number {
        unsigned: Option<u64>,
    },
    Str(Cow<'a, str>),
    /// The wanted items only (none when the items were not wanted).
    Array(Vec<Node<'a>>),
    /// The wanted keys only, in payload order; a repeated key's last value wins, as in serde_json.
    Object(Vec<(&'static str, Node<'a>)>),
}

impl<'a> Node<'a> {
    pub(super) fn get(&self, key: &str) -> Option<&Node<'a>> {
        match self {
            Node::Object(entries) => entries
                .iter()
                .rev()
                .find(|(name, _)| *name == key)
                .map(|(_, value)| value),
            _ => None,
        }
    }

    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Node::Str(text) => Some(text),
            _ => None,
        }
    }

    pub(super) fn kind(&self) -> &'static str {
        match self {
            Node::Null => "null",
            Node::Bool(_) => "boolean",
            Node::Number { .. } => "number",
            Node::Str(_) => "string",
            Node::Array(_) => "array",
            Node::Object(_) => "object",
        }
    }
}

/// Reads the `wanted` parts of a body that must be one JSON object. Nesting deeper than
/// [`MAX_NESTING_DEPTH`] is refused as it is met, before anything is allocated for it.
pub(crate) fn parse_object<'a>(
    body: &'a [u8],
    wanted: &'static Wanted,
) -> Result<Node<'a>, WebhookParseError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(WebhookParseError::EmptyBody);
    }
    // Checked whole up front because skipped strings are not decoded: a stored payload is text.
    let text = std::str::from_utf8(body).map_err(|error| WebhookParseError::NotJson {
        message: format!("invalid UTF-8 at byte {}", error.valid_up_to()),
    })?;
    let too_deep = Cell::new(false);
    let seed = Pick {
        wanted,
        depth: 1,
        too_deep: &too_deep,
    };
    let mut reader = serde_json::Deserializer::from_str(text);
    let node = seed
        .deserialize(&mut reader)
        .and_then(|node| reader.end().map(|()| node))
        .map_err(|error| {
            if too_deep.get() {
                WebhookParseError::TooDeep {
                    limit: MAX_NESTING_DEPTH,
                }
            } else {
                WebhookParseError::NotJson {
                    message: error.to_string(),
                }
            }
        })?;
    match node {
        Node::Object(_) => Ok(node),
        other => Err(WebhookParseError::NotAnObject {
            found: other.kind(),
        }),
    }
}

/// Reads one value at `depth` (the level an array or object here would open), keeping what
/// `wanted` names and skipping the rest.
#[derive(Clone, Copy)]
struct Pick<'s> {
    wanted: &'static Wanted,
    depth: usize,
    too_deep: &'s Cell<bool>,
}

impl Pick<'_> {
    fn enter<E: de::Error>(&self) -> Result<(), E> {
        if self.depth > MAX_NESTING_DEPTH {
            self.too_deep.set(true);
            return Err(E::custom("nesting too deep"));
        }
        Ok(())
    }

    fn skip(&self) -> Skip<'_> {
        Skip {
            depth: self.depth + 1,
            too_deep: self.too_deep,
        }
    }
}

impl<'de> DeserializeSeed<'de> for Pick<'_> {
    type Value = Node<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Node<'de>, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Pick<'_> {
    type Value = Node<'de>;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<Node<'de>, E> {
        Ok(Node::Null)
    }

    fn visit_none<E>(self) -> Result<Node<'de>, E> {
        Ok(Node::Null)
    }

    fn visit_bool<E>(self, value: bool) -> Result<Node<'de>, E> {
        Ok(Node::Bool(value))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Node<'de>, E> {
        Ok(Node::Number {
            unsigned: Some(value),
        })
    }

    fn visit_i64<E>(self, value: i64) -> Result<Node<'de>, E> {
        Ok(Node::Number {
            unsigned: u64::try_from(value).ok(),
        })
    }

    fn visit_f64<E>(self, _: f64) -> Result<Node<'de>, E> {
        Ok(Node::Number { unsigned: None })
    }

    fn visit_borrowed_str<E>(self, value: &'de str) -> Result<Node<'de>, E> {
        Ok(Node::Str(Cow::Borrowed(value)))
    }

    fn visit_str<E>(self, value: &str) -> Result<Node<'de>, E> {
        Ok(Node::Str(Cow::Owned(value.to_owned())))
    }

    fn visit_string<E>(self, value: String) -> Result<Node<'de>, E> {
        Ok(Node::Str(Cow::Owned(value)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node<'de>, A::Error> {
        self.enter()?;
        let mut items = Vec::new();
        match self.wanted.items {
            Some(wanted) => {
                let item = Pick {
                    wanted,
                    depth: self.depth + 1,
                    ..self
                };
                while let Some(node) = seq.next_element_seed(item)? {
                    items.push(node);
                }
            }
            None => while seq.next_element_seed(self.skip())?.is_some() {},
        }
        Ok(Node::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node<'de>, A::Error> {
        self.enter()?;
        let mut entries = Vec::with_capacity(self.wanted.keys.len());
        while let Some(key) = map.next_key_seed(WantedKey(self.wanted))? {
            match key {
                Some((name, wanted)) => {
                    let value = Pick {
                        wanted,
                        depth: self.depth + 1,
                        ..self
                    };
                    entries.push((*name, map.next_value_seed(value)?));
                }
                None => map.next_value_seed(self.skip())?,
            }
        }
        Ok(Node::Object(entries))
    }
}

/// An object key, matched against the wanted ones without being copied.
struct WantedKey(&'static Wanted);

impl<'de> DeserializeSeed<'de> for WantedKey {
    type Value = Option<&'static (&'static str, Wanted)>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for WantedKey {
    type Value = Option<&'static (&'static str, Wanted)>;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("an object key")
    }

    fn visit_str<E>(self, key: &str) -> Result<Self::Value, E> {
        Ok(self.0.key(key))
    }
}

/// Checks and skips one unwanted value, counting its nesting: serde_json's own skipping
/// (`IgnoredAny`) accepts any depth.
#[derive(Clone, Copy)]
struct Skip<'s> {
    depth: usize,
    too_deep: &'s Cell<bool>,
}

impl<'de> DeserializeSeed<'de> for Skip<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Skip<'_> {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.enter()?;
        let item = self.inner();
        while seq.next_element_seed(item)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.enter()?;
        let value = self.inner();
        while map.next_key::<de::IgnoredAny>()?.is_some() {
            map.next_value_seed(value)?;
        }
        Ok(())
    }
}

impl Skip<'_> {
    fn enter<E: de::Error>(&self) -> Result<(), E> {
        if self.depth > MAX_NESTING_DEPTH {
            self.too_deep.set(true);
            return Err(E::custom("nesting too deep"));
        }
        Ok(())
    }

    fn inner(&self) -> Self {
        Skip {
            depth: self.depth + 1,
            ..*self
        }
    }
}
