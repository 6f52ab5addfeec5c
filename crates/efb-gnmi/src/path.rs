//! gNMI paths against the schema: origins, module-qualified elements, list keys, the `*`
//! and `...` wildcards; expanding a path over a data tree into the data paths it selects,
//! and writing data paths back as gNMI paths.
//!
//! Accepted forms, all meaning the same node:
//! - origin empty: `/ports/port[name=p1]`
//! - origin the module name (pygnmi's `ecofilter-balancer:ports/...`): origin
//!   `ecofilter-balancer`, elements `ports`, `port`
//! - origin empty and a module-qualified first element (gnmic's style):
//!   `ecofilter-balancer:ports`
//! - origin `rfc7951`, elements qualified as RFC 7951 qualifies names.
//!
//! A list element without some or all of its keys selects every value of the keys left
//! out, as if they were `*` (the path conventions' rule), except a list named last with no
//! keys at all, which is the whole list.

use efb_yang::{DataPath, DataTree, NodeKind, NodeRef, Schema, SchemaId, Segment, Value};
use gnmi_proto::gnmi;

use crate::defaults;

/// The origin RFC 7951-style clients use for YANG paths with module-qualified names.
pub const RFC7951_ORIGIN: &str = "rfc7951";

/// Why a path is refused, with the gRPC code each maps to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// Cannot be read as a path of this target: INVALID_ARGUMENT.
    #[error("{0}")]
    Invalid(String),
    /// Names a node the schema does not have: NOT_FOUND, as the gNMI specification asks
    /// (data that is not there is NOT_FOUND too, decided by the reader).
    #[error("{0}")]
    NotInSchema(String),
}

/// One element of a path as the client wrote it (module prefix removed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// A node by name; for a list, selectors for some or all of its keys (`None`: `*`).
    Node {
        name: String,
        keys: Vec<(String, Option<String>)>,
    },
    /// `*`: any one node.
    Any,
    /// `...`: any number of levels, none included.
    Descendants,
}

/// How the client wrote its paths, to answer in the same style.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Style {
    pub origin: String,
    /// The first element carried the module name (`ecofilter-balancer:ports`).
    pub qualified: bool,
}

/// A path (prefix and path joined), possibly with wildcards.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pattern {
    pub steps: Vec<Step>,
    pub style: Style,
}

/// Where a concrete data path stands relative to what a pattern selects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Relation {
    /// At or below a selected node.
    Inside,
    /// Above some node the pattern could select (removing it removes them).
    Above,
    Outside,
}

impl Pattern {
    /// Joins a prefix and a path, checks origins and names, reads keys. The schema must
    /// have some node the result could select (else INVALID_ARGUMENT, with the names
    /// nearest to the unknown one).
    pub fn parse(
        schema: &Schema,
        prefix: Option<&gnmi::Path>,
        path: Option<&gnmi::Path>,
    ) -> Result<Pattern, PathError> {
        let style = origin(schema, prefix, path)?;
        let mut steps = Vec::new();
        for elem in prefix.into_iter().chain(path).flat_map(|p| p.elem.iter()) {
            steps.push(step(schema, elem)?);
        }
        let steps = collapse_wildcards(steps);
        let mut style = style;
        style.qualified = prefix
            .into_iter()
            .chain(path)
            .flat_map(|p| p.elem.first())
            .next()
            .is_some_and(|e| e.name.contains(':'));
        let mut pattern = Pattern { steps, style };
        pattern.check(schema)?;
        Ok(pattern)
    }

    pub fn has_wildcards(&self) -> bool {
        self.steps.iter().any(|s| match s {
            Step::Any | Step::Descendants => true,
            Step::Node { keys, .. } => keys.iter().any(|(_, v)| v.is_none()),
        })
    }

    /// The one node a wildcard-free path names, for writing: every list on the way needs
    /// all its keys; the last step may name a whole list.
    pub fn data_path(&self, schema: &Schema) -> Result<DataPath, PathError> {
        let mut path = DataPath::root();
        for (i, step) in self.steps.iter().enumerate() {
            let Step::Node { name, keys } = step else {
                return Err(PathError::Invalid(
                    "wildcards (* and ...) cannot name what to write".into(),
                ));
            };
            let id =
                child(schema, path.node(), name).ok_or_else(|| unknown(schema, &path, name))?;
            let last = i + 1 == self.steps.len();
            let info = schema.node(id);
            let values = if info.kind == NodeKind::List && (!keys.is_empty() || !last) {
                exact_keys(schema, id, keys)?
            } else {
                Vec::new()
            };
            path = path.child(Segment::with_keys(id, values));
        }
        Ok(path)
    }

