//! References that name no entry (the schema's leafrefs, [`Schema::references`]), and
//! libyang's validation problems retold in the words an engineer types: libyang says `Invalid leafref value "p5" - no
//! target instance "/efb:ports/efb:port/efb:name"`; the shell says that link l3's wan-port
//! refers to port p5, which does not exist, and warns when a `delete` breaks a reference.

use std::collections::BTreeSet;

use crate::path::{DataPath, Segment};
use crate::schema::{NodeKind, Schema, SchemaId};
use crate::setlines::quote_word;
use crate::tree::{Child, DataTree, Inner};
use crate::{Problem, Value};

/// A value of a reference that names no entry.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Dangling {
    /// The leaf holding the value (for a leaf-list, the item).
    pub at: DataPath,
    pub to: SchemaId,
    pub value: Value,
}

impl Dangling {
    /// `port p5 is used by link l3 wan-port`.
    pub fn used_by(&self, schema: &Schema) -> String {
        format!(
            "{} {} is used by {}",
            schema.node(self.to).name,
            quote_word(self.value.as_str()),
            short_words(schema, &self.at)
        )
    }

    pub fn problem(&self, schema: &Schema) -> Problem {
        Problem::new(self.at.display(schema), self.used_by(schema))
    }
}

/// Every reference in `tree` to an entry it does not have.
pub fn dangling(schema: &Schema, tree: &DataTree) -> BTreeSet<Dangling> {
    let mut found = BTreeSet::new();
    for reference in schema.references() {
        let names: BTreeSet<Value> = instances(schema, tree, reference.to)
            .into_iter()
            .map(|(_, key)| key)
            .collect();
        for (at, value) in instances(schema, tree, reference.from) {
            if !names.contains(&value) {
                found.insert(Dangling {
                    at,
                    to: reference.to,
                    value,
                });
            }
        }
    }
    found
}

/// The references an edit broke: dangling in `after`, not in `before`. Cheap when the edit
/// removed no entry a reference can name (the usual `set`).
pub fn broken(schema: &Schema, before: &DataTree, after: &DataTree) -> Vec<Dangling> {
    let targets: BTreeSet<SchemaId> = schema.references().iter().map(|r| r.to).collect();
    let removed_target = targets.iter().any(|list| {
        let now: BTreeSet<Value> = instances(schema, after, *list)
            .into_iter()
            .map(|(_, k)| k)
            .collect();
        instances(schema, before, *list)
            .iter()
            .any(|(_, k)| !now.contains(k))
    });
    if !removed_target {
        return Vec::new();
    }
    let old = dangling(schema, before);
    dangling(schema, after)
        .into_iter()
        .filter(|d| !old.contains(d))
        .collect()
}

/// libyang's problems with the ones we can tell better told in the shell's words: a
/// dangling reference, a mandatory leaf missing. The others are kept as they are.
pub fn explain(schema: &Schema, tree: &DataTree, problems: Vec<Problem>) -> Vec<Problem> {
    let dangling = dangling(schema, tree);
    problems
        .into_iter()
        .map(|p| retold(schema, &dangling, &p).unwrap_or(p))
        .collect()
}

fn retold(schema: &Schema, dangling: &BTreeSet<Dangling>, p: &Problem) -> Option<Problem> {
    let path = DataPath::parse(schema, &p.path).ok()?;
    if let Some(d) = dangling.iter().find(|d| same_leaf(&d.at, &path)) {
        return Some(Problem::new(
            d.at.display(schema),
            format!(
                "refers to {} {}, which does not exist",
                schema.node(d.to).name,
                quote_word(d.value.as_str())
            ),
        ));
    }
    let missing = p
        .message
        .strip_prefix("Mandatory node \"")?
        .split('"')
        .next()?;
    let child = schema.child(path.node()?, missing)?;
    let accepts = schema.node(child).accepts();
    Some(Problem::new(
        p.path.clone(),
        format!("{missing} is missing: it is mandatory ({accepts})"),
    ))
}

/// libyang names a leaf-list item with or without its value.
fn same_leaf(item: &DataPath, reported: &DataPath) -> bool {
    match (item.last(), reported.last()) {
        (Some(a), Some(b)) if b.keys.is_empty() => {
            a.node == b.node && item.parent() == reported.parent()
        }
        _ => item == reported,
    }
}

/// Every instance of `node` in `tree` with its value: a leaf's value, a leaf-list's items,
/// a single-key list's keys.
fn instances(schema: &Schema, tree: &DataTree, node: SchemaId) -> Vec<(DataPath, Value)> {
    let mut out = Vec::new();
    walk(
        tree.root(),
        &schema.lineage(node),
        DataPath::root(),
        &mut out,
    );
    out
}

fn walk(inner: &Inner, lineage: &[SchemaId], at: DataPath, out: &mut Vec<(DataPath, Value)>) {
    let Some((&id, rest)) = lineage.split_first() else {
        return;
    };
    match (inner.get(id), rest.is_empty()) {
        (Some(Child::Container(c)), false) => walk(c, rest, at.child(Segment::new(id)), out),
        (Some(Child::List(list)), last) => {
            for (keys, entry) in list.iter() {
                let here = at.child(Segment::with_keys(id, keys.to_vec()));
                match (last, keys.first()) {
                    (true, Some(key)) => out.push((here, key.clone())),
                    (false, _) => walk(entry, rest, here, out),
                    _ => {}
                }
            }
        }
        (Some(Child::Leaf(value)), true) => out.push((at.child(Segment::new(id)), value.clone())),
        (Some(Child::LeafList(items)), true) => {
            for value in items.iter() {
                let item = Segment::with_keys(id, vec![value.clone()]);
                out.push((at.child(item), value.clone()));
            }
        }
        _ => {}
    }
}

/// A path's words without a top-level container: `link l3 wan-port`, not
/// `ecofilter-balancer link l3 wan-port`.
fn short_words(schema: &Schema, path: &DataPath) -> String {
    let mut path = path.clone();
    let top_is_container = path
        .segments
        .first()
        .is_some_and(|s| schema.node(s.node).kind == NodeKind::Container);
    if top_is_container && path.segments.len() > 1 {
        path.segments.remove(0);
    }
    crate::setlines::words(schema, &path)
}
