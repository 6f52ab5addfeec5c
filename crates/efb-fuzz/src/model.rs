//! Inputs the schema says are valid: a leaf's values (by its type, checked by libyang),
//! data paths to configuration nodes, configuration trees. Properties render them, parse
//! them back and compare; or mutate them into inputs that are nearly valid.

use efb_yang::{
    BaseType, DataPath, DataTree, NodeKind, Schema, SchemaId, Segment, TypeInfo, Value,
};
use proptest::prelude::*;

use crate::schema;

/// Text a value of type `t` may be written as: mostly values of the type, some not.
fn candidate(t: &TypeInfo) -> BoxedStrategy<String> {
    match t.base {
        b if b.is_integer() || b == BaseType::Decimal64 => {
            let mut edges: Vec<i128> = vec![0, 1, 2, 7, 64, 100, 255, 1500, 9000, 65535];
            for n in numbers_in(t.range.as_deref().unwrap_or_default()) {
                edges.extend([n - 1, n, n + 1]);
            }
            prop_oneof![
                3 => proptest::sample::select(edges).prop_map(|n| n.to_string()),
                1 => any::<i64>().prop_map(|n| n.to_string()),
                1 => (0u32..20_000).prop_map(|n| n.to_string()),
                1 => (0u32..100, 0u32..100).prop_map(|(a, b)| format!("{a}.{b}")),
            ]
            .boxed()
        }
        BaseType::Bool => proptest::sample::select(vec!["true", "false"])
            .prop_map(str::to_string)
            .boxed(),
        BaseType::Empty => Just(String::new()).boxed(),
        BaseType::Enumeration if !t.enums.is_empty() => {
            proptest::sample::select(t.enums.iter().map(|e| e.name.clone()).collect::<Vec<_>>())
                .boxed()
        }
        BaseType::Union if !t.members.is_empty() => {
            proptest::strategy::Union::new(t.members.iter().map(candidate)).boxed()
        }
        BaseType::LeafRef => match &t.leafref_real {
            Some(real) => candidate(real),
            None => name().boxed(),
        },
        _ => match t.typedef.as_deref() {
            Some("ipv4-prefix" | "ipv4-address") => (any::<[u8; 4]>(), 0u8..=32)
                .prop_map(|(a, n)| format!("{}.{}.{}.{}/{n}", a[0], a[1], a[2], a[3]))
                .boxed(),
            Some("ipv6-prefix" | "ipv6-address") => (any::<[u16; 3]>(), 0u8..=128)
                .prop_map(|(a, n)| format!("{:x}:{:x}::{:x}/{n}", a[0], a[1], a[2]))
                .boxed(),
            Some("mac-address" | "phys-address") => any::<[u8; 6]>()
                .prop_map(|m| {
                    m.iter()
                        .map(|b| format!("{b:02x}"))
                        .collect::<Vec<_>>()
                        .join(":")
                })
                .boxed(),
            _ if !t.patterns.is_empty() => {
                let patterned = t
                    .patterns
                    .iter()
                    .filter_map(|p| proptest::string::string_regex(p).ok())
                    .map(|s| s.boxed())
                    .collect::<Vec<_>>();
                if patterned.is_empty() {
                    name().boxed()
                } else {
                    prop_oneof![
                        3 => proptest::strategy::Union::new(patterned),
                        1 => name(),
                    ]
                    .boxed()
                }
            }
            _ => free_text().boxed(),
        },
    }
}

/// The integers a YANG range or length statement names (`1..32 | 40`: 1, 32, 40).
fn numbers_in(range: &str) -> Vec<i128> {
    range
        .split(|c: char| !(c.is_ascii_digit() || c == '-'))
        .filter_map(|w| w.parse().ok())
        .collect()
}

/// A name as people give them, and the odd ones a model's free strings allow.
pub fn name() -> impl Strategy<Value = String> + Clone {
    prop_oneof![
        4 => "[a-z][a-z0-9]{0,3}(-[0-9]{1,2})?",
        1 => proptest::sample::select(vec![
            "p1", "p2", "a b", "it's", "say \"hi\"", "both ' and \"", "é", "a|b", "#1", "x\\y",
            "a=b]", "[1]", "/", "*", "...",
        ])
        .prop_map(str::to_string),
    ]
}

