//! From what the chip holds to what it should hold: the fewest writes (a MODIFY where the
//! key stays), in phases so that no packet sees a state that forwards it across links or
//! to a removed pair (each table's level is in the P4Info contract,
//! [`efb_p4info::contract::WriteLevel`]):
//!
//! 1. what others point at first: the balancing method, links' ports, pairs;
//! 2. then buckets (pointing at pairs);
//! 3. then units (pointing at their region of the buckets: a unit whose region moves reads
//!    the new one only once it is written);
//! 4. then ingress ports (a new link or pair starts receiving only once it is complete);
//! 5. then flows;
//! 6. and the removals in the reverse order: flows, ingress ports, units, buckets (a moved
//!    unit's old region once nothing reads it), and last what was pointed at.
//!
//! Each phase is written in its own batches, one after the other.

use std::collections::BTreeMap;

use efb_chip::{TableWrites, UpdateKind};
use efb_p4info::P4InfoIndex;
use efb_p4info::contract::{self, WriteLevel};
use efb_p4info::names::{TableName, flows};
use p4runtime_proto::p4::v1 as p4;

use crate::compile::{Compiled, Desired};
use crate::entry::EntryKey;

/// One write. (A modify carries the old entry too, so that it can be undone.)
#[derive(Clone, Debug, PartialEq)]
#[allow(clippy::large_enum_variant)]
pub enum Op {
    Insert(Desired),
    Modify { old: Desired, new: Desired },
    Delete(Desired),
}

impl Op {
    /// The entry the write sends.
    pub fn entry(&self) -> &Desired {
        match self {
            Op::Insert(d) | Op::Delete(d) => d,
            Op::Modify { new, .. } => new,
        }
    }

    /// The write that undoes this one.
    pub fn inverse(&self) -> Op {
        match self {
            Op::Insert(d) => Op::Delete(d.clone()),
            Op::Delete(d) => Op::Insert(d.clone()),
            Op::Modify { old, new } => Op::Modify {
                old: new.clone(),
                new: old.clone(),
            },
        }
    }

    pub fn kind(&self) -> UpdateKind {
        match self {
            Op::Insert(_) => UpdateKind::Insert,
            Op::Modify { .. } => UpdateKind::Modify,
            Op::Delete(_) => UpdateKind::Delete,
        }
    }
}

/// A phase per write level, then one per level for the deletions, in reverse.
const PHASES: usize = 2 * WriteLevel::COUNT;

/// Table ids from the P4Info, with the write level the contract gives each.
#[derive(Clone, Debug)]
pub struct Tables {
    levels: BTreeMap<u32, WriteLevel>,
    /// The flow tables, in the order of [`flows::ALL`].
    pub flows: [u32; 3],
    names: BTreeMap<u32, String>,
}

impl Tables {
    pub fn new(index: &P4InfoIndex) -> Result<Tables, efb_p4info::P4InfoError> {
        let id = |name: TableName| index.table_by_name(name).map(|t| t.id);
        let mut levels = BTreeMap::new();
        for spec in contract::TABLES {
            levels.insert(id(spec.name)?, spec.write_level);
        }
        Ok(Tables {
            levels,
            flows: [
                id(flows::IPV4.table)?,
                id(flows::IPV6.table)?,
                id(flows::OTHER.table)?,
            ],
            names: index.tables().map(|t| (t.id, t.alias.clone())).collect(),
        })
    }

    /// Every table the controller writes.
    pub fn all(&self) -> Vec<u32> {
        self.levels.keys().copied().collect()
    }

    pub fn name(&self, id: u32) -> &str {
        self.names.get(&id).map(String::as_str).unwrap_or("?")
    }

    /// The phase (0 .. PHASES - 1) of a write.
    fn phase(&self, op: &Op) -> usize {
        let table = op.entry().entry.table_id;
        let level = self
            .levels
            .get(&table)
            .copied()
            .unwrap_or(WriteLevel::Pointed) as usize;
        match op {
            Op::Delete(_) => PHASES - 1 - level,
            _ => level,
        }
    }
}

/// Writes in phases.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    pub phases: Vec<Vec<Op>>,
}

impl Plan {
    fn from_ops(tables: &Tables, ops: Vec<Op>) -> Plan {
        let mut phases: Vec<Vec<Op>> = vec![Vec::new(); PHASES];
        for op in ops {
            phases[tables.phase(&op)].push(op);
        }
        phases.retain(|p| !p.is_empty());
        Plan { phases }
    }

