//! What a subscription sends when a snapshot follows another: the changes its paths reach,
//! with leaves back at their default as updates.

use std::collections::BTreeSet;

use efb_yang::diff::{Change, diff};
use efb_yang::{DataPath, DataTree, NodeKind, NodeRef, Schema, Segment};

use crate::defaults;
use crate::encode::LeafValue;
use crate::path::{Pattern, Relation};

/// What changed from `old` to `new` under any of `patterns`: leaf updates (a leaf-list as
/// a whole) and deleted nodes.
pub(super) fn between(
    schema: &Schema,
    patterns: &[&Pattern],
    old: &DataTree,
    new: &DataTree,
) -> (Vec<(DataPath, LeafValue)>, Vec<DataPath>) {
    let relation = |path: &DataPath| {
        let mut best = Relation::Outside;
        for p in patterns {
            match p.relation(schema, path) {
                Relation::Inside => return Relation::Inside,
                Relation::Above => best = Relation::Above,
                Relation::Outside => {}
            }
        }
        best
    };
    let mut updates = Vec::new();
    let mut deletes = Vec::new();
    let mut leaf_lists = BTreeSet::new();
    for change in diff(schema, old, new) {
        let path = change.path();
        if let Some(list) = leaf_list_of(schema, path) {
            if relation(&list) == Relation::Inside {
                leaf_lists.insert(list);
            }
            continue;
        }
        match &change {
            Change::Set { path, new, .. } => {
                if relation(path) == Relation::Inside
                    && let Some(id) = path.node()
                {
                    updates.push((path.clone(), LeafValue::One(id, new.clone())));
                }
            }
            Change::Delete { path } => {
                if relation(path) == Relation::Outside {
                    continue;
                }
                // What is removed but has a default reads as the default again: an update.
                let mut back = Vec::new();
                defaults::leaves_below(schema, new, path, &mut back);
                let leaf_back = back.len() == 1 && back[0].0 == *path;
                if !leaf_back {
                    deletes.push(path.clone());
                }
                defaults_inside(back, &relation, &mut updates);
            }
            Change::Create { path } => {
                // The entry's keys are leaves too; what it holds comes as further changes,
                // and what it leaves at its default here.
                if let Some(seg) = path.last() {
                    for key in &schema.node(seg.node).keys {
                        let key_path = path.child(Segment::new(*key));
                        if relation(&key_path) == Relation::Inside
                            && let Some(NodeRef::Leaf(v)) = new.get(schema, &key_path)
                        {
                            updates.push((key_path, LeafValue::One(*key, v.clone())));
                        }
                    }
                }
                let mut defaulted = Vec::new();
                defaults::leaves_below(schema, new, path, &mut defaulted);
                defaults_inside(defaulted, &relation, &mut updates);
            }
        }
    }
    for list in leaf_lists {
        match (new.get(schema, &list), list.node()) {
            (Some(NodeRef::LeafList(items)), Some(id)) => {
                updates.push((list, LeafValue::Many(id, items.clone())))
            }
            _ => deletes.push(list),
        }
    }
    (updates, deletes)
}

/// Leaves at their default, as updates, where the subscription reaches.
fn defaults_inside(
    found: Vec<(DataPath, efb_yang::SchemaId, efb_yang::Value)>,
    relation: &impl Fn(&DataPath) -> Relation,
    updates: &mut Vec<(DataPath, LeafValue)>,
) {
    for (path, id, value) in found {
        if relation(&path) == Relation::Inside {
            updates.push((path, LeafValue::One(id, value)));
        }
    }
}

/// For a leaf-list item's path, the leaf-list's.
fn leaf_list_of(schema: &Schema, path: &DataPath) -> Option<DataPath> {
    let last = path.last()?;
    if schema.node(last.node).kind != NodeKind::LeafList {
        return None;
    }
    let mut list = path.clone();
    if let Some(seg) = list.segments.last_mut() {
        seg.keys.clear();
    }
    Some(list)
}
