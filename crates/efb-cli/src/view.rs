//! Drawing answers for people: aligned tables from the views of the grammar, and the
//! configuration in the familiar curly-brace form, both driven by the schema.

use efb_text_table::Side;
use efb_yang::DataPath;
use efb_yang::schema::{NodeKind, Schema, SchemaId};
use serde_json::Value as Json;

use crate::grammar::{Column, Order, View};

pub mod interfaces;

/// What a state value the daemon does not know yet is shown as.
pub const UNKNOWN: &str = "unknown";

/// The JSON at a data path given as member names: module-qualified at the top.
pub fn at<'a>(doc: &'a Json, names: &[String]) -> Option<&'a Json> {
    names.iter().try_fold(doc, |node, name| node.get(name))
}

/// [`at`], to change what is there.
pub fn at_mut<'a>(doc: &'a mut Json, names: &[String]) -> Option<&'a mut Json> {
    names.iter().try_fold(doc, |node, name| node.get_mut(name))
}

/// The JSON member names along a data path: module-qualified at the top, as RFC 7951
/// prints them; list keys select nothing here.
pub fn member_names(schema: &Schema, path: &DataPath) -> Vec<String> {
    path.segments
        .iter()
        .enumerate()
        .map(|(i, segment)| {
            let node = schema.node(segment.node);
            if i == 0 {
                format!("{}:{}", node.module, node.name)
            } else {
                node.name.clone()
            }
        })
        .collect()
}

/// Only the part of `doc` at the path `names` (as [`member_names`] gives): efbd answers
/// a read with the defaults of other subtrees too (`balancing-method` with a port), which
/// `| display json` and `| display set` must not show as if they had been asked for.
pub fn only_at(doc: &Json, names: &[String]) -> Json {
    let Some((first, rest)) = names.split_first() else {
        return doc.clone();
    };
    match doc.get(first) {
        Some(inner) if !rest.is_empty() && inner.is_object() => {
            let mut object = serde_json::Map::new();
            object.insert(first.clone(), only_at(inner, rest));
            Json::Object(object)
        }
        Some(inner) => serde_json::json!({ first.clone(): inner.clone() }),
        None => Json::Object(serde_json::Map::new()),
    }
}

/// Sorts the entries of every list the system orders, and the items of such leaf-lists,
/// as people count them (`p2` before `p10`): the order `show` lists, the same as Tab's and
/// `| display set`'s. A user-ordered list keeps its order.
pub fn natural_order(schema: &Schema, doc: &mut Json) {
    for root in schema.roots() {
        let node = schema.node(*root);
        if let Some(value) = doc.get_mut(format!("{}:{}", node.module, node.name)) {
            order_member(schema, *root, value);
        }
    }
}

fn order_member(schema: &Schema, id: SchemaId, value: &mut Json) {
    let node = schema.node(id);
    match node.kind {
        NodeKind::List => {
            let Some(entries) = value.as_array_mut() else {
                return;
            };
            if !node.user_ordered {
                let keys: Vec<String> = node
                    .keys
                    .iter()
                    .map(|k| schema.node(*k).name.clone())
                    .collect();
                entries.sort_by(|a, b| entry_cmp(&keys, a, b));
            }
            for entry in entries {
                order_children(schema, id, entry);
            }
        }
        NodeKind::LeafList if !node.user_ordered => {
            if let Some(items) = value.as_array_mut() {
                items.sort_by(|a, b| efb_text_table::natural_cmp(&text(a), &text(b)));
            }
        }
        NodeKind::Leaf | NodeKind::LeafList => {}
        _ => order_children(schema, id, value),
    }
}

fn order_children(schema: &Schema, parent: SchemaId, value: &mut Json) {
    for child in &schema.node(parent).children {
        let name = &schema.node(*child).name;
        if let Some(v) = value.get_mut(name) {
            order_member(schema, *child, v);
        }
    }
}

/// Two list entries by their keys, key by key, as people count.
pub fn entry_cmp(keys: &[String], a: &Json, b: &Json) -> std::cmp::Ordering {
    let key = |entry: &Json, k: &String| entry.get(k).map(text).unwrap_or_default();
    keys.iter()
        .map(|k| efb_text_table::natural_cmp(&key(a, k), &key(b, k)))
        .find(|o| o.is_ne())
        .unwrap_or(std::cmp::Ordering::Equal)
}

/// Sorts entries as the grammar's `order` says: by a leaf's value (numbers by value), ties
/// in the order they came.
pub fn sort_by_order(entries: &mut [Json], order: &Order) {
    let value = |entry: &Json| entry.get(&order.leaf).map(text).unwrap_or_default();
    entries.sort_by(|a, b| {
        let by_value = efb_text_table::natural_cmp(&value(a), &value(b));
        if order.descending {
            by_value.reverse()
        } else {
            by_value
        }
    });
}

