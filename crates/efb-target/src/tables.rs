//! The target's P4 objects: table entries (with their direct counters), indexed counters,
//! action profile members and groups; and the validation of keys and actions against the
//! P4Info, shared by writes and reads. Entries are kept in canonical form, so that reads
//! return exactly what a correct client wrote (read-write symmetry).

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};

use efb_p4info::{ActionScope, FieldInfo, MatchKind, P4InfoIndex, TableInfo};
use p4runtime_proto::p4::v1::{self as p4, field_match::FieldMatchType, table_action};

use crate::bytes::{self, cmp_be, fixed, to_u128, width_bytes};
use crate::error::TargetError;
use crate::profile::{Profile, STRATUM_TOFINO_MAX_PRIORITY};

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
        objects
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

/// A validated key: canonical field matches (by field id), matchers, and the store key.
pub struct Key {
    pub matches: Vec<p4::FieldMatch>,
    pub matchers: Vec<Matcher>,
    pub bytes: Vec<u8>,
}

/// Validates an entry's key (match fields and priority) as P4Runtime prescribes.
pub fn check_key(
    table: &TableInfo,
    matches: &[p4::FieldMatch],
    priority: i32,
    profile: Profile,
) -> Result<Key, TargetError> {
    check_priority(table, priority, profile)?;
    let mut by_pos: Vec<Option<(p4::FieldMatch, Matcher)>> = vec![None; table.fields.len()];
    for m in matches {
        let pos = table
            .fields
            .iter()
            .position(|f| f.id == m.field_id)
            .ok_or_else(|| {
                TargetError::invalid(format!(
                    "table {} has no match field id {}",
                    table.name, m.field_id
                ))
            })?;
        if by_pos[pos].is_some() {
            return Err(TargetError::invalid(format!(
                "match field {} given twice",
                table.fields[pos].name
            )));
        }
        let field = &table.fields[pos];
        let checked = check_field(field, pos, m, profile)
            .map_err(|e| e.context(format!("match field {}", field.name)))?;
        by_pos[pos] = Some(checked);
    }
    let mut key = Key {
        matches: Vec::new(),
        matchers: Vec::new(),
        bytes: priority.to_be_bytes().to_vec(),
    };
    for (pos, field) in table.fields.iter().enumerate() {
        match by_pos[pos].take() {
            Some((m, matcher)) => {
                append_key(&mut key.bytes, field, &m);
                key.matches.push(m);
                key.matchers.push(matcher);
            }
            None if field.kind == MatchKind::Exact => {
                return Err(TargetError::invalid(format!(
                    "exact match field {} is missing",
                    field.name
                )));
            }
            None => key.bytes.push(KIND_ABSENT),
        }
    }
    Ok(key)
}

fn check_priority(table: &TableInfo, priority: i32, profile: Profile) -> Result<(), TargetError> {
    if table.needs_priority() {
        if priority <= 0 {
            return Err(TargetError::invalid(format!(
                "table {} has ternary, range or optional fields: a priority above 0 is required (got {priority})",
                table.name
            )));
        }
        if profile.is_stratum() && priority > STRATUM_TOFINO_MAX_PRIORITY {
            return Err(TargetError::invalid(format!(
                "priority {priority} is 2^24 or more: Tofino's TCAM priorities are 24 bits"
            )));
        }
    } else if priority != 0 {
        return Err(TargetError::invalid(format!(
            "table {} has only exact fields: priority must be 0 (got {priority})",
            table.name
        )));
    }
    Ok(())
}

fn check_field(
    field: &FieldInfo,
    pos: usize,
    m: &p4::FieldMatch,
    profile: Profile,
) -> Result<(p4::FieldMatch, Matcher), TargetError> {
    let canonical = profile.canonical_bytes_required();
    let bits = field.bitwidth;
    let full = full_mask(bits);
    let kind_error = |given: &str| {
        TargetError::invalid(format!(
            "a {given} match on a {} field",
            field.kind.as_str()
        ))
    };
    let (fmt, matcher) = match (&m.field_match_type, field.kind) {
        (Some(FieldMatchType::Exact(e)), MatchKind::Exact) => {
            let v = bytes::check(&e.value, bits, canonical)?;
            let matcher = Matcher::Masked {
                pos,
                value: to_u128(&v),
                mask: full,
            };
            (
                FieldMatchType::Exact(p4::field_match::Exact { value: v }),
                matcher,
            )
        }
        (Some(FieldMatchType::Ternary(t)), MatchKind::Ternary) => {
            check_ternary(t, bits, pos, canonical)?
        }
        (Some(FieldMatchType::Lpm(l)), MatchKind::Lpm) => check_lpm(l, bits, pos, canonical)?,
        (Some(FieldMatchType::Range(r)), MatchKind::Range) => check_range(r, bits, pos, canonical)?,
        (Some(FieldMatchType::Optional(o)), MatchKind::Optional) => {
            if profile.is_stratum() {
                return Err(TargetError::invalid(
                    "the optional match kind is not supported on Tofino",
                ));
            }
            let v = bytes::check(&o.value, bits, canonical)?;
            let matcher = Matcher::Masked {
                pos,
                value: to_u128(&v),
                mask: full,
            };
            (
                FieldMatchType::Optional(p4::field_match::Optional { value: v }),
                matcher,
            )
        }
        (Some(FieldMatchType::Exact(_)), _) => return Err(kind_error("exact")),
        (Some(FieldMatchType::Ternary(_)), _) => return Err(kind_error("ternary")),
        (Some(FieldMatchType::Lpm(_)), _) => return Err(kind_error("lpm")),
        (Some(FieldMatchType::Range(_)), _) => return Err(kind_error("range")),
        (Some(FieldMatchType::Optional(_)), _) => return Err(kind_error("optional")),
        (Some(FieldMatchType::Other(_)), _) => {
            return Err(TargetError::unimplemented(
                "architecture-specific match kinds",
            ));
        }
        (None, _) => return Err(TargetError::invalid("no match value")),
    };
    Ok((
        p4::FieldMatch {
            field_id: m.field_id,
            field_match_type: Some(fmt),
        },
        matcher,
    ))
}

