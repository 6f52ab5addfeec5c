//! Leaf values and the JSON kind their type gives them: what the tree stores, what paths
//! key lists by and what the schema checks text into, so it sits below all three.

use std::sync::Arc;

use crate::ly::BaseType;

/// A leaf value in canonical form, with the JSON encoding its type gives it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Value {
    text: Arc<str>,
    kind: JsonKind,
}

impl Value {
    pub fn new(text: impl Into<Arc<str>>, kind: JsonKind) -> Value {
        Value {
            text: text.into(),
            kind,
        }
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub fn kind(&self) -> JsonKind {
        self.kind
    }
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// How a value of a leaf is written in RFC 7951 JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum JsonKind {
    /// A JSON number: integers of 32 bits or less.
    Number,
    /// A JSON string: everything else, including 64-bit integers and decimal64.
    String,
    Bool,
    /// `[null]`: the `empty` type.
    Empty,
}

impl JsonKind {
    pub(crate) fn of(base: BaseType) -> JsonKind {
        match base {
            BaseType::Uint8
            | BaseType::Uint16
            | BaseType::Uint32
            | BaseType::Int8
            | BaseType::Int16
            | BaseType::Int32 => JsonKind::Number,
            BaseType::Bool => JsonKind::Bool,
            BaseType::Empty => JsonKind::Empty,
            _ => JsonKind::String,
        }
    }
}
