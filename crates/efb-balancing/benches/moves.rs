//! What `commit check` pays to say how many buckets a change moves (`bucket_moves`): two
//! bucket tables per changed unit and a comparison, for the largest units the chip takes.
//! Prints figures; `cargo bench -p efb-balancing` (EFB_BENCH_QUICK=1: one round).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use efb_balancing::{LiveState, bucket_moves};
use efb_model::{Config, Pair, Unit};

fn unit(name: &str, pairs: usize, cores: u16) -> Unit {
    Unit {
        name: name.into(),
        cores,
        cores_set: true,
        liveness_profile: None,
        rebalance: true,
        pairs: (0..pairs)
            .map(|i| Pair {
                name: format!("p{i}"),
                lan_port: format!("l{i}"),
                wan_port: format!("w{i}"),
                description: None,
            })
            .collect(),
        description: None,
    }
}

fn site(units: usize, pairs: usize, cores: u16) -> Config {
    let mut config = Config::default();
    for u in 0..units {
        let unit = unit(&format!("dpi-{u}"), pairs, cores);
        config.units.insert(unit.name.clone(), unit);
    }
    config
}

fn main() {
    let rounds = if std::env::var_os("EFB_BENCH_QUICK").is_some() {
        1
    } else {
        20
    };
    // Two dead pairs a unit, so that the rebalanced tables are what is compared.
    let mut live = LiveState::all_up();
    for u in 0..16 {
        for p in ["p3", "p7"] {
            live.down_pairs.insert((format!("dpi-{u}"), p.to_string()));
        }
    }
    // The last: no unit changes (a flow commit), what every commit pays.
    for (units, pairs, cores, more) in [
        (1, 8, 17, 18),
        (16, 8, 32, 31),
        (16, 16, 16, 15),
        (16, 16, 16, 16),
    ] {
        let (before, after) = (site(units, pairs, cores), site(units, pairs, more));
        let mut times = Vec::with_capacity(rounds);
        let mut moved = 0;
        for _ in 0..rounds {
            let started = Instant::now();
            let moves = bucket_moves(&before, &after, &live);
            times.push(started.elapsed());
            moved = moves.iter().map(|m| m.moved).sum::<usize>();
        }
        times.sort();
        println!(
            "bucket moves, {units} unit(s) x {pairs} pairs, cores {cores} -> {more}: {moved} buckets move; p50 {:.2} ms, max {:.2} ms",
            times[times.len() / 2].as_secs_f64() * 1e3,
            times[times.len() - 1].as_secs_f64() * 1e3
        );
    }
}
