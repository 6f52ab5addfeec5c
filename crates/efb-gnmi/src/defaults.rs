//! Leaves at their YANG default, as gNMI reports them: every configuration leaf that has a
//! default and is not set reads as its default, wherever the node holding it exists (RFC
//! 6243's report-all, the same rule as `show ... with-defaults` and efb-yang's printer).
//! Get, every Subscribe dump and sample, and ON_CHANGE all use it, so a subscriber sees
//! what Get sees: a leaf set back to its default is an update with the default value.
//!
//! A container (the model has no presence containers) that is absent but holds such
//! leaves exists by default too; a list entry never does. Leaves in a choice count when
//! their case is the one present, or the choice's default case when none is.

use efb_yang::json::case_selected;
use efb_yang::{DataPath, DataTree, Inner, NodeKind, NodeRef, Schema, SchemaId, Segment, Value};

/// The default of a leaf that has one (configuration only: state is never made up). The
/// schema keeps it canonical: no parsing per instance (a Get of 100 000 flows asks often).
pub fn leaf_default(schema: &Schema, id: SchemaId) -> Option<Value> {
    has_default(schema, id).then(|| {
        let info = schema.node(id);
        Value::new(info.default.clone().unwrap_or_default(), info.json_kind())
    })
}

fn has_default(schema: &Schema, id: SchemaId) -> bool {
    let info = schema.node(id);
    info.kind == NodeKind::Leaf && info.config && !info.is_key && info.default.is_some()
}

/// Whether the schema node `id` holds some default below it, through containers only (a
/// list's entries never exist by default).
pub fn holds_defaults(schema: &Schema, id: SchemaId) -> bool {
    let info = schema.node(id);
    match info.kind {
        NodeKind::Leaf => has_default(schema, id),
        NodeKind::Container => {
            info.config && info.children.iter().any(|c| holds_defaults(schema, *c))
        }
        _ => false,
    }
}

/// The schema children of a node (`parent`; `None`: the top) that `inner` lacks and that
/// exist by default there, in schema order.
pub fn missing(schema: &Schema, inner: &Inner, parent: Option<SchemaId>) -> Vec<SchemaId> {
    let candidates = match parent {
        Some(p) => schema.node(p).children.as_slice(),
        None => schema.roots(),
    };
    candidates
        .iter()
        .copied()
        .filter(|id| inner.get(*id).is_none())
        .filter(|id| holds_defaults(schema, *id))
        .filter(|id| case_selected(schema, inner, parent, *id))
        .collect()
}

/// Whether the node at `path` is absent from `tree` but exists by default: a leaf with a
/// default or a container holding some, under a node that exists (in the data or by
/// default itself).
pub fn implied(schema: &Schema, tree: &DataTree, path: &DataPath) -> bool {
    let Some(seg) = path.last() else {
        return false;
    };
    if !seg.keys.is_empty() || !holds_defaults(schema, seg.node) || tree.contains(schema, path) {
        return false;
    }
    let parent = path.parent();
    let empty = Inner::default();
    let inner = match tree.get(schema, &parent) {
        Some(NodeRef::Inner(inner)) => inner,
        Some(_) => return false,
        None if parent.is_root() => &empty,
        None if implied(schema, tree, &parent) => &empty,
        None => return false,
    };
    case_selected(schema, inner, parent.node(), seg.node)
}

/// Whether the node at `path` is there to read: in the data, or by default.
pub fn exists(schema: &Schema, tree: &DataTree, path: &DataPath) -> bool {
    path.is_root() || tree.contains(schema, path) || implied(schema, tree, path)
}

/// The leaves under `path` that exist only by default, each with its default (for a list
/// entry just created, or a container removed while its parent stays), not those of the
/// entries of lists below it.
pub fn leaves_below(
    schema: &Schema,
    tree: &DataTree,
    path: &DataPath,
    out: &mut Vec<(DataPath, SchemaId, Value)>,
) {
    let Some(id) = path.node() else {
        return;
    };
    if let Some(value) = leaf_default(schema, id) {
        if implied(schema, tree, path) {
            out.push((path.clone(), id, value));
        }
        return;
    }
    let empty = Inner::default();
    let inner = match tree.get(schema, path) {
        Some(NodeRef::Inner(inner)) => inner,
        None if implied(schema, tree, path) => &empty,
        _ => return,
    };
    // Entries of lists below have their own (a created entry's come with its creation).
    for (child, _) in inner.children() {
        if schema.node(child).kind == NodeKind::Container {
            leaves_below(schema, tree, &path.child(Segment::new(child)), out);
        }
    }
    for child in missing(schema, inner, Some(id)) {
        leaves_below(schema, tree, &path.child(Segment::new(child)), out);
    }
}
