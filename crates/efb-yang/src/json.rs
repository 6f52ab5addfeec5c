//! RFC 7951 JSON: printing our trees, and reading JSON through libyang (which checks every
//! name and value against the schema) into our trees.

use std::collections::HashMap;
use std::fmt::Write;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use yang2::data::{
    DataFormat, DataNodeRef, DataParserFlags, DataTree as LyTree, DataValidationFlags,
};
use yang2::ffi;

use crate::json_syntax::check_json;
use crate::ly;
use crate::schema::{JsonKind, NodeKind, Schema, SchemaId};
use crate::tree::{Child, DataTree, Inner, LeafList, List};
use crate::{Error, Problem, Value};

/// How to print.
#[derive(Clone, Copy, Debug, Default)]
pub struct PrintOptions {
    /// Also print leaves left at their schema default (RFC 6243 report-all).
    pub with_defaults: bool,
    /// Indented, one member per line.
    pub pretty: bool,
}

/// Prints a tree as RFC 7951 JSON: module-qualified top-level members, 64-bit numbers as
/// strings, `empty` as `[null]`.
pub fn to_json(schema: &Schema, tree: &DataTree, options: PrintOptions) -> String {
    let mut printer = Printer {
        schema,
        options,
        out: String::new(),
        depth: 0,
    };
    printer.object(tree.root(), None, None, true);
    if options.pretty {
        printer.out.push('\n');
    }
    printer.out
}

struct Printer<'a> {
    schema: &'a Schema,
    options: PrintOptions,
    out: String,
    depth: usize,
}

impl Printer<'_> {
    fn newline(&mut self) {
        if self.options.pretty {
            self.out.push('\n');
            for _ in 0..self.depth {
                self.out.push_str("  ");
            }
        }
    }

    fn member_name(&mut self, id: SchemaId, top: bool) {
        let node = self.schema.node(id);
        self.out.push('"');
        if top {
            self.out.push_str(&node.module);
            self.out.push(':');
        }
        self.out.push_str(&node.name);
        self.out
            .push_str(if self.options.pretty { "\": " } else { "\":" });
    }

    /// Prints the members of an inner node (plus the keys of a list entry, first).
    fn object(
        &mut self,
        inner: &Inner,
        parent: Option<SchemaId>,
        keys: Option<&[Value]>,
        top: bool,
    ) {
        self.out.push('{');
        self.depth += 1;
        let mut first = true;
        if let (Some(list), Some(keys)) = (parent, keys) {
            let key_ids = self.schema.node(list).keys.clone();
            for (id, value) in key_ids.iter().zip(keys) {
                self.separator(&mut first);
                self.member_name(*id, false);
                self.value(value);
            }
        }
        let mut members: Vec<(SchemaId, Option<&Child>)> =
            inner.children().map(|(id, c)| (id, Some(c))).collect();
        if self.options.with_defaults {
            self.add_defaults(inner, parent, top, &mut members);
        }
        for (id, child) in members {
            match child {
                Some(child) => {
                    self.separator(&mut first);
                    self.member_name(id, top);
                    self.child(id, child);
                }
                None => {
                    let rendered = self.defaults_only(id, top);
                    if let Some(text) = rendered {
                        self.separator(&mut first);
                        self.out.push_str(&text);
                    }
                }
            }
        }
        self.depth -= 1;
        if !first {
            self.newline();
        }
        self.out.push('}');
    }

    fn separator(&mut self, first: &mut bool) {
        if !*first {
            self.out.push(',');
        }
        *first = false;
        self.newline();
    }

    fn child(&mut self, id: SchemaId, child: &Child) {
        match child {
            Child::Leaf(v) => self.value(v),
            Child::LeafList(items) => self.leaf_list(items),
            Child::Container(c) => self.object(c, Some(id), None, false),
            Child::List(l) => self.list(id, l),
        }
    }

    fn list(&mut self, id: SchemaId, list: &List) {
        self.out.push('[');
        self.depth += 1;
        let mut first = true;
        for (keys, entry) in list.iter() {
            self.separator(&mut first);
            self.object(entry, Some(id), Some(keys), false);
        }
        self.depth -= 1;
        if !first {
            self.newline();
        }
        self.out.push(']');
    }

    fn leaf_list(&mut self, items: &LeafList) {
        self.out.push('[');
        let mut first = true;
        for v in items.iter() {
            if !first {
                self.out.push(',');
            }
            first = false;
            self.value(v);
        }
        self.out.push(']');
    }

    fn value(&mut self, v: &Value) {
        match v.kind() {
            JsonKind::Number | JsonKind::Bool => self.out.push_str(v.as_str()),
            JsonKind::Empty => self.out.push_str("[null]"),
            JsonKind::String => write_json_string(&mut self.out, v.as_str()),
        }
    }

    /// Schema children missing from `inner` that have defaults to report.
    fn add_defaults(
        &self,
        inner: &Inner,
        parent: Option<SchemaId>,
        top: bool,
        members: &mut Vec<(SchemaId, Option<&Child>)>,
    ) {
        let candidates: Vec<SchemaId> = match parent {
            Some(p) if !top => self.schema.node(p).children.clone(),
            _ => self.schema.roots().to_vec(),
        };
        for id in candidates {
            let node = self.schema.node(id);
            if inner.get(id).is_some() || node.is_key || !node.config {
                continue;
            }
            if !case_selected(self.schema, inner, parent, id) {
                continue;
            }
            let has_default = match node.kind {
                NodeKind::Leaf => node.default.is_some(),
                NodeKind::Container => true,
                _ => false,
            };
            if has_default {
                members.push((id, None));
            }
        }
        members.sort_by_key(|(id, _)| *id);
    }

    /// A missing leaf with a default, or a missing container holding some: rendered as a
    /// complete member, or nothing when there is nothing to report.
    fn defaults_only(&mut self, id: SchemaId, top: bool) -> Option<String> {
        let node = self.schema.node(id);
        let mut sub = Printer {
            schema: self.schema,
            options: self.options,
            out: String::new(),
            depth: self.depth,
        };
        sub.member_name(id, top);
        match node.kind {
            NodeKind::Leaf => {
                let text = node.default.clone()?;
                sub.value(&Value::new(text, node.json_kind()));
            }
            _ => {
                let before = sub.out.len();
                sub.object(&Inner::default(), Some(id), None, false);
                if sub.out[before..].trim_matches(|c: char| c.is_whitespace()) == "{}" {
                    return None;
                }
            }
        }
        Some(sub.out)
    }
}