/// One JSON value as a word: numbers and strings as they are, leaf-lists joined, `[null]`
/// (empty) as nothing, containers as "name value" pairs.
pub fn text(value: &Json) -> String {
    match value {
        Json::String(s) => s.clone(),
        Json::Bool(b) => b.to_string(),
        Json::Number(n) => n.to_string(),
        Json::Null => String::new(),
        Json::Array(items) if items.len() == 1 && items[0].is_null() => String::new(),
        Json::Array(items) => items.iter().map(text).collect::<Vec<_>>().join(","),
        Json::Object(members) => members
            .iter()
            .map(|(k, v)| {
                let inner = text(v);
                if inner.is_empty() {
                    k.clone()
                } else {
                    format!("{k} {inner}")
                }
            })
            .collect::<Vec<_>>()
            .join(" "),
    }
}

fn cell(entry: &Json, column: &Column) -> String {
    let names: Vec<String> = column.leaf.split('/').map(str::to_string).collect();
    let shown = at(entry, &names)
        .filter(|v| column.words || !v.is_object())
        .map(text)
        .filter(|t| !t.is_empty());
    // A column that says what its absence means (a pair not judged yet has no time on
    // path) says it; other state efbd does not know is unknown.
    match (shown, &column.absent) {
        (Some(t), _) => t,
        (None, Some(absent)) => absent.clone(),
        (None, None) if column.state => UNKNOWN.to_string(),
        (None, None) => String::new(),
    }
}

/// Lines of a table: a header and one row per entry, columns aligned.
pub fn table(entries: &[&Json], columns: &[Column], indent: &str) -> Vec<String> {
    let mut rows: Vec<Vec<String>> = vec![columns.iter().map(|c| c.title.clone()).collect()];
    for entry in entries {
        rows.push(columns.iter().map(|c| cell(entry, c)).collect());
    }
    let sides: Vec<Side> = columns
        .iter()
        .map(|c| match c.align.as_deref() {
            Some("right") => Side::Right,
            _ => Side::Left,
        })
        .collect();
    efb_text_table::align(&rows, &sides)
        .into_iter()
        .map(|line| format!("{indent}{line}"))
        .collect()
}

/// Draws the entries of a list with a view.
pub fn render_view(view: &View, entries: &[&Json]) -> Vec<String> {
    if view.heading.is_empty() {
        return table(entries, &view.columns, "");
    }
    let mut lines = Vec::new();
    for entry in entries {
        let mut heading = Vec::new();
        for (i, column) in view.heading.iter().enumerate() {
            let value = cell(entry, column);
            heading.push(if i == 0 {
                format!("{} {value}:", column.title)
            } else {
                format!("{} {value}", column.title)
            });
        }
        let first = heading.remove(0);
        lines.push(format!("{first} {}", heading.join(", ")));
        if let Some(rows) = &view.rows {
            let children: Vec<&Json> = entry
                .get(rows)
                .and_then(Json::as_array)
                .map(|a| a.iter().collect())
                .unwrap_or_default();
            if children.is_empty() {
                lines.push(format!("  (no {rows})"));
            } else {
                lines.extend(table(&children, &view.columns, "  "));
            }
        }
        lines.push(String::new());
    }
    if lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
    lines
}

/// One object as "title value" lines, in the view's order. A field that is absent is left
/// out unless it says what to show instead (`absent`, or `unknown` for `state`); members
/// the view does not know follow, so that a leaf added to the model is never hidden.
pub fn render_fields(view: &View, object: &Json) -> Vec<String> {
    let mut rows = Vec::new();
    for field in &view.fields {
        let wanted = field
            .with
            .as_ref()
            .is_none_or(|other| object.get(other).is_some_and(|v| !v.is_null()));
        if !wanted {
            continue;
        }
        let names: Vec<String> = field.leaf.split('/').map(str::to_string).collect();
        let present = at(object, &names).is_some_and(|v| !text(v).is_empty());
        if present || field.state || field.absent.is_some() {
            rows.push(vec![field.title.clone(), cell(object, field)]);
        }
    }
    if let Some(members) = object.as_object() {
        for (name, value) in members {
            let known = view
                .fields
                .iter()
                .any(|f| f.leaf.split('/').next() == Some(name.as_str()));
            if !known {
                rows.push(vec![name.clone(), text(value)]);
            }
        }
    }
    efb_text_table::align(&rows, &[])
}

/// The configuration in curly-brace form, members in schema order.
pub fn curly(schema: &Schema, doc: &Json, inactive: &[String]) -> Vec<String> {
    let mut curly = Curly {
        schema,
        inactive,
        lines: Vec::new(),
    };
    for root in schema.roots() {
        let node = schema.node(*root);
        if let Some(value) = doc.get(format!("{}:{}", node.module, node.name)) {
            curly.member(*root, value, 0, node.name.clone());
        }
    }
    curly.lines
}

/// Draws the curly form; `inactive` holds the words (as set lines name them) of the nodes
/// kept but not applied, which Junos marks `inactive:`.
struct Curly<'a> {
    schema: &'a Schema,
    inactive: &'a [String],
    lines: Vec<String>,
}

