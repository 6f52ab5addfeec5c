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
mod tests {
    use super::*;
    use efb_model::MacMatch;

    const SIZE: usize = 512;

    fn vlan0(vid: u16) -> FlowMatch {
        FlowMatch {
            vlan_tags: [Some(vid), None, None],
            ..FlowMatch::default()
        }
    }

    fn src_mac(addr: [u8; 6], mask: [u8; 6]) -> FlowMatch {
        FlowMatch {
            src_mac: Some(MacMatch { addr, mask }),
            ..FlowMatch::default()
        }
    }

    fn part(m: &FlowMatch) -> Vec<Cube> {
        l2_part(m).expect("an Ethernet-layer criterion")
    }

    /// A frame: depth, the three VLAN ids, MPLS depth, MACs, EtherType.
    fn frame(depth: u128, vids: [u128; 3], src: u128, ether_type: u128) -> Frame {
        [depth, vids[0], vids[1], vids[2], 0, src, 0, ether_type]
    }

    /// The parts `frame` meets according to the table, as a list of booleans.
    fn read_back(c: &L2Classes, frame: &Frame) -> Vec<bool> {
        let code = c.class_of(frame);
        c.parts.iter().map(|p| p.matches(code)).collect()
    }

    fn direct(parts: &[Vec<Cube>], frame: &Frame) -> Vec<bool> {
        parts
            .iter()
            .map(|p| p.iter().any(|c| c.matches(frame)))
            .collect()
    }

    #[test]
    fn a_tag_criterion_needs_the_tag_as_the_flow_tables_do() {
        let cubes = part(&vlan0(100));
        let crit: Vec<Vec<_>> = cubes.iter().map(|c| c.criteria().collect()).collect();
        assert_eq!(
            crit,
            vec![
                vec![(f::VLAN_DEPTH, 1, 3), (f::VLAN0_VID, 100, 0xfff)],
                vec![(f::VLAN_DEPTH, 2, 2), (f::VLAN0_VID, 100, 0xfff)],
            ]
        );
        let exact = FlowMatch {
            vlan_depth: Some(2),
            mpls_depth: Some(1),
            packet_type: Some(0x0800),
            ..vlan0(7)
        };
        let crit: Vec<_> = part(&exact)[0].criteria().collect();
        assert_eq!(
            crit,
            vec![
                (f::VLAN_DEPTH, 2, 3),
                (f::VLAN0_VID, 7, 0xfff),
                (f::MPLS_DEPTH, 1, 7),
                (f::ETHER_TYPE, 0x0800, 0xffff),
            ]
        );
    }

    #[test]
    fn a_flow_without_ethernet_criteria_has_no_part() {
        assert_eq!(l2_part(&FlowMatch::default()), None);
        let ip_only = FlowMatch {
            ip_proto: Some(6),
            ..FlowMatch::default()
        };
        assert_eq!(l2_part(&ip_only), None);
    }

    #[test]
    fn a_part_that_can_never_match_matches_no_class() {
        let never = FlowMatch {
            vlan_tags: [None, Some(5), None],
            vlan_depth: Some(1),
            ..FlowMatch::default()
        };
        assert_eq!(l2_part(&never), Some(vec![]));
        let parts = vec![part(&vlan0(100)), vec![]];
        let c = classify(&parts, SIZE).expect("classes");
        let never = c.parts[1];
        assert!(!never.matches(0));
        assert!(c.entries.iter().all(|e| !never.matches(e.class)));
        assert!(c.parts[0].matches(c.class_of(&frame(1, [100, 0, 0], 0, 0))));
    }

    #[test]
    fn disjoint_vlans_share_one_group() {
        let parts: Vec<Vec<Cube>> = (1..=20).map(|vid| part(&vlan0(vid))).collect();
        let c = classify(&parts, SIZE).expect("classes");
        assert_eq!(c.bits, 5);
        assert!(c.parts.iter().all(|p| p.mask == 0x1f));
        // Two depth prefixes per VLAN id, no intersections.
        assert_eq!(c.entries.len(), 40);
        assert!(c.entries.iter().all(|e| e.priority == 1));
        for vid in 0..=21 {
            let x = frame(2, [vid, 0, 0], 0, 0);
            assert_eq!(read_back(&c, &x), direct(&parts, &x), "vid {vid}");
        }
    }

