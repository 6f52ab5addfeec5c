//! What changed between two trees, at two grains:
//! - [`diff`]: path-level changes, what `show | compare`, history and `set` lines show;
//! - [`changed_records`]: the records (one per entry of a top-level list, plus the rest of
//!   each top-level container) that must be stored again. Both skip shared subtrees, so
//!   their cost follows the size of the change, not of the configuration.

use efb_text_table::NaturalKey;
use std::collections::BTreeMap;

use crate::path::{DataPath, Segment};
use crate::schema::{JsonKind, NodeKind, Schema, SchemaId};
use crate::tree::{Child, DataTree, Inner, Keys, LeafList, List};
use crate::{Error, Problem, Value};

/// One path-level change. Applying the deletes, then the creates and sets, in order, to the
/// old tree gives the new one.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    /// A list entry was created; what it holds follows as further changes.
    Create { path: DataPath },
    /// A leaf got a value (`old` is the value it had), or a leaf-list item was added.
    Set {
        path: DataPath,
        old: Option<Value>,
        new: Value,
    },
    /// A node was removed with everything under it.
    Delete { path: DataPath },
}

impl Change {
    pub fn path(&self) -> &DataPath {
        match self {
            Change::Create { path } | Change::Set { path, .. } | Change::Delete { path } => path,
        }
    }

    /// One line for people: `+ path`, `~ path = new (was old)`, `- path`.
    pub fn describe(&self, schema: &Schema) -> String {
        match self {
            Change::Create { path } => format!("+ {}", path.display(schema)),
            Change::Set {
                path,
                old: None,
                new,
            } => {
                // A leaf-list item is its path; an `empty` leaf has no value to show.
                if is_leaf_list_item(schema, path) || new.kind() == JsonKind::Empty {
                    format!("+ {}", path.display(schema))
                } else {
                    format!("+ {} = {}", path.display(schema), new)
                }
            }
            Change::Set {
                path,
                old: Some(old),
                new,
            } => format!("~ {} = {} (was {})", path.display(schema), new, old),
            Change::Delete { path } => format!("- {}", path.display(schema)),
        }
    }
}

fn is_leaf_list_item(schema: &Schema, path: &DataPath) -> bool {
    path.last()
        .is_some_and(|s| schema.node(s.node).kind == NodeKind::LeafList && !s.keys.is_empty())
}

/// Path-level changes from `old` to `new`: deletes first, then creates and sets, each in
/// schema order; entries of a list the system orders (and items of such a leaf-list) as
/// people count them, `p2` before `p10` ([`natural_key`]), those of a user-ordered one
/// in its order. What people read (`show | compare`, `| display set`, set-line files) is
/// in the order `show` lists.
pub fn diff(schema: &Schema, old: &DataTree, new: &DataTree) -> Vec<Change> {
    walk(schema, old, new, true)
}

/// Every difference as written, a leaf holding its default value included: what a tree is
/// as lines (`render_tree`), where nothing written may be left out.
pub fn diff_as_written(schema: &Schema, old: &DataTree, new: &DataTree) -> Vec<Change> {
    walk(schema, old, new, false)
}

fn walk(schema: &Schema, old: &DataTree, new: &DataTree, in_force: bool) -> Vec<Change> {
    let mut walk = Walk::new(schema, in_force, Collected::default());
    walk.inner(old.root(), new.root());
    let Collected { mut deletes, sets } = walk.out;
    deletes.extend(sets);
    deletes
}

/// Walks from `old` to `new` as [`diff`] does, telling `out` each change in the order
/// `diff` lists the creates and sets (deletes are listed first).
pub(crate) fn walk_into<O: Out>(schema: &Schema, old: &DataTree, new: &DataTree, out: O) -> O {
    let mut walk = Walk::new(schema, true, out);
    walk.inner(old.root(), new.root());
    walk.out
}

/// Whether a leaf's value is its default: written or not, the same value is in force.
pub(crate) fn holds_default(schema: &Schema, id: SchemaId, value: &Value) -> bool {
    schema.node(id).default.as_deref() == Some(value.as_str())
}

/// Where a walk's changes go: a list of them, their count, a digest.
pub(crate) trait Out {
    fn delete(&mut self, path: &DataPath);
    fn create(&mut self, path: &DataPath);
    fn set(&mut self, path: &DataPath, old: Option<&Value>, new: &Value);
}

