//! Values of Set, in: a TypedValue at a data path becomes a data tree holding that node
//! (and the ancestors leading to it), ready for an edit of the datastore.
//!
//! JSON and JSON_IETF are both accepted for subtrees, with or without module-qualified
//! member names (only this module's), 64-bit numbers as numbers or strings, `empty` as
//! `[null]`; the value is normalized to RFC 7951 by the schema and then read through
//! libyang, which checks every name and value. Scalar TypedValues are accepted for leaves
//! (and `leaflist_val` for leaf-lists) in the field of the leaf's type: `string_val` for
//! strings, enumerations, identities and bits, `int_val` or `uint_val` for integers,
//! `double_val` (or an integer) for decimal64, `bool_val` for booleans and `bool_val` true
//! for `empty`; a union takes the fields of its members. `ascii_val` is UNIMPLEMENTED; any
//! other field (`string_val "9500"` for a uint16) is refused naming the leaf and its type,
//! and so is a JSON_IETF number or boolean in quotes (RFC 7951); so is JSON
//! `null` except for `empty` (`[null]`). JSON values are read as every reader
//! of configuration JSON reads them (`efb_yang::input::check_json`): exactly one JSON value,
//! no member named twice. Text that is not JSON is refused on string leaves too (pygnmi
//! sends a Python string unquoted: send `json.dumps(text)`, or the text in `string_val`).

use efb_yang::input::check_json;
use efb_yang::json::{Check, from_json};
use efb_yang::{
    BaseType, DataPath, DataTree, JsonKind, NodeKind, Schema, SchemaId, TypeInfo, Value,
};
use gnmi_proto::gnmi::{self, typed_value};
use serde_json::{Map, Number, Value as Json};

/// Why a value is refused, with its gRPC code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// Not a value of the node's type or shape: INVALID_ARGUMENT.
    #[error("{0}")]
    Invalid(String),
    /// An encoding this target does not read (bytes, proto, any): UNIMPLEMENTED.
    #[error("{0}")]
    Unsupported(String),
}

fn invalid(path: &str, message: impl std::fmt::Display) -> DecodeError {
    DecodeError::Invalid(format!("{path}: {message}"))
}

/// The tree a Set update or replace of `path` with `value` puts there.
pub fn fragment(
    schema: &Schema,
    path: &DataPath,
    value: Option<&gnmi::TypedValue>,
) -> Result<DataTree, DecodeError> {
    let shown = path.display(schema);
    let value = value
        .and_then(|v| v.value.as_ref())
        .ok_or_else(|| invalid(&shown, "the update has no value"))?;
    // JSON_IETF is RFC 7951 to the letter; JSON (gNMI's own) takes either form of a number.
    let reader = Reader {
        schema,
        ietf: matches!(value, typed_value::Value::JsonIetfVal(_)),
    };
    let json = to_json(schema, path, value).map_err(|e| match e {
        DecodeError::Invalid(m) => invalid(&shown, m),
        unsupported => unsupported,
    })?;
    let normalized = match path.last() {
        None => reader.top(&json)?,
        Some(seg) => {
            let node = if schema.node(seg.node).kind == NodeKind::List && !seg.keys.is_empty() {
                reader.object(seg.node, &json, &shown)?
            } else {
                reader.normal(seg.node, &json, &shown)?
            };
            wrap(schema, path, node)?
        }
    };
    let text = normalized.to_string();
    from_json(schema, &text, Check::Types).map_err(|e| {
        DecodeError::Invalid(
            e.problems()
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n"),
        )
    })
}

