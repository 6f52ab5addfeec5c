//! The `frame_classes` pre-classification table. A flow's link scope,
//! Ethernet-layer criteria (VLAN tags and depth, MPLS depth, MACs, EtherType) and its need
//! of an L4 header move out of the flow tables into one small ternary table that gives
//! each frame one 8-bit class, and each flow matches a ternary on that class instead of
//! those wide fields.
//!
//! A frame gets ONE class, yet may meet the criteria of several flows (a VLAN-id flow and a
//! MAC flow), so the class must tell every one of them. Atoms (the distinct criteria: a
//! link scope, an Ethernet-layer part, "has an L4 header") that can never hold for the same
//! frame are grouped and share a bit field (value k: the group's k-th atom, 0: none of the
//! group); the table holds, for every set of atoms whose cubes intersect, that intersection
//! with the OR of their values, the larger sets at higher priority. A frame's winning entry
//! is then the one of exactly the atoms it meets.
//!
//! The layout (which atom has which bits) is kept from one commit to the next, so that a
//! flow that keeps its atoms keeps its class match and its entries: new atoms join a group
//! they exclude at a value no atom held before, or take free bits; only when the bits run
//! out is everything laid out afresh (`relaid`: every flow's match changes).

use std::collections::{BTreeMap, BTreeSet};

use efb_model::FlowMatch;
use efb_p4info::names::{FieldName, fields as f};
use serde::{Deserialize, Serialize};

use crate::criteria::ethernet_criteria;

/// The fields of the `frame_classes` key (name, width, match kind), in the order of
/// [`Cube`]'s terms and [`Frame`]'s values: the P4Info contract's.
pub use efb_p4info::contract::CLASS_FIELDS;

/// Where [`CLASS_FIELDS`] lists `vlan_depth`, the one field given as a range.
const VLAN_DEPTH: usize = 1;

/// The width of the `frame_class` field the flow tables match.
pub const CLASS_BITS: u32 = 8;

/// A frame's values of the [`CLASS_FIELDS`], in that order.
pub type Frame = [u128; CLASS_FIELDS.len()];

/// One field's criterion: the frame's bits under `mask` equal `value` (mask 0: any).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
struct Term {
    value: u128,
    mask: u128,
}

/// A conjunction of ternary criteria over the [`CLASS_FIELDS`]; a field without a
/// criterion matches any value. Values are kept cleared outside their masks so that equal
/// criteria compare equal.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Cube {
    terms: [Term; CLASS_FIELDS.len()],
}

impl Cube {
    /// Every frame.
    pub const ANY: Cube = Cube {
        terms: [Term { value: 0, mask: 0 }; CLASS_FIELDS.len()],
    };

    /// One criterion on `field`, masked to its width; `None` when `field` is not one of
    /// the [`CLASS_FIELDS`].
    pub fn of(field: FieldName, value: u128, mask: u128) -> Option<Cube> {
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
    pub fn criteria(&self) -> impl Iterator<Item = (FieldName, u128, u128)> + '_ {
        CLASS_FIELDS
            .iter()
            .zip(&self.terms)
            .filter(|(_, t)| t.mask != 0)
            .map(|((field, _, _), t)| (*field, t.value, t.mask))
    }

    pub fn matches(&self, frame: &Frame) -> bool {
        self.terms
            .iter()
            .zip(frame)
            .all(|(t, v)| v & t.mask == t.value)
    }
}

fn field_index(field: FieldName) -> Option<usize> {
    CLASS_FIELDS.iter().position(|(name, _, _)| *name == field)
}

fn width_mask(i: usize) -> u128 {
    (1u128 << CLASS_FIELDS[i].1) - 1
}

/// One criterion of a flow on the class fields, as a union of cubes (sorted, without
/// repeats, so that equal criteria are one atom). Empty: no frame meets it.
pub type Atom = Vec<Cube>;

fn atom(mut cubes: Vec<Cube>) -> Atom {
    cubes.sort();
    cubes.dedup();
    cubes
}