/// The changes, deletes apart: they come first.
#[derive(Default)]
struct Collected {
    deletes: Vec<Change>,
    sets: Vec<Change>,
}

impl Out for Collected {
    fn delete(&mut self, path: &DataPath) {
        let path = path.clone();
        self.deletes.push(Change::Delete { path });
    }

    fn create(&mut self, path: &DataPath) {
        let path = path.clone();
        self.sets.push(Change::Create { path });
    }

    fn set(&mut self, path: &DataPath, old: Option<&Value>, new: &Value) {
        let path = path.clone();
        let (old, new) = (old.cloned(), new.clone());
        self.sets.push(Change::Set { path, old, new });
    }
}

/// The count of lines: an entry created with content is created by the content's lines
/// (the rule of [`crate::setlines::render_changes`], which looks at the next change among
/// the creates and sets: the last entry created is kept until it comes).
#[derive(Default)]
pub(crate) struct Counted {
    lines: usize,
    created: Option<DataPath>,
}

impl Counted {
    /// The lines counted so far whose count the changes to come cannot change.
    pub(crate) fn settled(&self) -> usize {
        self.lines
    }

    fn next_in_sets(&mut self, path: &DataPath) {
        if let Some(entry) = self.created.take()
            && !(entry.contains(path) && entry != *path)
        {
            self.lines += 1;
        }
    }

    pub(crate) fn total(self) -> usize {
        self.lines + usize::from(self.created.is_some())
    }
}

impl Out for Counted {
    fn delete(&mut self, _: &DataPath) {
        self.lines += 1;
    }

    fn create(&mut self, path: &DataPath) {
        self.next_in_sets(path);
        self.created = Some(path.clone());
    }

    fn set(&mut self, path: &DataPath, _: Option<&Value>, _: &Value) {
        self.next_in_sets(path);
        self.lines += 1;
    }
}

/// Walks two trees side by side. The current path is one stack, pushed and popped as the
/// walk goes, and copied only into the changes it reports.
struct Walk<'a, O> {
    schema: &'a Schema,
    /// Compare what is in force: a leaf written with its default value is no change.
    in_force: bool,
    path: DataPath,
    out: O,
}

impl<'a, O: Out> Walk<'a, O> {
    fn new(schema: &'a Schema, in_force: bool, out: O) -> Self {
        Walk {
            schema,
            in_force,
            path: DataPath::root(),
            out,
        }
    }

    fn delete_here(&mut self) {
        self.out.delete(&self.path);
    }

    fn set_here(&mut self, old: Option<&Value>, new: &Value) {
        self.out.set(&self.path, old, new);
    }

    /// Runs `f` with the last path step set to `keys` (a list entry or a leaf-list item).
    fn at_keys(&mut self, keys: &[Value], f: impl FnOnce(&mut Self)) {
        if let Some(last) = self.path.segments.last_mut() {
            last.keys = keys.to_vec();
        }
        f(self);
        if let Some(last) = self.path.segments.last_mut() {
            last.keys.clear();
        }
    }

    fn inner(&mut self, old: &Inner, new: &Inner) {
        if old.ptr_eq(new) {
            return;
        }
        for id in old.child_ids_with(new) {
            self.path.segments.push(Segment::new(id));
            match (old.get(id), new.get(id)) {
                // A leaf written with its default value, or taken out while it had that
                // value, changes nothing in force: not a change.
                (Some(Child::Leaf(v)), None) | (None, Some(Child::Leaf(v)))
                    if self.is_default(id, v) => {}
                (Some(_), None) => self.delete_here(),
                (None, Some(child)) => self.created(child),
                (Some(a), Some(b)) => self.child(a, b),
                (None, None) => {}
            }
            self.path.segments.pop();
        }
    }

    fn is_default(&self, id: SchemaId, value: &Value) -> bool {
        self.in_force && holds_default(self.schema, id, value)
    }

    fn child(&mut self, old: &Child, new: &Child) {
        match (old, new) {
            (Child::Leaf(a), Child::Leaf(b)) => {
                if a != b {
                    self.set_here(Some(a), b);
                }
            }
            (Child::LeafList(a), Child::LeafList(b)) => self.leaf_list(a, b),
            (Child::Container(a), Child::Container(b)) => self.inner(a, b),
            (Child::List(a), Child::List(b)) => self.list(a, b),
            // Different kinds cannot share a schema node; treat as replacement.
            (_, new) => {
                self.delete_here();
                self.created(new);
            }
        }
    }