/// The TypedValue as JSON: structured encodings parsed, scalars as JSON scalars. Old
/// clients still send the deprecated float and decimal fields: read them too.
#[allow(deprecated)]
fn to_json(
    schema: &Schema,
    path: &DataPath,
    value: &typed_value::Value,
) -> Result<Json, DecodeError> {
    use typed_value::Value as V;
    let bad = |m: &str| DecodeError::Invalid(m.to_string());
    if let V::AsciiVal(_) = value {
        return Err(DecodeError::Unsupported(
            "ascii_val is not supported: send text in string_val, or JSON or JSON_IETF".into(),
        ));
    }
    if !matches!(
        value,
        V::JsonVal(_) | V::JsonIetfVal(_) | V::BytesVal(_) | V::ProtoBytes(_) | V::AnyVal(_)
    ) {
        check_scalar(schema, path, value)?;
    }
    if let (V::BoolVal(true), Some(id)) = (value, path.node())
        && base(schema, id).is_some_and(|t| t.base == BaseType::Empty)
    {
        return Ok(Json::Array(vec![Json::Null]));
    }
    Ok(match value {
        V::JsonVal(bytes) | V::JsonIetfVal(bytes) => json_value(schema, path, bytes)?,
        V::StringVal(s) => Json::String(s.clone()),
        V::IntVal(i) => Json::from(*i),
        V::UintVal(u) => Json::from(*u),
        V::BoolVal(b) => Json::Bool(*b),
        V::DoubleVal(d) => Number::from_f64(*d)
            .map(Json::Number)
            .ok_or_else(|| bad("not a finite number"))?,
        V::FloatVal(f) => Number::from_f64(f64::from(*f))
            .map(Json::Number)
            .ok_or_else(|| bad("not a finite number"))?,
        V::DecimalVal(d) => Json::String(decimal(d.digits, d.precision)),
        V::LeaflistVal(items) => Json::Array(
            items
                .element
                .iter()
                .filter_map(|e| e.value.as_ref())
                .map(|v| to_json(schema, path, v))
                .collect::<Result<_, _>>()?,
        ),
        // (ascii_val is refused before, with its own message.)
        V::AsciiVal(_) | V::BytesVal(_) | V::ProtoBytes(_) | V::AnyVal(_) => {
            return Err(DecodeError::Unsupported(
                "bytes, proto and any values are not supported: send JSON, JSON_IETF or a scalar"
                    .into(),
            ));
        }
    })
}

/// The leaf's type through leafrefs.
fn base(schema: &Schema, id: SchemaId) -> Option<&TypeInfo> {
    fn real(t: &TypeInfo) -> &TypeInfo {
        match (&t.base, &t.leafref_real) {
            (BaseType::LeafRef, Some(target)) => real(target),
            _ => t,
        }
    }
    schema.node(id).leaf_type.as_ref().map(real)
}

/// The scalar fields a type takes (a union: its members').
fn fields(t: &TypeInfo, out: &mut Vec<&'static str>) {
    let add: &[&'static str] = match t.base {
        b if b.is_integer() => &["int_val", "uint_val"],
        BaseType::Decimal64 => &["double_val", "int_val", "uint_val"],
        BaseType::Bool => &["bool_val"],
        BaseType::Empty => &["bool_val"],
        BaseType::LeafRef => match &t.leafref_real {
            Some(real) => return fields(real, out),
            None => &["string_val"],
        },
        BaseType::Union => {
            for member in &t.members {
                fields(member, out);
            }
            return;
        }
        _ => &["string_val"],
    };
    for f in add {
        if !out.contains(f) {
            out.push(f);
        }
    }
}