/// Whether a node that sits in a choice may be instantiated as a default: its case is the one
/// present, or no case is present and it is the choice's default case. (gNMI reports
/// defaults by the same rule.)
pub fn case_selected(
    schema: &Schema,
    inner: &Inner,
    parent: Option<SchemaId>,
    id: SchemaId,
) -> bool {
    let node = schema.node(id);
    let Some(case) = node.cases.last() else {
        return true;
    };
    let present_case = inner.children().find_map(|(other, _)| {
        schema
            .node(other)
            .cases
            .iter()
            .find(|c| c.choice == case.choice)
            .map(|c| c.case.clone())
    });
    match present_case {
        Some(present) => present == case.case,
        None => parent.is_some_and(|p| {
            schema
                .node(p)
                .default_cases
                .iter()
                .any(|d| d.choice == case.choice && d.case == case.case)
        }),
    }
}

/// Appends `text` as a JSON string, quoted and escaped.
pub fn write_json_string(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// What to check when reading JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    /// Names and value types only: a fragment or a configuration still being written.
    Types,
    /// Everything YANG says: mandatory nodes, references, choices, ranges.
    Complete,
}

/// Reads RFC 7951 JSON configuration. Every problem libyang finds is returned with its path.
/// What libyang would let through is refused too, whatever `check` says (see
/// [`check_json`]): a member named twice, bytes after the value.
pub fn from_json(schema: &Schema, text: &str, check: Check) -> Result<DataTree, Error> {
    let ly = parse_checked(schema, text, check)?;
    let tree = convert(schema, &ly);
    schema.discard(ly);
    Ok(tree)
}

/// libyang's word on a tree: nothing to say, or every problem with its path.
pub type Verdict = Result<(), Vec<Problem>>;