/// Text of a string leaf without a pattern (descriptions): anything, quotes and all.
fn free_text() -> impl Strategy<Value = String> + Clone {
    prop_oneof![
        2 => name(),
        1 => crate::json::text(),
        1 => ".{0,40}",
    ]
}

/// A value of leaf (or leaf-list) `id`, canonical, as libyang checks it.
pub fn value(id: SchemaId) -> BoxedStrategy<Value> {
    let schema = schema();
    let Some(t) = schema.node(id).leaf_type.as_ref() else {
        return Just(Value::new("", efb_yang::JsonKind::Empty)).boxed();
    };
    candidate(t)
        .prop_filter_map("not a value of the leaf", move |text| {
            schema.value(id, &text).ok()
        })
        .boxed()
}

/// A key value of list key `id`: mostly from a few names, so that edits meet in one entry.
fn key(id: SchemaId) -> BoxedStrategy<Value> {
    let schema = schema();
    let few: Vec<Value> = ["p1", "p2", "a", "f-1", "it's", "say \"hi\"", "é", "1", "2"]
        .iter()
        .filter_map(|text| schema.value(id, text).ok())
        .collect();
    if few.is_empty() {
        return value(id);
    }
    prop_oneof![3 => proptest::sample::select(few), 1 => value(id)].boxed()
}

/// Configuration nodes a path can end at: containers, lists, leaves and leaf-lists, keys
/// left out (they come with their entries).
pub fn config_nodes(schema: &Schema) -> Vec<SchemaId> {
    schema
        .nodes()
        .filter(|n| {
            schema.is_config_data(n.id)
                && !n.is_key
                && matches!(
                    n.kind,
                    NodeKind::Container | NodeKind::List | NodeKind::Leaf | NodeKind::LeafList
                )
        })
        .map(|n| n.id)
        .collect()
}

/// One edit of a configuration: a path to a node with every list entry on the way keyed
/// (and the leaf-list item in its last step), and the value a leaf takes.
pub fn edit() -> BoxedStrategy<(DataPath, Option<Value>)> {
    let schema = schema();
    proptest::sample::select(config_nodes(schema))
        .prop_flat_map(move |id| edit_of(schema, id))
        .boxed()
}

fn edit_of(schema: &'static Schema, id: SchemaId) -> BoxedStrategy<(DataPath, Option<Value>)> {
    let lineage = schema.lineage(id);
    let steps: Vec<BoxedStrategy<Segment>> = lineage
        .iter()
        .map(|step| {
            let step = *step;
            let info = schema.node(step);
            if info.kind == NodeKind::List {
                info.keys
                    .iter()
                    .map(|k| key(*k))
                    .collect::<Vec<_>>()
                    .prop_map(move |keys| Segment::with_keys(step, keys))
                    .boxed()
            } else {
                Just(Segment::new(step)).boxed()
            }
        })
        .collect();
    let kind = schema.node(id).kind;
    let value: BoxedStrategy<Option<Value>> = match kind {
        NodeKind::Leaf | NodeKind::LeafList => value(id).prop_map(Some).boxed(),
        _ => Just(None).boxed(),
    };
    (steps, value)
        .prop_map(move |(mut segments, value)| {
            if let (NodeKind::LeafList, Some(v), Some(last)) =
                (kind, value.as_ref(), segments.last_mut())
            {
                last.keys = vec![v.clone()];
            }
            (DataPath { segments }, value)
        })
        .boxed()
}

/// A configuration made by up to `edits` edits: valid in its names, types and keys (not
/// necessarily complete: mandatory leaves and references are another matter).
pub fn tree(edits: usize) -> BoxedStrategy<DataTree> {
    let schema = schema();
    proptest::collection::vec(edit(), 0..=edits)
        .prop_map(move |edits| {
            let mut tree = DataTree::new();
            for (path, value) in &edits {
                // A leaf of another case of a choice replaces what was set there.
                let _ = tree.set(schema, path, value.clone());
            }
            tree
        })
        .boxed()
}

/// A data path to a configuration node (every list on the way keyed).
pub fn data_path() -> BoxedStrategy<DataPath> {
    edit().prop_map(|(path, _)| path).boxed()
}
