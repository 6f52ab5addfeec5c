//! The `l2_classes` pre-classification table: the flows' Ethernet-layer criteria (VLAN
//! tags and depth, MPLS depth, MACs, EtherType) move out of the flow tables into one small
//! ternary table that gives each frame one 16-bit class code, and each flow matches a
//! ternary on that code instead of those wide fields.
//!
//! A frame gets ONE code, yet may meet the Ethernet-layer criteria of several flows (a
//! VLAN-id flow and a MAC flow), so the code must tell every one of them. Parts (the
//! distinct Ethernet-layer criteria) that can never hold for the same frame are grouped
//! and share a bit field (value k: the group's k-th part, 0: none of the group); the table
//! holds, for every set of parts whose cubes intersect, that intersection with the OR of
//! their values, the larger sets at higher priority. A frame's winning entry is then the
//! one of exactly the parts it meets.

use std::collections::BTreeMap;

use efb_model::FlowMatch;
use efb_p4info::names::fields as f;

use crate::compile::ethernet_criteria;

/// The fields of the `l2_classes` key and their widths in bits, in the order of
/// [`Cube`]'s terms and [`Frame`]'s values.
pub const L2_FIELDS: [(&str, u32); 8] = [
    (f::VLAN_DEPTH, 2),
    (f::VLAN0_VID, 12),
    (f::VLAN1_VID, 12),
    (f::VLAN2_VID, 12),
    (f::MPLS_DEPTH, 3),
    (f::SRC_MAC, 48),
    (f::DST_MAC, 48),
    (f::ETHER_TYPE, 16),
];

/// Where [`L2_FIELDS`] lists `vlan_depth`, the one field given as a range.
const VLAN_DEPTH: usize = 0;

/// The width of the `l2_class` field the flow tables match.
pub const CLASS_BITS: u32 = 16;

/// A frame's values of the [`L2_FIELDS`], in that order.
pub type Frame = [u128; L2_FIELDS.len()];

/// One field's criterion: the frame's bits under `mask` equal `value` (mask 0: any).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct Term {
    value: u128,
    mask: u128,
}

/// A conjunction of ternary criteria over the [`L2_FIELDS`]; a field without a criterion
/// matches any value. Values are kept cleared outside their masks so that equal criteria
/// compare equal.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cube {
    terms: [Term; L2_FIELDS.len()],
}

impl Cube {
    /// Every frame.
    pub const ANY: Cube = Cube {
        terms: [Term { value: 0, mask: 0 }; L2_FIELDS.len()],
    };

    /// One criterion on `field`, masked to its width; `None` when `field` is not one of
    /// the [`L2_FIELDS`].
    pub fn of(field: &str, value: u128, mask: u128) -> Option<Cube> {
        let i = field_index(field)?;
        let mut cube = Cube::ANY;
        cube.set(i, value, mask);
        Some(cube)
    }

    fn set(&mut self, i: usize, value: u128, mask: u128) {
        let mask = mask & width_mask(i);
        self.terms[i] = Term {
            value: value & mask,
            mask,
        };
    }

    /// The frames both match; `None` when they disagree on a bit both care about.
    pub fn intersect(&self, other: &Cube) -> Option<Cube> {
        let mut out = Cube::ANY;
        for (i, (a, b)) in self.terms.iter().zip(&other.terms).enumerate() {
            if (a.value ^ b.value) & a.mask & b.mask != 0 {
                return None;
            }
            out.terms[i] = Term {
                value: a.value | b.value,
                mask: a.mask | b.mask,
            };
        }
        Some(out)
    }

    /// The criteria as the table entry writes them: (field, value, mask), fields without
    /// a criterion left out.
    pub fn criteria(&self) -> impl Iterator<Item = (&'static str, u128, u128)> + '_ {
        L2_FIELDS
            .iter()
            .zip(&self.terms)
            .filter(|(_, t)| t.mask != 0)
            .map(|((field, _), t)| (*field, t.value, t.mask))
    }

    pub fn matches(&self, frame: &Frame) -> bool {
        self.terms
            .iter()
            .zip(frame)
            .all(|(t, v)| v & t.mask == t.value)
    }
}

fn field_index(field: &str) -> Option<usize> {
    L2_FIELDS.iter().position(|(name, _)| *name == field)
}

fn width_mask(i: usize) -> u128 {
    (1u128 << L2_FIELDS[i].1) - 1
}

/// The Ethernet-layer criteria of a flow as a union of cubes, built by the same code as
/// the flow tables' criteria. `None`: the flow has none (it matches every class);
/// `Some(vec![])`: no frame can match (a VLAN depth below a tag's position).
pub fn l2_part(m: &FlowMatch) -> Option<Vec<Cube>> {
    let Some(ethernet) = ethernet_criteria(m) else {
        return Some(Vec::new());
    };
    let mut fixed = Cube::ANY;
    for (field, value, mask) in ethernet.ternaries {
        // ethernet_criteria names only L2 fields, each once: nothing is dropped here.
        if let Some(i) = field_index(field) {
            fixed.set(i, value, mask);
        }
    }
    let any_depth = matches!(ethernet.vlan_depth.as_slice(), [(_, 0)]);
    if any_depth {
        return (fixed != Cube::ANY).then(|| vec![fixed]);
    }
    let cubes = ethernet
        .vlan_depth
        .iter()
        .map(|(value, mask)| {
            let mut cube = fixed;
            cube.set(VLAN_DEPTH, *value, *mask);
            cube
        })
        .collect();
    Some(cubes)
}

/// A ternary on the class code.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ClassMatch {
    pub value: u16,
    pub mask: u16,
}

