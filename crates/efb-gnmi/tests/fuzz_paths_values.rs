//! Property-based fuzzing of what a gNMI client sends: paths (origin, prefix, elements
//! with keys, wildcards) and values (TypedValue: JSON and JSON_IETF bytes, every scalar
//! field, leaf-lists). Never a panic; a refusal is a `PathError` or `DecodeError` whose
//! message grows with the input at most; a path or value written by this server for a
//! node of the model reads back as that node. Case counts keep this binary to a few
//! seconds (`EFB_FUZZ_CASES` for more, see efb-fuzz).

#![allow(clippy::unwrap_used)]
#![allow(deprecated)] // the deprecated TypedValue fields are read too: fuzzed as well

use std::collections::HashMap;

use efb_fuzz::json::{mutate, mutations};
use efb_fuzz::{config, model, schema};
use efb_gnmi::decode::{DecodeError, fragment};
use efb_gnmi::encode::{Encoder, Encoding, Filter};
use efb_gnmi::path::{Pattern, RFC7951_ORIGIN, Relation, Style, to_gnmi};
use efb_yang::json::{PrintOptions, to_json};
use efb_yang::{DataPath, DataTree, NodeKind};
use gnmi_proto::gnmi::{self, TypedValue, typed_value::Value as V};
use proptest::prelude::*;

/// The styles clients write paths in (see efb_gnmi::path).
fn style() -> impl Strategy<Value = Style> {
    let module = schema().module().name.clone();
    (
        prop_oneof![
            Just(String::new()),
            Just(module),
            Just(RFC7951_ORIGIN.to_string())
        ],
        any::<bool>(),
    )
        .prop_map(|(origin, qualified)| Style { origin, qualified })
}

/// Any path element: names of the model (bare, qualified, of another module), wildcards,
/// nothing; keys named like the model's or not, values of any kind or `*`.
fn elem() -> impl Strategy<Value = gnmi::PathElem> {
    let schema = schema();
    let mut names: Vec<String> = schema.nodes().map(|n| n.name.clone()).collect();
    names.extend(["*", "...", "", "other:ports", "ecofilter-balancer:ports"].map(String::from));
    let key = (
        prop_oneof![
            3 => Just("name".to_string()),
            1 => proptest::sample::select(vec!["number", "lane", "x", ""]).prop_map(String::from),
        ],
        prop_oneof![3 => model::name(), 1 => Just("*".to_string()), 1 => ".{0,8}"],
    );
    (
        prop_oneof![
            4 => proptest::sample::select(names),
            2 => proptest::sample::select(vec!["*".to_string(), "...".to_string()]),
            1 => ".{0,10}",
        ],
        proptest::collection::vec(key, 0..3),
    )
        .prop_map(|(name, keys)| gnmi::PathElem {
            name,
            key: keys.into_iter().collect::<HashMap<_, _>>(),
        })
}

fn gnmi_path() -> impl Strategy<Value = gnmi::Path> {
    (
        prop_oneof![
            3 => Just(String::new()),
            1 => Just("ecofilter-balancer".to_string()),
            1 => Just(RFC7951_ORIGIN.to_string()),
            1 => ".{0,8}",
        ],
        proptest::collection::vec(elem(), 0..12),
    )
        .prop_map(|(origin, elem)| gnmi::Path {
            origin,
            elem,
            ..gnmi::Path::default()
        })
}