/// Reads a complete configuration and runs `alongside` on it while libyang validates it:
/// the tree is parsed with types checked, converted, and then libyang's complete validation
/// (mandatory nodes, references, choices) runs on another thread as `alongside` (the
/// model's own rules, say) works on the converted tree. A type error is an `Err`; libyang's
/// verdict on the rest comes back with the tree. On 100 000 flows this loads and checks in
/// 1.8 s where parsing with validation and then running the rules took 2.0 s; two libyang
/// parses of the text side by side took 2.9 s (they queue on libyang's dictionary lock).
pub fn from_json_validating<R: Send>(
    schema: &Schema,
    text: &str,
    alongside: impl FnOnce(&DataTree) -> R + Send,
) -> Result<(DataTree, Verdict, R), Error> {
    let mut ly = parse_checked(schema, text, Check::Types)?;
    let tree = convert(schema, &ly);
    let (verdict, extra) = std::thread::scope(|scope| {
        let validation = scope.spawn(|| validate_ly(schema, &mut ly));
        let extra = alongside(&tree);
        (validation.join(), extra)
    });
    schema.discard(ly);
    let verdict = verdict
        .unwrap_or_else(|_| Err(vec![Problem::new("", "libyang validation failed abruptly")]))
        .map_err(|problems| crate::explain::explain(schema, &tree, problems));
    Ok((tree, verdict, extra))
}

/// libyang's parse of outside JSON, and the checks libyang lacks: parsing without complete
/// validation, it lets a member named twice through (our tree keeps the last), and bytes
/// after the value. Checked here, every reader refuses them alike, whatever it asks libyang
/// to check; the check's verdict comes first. It runs on another thread while libyang
/// parses, which takes far longer: on 100 000 flows (16 MiB) the check takes 70-100 ms of
/// a 1.8-2.8 s load, hidden this way. Our own printed JSON (`validate`) skips it.
fn parse_checked<'a>(schema: &'a Schema, text: &str, check: Check) -> Result<LyTree<'a>, Error> {
    let refused = |problem| Error::Invalid(vec![problem]);
    if text.len() < CHECK_ALONGSIDE_FROM {
        check_json(text).map_err(refused)?;
        return parse_outside(schema, text, check);
    }
    let (checked, parsed) = std::thread::scope(|scope| {
        let checking = scope.spawn(|| check_json(text));
        let parsed = parse_outside(schema, text, check);
        (checking.join(), parsed)
    });
    let checked =
        checked.unwrap_or_else(|_| Err(Problem::new("", "the JSON check failed abruptly")));
    match (checked, parsed) {
        (Ok(()), parsed) => parsed,
        (Err(problem), Ok(ly)) => {
            schema.discard(ly);
            Err(refused(problem))
        }
        (Err(problem), Err(_)) => Err(refused(problem)),
    }
}

/// libyang's parse of outside JSON: the types first, then, when `check` asks for it, the
/// complete validation, as two calls. libyang 2.2.8 asked for both in one call, collecting
/// every error (`LYD_VALIDATE_MULTI_ERROR`), crashes on a list entry without its key that
/// holds a reference (`{"flow": [{"nam}e": "f", "action": {"to-ecofilter":
/// {"ecofilter-unit": "u"}}}]}`): it drops the entry but validates the reference it had
/// queued, in freed memory (found by fuzzing, `tests/fuzz_input.rs`). Parsed apart, such an
/// entry is a parse error and validation never starts. Our own printed JSON, whose entries
/// always have their keys, is still parsed and validated in one call (`validate`).
fn parse_outside<'a>(schema: &'a Schema, text: &str, check: Check) -> Result<LyTree<'a>, Error> {
    let mut ly = parse_ly(schema, text, Check::Types)?;
    if check == Check::Complete
        && let Err(problems) = validate_ly(schema, &mut ly)
    {
        schema.discard(ly);
        return Err(Error::Invalid(problems));
    }
    Ok(ly)
}

/// Below this size (a gNMI value, a small site) the check costs less than a thread.
const CHECK_ALONGSIDE_FROM: usize = 1 << 20;

fn validation_flags() -> DataValidationFlags {
    DataValidationFlags::from_bits_retain(
        ffi::LYD_VALIDATE_NO_STATE | ffi::LYD_VALIDATE_MULTI_ERROR,
    )
}