/// A flow's atoms: its links (`links`: the ids of the links it names, empty when it names
/// none), its Ethernet-layer criteria, and an L4 header when it matches ports. `None` when
/// no frame can match it (a VLAN depth below a tag's position); no atoms: every frame.
pub fn flow_atoms(m: &FlowMatch, links: &[u32]) -> Option<Vec<Atom>> {
    let mut atoms = Vec::new();
    if !links.is_empty() {
        let scope = links
            .iter()
            .filter_map(|l| Cube::of(f::LINK_ID, (*l).into(), 0xff));
        atoms.push(atom(scope.collect()));
    }
    match ethernet_atom(m) {
        Some(ethernet) if ethernet.is_empty() => return None,
        Some(ethernet) => atoms.push(ethernet),
        None => {}
    }
    if m.src_port.is_some() || m.dst_port.is_some() {
        atoms.extend(Cube::of(f::L4_VALID, 1, 1).map(|c| vec![c]));
    }
    Some(atoms)
}

/// The Ethernet-layer criteria of a flow as an atom, built by the same code as the flow
/// tables' criteria. `None`: the flow has none; an empty atom: no frame can match (a VLAN
/// depth below a tag's position).
pub fn ethernet_atom(m: &FlowMatch) -> Option<Atom> {
    let Some(ethernet) = ethernet_criteria(m) else {
        return Some(Vec::new());
    };
    let mut fixed = Cube::ANY;
    for (field, value, mask) in ethernet.ternaries {
        // ethernet_criteria names only class fields, each once: nothing is dropped here.
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
    Some(atom(cubes))
}

/// A ternary on the class.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ClassMatch {
    pub value: u8,
    pub mask: u8,
}

impl ClassMatch {
    pub fn matches(&self, class: u8) -> bool {
        class & self.mask == self.value
    }
}

/// One entry of the `frame_classes` table: `set_frame_class(class)` for the frames of
/// `cube`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClassEntry {
    pub cube: Cube,
    /// The higher wins. Overlapping entries of equal priority may exist, but give a frame
    /// the same class whenever one of them is the highest that frame meets.
    pub priority: u32,
    pub class: u8,
}

/// Where an atom's class bits are: its group's bit field (`mask`) and its value there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Slot {
    pub value: u8,
    pub mask: u8,
}

/// Which bits each atom has: kept from one commit to the next (and across restarts, with
/// the driver's ids), so that flows keep their class matches.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layout {
    /// Sorted by atom.
    slots: Vec<(Atom, Slot)>,
}

impl Layout {
    fn new(mut slots: Vec<(Atom, Slot)>) -> Layout {
        slots.sort();
        Layout { slots }
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    pub fn slot(&self, atom: &Atom) -> Option<Slot> {
        self.slots
            .binary_search_by(|(a, _)| a.cmp(atom))
            .ok()
            .map(|i| self.slots[i].1)
    }

    /// What a flow of `atoms` matches on the class: every one of its atoms' values (no
    /// atoms: any class). `None` when an atom has no slot (it was not classified).
    pub fn class_match(&self, atoms: &[Atom]) -> Option<ClassMatch> {
        atoms.iter().try_fold(ClassMatch::default(), |m, atom| {
            let slot = self.slot(atom)?;
            Some(ClassMatch {
                value: m.value | slot.value,
                mask: m.mask | slot.mask,
            })
        })
    }

    /// The class bits in use.
    pub fn bits(&self) -> u32 {
        self.slots
            .iter()
            .fold(0u8, |bits, (_, s)| bits | s.mask)
            .count_ones()
    }
}

/// The `frame_classes` table for a set of atoms, and where each atom is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FrameClasses {
    /// Highest priority first.
    pub entries: Vec<ClassEntry>,
    pub layout: Layout,
    /// The atoms were laid out afresh (the bits ran out): every flow's class match may
    /// have changed.
    pub relaid: bool,
}

