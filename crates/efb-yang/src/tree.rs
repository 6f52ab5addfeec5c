//! Configuration data as a persistent tree shaped by the schema.
//!
//! Cloning a tree is O(1) and edits copy only the nodes on the edited path, so every session
//! can hold its own candidate and every commit can keep the previous running configuration
//! without copying 100 000 flows. Two trees that share a subtree compare it in O(1), which
//! makes diffs proportional to what changed.
//!
//! Only explicitly set data is stored: defaults come from the schema.

use std::sync::Arc;

use imbl::OrdMap;

use crate::path::{DataPath, Segment};
use crate::schema::{NodeKind, Schema, SchemaId};
use crate::{Error, Problem};

pub use crate::value::Value;

/// The key values of a list entry, in key order.
pub type Keys = Arc<[Value]>;

/// A container, a list entry, or the top of the data: its children sorted by schema id
/// (which is schema order). Copy-on-write: editing a shared node copies only this level.
#[derive(Clone, Debug, Default)]
pub struct Inner {
    children: Arc<Vec<(SchemaId, Child)>>,
}

impl PartialEq for Inner {
    fn eq(&self, other: &Inner) -> bool {
        Arc::ptr_eq(&self.children, &other.children) || self.children == other.children
    }
}

/// One child of an inner node.
#[derive(Clone, Debug, PartialEq)]
pub enum Child {
    Leaf(Value),
    LeafList(LeafList),
    Container(Inner),
    List(List),
}

/// Entries of a list by key; user-ordered lists also keep their order.
#[derive(Clone, Debug, Default)]
pub struct List {
    entries: OrdMap<Keys, Inner>,
    /// Configured order of a user-ordered list (pairs: a few, so a plain shared vector).
    order: Option<Arc<Vec<Keys>>>,
}

impl PartialEq for List {
    fn eq(&self, other: &List) -> bool {
        self.entries.ptr_eq(&other.entries)
            || (self.entries.len() == other.entries.len()
                && self.entries.diff(&other.entries).next().is_none()
                && self.order == other.order)
    }
}

/// Items of a leaf-list: sorted for system-ordered lists, as given for user-ordered ones.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LeafList {
    values: Arc<Vec<Value>>,
}

impl LeafList {
    pub fn iter(&self) -> impl Iterator<Item = &Value> {
        self.values.iter()
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    pub(crate) fn insert(&mut self, value: Value, user_ordered: bool) {
        if self.values.contains(&value) {
            return;
        }
        let values = Arc::make_mut(&mut self.values);
        values.push(value);
        if !user_ordered {
            values.sort();
        }
    }

    fn remove(&mut self, value: &Value) -> bool {
        if !self.values.contains(value) {
            return false;
        }
        Arc::make_mut(&mut self.values).retain(|v| v != value);
        true
    }
}

impl List {
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn get(&self, keys: &[Value]) -> Option<&Inner> {
        self.entries.get(keys)
    }

    /// Entries in list order: configured order for user-ordered lists, key order otherwise.
    pub fn iter(&self) -> Box<dyn Iterator<Item = (&Keys, &Inner)> + '_> {
        match &self.order {
            Some(order) => Box::new(order.iter().filter_map(|k| self.entries.get_key_value(k))),
            None => Box::new(self.entries.iter()),
        }
    }

    pub fn keys(&self) -> impl Iterator<Item = &Keys> {
        self.iter().map(|(k, _)| k)
    }

    pub(crate) fn entries(&self) -> &OrdMap<Keys, Inner> {
        &self.entries
    }

    pub(crate) fn order(&self) -> Option<&[Keys]> {
        self.order.as_deref().map(Vec::as_slice)
    }

    fn new(user_ordered: bool) -> List {
        List {
            entries: OrdMap::new(),
            order: user_ordered.then(Arc::default),
        }
    }

    fn entry_mut(&mut self, keys: &[Value], create: bool) -> Option<&mut Inner> {
        if !self.entries.contains_key(keys) {
            if !create {
                return None;
            }
            let keys: Keys = keys.to_vec().into();
            if let Some(order) = &mut self.order {
                Arc::make_mut(order).push(keys.clone());
            }
            self.entries.insert(keys, Inner::default());
        }
        self.entries.get_mut(keys)
    }