    #[test]
    fn overlapping_parts_get_their_intersection_above_both() {
        let mac = [2, 0, 0, 0, 0, 1];
        let parts = vec![part(&vlan0(100)), part(&src_mac(mac, [0xff; 6]))];
        let c = classify(&parts, SIZE).expect("classes");
        assert_eq!(c.bits, 2);
        let both = c.parts[0].value | c.parts[1].value;
        // VLAN 100 at depth 1 and at depths 2-3, each with the MAC: two entries first.
        assert_eq!(c.entries.len(), 5);
        assert!(
            c.entries[..2]
                .iter()
                .all(|e| e.priority == 2 && e.class == both)
        );
        assert!(c.entries[2..].iter().all(|e| e.priority == 1));
        let mac = 0x0200_0000_0001;
        for x in [
            frame(1, [100, 0, 0], mac, 0),
            frame(1, [100, 0, 0], 0, 0),
            frame(0, [0, 0, 0], mac, 0),
            frame(0, [100, 0, 0], 0, 0),
        ] {
            assert_eq!(read_back(&c, &x), direct(&parts, &x), "{x:?}");
        }
        assert_eq!(c.class_of(&frame(1, [100, 0, 0], mac, 0)), both);
    }

    #[test]
    fn a_part_that_matches_every_frame_is_read_back_from_every_frame() {
        let parts = vec![vec![Cube::ANY], part(&vlan0(3))];
        let c = classify(&parts, SIZE).expect("classes");
        for x in [frame(0, [0; 3], 0, 0), frame(1, [3, 0, 0], 0, 0)] {
            assert_eq!(read_back(&c, &x), direct(&parts, &x));
        }
    }

    #[test]
    fn equal_parts_are_one() {
        let a = part(&vlan0(100));
        let mut reversed = a.clone();
        reversed.reverse();
        let b = part(&vlan0(200));
        let c = classify(&[a.clone(), b.clone(), reversed, a.clone()], SIZE).expect("classes");
        let single = classify(&[a, b], SIZE).expect("classes");
        assert_eq!(c.entries, single.entries);
        assert_eq!(c.parts[0], c.parts[2]);
        assert_eq!(c.parts[0], c.parts[3]);
        assert_eq!(c.parts[..2], single.parts[..]);
    }

    #[test]
    fn the_output_is_deterministic() {
        let parts: Vec<Vec<Cube>> = (0..6)
            .map(|i| match i % 2 {
                0 => part(&vlan0(i)),
                _ => part(&src_mac([0, 0, 0, 0, 0, i as u8], [0, 0, 0, 0, 0, 0xff])),
            })
            .collect();
        let first = classify(&parts, SIZE).expect("classes");
        assert_eq!(classify(&parts, SIZE), Ok(first));
    }

    #[test]
    fn too_many_overlapping_parts_need_too_many_bits() {
        // One MAC bit each: every two of them can hold for the same frame.
        let parts: Vec<Vec<Cube>> = (0..17)
            .map(|bit| vec![Cube::of(f::SRC_MAC, 1 << bit, 1 << bit).expect("a field")])
            .collect();
        let err = classify(&parts, usize::MAX).expect_err("17 bits");
        assert_eq!(
            err,
            ClassesError::TooManyBits {
                needed: 17,
                available: 16
            }
        );
        let text = err.to_string();
        assert!(text.contains("need a 17-bit class code"), "{text}");
        assert!(text.contains("l2_class field has 16 bits"), "{text}");
        assert!(text.contains("exclude each other"), "{text}");
    }

    #[test]
    fn too_many_combinations_need_too_many_entries() {
        let vlans = (1..=30).map(|vid| part(&vlan0(vid)));
        let types = (0..30).map(|t| {
            part(&FlowMatch {
                packet_type: Some(0x9000 + t),
                ..FlowMatch::default()
            })
        });
        let parts: Vec<Vec<Cube>> = vlans.chain(types).collect();
        let err = classify(&parts, SIZE).expect_err("30 x 30 x 2");
        let ClassesError::TooManyEntries { needed, capacity } = err else {
            panic!("{err:?}");
        };
        assert!(needed > SIZE);
        assert_eq!(capacity, SIZE);
        let text = err.to_string();
        assert!(
            text.contains(&format!("make at least {needed} distinct combinations")),
            "{text}"
        );
        assert!(text.contains("l2_classes table holds 512"), "{text}");
    }

