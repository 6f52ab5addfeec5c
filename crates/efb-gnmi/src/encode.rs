//! Values for gNMI, from the data trees and the schema alone (no per-leaf code):
//!
//! - `JSON_IETF`: RFC 7951. Top-level members are qualified with the module name (a value
//!   at the top of the data), 64-bit integers and decimal64 are strings, `empty` is
//!   `[null]`, identityref values name their module (`module:identity`).
//! - `JSON`: the same data with unqualified member names, 64-bit integers as JSON numbers
//!   and identityref values without their module (the OpenConfig convention).
//!
//! - `PROTO`: one scalar TypedValue per leaf (`int_val`, `uint_val`, `bool_val`,
//!   `double_val` for decimal64, `string_val` for the rest, `leaflist_val` for a leaf-list,
//!   `bool_val` true for `empty` as ygot writes it): a node above a leaf is sent as its
//!   leaves, one update each.
//!
//! A value at a list entry is the entry's object (keys first); at a list, an array of
//! entries; at a leaf, the bare value. Get filters by data type: CONFIG keeps `config true`
//! nodes, STATE keeps `config false` nodes with the keys and containers leading to them.
//! Leaves left at their default are written with it ([`crate::defaults`]).

use efb_yang::json::write_json_string;
use efb_yang::{
    BaseType, Child, DataPath, DataTree, Inner, JsonKind, LeafList, List, NodeKind, NodeRef,
    Schema, SchemaId, Segment, TypeInfo, Value,
};
use gnmi_proto::gnmi::{ScalarArray, TypedValue, typed_value};

use crate::defaults;

/// The encodings served: gNMI's two JSON ones, and PROTO (scalars per leaf).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    Json,
    JsonIetf,
    Proto,
}

/// Which data a Get returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Filter {
    All,
    Config,
    State,
}

/// Prints values of one tree in one encoding.
pub struct Encoder<'a> {
    pub schema: &'a Schema,
    pub encoding: Encoding,
    pub filter: Filter,
}