impl ClassMatch {
    pub fn matches(&self, code: u16) -> bool {
        code & self.mask == self.value
    }
}

/// One entry of the `l2_classes` table: `set_l2_class(class)` for the frames of `cube`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClassEntry {
    pub cube: Cube,
    /// The higher wins. Overlapping entries of equal priority may exist, but give a frame
    /// the same class whenever one of them is the highest that frame meets.
    pub priority: u32,
    pub class: u16,
}

/// The `l2_classes` table and what each part's flows match on the class code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct L2Classes {
    /// Highest priority first.
    pub entries: Vec<ClassEntry>,
    /// One per part given to [`classify`], in its order (equal parts: equal matches).
    pub parts: Vec<ClassMatch>,
    /// The low bits of the class code in use.
    pub bits: u32,
}

impl L2Classes {
    /// The class the table gives `frame`: its highest-priority matching entry's, or the
    /// default class 0.
    pub fn class_of(&self, frame: &Frame) -> u16 {
        self.entries
            .iter()
            .find(|e| e.cube.matches(frame))
            .map_or(0, |e| e.class)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ClassesError {
    #[error(
        "the flows' VLAN/MPLS/MAC/EtherType criteria need a {needed}-bit class code and the \
         chip's l2_class field has {available} bits: criteria that can hold for the same \
         frame (a VLAN id and a MAC address, say) take bits of their own, criteria that \
         exclude each other (different VLAN ids) share them; give fewer flows distinct \
         Ethernet-layer criteria, or make their criteria exclude each other"
    )]
    TooManyBits { needed: u32, available: u32 },
    #[error(
        "the flows' VLAN/MPLS/MAC/EtherType criteria make at least {needed} distinct \
         combinations and the chip's l2_classes table holds {capacity}: criteria that can \
         hold for the same frame multiply (10 VLAN ids and 10 MAC criteria make 100 \
         combinations of both); give fewer flows distinct Ethernet-layer criteria, or make \
         their criteria exclude each other"
    )]
    TooManyEntries { needed: usize, capacity: usize },
}

/// Where a part's code sits: its group's bit field and its value there.
#[derive(Clone, Copy, Debug)]
struct Slot {
    value: u16,
    mask: u16,
}

/// The `l2_classes` table for `parts` (each a union of cubes; equal parts are merged) in
/// a table of `table_size` entries.
pub fn classify(parts: &[Vec<Cube>], table_size: usize) -> Result<L2Classes, ClassesError> {
    let (distinct, index_of) = dedupe(parts);
    // Every distinct cube is an entry of its own: too many of them is known before the
    // grouping, which compares every two parts.
    let cubes = distinct_cubes(&distinct);
    if cubes > table_size {
        return Err(ClassesError::TooManyEntries {
            needed: cubes,
            capacity: table_size,
        });
    }
    let (slots, bits) = layout(&distinct)?;
    let entries = closure(&distinct, &slots, table_size)?;
    let group_masks = group_masks(&slots);
    let mut entries: Vec<ClassEntry> = entries
        .into_iter()
        .map(|(cube, class)| ClassEntry {
            cube,
            priority: group_masks.iter().filter(|m| class & *m != 0).count() as u32,
            class,
        })
        .collect();
    // Stable: equal priorities stay in cube order, so the output is deterministic.
    entries.sort_by_key(|e| std::cmp::Reverse(e.priority));
    let parts = index_of
        .iter()
        .map(|&i| ClassMatch {
            value: slots[i].value,
            mask: slots[i].mask,
        })
        .collect();
    Ok(L2Classes {
        entries,
        parts,
        bits,
    })
}