    /// Every data path of `tree` the pattern selects, in tree order. A list step without
    /// keys selects each entry.
    pub fn expand(&self, schema: &Schema, tree: &DataTree) -> Vec<DataPath> {
        let mut out = Vec::new();
        let mut walk = Expand {
            schema,
            tree,
            steps: &self.steps,
            out: &mut out,
        };
        walk.at(&DataPath::root(), 0);
        // `...` can reach one node in several ways (`.../port/...` reaches
        // /board/port/lane/port through either `port`): each node once, where first found.
        let mut seen = std::collections::HashSet::with_capacity(out.len());
        out.retain(|path| seen.insert(path.clone()));
        out
    }

    /// Where `path` (a data path, as a diff reports it) stands relative to the pattern.
    pub fn relation(&self, schema: &Schema, path: &DataPath) -> Relation {
        // Nothing is below a leaf: a leaf is never above what the pattern selects.
        let leaf = path
            .node()
            .is_some_and(|id| matches!(schema.node(id).kind, NodeKind::Leaf | NodeKind::LeafList));
        relate(schema, &self.steps, &path.segments, leaf)
    }

    /// Schema-level check: some node can match, and every key is a key and reads as one.
    /// Keys left out of a list element that is not last become `*`.
    fn check(&mut self, schema: &Schema) -> Result<(), PathError> {
        let mut candidates: Vec<Option<SchemaId>> = vec![None];
        let mut shown = DataPath::root();
        let count = self.steps.len();
        for (index, step) in self.steps.iter_mut().enumerate() {
            let mut next = Vec::new();
            match step {
                Step::Any => {
                    for c in &candidates {
                        next.extend(children(schema, *c).into_iter().map(Some));
                    }
                }
                Step::Descendants => {
                    for c in &candidates {
                        next.push(*c);
                        next.extend(descendants(schema, *c).into_iter().map(Some));
                    }
                }
                Step::Node { name, keys } => {
                    for c in &candidates {
                        if let Some(id) = child(schema, *c, name) {
                            check_keys(schema, id, keys)?;
                            next.push(Some(id));
                        }
                    }
                    if next.is_empty() {
                        return Err(match candidates.len() {
                            1 => unknown(schema, &shown, name),
                            _ => {
                                let names: Vec<String> = candidates
                                    .iter()
                                    .flat_map(|c| children(schema, *c))
                                    .map(|id| schema.node(id).name.clone())
                                    .collect();
                                PathError::NotInSchema(format!(
                                    "no element \"{name}\" in the model where the path puts it{}",
                                    nearest_note(name, &names)
                                ))
                            }
                        });
                    }
                    let last = index + 1 == count;
                    if !(last && keys.is_empty()) {
                        missing_keys_as_any(schema, &next, keys);
                    }
                    if let (1, Some(Some(id))) = (next.len(), next.first()) {
                        shown = shown.child(Segment::new(*id));
                    }
                }
            }
            next.sort();
            next.dedup();
            candidates = next;
        }
        Ok(())
    }
}

/// A run of wildcards between two names matches exactly as many levels as it has `*`, or
/// at least that many when it holds a `...`: written as that many `*` and one `...`, it
/// means the same. Each `...` multiplies the ways a path can match (a Get of 24 `...` over
/// a small site took 0.6 s and listed each node thousands of times, found by fuzzing,
/// `tests/fuzz_paths_values.rs`); after this, `...` are as many as the names between them.
fn collapse_wildcards(steps: Vec<Step>) -> Vec<Step> {
    fn flush(out: &mut Vec<Step>, any: &mut usize, descendants: &mut bool) {
        out.extend(std::iter::repeat_n(Step::Any, std::mem::take(any)));
        if std::mem::take(descendants) {
            out.push(Step::Descendants);
        }
    }
    let mut out = Vec::with_capacity(steps.len());
    let (mut any, mut descendants) = (0, false);
    for step in steps {
        match step {
            Step::Any => any += 1,
            Step::Descendants => descendants = true,
            node => {
                flush(&mut out, &mut any, &mut descendants);
                out.push(node);
            }
        }
    }
    flush(&mut out, &mut any, &mut descendants);
    out
}

