//! Data paths: a node of the schema plus the list keys (or leaf-list value) that pick one
//! instance, at every step. Written and read in libyang's XPath-like form:
//! `/ecofilter-balancer:ecofilter-balancer/flow[name='bgp']/match/dst-port`.

use std::fmt::Write;

use crate::schema::{NodeKind, Schema, SchemaId, ValueError};
use crate::{Error, Problem, Value};

/// One step of a data path.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Segment {
    pub node: SchemaId,
    /// For a list: its key values in key order (empty: every entry). For a leaf-list: the
    /// item's value (empty: every item). Empty for everything else.
    pub keys: Vec<Value>,
}

impl Segment {
    pub fn new(node: SchemaId) -> Segment {
        Segment {
            node,
            keys: Vec::new(),
        }
    }

    pub fn with_keys(node: SchemaId, keys: Vec<Value>) -> Segment {
        Segment { node, keys }
    }
}

/// A path from the top of the data to one node (or to every instance of a list).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DataPath {
    pub segments: Vec<Segment>,
}

impl DataPath {
    pub fn root() -> DataPath {
        DataPath::default()
    }

    pub fn is_root(&self) -> bool {
        self.segments.is_empty()
    }

    pub fn last(&self) -> Option<&Segment> {
        self.segments.last()
    }

    pub fn node(&self) -> Option<SchemaId> {
        self.segments.last().map(|s| s.node)
    }

    pub fn child(&self, segment: Segment) -> DataPath {
        let mut segments = self.segments.clone();
        segments.push(segment);
        DataPath { segments }
    }

    pub fn parent(&self) -> DataPath {
        let mut segments = self.segments.clone();
        segments.pop();
        DataPath { segments }
    }

    /// True when `self` is `other` or one of its ancestors.
    pub fn contains(&self, other: &DataPath) -> bool {
        self.segments.len() <= other.segments.len()
            && self
                .segments
                .iter()
                .zip(&other.segments)
                .all(|(a, b)| a.node == b.node && (a.keys.is_empty() || a.keys == b.keys))
    }

    /// True when one of the two paths contains the other.
    pub fn overlaps(&self, other: &DataPath) -> bool {
        self.contains(other) || other.contains(self)
    }

    /// The path in libyang's form.
    pub fn display(&self, schema: &Schema) -> String {
        let mut out = String::new();
        for (i, seg) in self.segments.iter().enumerate() {
            let node = schema.node(seg.node);
            out.push('/');
            if i == 0 {
                out.push_str(&node.module);
                out.push(':');
            }
            out.push_str(&node.name);
            match node.kind {
                NodeKind::List => {
                    for (key, value) in node.keys.iter().zip(&seg.keys) {
                        let _ = write!(
                            out,
                            "[{}={}]",
                            schema.node(*key).name,
                            quote(value.as_str())
                        );
                    }
                }
                NodeKind::LeafList => {
                    if let Some(value) = seg.keys.first() {
                        let _ = write!(out, "[.={}]", quote(value.as_str()));
                    }
                }
                _ => {}
            }
        }
        if out.is_empty() {
            out.push('/');
        }
        out
    }

    /// Reads a path in libyang's form. The module prefix is optional on every step; keys may
    /// come in any order, values in single or double quotes. A list step without keys means
    /// every entry.
    pub fn parse(schema: &Schema, text: &str) -> Result<DataPath, Error> {
        let invalid = |message: String| {
            Error::Invalid(vec![Problem::new(crate::text::excerpt(text), message)])
        };
        let mut segments: Vec<Segment> = Vec::new();
        let mut rest = text.trim();
        if rest == "/" || rest.is_empty() {
            return Ok(DataPath::root());
        }
        rest = rest
            .strip_prefix('/')
            .ok_or_else(|| invalid("a path starts with /".into()))?;
        while !rest.is_empty() {
            let end = rest.find(['/', '[']).unwrap_or(rest.len());
            let name = &rest[..end];
            rest = &rest[end..];
            let node = match segments.last() {
                None => schema.root(name),
                Some(parent) => schema.child(parent.node, name),
            }
            .ok_or_else(|| invalid(unknown_node_message(schema, segments.last(), name)))?;
            let mut predicates = Vec::new();
            while let Some(after) = rest.strip_prefix('[') {
                let (predicate, tail) = split_predicate(after)
                    .ok_or_else(|| invalid(format!("unterminated predicate after {name}")))?;
                predicates.push(predicate);
                rest = tail;
            }
            let keys =
                predicate_keys(schema, node, &predicates).map_err(|e| invalid(e.to_string()))?;
            segments.push(Segment { node, keys });
            rest = rest.strip_prefix('/').unwrap_or(rest);
        }
        Ok(DataPath { segments })
    }
}