    fn remove(&mut self, keys: &[Value]) -> bool {
        if self.entries.remove(keys).is_none() {
            return false;
        }
        if let Some(order) = &mut self.order {
            Arc::make_mut(order).retain(|k| &k[..] != keys);
        }
        true
    }

    fn place_after(&mut self, keys: &[Value], after: Option<&[Value]>) -> bool {
        let Some(order) = &mut self.order else {
            return false;
        };
        let order = Arc::make_mut(order);
        let Some(at) = order.iter().position(|k| &k[..] == keys) else {
            return false;
        };
        let moved = order.remove(at);
        let to = match after {
            None => 0,
            Some(a) => order
                .iter()
                .position(|k| &k[..] == a)
                .map_or(order.len(), |i| i + 1),
        };
        order.insert(to, moved);
        true
    }

    /// Inserts or replaces an entry, keeping its position if it exists.
    pub(crate) fn put(&mut self, keys: Keys, inner: Inner) {
        if !self.entries.contains_key(&keys)
            && let Some(order) = &mut self.order
        {
            Arc::make_mut(order).push(keys.clone());
        }
        self.entries.insert(keys, inner);
    }
}

/// A read-only view of one node of a tree.
#[derive(Clone, Copy, Debug)]
pub enum NodeRef<'a> {
    Inner(&'a Inner),
    List(&'a List),
    Leaf(&'a Value),
    LeafList(&'a LeafList),
}

impl Inner {
    pub fn is_empty(&self) -> bool {
        self.children.is_empty()
    }

    pub fn children(&self) -> impl Iterator<Item = (SchemaId, &Child)> {
        self.children.iter().map(|(id, c)| (*id, c))
    }

    /// The children's ids of this node and `other`, in schema order, each once: what two
    /// trees walked side by side visit.
    pub fn child_ids_with(&self, other: &Inner) -> Vec<SchemaId> {
        let mut ids: Vec<SchemaId> = self.children().map(|(id, _)| id).collect();
        ids.extend(other.children().map(|(id, _)| id));
        ids.sort();
        ids.dedup();
        ids
    }

    pub fn get(&self, id: SchemaId) -> Option<&Child> {
        self.position(id).ok().map(|i| &self.children[i].1)
    }

    pub fn leaf(&self, id: SchemaId) -> Option<&Value> {
        match self.get(id) {
            Some(Child::Leaf(v)) => Some(v),
            _ => None,
        }
    }

    pub fn container(&self, id: SchemaId) -> Option<&Inner> {
        match self.get(id) {
            Some(Child::Container(c)) => Some(c),
            _ => None,
        }
    }

    pub fn list(&self, id: SchemaId) -> Option<&List> {
        match self.get(id) {
            Some(Child::List(l)) => Some(l),
            _ => None,
        }
    }

    pub fn leaf_list(&self, id: SchemaId) -> Option<&LeafList> {
        match self.get(id) {
            Some(Child::LeafList(l)) => Some(l),
            _ => None,
        }
    }

    pub(crate) fn ptr_eq(&self, other: &Inner) -> bool {
        Arc::ptr_eq(&self.children, &other.children)
    }

    fn position(&self, id: SchemaId) -> Result<usize, usize> {
        self.children.binary_search_by_key(&id, |(c, _)| *c)
    }

    fn child_mut(&mut self, id: SchemaId) -> Option<&mut Child> {
        let i = self.position(id).ok()?;
        Some(&mut Arc::make_mut(&mut self.children)[i].1)
    }

    /// Sets a child, removing children of other cases of the same choice.
    pub(crate) fn put(&mut self, schema: &Schema, id: SchemaId, child: Child) {
        let children = Arc::make_mut(&mut self.children);
        if !schema.node(id).cases.is_empty() {
            children.retain(|(other, _)| *other == id || !schema.excludes(id, *other));
        }
        match children.binary_search_by_key(&id, |(c, _)| *c) {
            Ok(i) => children[i].1 = child,
            Err(i) => children.insert(i, (id, child)),
        }
    }

    /// Gives back the room its children's vector grew into: built child by child it holds
    /// up to twice what it needs (64 of the 178 MiB our side of a 100 000-flow load took).
    pub(crate) fn shrink(&mut self) {
        if let Some(children) = Arc::get_mut(&mut self.children) {
            children.shrink_to_fit();
        }
    }

    pub(crate) fn remove_child(&mut self, id: SchemaId) -> Option<Child> {
        self.take(id)
    }

    fn take(&mut self, id: SchemaId) -> Option<Child> {
        let i = self.position(id).ok()?;
        Some(Arc::make_mut(&mut self.children).remove(i).1)
    }

    /// The child `id`, created empty (container, list, leaf-list) when missing.
    fn ensure(&mut self, schema: &Schema, id: SchemaId) -> &mut Child {
        if self.position(id).is_err() {
            let info = schema.node(id);
            let child = match info.kind {
                NodeKind::List => Child::List(List::new(info.user_ordered)),
                NodeKind::LeafList => Child::LeafList(LeafList::default()),
                _ => Child::Container(Inner::default()),
            };
            self.put(schema, id, child);
        }
        let i = self.position(id).unwrap_or_default();
        &mut Arc::make_mut(&mut self.children)[i].1
    }

    /// The list `id`, created empty when missing.
    pub(crate) fn list_mut(&mut self, schema: &Schema, id: SchemaId) -> &mut List {
        if !matches!(self.get(id), Some(Child::List(_))) {
            self.put(
                schema,
                id,
                Child::List(List::new(schema.node(id).user_ordered)),
            );
        }
        match self.child_mut(id) {
            Some(Child::List(l)) => l,
            _ => unreachable_entry(),
        }
    }

    /// The leaf-list `id`, created empty when missing.
    pub(crate) fn leaf_list_mut(&mut self, schema: &Schema, id: SchemaId) -> &mut LeafList {
        if !matches!(self.get(id), Some(Child::LeafList(_))) {
            self.put(schema, id, Child::LeafList(LeafList::default()));
        }
        match self.child_mut(id) {
            Some(Child::LeafList(l)) => l,
            _ => unreachable_entry(),
        }
    }

    /// Removes empty containers, lists and leaf-lists left behind by a removal.
    fn prune(&mut self, id: SchemaId) {
        let empty = match self.get(id) {
            Some(Child::Container(c)) => c.is_empty(),
            Some(Child::List(l)) => l.is_empty(),
            Some(Child::LeafList(l)) => l.is_empty(),
            _ => false,
        };
        if empty {
            self.take(id);
        }
    }
}

/// Configuration (or state) data: the children of the top of the data tree.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DataTree {
    root: Inner,
}

/// Why an edit could not be made.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EditError {
    #[error("{0}: no such data")]
    Missing(String),
    #[error("{0}: already exists")]
    Exists(String),
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
}

impl From<EditError> for Problem {
    fn from(e: EditError) -> Problem {
        match e {
            EditError::Missing(path) => Problem::new(path, "no such data"),
            EditError::Exists(path) => Problem::new(path, "already exists"),
            EditError::Invalid { path, message } => Problem::new(path, message),
        }
    }
}

impl From<EditError> for Error {
    fn from(e: EditError) -> Error {
        Error::Invalid(vec![e.into()])
    }
}

impl DataTree {
    pub fn new() -> DataTree {
        DataTree::default()
    }

    pub fn root(&self) -> &Inner {
        &self.root
    }

    pub fn is_empty(&self) -> bool {
        self.root.is_empty()
    }

    /// True when both trees are the very same data (not merely equal).
    pub fn ptr_eq(&self, other: &DataTree) -> bool {
        self.root.ptr_eq(&other.root)
    }

    pub(crate) fn from_root(root: Inner) -> DataTree {
        DataTree { root }
    }

    pub(crate) fn root_mut(&mut self) -> &mut Inner {
        &mut self.root
    }

    /// The node a path names; for a list step without keys, the list itself. A list's key
    /// leaf is read from the entry's keys.
    pub fn get(&self, schema: &Schema, path: &DataPath) -> Option<NodeRef<'_>> {
        let mut node = NodeRef::Inner(&self.root);
        let mut entry_keys: Option<&Keys> = None;
        for seg in &path.segments {
            let NodeRef::Inner(inner) = node else {
                return None;
            };
            let keys = entry_keys.take();
            node = match inner.get(seg.node) {
                Some(Child::Container(c)) => NodeRef::Inner(c),
                Some(Child::Leaf(v)) => NodeRef::Leaf(v),
                Some(Child::LeafList(l)) if seg.keys.is_empty() => NodeRef::LeafList(l),
                Some(Child::LeafList(l)) => NodeRef::Leaf(l.iter().find(|v| **v == seg.keys[0])?),
                Some(Child::List(l)) if seg.keys.is_empty() => NodeRef::List(l),
                Some(Child::List(l)) => {
                    let (k, entry) = l.entries.get_key_value(&seg.keys[..])?;
                    entry_keys = Some(k);
                    NodeRef::Inner(entry)
                }
                None => {
                    let info = schema.node(seg.node);
                    let list = schema.node(info.parent?);
                    let index = list.keys.iter().position(|k| *k == seg.node)?;
                    NodeRef::Leaf(keys?.get(index)?)
                }
            };
        }
        Some(node)
    }

    /// The value of the leaf (or leaf-list item) a path names.
    pub fn leaf(&self, schema: &Schema, path: &DataPath) -> Option<&Value> {
        match self.get(schema, path)? {
            NodeRef::Leaf(v) => Some(v),
            _ => None,
        }
    }

    pub fn contains(&self, schema: &Schema, path: &DataPath) -> bool {
        self.get(schema, path).is_some()
    }

    /// Merge-sets one node: a leaf's value, a leaf-list item, a list entry or a container,
    /// creating what is missing on the way.
    pub fn set(
        &mut self,
        schema: &Schema,
        path: &DataPath,
        value: Option<Value>,
    ) -> Result<(), EditError> {
        let (last, parents) = path
            .segments
            .split_last()
            .ok_or_else(|| invalid(schema, path, "the top of the data takes no value"))?;
        check_keys_given(schema, path)?;
        let info = schema.node(last.node);
        if info.is_key {
            return set_key_leaf(schema, path, value.as_ref(), parents);
        }
        let value = match (info.kind, value) {
            (NodeKind::Leaf, Some(v)) => Some(v),
            (NodeKind::Leaf, None) => Some(schema.value(last.node, "").map_err(|e| {
                invalid(schema, path, &format!("needs a value: {}", info.accepts()))
                    .with_detail(e.to_string())
            })?),
            (NodeKind::LeafList, Some(v)) => Some(v),
            (NodeKind::LeafList, None) => last.keys.first().cloned(),
            (_, Some(_)) => {
                return Err(invalid(schema, path, "takes no value"));
            }
            (_, None) => None,
        };
        let parent = descend_create(&mut self.root, schema, parents);
        match info.kind {
            NodeKind::Leaf => {
                if let Some(v) = value {
                    parent.put(schema, last.node, Child::Leaf(v));
                }
            }
            NodeKind::LeafList => match value {
                Some(v) => {
                    if let Child::LeafList(l) = parent.ensure(schema, last.node) {
                        l.insert(v, info.user_ordered);
                    }
                }
                None => return Err(invalid(schema, path, "needs a value")),
            },
            NodeKind::List => {
                if let Child::List(l) = parent.ensure(schema, last.node) {
                    l.entry_mut(&last.keys, true);
                }
            }
            _ => {
                parent.ensure(schema, last.node);
                parent.prune(last.node);
                // A container of a case, set with nothing in it, removed the other case's
                // nodes: the containers it emptied on the way go too (they hold nothing;
                // kept, they printed as `{}` and read back as nothing).
                prune_emptied(&mut self.root, parents);
            }
        }
        Ok(())
    }

    /// Removes the node a path names; an error if there is none.
    pub fn delete(&mut self, schema: &Schema, path: &DataPath) -> Result<(), EditError> {
        if self.remove(path) {
            Ok(())
        } else {
            Err(EditError::Missing(path.display(schema)))
        }
    }

    /// Removes the node a path names, if there is one. Returns whether anything was removed.
    pub fn remove(&mut self, path: &DataPath) -> bool {
        if path.is_root() {
            let had = !self.root.is_empty();
            self.root = Inner::default();
            return had;
        }
        remove_at(&mut self.root, &path.segments)
    }

    /// Merges `other` into this tree: its leaves win, lists merge entry by entry, leaf-list
    /// items are added, new entries of user-ordered lists go after the existing ones.
    pub fn merge(&mut self, schema: &Schema, other: &DataTree) {
        merge_inner(&mut self.root, schema, &other.root);
    }

    /// Replaces the node at `path` with what `other` holds there (nothing: removal).
    pub fn replace(&mut self, schema: &Schema, path: &DataPath, other: &DataTree) {
        self.remove(path);
        let part = other.subtree(path);
        self.merge(schema, &part);
    }

    /// Creates the node at `path` from `other`; an error if it already exists.
    pub fn create(
        &mut self,
        schema: &Schema,
        path: &DataPath,
        other: &DataTree,
    ) -> Result<(), EditError> {
        if !path.is_root() && self.contains(schema, path) {
            return Err(EditError::Exists(path.display(schema)));
        }
        let part = other.subtree(path);
        self.merge(schema, &part);
        Ok(())
    }

    /// Moves the entry `path` names, in a list the user orders, right after the entry with
    /// keys `after` (first when `after` is None; last when that entry is gone). False when
    /// there is no such entry in such a list.
    pub fn place_after(&mut self, path: &DataPath, after: Option<&[Value]>) -> bool {
        let Some((last, parents)) = path.segments.split_last() else {
            return false;
        };
        let Some(parent) = inner_at_mut(&mut self.root, parents) else {
            return false;
        };
        match parent.child_mut(last.node) {
            Some(Child::List(list)) => list.place_after(&last.keys, after),
            _ => false,
        }
    }

    /// A tree holding only the node at `path` (with its ancestors and their keys). A list
    /// step without keys keeps every entry; a leaf-list step without value every item.
    pub fn subtree(&self, path: &DataPath) -> DataTree {
        match subtree_at(&self.root, &path.segments) {
            Some(root) => DataTree { root },
            None => DataTree::default(),
        }
    }
}