/// A TypedValue of any field, JSON ones with any JSON, mutated model JSON or any bytes.
fn typed_value() -> impl Strategy<Value = TypedValue> {
    let json = prop_oneof![
        efb_fuzz::json::value().prop_map(|v| v.to_string().into_bytes()),
        (model::tree(3), mutations()).prop_map(|(tree, m)| {
            mutate(&to_json(schema(), &tree, PrintOptions::default()), &m).into_bytes()
        }),
        proptest::collection::vec(any::<u8>(), 0..24),
    ];
    let scalar = prop_oneof![
        efb_fuzz::json::text().prop_map(V::StringVal),
        efb_fuzz::json::text().prop_map(V::AsciiVal),
        any::<i64>().prop_map(V::IntVal),
        any::<u64>().prop_map(V::UintVal),
        (0u64..70_000).prop_map(V::UintVal),
        any::<bool>().prop_map(V::BoolVal),
        any::<f64>().prop_map(V::DoubleVal),
        any::<f32>().prop_map(V::FloatVal),
        (any::<i64>(), prop_oneof![0u32..24, any::<u32>()])
            .prop_map(|(digits, precision)| V::DecimalVal(gnmi::Decimal64 { digits, precision })),
        proptest::collection::vec(any::<u8>(), 0..8).prop_map(V::BytesVal),
        proptest::collection::vec(any::<u8>(), 0..8).prop_map(V::ProtoBytes),
    ];
    let one = prop_oneof![
        2 => json.clone().prop_map(V::JsonIetfVal),
        1 => json.prop_map(V::JsonVal),
        2 => scalar.clone(),
    ];
    prop_oneof![
        5 => one.prop_map(|v| TypedValue { value: Some(v) }),
        1 => proptest::collection::vec(scalar, 0..4).prop_map(|items| TypedValue {
            value: Some(V::LeaflistVal(gnmi::ScalarArray {
                element: items
                    .into_iter()
                    .map(|v| TypedValue { value: Some(v) })
                    .collect(),
            })),
        }),
        1 => Just(TypedValue { value: None }),
    ]
}

/// What a Set writes at `path`: the data path without a leaf-list item (gNMI names the
/// leaf-list), as a client names it.
fn without_item(mut path: DataPath) -> DataPath {
    let schema = schema();
    if let Some(last) = path.segments.last_mut()
        && schema.node(last.node).kind == NodeKind::LeafList
    {
        last.keys.clear();
    }
    path
}

/// A tree holding `path`, and the data path.
fn tree_with_edit() -> impl Strategy<Value = (DataTree, DataPath)> {
    (model::tree(6), model::edit()).prop_map(|(mut tree, (path, value))| {
        let _ = tree.set(schema(), &path, value);
        (tree, without_item(path))
    })
}

fn with_defaults(tree: &DataTree) -> String {
    to_json(
        schema(),
        tree,
        PrintOptions {
            with_defaults: true,
            pretty: false,
        },
    )
}

fn bounded(e: &impl std::fmt::Display, input: usize) -> Result<(), TestCaseError> {
    let message = e.to_string();
    prop_assert!(!message.is_empty(), "a refusal without a message");
    prop_assert!(
        message.len() <= 4096 + 4 * input,
        "a message of {} bytes for an input of {input}",
        message.len()
    );
    Ok(())
}