    fn created(&mut self, child: &Child) {
        match child {
            Child::Leaf(v) => self.set_here(None, v),
            Child::LeafList(items) => {
                for v in self.items_in_order(items) {
                    self.at_keys(std::slice::from_ref(v), |w| w.set_here(None, v));
                }
            }
            Child::Container(c) => self.inner(&Inner::default(), c),
            Child::List(list) => {
                let mut entries: Vec<(&Keys, &Inner)> = list.iter().collect();
                if list.order().is_none() {
                    entries.sort_by_cached_key(|(keys, _)| natural_key(keys));
                }
                for (keys, entry) in entries {
                    self.created_entry(keys, entry);
                }
            }
        }
    }

    fn created_entry(&mut self, keys: &Keys, entry: &Inner) {
        self.at_keys(keys, |w| {
            w.out.create(&w.path);
            w.inner(&Inner::default(), entry);
        });
    }

    fn deleted_entry(&mut self, keys: &Keys) {
        self.at_keys(keys, Walk::delete_here);
    }

    fn leaf_list(&mut self, old: &LeafList, new: &LeafList) {
        if old == new {
            return;
        }
        let user_ordered = self
            .path
            .node()
            .is_some_and(|id| self.schema.node(id).user_ordered);
        let reordered = user_ordered && {
            let kept: Vec<&Value> = old.iter().filter(|v| new.iter().any(|n| n == *v)).collect();
            let prefix: Vec<&Value> = new.iter().take(kept.len()).collect();
            kept != prefix
        };
        for v in old.iter() {
            if reordered || !new.iter().any(|n| n == v) {
                self.at_keys(std::slice::from_ref(v), Walk::delete_here);
            }
        }
        for v in self.items_in_order(new) {
            if reordered || !old.iter().any(|o| o == v) {
                self.at_keys(std::slice::from_ref(v), |w| w.set_here(None, v));
            }
        }
    }

    fn list(&mut self, old: &List, new: &List) {
        if old.order().is_some() {
            return self.user_ordered_list(old, new);
        }
        let mut items: Vec<_> = old.entries().diff(new.entries()).collect();
        items.sort_by_cached_key(|item| natural_key(diff_keys(item)));
        for item in items {
            match item {
                imbl::ordmap::DiffItem::Add(keys, entry) => self.created_entry(keys, entry),
                imbl::ordmap::DiffItem::Remove(keys, _) => self.deleted_entry(keys),
                imbl::ordmap::DiffItem::Update {
                    old: (keys, a),
                    new: (_, b),
                } => self.at_keys(keys, |w| w.inner(a, b)),
            }
        }
    }

    /// The items of the leaf-list here as they are listed: as people count them, unless
    /// the user orders them.
    fn items_in_order<'l>(&self, items: &'l LeafList) -> Vec<&'l Value> {
        let mut values: Vec<&Value> = items.iter().collect();
        let user_ordered = self
            .path
            .node()
            .is_some_and(|id| self.schema.node(id).user_ordered);
        if !user_ordered {
            values.sort_by(|a, b| efb_text_table::natural_cmp(a.as_str(), b.as_str()));
        }
        values
    }

    /// Entries keep their place when set again, and new ones go last; so from the first
    /// entry whose place differs, entries are deleted and created again in the new order.
    fn user_ordered_list(&mut self, old: &List, new: &List) {
        let mut expected: Vec<&Keys> = old.keys().filter(|k| new.get(k).is_some()).collect();
        expected.extend(new.keys().filter(|k| old.get(k).is_none()));
        let first_moved = new
            .keys()
            .zip(&expected)
            .position(|(a, b)| a != *b)
            .unwrap_or(expected.len());
        for keys in old.keys() {
            if new.get(keys).is_none() {
                self.deleted_entry(keys);
            }
        }
        for (i, (keys, entry)) in new.iter().enumerate() {
            match old.get(keys) {
                Some(before) if i < first_moved => self.at_keys(keys, |w| w.inner(before, entry)),
                Some(_) => {
                    self.deleted_entry(keys);
                    self.created_entry(keys, entry);
                }
                None => self.created_entry(keys, entry),
            }
        }
    }
}

/// The order people count list entries in, as a sort key worked out once per entry (a sort
/// of 100 000 entries compares them about 1.7 million times): key by key, `p2` before
/// `p10`, `p9-0` before `p10-0` (the shell's `show` lists and every diff follow it; the tree
/// itself keeps keys in byte order, which the balancing and the records depend on).
pub fn natural_key(keys: &[Value]) -> Vec<NaturalKey<'_>> {
    keys.iter().map(|k| NaturalKey::of(k.as_str())).collect()
}