/// Parses with libyang, collecting all errors.
pub(crate) fn parse_ly<'a>(
    schema: &'a Schema,
    text: &str,
    check: Check,
) -> Result<LyTree<'a>, Error> {
    let ctx = schema.context();
    let mut parser = DataParserFlags::STRICT | DataParserFlags::NO_STATE;
    if check == Check::Types {
        parser |= DataParserFlags::NO_VALIDATION;
    }
    // libyang reads the input as a C string.
    let mut input = String::with_capacity(text.len() + 1);
    input.push_str(text);
    input.push('\0');
    with_ly_errors(schema, || {
        LyTree::parse_string(
            ctx,
            input.as_bytes(),
            DataFormat::JSON,
            parser,
            validation_flags(),
        )
    })
    .map_err(Error::Invalid)
}

/// libyang's complete validation of a tree parsed with types checked only.
fn validate_ly(schema: &Schema, ly: &mut LyTree<'_>) -> Verdict {
    with_ly_errors(schema, || ly.validate(validation_flags()))
}

/// Runs a libyang call and, when it fails, returns every problem libyang stored meanwhile
/// (libyang keeps them per thread, so concurrent calls do not mix them).
fn with_ly_errors<T>(
    schema: &Schema,
    call: impl FnOnce() -> Result<T, yang2::Error>,
) -> Result<T, Vec<Problem>> {
    let raw = ly::context_raw(schema.context());
    ly::clear_errors(raw);
    let result = call();
    match result {
        Ok(value) => {
            ly::clear_errors(raw);
            Ok(value)
        }
        Err(e) => {
            let mut problems = ly::take_errors(raw);
            if problems.is_empty() {
                problems.push(Problem::new("", e.to_string()));
            }
            Err(problems)
        }
    }
}

/// Converts a libyang tree into ours, leaving out the defaults libyang added.
pub(crate) fn convert(schema: &Schema, ly: &LyTree<'_>) -> DataTree {
    let mut converter = Converter {
        schema,
        values: PtrMap::default(),
    };
    let mut tree = DataTree::new();
    if let Some(first) = ly.reference() {
        for node in first.inclusive_siblings() {
            converter.add_node(tree.root_mut(), &node);
        }
    }
    tree
}

/// Maps keyed by pointers: hashing them with SipHash costs more than the rest of a lookup.
type PtrMap<V> = HashMap<usize, V, BuildHasherDefault<PtrHasher>>;

#[derive(Default)]
struct PtrHasher(u64);

impl Hasher for PtrHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8 | u64::from(*b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_usize(&mut self, n: usize) {
        self.0 = (n as u64)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .rotate_left(29);
    }
}

struct Converter<'s> {
    schema: &'s Schema,
    /// libyang keeps canonical values in its dictionary, one copy per distinct string; so do
    /// we: 100 000 flows with `ip-proto 6` share one "6".
    values: PtrMap<Arc<str>>,
}

impl Converter<'_> {
    fn add_node(&mut self, parent: &mut Inner, node: &DataNodeRef<'_, '_>) {
        let schema = self.schema;
        let Some(id) = schema.by_raw(&node.schema()) else {
            return;
        };
        let info = schema.node(id);
        match info.kind {
            NodeKind::Leaf => {
                if !ly::is_implicit_default(node) && !info.is_key {
                    let value = self.term_value(id, node);
                    parent.put(schema, id, Child::Leaf(value));
                }
            }
            NodeKind::LeafList => {
                if !ly::is_implicit_default(node) {
                    let value = self.term_value(id, node);
                    parent
                        .leaf_list_mut(schema, id)
                        .insert(value, info.user_ordered);
                }
            }
            NodeKind::List => {
                let mut keys = Vec::with_capacity(info.keys.len());
                for key in node.list_keys() {
                    if let Some(kid) = schema.by_raw(&key.schema()) {
                        keys.push(self.term_value(kid, &key));
                    }
                }
                let mut entry = Inner::default();
                for child in node.children() {
                    self.add_node(&mut entry, &child);
                }
                entry.shrink();
                parent.list_mut(schema, id).put(keys.into(), entry);
            }
            _ => {
                let mut inner = Inner::default();
                for child in node.children() {
                    self.add_node(&mut inner, &child);
                }
                inner.shrink();
                if !inner.is_empty() {
                    parent.put(schema, id, Child::Container(inner));
                }
            }
        }
    }

    fn term_value(&mut self, id: SchemaId, node: &DataNodeRef<'_, '_>) -> Value {
        let info = self.schema.node(id);
        let kind = match info.leaf_type.as_ref().map(|t| t.base) {
            Some(ly::BaseType::Union) => JsonKind::of(ly::resolved_base_type(node)),
            _ => info.json_kind(),
        };
        let text = match ly::canonical(node) {
            Some((ptr, text)) => self
                .values
                .entry(ptr)
                .or_insert_with(|| Arc::from(text))
                .clone(),
            None => Arc::from(""),
        };
        Value::new(text, kind)
    }
}