impl Encoder<'_> {
    /// The JSON of the node at `path` in `tree`, or `None` when there is none or the filter
    /// leaves nothing of it.
    pub fn node(&self, tree: &DataTree, path: &DataPath) -> Option<String> {
        let Some(node) = tree.get(self.schema, path) else {
            return self.implied(tree, path);
        };
        let mut out = String::new();
        let last = path.last();
        let wrote = match node {
            NodeRef::Inner(inner) => match last {
                None => self.object(&mut out, inner, None, None, true),
                Some(seg) => {
                    let keys = (self.schema.node(seg.node).kind == NodeKind::List)
                        .then_some(seg.keys.as_slice());
                    self.object(&mut out, inner, Some(seg.node), keys, false)
                }
            },
            NodeRef::List(list) => last.is_some_and(|seg| self.list(&mut out, seg.node, list)),
            NodeRef::Leaf(value) => last.is_some_and(|seg| {
                self.keeps_leaf(seg.node) && {
                    self.value(&mut out, seg.node, value);
                    true
                }
            }),
            NodeRef::LeafList(items) => last.is_some_and(|seg| {
                self.keeps_leaf(seg.node) && {
                    self.leaf_list(&mut out, seg.node, items);
                    true
                }
            }),
        };
        wrote.then_some(out)
    }

    /// An absent node that exists by default: a leaf's default, or a container's object of
    /// defaults.
    fn implied(&self, tree: &DataTree, path: &DataPath) -> Option<String> {
        let id = path.node()?;
        if !self.keeps_leaf(id) || !defaults::implied(self.schema, tree, path) {
            return None;
        }
        if let Some(value) = defaults::leaf_default(self.schema, id) {
            return Some(self.scalar(id, &value));
        }
        let mut out = String::new();
        self.object(&mut out, &Inner::default(), Some(id), None, false);
        (out != "{}").then_some(out)
    }

    /// The value of one leaf (or a leaf-list's items) in this encoding's TypedValue.
    pub fn typed(&self, value: &LeafValue) -> TypedValue {
        let value = match (self.encoding, value) {
            (Encoding::Proto, LeafValue::One(id, v)) => self.proto(*id, v),
            (Encoding::Proto, LeafValue::Many(id, items)) => {
                typed_value::Value::LeaflistVal(ScalarArray {
                    element: items
                        .iter()
                        .map(|v| TypedValue {
                            value: Some(self.proto(*id, v)),
                        })
                        .collect(),
                })
            }
            (encoding, v) => return json_typed(encoding, v.json(self)),
        };
        TypedValue { value: Some(value) }
    }

    /// A scalar TypedValue by the leaf's type (a union's value by its own kind).
    fn proto(&self, id: SchemaId, value: &Value) -> typed_value::Value {
        use typed_value::Value as V;
        let text = value.as_str();
        let string = || V::StringVal(text.to_string());
        let signed = || text.parse::<i64>().map_or_else(|_| string(), V::IntVal);
        let unsigned = || text.parse::<u64>().map_or_else(|_| string(), V::UintVal);
        match base(self.schema, id) {
            Some(BaseType::Int8 | BaseType::Int16 | BaseType::Int32 | BaseType::Int64) => signed(),
            Some(BaseType::Uint8 | BaseType::Uint16 | BaseType::Uint32 | BaseType::Uint64) => {
                unsigned()
            }
            Some(BaseType::Decimal64) => {
                text.parse::<f64>().map_or_else(|_| string(), V::DoubleVal)
            }
            Some(BaseType::IdentityRef) => {
                V::StringVal(text.rsplit(':').next().unwrap_or(text).to_string())
            }
            _ => match value.kind() {
                JsonKind::Bool => V::BoolVal(text == "true"),
                JsonKind::Empty => V::BoolVal(true),
                JsonKind::Number if text.starts_with('-') => signed(),
                JsonKind::Number => unsigned(),
                JsonKind::String => string(),
            },
        }
    }

    /// The leaves under the node at `path` this filter keeps, defaults included (see
    /// [`leaves`]).
    pub fn leaves(&self, tree: &DataTree, path: &DataPath, out: &mut Vec<(DataPath, LeafValue)>) {
        let start = out.len();
        leaves(self.schema, tree, path, out);
        let found: Vec<_> = out.drain(start..).collect();
        out.extend(found.into_iter().filter(|(_, v)| self.keeps_leaf(v.id())));
    }

    /// The JSON of one leaf value (or a leaf-list's items as an array).
    pub fn scalar(&self, id: SchemaId, value: &Value) -> String {
        let mut out = String::new();
        self.value(&mut out, id, value);
        out
    }

    pub fn items(&self, id: SchemaId, items: &LeafList) -> String {
        let mut out = String::new();
        self.leaf_list(&mut out, id, items);
        out
    }

    fn keeps_leaf(&self, id: SchemaId) -> bool {
        let info = self.schema.node(id);
        match self.filter {
            Filter::All => true,
            Filter::Config => info.config,
            Filter::State => !info.config || info.is_key,
        }
    }

    /// Whether the filter may keep something under `id` (a container or list).
    fn keeps_inner(&self, id: SchemaId) -> bool {
        match self.filter {
            Filter::All => true,
            Filter::Config => self.schema.node(id).config,
            Filter::State => has_state(self.schema, id),
        }
    }

    /// Writes `{...}`; returns false (writing nothing) when the filter kept nothing but keys.
    fn object(
        &self,
        out: &mut String,
        inner: &Inner,
        id: Option<SchemaId>,
        keys: Option<&[Value]>,
        top: bool,
    ) -> bool {
        let start = out.len();
        out.push('{');
        let mut first = true;
        if let (Some(list), Some(keys)) = (id, keys) {
            for (key, value) in self.schema.node(list).keys.iter().zip(keys) {
                self.member(out, &mut first, *key, top);
                self.value(out, *key, value);
            }
        }
        let mut kept = false;
        let mut members: Vec<(SchemaId, Option<&Child>)> =
            inner.children().map(|(id, c)| (id, Some(c))).collect();
        if self.filter != Filter::State {
            let parent = if top { None } else { id };
            members.extend(
                defaults::missing(self.schema, inner, parent)
                    .into_iter()
                    .map(|id| (id, None)),
            );
            members.sort_by_key(|(id, _)| *id);
        }
        for (child_id, child) in members {
            let mark = out.len();
            let was_first = first;
            self.member(out, &mut first, child_id, top);
            let wrote = match child {
                Some(child) => self.child(out, child_id, child),
                None => self.default_member(out, child_id),
            };
            if wrote {
                kept = true;
            } else {
                out.truncate(mark);
                first = was_first;
            }
        }
        out.push('}');
        if !kept && self.filter != Filter::All && (keys.is_some() || !top) {
            out.truncate(start);
            return false;
        }
        true
    }

    /// A member that exists by default: a leaf's default, or a container of defaults
    /// (nothing when the filter keeps none of it).
    fn default_member(&self, out: &mut String, id: SchemaId) -> bool {
        if !self.keeps_leaf(id) {
            return false;
        }
        if let Some(value) = defaults::leaf_default(self.schema, id) {
            self.value(out, id, &value);
            return true;
        }
        let mark = out.len();
        self.object(out, &Inner::default(), Some(id), None, false);
        if &out[mark..] == "{}" {
            out.truncate(mark);
            return false;
        }
        true
    }

    fn member(&self, out: &mut String, first: &mut bool, id: SchemaId, top: bool) {
        if !*first {
            out.push(',');
        }
        *first = false;
        let info = self.schema.node(id);
        out.push('"');
        if top && self.encoding == Encoding::JsonIetf {
            out.push_str(&info.module);
            out.push(':');
        }
        out.push_str(&info.name);
        out.push_str("\":");
    }

    fn child(&self, out: &mut String, id: SchemaId, child: &Child) -> bool {
        match child {
            Child::Leaf(value) => {
                self.keeps_leaf(id) && {
                    self.value(out, id, value);
                    true
                }
            }
            Child::LeafList(items) => {
                self.keeps_leaf(id) && {
                    self.leaf_list(out, id, items);
                    true
                }
            }
            Child::Container(inner) => {
                self.keeps_inner(id) && self.object(out, inner, Some(id), None, false)
            }
            Child::List(list) => self.keeps_inner(id) && self.list(out, id, list),
        }
    }

    fn list(&self, out: &mut String, id: SchemaId, list: &List) -> bool {
        if !self.keeps_inner(id) {
            return false;
        }
        out.push('[');
        let mut first = true;
        for (keys, entry) in list.iter() {
            let mark = out.len();
            if !first {
                out.push(',');
            }
            if self.object(out, entry, Some(id), Some(keys), false) {
                first = false;
            } else {
                out.truncate(mark);
            }
        }
        out.push(']');
        !first || self.filter == Filter::All
    }

    fn leaf_list(&self, out: &mut String, id: SchemaId, items: &LeafList) {
        out.push('[');
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            self.value(out, id, item);
        }
        out.push(']');
    }

    fn value(&self, out: &mut String, id: SchemaId, value: &Value) {
        let text = value.as_str();
        match value.kind() {
            JsonKind::Number | JsonKind::Bool => out.push_str(text),
            JsonKind::Empty => out.push_str("[null]"),
            JsonKind::String => match (self.encoding, base(self.schema, id)) {
                (Encoding::Json, Some(BaseType::Int64 | BaseType::Uint64))
                    if text.parse::<i128>().is_ok() =>
                {
                    out.push_str(text)
                }
                (Encoding::Json, Some(BaseType::IdentityRef)) => {
                    write_json_string(out, text.rsplit(':').next().unwrap_or(text))
                }
                (Encoding::JsonIetf, Some(BaseType::IdentityRef)) if !text.contains(':') => {
                    // The canonical form names the module; a bare name is the leaf's own.
                    write_json_string(out, &format!("{}:{text}", self.schema.node(id).module))
                }
                _ => write_json_string(out, text),
            },
        }
    }
}