#[allow(deprecated)] // reading the deprecated field to refuse it with a clear message
fn origin(
    schema: &Schema,
    prefix: Option<&gnmi::Path>,
    path: Option<&gnmi::Path>,
) -> Result<Style, PathError> {
    for p in prefix.into_iter().chain(path) {
        if !p.element.is_empty() {
            return Err(PathError::Invalid(
                "the deprecated `element` field of Path is not supported; use `elem`".into(),
            ));
        }
    }
    let a = prefix.map(|p| p.origin.as_str()).unwrap_or_default();
    let b = path.map(|p| p.origin.as_str()).unwrap_or_default();
    if !a.is_empty() && !b.is_empty() && a != b {
        return Err(PathError::Invalid(format!(
            "the prefix's origin \"{a}\" and the path's origin \"{b}\" disagree"
        )));
    }
    let origin = if a.is_empty() { b } else { a };
    let module = &schema.module().name;
    if !origin.is_empty() && origin != module && origin != RFC7951_ORIGIN {
        return Err(PathError::Invalid(format!(
            "unknown origin \"{origin}\"; this target serves origin \"\" or \"{module}\" (or \"{RFC7951_ORIGIN}\")"
        )));
    }
    Ok(Style {
        origin: origin.to_string(),
        qualified: false,
    })
}

/// Reads one element. Any element may carry the module name (gnmic qualifies the first,
/// RFC 7951 paths every one that changes module); only this module's is known.
fn step(schema: &Schema, elem: &gnmi::PathElem) -> Result<Step, PathError> {
    let name = match elem.name.split_once(':') {
        Some((module, name)) if module == schema.module().name => name,
        Some((module, _)) => {
            return Err(PathError::Invalid(format!(
                "element \"{}\": unknown module \"{module}\"; this target serves \"{}\"",
                elem.name,
                schema.module().name
            )));
        }
        None => elem.name.as_str(),
    };
    match name {
        "" => Err(PathError::Invalid("a path element has no name".into())),
        "*" | "..." if !elem.key.is_empty() => Err(PathError::Invalid(format!(
            "the wildcard {name} takes no keys"
        ))),
        "*" => Ok(Step::Any),
        "..." => Ok(Step::Descendants),
        _ => {
            let mut keys: Vec<(String, Option<String>)> = elem
                .key
                .iter()
                .map(|(k, v)| (k.clone(), (v != "*").then(|| v.clone())))
                .collect();
            keys.sort();
            Ok(Step::Node {
                name: name.to_string(),
                keys,
            })
        }
    }
}

/// A data child (or top-level data node) by name; RPCs and notifications are not data.
fn child(schema: &Schema, parent: Option<SchemaId>, name: &str) -> Option<SchemaId> {
    match parent {
        None => schema
            .roots()
            .iter()
            .copied()
            .find(|id| schema.node(*id).name == name),
        Some(p) => schema.child(p, name),
    }
}

fn children(schema: &Schema, parent: Option<SchemaId>) -> Vec<SchemaId> {
    match parent {
        None => schema.roots().to_vec(),
        Some(p) => schema.node(p).children.clone(),
    }
}

fn descendants(schema: &Schema, parent: Option<SchemaId>) -> Vec<SchemaId> {
    let mut out = Vec::new();
    let mut stack = children(schema, parent);
    while let Some(id) = stack.pop() {
        out.push(id);
        stack.extend(schema.node(id).children.iter().copied());
    }
    out
}

/// The keys a list element leaves out, as `*` (a key given is kept).
fn missing_keys_as_any(
    schema: &Schema,
    nodes: &[Option<SchemaId>],
    keys: &mut Vec<(String, Option<String>)>,
) {
    let Some(list) = nodes
        .iter()
        .flatten()
        .find(|id| schema.node(**id).kind == NodeKind::List)
    else {
        return;
    };
    for name in key_names(schema, *list) {
        if !keys.iter().any(|(k, _)| k == name) {
            keys.push((name.to_string(), None));
        }
    }
    keys.sort();
}

fn unknown(schema: &Schema, parent: &DataPath, name: &str) -> PathError {
    let expected: Vec<String> = children(schema, parent.node())
        .into_iter()
        .map(|id| schema.node(id).name.clone())
        .collect();
    let at = if parent.is_root() {
        "the top".to_string()
    } else {
        parent.display(schema)
    };
    PathError::NotInSchema(format!(
        "the model has no element \"{name}\" under {at}{}",
        nearest_note(name, &expected)
    ))
}

