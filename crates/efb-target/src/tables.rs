//! The target's P4 objects: table entries (with their direct counters), indexed counters,
//! action profile members and groups, registers, the replication engine's multicast
//! groups, and the store keys entries are found by. Entries are kept in the canonical
//! form [`crate::checks`] makes of them, so that reads return exactly what a correct
//! client wrote (read-write symmetry).

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};

use efb_p4info::{FieldInfo, P4InfoIndex};
use p4runtime_proto::p4::v1::{self as p4, field_match::FieldMatchType};

use crate::bytes::{self, fixed, width_bytes};
use crate::registers::Register;
use crate::replication::MulticastGroup;

/// One key field of an entry, ready for matching packets (values of the efb program fit
/// in 128 bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Matcher {
    /// value & mask == key & mask (exact, ternary, LPM and optional all reduce to this).
    Masked {
        pos: usize,
        value: u128,
        mask: u128,
    },
    Range {
        pos: usize,
        low: u128,
        high: u128,
    },
}

impl Matcher {
    pub fn matches(&self, key: &[u128]) -> bool {
        match *self {
            Matcher::Masked { pos, value, mask } => key.get(pos).is_some_and(|k| k & mask == value),
            Matcher::Range { pos, low, high } => {
                key.get(pos).is_some_and(|k| (low..=high).contains(k))
            }
        }
    }
}

/// What an entry does, resolved for the pipeline: the action and its parameters in
/// P4Info order, or a reference into an action profile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ActionValue {
    Direct { action_id: u32, params: Vec<u128> },
    Member(u32),
    Group(u32),
}

#[derive(Debug, Default)]
pub struct CounterCell {
    pub packets: AtomicU64,
    pub bytes: AtomicU64,
}

impl CounterCell {
    pub fn count(&self, bytes: usize) {
        self.packets.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    pub fn data(&self) -> p4::CounterData {
        p4::CounterData {
            packet_count: i64::try_from(self.packets.load(Ordering::Relaxed)).unwrap_or(i64::MAX),
            byte_count: i64::try_from(self.bytes.load(Ordering::Relaxed)).unwrap_or(i64::MAX),
        }
    }

    pub fn set(&self, data: &p4::CounterData) {
        self.packets.store(
            u64::try_from(data.packet_count).unwrap_or(0),
            Ordering::Relaxed,
        );
        self.bytes.store(
            u64::try_from(data.byte_count).unwrap_or(0),
            Ordering::Relaxed,
        );
    }

    fn copy(&self) -> CounterCell {
        let cell = CounterCell::default();
        cell.set(&self.data());
        cell
    }
}

#[derive(Debug)]
pub struct Entry {
    /// Canonical, without direct-resource data.
    pub entry: p4::TableEntry,
    pub matchers: Vec<Matcher>,
    pub action: ActionValue,
    pub seq: u64,
    pub counter: CounterCell,
}

impl Clone for Entry {
    fn clone(&self) -> Entry {
        Entry {
            entry: self.entry.clone(),
            matchers: self.matchers.clone(),
            action: self.action.clone(),
            seq: self.seq,
            counter: self.counter.copy(),
        }
    }
}

/// The default entry of a table when the controller changed it.
#[derive(Clone, Debug)]
pub struct DefaultEntry {
    pub action: p4::Action,
    pub value: ActionValue,
}

#[derive(Debug, Default)]
pub struct Table {
    pub entries: HashMap<Vec<u8>, Entry>,
    /// Priority order (highest first, then oldest) of TCAM tables.
    pub order: BTreeMap<(Reverse<i32>, u64), Vec<u8>>,
    /// `None`: the program's initial default.
    pub default: Option<DefaultEntry>,
    /// TCAM entries grouped by the masks they use (tuple space search), so that a lookup
    /// costs one hash probe per mask combination instead of a scan of every entry.
    tuples: HashMap<Vec<(usize, u128)>, Tuple>,
}

/// Where an entry stands among others: highest priority first, then the oldest.
pub type Rank = (Reverse<i32>, u64);

/// Entries that share their masks: keyed by their masked values.
#[derive(Debug, Default)]
struct Tuple {
    buckets: HashMap<Vec<u128>, BTreeMap<Rank, Vec<u8>>>,
    /// How many entries of each priority, for the best priority the tuple can offer.
    priorities: BTreeMap<i32, usize>,
}

fn signature(matchers: &[Matcher]) -> (Vec<(usize, u128)>, Vec<u128>) {
    let mut masks = Vec::new();
    let mut values = Vec::new();
    for m in matchers {
        if let Matcher::Masked { pos, value, mask } = *m {
            masks.push((pos, mask));
            values.push(value);
        }
    }
    (masks, values)
}

impl Table {
    pub fn insert(&mut self, key: Vec<u8>, entry: Entry, prioritized: bool) {
        if prioritized {
            let order = (Reverse(entry.entry.priority), entry.seq);
            self.order.insert(order, key.clone());
            let (masks, values) = signature(&entry.matchers);
            let tuple = self.tuples.entry(masks).or_default();
            tuple
                .buckets
                .entry(values)
                .or_default()
                .insert(order, key.clone());
            *tuple.priorities.entry(entry.entry.priority).or_default() += 1;
        }
        self.entries.insert(key, entry);
    }

