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
    ethernet_atom(m).expect("an Ethernet-layer criterion")
}

/// A frame on link 0 without an L4 header: depth, the three VLAN ids, MPLS depth, MACs,
/// EtherType.
fn frame(depth: u128, vids: [u128; 3], src: u128, ether_type: u128) -> Frame {
    [
        0, depth, vids[0], vids[1], vids[2], 0, src, 0, ether_type, 0,
    ]
}

/// The classes of `parts` laid out afresh, and each part's class match.
#[derive(Debug)]
struct Classified {
    classes: FrameClasses,
    parts: Vec<ClassMatch>,
    bits: u32,
}

impl Classified {
    fn class_of(&self, frame: &Frame) -> u8 {
        self.classes.class_of(frame)
    }
}

fn classify_parts(parts: &[Vec<Cube>], size: usize) -> Result<Classified, ClassesError> {
    let atoms: BTreeSet<Atom> = parts.iter().map(|p| atom(p.clone())).collect();
    let classes = classify(&atoms, &Layout::default(), size)?;
    let parts = parts
        .iter()
        .map(|p| {
            let m = classes.layout.class_match(&[atom(p.clone())]);
            m.expect("every part classified")
        })
        .collect();
    let bits = classes.layout.bits();
    Ok(Classified {
        classes,
        parts,
        bits,
    })
}

/// The parts `frame` meets according to the table, as a list of booleans.
fn read_back(c: &Classified, frame: &Frame) -> Vec<bool> {
    let class = c.class_of(frame);
    c.parts.iter().map(|p| p.matches(class)).collect()
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
    assert_eq!(ethernet_atom(&FlowMatch::default()), None);
    let ip_only = FlowMatch {
        ip_proto: Some(6),
        ..FlowMatch::default()
    };
    assert_eq!(ethernet_atom(&ip_only), None);
}

#[test]
fn a_part_that_can_never_match_matches_no_class() {
    let never = FlowMatch {
        vlan_tags: [None, Some(5), None],
        vlan_depth: Some(1),
        ..FlowMatch::default()
    };
    assert_eq!(ethernet_atom(&never), Some(vec![]));
    let parts = vec![part(&vlan0(100)), vec![]];
    let c = classify_parts(&parts, SIZE).expect("classes");
    let never = c.parts[1];
    assert!(!never.matches(0));
    assert!(c.classes.entries.iter().all(|e| !never.matches(e.class)));
    assert!(c.parts[0].matches(c.class_of(&frame(1, [100, 0, 0], 0, 0))));
}

#[test]
fn disjoint_vlans_share_one_group() {
    let parts: Vec<Vec<Cube>> = (1..=20).map(|vid| part(&vlan0(vid))).collect();
    let c = classify_parts(&parts, SIZE).expect("classes");
    assert_eq!(c.bits, 5);
    assert!(c.parts.iter().all(|p| p.mask == 0x1f));
    // Two depth prefixes per VLAN id, no intersections.
    assert_eq!(c.classes.entries.len(), 40);
    assert!(c.classes.entries.iter().all(|e| e.priority == 1));
    for vid in 0..=21 {
        let x = frame(2, [vid, 0, 0], 0, 0);
        assert_eq!(read_back(&c, &x), direct(&parts, &x), "vid {vid}");
    }
}

#[test]
fn overlapping_parts_get_their_intersection_above_both() {
    let mac = [2, 0, 0, 0, 0, 1];
    let parts = vec![part(&vlan0(100)), part(&src_mac(mac, [0xff; 6]))];
    let c = classify_parts(&parts, SIZE).expect("classes");
    assert_eq!(c.bits, 2);
    let both = c.parts[0].value | c.parts[1].value;
    // VLAN 100 at depth 1 and at depths 2-3, each with the MAC: two entries first.
    assert_eq!(c.classes.entries.len(), 5);
    assert!(
        c.classes.entries[..2]
            .iter()
            .all(|e| e.priority == 2 && e.class == both)
    );
    assert!(c.classes.entries[2..].iter().all(|e| e.priority == 1));
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
    let c = classify_parts(&parts, SIZE).expect("classes");
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
    let c = classify_parts(&[a.clone(), b.clone(), reversed, a.clone()], SIZE).expect("classes");
    let single = classify_parts(&[a, b], SIZE).expect("classes");
    assert_eq!(c.classes.entries, single.classes.entries);
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
    let first = classify_parts(&parts, SIZE).expect("classes");
    let again = classify_parts(&parts, SIZE).expect("classes");
    assert_eq!(again.classes, first.classes);
    assert_eq!(again.parts, first.parts);
}