fn unknown_node_message(schema: &Schema, parent: Option<&Segment>, name: &str) -> String {
    let children: Vec<&str> = match parent {
        None => schema
            .roots()
            .iter()
            .map(|id| schema.node(*id).name.as_str())
            .collect(),
        Some(p) => schema
            .node(p.node)
            .children
            .iter()
            .map(|id| schema.node(*id).name.as_str())
            .collect(),
    };
    format!(
        "unknown node \"{}\"; expected one of: {}",
        crate::text::excerpt(name),
        children.join(", ")
    )
}

/// `name='x']...` -> (("name", "x"), "..."). Inside the quotes, the quote doubled stands
/// for itself (`'it''s'`, as XPath 2.0 writes it): how [`quote`] writes a value that holds
/// both kinds of quote.
fn split_predicate(text: &str) -> Option<((String, String), &str)> {
    let eq = text.find('=')?;
    let name = text[..eq].trim().to_string();
    let after = text[eq + 1..].trim_start();
    let quote = after.chars().next()?;
    if quote != '\'' && quote != '"' {
        return None;
    }
    let mut body = &after[1..];
    let mut value = String::new();
    loop {
        let close = body.find(quote)?;
        value.push_str(&body[..close]);
        body = &body[close + 1..];
        match body.strip_prefix(quote) {
            Some(rest) => {
                value.push(quote);
                body = rest;
            }
            None => break,
        }
    }
    let tail = body.trim_start().strip_prefix(']')?;
    Some(((name, value), tail))
}

/// Why a step's predicates do not select an entry of its node.
#[derive(Debug, thiserror::Error)]
enum PredicateError {
    #[error("{list} needs its key {key}")]
    MissingKey { list: String, key: String },
    #[error("{key}: {error}")]
    BadKey { key: String, error: ValueError },
    #[error("{list} is keyed by {} only", keys.join(", "))]
    OtherKeys { list: String, keys: Vec<String> },
    #[error("{0}")]
    BadItem(ValueError),
    #[error("{leaf_list} items are selected with [.='value']")]
    NotAnItem { leaf_list: String },
    #[error("{node} takes no predicate")]
    NoPredicate { node: String },
}

fn predicate_keys(
    schema: &Schema,
    node: SchemaId,
    predicates: &[(String, String)],
) -> Result<Vec<Value>, PredicateError> {
    let info = schema.node(node);
    match info.kind {
        NodeKind::List if !predicates.is_empty() => {
            let mut keys = Vec::with_capacity(info.keys.len());
            for key in &info.keys {
                let key_name = &schema.node(*key).name;
                let (_, text) = predicates
                    .iter()
                    .find(|(n, _)| n.rsplit(':').next() == Some(key_name.as_str()))
                    .ok_or_else(|| PredicateError::MissingKey {
                        list: info.name.clone(),
                        key: key_name.clone(),
                    })?;
                let value = schema
                    .value(*key, text)
                    .map_err(|error| PredicateError::BadKey {
                        key: key_name.clone(),
                        error,
                    })?;
                keys.push(value);
            }
            if predicates.len() != info.keys.len() {
                return Err(PredicateError::OtherKeys {
                    list: info.name.clone(),
                    keys: (info.keys.iter())
                        .map(|k| schema.node(*k).name.clone())
                        .collect(),
                });
            }
            Ok(keys)
        }
        NodeKind::LeafList if !predicates.is_empty() => match predicates {
            [(dot, text)] if dot == "." => Ok(vec![
                schema.value(node, text).map_err(PredicateError::BadItem)?,
            ]),
            _ => Err(PredicateError::NotAnItem {
                leaf_list: info.name.clone(),
            }),
        },
        _ if predicates.is_empty() => Ok(Vec::new()),
        _ => Err(PredicateError::NoPredicate {
            node: info.name.clone(),
        }),
    }
}

/// Quotes a value for a path predicate: in single quotes, or in double quotes when it
/// holds a single one. A value holding both (a flow may be named `it's "x"`) has its single
/// quotes doubled (`'it''s "x"'`, XPath 2.0's escape, which [`DataPath::parse`] reads): no
/// quote of XPath 1.0, libyang's language, can hold it, and the datastore keys its records
/// by these paths, so each must read back as the value it was.
pub fn quote(value: &str) -> String {
    match (value.contains('\''), value.contains('"')) {
        (false, _) => format!("'{value}'"),
        (true, false) => format!("\"{value}\""),
        (true, true) => format!("'{}'", value.replace('\'', "''")),
    }
}
