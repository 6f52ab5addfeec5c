//! libyang validation of configuration trees: of a whole tree, or of only what a change
//! touched when the schema allows it (see [`Schema::independent_lists`]).

use std::collections::{BTreeMap, BTreeSet};

use crate::Problem;
use crate::diff::RecordKey;
use crate::json::{self, Check, PrintOptions};
use crate::schema::{Schema, SchemaId};
use crate::tree::{Child, DataTree, Inner, Keys, List};

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
/// records. When all of them are entries of independent lists, libyang sees the rest of
/// the configuration plus those entries; otherwise the whole candidate.
pub fn validate_change(
    schema: &Schema,
    candidate: &DataTree,
    changed: &[RecordKey],
) -> Result<Scope, Vec<Problem>> {
    let independent = schema.independent_lists();
    let mut keep: BTreeMap<SchemaId, BTreeSet<Keys>> = BTreeMap::new();
    for record in changed {
        match record.entry() {
            Some((list, keys)) if independent.contains(&list) => {
                keep.entry(list).or_default().insert(keys.to_vec().into());
            }
            _ => {
                validate(schema, candidate)?;
                return Ok(Scope::Full);
            }
        }
    }
    let part = without_other_entries(schema, candidate, independent, &keep);
    validate(schema, &part)?;
    Ok(Scope::Entries(keep.values().map(BTreeSet::len).sum()))
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
