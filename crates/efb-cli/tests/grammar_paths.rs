//! Every data path, leaf and operation `cli-grammar/operational.toml` names exists in the
//! YANG schema: a misspelt leaf would otherwise show as "unknown" for ever, with nothing
//! failing.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;

use efb_cli::grammar::{Column, Drawing, GRAMMAR_TEXT, Grammar, Render, View};
use efb_yang::{BaseType, DataPath, NodeKind, Schema, SchemaId};

/// Every reference of `grammar` the schema does not have, each naming the command or view.
fn problems(schema: &Schema, grammar: &Grammar) -> Vec<String> {
    let mut out = Vec::new();
    let mut drawn = BTreeSet::new();
    for command in &grammar.commands {
        let drawings: Vec<&Render> = command
            .render
            .iter()
            .chain(command.switches.values())
            .collect();
        let views: Vec<&String> = drawings
            .iter()
            .filter_map(|d| match d {
                Render::View(name) => Some(name),
                _ => None,
            })
            .collect();
        drawn.extend(views.iter().map(|v| v.as_str()));
        let words = &command.words;
        if let Some(get) = &command.get {
            let node = match DataPath::parse(schema, &get.path).map(|p| p.node()) {
                Ok(Some(node)) => node,
                Ok(None) => {
                    out.push(format!("{words}: path {}: the whole data", get.path));
                    continue;
                }
                Err(e) => {
                    out.push(format!("{words}: path {}: {e}", get.path));
                    continue;
                }
            };
            let kind = schema.node(node).kind;
            if let Some(arg) = &get.arg
                && kind != NodeKind::List
            {
                out.push(format!(
                    "{words}: {arg} names an entry, but {} is no list",
                    get.path
                ));
            }
            if let Some(order) = &get.order
                && find(schema, node, &order.leaf).is_none()
            {
                out.push(format!("{words}: order: no {} in {}", order.leaf, get.path));
            }
            for drawing in &drawings {
                match drawing {
                    Render::Drawing(Drawing::Value) if kind != NodeKind::Leaf => {
                        out.push(format!("{words}: a value, but {} is no leaf", get.path));
                    }
                    Render::View(view) => {
                        if let Some(table) = grammar.views.get(view) {
                            let at = format!("{words}: view {view}");
                            check_table(schema, &at, table, node, &mut out);
                        }
                    }
                    _ => {}
                }
            }
        }
        if let Some(rpc) = &command.rpc {
            let Some(id) = schema.root(rpc).filter(|id| schema.rpcs().contains(id)) else {
                out.push(format!("{words}: no operation {rpc}"));
                continue;
            };
            let input = part(schema, id, NodeKind::Input);
            for param in &command.params {
                if input.and_then(|i| find(schema, i, &param.leaf)).is_none() {
                    out.push(format!(
                        "{words}: {}: {rpc} has no input {}",
                        param.word, param.leaf
                    ));
                }
            }
            for confirm in &command.confirm {
                for leaf in std::iter::once(&confirm.leaf).chain(confirm.absent.keys()) {
                    if !command.params.iter().any(|p| &p.leaf == leaf) {
                        out.push(format!("{words}: confirm: no parameter {leaf}"));
                    }
                }
            }
            let output = part(schema, id, NodeKind::Output);
            for view in views.iter().filter_map(|v| grammar.views.get(*v)) {
                for field in &view.fields {
                    for leaf in std::iter::once(&field.leaf).chain(&field.with) {
                        if output.and_then(|o| find(schema, o, leaf)).is_none() {
                            out.push(format!(
                                "{words}: field \"{}\": {rpc} has no output {leaf}",
                                field.title
                            ));
                        }
                    }
                }
            }
        }
    }
    for view in grammar.views.keys() {
        if !drawn.contains(view.as_str()) {
            out.push(format!("view {view}: no command draws it"));
        }
    }
    out
}

/// A view of the entries of `list`: heading and columns, or heading then rows of a list
/// inside each entry.
fn check_table(schema: &Schema, at: &str, view: &View, list: SchemaId, out: &mut Vec<String>) {
    check_columns(schema, at, &view.heading, list, out);
    let rows = match &view.rows {
        None => list,
        Some(rows) => match find(schema, list, rows) {
            Some(rows) if schema.node(rows).kind == NodeKind::List => rows,
            _ => {
                out.push(format!(
                    "{at}: rows {rows}: no list {rows} in {}",
                    schema.node(list).schema_path
                ));
                return;
            }
        },
    };
    check_columns(schema, at, &view.columns, rows, out);
}