/// A scalar TypedValue must be in a field of the leaf's type: `string_val "9500"` is not
/// a uint16, `uint_val` is not a string. The deprecated `float_val` and `decimal_val` count
/// as `double_val`.
#[allow(deprecated)]
fn check_scalar(
    schema: &Schema,
    path: &DataPath,
    value: &typed_value::Value,
) -> Result<(), DecodeError> {
    use typed_value::Value as V;
    let given = match value {
        V::StringVal(s) => format!("string_val {}", Json::String(s.clone())),
        V::AsciiVal(s) => format!("ascii_val {}", Json::String(s.clone())),
        V::IntVal(i) => format!("int_val {i}"),
        V::UintVal(u) => format!("uint_val {u}"),
        V::BoolVal(b) => format!("bool_val {b}"),
        V::DoubleVal(d) => format!("double_val {d}"),
        V::FloatVal(f) => format!("float_val {f}"),
        V::DecimalVal(d) => format!("decimal_val {}", decimal(d.digits, d.precision)),
        V::LeaflistVal(_) => "leaflist_val".to_string(),
        _ => return Ok(()),
    };
    let field = match value {
        V::StringVal(_) => "string_val",
        V::AsciiVal(_) => "ascii_val",
        V::IntVal(_) => "int_val",
        V::UintVal(_) => "uint_val",
        V::BoolVal(_) => "bool_val",
        V::LeaflistVal(_) => "leaflist_val",
        _ => "double_val",
    };
    let info = path.node().map(|id| (id, schema.node(id)));
    let Some((id, info)) =
        info.filter(|(_, i)| matches!(i.kind, NodeKind::Leaf | NodeKind::LeafList))
    else {
        return Err(DecodeError::Invalid(format!(
            "{given}: a scalar value is for a leaf; send this node as JSON or JSON_IETF"
        )));
    };
    if let V::LeaflistVal(items) = value {
        if info.kind != NodeKind::LeafList {
            return Err(DecodeError::Invalid(format!(
                "leaflist_val: {} is a leaf, not a leaf-list ({}): send one scalar",
                info.name,
                info.accepts()
            )));
        }
        for item in items.element.iter().filter_map(|e| e.value.as_ref()) {
            check_scalar(schema, path, item)?;
        }
        return Ok(());
    }
    let mut accepted = Vec::new();
    if let Some(t) = base(schema, id) {
        fields(t, &mut accepted);
    }
    let empty = base(schema, id).is_some_and(|t| t.base == BaseType::Empty);
    let fits = accepted.contains(&field) && !(empty && matches!(value, V::BoolVal(false)));
    if fits {
        return Ok(());
    }
    let wanted = if empty {
        "bool_val true (or JSON [null]); to unset it, delete it".to_string()
    } else {
        accepted.join(" or ")
    };
    Err(DecodeError::Invalid(format!(
        "{given} is not a value of {}, {}: send {wanted} (or JSON)",
        info.name,
        info.accepts()
    )))
}

/// A JSON or JSON_IETF value: exactly one JSON value, with no member named twice. Anything
/// else is refused, also on a string leaf, where taking the bytes as the string would store
/// `{{{`, `"x" garbage` with its quotes, or nothing at all.
fn json_value(schema: &Schema, path: &DataPath, bytes: &[u8]) -> Result<Json, DecodeError> {
    let expected = || match path.node().map(|id| schema.node(id)) {
        Some(info) if matches!(info.kind, NodeKind::Leaf | NodeKind::LeafList) => format!(
            "expected {} as one JSON value (text in double quotes: \"uplink A\"; \
             plain text may go in string_val)",
            info.accepts()
        ),
        _ => "expected one JSON value".to_string(),
    };
    let text = std::str::from_utf8(bytes).map_err(|e| {
        DecodeError::Invalid(format!(
            "the value is not UTF-8 (byte {} is not); {}",
            e.valid_up_to(),
            expected()
        ))
    })?;
    check_json(text)
        .map_err(|problem| DecodeError::Invalid(format!("{problem}; {}", expected())))?;
    serde_json::from_str(text).map_err(|e| DecodeError::Invalid(format!("not JSON: {e}")))
}

/// Most fraction digits a decimal64 has (YANG's `fraction-digits` is 1..18).
const DECIMAL64_FRACTION_DIGITS: usize = 18;

/// A gNMI Decimal64 as decimal text. A precision past what a decimal64 holds is written
/// with an exponent (`5e-4000000000`), which no decimal64 leaf takes, rather than with that
/// many zeros: the precision is the client's number, and 4 GB of zeros ended the daemon
/// (found by fuzzing, `tests/fuzz_paths_values.rs`).
fn decimal(digits: i64, precision: u32) -> String {
    let negative = digits < 0;
    let text = digits.unsigned_abs().to_string();
    let p = precision as usize;
    let body = if p == 0 {
        text
    } else if p > DECIMAL64_FRACTION_DIGITS {
        format!("{text}e-{precision}")
    } else if text.len() > p {
        format!("{}.{}", &text[..text.len() - p], &text[text.len() - p..])
    } else {
        format!("0.{}{}", "0".repeat(p - text.len()), text)
    };
    if negative { format!("-{body}") } else { body }
}

fn qualified(schema: &Schema, id: SchemaId) -> String {
    let info = schema.node(id);
    format!("{}:{}", info.module, info.name)
}

fn strip_module<'n>(schema: &Schema, name: &'n str, at: &str) -> Result<&'n str, DecodeError> {
    match name.split_once(':') {
        None => Ok(name),
        Some((module, bare)) if module == schema.module().name => Ok(bare),
        Some((module, _)) => Err(invalid(
            at,
            format!("unknown module \"{module}\" in \"{name}\""),
        )),
    }
}