/// Reads JSON this crate printed (the datastore's own records) without libyang: names are
/// checked against the schema, values are taken as written, since they were checked before
/// they were stored. Loading 100 000 stored flows this way takes a fraction of a libyang parse.
pub fn from_trusted_json(schema: &Schema, text: &str) -> Result<DataTree, Error> {
    let fail = |path: &str, message: String| Error::Invalid(vec![Problem::new(path, message)]);
    let doc: serde_json::Value =
        serde_json::from_str(text).map_err(|e| fail("", format!("not JSON: {e}")))?;
    let serde_json::Value::Object(members) = doc else {
        return Err(fail("", "expected a JSON object".into()));
    };
    let mut root = Inner::default();
    for (name, value) in &members {
        let id = schema
            .root(name)
            .ok_or_else(|| fail(name, "unknown top-level node".into()))?;
        trusted_member(schema, &mut root, id, value).map_err(|e| fail(name, e.to_string()))?;
    }
    Ok(DataTree::from_root(root))
}

/// What stored JSON holds that this crate would not have printed.
#[derive(Debug, thiserror::Error)]
enum NotPrinted {
    #[error("expected an array")]
    NotAnArray,
    #[error("expected an object")]
    NotAnObject,
    #[error("entry without its key {0}")]
    NoKey(String),
    #[error("unknown node {name} in {parent}")]
    UnknownNode { name: String, parent: String },
    #[error("unexpected value {0}")]
    UnexpectedValue(serde_json::Value),
}

fn trusted_member(
    schema: &Schema,
    parent: &mut Inner,
    id: SchemaId,
    value: &serde_json::Value,
) -> Result<(), NotPrinted> {
    let node = schema.node(id);
    match node.kind {
        NodeKind::Leaf => parent.put(schema, id, Child::Leaf(trusted_scalar(value)?)),
        NodeKind::LeafList => {
            let items = value.as_array().ok_or(NotPrinted::NotAnArray)?;
            let list = parent.leaf_list_mut(schema, id);
            for item in items {
                list.insert(trusted_scalar(item)?, node.user_ordered);
            }
        }
        NodeKind::List => {
            let entries = value.as_array().ok_or(NotPrinted::NotAnArray)?;
            for entry in entries {
                let (keys, inner) = trusted_entry(schema, id, entry)?;
                parent.list_mut(schema, id).put(keys.into(), inner);
            }
        }
        _ => {
            let inner = trusted_object(schema, id, value, &[])?;
            if !inner.is_empty() {
                parent.put(schema, id, Child::Container(inner));
            }
        }
    }
    Ok(())
}

fn trusted_entry(
    schema: &Schema,
    list: SchemaId,
    entry: &serde_json::Value,
) -> Result<(Vec<Value>, Inner), NotPrinted> {
    let object = entry.as_object().ok_or(NotPrinted::NotAnObject)?;
    let key_ids = &schema.node(list).keys;
    let mut keys = Vec::with_capacity(key_ids.len());
    for key in key_ids {
        let name = &schema.node(*key).name;
        let value = object
            .get(name)
            .ok_or_else(|| NotPrinted::NoKey(name.clone()))?;
        keys.push(trusted_scalar(value)?);
    }
    let inner = trusted_object(schema, list, entry, key_ids)?;
    Ok((keys, inner))
}

fn trusted_object(
    schema: &Schema,
    id: SchemaId,
    value: &serde_json::Value,
    skip: &[SchemaId],
) -> Result<Inner, NotPrinted> {
    let object = value.as_object().ok_or(NotPrinted::NotAnObject)?;
    let mut inner = Inner::default();
    for (name, member) in object {
        let child = schema
            .child(id, name)
            .ok_or_else(|| NotPrinted::UnknownNode {
                name: name.clone(),
                parent: schema.node(id).name.clone(),
            })?;
        if !skip.contains(&child) {
            trusted_member(schema, &mut inner, child, member)?;
        }
    }
    inner.shrink();
    Ok(inner)
}