fn full_mask(bits: u32) -> u128 {
    if bits >= 128 {
        u128::MAX
    } else {
        (1u128 << bits) - 1
    }
}

fn check_ternary(
    t: &p4::field_match::Ternary,
    bits: u32,
    pos: usize,
    canonical: bool,
) -> Result<(FieldMatchType, Matcher), TargetError> {
    let value = bytes::check(&t.value, bits, canonical).map_err(|e| e.context("value"))?;
    let mask = bytes::check(&t.mask, bits, canonical).map_err(|e| e.context("mask"))?;
    let (v, m) = (to_u128(&value), to_u128(&mask));
    if m == 0 {
        return Err(TargetError::invalid(
            "mask is 0: a don't-care field must be left out",
        ));
    }
    if v & !m != 0 {
        return Err(TargetError::invalid(format!(
            "value 0x{} has bits outside mask 0x{}",
            bytes::hex(&value),
            bytes::hex(&mask)
        )));
    }
    let fmt = FieldMatchType::Ternary(p4::field_match::Ternary { value, mask });
    Ok((
        fmt,
        Matcher::Masked {
            pos,
            value: v,
            mask: m,
        },
    ))
}

fn check_lpm(
    l: &p4::field_match::Lpm,
    bits: u32,
    pos: usize,
    canonical: bool,
) -> Result<(FieldMatchType, Matcher), TargetError> {
    let value = bytes::check(&l.value, bits, canonical)?;
    let len = u32::try_from(l.prefix_len).unwrap_or(u32::MAX);
    if len == 0 {
        return Err(TargetError::invalid(
            "prefix length 0: a don't-care field must be left out",
        ));
    }
    if len > bits {
        return Err(TargetError::invalid(format!(
            "prefix length {len} exceeds the field's {bits} bits"
        )));
    }
    let mask = full_mask(bits) & !full_mask(bits - len);
    let v = to_u128(&value);
    if v & !mask != 0 {
        return Err(TargetError::invalid(format!(
            "value 0x{} has bits set past prefix length {len}",
            bytes::hex(&value)
        )));
    }
    let fmt = FieldMatchType::Lpm(p4::field_match::Lpm {
        value,
        prefix_len: l.prefix_len,
    });
    Ok((
        fmt,
        Matcher::Masked {
            pos,
            value: v,
            mask,
        },
    ))
}

fn check_range(
    r: &p4::field_match::Range,
    bits: u32,
    pos: usize,
    canonical: bool,
) -> Result<(FieldMatchType, Matcher), TargetError> {
    let low = bytes::check(&r.low, bits, canonical).map_err(|e| e.context("low"))?;
    let high = bytes::check(&r.high, bits, canonical).map_err(|e| e.context("high"))?;
    if cmp_be(&low, &high).is_gt() {
        return Err(TargetError::invalid(format!(
            "low 0x{} is above high 0x{}",
            bytes::hex(&low),
            bytes::hex(&high)
        )));
    }
    let (l, h) = (to_u128(&low), to_u128(&high));
    if l == 0 && h == full_mask(bits) {
        return Err(TargetError::invalid(
            "the range covers every value: a don't-care field must be left out",
        ));
    }
    let fmt = FieldMatchType::Range(p4::field_match::Range { low, high });
    Ok((
        fmt,
        Matcher::Range {
            pos,
            low: l,
            high: h,
        },
    ))
}