/// Reads a client's JSON value by the schema into RFC 7951 form: JSON_IETF to the letter
/// (`ietf`), gNMI's JSON taking either form of a number.
struct Reader<'s> {
    schema: &'s Schema,
    ietf: bool,
}

impl Reader<'_> {
    /// A whole configuration: an object of top-level nodes, names qualified or not.
    fn top(&self, json: &Json) -> Result<Json, DecodeError> {
        let schema = self.schema;
        let members = json
            .as_object()
            .ok_or_else(|| invalid("/", "expected an object of top-level nodes"))?;
        let mut out = Map::new();
        for (name, value) in members {
            let bare = strip_module(schema, name, "/")?;
            let id = schema
                .roots()
                .iter()
                .copied()
                .find(|id| schema.node(*id).name == bare)
                .ok_or_else(|| invalid("/", format!("unknown top-level node \"{name}\"")))?;
            let at = format!("/{}:{bare}", schema.module().name);
            out.insert(qualified(schema, id), self.normal(id, value, &at)?);
        }
        Ok(Json::Object(out))
    }

    /// The value of node `id` in RFC 7951 form (unqualified names: one module).
    fn normal(&self, id: SchemaId, json: &Json, at: &str) -> Result<Json, DecodeError> {
        let schema = self.schema;
        let info = schema.node(id);
        match info.kind {
            NodeKind::Leaf => self.scalar(id, json, at),
            NodeKind::LeafList => match json {
                Json::Array(items) => Ok(Json::Array(
                    items
                        .iter()
                        .map(|v| self.scalar(id, v, at))
                        .collect::<Result<_, _>>()?,
                )),
                single => Ok(Json::Array(vec![self.scalar(id, single, at)?])),
            },
            NodeKind::List => {
                let entries = json.as_array().ok_or_else(|| {
                    invalid(
                        at,
                        format!("{} is a list: expected an array of entries", info.name),
                    )
                })?;
                Ok(Json::Array(
                    entries
                        .iter()
                        .map(|e| self.object(id, e, at))
                        .collect::<Result<_, _>>()?,
                ))
            }
            _ => self.object(id, json, at),
        }
    }

    /// A container's or list entry's members, each by the schema.
    fn object(&self, id: SchemaId, json: &Json, at: &str) -> Result<Json, DecodeError> {
        let schema = self.schema;
        let info = schema.node(id);
        let members = json
            .as_object()
            .ok_or_else(|| invalid(at, format!("{} takes an object of its members", info.name)))?;
        let mut out = Map::new();
        for (name, value) in members {
            let bare = strip_module(schema, name, at)?;
            let child = schema.child(id, bare).ok_or_else(|| {
                let known: Vec<&str> = info
                    .children
                    .iter()
                    .map(|c| schema.node(*c).name.as_str())
                    .collect();
                invalid(
                    at,
                    format!(
                        "{} has no member \"{name}\"; its members: {}",
                        info.name,
                        known.join(", ")
                    ),
                )
            })?;
            let below = format!("{at}/{bare}");
            out.insert(bare.to_string(), self.normal(child, value, &below)?);
        }
        Ok(Json::Object(out))
    }

    /// A leaf value in the JSON form its type takes in RFC 7951, whichever form it came in.
    fn scalar(&self, id: SchemaId, json: &Json, at: &str) -> Result<Json, DecodeError> {
        let schema = self.schema;
        let info = schema.node(id);
        let wrong = || invalid(at, format!("expected {}, got {json}", info.accepts()));
        let empty = || base(schema, id).is_some_and(takes_empty);
        let text = match json {
            Json::String(s) => s.clone(),
            Json::Number(n) => n.to_string(),
            Json::Bool(b) => b.to_string(),
            // `null` stands for nothing but `empty`'s one value; a string leaf is not "".
            Json::Array(items) if matches!(items.as_slice(), [Json::Null]) && empty() => {
                String::new()
            }
            Json::Null if empty() => String::new(),
            _ => return Err(wrong()),
        };
        // The leaf's type decides (a union member by the value itself).
        let value: Value = schema
            .value(id, &text)
            .map_err(|e| invalid(at, format!("{e}; expected {}", info.accepts())))?;
        // RFC 7951 (section 6): numbers up to 32 bits and booleans are JSON numbers and
        // literals, never strings ("9700" is not a uint16 there).
        if self.ietf
            && json.is_string()
            && matches!(value.kind(), JsonKind::Number | JsonKind::Bool)
        {
            return Err(invalid(
                at,
                format!(
                    "expected {} as RFC 7951 writes it for JSON_IETF: {} without quotes, got {json}",
                    info.accepts(),
                    value.as_str()
                ),
            ));
        }
        Ok(match value.kind() {
            JsonKind::Number => serde_json::from_str::<Number>(value.as_str())
                .map(Json::Number)
                .map_err(|_| wrong())?,
            JsonKind::Bool => Json::Bool(value.as_str() == "true"),
            JsonKind::Empty => Json::Array(vec![Json::Null]),
            JsonKind::String => Json::String(value.as_str().to_string()),
        })
    }
}

