//! A change told in brief, from one walk of the two trees: how many lines `show | compare`
//! would list, a summary by list, and the first lines. A commit of 100 000 new flows is
//! 700 000 path-level changes, about 150 MiB as a list; its reply needs a count, a few
//! lines of summary and the first thousand lines.

use std::collections::{BTreeMap, BTreeSet};

use crate::diff::{self, Change, Counted, Out};
use crate::path::DataPath;
use crate::schema::{NodeKind, Schema};
use crate::setlines::{render_changes, words};
use crate::tree::DataTree;
use crate::{Value, text};

/// What a commit's reply says of its changes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Digest {
    /// The lines `show | compare` lists ([`render_changes`] of the whole change): the one
    /// count the shell, the audit, `show log` and the metrics say.
    pub count: usize,
    /// By list and by leaf outside lists: `ecofilter-balancer flow: 2 033 entries (1
    /// added, 2 032 changed)`.
    pub summary: Vec<String>,
    /// The first lines, as [`render_changes`] writes them.
    pub lines: Vec<String>,
}

/// The digest of the change from `old` to `new`, with its first `max_lines` lines.
pub fn digest(schema: &Schema, old: &DataTree, new: &DataTree, max_lines: usize) -> Digest {
    let mut out = diff::walk_into(
        schema,
        old,
        new,
        Digesting {
            schema,
            max_lines,
            count: Counted::default(),
            summary: Summary::default(),
            deletes: Vec::new(),
            sets: Vec::new(),
            sets_counted: Counted::default(),
        },
    );
    let mut first = std::mem::take(&mut out.deletes);
    first.append(&mut out.sets);
    let mut lines = render_changes(schema, &first);
    lines.truncate(max_lines);
    Digest {
        count: out.count.total(),
        summary: out.summary.lines(),
        lines,
    }
}

/// The summary of listed changes.
pub fn summarise(schema: &Schema, changes: &[Change]) -> Vec<String> {
    let mut summary = Summary::default();
    for change in changes {
        summary.add(schema, change.path(), Kind::of(change));
    }
    summary.lines()
}

/// Collects while it walks: every change counted and summarised, the first ones kept.
/// Deletes come first in the list: up to `max_lines` of them (a line each) are kept, and
/// creates and sets until their lines are settled past `max_lines` (an entry created
/// with content has no line of its own, which the change after it decides).
struct Digesting<'a> {
    schema: &'a Schema,
    max_lines: usize,
    count: Counted,
    summary: Summary,
    deletes: Vec<Change>,
    sets: Vec<Change>,
    sets_counted: Counted,
}

impl Digesting<'_> {
    fn sets_wanted(&self) -> bool {
        self.sets_counted.settled() < self.max_lines
    }
}

impl Out for Digesting<'_> {
    fn delete(&mut self, path: &DataPath) {
        self.count.delete(path);
        self.summary.add(self.schema, path, Kind::Delete);
        if self.deletes.len() < self.max_lines {
            self.deletes.push(Change::Delete { path: path.clone() });
        }
    }

    fn create(&mut self, path: &DataPath) {
        self.count.create(path);
        self.summary.add(self.schema, path, Kind::Create);
        if self.sets_wanted() {
            self.sets_counted.create(path);
            self.sets.push(Change::Create { path: path.clone() });
        }
    }

    fn set(&mut self, path: &DataPath, old: Option<&Value>, new: &Value) {
        self.count.set(path, old, new);
        self.summary.add(self.schema, path, Kind::Set);
        if self.sets_wanted() {
            self.sets_counted.set(path, old, new);
            let (path, old, new) = (path.clone(), old.cloned(), new.clone());
            self.sets.push(Change::Set { path, old, new });
        }
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Create,
    Set,
    Delete,
}

impl Kind {
    fn of(change: &Change) -> Kind {
        match change {
            Change::Create { .. } => Kind::Create,
            Change::Set { .. } => Kind::Set,
            Change::Delete { .. } => Kind::Delete,
        }
    }
}

/// Changes grouped by the list they touch (entries added, changed, deleted), or by the
/// leaf outside lists.
#[derive(Default)]
struct Summary {
    groups: BTreeMap<String, Entries>,
}

#[derive(Default)]
struct Entries {
    added: BTreeSet<Vec<Value>>,
    deleted: BTreeSet<Vec<Value>>,
    changed: BTreeSet<Vec<Value>>,
}

impl Summary {
    fn add(&mut self, schema: &Schema, path: &DataPath, kind: Kind) {
        let list_at = path
            .segments
            .iter()
            .position(|s| schema.node(s.node).kind == NodeKind::List && !s.keys.is_empty());
        let Some(at) = list_at else {
            self.groups.entry(words(schema, path)).or_default();
            return;
        };
        let mut name = DataPath {
            segments: path.segments[..=at].to_vec(),
        };
        let keys = std::mem::take(&mut name.segments[at].keys);
        let group = self.groups.entry(words(schema, &name)).or_default();
        let whole_entry = path.segments.len() == at + 1;
        match kind {
            Kind::Create if whole_entry => group.added.insert(keys),
            Kind::Delete if whole_entry => group.deleted.insert(keys),
            _ => group.changed.insert(keys),
        };
    }

    fn lines(self) -> Vec<String> {
        self.groups
            .into_iter()
            .map(|(name, e)| {
                let changed: BTreeSet<_> = e
                    .changed
                    .difference(&e.added)
                    .filter(|k| !e.deleted.contains(*k))
                    .collect();
                let counts = [
                    (e.added.len(), "added"),
                    (changed.len(), "changed"),
                    (e.deleted.len(), "deleted"),
                ];
                let total: usize = counts.iter().map(|(n, _)| n).sum();
                if total == 0 {
                    return format!("{name}: changed");
                }
                let parts: Vec<String> = counts
                    .iter()
                    .filter(|(n, _)| *n > 0)
                    .map(|(n, what)| format!("{} {what}", text::grouped(*n)))
                    .collect();
                format!(
                    "{name}: {} entr{} ({})",
                    text::grouped(total),
                    if total == 1 { "y" } else { "ies" },
                    parts.join(", ")
                )
            })
            .collect()
    }
}