/// The base type of a leaf, through leafrefs to the type they point at.
pub fn base(schema: &Schema, id: SchemaId) -> Option<BaseType> {
    fn resolve(t: &TypeInfo) -> BaseType {
        match (&t.base, &t.leafref_real) {
            (BaseType::LeafRef, Some(real)) => resolve(real),
            (b, _) => *b,
        }
    }
    schema.node(id).leaf_type.as_ref().map(resolve)
}

/// Whether the schema subtree of `id` holds state (`config false`) data.
pub fn has_state(schema: &Schema, id: SchemaId) -> bool {
    let info = schema.node(id);
    !info.config || info.children.iter().any(|c| has_state(schema, *c))
}

/// A JSON value in the field its encoding calls for.
pub fn json_typed(encoding: Encoding, json: String) -> TypedValue {
    use typed_value::Value as V;
    TypedValue {
        value: Some(match encoding {
            Encoding::JsonIetf => V::JsonIetfVal(json.into_bytes()),
            Encoding::Json | Encoding::Proto => V::JsonVal(json.into_bytes()),
        }),
    }
}

/// The leaves under the node at `path` (itself if it is one), each with its path, for
/// telemetry: a list entry's keys count as leaves, a leaf-list is one value (an array),
/// leaves at their default are there with it.
pub fn leaves(
    schema: &Schema,
    tree: &DataTree,
    path: &DataPath,
    out: &mut Vec<(DataPath, LeafValue)>,
) {
    let Some(node) = tree.get(schema, path) else {
        let mut found = Vec::new();
        defaults::leaves_below(schema, tree, path, &mut found);
        out.extend(
            found
                .into_iter()
                .map(|(p, id, v)| (p, LeafValue::One(id, v))),
        );
        return;
    };
    match node {
        NodeRef::Leaf(v) => {
            if let Some(seg) = path.last() {
                out.push((path.clone(), LeafValue::One(seg.node, v.clone())));
            }
        }
        NodeRef::LeafList(items) => {
            if let Some(seg) = path.last() {
                out.push((path.clone(), LeafValue::Many(seg.node, items.clone())));
            }
        }
        NodeRef::List(list) => {
            if let Some(seg) = path.last() {
                for (keys, entry) in list.iter() {
                    let p = path
                        .parent()
                        .child(efb_yang::Segment::with_keys(seg.node, keys.to_vec()));
                    inner_leaves(schema, &p, entry, out);
                }
            }
        }
        NodeRef::Inner(inner) => inner_leaves(schema, path, inner, out),
    }
}