#[test]
fn too_many_overlapping_parts_need_too_many_bits() {
    // One MAC bit each: every two of them can hold for the same frame.
    let parts: Vec<Vec<Cube>> = (0..9)
        .map(|bit| vec![Cube::of(f::SRC_MAC, 1 << bit, 1 << bit).expect("a field")])
        .collect();
    let err = classify_parts(&parts, usize::MAX).expect_err("9 bits");
    assert_eq!(
        err,
        ClassesError::TooManyBits {
            needed: 9,
            available: 8
        }
    );
    let text = err.to_string();
    assert!(text.contains("need a 9-bit class"), "{text}");
    assert!(text.contains("frame_class field has 8 bits"), "{text}");
    assert!(text.contains("exclude each other"), "{text}");
}

#[test]
fn too_many_combinations_need_too_many_entries() {
    let vlans = (1..=10).map(|vid| part(&vlan0(vid)));
    let types = (0..10).map(|t| {
        part(&FlowMatch {
            packet_type: Some(0x9000 + t),
            ..FlowMatch::default()
        })
    });
    let parts: Vec<Vec<Cube>> = vlans.chain(types).collect();
    let err = classify_parts(&parts, 100).expect_err("10 x 10 x 2");
    let ClassesError::TooManyEntries { needed, capacity } = err else {
        panic!("{err:?}");
    };
    assert!(needed > 100);
    assert_eq!(capacity, 100);
    let text = err.to_string();
    assert!(
        text.contains(&format!("make at least {needed} distinct combinations")),
        "{text}"
    );
    assert!(text.contains("frame_classes table holds 100"), "{text}");
}

