//! What `commit check` pays to say how many buckets a change moves (`bucket_moves`): two
//! bucket tables per changed unit and a comparison, for the largest units the chip takes.
//! And what its forecast of flow changes (`flow_consequences`) pays on large flow tables.
//! Prints figures; `cargo bench -p efb-balancing` (EFB_BENCH_QUICK=1: one round).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use efb_balancing::{LiveState, bucket_moves, flow_consequences};
use efb_model::{Action, Config, Flow, FlowMatch, Pair, Prefix, Unit};

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
    forecast(rounds);
}

/// Flow `i`: one IPv4 host to the unit, priority by index (so none ties).
fn host_flow(i: usize) -> Flow {
    let addr = Ipv4Addr::from(0x0a00_0000 + i as u32);
    Flow {
        name: format!("f{i}"),
        priority: 1000 + i as u32,
        direction: Default::default(),
        links: Vec::new(),
        matches: FlowMatch {
            dst_ipv4: Some(Prefix {
                addr: IpAddr::V4(addr),
                len: 32,
            }),
            ..FlowMatch::default()
        },
        action: Action::ToUnit("dpi-0".into()),
        description: None,
    }
}

/// One flow added to `flows` host flows: below every one and overlapping each (a catch-all
/// to bypass: every flow is named or scanned), or a host of its own (overlapping none).
fn forecast(rounds: usize) {
    for flows in [10_000, 100_000] {
        let mut before = site(1, 8, 16);
        for i in 0..flows {
            let flow = host_flow(i);
            before.flows.insert(flow.name.clone(), Arc::new(flow));
        }
        let lonely = host_flow(flows + 1);
        let catch_all = Flow {
            name: "rest".into(),
            priority: 1,
            direction: Default::default(),
            links: Vec::new(),
            matches: FlowMatch::default(),
            action: Action::Bypass,
            description: None,
        };
        for (what, added) in [
            ("a host of its own", lonely),
            ("a catch-all under all", catch_all),
        ] {
            let mut after = before.clone();
            after.flows.insert(added.name.clone(), Arc::new(added));
            let mut times = Vec::with_capacity(rounds);
            let mut said = 0;
            for _ in 0..rounds {
                let started = Instant::now();
                said = flow_consequences(&before, &after).len();
                times.push(started.elapsed());
            }
            times.sort();
            println!(
                "forecast, {flows} flows, one flow added ({what}): {said} sentence(s); p50 {:.2} ms, max {:.2} ms",
                times[times.len() / 2].as_secs_f64() * 1e3,
                times[times.len() - 1].as_secs_f64() * 1e3
            );
        }
    }
}
