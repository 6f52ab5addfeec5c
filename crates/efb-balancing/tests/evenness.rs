//! Spreading evenly over filters and cores is the device's job; these bounds are what the
//! 16-buckets-per-slot table size promises.
#![allow(clippy::unwrap_used)]

use std::net::{IpAddr, Ipv4Addr};

use efb_balancing::{Session, UnitLayout, bucket_table, session_hash};
use efb_model::BalancingMethod::Layer4;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn layouts() -> Vec<UnitLayout> {
    let mut all: Vec<UnitLayout> = (1..=16)
        .flat_map(|pairs| (1..=32).map(move |cores| UnitLayout { pairs, cores }))
        .collect();
    all.extend(
        [(8, 17), (10, 31), (20, 63), (64, 64), (127, 255)]
            .map(|(pairs, cores)| UnitLayout { pairs, cores }),
    );
    all
}

fn ratio_max_to_mean(counts: &[usize]) -> f64 {
    let mean = counts.iter().sum::<usize>() as f64 / counts.len() as f64;
    *counts.iter().max().unwrap() as f64 / mean
}

#[test]
fn table_sizes() {
    let m = |pairs, cores| UnitLayout { pairs, cores }.buckets();
    assert_eq!(m(0, 1), 256);
    assert_eq!(m(1, 1), 256);
    assert_eq!(m(4, 4), 256);
    assert_eq!(m(17, 1), 512);
    assert_eq!(m(8, 17), 4096);
    assert_eq!(m(16, 32), 8192);
    assert_eq!(m(64, 64), 65536);
    assert_eq!(m(127, 255), 65536);
    assert_eq!(m(usize::MAX, 2), 65536);
}

#[test]
fn pair_core_and_bucket_of() {
    let l = UnitLayout { pairs: 3, cores: 5 };
    assert_eq!(l.slots(), 15);
    assert_eq!(l.pair_core(0), (0, 0));
    assert_eq!(l.pair_core(4), (0, 4));
    assert_eq!(l.pair_core(5), (1, 0));
    assert_eq!(l.pair_core(14), (2, 4));
    assert_eq!(l.bucket_of(0xdead_beef), 0xef);
    assert_eq!(
        UnitLayout {
            pairs: 8,
            cores: 17
        }
        .bucket_of(0xdead_beef),
        0xeef
    );
}

/// All live: bucket b is slot b mod S, and no slot gets more than 7% above the mean (the
/// table promises 1 + 1/16 at worst while S <= 4096).
#[test]
fn all_live_tables_are_even() {
    let mut worst = (0.0, UnitLayout { pairs: 0, cores: 0 });
    for layout in layouts() {
        let s = layout.slots();
        let table = bucket_table(layout, &vec![true; layout.pairs], false);
        assert_eq!(table.len(), layout.buckets());
        let mut counts = vec![0usize; s];
        for (b, slot) in table.iter().enumerate() {
            assert_eq!(*slot, Some(b % s));
            counts[slot.unwrap()] += 1;
        }
        let ratio = ratio_max_to_mean(&counts);
        if s > 4096 {
            // The table stops growing at 65536 buckets: fewer than 16 per slot.
            println!("beyond the 16-per-slot range: {ratio:.4} for {layout:?}");
            continue;
        }
        assert!(ratio <= 1.07, "{layout:?}: {ratio}");
        if ratio > worst.0 {
            worst = (ratio, layout);
        }
    }
    println!(
        "worst max/mean buckets per slot: {:.4} for {:?}",
        worst.0, worst.1
    );
}

/// Real traffic goes through the hash as well as the table: random sessions over an 8 x 17
/// unit. The bound allows for sampling noise (about 3% standard deviation per slot here).
#[test]
fn random_sessions_spread_evenly() {
    let layout = UnitLayout {
        pairs: 8,
        cores: 17,
    };
    let table = bucket_table(layout, &[true; 8], false);
    let mut rng = StdRng::seed_from_u64(42);
    let mut slots = vec![0usize; layout.slots()];
    let mut pairs = vec![0usize; layout.pairs];
    for _ in 0..400_000 {
        let s = Session {
            src: IpAddr::V4(Ipv4Addr::new(100, 64, rng.random(), rng.random())),
            dst: IpAddr::V4(Ipv4Addr::from(rng.random::<u32>())),
            ip_proto: 6,
            src_port: rng.random_range(1024..=65535),
            dst_port: 443,
            link: None,
        };
        let slot = table[layout.bucket_of(session_hash(Layer4, &s).unwrap())].unwrap();
        slots[slot] += 1;
        pairs[layout.pair_core(slot).0] += 1;
    }
    let (slot_ratio, pair_ratio) = (ratio_max_to_mean(&slots), ratio_max_to_mean(&pairs));
    println!("random sessions: max/mean per slot {slot_ratio:.4}, per pair {pair_ratio:.4}");
    assert!(slot_ratio <= 1.15, "{slot_ratio}");
    assert!(pair_ratio <= 1.05, "{pair_ratio}");
    let min = *slots.iter().min().unwrap() as f64;
    assert!(min >= 0.85 * 400_000.0 / 136.0, "{min}");
}