#[test]
fn the_table_may_be_exactly_full() {
    let parts = vec![part(&vlan0(1)), part(&vlan0(2))];
    assert_eq!(
        classify_parts(&parts, 4).map(|c| c.classes.entries.len()),
        Ok(4)
    );
    assert!(matches!(
        classify_parts(&parts, 3),
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
    ethernet_atom(&m)
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
    let mut cubes: Vec<Cube> = crate::criteria::range_prefixes(lo as u128, hi as u128, 2)
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
    let n = 1 + rng.below(10);
    let mut parts: Vec<Vec<Cube>> = (0..n)
        .filter_map(|_| match rng.below(12) {
            0 => Some(vec![]),
            1..=5 => random_flow_part(rng),
            6..=8 => Some(random_cubes_part(rng)),
            9 | 10 => Some(random_links(rng)),
            _ => Some(vec![Cube::of(f::L4_VALID, 1, 1).expect("a field")]),
        })
        .collect();
    // Repeat one now and then: duplicates must read back alike.
    if rng.chance(4) && !parts.is_empty() {
        let again = parts[rng.below(parts.len())].clone();
        parts.push(again);
    }
    parts
}

/// A link scope of one or two of links 0-3.
fn random_links(rng: &mut Rng) -> Vec<Cube> {
    let links: Vec<u32> = (0..1 + rng.below(2)).map(|_| rng.below(4) as u32).collect();
    let m = FlowMatch::default();
    flow_atoms(&m, &links).expect("a flow on links").remove(0)
}

fn random_frame(rng: &mut Rng) -> Frame {
    let vid = |rng: &mut Rng| u128::from(rng.pick(&[0u16, 1, 2, 100, 5]));
    [
        rng.below(4) as u128,
        rng.below(4) as u128,
        vid(rng),
        vid(rng),
        vid(rng),
        rng.below(4) as u128,
        rng.pick(&FRAME_MACS),
        rng.pick(&FRAME_MACS),
        u128::from(rng.pick(&[0x0800u16, 0x86dd, 0x88cc, 0x8100])),
        rng.below(2) as u128,
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
        let c = match classify_parts(&parts, SIZE) {
            Ok(c) => c,
            Err(_) => {
                refused += 1;
                continue;
            }
        };
        classified += 1;
        assert!(c.classes.entries.len() <= SIZE);
        assert!(
            c.classes
                .entries
                .windows(2)
                .all(|w| w[0].priority >= w[1].priority)
        );
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
    let err = classify_parts(&parts, SIZE).expect_err("8000 cubes");
    assert_eq!(
        err,
        ClassesError::TooManyEntries {
            needed: 8000,
            capacity: SIZE
        }
    );
}

#[test]
fn a_flow_has_an_atom_for_its_links_its_ethernet_criteria_and_its_ports() {
    let ports = FlowMatch {
        dst_port: Some(efb_model::PortRange { lo: 53, hi: 53 }),
        ..vlan0(7)
    };
    let atoms = flow_atoms(&ports, &[3, 1]).expect("frames can match");
    assert_eq!(atoms.len(), 3, "{atoms:?}");
    let links: Vec<Vec<_>> = atoms[0].iter().map(|c| c.criteria().collect()).collect();
    assert_eq!(
        links,
        vec![vec![(f::LINK_ID, 1, 0xff)], vec![(f::LINK_ID, 3, 0xff)]],
        "one cube per link, in order"
    );
    assert_eq!(atoms[1], part(&vlan0(7)));
    assert_eq!(
        atoms[2],
        vec![Cube::of(f::L4_VALID, 1, 1).expect("a field")]
    );
    assert_eq!(
        flow_atoms(&FlowMatch::default(), &[]),
        Some(vec![]),
        "every frame"
    );
    let never = FlowMatch {
        vlan_tags: [None, Some(5), None],
        vlan_depth: Some(1),
        ..FlowMatch::default()
    };
    assert_eq!(flow_atoms(&never, &[1]), None);
}

/// The atoms of `parts`, as a flow's atoms are given to [`classify`].
fn atoms_of(parts: &[Vec<Cube>]) -> BTreeSet<Atom> {
    parts.iter().map(|p| atom(p.clone())).collect()
}

#[test]
fn kept_atoms_keep_their_bits_and_a_new_one_joins_a_group_it_excludes() {
    // Two VLAN ids take a 2-bit field (values 1 and 2): room for a third.
    let vlans: Vec<Vec<Cube>> = (1..=2).map(|vid| part(&vlan0(vid))).collect();
    let first = classify(&atoms_of(&vlans), &Layout::default(), SIZE).expect("classes");
    assert!(!first.relaid);
    let mut more = vlans.clone();
    more.push(part(&vlan0(3)));
    let second = classify(&atoms_of(&more), &first.layout, SIZE).expect("classes");
    assert!(!second.relaid);
    for vlan in &vlans {
        let atom = atom(vlan.clone());
        assert_eq!(second.layout.slot(&atom), first.layout.slot(&atom), "kept");
    }
    let new = second.layout.slot(&atom(more[2].clone())).expect("placed");
    let group = first
        .layout
        .slot(&atom(vlans[0].clone()))
        .expect("placed")
        .mask;
    assert_eq!(new.mask, group, "VLAN 3 excludes 1 and 2: their group");
    assert_eq!(second.layout.bits(), first.layout.bits(), "no new bits");
}

#[test]
fn a_value_freed_by_a_commit_is_not_given_in_that_commit() {
    let (a, b, c) = (part(&vlan0(1)), part(&vlan0(2)), part(&vlan0(3)));
    let first = classify(&atoms_of(&[a.clone(), b.clone()]), &Layout::default(), SIZE);
    let first = first.expect("classes");
    let freed = first.layout.slot(&atom(b.clone())).expect("placed");
    // b goes and c comes in one commit: the old entries of b's flows still match b's
    // value until they are deleted, so c must not have it.
    let second = classify(&atoms_of(&[a.clone(), c.clone()]), &first.layout, SIZE);
    let second = second.expect("classes");
    let placed = second.layout.slot(&atom(c.clone())).expect("placed");
    assert_ne!(placed, freed);
    // A commit later, nothing matches it any more: it may be given again.
    let d = part(&vlan0(4));
    let third = classify(&atoms_of(&[a, c, d.clone()]), &second.layout, SIZE);
    let third = third.expect("classes");
    assert_eq!(third.layout.slot(&atom(d)), Some(freed));
}

#[test]
fn when_the_bits_run_out_everything_is_laid_out_afresh() {
    // VLAN ids added one commit at a time: new fields get room for more, so more of them
    // fit than the eight a bit each would give; when one finds no room the layout starts
    // again, all of them in one field.
    let mut parts = Vec::new();
    let mut layout = Layout::default();
    let relaid_at = (1..=16)
        .find_map(|vid| {
            parts.push(part(&vlan0(vid)));
            let c = classify(&atoms_of(&parts), &layout, SIZE).expect("classes");
            if c.relaid {
                return Some((vid, c));
            }
            layout = c.layout;
            None
        })
        .expect("the bits run out");
    let (vid, c) = relaid_at;
    assert!(vid > 8, "relaid at VLAN {vid}");
    assert_eq!(layout.bits(), 8, "the layout before used every bit");
    assert_eq!(c.layout.bits(), field_width(vid as usize));
    let x = frame(1, [vid.into(), 0, 0], 0, 0);
    let m = c
        .layout
        .class_match(&[atom(part(&vlan0(vid)))])
        .expect("placed");
    assert!(m.matches(c.class_of(&x)));
    assert!(!m.matches(c.class_of(&frame(1, [1, 0, 0], 0, 0))));
}

#[test]
fn a_layout_survives_a_restart() {
    let parts = vec![
        part(&vlan0(1)),
        part(&src_mac([2, 0, 0, 0, 0, 1], [0xff; 6])),
    ];
    let c = classify(&atoms_of(&parts), &Layout::default(), SIZE).expect("classes");
    let saved = serde_json::to_string(&c.layout).expect("JSON");
    let read: Layout = serde_json::from_str(&saved).expect("read back");
    assert_eq!(read, c.layout);
    let again = classify(&atoms_of(&parts), &read, SIZE).expect("classes");
    assert_eq!(again.entries, c.entries);
}

/// Check 3: series of random commits, each from the layout the one before left: every
/// frame reads back exactly the parts it meets, and most commits keep the layout.
#[test]
fn commit_after_commit_every_frame_reads_back_its_parts() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let (mut kept, mut relaid) = (0, 0);
    for _series in 0..10 {
        let mut parts: Vec<Vec<Cube>> = Vec::new();
        let mut layout = Layout::default();
        for _commit in 0..20 {
            // Take one or two parts away, add one to three.
            for _ in 0..rng.below(3) {
                if !parts.is_empty() {
                    let i = rng.below(parts.len());
                    parts.remove(i);
                }
            }
            for _ in 0..1 + rng.below(3) {
                match rng.below(3) {
                    0 => parts.push(random_links(&mut rng)),
                    _ => parts.extend(random_flow_part(&mut rng)),
                }
            }
            let Ok(c) = classify(&atoms_of(&parts), &layout, SIZE) else {
                parts.clear();
                layout = Layout::default();
                continue;
            };
            if c.relaid {
                relaid += 1;
            } else {
                kept += 1;
            }
            for _ in 0..300 {
                let x = random_frame(&mut rng);
                let class = c.class_of(&x);
                for p in &parts {
                    let m = c.layout.class_match(&[atom(p.clone())]).expect("placed");
                    let meets = p.iter().any(|cube| cube.matches(&x));
                    assert_eq!(m.matches(class), meets, "{p:?} {x:?}");
                }
            }
            layout = c.layout;
        }
    }
    assert!(
        kept > 3 * relaid,
        "{kept} commits kept the layout, {relaid} relaid"
    );
}