proptest! {
    #![proptest_config(config(5000))]

    /// A data path written as a gNMI path in any client's style, split anywhere into prefix
    /// and path, reads back as the node it was, which the pattern selects. (A key that is
    /// `*` is gNMI's wildcard: an entry named so is read, with its siblings, through it.)
    #[test]
    fn gnmi_paths_of_the_model_read_back(path in model::data_path(), style in style(), split in any::<usize>()) {
        let schema = schema();
        let path = without_item(path);
        prop_assume!(path.segments.iter().all(|s| s.keys.iter().all(|k| k.as_str() != "*")));
        let mut written = to_gnmi(schema, &path, &style);
        let at = split % (written.elem.len() + 1);
        let prefix = gnmi::Path {
            origin: written.origin.clone(),
            elem: written.elem.drain(..at).collect(),
            ..gnmi::Path::default()
        };
        let pattern = Pattern::parse(schema, Some(&prefix), Some(&written));
        prop_assert!(pattern.is_ok(), "{prefix:?} {written:?}: {pattern:?}");
        let pattern = pattern.unwrap();
        prop_assert!(!pattern.has_wildcards());
        prop_assert_eq!(pattern.data_path(schema).unwrap(), path.clone());
        prop_assert_eq!(pattern.relation(schema, &path), Relation::Inside);
    }

    /// Any path (origins, names, keys, wildcards): a pattern or a proper refusal; a pattern
    /// expands over a configuration to at most what it holds, and relates to any data path.
    #[test]
    fn any_gnmi_path_is_read_or_refused(prefix in proptest::option::of(gnmi_path()), path in proptest::option::of(gnmi_path()), tree in model::tree(6), other in model::data_path()) {
        let schema = schema();
        let input: usize = prefix.iter().chain(&path).map(|p| format!("{p:?}").len()).sum();
        match Pattern::parse(schema, prefix.as_ref(), path.as_ref()) {
            Ok(pattern) => {
                let found = pattern.expand(schema, &tree);
                let unique: std::collections::HashSet<_> = found.iter().collect();
                prop_assert_eq!(unique.len(), found.len(), "a node listed twice");
                let mut leaves = Vec::new();
                efb_gnmi::encode::leaves(schema, &tree, &DataPath::root(), &mut leaves);
                prop_assert!(found.len() <= 64 * (leaves.len() + 1), "{} paths", found.len());
                let _ = pattern.relation(schema, &other);
                if let Err(e) = pattern.data_path(schema) {
                    bounded(&e, input)?;
                }
            }
            Err(e) => bounded(&e, input)?,
        }
    }

    /// A node of a configuration, as this server writes it in JSON or JSON_IETF, decodes
    /// back into that node (the defaults it writes aside).
    #[test]
    fn json_values_of_a_node_read_back(case in tree_with_edit(), ietf in any::<bool>()) {
        let schema = schema();
        let (tree, path) = case;
        let encoding = if ietf { Encoding::JsonIetf } else { Encoding::Json };
        let encoder = Encoder { schema, encoding, filter: Filter::Config };
        let Some(json) = encoder.node(&tree, &path) else {
            return Ok(());
        };
        let value = efb_gnmi::encode::json_typed(encoding, json.clone());
        let decoded = fragment(schema, &path, Some(&value));
        prop_assert!(decoded.is_ok(), "{} = {json}: {decoded:?}", path.display(schema));
        let mut merged = tree.clone();
        merged.merge(schema, &decoded.unwrap());
        prop_assert_eq!(with_defaults(&merged), with_defaults(&tree), "{} = {}", path.display(schema), json);
    }

    /// Each leaf of a node as a PROTO scalar decodes back into that leaf.
    #[test]
    fn proto_scalars_of_a_node_read_back(case in tree_with_edit()) {
        let schema = schema();
        let (tree, path) = case;
        let encoder = Encoder { schema, encoding: Encoding::Proto, filter: Filter::Config };
        let mut leaves = Vec::new();
        encoder.leaves(&tree, &path, &mut leaves);
        for (leaf, value) in leaves {
            if schema.node(value.id()).is_key {
                continue;
            }
            let typed = encoder.typed(&value);
            let decoded = fragment(schema, &leaf, Some(&typed));
            prop_assert!(decoded.is_ok(), "{} = {typed:?}: {decoded:?}", leaf.display(schema));
            let mut merged = tree.clone();
            merged.merge(schema, &decoded.unwrap());
            prop_assert_eq!(with_defaults(&merged), with_defaults(&tree), "{} = {:?}", leaf.display(schema), typed);
        }
    }

    /// Any value at any node of the model: a fragment or a proper refusal.
    #[test]
    fn any_value_at_any_node_decodes_or_is_refused(path in model::data_path(), value in typed_value(), whole in any::<bool>()) {
        let schema = schema();
        let path = if whole { DataPath::root() } else { without_item(path) };
        let input = format!("{value:?}").len();
        match fragment(schema, &path, Some(&value)) {
            Ok(tree) => {
                let printed = to_json(schema, &tree, PrintOptions::default());
                prop_assert!(printed.len() <= 1024 + 8 * input, "{} bytes from {input}", printed.len());
            }
            Err(e @ (DecodeError::Invalid(_) | DecodeError::Unsupported(_))) => bounded(&e, input)?,
        }
    }
}
