//! libyang validation of configuration trees: of a whole tree, or of only what a change
//! touched when the schema allows it (see [`Schema::independent_lists`]).

use std::collections::{BTreeMap, BTreeSet};

use crate::Problem;
use crate::diff::RecordKey;
use crate::json::{self, Check, PrintOptions};
use crate::schema::{Schema, SchemaId};
use crate::tree::{Child, DataTree, Inner, Keys, List, Value};

/// How much of a candidate was given to libyang.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The whole configuration.
    Full,
    /// Everything but independent lists, plus this many changed entries of them.
    Entries(usize),
}

/// Validates a whole configuration: every YANG rule (types, mandatory nodes, references,
/// choices, ranges). Returns every problem found, each with its path.
pub fn validate(schema: &Schema, tree: &DataTree) -> Result<(), Vec<Problem>> {
    let text = json::to_json(schema, tree, PrintOptions::default());
    let parsed = json::parse_ly(schema, &text, Check::Complete)
        .map_err(|e| crate::explain::explain(schema, tree, e.problems()))?;
    schema.discard(parsed);
    Ok(())
}

/// Validates `candidate`, which differs from a valid configuration only in `changed`
/// records. libyang sees everything but the entries of independent lists, plus the changed
/// entries of those lists and the entries whose references name an entry the change
/// removed: in an independent list nothing else can turn invalid (no must or when, no
/// constraint across entries, only references out of it). Without independent lists in the
/// schema, the whole candidate.
pub fn validate_change(
    schema: &Schema,
    candidate: &DataTree,
    changed: &[RecordKey],
) -> Result<Scope, Vec<Problem>> {
    let independent = schema.independent_lists();
    if independent.is_empty() {
        validate(schema, candidate)?;
        return Ok(Scope::Full);
    }
    let mut keep = changed_entries(schema, changed);
    for (list, entries) in referrers(schema, candidate, changed, Named::Removed) {
        keep.entry(list).or_default().extend(entries);
    }
    let part = without_other_entries(schema, candidate, independent, &keep);
    validate(schema, &part)?;
    Ok(Scope::Entries(keep.values().map(BTreeSet::len).sum()))
}

/// The changed entries of independent lists, by list.
pub fn changed_entries(
    schema: &Schema,
    changed: &[RecordKey],
) -> BTreeMap<SchemaId, BTreeSet<Keys>> {
    let independent = schema.independent_lists();
    let mut entries: BTreeMap<SchemaId, BTreeSet<Keys>> = BTreeMap::new();
    for record in changed {
        if let Some((list, keys)) = record.entry()
            && independent.contains(&list)
        {
            entries
                .entry(list)
                .or_default()
                .insert(keys.to_vec().into());
        }
    }
    entries
}

/// Which changed entries [`referrers`] looks for references to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Named {
    /// Entries the change removed: a reference to one no longer names anything.
    Removed,
    /// Every changed entry: what refers to it may now mean something else.
    Changed,
}

/// Entries of independent lists in `candidate` (by list) whose references name an entry of
/// another list among `changed`.
pub fn referrers(
    schema: &Schema,
    candidate: &DataTree,
    changed: &[RecordKey],
    named: Named,
) -> BTreeMap<SchemaId, BTreeSet<Keys>> {
    let independent = schema.independent_lists();
    let mut targets: BTreeMap<SchemaId, BTreeSet<&Value>> = BTreeMap::new();
    for record in changed {
        let Some((list, [key])) = record.entry() else {
            continue;
        };
        let removed = || {
            candidate
                .root()
                .container(schema.top(list))
                .and_then(|top| top.list(list))
                .is_none_or(|entries| entries.get(std::slice::from_ref(key)).is_none())
        };
        if !independent.contains(&list) && (named == Named::Changed || removed()) {
            targets.entry(list).or_default().insert(key);
        }
    }
    let mut found: BTreeMap<SchemaId, BTreeSet<Keys>> = BTreeMap::new();
    if targets.is_empty() {
        return found;
    }
    for reference in schema.references() {
        let Some(names) = targets.get(&reference.to) else {
            continue;
        };
        let lineage = schema.lineage(reference.from);
        let Some(at) = lineage.iter().position(|id| independent.contains(id)) else {
            continue;
        };
        let Some(entries) = tree_list(candidate, &lineage[..=at]) else {
            continue;
        };
        for (keys, entry) in entries.iter() {
            let mut names_one = false;
            values_below(entry, &lineage[at + 1..], &mut |value| {
                names_one |= names.contains(value);
            });
            if names_one {
                found.entry(lineage[at]).or_default().insert(keys.clone());
            }
        }
    }
    found
}

/// The list at the end of `lineage` (containers down from the top).
fn tree_list<'a>(tree: &'a DataTree, lineage: &[SchemaId]) -> Option<&'a List> {
    let (list, containers) = lineage.split_last()?;
    let mut inner = tree.root();
    for id in containers {
        inner = inner.container(*id)?;
    }
    inner.list(*list)
}

/// Calls `found` with every value of the leaf or leaf-list at the end of `lineage`, below
/// `inner`.
fn values_below(inner: &Inner, lineage: &[SchemaId], found: &mut impl FnMut(&Value)) {
    let Some((&id, rest)) = lineage.split_first() else {
        return;
    };
    match inner.get(id) {
        Some(Child::Container(c)) => values_below(c, rest, found),
        Some(Child::List(list)) => {
            for (_, entry) in list.iter() {
                values_below(entry, rest, found);
            }
        }
        Some(Child::Leaf(value)) => found(value),
        Some(Child::LeafList(items)) => items.iter().for_each(found),
        None => {}
    }
}

/// `tree` with the entries of `lists` reduced to those in `keep`.
fn without_other_entries(
    schema: &Schema,
    tree: &DataTree,
    lists: &[SchemaId],
    keep: &BTreeMap<SchemaId, BTreeSet<Keys>>,
) -> DataTree {
    let mut part = tree.clone();
    for list_id in lists {
        let Some(top) = schema.node(*list_id).parent else {
            continue;
        };
        let Some(container) = part.root().container(top) else {
            continue;
        };
        let Some(list) = container.list(*list_id) else {
            continue;
        };
        let mut reduced = List::default();
        for keys in keep.get(list_id).into_iter().flatten() {
            if let Some(entry) = list.get(keys) {
                reduced.put(keys.clone(), entry.clone());
            }
        }
        let mut container: Inner = container.clone();
        if reduced.is_empty() {
            container.remove_child(*list_id);
        } else {
            container.put(schema, *list_id, Child::List(reduced));
        }
        part.root_mut()
            .put(schema, top, Child::Container(container));
    }
    part
}