fn diff_keys<'a>(item: &imbl::ordmap::DiffItem<'a, 'a, Keys, Inner>) -> &'a Keys {
    match item {
        imbl::ordmap::DiffItem::Add(keys, _)
        | imbl::ordmap::DiffItem::Remove(keys, _)
        | imbl::ordmap::DiffItem::Update { old: (keys, _), .. } => keys,
    }
}

/// Applies changes (as [`diff`] produces them) to a tree. Deleting what is already gone is
/// not an error: changes are replayed onto a tree that others may have changed too.
pub fn apply(schema: &Schema, tree: &mut DataTree, changes: &[Change]) -> Result<(), Error> {
    for change in changes {
        match change {
            Change::Delete { path } => {
                tree.remove(path);
            }
            Change::Create { path } => tree.set(schema, path, None)?,
            Change::Set { path, new, .. } => tree.set(schema, path, Some(new.clone()))?,
        }
    }
    Ok(())
}

/// A unit of storage: an entry of a list directly under a top-level container (a port, a
/// link, a unit, a flow, a profile), or what else a top-level container holds.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RecordKey {
    path: DataPath,
}

impl RecordKey {
    pub fn path(&self) -> &DataPath {
        &self.path
    }

    /// The key of a list entry record (`Some` for entries, `None` for container rests).
    pub fn entry(&self) -> Option<(SchemaId, &[Value])> {
        match self.path.segments.as_slice() {
            [_, entry] => Some((entry.node, &entry.keys)),
            _ => None,
        }
    }

    pub fn display(&self, schema: &Schema) -> String {
        self.path.display(schema)
    }

    pub fn parse(schema: &Schema, text: &str) -> Result<RecordKey, Error> {
        let path = DataPath::parse(schema, text)?;
        let valid = match path.segments.as_slice() {
            [top] => schema.node(top.node).kind == NodeKind::Container,
            [top, entry] => {
                schema.node(top.node).parent.is_none()
                    && is_record_list(schema, entry.node)
                    && !entry.keys.is_empty()
            }
            _ => false,
        };
        if valid {
            Ok(RecordKey { path })
        } else {
            Err(Error::Invalid(vec![Problem::new(
                text,
                "not a record path",
            )]))
        }
    }

    /// The record holding the node at `path`.
    pub fn of(schema: &Schema, path: &DataPath) -> Option<RecordKey> {
        let top = path.segments.first()?;
        match path.segments.get(1) {
            Some(entry) if is_record_list(schema, entry.node) && !entry.keys.is_empty() => {
                Some(RecordKey {
                    path: DataPath {
                        segments: vec![Segment::new(top.node), entry.clone()],
                    },
                })
            }
            _ => Some(RecordKey {
                path: DataPath {
                    segments: vec![Segment::new(top.node)],
                },
            }),
        }
    }
}

/// Lists stored entry by entry: system-ordered lists right under a top-level container.
/// (A user-ordered list's order would be lost across records, so it stays in its parent's.)
fn is_record_list(schema: &Schema, id: SchemaId) -> bool {
    let node = schema.node(id);
    node.kind == NodeKind::List
        && !node.user_ordered
        && node.parent.is_some_and(|p| schema.node(p).parent.is_none())
}

/// Every record of a tree, in order, with its data.
pub fn records(schema: &Schema, tree: &DataTree) -> Vec<(RecordKey, DataTree)> {
    let mut out = Vec::new();
    for (top, child) in tree.root().children() {
        let Child::Container(inner) = child else {
            continue;
        };
        let rest_key = RecordKey {
            path: DataPath {
                segments: vec![Segment::new(top)],
            },
        };
        if let Some(rest) = record_data(schema, tree, &rest_key) {
            out.push((rest_key, rest));
        }
        for (id, child) in inner.children() {
            if let (Child::List(list), true) = (child, is_record_list(schema, id)) {
                for (keys, _) in list.iter() {
                    let key = RecordKey {
                        path: DataPath {
                            segments: vec![
                                Segment::new(top),
                                Segment::with_keys(id, keys.to_vec()),
                            ],
                        },
                    };
                    if let Some(data) = record_data(schema, tree, &key) {
                        out.push((key, data));
                    }
                }
            }
        }
    }
    out
}