fn check_columns(
    schema: &Schema,
    at: &str,
    columns: &[Column],
    entry: SchemaId,
    out: &mut Vec<String>,
) {
    for column in columns {
        let title = &column.title;
        match find(schema, entry, &column.leaf) {
            None => out.push(format!(
                "{at}, column \"{title}\": no {} in {}",
                column.leaf,
                schema.node(entry).schema_path
            )),
            // "unknown" is for what the daemon may not know, never for configuration.
            Some(node) if column.state == schema.node(node).config => out.push(format!(
                "{at}, column \"{title}\": {} is {}, but the column says state = {}",
                column.leaf,
                if column.state {
                    "configuration"
                } else {
                    "state"
                },
                column.state
            )),
            // A rate is a counter's growth: of an unsigned number only.
            Some(node) if column.rate && !is_counter(schema, node) => out.push(format!(
                "{at}, column \"{title}\": a rate of {}, which is no counter",
                column.leaf
            )),
            Some(_) => {}
        }
    }
}

fn is_counter(schema: &Schema, node: SchemaId) -> bool {
    schema.node(node).leaf_type.as_ref().is_some_and(|t| {
        matches!(
            t.base,
            BaseType::Uint8 | BaseType::Uint16 | BaseType::Uint32 | BaseType::Uint64
        )
    })
}

/// The node at `relative` (`state/counters/in-frames`) under `from`.
fn find(schema: &Schema, from: SchemaId, relative: &str) -> Option<SchemaId> {
    relative
        .split('/')
        .try_fold(from, |node, name| schema.child(node, name))
}

fn part(schema: &Schema, rpc: SchemaId, kind: NodeKind) -> Option<SchemaId> {
    schema
        .node(rpc)
        .children
        .iter()
        .copied()
        .find(|c| schema.node(*c).kind == kind)
}

fn problems_of(text: &str) -> Vec<String> {
    let schema = Schema::load().unwrap();
    problems(&schema, &Grammar::parse(text).unwrap())
}

#[test]
fn every_path_and_leaf_of_the_grammar_is_in_the_schema() {
    let found = problems_of(GRAMMAR_TEXT);
    assert!(found.is_empty(), "{found:#?}");
}

#[test]
fn a_misspelt_reference_is_named() {
    let broken = GRAMMAR_TEXT
        .replace("state/counters/in-frames", "state/counters/in-frame")
        .replace("ecofilter-balancer/link\"", "ecofilter-balancer/links\"")
        .replace("leaf = \"ip-proto\"", "leaf = \"proto\"")
        .replace(
            "{ leaf = \"mode\", value = \"bypass\"",
            "{ leaf = \"mod\", value = \"bypass\"",
        )
        .replace("leaf = \"software-bypass\"", "leaf = \"sw-bypass\"")
        .replace(
            "leaf = \"priority\", descending",
            "leaf = \"prio\", descending",
        )
        .replace(
            "{ title = \"Speed\", leaf = \"speed\" }",
            "{ title = \"Speed\", leaf = \"speed\", state = true }",
        )
        .replace(
            "{ title = \"Oper\", leaf = \"state/oper-status\", state = true },\n  { title = \"In frames\"",
            "{ title = \"Oper\", leaf = \"state/oper-status\", state = true, rate = true },\n  { title = \"In frames\"",
        );
    let found = problems_of(&broken);
    let expected = [
        "show ports: view port-statistics, column \"In frames\": no state/counters/in-frame in /ecofilter-balancer:ports/port",
        "show ecofilter-balancer link: path /ecofilter-balancer:ecofilter-balancer/links",
        "show ecofilter-balancer lookup-session: proto: lookup-session has no input proto",
        "call ecofilter-balancer set-bypass-ecofilter-unit: confirm: no parameter mod",
        "show ecofilter-balancer lookup-session: field \"software-bypass\": lookup-session has no output sw-bypass",
        "show ports: view ports, column \"Speed\": speed is configuration, but the column says state = true",
        "show ecofilter-balancer flow: order: no prio in /ecofilter-balancer:ecofilter-balancer/flow",
        "monitor ports: view monitor-ports, column \"In frames\": no state/counters/in-frame in",
        "monitor ports: view monitor-ports, column \"In frames/s\": no state/counters/in-frame in",
        "monitor ecofilter-balancer flow: order: no prio in",
        "monitor ports: view monitor-ports, column \"Oper\": a rate of state/oper-status, which is no counter",
    ];
    assert_eq!(found.len(), expected.len(), "{found:#?}");
    for expected in expected {
        assert!(
            found.iter().any(|f| f.starts_with(expected)),
            "{expected}\nnot in: {found:#?}"
        );
    }
}
