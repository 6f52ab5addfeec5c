//! A dead pair must move only its own sessions (MODEL.md step 6): every other bucket keeps
//! its slot, so no live session changes filter or core.
#![allow(clippy::unwrap_used)]

use efb_balancing::{UnitLayout, bucket_table};

const LAYOUTS: [(usize, usize); 7] = [(1, 1), (2, 1), (3, 4), (4, 8), (5, 7), (8, 17), (16, 32)];

fn dead_sets(pairs: usize) -> Vec<Vec<usize>> {
    let singles = (0..pairs).map(|d| vec![d]);
    let doubles = (0..pairs).flat_map(|a| (a + 1..pairs).map(move |b| vec![a, b]));
    singles.chain(doubles).collect()
}

/// Written independently of the library: live slots listed by brute force.
fn expected(layout: UnitLayout, live: &[bool], rebalance: bool, b: usize) -> Option<usize> {
    let s = layout.slots();
    let home = b % s;
    if live[home / layout.cores] {
        return Some(home);
    }
    let live_slots: Vec<usize> = (0..s).filter(|&x| live[x / layout.cores]).collect();
    let dead_slots: Vec<usize> = (0..s).filter(|&x| !live[x / layout.cores]).collect();
    if !rebalance || live_slots.is_empty() {
        return None;
    }
    let j = dead_slots.iter().position(|&x| x == home).unwrap();
    let n = (b / s) * dead_slots.len() + j;
    Some(live_slots[n % live_slots.len()])
}

fn check(layout: UnitLayout, dead: &[usize]) {
    let mut live = vec![true; layout.pairs];
    for &d in dead {
        live[d] = false;
    }
    let all_live = bucket_table(layout, &vec![true; layout.pairs], false);
    let kept = bucket_table(layout, &live, false);
    let moved = bucket_table(layout, &live, true);
    for b in 0..layout.buckets() {
        let home = all_live[b].unwrap();
        let home_dead = dead.contains(&(home / layout.cores));
        if home_dead {
            assert_eq!(kept[b], None, "{layout:?} dead {dead:?} bucket {b}");
            let slot = moved[b];
            if let Some(slot) = slot {
                assert!(
                    live[slot / layout.cores],
                    "{layout:?} {dead:?} {b} -> dead {slot}"
                );
            }
        } else {
            assert_eq!(kept[b], Some(home), "{layout:?} dead {dead:?} bucket {b}");
            assert_eq!(moved[b], Some(home), "{layout:?} dead {dead:?} bucket {b}");
        }
        assert_eq!(
            moved[b],
            expected(layout, &live, true, b),
            "{layout:?} {dead:?} {b}"
        );
        assert_eq!(kept[b], layout.slot_for_bucket(b, &live, false));
        assert_eq!(moved[b], layout.slot_for_bucket(b, &live, true));
    }
}

#[test]
fn dead_pairs_move_only_their_buckets() {
    for (pairs, cores) in LAYOUTS {
        let layout = UnitLayout { pairs, cores };
        for dead in dead_sets(pairs) {
            check(layout, &dead);
        }
    }
}

#[test]
fn exact_remap_on_a_small_layout() {
    // 3 pairs x 2 cores: S = 6, M = 256. Pair 1 (slots 2, 3) dead: D = 2 (slot 2 is dead
    // number 0, slot 3 number 1); live slots [0, 1, 4, 5], L = 4. n = (b / 6) * 2 + j.
    let layout = UnitLayout { pairs: 3, cores: 2 };
    let live = [true, false, true];
    // Bucket 2: round 0, j 0 -> n 0 -> slot 0. Bucket 3: round 0, j 1 -> n 1 -> slot 1.
    // Bucket 8: round 1, j 0 -> n 2 -> slot 4. Bucket 9: n 3 -> slot 5. Bucket 14: n 4 ->
    // slot 0 again. Bucket 7 is live slot 1's own.
    for (bucket, slot) in [(2, 0), (3, 1), (8, 4), (9, 5), (14, 0), (15, 1), (7, 1)] {
        assert_eq!(
            layout.slot_for_bucket(bucket, &live, true),
            Some(slot),
            "{bucket}"
        );
    }
    assert_eq!(layout.slot_for_bucket(2, &live, false), None);
    assert_eq!(layout.slot_for_bucket(7, &live, false), Some(1));
}

/// MODEL.md's promise for 16 pairs x 32 cores: with 1 to 15 pairs dead (the first ones, the
/// last ones, every other one), no live slot takes more than ceil(dead buckets / L) extra.
#[test]
fn dead_buckets_spread_evenly_over_the_live_slots() {
    let layout = UnitLayout {
        pairs: 16,
        cores: 32,
    };
    for dead_count in 1..16 {
        let first: Vec<usize> = (0..dead_count).collect();
        let last: Vec<usize> = (16 - dead_count..16).collect();
        let spread: Vec<usize> = (0..16)
            .step_by(2)
            .chain((1..16).step_by(2))
            .take(dead_count)
            .collect();
        for dead in [first, last, spread] {
            let mut live = vec![true; 16];
            for &d in &dead {
                live[d] = false;
            }
            let all = bucket_table(layout, &[true; 16], false);
            let moved = bucket_table(layout, &live, true);
            let mut extra = vec![0usize; layout.slots()];
            let mut dead_buckets = 0usize;
            for (home, now) in all.iter().zip(&moved) {
                if home != now {
                    dead_buckets += 1;
                    extra[now.unwrap()] += 1;
                }
            }
            let live_slots = (16 - dead.len()) * 32;
            let bound = dead_buckets.div_ceil(live_slots);
            let most = extra.iter().max().copied().unwrap();
            assert!(
                most <= bound,
                "dead {dead:?}: a live slot took {most} extra buckets, bound {bound}"
            );
        }
    }
}

#[test]
fn nothing_live_or_nothing_configured_maps_nowhere() {
    let layout = UnitLayout { pairs: 3, cores: 4 };
    for rebalance in [false, true] {
        assert!(
            bucket_table(layout, &[false; 3], rebalance)
                .iter()
                .all(Option::is_none)
        );
        let empty = UnitLayout { pairs: 0, cores: 4 };
        assert!(
            bucket_table(empty, &[], rebalance)
                .iter()
                .all(Option::is_none)
        );
        assert_eq!(empty.slot_for_bucket(0, &[], rebalance), None);
    }
}

/// A liveness slice shorter than the pair list leaves the missing pairs down rather than
/// sending to a pair nobody reported on.
#[test]
fn missing_liveness_counts_as_down() {
    let layout = UnitLayout { pairs: 2, cores: 1 };
    assert_eq!(layout.slot_for_bucket(1, &[true], false), None);
    assert_eq!(layout.slot_for_bucket(1, &[true], true), Some(0));
    assert_eq!(layout.slot_for_bucket(0, &[true], false), Some(0));
}
