//! Operations of the model (`rpc` statements): their input checked against the schema, and
//! their output shaped by it.

use std::collections::BTreeMap;

use crate::schema::{JsonKind, NodeKind, Schema, SchemaId};
use crate::{Problem, Value};

/// The input parameters of an RPC call, checked and in canonical form, by leaf name.
pub type Input = BTreeMap<String, Value>;

/// The schema nodes of an RPC's input and output.
pub fn operation(
    schema: &Schema,
    name: &str,
) -> Result<(SchemaId, Option<SchemaId>, Option<SchemaId>), Problem> {
    let rpc = schema
        .rpcs()
        .iter()
        .copied()
        .find(|id| schema.node(*id).name == name)
        .ok_or_else(|| {
            let known: Vec<&str> = schema
                .rpcs()
                .iter()
                .map(|id| schema.node(*id).name.as_str())
                .collect();
            Problem::new(
                format!("/{}", name),
                format!("no such operation; operations are: {}", known.join(", ")),
            )
        })?;
    let part = |kind: NodeKind| {
        schema
            .node(rpc)
            .children
            .iter()
            .copied()
            .find(|id| schema.node(*id).kind == kind)
    };
    Ok((rpc, part(NodeKind::Input), part(NodeKind::Output)))
}

/// Checks an RPC's input (a JSON object of its parameters, leaves only) against the schema:
/// unknown parameters, wrong values and missing mandatory ones are each one problem.
pub fn parse_input(
    schema: &Schema,
    name: &str,
    input: &serde_json::Value,
) -> Result<Input, Vec<Problem>> {
    let (rpc, input_node, _) = operation(schema, name).map_err(|p| vec![p])?;
    let path = |leaf: &str| format!("/{}:{}/{leaf}", schema.node(rpc).module, name);
    let empty = serde_json::Map::new();
    let members = match input {
        serde_json::Value::Object(m) => m,
        serde_json::Value::Null => &empty,
        _ => {
            return Err(vec![Problem::new(
                path(""),
                "the input is a JSON object of parameters",
            )]);
        }
    };
    let params: Vec<SchemaId> = input_node
        .map(|i| schema.node(i).children.clone())
        .unwrap_or_default();
    let names = || {
        params
            .iter()
            .map(|id| schema.node(*id).name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut values = Input::new();
    let mut problems = Vec::new();
    let mut given = Vec::new();
    for (key, value) in members {
        let key = key.rsplit(':').next().unwrap_or(key);
        given.push(key.to_string());
        let Some(id) = params
            .iter()
            .copied()
            .find(|id| schema.node(*id).name == key)
        else {
            problems.push(Problem::new(
                path(key),
                format!("unknown parameter; parameters are: {}", names()),
            ));
            continue;
        };
        let text = match value {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Number(n) => n.to_string(),
            serde_json::Value::Bool(b) => b.to_string(),
            _ => String::new(),
        };
        match schema.value(id, &text) {
            Ok(v) => {
                values.insert(key.to_string(), v);
            }
            Err(e) => problems.push(Problem::new(
                path(key),
                format!("{e}; expected {}", schema.node(id).accepts()),
            )),
        }
    }
    for id in &params {
        let node = schema.node(*id);
        if node.mandatory && !given.contains(&node.name) {
            problems.push(Problem::new(
                path(&node.name),
                format!("missing; expected {}", node.accepts()),
            ));
        }
        if let (false, Some(default)) = (values.contains_key(&node.name), &node.default) {
            values.insert(
                node.name.clone(),
                Value::new(default.as_str(), node.json_kind()),
            );
        }
    }
    if problems.is_empty() {
        Ok(values)
    } else {
        Err(problems)
    }
}

/// Keeps, of a JSON object, the members that are leaves of the RPC's output, encoded as
/// RFC 7951 says for their types (numbers, strings, booleans).
pub fn shape_output(schema: &Schema, name: &str, output: &serde_json::Value) -> serde_json::Value {
    let Ok((_, _, Some(output_node))) = operation(schema, name) else {
        return serde_json::Value::Object(Default::default());
    };
    let mut shaped = serde_json::Map::new();
    for id in &schema.node(output_node).children {
        let node = schema.node(*id);
        let Some(value) = output.get(&node.name) else {
            continue;
        };
        let text = match value {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Null => continue,
            other => other.to_string(),
        };
        let kind = schema
            .value(*id, &text)
            .map(|v| v.kind())
            .unwrap_or(JsonKind::String);
        let encoded = match kind {
            JsonKind::Number => text
                .parse::<i64>()
                .map(serde_json::Value::from)
                .unwrap_or(serde_json::Value::String(text)),
            JsonKind::Bool => serde_json::Value::Bool(text == "true"),
            JsonKind::Empty => serde_json::json!([null]),
            JsonKind::String => serde_json::Value::String(text),
        };
        shaped.insert(node.name.clone(), encoded);
    }
    serde_json::Value::Object(shaped)
}