fn invalid(schema: &Schema, path: &DataPath, message: &str) -> EditError {
    EditError::Invalid {
        path: path.display(schema),
        message: message.to_string(),
    }
}

trait WithDetail {
    fn with_detail(self, detail: String) -> Self;
}

impl WithDetail for EditError {
    fn with_detail(self, detail: String) -> EditError {
        match self {
            EditError::Invalid { path, message } if !detail.is_empty() => EditError::Invalid {
                path,
                message: format!("{message} ({detail})"),
            },
            other => other,
        }
    }
}

/// Every list step of a path being set must name one entry.
fn check_keys_given(schema: &Schema, path: &DataPath) -> Result<(), EditError> {
    for seg in &path.segments {
        let info = schema.node(seg.node);
        if info.kind == NodeKind::List && seg.keys.is_empty() {
            let key_names: Vec<&str> = info
                .keys
                .iter()
                .map(|k| schema.node(*k).name.as_str())
                .collect();
            return Err(invalid(
                schema,
                path,
                &format!("{} needs its key {}", info.name, key_names.join(", ")),
            ));
        }
    }
    Ok(())
}

/// Setting a key leaf names the entry; it may only repeat the entry's own key.
fn set_key_leaf(
    schema: &Schema,
    path: &DataPath,
    value: Option<&Value>,
    parents: &[Segment],
) -> Result<(), EditError> {
    let entry = parents.last().map(|s| &s.keys);
    match (entry, value) {
        (Some(keys), Some(v)) if keys.contains(v) => Ok(()),
        _ => Err(invalid(
            schema,
            path,
            "a list key cannot be changed; delete the entry and create a new one",
        )),
    }
}