/// `; did you mean "port"? (expected one of: port, ...)`: the names nearest to `name`
/// (by edit distance, a third of the name at most), then all of them.
fn nearest_note(name: &str, names: &[String]) -> String {
    let mut names: Vec<&str> = names.iter().map(String::as_str).collect();
    names.sort_unstable();
    names.dedup();
    let limit = (name.chars().count() / 3).max(2);
    let mut near: Vec<(usize, &str)> = names
        .iter()
        .map(|n| (distance(name, n), *n))
        .filter(|(d, _)| *d <= limit)
        .collect();
    near.sort();
    let mut out = String::new();
    if let Some(&(best, _)) = near.first() {
        let nearest: Vec<String> = near
            .iter()
            .filter(|(d, _)| *d == best)
            .map(|(_, n)| format!("\"{n}\""))
            .collect();
        out.push_str(&format!("; did you mean {}?", nearest.join(" or ")));
    }
    if names.is_empty() {
        out.push_str(" (it has no elements there)");
    } else {
        out.push_str(&format!(" (expected one of: {})", names.join(", ")));
    }
    out
}

/// Levenshtein distance, by characters.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

fn key_names(schema: &Schema, list: SchemaId) -> Vec<&str> {
    schema
        .node(list)
        .keys
        .iter()
        .map(|k| schema.node(*k).name.as_str())
        .collect()
}

/// Keys only on lists, only the list's keys, values of the key's type.
fn check_keys(
    schema: &Schema,
    id: SchemaId,
    keys: &[(String, Option<String>)],
) -> Result<(), PathError> {
    if keys.is_empty() {
        return Ok(());
    }
    let info = schema.node(id);
    if info.kind != NodeKind::List {
        return Err(PathError::Invalid(format!(
            "{} is not a list and takes no keys",
            info.name
        )));
    }
    for (name, value) in keys {
        let key = info
            .keys
            .iter()
            .copied()
            .find(|k| schema.node(*k).name == *name)
            .ok_or_else(|| {
                PathError::Invalid(format!(
                    "{} has no key \"{name}\"; its keys: {}",
                    info.name,
                    key_names(schema, id).join(", ")
                ))
            })?;
        if let Some(text) = value {
            schema.value(key, text).map_err(|e| {
                PathError::Invalid(format!(
                    "{}[{name}={text}]: {e}; expected {}",
                    info.name,
                    schema.node(key).accepts()
                ))
            })?;
        }
    }
    Ok(())
}

/// All key values of one entry, canonical, in key order.
fn exact_keys(
    schema: &Schema,
    list: SchemaId,
    keys: &[(String, Option<String>)],
) -> Result<Vec<Value>, PathError> {
    let info = schema.node(list);
    let mut values = Vec::with_capacity(info.keys.len());
    for key in &info.keys {
        let name = &schema.node(*key).name;
        let text = keys
            .iter()
            .find(|(k, _)| k == name)
            .and_then(|(_, v)| v.as_deref())
            .ok_or_else(|| {
                PathError::Invalid(format!(
                    "{} needs all its keys ({}) to name one entry",
                    info.name,
                    key_names(schema, list).join(", ")
                ))
            })?;
        values.push(
            schema
                .value(*key, text)
                .map_err(|e| PathError::Invalid(format!("{}[{name}={text}]: {e}", info.name)))?,
        );
    }
    Ok(values)
}

/// Whether an entry's keys pass a step's selectors.
fn keys_match(
    schema: &Schema,
    list: SchemaId,
    selectors: &[(String, Option<String>)],
    keys: &[Value],
) -> bool {
    let info = schema.node(list);
    selectors.iter().all(|(name, wanted)| {
        let Some(wanted) = wanted else {
            return true;
        };
        let Some(index) = info.keys.iter().position(|k| schema.node(*k).name == *name) else {
            return false;
        };
        match (schema.value(info.keys[index], wanted), keys.get(index)) {
            (Ok(canonical), Some(have)) => canonical.as_str() == have.as_str(),
            _ => false,
        }
    })
}

struct Expand<'a> {
    schema: &'a Schema,
    tree: &'a DataTree,
    steps: &'a [Step],
    out: &'a mut Vec<DataPath>,
}

