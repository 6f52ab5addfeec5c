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
    let err = classify(&parts, SIZE).expect_err("8000 cubes");
    assert_eq!(
        err,
        ClassesError::TooManyEntries {
            needed: 8000,
            capacity: SIZE
        }
    );
}