/// The inner node at the end of `segments`, creating containers and list entries.
fn descend_create<'a>(
    mut inner: &'a mut Inner,
    schema: &Schema,
    segments: &[Segment],
) -> &'a mut Inner {
    for seg in segments {
        inner = match inner.ensure(schema, seg.node) {
            Child::Container(c) => c,
            Child::List(l) => match l.entry_mut(&seg.keys, true) {
                Some(entry) => entry,
                None => unreachable_entry(),
            },
            // A path through a leaf is refused before we get here.
            _ => unreachable_entry(),
        };
    }
    inner
}

#[allow(clippy::panic)]
fn unreachable_entry() -> ! {
    panic!("data path descends through a leaf or an entry that could not be created")
}

/// Removes the containers along `segments` left empty, up to the nearest list entry (an
/// entry exists by its keys alone).
fn prune_emptied(inner: &mut Inner, segments: &[Segment]) {
    let Some((seg, rest)) = segments.split_first() else {
        return;
    };
    match inner.child_mut(seg.node) {
        Some(Child::Container(c)) => prune_emptied(c, rest),
        Some(Child::List(l)) if !seg.keys.is_empty() => {
            if let Some(entry) = l.entry_mut(&seg.keys, false) {
                prune_emptied(entry, rest);
            }
            return;
        }
        _ => return,
    }
    inner.prune(seg.node);
}