impl Expand<'_> {
    /// Matches `steps[i..]` at the node `path` names (which exists).
    fn at(&mut self, path: &DataPath, i: usize) {
        let Some(step) = self.steps.get(i) else {
            self.out.push(path.clone());
            return;
        };
        match step {
            Step::Node { name, keys } => {
                if let Some(id) = child(self.schema, path.node(), name) {
                    self.child(path, id, keys, i);
                }
            }
            Step::Any => {
                for id in self.present_children(path) {
                    self.child(path, id, &[], i);
                }
            }
            Step::Descendants => {
                self.at(path, i + 1);
                for id in self.present_children(path) {
                    let mut below = Vec::new();
                    self.instances(path, id, &[], &mut below);
                    for p in below {
                        self.at(&p, i);
                    }
                }
            }
        }
    }

    fn child(
        &mut self,
        path: &DataPath,
        id: SchemaId,
        keys: &[(String, Option<String>)],
        i: usize,
    ) {
        let mut found = Vec::new();
        self.instances(path, id, keys, &mut found);
        for p in found {
            self.at(&p, i + 1);
        }
    }

    /// The instances of schema node `id` under `path` that pass `keys`: list entries one
    /// by one, a key leaf from the entry's keys, anything else if present.
    fn instances(
        &self,
        path: &DataPath,
        id: SchemaId,
        keys: &[(String, Option<String>)],
        out: &mut Vec<DataPath>,
    ) {
        let info = self.schema.node(id);
        if info.kind == NodeKind::List {
            if let Some(NodeRef::List(list)) =
                self.tree.get(self.schema, &path.child(Segment::new(id)))
            {
                for (k, _) in list.iter() {
                    if keys_match(self.schema, id, keys, k) {
                        out.push(path.child(Segment::with_keys(id, k.to_vec())));
                    }
                }
            }
            return;
        }
        let p = path.child(Segment::new(id));
        if defaults::exists(self.schema, self.tree, &p) {
            out.push(p);
        }
    }

    /// Schema children of the node at `path` that have data or exist by default, key
    /// leaves first.
    fn present_children(&self, path: &DataPath) -> Vec<SchemaId> {
        let mut ids = Vec::new();
        if let Some(last) = path.last() {
            let info = self.schema.node(last.node);
            if info.kind == NodeKind::List && !last.keys.is_empty() {
                ids.extend(info.keys.iter().copied());
            }
        }
        let empty = efb_yang::Inner::default();
        let inner = match self.tree.get(self.schema, path) {
            Some(NodeRef::Inner(inner)) => inner,
            None if defaults::implied(self.schema, self.tree, path) => &empty,
            _ => return ids,
        };
        let mut children: Vec<SchemaId> = inner.children().map(|(id, _)| id).collect();
        children.extend(defaults::missing(self.schema, inner, path.node()));
        children.sort();
        ids.extend(children);
        ids
    }
}

fn relate(schema: &Schema, steps: &[Step], segs: &[Segment], leaf: bool) -> Relation {
    let Some((step, rest)) = steps.split_first() else {
        return Relation::Inside;
    };
    let Some((seg, tail)) = segs.split_first() else {
        return if leaf {
            Relation::Outside
        } else {
            Relation::Above
        };
    };
    match step {
        Step::Descendants => {
            let here = relate(schema, rest, segs, leaf);
            if here == Relation::Inside {
                return here;
            }
            match relate(schema, steps, tail, leaf) {
                Relation::Outside => here,
                deeper => best(here, deeper),
            }
        }
        Step::Any => relate(schema, rest, tail, leaf),
        Step::Node { name, keys } => {
            let info = schema.node(seg.node);
            if info.name != *name {
                return Relation::Outside;
            }
            if info.kind == NodeKind::List && seg.keys.is_empty() {
                // The whole list: it holds whichever entries the keys select.
                return match relate(schema, rest, tail, leaf) {
                    Relation::Outside => Relation::Outside,
                    _ if keys.iter().any(|(_, v)| v.is_some()) => Relation::Above,
                    r => r,
                };
            }
            if info.kind == NodeKind::List && !keys_match(schema, seg.node, keys, &seg.keys) {
                return Relation::Outside;
            }
            relate(schema, rest, tail, leaf)
        }
    }
}

fn best(a: Relation, b: Relation) -> Relation {
    match (a, b) {
        (Relation::Inside, _) | (_, Relation::Inside) => Relation::Inside,
        (Relation::Above, _) | (_, Relation::Above) => Relation::Above,
        _ => Relation::Outside,
    }
}

/// A data path as a gNMI path in the client's style.
pub fn to_gnmi(schema: &Schema, path: &DataPath, style: &Style) -> gnmi::Path {
    let mut elem = Vec::with_capacity(path.segments.len());
    for (i, seg) in path.segments.iter().enumerate() {
        let info = schema.node(seg.node);
        let name = if i == 0 && (style.qualified || style.origin == RFC7951_ORIGIN) {
            format!("{}:{}", info.module, info.name)
        } else {
            info.name.clone()
        };
        let mut key = std::collections::HashMap::new();
        if info.kind == NodeKind::List {
            for (k, v) in info.keys.iter().zip(&seg.keys) {
                key.insert(schema.node(*k).name.clone(), v.as_str().to_string());
            }
        }
        elem.push(gnmi::PathElem { name, key });
    }
    gnmi::Path {
        origin: style.origin.clone(),
        elem,
        ..gnmi::Path::default()
    }
}

#[cfg(test)]
mod tests;