/// The distinct parts (cubes sorted, so that order does not tell parts apart) in order
/// of first appearance, and each given part's index among them.
fn dedupe(parts: &[Vec<Cube>]) -> (Vec<Vec<Cube>>, Vec<usize>) {
    let mut distinct: Vec<Vec<Cube>> = Vec::new();
    let mut seen: BTreeMap<Vec<Cube>, usize> = BTreeMap::new();
    let index_of = parts
        .iter()
        .map(|part| {
            let mut cubes = part.clone();
            cubes.sort();
            cubes.dedup();
            *seen.entry(cubes.clone()).or_insert_with(|| {
                distinct.push(cubes);
                distinct.len() - 1
            })
        })
        .collect();
    (distinct, index_of)
}

fn distinct_cubes(parts: &[Vec<Cube>]) -> usize {
    let all: std::collections::BTreeSet<&Cube> = parts.iter().flatten().collect();
    all.len()
}

fn overlap(a: &[Cube], b: &[Cube]) -> bool {
    a.iter().any(|x| b.iter().any(|y| x.intersect(y).is_some()))
}

/// Groups of mutually exclusive parts (greedy colouring of the overlap graph, most
/// overlapping parts first, each into the first group it fits) laid out as bit fields.
fn layout(parts: &[Vec<Cube>]) -> Result<(Vec<Slot>, u32), ClassesError> {
    let n = parts.len();
    let conflicts: Vec<Vec<bool>> = (0..n)
        .map(|i| {
            (0..n)
                .map(|j| i != j && overlap(&parts[i], &parts[j]))
                .collect()
        })
        .collect();
    let degrees: Vec<usize> = conflicts
        .iter()
        .map(|row| row.iter().filter(|c| **c).count())
        .collect();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(degrees[i]), i));
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for i in order {
        match groups
            .iter_mut()
            .find(|g| g.iter().all(|&j| !conflicts[i][j]))
        {
            Some(g) => g.push(i),
            None => groups.push(vec![i]),
        }
    }
    let needed: u32 = groups.iter().map(|g| field_width(g.len())).sum();
    if needed > CLASS_BITS {
        return Err(ClassesError::TooManyBits {
            needed,
            available: CLASS_BITS,
        });
    }
    Ok((slots(&groups, n), needed))
}

/// The bits that hold 1..=members (0 is "none of the group").
fn field_width(members: usize) -> u32 {
    usize::BITS - members.leading_zeros()
}

fn slots(groups: &[Vec<usize>], n: usize) -> Vec<Slot> {
    let mut slots = vec![Slot { value: 0, mask: 0 }; n];
    let mut offset = 0u32;
    for g in groups {
        let width = field_width(g.len());
        let mask = ((1u32 << width) - 1) << offset;
        for (k, &i) in g.iter().enumerate() {
            // Fits: layout checked that all fields end within CLASS_BITS.
            slots[i] = Slot {
                value: ((k as u32 + 1) << offset) as u16,
                mask: mask as u16,
            };
        }
        offset += width;
    }
    slots
}

fn group_masks(slots: &[Slot]) -> Vec<u16> {
    let mut masks: Vec<u16> = slots.iter().map(|s| s.mask).collect();
    masks.sort_unstable();
    masks.dedup();
    masks
}

/// Every non-empty intersection of cubes of distinct parts, with the OR of those parts'
/// values; an intersection reached from several sets of parts keeps their union (all of
/// them contain it). Parts are added one at a time to what the earlier ones made, so the
/// count only grows and can stop as soon as it passes `table_size`.
fn closure(
    parts: &[Vec<Cube>],
    slots: &[Slot],
    table_size: usize,
) -> Result<BTreeMap<Cube, u16>, ClassesError> {
    let mut entries: BTreeMap<Cube, u16> = BTreeMap::new();
    for (part, slot) in parts.iter().zip(slots) {
        let mut added: Vec<(Cube, u16)> = Vec::new();
        for cube in part {
            added.push((*cube, slot.value));
            // An entry already holding a part of this group is disjoint from this part.
            let others = entries.iter().filter(|(_, code)| *code & slot.mask == 0);
            added.extend(
                others.filter_map(|(k, code)| Some((k.intersect(cube)?, code | slot.value))),
            );
        }
        for (cube, code) in added {
            // The union, not the last: every part of either set contains the cube, and
            // the order the sets arrive in must not decide which of them the entry keeps.
            *entries.entry(cube).or_insert(0) |= code;
            if entries.len() > table_size {
                return Err(ClassesError::TooManyEntries {
                    needed: entries.len(),
                    capacity: table_size,
                });
            }
        }
    }
    Ok(entries)
}

#[cfg(test)]
mod tests;