impl Curly<'_> {
    fn mark(&self, words: &str) -> &'static str {
        if self.inactive.iter().any(|w| w == words) {
            "inactive: "
        } else {
            ""
        }
    }

    /// One node; `words` name it (with its keys for a list entry's children).
    fn member(&mut self, id: SchemaId, value: &Json, depth: usize, words: String) {
        let schema = self.schema;
        let node = schema.node(id);
        let pad = "    ".repeat(depth);
        match node.kind {
            NodeKind::List => {
                let key_names: Vec<&str> = node
                    .keys
                    .iter()
                    .map(|k| schema.node(*k).name.as_str())
                    .collect();
                for entry in value.as_array().into_iter().flatten() {
                    let keys: Vec<String> = key_names
                        .iter()
                        .map(|k| quoted(&entry.get(*k).map(text).unwrap_or_default()))
                        .collect();
                    let keys = keys.join(" ");
                    let entry_words = format!("{words} {keys}");
                    let mark = self.mark(&entry_words);
                    self.lines
                        .push(format!("{pad}{mark}{} {keys} {{", node.name));
                    self.children(id, entry, depth + 1, &entry_words);
                    self.lines.push(format!("{pad}}}"));
                }
            }
            NodeKind::LeafList => {
                let items: Vec<String> = value
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|v| quoted(&text(v)))
                    .collect();
                let mark = self.mark(&words);
                self.lines
                    .push(format!("{pad}{mark}{} [ {} ];", node.name, items.join(" ")));
            }
            NodeKind::Leaf => {
                let t = text(value);
                let mark = self.mark(&words);
                if t.is_empty() {
                    self.lines.push(format!("{pad}{mark}{};", node.name));
                } else {
                    self.lines
                        .push(format!("{pad}{mark}{} {};", node.name, quoted(&t)));
                }
            }
            _ => {
                let mark = self.mark(&words);
                self.lines.push(format!("{pad}{mark}{} {{", node.name));
                self.children(id, value, depth + 1, &words);
                self.lines.push(format!("{pad}}}"));
            }
        }
    }

    fn children(&mut self, parent: SchemaId, value: &Json, depth: usize, words: &str) {
        for child in &self.schema.node(parent).children {
            let node = self.schema.node(*child);
            if node.is_key {
                continue;
            }
            if let Some(v) = value.get(&node.name) {
                self.member(*child, v, depth, format!("{words} {}", node.name));
            }
        }
    }
}

fn quoted(word: &str) -> String {
    efb_yang::setlines::quote_word(word)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(title: &str, leaf: &str) -> Column {
        Column {
            title: title.into(),
            leaf: leaf.into(),
            align: None,
            absent: None,
            state: false,
            words: false,
            with: None,
            rate: false,
        }
    }

    #[test]
    fn tables_align_and_say_unknown_for_missing_state() {
        let entries = [
            serde_json::json!({"name": "bgp", "priority": 310, "action": {"bypass": [null]}}),
            serde_json::json!({"name": "to-filters", "priority": 5, "state": {"packets": "12"}}),
        ];
        let refs: Vec<&Json> = entries.iter().collect();
        let mut packets = column("Packets", "state/packets");
        packets.state = true;
        packets.align = Some("right".into());
        let mut action = column("Action", "action");
        action.words = true;
        action.absent = Some("bypass".into());
        let lines = table(&refs, &[column("Flow", "name"), action, packets], "");
        assert_eq!(lines[0], "Flow        Action  Packets");
        assert_eq!(lines[1], "bgp         bypass  unknown");
        assert_eq!(lines[2], "to-filters  bypass       12");
    }

    #[test]
    fn fields_in_order_absent_ones_left_out_or_explained() {
        let mut pair_status = column("pair-status", "pair-status");
        pair_status.state = true;
        pair_status.with = Some("pair".into());
        let mut flow = column("flow", "flow");
        flow.absent = Some("none".into());
        let view = View {
            fields: vec![
                flow,
                column("action", "action"),
                column("pair", "pair"),
                pair_status,
            ],
            ..View::default()
        };
        let filtered =
            serde_json::json!({"action": "to-ecofilter", "pair": "f1", "flow": "all", "extra": 1});
        assert_eq!(
            render_fields(&view, &filtered),
            [
                "flow         all",
                "action       to-ecofilter",
                "pair         f1",
                "pair-status  unknown",
                "extra        1"
            ]
        );
        let bypassed = serde_json::json!({"action": "bypass"});
        assert_eq!(
            render_fields(&view, &bypassed),
            ["flow    none", "action  bypass"]
        );
    }

    #[test]
    fn member_names_drop_predicates() {
        let schema = Schema::load().unwrap();
        let path = DataPath::parse(
            &schema,
            "/ecofilter-balancer:ecofilter-balancer/flow[name='a/b']/match",
        )
        .unwrap();
        assert_eq!(
            member_names(&schema, &path),
            vec!["ecofilter-balancer:ecofilter-balancer", "flow", "match"]
        );
    }
}
