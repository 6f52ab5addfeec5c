//! Commit latency and load time on large configurations. Prints figures; run with
//! `cargo bench -p efb-datastore` (release build, real sled files in a temporary directory).
//!
//! The configuration: every one of the box's 128 lane ports in use (32 links, 16 units of
//! 2 pairs: the most links and pairs the 32 x 4 lanes allow together), a liveness profile,
//! and N flows each matching a /32, a protocol and a port, on one link, sent to a unit.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use efb_datastore::{CommitRequest, Datastore, LoadMode, OpenOptions};
use efb_yang::Schema;

const LINKS: usize = 32;
const UNITS: usize = 16;
const PAIRS_PER_UNIT: usize = 2;

fn site_json(flows: usize) -> String {
    let mut ports = Vec::new();
    let mut lane_ports = (1..=32u32).flat_map(|n| (0..4u32).map(move |l| (n, l)));
    // Filter-facing ports carry the balancer's 4-byte header on top of the operator's MTU.
    let mut next_pair = |ports: &mut Vec<serde_json::Value>, mtu: u32| {
        let mut names = Vec::new();
        for _ in 0..2 {
            let (n, l) = lane_ports.next().expect("128 lane ports");
            let name = format!("p{n}-{l}");
            ports.push(serde_json::json!({"name": name, "number": n, "lane": l, "speed": "25g", "mtu": mtu}));
            names.push(name);
        }
        (names[0].clone(), names[1].clone())
    };
    let links: Vec<_> = (0..LINKS)
        .map(|i| {
            let (lan, wan) = next_pair(&mut ports, 9000);
            serde_json::json!({"name": format!("l{i}"), "lan-port": lan, "wan-port": wan})
        })
        .collect();
    let units: Vec<_> = (0..UNITS)
        .map(|u| {
            let pairs: Vec<_> = (0..PAIRS_PER_UNIT)
                .map(|p| {
                    let (lan, wan) = next_pair(&mut ports, 9216);
                    serde_json::json!({"name": format!("u{u}-p{p}"), "lan-port": lan, "wan-port": wan})
                })
                .collect();
            serde_json::json!({"name": format!("u{u}"), "cores": 15, "liveness-profile": "lp", "pair": pairs})
        })
        .collect();
    let flows: Vec<_> = (0..flows)
        .map(|i| {
            serde_json::json!({
                "name": format!("flow{i}"),
                "priority": 1000 + i,
                "links": [format!("l{}", i % LINKS)],
                "match": {
                    "dst-ipv4": format!("10.{}.{}.{}/32", (i >> 16) & 255, (i >> 8) & 255, i & 255),
                    "ip-proto": 6,
                    "dst-port": i % 65535 + 1
                },
                "action": {"to-ecofilter": {"ecofilter-unit": format!("u{}", i % UNITS)}}
            })
        })
        .collect();
    serde_json::json!({
        "ecofilter-balancer:ports": {"port": ports},
        "ecofilter-balancer:ecofilter-balancer": {"link": links, "ecofilter-unit": units, "flow": flows},
        "ecofilter-balancer:liveness": {"profile": [{"name": "lp"}]}
    })
    .to_string()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// A datastore holding the site with `flows` flows, committed, and how long its load and
/// validation took.
fn loaded_site(
    schema: &Arc<Schema>,
    dir: &std::path::Path,
    flows: usize,
) -> (Datastore, u64, Duration) {
    let mut options = OpenOptions::new(dir);
    options.boot_id = Some("bench".into());
    let mut ds = Datastore::open(schema.clone(), options).unwrap();
    let s = ds.open_session("bench");
    let json = site_json(flows);
    let start = Instant::now();
    let loaded = ds.load_json(s, LoadMode::Override, &json).unwrap();
    assert!(loaded.incomplete.is_empty(), "{:?}", loaded.incomplete);
    let load = start.elapsed();
    let check = ds
        .commit(
            s,
            CommitRequest {
                check_only: true,
                ..Default::default()
            },
        )
        .unwrap();
    let load_and_validate = start.elapsed();
    if std::env::var_os("EFB_BENCH_DETAIL").is_some() {
        eprintln!(
            "{flows} flows: load {} + check {}",
            ms(load),
            ms(load_and_validate - load)
        );
        // The part of the load that reads the JSON for repeated members and trailing bytes.
        let start = Instant::now();
        efb_yang::input::check_json(&json).unwrap();
        eprintln!(
            "{flows} flows: JSON check {} of the load ({} MiB)",
            ms(start.elapsed()),
            json.len() >> 20
        );
    }
    // The generated flows are one-direction, as automation loads host rules: the only
    // warnings are that their sessions are split (or, past the budget, not checked).
    let unexpected: Vec<_> = check
        .warnings
        .iter()
        .filter(|w| {
            !w.message.contains("sessions are split") && !w.message.contains("too many to check")
        })
        .collect();
    assert!(unexpected.is_empty(), "{unexpected:?}");
    ds.commit(s, CommitRequest::default()).unwrap();
    (ds, s, load_and_validate)
}

/// Times the commits of `rounds` edits, `edit(round)` giving each one's set line; sorted.
fn commit_times(
    ds: &mut Datastore,
    session: u64,
    rounds: usize,
    edit: impl Fn(usize) -> String,
) -> Vec<Duration> {
    let mut times = Vec::with_capacity(rounds);
    for round in 0..rounds {
        ds.edit_lines(session, &edit(round)).unwrap();
        let start = Instant::now();
        let outcome = ds.commit(session, CommitRequest::default()).unwrap();
        times.push(start.elapsed());
        assert!(outcome.has_changes());
    }
    times.sort();
    times
}

/// A one-flow change (a flow's port) at `round`.
fn flow_edit(flows: usize) -> impl Fn(usize) -> String {
    move |round| {
        let flow = (round * 7919) % flows;
        format!(
            "set ecofilter-balancer flow flow{flow} match dst-port {}",
            (round % 60000) + 2
        )
    }
}

/// The set line of an edit at a round.
type Edit = Box<dyn Fn(usize) -> String>;

/// One leaf of each kind of configuration, changed at every round.
fn kinds(flows: usize) -> Vec<(&'static str, Edit)> {
    vec![
        ("flow (match dst-port)", Box::new(flow_edit(flows))),
        (
            "port (description)",
            Box::new(|r| format!("set ports port p{}-0 description \"d{r}\"", 1 + r % 32)),
        ),
        (
            "link (description)",
            Box::new(|r| {
                format!(
                    "set ecofilter-balancer link l{} description \"d{r}\"",
                    r % LINKS
                )
            }),
        ),
        (
            "unit (cores)",
            Box::new(|r| {
                format!(
                    "set ecofilter-balancer ecofilter-unit u{} cores {}",
                    r % UNITS,
                    16 + r % 200
                )
            }),
        ),
        (
            "pair (description)",
            Box::new(|r| {
                let u = r % UNITS;
                format!(
                    "set ecofilter-balancer ecofilter-unit u{u} pair u{u}-p0 description \"d{r}\""
                )
            }),
        ),
        (
            "liveness profile (interval)",
            Box::new(|r| format!("set liveness profile lp interval {}", 101 + r % 50)),
        ),
        (
            "balancing method",
            Box::new(|r| {
                format!(
                    "set ecofilter-balancer balancing-method {}",
                    ["layer-4", "layer-3"][r % 2]
                )
            }),
        ),
    ]
}

fn row(what: &str, times: &[Duration], extra: &str) {
    println!(
        "{what:>28}  {:>10}  {:>10}  {:>10}  {extra}",
        ms(percentile(times, 0.5)),
        ms(percentile(times, 0.99)),
        ms(*times.last().unwrap())
    );
}

/// One-leaf commits of each kind against a one-flow commit, in the same run.
fn bench_kinds(schema: &Arc<Schema>, flows: usize, rounds: usize) {
    let dir = tempfile::tempdir().unwrap();
    let (mut ds, s, _) = loaded_site(schema, dir.path(), flows);
    println!("\none-leaf commit by kind, {flows} flows ({rounds} commits each)");
    println!(
        "{:>28}  {:>10}  {:>10}  {:>10}  p50 / flow's",
        "kind", "p50", "p99", "max"
    );
    let mut flow_p50 = None;
    for (kind, edit) in kinds(flows) {
        let times = commit_times(&mut ds, s, rounds, edit);
        let p50 = percentile(&times, 0.5);
        let base = *flow_p50.get_or_insert(p50);
        row(
            kind,
            &times,
            &format!("{:.2}x", p50.as_secs_f64() / base.as_secs_f64()),
        );
    }
}

fn main() {
    // ./test.sh runs one quick round to keep the benchmark working.
    let quick =
        std::env::args().any(|a| a == "--test") || std::env::var_os("EFB_BENCH_QUICK").is_some();
    let schema = Arc::new(Schema::load().unwrap());
    // EFB_BENCH_SIZES="100000:20,100:5" picks the sizes and rounds (for profiling one size).
    let chosen: Option<Vec<(usize, usize)>> = std::env::var("EFB_BENCH_SIZES").ok().map(|v| {
        v.split(',')
            .filter_map(|p| p.split_once(':'))
            .filter_map(|(f, r)| Some((f.parse().ok()?, r.parse().ok()?)))
            .collect()
    });
    let default: &[(usize, usize)] = if quick {
        &[(100, 5)]
    } else {
        &[(100, 200), (10_000, 200), (100_000, 100)]
    };
    let sizes = chosen.as_deref().unwrap_or(default);
    println!("one-flow commit latency ({LINKS} links, {UNITS} units x {PAIRS_PER_UNIT} pairs)");
    println!(
        "{:>8}  {:>12}  {:>10}  {:>10}  {:>10}",
        "flows", "load+valid.", "p50", "p99", "max"
    );
    for &(flows, rounds) in sizes {
        let dir = tempfile::tempdir().unwrap();
        let (mut ds, s, load) = loaded_site(&schema, dir.path(), flows);
        let times = commit_times(&mut ds, s, rounds, flow_edit(flows));
        println!(
            "{flows:>8}  {:>12}  {:>10}  {:>10}  {:>10}",
            ms(load),
            ms(percentile(&times, 0.5)),
            ms(percentile(&times, 0.99)),
            ms(*times.last().unwrap())
        );
    }
    let kind_sizes: &[(usize, usize)] = if quick {
        &[(100, 5)]
    } else {
        &[(2_048, 100), (10_000, 100)]
    };
    if chosen.is_none() {
        for &(flows, rounds) in kind_sizes {
            bench_kinds(&schema, flows, rounds);
        }
    }
    println!("peak memory (VmHWM): {:.0} MiB", peak_rss_mib());
}