fn remove_at(inner: &mut Inner, segments: &[Segment]) -> bool {
    let Some((seg, rest)) = segments.split_first() else {
        return false;
    };
    let removed = if rest.is_empty() {
        match inner.child_mut(seg.node) {
            None => false,
            Some(Child::List(l)) if !seg.keys.is_empty() => l.remove(&seg.keys),
            Some(Child::LeafList(l)) if !seg.keys.is_empty() => l.remove(&seg.keys[0]),
            Some(_) => inner.take(seg.node).is_some(),
        }
    } else {
        match inner.child_mut(seg.node) {
            Some(Child::Container(c)) => remove_at(c, rest),
            Some(Child::List(l)) if !seg.keys.is_empty() => match l.entry_mut(&seg.keys, false) {
                Some(entry) => remove_at(entry, rest),
                None => false,
            },
            _ => false,
        }
    };
    if removed {
        inner.prune(seg.node);
    }
    removed
}

/// The container or list entry `segments` name, to change it.
fn inner_at_mut<'t>(inner: &'t mut Inner, segments: &[Segment]) -> Option<&'t mut Inner> {
    let Some((seg, rest)) = segments.split_first() else {
        return Some(inner);
    };
    let next = match inner.child_mut(seg.node)? {
        Child::Container(c) => c,
        Child::List(l) if !seg.keys.is_empty() => l.entry_mut(&seg.keys, false)?,
        _ => return None,
    };
    inner_at_mut(next, rest)
}