/// A telemetry value: one leaf's, or a leaf-list's items.
#[derive(Clone, Debug, PartialEq)]
pub enum LeafValue {
    One(SchemaId, Value),
    Many(SchemaId, LeafList),
}

impl LeafValue {
    pub fn id(&self) -> SchemaId {
        match self {
            LeafValue::One(id, _) | LeafValue::Many(id, _) => *id,
        }
    }

    pub fn json(&self, encoder: &Encoder<'_>) -> String {
        match self {
            LeafValue::One(id, v) => encoder.scalar(*id, v),
            LeafValue::Many(id, items) => encoder.items(*id, items),
        }
    }
}

fn inner_leaves(
    schema: &Schema,
    path: &DataPath,
    inner: &Inner,
    out: &mut Vec<(DataPath, LeafValue)>,
) {
    if let Some(seg) = path.last() {
        let info = schema.node(seg.node);
        if info.kind == NodeKind::List {
            for (key, value) in info.keys.iter().zip(&seg.keys) {
                out.push((
                    path.child(efb_yang::Segment::new(*key)),
                    LeafValue::One(*key, value.clone()),
                ));
            }
        }
    }
    let missing = path
        .node()
        .map(|id| defaults::missing(schema, inner, Some(id)))
        .unwrap_or_else(|| defaults::missing(schema, inner, None));
    let mut members: Vec<(SchemaId, Option<&Child>)> =
        inner.children().map(|(id, c)| (id, Some(c))).collect();
    members.extend(missing.into_iter().map(|id| (id, None)));
    members.sort_by_key(|(id, _)| *id);
    for (id, child) in members {
        let Some(child) = child else {
            let below = path.child(Segment::new(id));
            match defaults::leaf_default(schema, id) {
                Some(value) => out.push((below, LeafValue::One(id, value))),
                None => inner_leaves(schema, &below, &Inner::default(), out),
            }
            continue;
        };
        match child {
            Child::Leaf(v) => out.push((
                path.child(efb_yang::Segment::new(id)),
                LeafValue::One(id, v.clone()),
            )),
            Child::LeafList(items) => out.push((
                path.child(efb_yang::Segment::new(id)),
                LeafValue::Many(id, items.clone()),
            )),
            Child::Container(c) => {
                inner_leaves(schema, &path.child(efb_yang::Segment::new(id)), c, out)
            }
            Child::List(list) => {
                for (keys, entry) in list.iter() {
                    let p = path.child(efb_yang::Segment::with_keys(id, keys.to_vec()));
                    inner_leaves(schema, &p, entry, out);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