fn append_key(key: &mut Vec<u8>, field: &FieldInfo, m: &p4::FieldMatch) {
    let w = width_bytes(field.bitwidth);
    match &m.field_match_type {
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

/// Where an action is used: in an entry, or as the table's default.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum ActionUse {
    Entry,
    Default,
}

/// Validates a direct action for a table: known action of the table, allowed in this
/// use, every parameter exactly once and within its width. Returns its canonical form.
pub fn check_action(
    index: &P4InfoIndex,
    table: &TableInfo,
    action: &p4::Action,
    usage: ActionUse,
    profile: Profile,
) -> Result<(p4::Action, ActionValue), TargetError> {
    let scope = table.action_scope(action.action_id).ok_or_else(|| {
        TargetError::invalid(format!(
            "action id {} is not an action of table {}",
            action.action_id, table.name
        ))
    })?;
    let info = index
        .action(action.action_id)
        .ok_or_else(|| TargetError::invalid(format!("unknown action id {}", action.action_id)))?;
    match (usage, scope) {
        (ActionUse::Entry, ActionScope::DefaultOnly) => {
            return Err(TargetError::permission(format!(
                "action {} may only be the default action of {}",
                info.name, table.name
            )));
        }
        (ActionUse::Default, ActionScope::TableOnly) => {
            return Err(TargetError::permission(format!(
                "action {} may not be the default action of {}",
                info.name, table.name
            )));
        }
        _ => {}
    }
    check_params(info, action, profile)
}

/// Validates an action's parameters against its P4Info description.
pub fn check_params(
    info: &efb_p4info::ActionInfo,
    action: &p4::Action,
    profile: Profile,
) -> Result<(p4::Action, ActionValue), TargetError> {
    let mut values: Vec<Option<Vec<u8>>> = vec![None; info.params.len()];
    for p in &action.params {
        let pos = info
            .params
            .iter()
            .position(|q| q.id == p.param_id)
            .ok_or_else(|| {
                TargetError::invalid(format!(
                    "action {} has no parameter id {}",
                    info.name, p.param_id
                ))
            })?;
        if values[pos].is_some() {
            return Err(TargetError::invalid(format!(
                "parameter {} given twice",
                info.params[pos].name
            )));
        }
        let param = &info.params[pos];
        let v = bytes::check(&p.value, param.bitwidth, profile.canonical_bytes_required())
            .map_err(|e| e.context(format!("parameter {} of {}", param.name, info.name)))?;
        values[pos] = Some(v);
    }
    let mut canonical = p4::Action {
        action_id: action.action_id,
        params: Vec::new(),
    };
    let mut numbers = Vec::new();
    for (param, value) in info.params.iter().zip(values) {
        let value = value.ok_or_else(|| {
            TargetError::invalid(format!(
                "parameter {} of {} is missing",
                param.name, info.name
            ))
        })?;
        numbers.push(to_u128(&value));
        canonical.params.push(p4::action::Param {
            param_id: param.id,
            value,
        });
    }
    Ok((
        canonical,
        ActionValue::Direct {
            action_id: action.action_id,
            params: numbers,
        },
    ))
}

/// Validates the action part of an entry: the kind must fit the table (direct or
/// through an action profile), and profile references must exist.
pub fn check_table_action(
    index: &P4InfoIndex,
    objects: &Objects,
    table: &TableInfo,
    action: &p4::TableAction,
    profile: Profile,
) -> Result<(p4::TableAction, ActionValue), TargetError> {
    let kind = action
        .r#type
        .as_ref()
        .ok_or_else(|| TargetError::invalid("the action is empty"))?;
    match (kind, table.implementation_id) {
        (table_action::Type::Action(a), None) => {
            let (canonical, value) = check_action(index, table, a, ActionUse::Entry, profile)?;
            Ok((
                p4::TableAction {
                    r#type: Some(table_action::Type::Action(canonical)),
                },
                value,
            ))
        }
        (table_action::Type::ActionProfileMemberId(id), Some(profile_id)) => {
            if !objects.members.contains_key(&(profile_id, *id)) {
                return Err(TargetError::not_found(format!(
                    "action profile member {id} does not exist"
                )));
            }
            Ok((action.clone(), ActionValue::Member(*id)))
        }
        (table_action::Type::ActionProfileGroupId(id), Some(profile_id)) => {
            let selector = index
                .action_profile(profile_id)
                .is_some_and(|p| p.with_selector);
            if !selector {
                return Err(TargetError::invalid(format!(
                    "table {} has no selector: groups are not allowed",
                    table.name
                )));
            }
            if !objects.groups.contains_key(&(profile_id, *id)) {
                return Err(TargetError::not_found(format!(
                    "action profile group {id} does not exist"
                )));
            }
            Ok((action.clone(), ActionValue::Group(*id)))
        }
        (table_action::Type::ActionProfileActionSet(_), Some(_)) => Err(
            TargetError::unimplemented("one-shot action selector programming"),
        ),
        (_, None) => Err(TargetError::invalid(format!(
            "table {} is direct: it takes an action, not a profile reference",
            table.name
        ))),
        (_, Some(_)) => Err(TargetError::invalid(format!(
            "table {} is indirect: it takes a member or group id",
            table.name
        ))),
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