    pub fn remove(&mut self, key: &[u8]) -> Option<Entry> {
        let entry = self.entries.remove(key)?;
        let order = (Reverse(entry.entry.priority), entry.seq);
        if self.order.remove(&order).is_some() {
            self.untuple(&entry, order);
        }
        Some(entry)
    }

    fn untuple(&mut self, entry: &Entry, order: (Reverse<i32>, u64)) {
        let (masks, values) = signature(&entry.matchers);
        let Some(tuple) = self.tuples.get_mut(&masks) else {
            return;
        };
        if let Some(bucket) = tuple.buckets.get_mut(&values) {
            bucket.remove(&order);
            if bucket.is_empty() {
                tuple.buckets.remove(&values);
            }
        }
        if let Some(n) = tuple.priorities.get_mut(&entry.entry.priority) {
            *n -= 1;
            if *n == 0 {
                tuple.priorities.remove(&entry.entry.priority);
            }
        }
        if tuple.buckets.is_empty() {
            self.tuples.remove(&masks);
        }
    }

    /// The highest-priority entry that matches `key` (TCAM tables); among equal
    /// priorities the oldest, so that the choice is deterministic.
    pub fn lookup_ternary(&self, key: &[u128]) -> Option<&Entry> {
        let mut best: Option<(Rank, &Vec<u8>)> = None;
        for (masks, tuple) in &self.tuples {
            let top = tuple
                .priorities
                .keys()
                .next_back()
                .copied()
                .unwrap_or(i32::MIN);
            if best.is_some_and(|((Reverse(p), _), _)| p > top) {
                continue;
            }
            let values: Vec<u128> = masks
                .iter()
                .map(|(pos, mask)| key.get(*pos).map_or(0, |k| k & mask))
                .collect();
            let Some(bucket) = tuple.buckets.get(&values) else {
                continue;
            };
            let hit = bucket.iter().find(|(_, k)| {
                self.entries
                    .get(*k)
                    .is_some_and(|e| e.matchers.iter().all(|m| m.matches(key)))
            });
            if let Some((order, k)) = hit
                && best.is_none_or(|(b, _)| *order < b)
            {
                best = Some((*order, k));
            }
        }
        best.and_then(|(_, k)| self.entries.get(k))
    }

    pub fn lookup_exact(&self, key: &[u8]) -> Option<&Entry> {
        self.entries.get(key)
    }
}

#[derive(Clone, Debug)]
pub struct Group {
    pub group: p4::ActionProfileGroup,
}

/// Every P4 object the controller writes, for one loaded pipeline.
#[derive(Debug, Default)]
pub struct Objects {
    pub tables: HashMap<u32, Table>,
    pub counters: HashMap<u32, Vec<CounterCell>>,
    pub members: HashMap<(u32, u32), (p4::ActionProfileMember, ActionValue)>,
    pub groups: HashMap<(u32, u32), Group>,
    /// By register id.
    pub registers: HashMap<u32, Register>,
    /// The replication engine's multicast groups, by group id.
    pub multicast: BTreeMap<u32, MulticastGroup>,
    next_seq: u64,
}

impl Objects {
    pub fn new(index: &P4InfoIndex) -> Objects {
        let mut objects = Objects::default();
        for table in index.tables() {
            objects.tables.insert(table.id, Table::default());
        }
        for counter in index.counters() {
            let cells = (0..counter.size).map(|_| CounterCell::default()).collect();
            objects.counters.insert(counter.id, cells);
        }
        objects.fit_registers(index);
        objects
    }