impl FrameClasses {
    /// The class the table gives `frame`: its highest-priority matching entry's, or the
    /// default class 0.
    pub fn class_of(&self, frame: &Frame) -> u8 {
        self.entries
            .iter()
            .find(|e| e.cube.matches(frame))
            .map_or(0, |e| e.class)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ClassesError {
    #[error(
        "the flows' link, VLAN/MPLS/MAC/EtherType and port criteria need a {needed}-bit \
         class and the chip's frame_class field has {available} bits: criteria that can hold \
         for the same frame (a link and a VLAN id, say) take bits of their own, criteria \
         that exclude each other (different VLAN ids, different links) share them; give \
         fewer flows distinct criteria of these kinds, or make their criteria exclude each \
         other"
    )]
    TooManyBits { needed: u32, available: u32 },
    #[error(
        "the flows' link, VLAN/MPLS/MAC/EtherType and port criteria make at least {needed} \
         distinct combinations and the chip's frame_classes table holds {capacity}: \
         criteria that can hold for the same frame multiply (10 VLAN ids and 10 MAC \
         criteria make 100 combinations of both); give fewer flows distinct criteria of \
         these kinds, or make their criteria exclude each other"
    )]
    TooManyEntries { needed: usize, capacity: usize },
}

/// The `frame_classes` table for `atoms` in a table of `table_size` entries, keeping the
/// `previous` layout where the bits allow.
pub fn classify(
    atoms: &BTreeSet<Atom>,
    previous: &Layout,
    table_size: usize,
) -> Result<FrameClasses, ClassesError> {
    // Every distinct cube is an entry of its own: too many of them is known before the
    // grouping, which compares every two atoms.
    let cubes: BTreeSet<&Cube> = atoms.iter().flatten().collect();
    if cubes.len() > table_size {
        return Err(ClassesError::TooManyEntries {
            needed: cubes.len(),
            capacity: table_size,
        });
    }
    // A first layout is compact; later ones keep it while they can.
    let kept = (!previous.is_empty())
        .then(|| place(atoms, previous))
        .flatten();
    let (layout, relaid) = match kept {
        Some(layout) => (layout, false),
        None => (layout(atoms)?, !previous.is_empty()),
    };
    let entries = closure(&layout, table_size)?;
    let group_masks = group_masks(&layout);
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
    Ok(FrameClasses {
        entries,
        layout,
        relaid,
    })
}

fn overlap(a: &[Cube], b: &[Cube]) -> bool {
    a.iter().any(|x| b.iter().any(|y| x.intersect(y).is_some()))
}

