//! Per-flow figures the driver answers from what it programmed: the counters read from
//! the chip and summed over each flow's entries, and the entries each flow compiled to.

use std::collections::BTreeMap;

use p4runtime_proto::p4::v1::TableEntry;

use super::Driver;
use crate::compile::{Compiled, Desired, Group};
use crate::entry::{EntryKey, normalized};

impl Driver {
    /// Flow counters: packets and bytes per flow name, summed over its entries; of the
    /// named flows only (their entries read one by one), or of every flow (`None`: one
    /// read of the flow tables).
    pub fn flow_counters(&self, only: Option<&[String]>) -> Option<BTreeMap<String, (u64, u64)>> {
        self.runtime.block_on(async {
            let mut guard = self.inner.lock().await;
            let inner = &mut *guard;
            let flow_of = flows_by_entry(&inner.programmed, only);
            let conn = inner.conn.as_mut()?;
            let entries = match only {
                Some(_) => {
                    // An entry that matches everything has no key to read it by (a read
                    // without one is a wildcard read): its table is read whole, and only
                    // the wanted entries are counted.
                    let (keyed, keyless): (Vec<_>, Vec<_>) = flow_of
                        .values()
                        .map(|(_, e)| (*e).clone())
                        .partition(|e| !e.r#match.is_empty());
                    let mut read = Vec::new();
                    if !keyed.is_empty() {
                        read = conn.read_counters_of(&keyed).await.ok()?;
                    }
                    let mut tables: Vec<u32> = keyless.iter().map(|e| e.table_id).collect();
                    tables.sort_unstable();
                    tables.dedup();
                    if !tables.is_empty() {
                        read.extend(conn.read_counters(&tables).await.ok()?);
                    }
                    read
                }
                None => conn.read_counters(&inner.tables.flows).await.ok()?,
            };
            Some(sum_by_flow(&flow_of, entries))
        })
    }

    /// Entries per flow, as compiled (what `entries` in the flow's state says); of the
    /// named flows only, or of every flow (`None`).
    pub fn flow_entries(&self, only: Option<&[String]>) -> BTreeMap<String, usize> {
        self.runtime.block_on(async {
            let inner = self.inner.lock().await;
            let programmed = &inner.programmed;
            match only {
                Some(names) => names
                    .iter()
                    .map(|name| {
                        let entries = programmed.group(&Group::Flow(name.clone())).len();
                        (name.clone(), entries)
                    })
                    .collect(),
                None => programmed
                    .groups()
                    .filter_map(|(group, entries)| match group {
                        Group::Flow(name) => Some((name.clone(), entries.len())),
                        _ => None,
                    })
                    .collect(),
            }
        })
    }
}

/// The programmed entries of the named flows (of every flow: `None`), each with the flow
/// whose group holds it.
fn flows_by_entry<'a>(
    programmed: &'a Compiled,
    only: Option<&'a [String]>,
) -> BTreeMap<EntryKey, (&'a str, &'a TableEntry)> {
    let flows: Vec<(&str, &[Desired])> = match only {
        Some(names) => names
            .iter()
            .map(|name| (name.as_str(), programmed.group(&Group::Flow(name.clone()))))
            .collect(),
        None => programmed
            .groups()
            .filter_map(|(group, entries)| match group {
                Group::Flow(name) => Some((name.as_str(), entries.as_slice())),
                _ => None,
            })
            .collect(),
    };
    flows
        .into_iter()
        .flat_map(|(name, entries)| entries.iter().map(move |d| (name, &d.entry)))
        .map(|(name, entry)| (EntryKey::of(entry), (name, entry)))
        .collect()
}

/// Packets and bytes per flow of the entries read, summed over each flow's entries.
fn sum_by_flow(
    flow_of: &BTreeMap<EntryKey, (&str, &TableEntry)>,
    read: Vec<TableEntry>,
) -> BTreeMap<String, (u64, u64)> {
    let mut out: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for entry in read {
        let Some(data) = entry.counter_data else {
            continue;
        };
        if let Some((name, _)) = flow_of.get(&EntryKey::of(&normalized(&entry))) {
            let counts = out.entry(name.to_string()).or_default();
            counts.0 += u64::try_from(data.packet_count).unwrap_or(0);
            counts.1 += u64::try_from(data.byte_count).unwrap_or(0);
        }
    }
    out
}
