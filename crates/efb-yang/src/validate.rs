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

/// Entries of independent lists, by list.
pub type Entries = BTreeMap<SchemaId, BTreeSet<Keys>>;

/// What a change affects among the entries of independent lists, found in one walk.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Affected {
    /// Entries the change touched.
    pub touched: Entries,
    /// Entries whose references name an entry of another list the change touched: what
    /// they refer to may now mean something else.
    pub naming_changed: Entries,
    /// Of those, the entries naming an entry the change removed: their reference no longer
    /// names anything.
    pub naming_removed: Entries,
}

impl Affected {
    /// What a change of `changed` records affects in `candidate`.
    pub fn of(schema: &Schema, candidate: &DataTree, changed: &[RecordKey]) -> Affected {
        let mut affected = Affected {
            touched: changed_entries(schema, changed),
            ..Affected::default()
        };
        affected.find_referrers(schema, candidate, changed);
        affected
    }

    /// The touched entries and those naming what the change touched (with `removed_only`,
    /// naming what it removed).
    pub fn with_referrers(&self, removed_only: bool) -> Entries {
        let mut entries = self.touched.clone();
        let referring = if removed_only {
            &self.naming_removed
        } else {
            &self.naming_changed
        };
        for (list, keys) in referring {
            entries
                .entry(*list)
                .or_default()
                .extend(keys.iter().cloned());
        }
        entries
    }

    fn find_referrers(&mut self, schema: &Schema, candidate: &DataTree, changed: &[RecordKey]) {
        let independent = schema.independent_lists();
        // Changed entries of other lists, by list: key -> whether the change removed it.
        let mut targets: BTreeMap<SchemaId, BTreeMap<&Value, bool>> = BTreeMap::new();
        for record in changed {
            let Some((list, [key])) = record.entry() else {
                continue;
            };
            if independent.contains(&list) {
                continue;
            }
            let removed = candidate
                .root()
                .container(schema.top(list))
                .and_then(|top| top.list(list))
                .is_none_or(|entries| entries.get(std::slice::from_ref(key)).is_none());
            targets.entry(list).or_default().insert(key, removed);
        }
        if targets.is_empty() {
            return;
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
                let (mut names_changed, mut names_removed) = (false, false);
                values_below(entry, &lineage[at + 1..], &mut |value| {
                    if let Some(removed) = names.get(value) {
                        names_changed = true;
                        names_removed |= *removed;
                    }
                });
                let list = lineage[at];
                if names_changed {
                    let found = self.naming_changed.entry(list).or_default();
                    found.insert(keys.clone());
                }
                if names_removed {
                    let found = self.naming_removed.entry(list).or_default();
                    found.insert(keys.clone());
                }
            }
        }
    }
}

/// Validates `candidate`, which differs from a valid configuration only in `changed`
/// records (see [`validate_affected`]).
pub fn validate_change(
    schema: &Schema,
    candidate: &DataTree,
    changed: &[RecordKey],
) -> Result<Scope, Vec<Problem>> {
    validate_affected(schema, candidate, &Affected::of(schema, candidate, changed))
}

/// Validates a changed candidate whose change `affected` describes. libyang sees
/// everything but the entries of independent lists, plus the entries the change touched and
/// those naming an entry it removed: in an independent list nothing else can turn invalid
/// (no must or when, no constraint across entries, only references out of it). Without
/// independent lists in the schema, the whole candidate.
pub fn validate_affected(
    schema: &Schema,
    candidate: &DataTree,
    affected: &Affected,
) -> Result<Scope, Vec<Problem>> {
    let independent = schema.independent_lists();
    if independent.is_empty() {
        validate(schema, candidate)?;
        return Ok(Scope::Full);
    }
    let keep = affected.with_referrers(true);
    let part = without_other_entries(schema, candidate, independent, &keep);
    validate(schema, &part)?;
    Ok(Scope::Entries(keep.values().map(BTreeSet::len).sum()))
}

/// The changed entries of independent lists, by list.
fn changed_entries(schema: &Schema, changed: &[RecordKey]) -> Entries {
    let independent = schema.independent_lists();
    let mut entries = Entries::new();
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
    keep: &Entries,
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