/// Groups of mutually exclusive atoms (greedy colouring of the overlap graph, most
/// overlapping first, each into the first group it fits).
fn groups<'a>(atoms: &[&'a Atom]) -> Vec<Vec<&'a Atom>> {
    let n = atoms.len();
    let conflicts: Vec<Vec<bool>> = (0..n)
        .map(|i| {
            (0..n)
                .map(|j| i != j && overlap(atoms[i], atoms[j]))
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
    groups
        .into_iter()
        .map(|g| g.into_iter().map(|i| atoms[i]).collect())
        .collect()
}

/// Every atom laid out afresh, the groups as bit fields from bit 0 up.
fn layout(atoms: &BTreeSet<Atom>) -> Result<Layout, ClassesError> {
    let all: Vec<&Atom> = atoms.iter().collect();
    let groups = groups(&all);
    let needed: u32 = groups.iter().map(|g| field_width(g.len())).sum();
    if needed > CLASS_BITS {
        return Err(ClassesError::TooManyBits {
            needed,
            available: CLASS_BITS,
        });
    }
    let mut slots = Vec::new();
    let mut offset = 0u32;
    for g in &groups {
        let width = field_width(g.len());
        slots.extend(members_at(g, offset, width));
        offset += width;
    }
    Ok(Layout::new(slots))
}

/// The atoms of a group in the field of `width` bits at `offset`, values 1, 2, ...
fn members_at(group: &[&Atom], offset: u32, width: u32) -> Vec<(Atom, Slot)> {
    let mask = (((1u32 << width) - 1) << offset) as u8;
    group
        .iter()
        .enumerate()
        .map(|(k, atom)| {
            let value = ((k as u32 + 1) << offset) as u8;
            ((*atom).clone(), Slot { value, mask })
        })
        .collect()
}

/// The previous layout's atoms that remain keep their slots; the new ones join a group
/// whose every member they exclude, at a value no atom of the previous layout held (its
/// flows' entries still match that value until they are deleted), or are grouped among
/// themselves into fields of free bits, with room for more. `None` when they do not fit.
fn place(atoms: &BTreeSet<Atom>, previous: &Layout) -> Option<Layout> {
    let mut slots: Vec<(Atom, Slot)> = previous
        .slots
        .iter()
        .filter(|(atom, _)| atoms.contains(atom))
        .cloned()
        .collect();
    let held: BTreeSet<Slot> = previous.slots.iter().map(|(_, s)| *s).collect();
    let mut homeless: Vec<&Atom> = Vec::new();
    for atom in atoms.iter().filter(|a| previous.slot(a).is_none()) {
        match join(atom, &slots, &held) {
            Some(slot) => slots.push((atom.clone(), slot)),
            None => homeless.push(atom),
        }
    }
    for group in groups(&homeless) {
        // A bit more than the group needs when there is room: atoms that exclude these
        // (other VLAN ids, other links) come one commit at a time.
        let least = field_width(group.len());
        let (offset, width) = [least + 1, least]
            .into_iter()
            .find_map(|width| Some((free_field(&slots, &held, width)?, width)))?;
        slots.extend(members_at(&group, offset, width));
    }
    Some(Layout::new(slots))
}

/// A slot for `atom` in a group of `slots` all of whose members it excludes: the lowest
/// value of the group's field that no atom holds now or held before.
fn join(atom: &Atom, slots: &[(Atom, Slot)], held: &BTreeSet<Slot>) -> Option<Slot> {
    let masks: BTreeSet<u8> = slots.iter().map(|(_, s)| s.mask).collect();
    masks.into_iter().find_map(|mask| {
        let members = slots.iter().filter(|(_, s)| s.mask == mask);
        if members.clone().any(|(other, _)| overlap(atom, other)) {
            return None;
        }
        let offset = mask.trailing_zeros();
        let taken: BTreeSet<u8> = members.map(|(_, s)| s.value).collect();
        (1..=(mask >> offset))
            .map(|k| Slot {
                value: k << offset,
                mask,
            })
            .find(|slot| !taken.contains(&slot.value) && !held.contains(slot))
    })
}

/// The lowest offset of `width` contiguous bits that no group uses, nor used in the
/// previous layout (whose values its flows' entries still match).
fn free_field(slots: &[(Atom, Slot)], held: &BTreeSet<Slot>, width: u32) -> Option<u32> {
    let used = slots
        .iter()
        .map(|(_, s)| s.mask)
        .chain(held.iter().map(|s| s.mask))
        .fold(0u8, |used, mask| used | mask);
    let field = (1u32 << width) - 1;
    (0..=CLASS_BITS.checked_sub(width)?).find(|offset| u32::from(used) & (field << offset) == 0)
}

/// The bits that hold 1..=members (0 is "none of the group").
fn field_width(members: usize) -> u32 {
    usize::BITS - members.leading_zeros()
}

fn group_masks(layout: &Layout) -> Vec<u8> {
    let mut masks: Vec<u8> = layout.slots.iter().map(|(_, s)| s.mask).collect();
    masks.sort_unstable();
    masks.dedup();
    masks
}

/// Every non-empty intersection of cubes of distinct atoms, with the OR of those atoms'
/// values; an intersection reached from several sets of atoms keeps their union (all of
/// them contain it). Atoms are added one at a time to what the earlier ones made, so the
/// count only grows and can stop as soon as it passes `table_size`.
fn closure(layout: &Layout, table_size: usize) -> Result<BTreeMap<Cube, u8>, ClassesError> {
    let mut entries: BTreeMap<Cube, u8> = BTreeMap::new();
    for (atom, slot) in &layout.slots {
        let mut added: Vec<(Cube, u8)> = Vec::new();
        for cube in atom {
            added.push((*cube, slot.value));
            // An entry already holding an atom of this group is disjoint from this atom.
            let others = entries.iter().filter(|(_, class)| *class & slot.mask == 0);
            added.extend(
                others.filter_map(|(k, class)| Some((k.intersect(cube)?, class | slot.value))),
            );
        }
        for (cube, class) in added {
            // The union, not the last: every atom of either set contains the cube, and
            // the order the sets arrive in must not decide which of them the entry keeps.
            *entries.entry(cube).or_insert(0) |= class;
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