/// The data of one record, as a tree holding only it; `None` when the tree has none.
pub fn record_data(schema: &Schema, tree: &DataTree, key: &RecordKey) -> Option<DataTree> {
    if key.entry().is_some() {
        let part = tree.subtree(&key.path);
        return (!part.is_empty()).then_some(part);
    }
    let top = key.path.segments.first()?.node;
    let inner = tree.root().container(top)?;
    let mut rest = Inner::default();
    for (id, child) in inner.children() {
        if !(matches!(child, Child::List(_)) && is_record_list(schema, id)) {
            rest.put(schema, id, child.clone());
        }
    }
    if rest.is_empty() {
        return None;
    }
    let mut root = Inner::default();
    root.put(schema, top, Child::Container(rest));
    Some(DataTree::from_root(root))
}

/// Replaces one record of `tree` with `data` (or removes it).
pub fn put_record(schema: &Schema, tree: &mut DataTree, key: &RecordKey, data: Option<&DataTree>) {
    if key.entry().is_some() {
        tree.remove(&key.path);
    } else if let Some(top) = key.path.segments.first() {
        let lists: Vec<(SchemaId, Child)> = tree
            .root()
            .container(top.node)
            .map(|inner| {
                inner
                    .children()
                    .filter(|(id, c)| matches!(c, Child::List(_)) && is_record_list(schema, *id))
                    .map(|(id, c)| (id, c.clone()))
                    .collect()
            })
            .unwrap_or_default();
        tree.remove(&key.path);
        if !lists.is_empty() {
            let mut inner = Inner::default();
            for (id, child) in lists {
                inner.put(schema, id, child);
            }
            tree.root_mut()
                .put(schema, top.node, Child::Container(inner));
        }
    }
    if let Some(data) = data {
        tree.merge(schema, data);
    }
}

/// Records that differ between two trees.
pub fn changed_records(schema: &Schema, old: &DataTree, new: &DataTree) -> Vec<RecordKey> {
    let mut changed = Vec::new();
    if old.ptr_eq(new) {
        return changed;
    }
    let empty = Inner::default();
    let mut tops: Vec<SchemaId> = old.root().children().map(|(id, _)| id).collect();
    tops.extend(new.root().children().map(|(id, _)| id));
    tops.sort();
    tops.dedup();
    for top in tops {
        let a = old.root().container(top).unwrap_or(&empty);
        let b = new.root().container(top).unwrap_or(&empty);
        if a.ptr_eq(b) {
            continue;
        }
        let mut rest_changed = false;
        let mut ids: Vec<SchemaId> = a.children().map(|(id, _)| id).collect();
        ids.extend(b.children().map(|(id, _)| id));
        ids.sort();
        ids.dedup();
        for id in ids {
            match (a.get(id), b.get(id), is_record_list(schema, id)) {
                (x, y, true) => {
                    let empty_list = List::default();
                    let x = as_list(x).unwrap_or(&empty_list);
                    let y = as_list(y).unwrap_or(&empty_list);
                    for item in x.entries().diff(y.entries()) {
                        let keys = match item {
                            imbl::ordmap::DiffItem::Add(k, _)
                            | imbl::ordmap::DiffItem::Remove(k, _) => k,
                            imbl::ordmap::DiffItem::Update { new: (k, _), .. } => k,
                        };
                        changed.push(RecordKey {
                            path: DataPath {
                                segments: vec![
                                    Segment::new(top),
                                    Segment::with_keys(id, keys.to_vec()),
                                ],
                            },
                        });
                    }
                }
                (x, y, false) => rest_changed |= x != y,
            }
        }
        if rest_changed {
            changed.push(RecordKey {
                path: DataPath {
                    segments: vec![Segment::new(top)],
                },
            });
        }
    }
    changed
}

fn as_list(child: Option<&Child>) -> Option<&List> {
    match child {
        Some(Child::List(l)) => Some(l),
        _ => None,
    }
}

/// Groups changes by the record they touch (for conflict messages and history).
pub fn by_record(schema: &Schema, changes: &[Change]) -> BTreeMap<RecordKey, Vec<Change>> {
    let mut map: BTreeMap<RecordKey, Vec<Change>> = BTreeMap::new();
    for change in changes {
        if let Some(key) = RecordKey::of(schema, change.path()) {
            map.entry(key).or_default().push(change.clone());
        }
    }
    map
}