    /// Registers as a new P4Info declares them: one it keeps (same id, name, width and
    /// size) keeps its cells, a new or changed one starts at 0, one it drops goes.
    pub fn fit_registers(&mut self, index: &P4InfoIndex) {
        self.registers
            .retain(|id, r| index.register(*id).is_some_and(|info| r.fits(info)));
        for info in index.registers() {
            self.registers
                .entry(info.id)
                .or_insert_with(|| Register::new(info));
        }
    }

    pub fn next_seq(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq
    }
}

/// Exact-match key bytes as the store keeps them, for lookups from packet values:
/// priority 0, then each field present with its fixed-width value.
pub fn exact_key(values: &[(u128, u32)]) -> Vec<u8> {
    let mut key = vec![0u8; 4];
    for (value, bits) in values {
        key.push(KIND_EXACT);
        key.extend_from_slice(&fixed(&bytes::from_u128(*value), width_bytes(*bits)));
    }
    key
}

const KIND_ABSENT: u8 = 0;
const KIND_EXACT: u8 = 1;
const KIND_TERNARY: u8 = 2;
const KIND_LPM: u8 = 3;
const KIND_RANGE: u8 = 4;
const KIND_OPTIONAL: u8 = 5;

/// Appends one match field of an entry to its store key (`None`: the field is left out).
pub(crate) fn append_key(key: &mut Vec<u8>, field: &FieldInfo, m: Option<&p4::FieldMatch>) {
    let w = width_bytes(field.bitwidth);
    match m.and_then(|m| m.field_match_type.as_ref()) {
        Some(FieldMatchType::Exact(e)) => {
            key.push(KIND_EXACT);
            key.extend_from_slice(&fixed(&e.value, w));
        }
        Some(FieldMatchType::Ternary(t)) => {
            key.push(KIND_TERNARY);
            key.extend_from_slice(&fixed(&t.value, w));
            key.extend_from_slice(&fixed(&t.mask, w));
        }
        Some(FieldMatchType::Lpm(l)) => {
            key.push(KIND_LPM);
            key.extend_from_slice(&fixed(&l.value, w));
            key.extend_from_slice(&l.prefix_len.to_be_bytes());
        }
        Some(FieldMatchType::Range(r)) => {
            key.push(KIND_RANGE);
            key.extend_from_slice(&fixed(&r.low, w));
            key.extend_from_slice(&fixed(&r.high, w));
        }
        Some(FieldMatchType::Optional(o)) => {
            key.push(KIND_OPTIONAL);
            key.extend_from_slice(&fixed(&o.value, w));
        }
        Some(FieldMatchType::Other(_)) | None => key.push(KIND_ABSENT),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// The tuple-space lookup finds exactly what a scan in priority order finds.
    #[test]
    fn tuple_lookup_equals_a_priority_scan() {
        let mut seed: u64 = 12345;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let masks = [0xffu128, 0xf0, 0x0f, 0x01];
        let mut table = Table::default();
        for seq in 0..400u64 {
            let mut matchers = Vec::new();
            for pos in 0..3 {
                if next() % 2 == 0 {
                    let mask = masks[(next() % 4) as usize];
                    matchers.push(Matcher::Masked {
                        pos,
                        value: u128::from(next() as u8) & mask,
                        mask,
                    });
                }
            }
            if next() % 3 == 0 {
                let low = u128::from(next() % 200);
                matchers.push(Matcher::Range {
                    pos: 3,
                    low,
                    high: low + u128::from(next() % 60),
                });
            }
            let priority = (next() % 50) as i32 + 1;
            let entry = Entry {
                entry: p4::TableEntry {
                    priority,
                    ..Default::default()
                },
                matchers,
                action: ActionValue::Member(seq as u32),
                seq,
                counter: CounterCell::default(),
            };
            table.insert(seq.to_be_bytes().to_vec(), entry, true);
        }
        for seq in (0..400u64).step_by(7) {
            table.remove(&seq.to_be_bytes());
        }
        for _ in 0..3000 {
            let key: Vec<u128> = (0..4).map(|_| u128::from(next() as u8)).collect();
            let scan = table
                .order
                .values()
                .filter_map(|k| table.entries.get(k))
                .find(|e| e.matchers.iter().all(|m| m.matches(&key)))
                .map(|e| e.seq);
            assert_eq!(
                table.lookup_ternary(&key).map(|e| e.seq),
                scan,
                "key {key:?}"
            );
        }
    }
}