    /// The writes from `old` to `new`, looking only at the groups `new` recompiled.
    pub fn between(tables: &Tables, old: &Compiled, new: &Compiled) -> Plan {
        let mut removed: BTreeMap<EntryKey, &Desired> = BTreeMap::new();
        let mut added: BTreeMap<EntryKey, &Desired> = BTreeMap::new();
        let mut modified = Vec::new();
        for (before, after) in old.changed_groups(new) {
            if same_keys(before, after) {
                modified.extend(modifications(before, after));
                continue;
            }
            removed.extend(before.iter().map(|d| (EntryKey::of(&d.entry), d)));
            added.extend(after.iter().map(|d| (EntryKey::of(&d.entry), d)));
        }
        let mut all = ops(removed, added);
        all.extend(modified);
        Plan::from_ops(tables, all)
    }

    /// The writes that make a target holding `actual` hold `desired`.
    pub fn reconcile(
        tables: &Tables,
        actual: &BTreeMap<EntryKey, p4::TableEntry>,
        desired: &Compiled,
    ) -> Plan {
        let removed: BTreeMap<EntryKey, Desired> = actual
            .iter()
            .map(|(k, e)| {
                (
                    k.clone(),
                    Desired {
                        entry: e.clone(),
                        source: "(on the chip, not in the configuration)".to_string(),
                    },
                )
            })
            .collect();
        let added = desired.by_key();
        Plan::from_ops(
            tables,
            ops(removed.iter().map(|(k, d)| (k.clone(), d)).collect(), added),
        )
    }

    pub fn len(&self) -> usize {
        self.phases.iter().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn ops(&self) -> impl Iterator<Item = &Op> {
        self.phases.iter().flatten()
    }

    /// Writes per table and kind (`flows: 1 modification`, `buckets: 512 inserts`), by
    /// table name, then update name.
    pub fn summary(&self, tables: &Tables) -> Vec<TableWrites> {
        // Keyed by the update's name, so that a table's deletions come before its inserts
        // as the report has always listed them.
        let mut counts: BTreeMap<(&str, &str), (UpdateKind, usize)> = BTreeMap::new();
        for op in self.ops() {
            let table = tables.name(op.entry().entry.table_id);
            counts
                .entry((table, op.kind().as_str()))
                .or_insert((op.kind(), 0))
                .1 += 1;
        }
        counts
            .into_iter()
            .map(|((table, _), (update, count))| TableWrites {
                table: table.to_string(),
                update,
                count,
            })
            .collect()
    }
}

/// Whether two compilations of a group hold the same keys in the same order, as a bucket
/// table does when liveness moves buckets: then the entries are compared place by place,
/// without building a key for each (which cost a 8 192-bucket rebalance 10 - 17 ms).
fn same_keys(before: &[Desired], after: &[Desired]) -> bool {
    let same_key = |a: &p4::TableEntry, b: &p4::TableEntry| {
        a.table_id == b.table_id
            && a.is_default_action == b.is_default_action
            && a.priority == b.priority
            && a.r#match == b.r#match
    };
    before.len() == after.len()
        && before
            .iter()
            .zip(after)
            .all(|(a, b)| same_key(&a.entry, &b.entry))
}

/// The entries of two same-keyed compilations that differ, as modifications.
fn modifications<'a>(before: &'a [Desired], after: &'a [Desired]) -> impl Iterator<Item = Op> + 'a {
    before
        .iter()
        .zip(after)
        .filter(|(a, b)| a.entry != b.entry)
        .map(|(a, b)| Op::Modify {
            old: a.clone(),
            new: b.clone(),
        })
}

/// Inserts, modifies and deletes from the entries that left and came. A default entry is
/// never inserted or deleted: the program always has one, so it is modified.
fn ops(removed: BTreeMap<EntryKey, &Desired>, added: BTreeMap<EntryKey, &Desired>) -> Vec<Op> {
    let mut out = Vec::new();
    for (key, old) in &removed {
        match added.get(key) {
            Some(new) if new.entry != old.entry => out.push(Op::Modify {
                old: (*old).clone(),
                new: (*new).clone(),
            }),
            Some(_) => {}
            None if key.default => {}
            None => out.push(Op::Delete((*old).clone())),
        }
    }
    for (key, new) in &added {
        if removed.contains_key(key) {
            continue;
        }
        if key.default {
            out.push(Op::Modify {
                old: (*new).clone(),
                new: (*new).clone(),
            });
        } else {
            out.push(Op::Insert((*new).clone()));
        }
    }
    out
}