    #[test]
    fn the_table_may_be_exactly_full() {
        let parts = vec![part(&vlan0(1)), part(&vlan0(2))];
        assert_eq!(classify(&parts, 4).map(|c| c.entries.len()), Ok(4));
        assert!(matches!(
            classify(&parts, 3),
            Err(ClassesError::TooManyEntries { capacity: 3, .. })
        ));
    }

    /// xorshift64: enough randomness for configurations, no dependency.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }

        fn pick<T: Copy>(&mut self, from: &[T]) -> T {
            from[self.below(from.len())]
        }

        fn chance(&mut self, one_in: usize) -> bool {
            self.below(one_in) == 0
        }
    }

    const VIDS: [u16; 4] = [0, 1, 2, 100];
    const TYPES: [u16; 3] = [0x0800, 0x86dd, 0x88cc];
    const MACS: [[u8; 6]; 4] = [[0; 6], [2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2], [0xff; 6]];
    const MAC_MASKS: [[u8; 6]; 3] = [[0xff; 6], [0xff, 0xff, 0xff, 0, 0, 0], [1, 0, 0, 0, 0, 0]];
    const FRAME_MACS: [u128; 6] = [
        0,
        0x0200_0000_0001,
        0x0200_0000_0002,
        0x0100_5e00_0001,
        0xffff_ffff_ffff,
        0x0200_0011_2233,
    ];

    fn random_mac(rng: &mut Rng) -> Option<MacMatch> {
        rng.chance(3).then(|| MacMatch {
            addr: rng.pick(&MACS),
            mask: rng.pick(&MAC_MASKS),
        })
    }

    /// A random flow's part, through l2_part (None: no Ethernet-layer criterion).
    fn random_flow_part(rng: &mut Rng) -> Option<Vec<Cube>> {
        let mut m = FlowMatch::default();
        for tag in &mut m.vlan_tags {
            if rng.chance(3) {
                *tag = Some(rng.pick(&VIDS));
            }
        }
        m.vlan_depth = rng.chance(3).then(|| rng.below(4) as u8);
        m.mpls_depth = rng.chance(5).then(|| rng.below(3) as u8);
        m.src_mac = random_mac(rng);
        m.dst_mac = random_mac(rng);
        m.packet_type = rng.chance(3).then(|| rng.pick(&TYPES));
        l2_part(&m)
    }

    /// A random part built directly: any VLAN depth range, and now and then a second
    /// union member.
    fn random_cubes_part(rng: &mut Rng) -> Vec<Cube> {
        let lo = rng.below(4);
        let hi = lo + rng.below(4 - lo);
        let mut fixed = Cube::ANY;
        let mut restrict = |c: Option<Cube>| {
            if let Some(r) = c.and_then(|c| fixed.intersect(&c)) {
                fixed = r;
            }
        };
        let vid_field = [f::VLAN0_VID, f::VLAN1_VID, f::VLAN2_VID][rng.below(3)];
        restrict(Cube::of(vid_field, rng.pick(&VIDS).into(), 0xfff));
        if rng.chance(2) {
            let mac = rng.pick(&MACS);
            let mask = rng.pick(&MAC_MASKS);
            let field = [f::SRC_MAC, f::DST_MAC][rng.below(2)];
            restrict(Cube::of(field, be(&mac), be(&mask)));
        }
        if rng.chance(2) {
            restrict(Cube::of(f::ETHER_TYPE, rng.pick(&TYPES).into(), 0xffff));
        }
        let mut cubes: Vec<Cube> = crate::compile::range_prefixes(lo as u128, hi as u128, 2)
            .into_iter()
            .filter_map(|(v, m)| fixed.intersect(&Cube::of(f::VLAN_DEPTH, v, m)?))
            .collect();
        if rng.chance(4) {
            cubes.extend(Cube::of(f::MPLS_DEPTH, rng.below(3) as u128, 7));
        }
        cubes
    }

    fn be(bytes: &[u8]) -> u128 {
        bytes.iter().fold(0, |acc, b| (acc << 8) | u128::from(*b))
    }

    fn random_parts(rng: &mut Rng) -> Vec<Vec<Cube>> {
        let n = 1 + rng.below(16);
        let mut parts: Vec<Vec<Cube>> = (0..n)
            .filter_map(|_| match rng.below(10) {
                0 => Some(vec![]),
                1..=5 => random_flow_part(rng),
                _ => Some(random_cubes_part(rng)),
            })
            .collect();
        // Repeat one now and then: duplicates must read back alike.
        if rng.chance(4) && !parts.is_empty() {
            let again = parts[rng.below(parts.len())].clone();
            parts.push(again);
        }
        parts
    }

    fn random_frame(rng: &mut Rng) -> Frame {
        let vid = |rng: &mut Rng| u128::from(rng.pick(&[0u16, 1, 2, 100, 5]));
        [
            rng.below(4) as u128,
            vid(rng),
            vid(rng),
            vid(rng),
            rng.below(4) as u128,
            rng.pick(&FRAME_MACS),
            rng.pick(&FRAME_MACS),
            u128::from(rng.pick(&[0x0800u16, 0x86dd, 0x88cc, 0x8100])),
        ]
    }

    /// Check 2: every frame of random configurations reads back, from its one class
    /// code, exactly the parts it meets.
    #[test]
    fn every_frame_reads_back_exactly_the_parts_it_meets() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let (mut classified, mut refused, mut overlaps) = (0, 0, 0);
        for config in 0..60 {
            let parts = random_parts(&mut rng);
            let c = match classify(&parts, SIZE) {
                Ok(c) => c,
                Err(_) => {
                    refused += 1;
                    continue;
                }
            };
            classified += 1;
            assert!(c.entries.len() <= SIZE);
            assert!(c.entries.windows(2).all(|w| w[0].priority >= w[1].priority));
            for _ in 0..3000 {
                let x = random_frame(&mut rng);
                let want = direct(&parts, &x);
                overlaps += usize::from(want.iter().filter(|m| **m).count() > 1);
                assert_eq!(read_back(&c, &x), want, "config {config}: {parts:?}, {x:?}");
            }
        }
        assert!(
            classified >= 50,
            "{classified} classified, {refused} refused"
        );
        // The frames must exercise overlaps, or the test proves little.
        assert!(overlaps > 10_000, "{overlaps} frames in several parts");
    }
    #[test]
    fn many_distinct_cubes_are_refused_before_grouping() {
        let parts: Vec<Vec<Cube>> = (1..=4000).map(|vid| part(&vlan0(vid))).collect();
        let started = std::time::Instant::now();
        let err = classify(&parts, SIZE).expect_err("8000 cubes");
        assert_eq!(
            err,
            ClassesError::TooManyEntries {
                needed: 8000,
                capacity: SIZE
            }
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
    }

    /// Timings for the report: `cargo test -p efb-p4 --lib l2_classes::tests::timings --
    /// --ignored --nocapture`.
    #[test]
    #[ignore]
    fn timings() {
        let vlans = |n: u16| (1..=n).map(|vid| part(&vlan0(vid)));
        let depth_one = |n: u16| {
            (1..=n).map(|vid| {
                part(&FlowMatch {
                    vlan_depth: Some(1),
                    ..vlan0(vid)
                })
            })
        };
        let ether_type = part(&FlowMatch {
            packet_type: Some(0x88cc),
            ..FlowMatch::default()
        });
        let mac = part(&src_mac([2, 0, 0, 0, 0, 1], [0xff; 6]));
        let two_types = (0..2).map(|t| {
            part(&FlowMatch {
                packet_type: Some(0x9000 + t),
                ..FlowMatch::default()
            })
        });
        let cases: Vec<(&str, Vec<Vec<Cube>>)> = vec![
            ("100 VLAN ids", vlans(100).collect()),
            ("255 VLAN ids", vlans(255).collect()),
            (
                "98 VLAN ids at depth 1, 1 EtherType, 1 MAC",
                depth_one(98).chain([ether_type, mac]).collect(),
            ),
            (
                "98 VLAN ids, 2 EtherTypes (refused)",
                vlans(98).chain(two_types).collect(),
            ),
            ("4000 VLAN ids (refused)", vlans(4000).collect()),
        ];
        for (name, parts) in cases {
            let rounds = 20;
            let started = std::time::Instant::now();
            let mut last = None;
            for _ in 0..rounds {
                last = Some(classify(&parts, SIZE));
            }
            let each = started.elapsed() / rounds;
            let outcome = match last {
                Some(Ok(c)) => format!("{} entries, {} bits", c.entries.len(), c.bits),
                Some(Err(e)) => format!("{e:?}"),
                None => String::new(),
            };
            eprintln!("{name}: {each:?} each; {outcome}");
        }
    }
}