fn trusted_scalar(value: &serde_json::Value) -> Result<Value, NotPrinted> {
    Ok(match value {
        serde_json::Value::Number(n) => Value::new(n.to_string(), JsonKind::Number),
        serde_json::Value::String(s) => Value::new(s.as_str(), JsonKind::String),
        serde_json::Value::Bool(b) => Value::new(b.to_string(), JsonKind::Bool),
        serde_json::Value::Array(a) if a.len() == 1 && a[0].is_null() => {
            Value::new("", JsonKind::Empty)
        }
        other => return Err(NotPrinted::UnexpectedValue(other.clone())),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    const REPEATED: &str = r#"{"ecofilter-balancer:ports": {"port": [
        {"name": "p1", "number": 1, "speed": "100g", "mtu": 9000, "mtu": 1500}]}}"#;

    #[test]
    fn a_member_named_twice_is_refused_whatever_libyang_is_asked_to_check() {
        let schema = Schema::load().unwrap();
        let refusals = [
            from_json(&schema, REPEATED, Check::Types).unwrap_err(),
            from_json(&schema, REPEATED, Check::Complete).unwrap_err(),
            from_json_validating(&schema, REPEATED, |_| ()).unwrap_err(),
        ];
        for e in refusals {
            let problems = e.problems();
            assert_eq!(problems.len(), 1, "{e}");
            assert_eq!(
                problems[0].path,
                "/ecofilter-balancer:ports/port[name='p1']"
            );
            assert!(problems[0].message.contains("\"mtu\" appears twice"), "{e}");
        }
    }

    #[test]
    fn large_input_is_checked_while_libyang_parses_with_the_same_verdict() {
        let schema = Schema::load().unwrap();
        let flows: Vec<String> = (0..30_000)
            .map(|i| format!(r#"{{"name": "f{i}", "priority": {i}}}"#))
            .collect();
        let site = |last: &str| {
            format!(
                r#"{{"ecofilter-balancer:ecofilter-balancer": {{"flow": [{}, {last}]}}}}"#,
                flows.join(", ")
            )
        };
        let fine = site(r#"{"name": "last", "priority": 1}"#);
        assert!(fine.len() > CHECK_ALONGSIDE_FROM);
        assert!(from_json(&schema, &fine, Check::Types).is_ok());
        let repeated = site(r#"{"name": "last", "priority": 1, "priority": 2}"#);
        let e = from_json(&schema, &repeated, Check::Types).unwrap_err();
        assert_eq!(
            e.problems()[0].path,
            "/ecofilter-balancer:ecofilter-balancer/flow[name='last']"
        );
        let e = from_json(&schema, &format!("{fine} trailing"), Check::Types).unwrap_err();
        assert!(e.to_string().contains("trailing characters"), "{e}");
    }

    /// Found by fuzzing: libyang parsing and validating in one call crashed on an entry
    /// without its key that holds a reference.
    #[test]
    fn an_entry_without_its_key_holding_a_reference_is_refused_not_a_crash() {
        let schema = Schema::load().unwrap();
        let text = r#"{"ecofilter-balancer:ecofilter-balancer":{"flow":[{"name":"a"},
            {"nam}e":"b","action":{"to-ecofilter":{"ecofilter-unit":"u"}}},
            {"name":"c","match":{"dst-ipv4":"54.10/17"}}]}}"#;
        for check in [Check::Types, Check::Complete] {
            let e = from_json(&schema, text, check).unwrap_err();
            assert!(
                e.to_string()
                    .contains("List instance is missing its key \"name\""),
                "{e}"
            );
        }
        // Validation still reports what only it finds.
        let dangling = r#"{"ecofilter-balancer:ecofilter-balancer":{"flow":[
            {"name":"b","action":{"to-ecofilter":{"ecofilter-unit":"u"}}}]}}"#;
        let e = from_json(&schema, dangling, Check::Complete).unwrap_err();
        assert!(e.to_string().contains("ecofilter-unit"), "{e}");
        assert!(from_json(&schema, dangling, Check::Types).is_ok());
    }

    #[test]
    fn bytes_after_the_configuration_are_refused() {
        let schema = Schema::load().unwrap();
        let e = from_json(&schema, "{} garbage", Check::Types).unwrap_err();
        assert!(e.to_string().contains("trailing characters"), "{e}");
        assert!(from_json(&schema, " {}\n", Check::Complete).is_ok());
    }
}
