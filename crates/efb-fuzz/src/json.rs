//! Arbitrary JSON, and text mutated a little: what a client may send where JSON goes.

use proptest::prelude::*;
use serde_json::{Map, Number, Value};

use crate::schema;

/// A member name: a name of the model (bare or module-qualified, so that objects look
/// like configuration often enough to go deep), or any text.
pub fn member_name() -> BoxedStrategy<String> {
    let schema = schema();
    let mut names: Vec<String> = schema.nodes().map(|n| n.name.clone()).collect();
    names.extend(
        schema
            .roots()
            .iter()
            .map(|id| format!("{}:{}", schema.module().name, schema.node(*id).name)),
    );
    names.sort();
    names.dedup();
    prop_oneof![
        4 => proptest::sample::select(names),
        1 => ".{0,12}",
        1 => Just("other-module:ports".to_string()),
    ]
    .boxed()
}

/// A JSON scalar: every kind, with the edges of numbers and strings.
pub fn scalar() -> BoxedStrategy<Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (0u32..70_000).prop_map(Value::from),
        any::<f64>().prop_map(|f| Number::from_f64(f).map_or(Value::Null, Value::Number)),
        text().prop_map(Value::String),
    ]
    .boxed()
}

/// Short text that looks like values of the model (names, numbers, ranges, addresses) or
/// like nothing at all (quotes, escapes, control characters, other scripts).
pub fn text() -> BoxedStrategy<String> {
    prop_oneof![
        "[a-z0-9._/-]{0,10}",
        "[0-9]{1,6}(-[0-9]{1,6})?",
        "[0-9]{1,3}\\.[0-9]{1,3}\\.[0-9]{1,3}\\.[0-9]{1,3}/[0-9]{1,2}",
        "[0-9a-f]{2}(:[0-9a-f]{2}){5}",
        Just(String::new()),
        Just("true".to_string()),
        "[ '\"\\\\|;#{}\\[\\]=/:*.\t\n\r\u{0}\u{1b}\u{202e}é€𝄞]{1,8}",
        ".{0,16}",
    ]
    .boxed()
}

/// Any JSON value, nested up to 6 levels, model names among the member names.
pub fn value() -> BoxedStrategy<Value> {
    scalar()
        .prop_recursive(6, 96, 8, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::vec((member_name(), inner), 0..6).prop_map(|members| {
                    Value::Object(members.into_iter().collect::<Map<String, Value>>())
                }),
            ]
        })
        .boxed()
}

/// One small change of a text.
#[derive(Clone, Debug)]
pub enum Mutation {
    /// A character at a place (as a fraction of the length).
    Insert(usize, char),
    /// Some characters removed.
    Delete(usize, usize),
    /// A stretch written twice.
    Repeat(usize, usize),
    /// The text cut there.
    Truncate(usize),
}

/// A few mutations of a text, biased towards JSON's own punctuation.
pub fn mutations() -> BoxedStrategy<Vec<Mutation>> {
    let punctuation = proptest::sample::select(vec![
        '{', '}', '[', ']', '"', ',', ':', '\\', '0', '-', 'e', 'n', ' ', '\u{0}', 'é',
    ]);
    let one = prop_oneof![
        (any::<usize>(), punctuation).prop_map(|(at, c)| Mutation::Insert(at, c)),
        (any::<usize>(), 1usize..8).prop_map(|(at, n)| Mutation::Delete(at, n)),
        (any::<usize>(), 1usize..24).prop_map(|(at, n)| Mutation::Repeat(at, n)),
        any::<usize>().prop_map(Mutation::Truncate),
    ];
    proptest::collection::vec(one, 1..4).boxed()
}

/// `text` with `mutations` applied, at character boundaries.
pub fn mutate(text: &str, mutations: &[Mutation]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for m in mutations {
        let len = chars.len();
        let at = |i: usize| if len == 0 { 0 } else { i % (len + 1) };
        match *m {
            Mutation::Insert(i, c) => chars.insert(at(i), c),
            Mutation::Delete(i, n) => {
                let from = at(i).min(len);
                let to = (from + n).min(len);
                chars.drain(from..to);
            }
            Mutation::Repeat(i, n) => {
                let from = at(i).min(len);
                let to = (from + n).min(len);
                let copy: Vec<char> = chars[from..to].to_vec();
                let tail = chars.split_off(to);
                chars.extend(copy);
                chars.extend(tail);
            }
            Mutation::Truncate(i) => chars.truncate(at(i)),
        }
    }
    chars.into_iter().collect()
}