/// Whether a type is, or has a member that is, `empty`.
fn takes_empty(t: &TypeInfo) -> bool {
    match t.base {
        BaseType::Empty => true,
        BaseType::Union => t.members.iter().any(takes_empty),
        BaseType::LeafRef => t.leafref_real.as_deref().is_some_and(takes_empty),
        _ => false,
    }
}

/// Puts the value of the last node of `path` inside its ancestors, up to the top.
fn wrap(schema: &Schema, path: &DataPath, value: Json) -> Result<Json, DecodeError> {
    let shown = path.display(schema);
    let Some(last) = path.last() else {
        return Ok(value);
    };
    if schema.node(last.node).is_key {
        // Setting a key leaf names the entry it is the key of; it cannot change it.
        key_leaf(schema, path, &value)?;
        return wrap(schema, &path.parent(), Json::Object(Map::new()));
    }
    let mut current = value;
    let mut at = path.clone();
    while let Some(seg) = at.last() {
        let info = schema.node(seg.node);
        if info.kind == NodeKind::List && !seg.keys.is_empty() {
            current = Json::Array(vec![with_keys(
                schema, seg.node, &seg.keys, current, &shown,
            )?]);
        }
        let name = if at.segments.len() == 1 {
            qualified(schema, seg.node)
        } else {
            info.name.clone()
        };
        let mut members = Map::new();
        members.insert(name, current);
        current = Json::Object(members);
        at = at.parent();
    }
    Ok(current)
}

/// `{"name": "p1", ...}` for the entry with keys `keys`: keys added, or checked if given.
fn with_keys(
    schema: &Schema,
    list: SchemaId,
    keys: &[Value],
    entry: Json,
    at: &str,
) -> Result<Json, DecodeError> {
    let Json::Object(mut members) = entry else {
        return Err(invalid(at, "a list entry takes an object of its members"));
    };
    for (key, value) in schema.node(list).keys.iter().zip(keys) {
        let name = &schema.node(*key).name;
        let expected = Reader {
            schema,
            ietf: false,
        }
        .scalar(*key, &Json::String(value.as_str().to_string()), at)?;
        match members.get(name) {
            Some(given) if *given != expected => {
                return Err(invalid(
                    at,
                    format!(
                        "the value gives key {name} = {given}, the path {expected}: a key cannot change"
                    ),
                ));
            }
            _ => {
                members.insert(name.clone(), expected);
            }
        }
    }
    Ok(Json::Object(members))
}

/// An update of a key leaf: allowed when it repeats the key.
fn key_leaf(schema: &Schema, path: &DataPath, value: &Json) -> Result<(), DecodeError> {
    let shown = path.display(schema);
    let parent = path.parent();
    let (Some(seg), Some(key)) = (parent.last(), path.node()) else {
        return Err(invalid(&shown, "not a key of a list entry"));
    };
    let info = schema.node(seg.node);
    let index = info.keys.iter().position(|k| *k == key).unwrap_or(0);
    let have = seg
        .keys
        .get(index)
        .map(|v| v.as_str().to_string())
        .unwrap_or_default();
    let have = Reader {
        schema,
        ietf: false,
    }
    .scalar(key, &Json::String(have), &shown)?;
    if *value != have {
        return Err(invalid(
            &shown,
            "a list key cannot be changed; delete the entry and create a new one",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