fn subtree_at(inner: &Inner, segments: &[Segment]) -> Option<Inner> {
    let Some((seg, rest)) = segments.split_first() else {
        return Some(inner.clone());
    };
    let child = inner.get(seg.node)?;
    let kept = match (child, rest.is_empty()) {
        (Child::List(l), _) if !seg.keys.is_empty() => {
            let entry = l.get(&seg.keys)?;
            let entry = subtree_at(entry, rest)?;
            let mut list = List::new(l.order.is_some());
            list.put(seg.keys.clone().into(), entry);
            Child::List(list)
        }
        (Child::LeafList(l), true) if !seg.keys.is_empty() => {
            let value = l.iter().find(|v| **v == seg.keys[0])?;
            Child::LeafList(LeafList {
                values: Arc::new(vec![value.clone()]),
            })
        }
        (Child::Container(c), false) => Child::Container(subtree_at(c, rest)?),
        (child, true) => child.clone(),
        _ => return None,
    };
    Some(Inner {
        children: Arc::new(vec![(seg.node, kept)]),
    })
}

fn merge_inner(target: &mut Inner, schema: &Schema, source: &Inner) {
    if target.ptr_eq(source) {
        return;
    }
    for (id, child) in source.children() {
        match child {
            Child::Leaf(_) => target.put(schema, id, child.clone()),
            Child::LeafList(items) => {
                let user_ordered = schema.node(id).user_ordered;
                if let Child::LeafList(l) = target.ensure(schema, id) {
                    for v in items.iter() {
                        l.insert(v.clone(), user_ordered);
                    }
                }
            }
            Child::Container(c) => {
                if target.get(id).is_none() {
                    target.put(schema, id, Child::Container(c.clone()));
                } else if let Child::Container(t) = target.ensure(schema, id) {
                    merge_inner(t, schema, c);
                }
            }
            Child::List(list) => {
                if let Child::List(t) = target.ensure(schema, id) {
                    for (keys, entry) in list.iter() {
                        match t.entry_mut(keys, false) {
                            Some(existing) => merge_inner(existing, schema, entry),
                            None => t.put(keys.clone(), entry.clone()),
                        }
                    }
                }
            }
        }
    }
}
