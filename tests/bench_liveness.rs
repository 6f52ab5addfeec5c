//! Liveness costs (release build, real efbd and efb-target): the CPU keep-alives take in
//! efbd and in the chip's emulation, the packets through the CPU port, and how long after a
//! filter dies the chip bypasses it. Prints figures: `cargo bench -p efb-tests --bench
//! liveness`.
//!
//! 100 pairs cannot be cabled: the box has 128 filter-facing lanes at most, so the largest
//! site is 63 pairs (one link on the first port's lanes); 24 pairs is a mid-sized one.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant, SystemTime};

use efb_cli::client::Client;
use efb_mgmt_proto::v1::CommitRequest;
use efb_target_proto as pb;
use efb_tests::chip_io::{Chip, port};
use efb_tests::figures::{cpu_time, summary};
use efb_tests::{Daemon, Target};

/// Lane ports of physical port `n`.
fn lanes(n: u32) -> [String; 4] {
    [0, 1, 2, 3].map(|l| format!("p{n}-{l}"))
}

/// The unit under test: how many pairs (at most 63), cores, and whether dead pairs'
/// buckets are rebalanced.
#[derive(Clone, Copy)]
struct Shape {
    pairs: usize,
    cores: u16,
    rebalance: bool,
}

/// The largest site the box can cable: 63 pairs of 16 cores, no rebalance.
const LARGEST: Shape = Shape {
    pairs: 63,
    cores: 16,
    rebalance: false,
};

/// One link on p1-0/p1-1, then pairs on every other lane (up to 63).
fn site(interval_ms: u32, down_count: u32, shape: Shape) -> (String, Vec<(String, String)>) {
    let mut lines = vec![
        "set ecofilter-balancer link l1 lan-port p1-0 wan-port p1-1".to_string(),
        format!(
            "set liveness profile bench initial-delay 200 interval {interval_ms} probes-down-count {down_count} probes-up-count 3 active-pairs 1"
        ),
        format!(
            "set ecofilter-balancer ecofilter-unit u1 cores {} rebalance {} liveness-profile bench",
            shape.cores, shape.rebalance
        ),
    ];
    let mut pairs = Vec::new();
    for n in 1..=32u32 {
        for (l, name) in lanes(n).iter().enumerate() {
            lines.push(format!(
                "set ports port {name} number {n} lane {l} speed 10g"
            ));
        }
        let [a, b, c, d] = lanes(n);
        if n > 1 {
            pairs.push((a, b));
        }
        pairs.push((c, d));
    }
    pairs.truncate(shape.pairs);
    for (i, (lan, wan)) in pairs.iter().enumerate() {
        lines.push(format!(
            "set ecofilter-balancer ecofilter-unit u1 pair q{i} lan-port {lan} wan-port {wan}"
        ));
    }
    (lines.join("\n"), pairs)
}

struct Running {
    _dir: tempfile::TempDir,
    target: Target,
    daemon: Daemon,
    client: Client,
    log: std::path::PathBuf,
}

fn start(interval_ms: u32, down_count: u32, shape: Shape) -> (Running, Vec<(String, String)>) {
    let dir = tempfile::tempdir().unwrap();
    let target = Target::start(&["--capture-limit", "0", "--metrics-listen", "127.0.0.1:0"]);
    let log = dir.path().join("efbd.log");
    let daemon = Daemon::start_logging(
        &dir.path().join("datastore"),
        &[
            "--p4runtime",
            &target.address,
            "--no-gnmi",
            "--metrics-listen",
            "127.0.0.1:0",
        ],
        &log,
    );
    let mut client = Client::connect(&daemon.address, "bench").unwrap();
    wait(|| client.status().unwrap().chip.starts_with("in sync"));
    let (lines, pairs) = site(interval_ms, down_count, shape);
    client.edit_lines(&lines).unwrap();
    client.commit(CommitRequest::default()).unwrap();
    let running = Running {
        _dir: dir,
        target,
        daemon,
        client,
        log,
    };
    (running, pairs)
}

fn wait(mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < Duration::from_secs(30), "timed out");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn up_pairs(client: &mut Client) -> usize {
    let text = client
        .get(
            efb_mgmt_proto::v1::Datastore::Operational,
            "/ecofilter-balancer:ecofilter-balancer/ecofilter-unit[name='u1']/state/active-pairs",
            efb_mgmt_proto::v1::Format::Json,
            false,
        )
        .unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    doc["ecofilter-balancer:ecofilter-balancer"]["ecofilter-unit"][0]["state"]["active-pairs"]
        .as_u64()
        .unwrap_or(0) as usize
}

/// Share of one core used by `pid` over `window`.
fn cpu_share(pid: u32, window: Duration) -> f64 {
    let before = cpu_time(pid);
    std::thread::sleep(window);
    (cpu_time(pid) - before).as_secs_f64() / window.as_secs_f64()
}

/// A counter of the target's metrics (0 when it is not there).
fn target_counter(address: &str, name: &str) -> u64 {
    let (_, text) = efb_tests::http_get(address, "/metrics").expect("efb-target serves metrics");
    text.lines()
        .find_map(|line| {
            line.strip_prefix(name)?
                .strip_prefix(' ')?
                .trim()
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

/// What keep-alives cost with `pairs` pairs probed every `interval_ms`: efbd's and
/// efb-target's CPU, the packets per second through the CPU port (packet-outs to the chip,
/// packet-ins from it), and the control path's round trip (a round's packet-out to the read
/// that found it taken in).
fn keepalive_cpu(pairs: usize, interval_ms: u32, window: Duration) {
    let shape = Shape { pairs, ..LARGEST };
    let (mut run, pairs) = start(interval_ms, 3, shape);
    // Every pair probed and up (init counts as live too: wait for the first verdicts).
    std::thread::sleep(Duration::from_millis(200 + u64::from(interval_ms) * 5));
    wait(|| up_pairs(&mut run.client) == pairs.len());
    let metrics = run.daemon.metrics.clone().unwrap();
    let chip = run.target.metrics.clone().unwrap();
    let packets = || {
        (
            target_counter(&chip, "efb_target_packet_outs_total"),
            target_counter(&chip, "efb_target_packet_ins_total"),
        )
    };
    let before = round_trips(&metrics);
    let (outs, ins) = packets();
    let efbd = cpu_share(run.daemon.pid(), window);
    let target = cpu_share(run.target.pid(), window);
    let (outs_after, ins_after) = packets();
    let during = round_trips(&metrics).since(&before);
    // The CPU shares were measured one after the other: the packets over both windows.
    let per_second = |n: u64| n as f64 / (2.0 * window.as_secs_f64());
    // Quiet units are read when their next round is due: no round trip to time.
    let round_trip = match during.count() {
        0 => "no round read right after it (every pair up: read when the next is due)".into(),
        n => format!(
            "round trip p50 <= {}, p99 <= {} ({n} rounds)",
            during.quantile_bound(0.5),
            during.quantile_bound(0.99)
        ),
    };
    println!(
        "{:<40} efbd {:>5.1} % of a core, efb-target {:>5.1} %; CPU port {:>6.0} packet-outs/s, {:>6.0} packet-ins/s; {round_trip}",
        format!("keep-alives, {} pairs every {interval_ms} ms", pairs.len()),
        efbd * 100.0,
        target * 100.0,
        per_second(outs_after - outs),
        per_second(ins_after - ins),
    );
}

/// efbd's `efb_keepalive_round_trip_seconds` histogram: (upper bound, cumulative count).
struct RoundTrips(Vec<(f64, u64)>);

/// Reads the histogram from efbd's metrics endpoint.
fn round_trips(address: &str) -> RoundTrips {
    let (_, text) = efb_tests::http_get(address, "/metrics").expect("efbd serves metrics");
    let buckets = text
        .lines()
        .filter_map(|line| line.strip_prefix("efb_keepalive_round_trip_seconds_bucket{le=\""))
        .filter_map(|rest| {
            let (bound, count) = rest.split_once("\"} ")?;
            let bound = if bound == "+Inf" {
                f64::INFINITY
            } else {
                bound.parse().ok()?
            };
            Some((bound, count.trim().parse().ok()?))
        })
        .collect();
    RoundTrips(buckets)
}

impl RoundTrips {
    fn since(&self, before: &RoundTrips) -> RoundTrips {
        let counts = self.0.iter().zip(&before.0);
        RoundTrips(counts.map(|((b, n), (_, m))| (*b, n - m)).collect())
    }

    fn count(&self) -> u64 {
        self.0.last().map_or(0, |(_, n)| *n)
    }

    /// The smallest bucket bound at or under which `q` of the round trips fell.
    fn quantile_bound(&self, q: f64) -> String {
        let wanted = (self.count() as f64 * q).ceil() as u64;
        match self.0.iter().find(|(_, n)| *n >= wanted.max(1)) {
            Some((bound, _)) if bound.is_finite() => format!("{:.2} ms", bound * 1000.0),
            _ => "more than 250 ms".to_string(),
        }
    }
}

fn idle_cpu(window: Duration) {
    let dir = tempfile::tempdir().unwrap();
    let target = Target::start(&["--capture-limit", "0"]);
    let daemon = Daemon::start(
        &dir.path().join("datastore"),
        &["--p4runtime", &target.address, "--no-gnmi"],
    );
    std::thread::sleep(Duration::from_millis(500));
    println!(
        "{:<52} efbd {:>5.1} % of a core",
        "no unit probed (baseline)",
        cpu_share(daemon.pid(), window) * 100.0
    );
}

/// Kills and revives one filter `rounds` times. From efbd's log: the time from each
/// verdict to the chip's acknowledgement of its write, the entries each wrote, and the
/// failover time, from the kill to the acknowledgement of the bypass (or rebalance); and
/// whether any other pair got a verdict meanwhile (a false one: its filter never died).
fn failover(label: &str, shape: Shape, interval_ms: u32, down_count: u32, rounds: usize) {
    let (mut run, pairs) = start(interval_ms, down_count, shape);
    // Past the initial delay and the first verdicts (init counts as live already).
    std::thread::sleep(Duration::from_millis(200 + u64::from(interval_ms) * 5));
    wait(|| up_pairs(&mut run.client) == pairs.len());
    let mut chip = Chip::connect(&run.target);
    let (lan, wan) = pairs[7].clone();
    let mut set = |dead: bool| {
        let request = pb::SetFilterRequest {
            port_a: port(&lan),
            port_b: port(&wan),
            delay_ns: 25_000,
            loss_ratio: 0.0,
            dead,
            update_mask: None,
        };
        chip.rt.block_on(chip.control.set_filter(request)).unwrap();
    };
    let started = SystemTime::now();
    let mut kills = Vec::new();
    for _ in 0..rounds {
        kills.push(SystemTime::now());
        set(true);
        wait(|| up_pairs(&mut run.client) == pairs.len() - 1);
        set(false);
        wait(|| up_pairs(&mut run.client) == pairs.len());
    }
    let log = std::fs::read_to_string(&run.log).unwrap();
    let programmed = programmed_since(&log, started);
    let false_verdicts = verdicts_of_others(&log, started, "q7");
    let writes: Vec<u64> = programmed.iter().map(|p| p.written).collect();
    let goal = Duration::from_millis(u64::from(interval_ms * down_count) + 10);
    let after_kill = |ack: fn(&Programmed) -> SystemTime| -> Vec<Duration> {
        kills
            .iter()
            .filter_map(|kill| {
                let first = programmed.iter().find(|p| p.at > *kill)?;
                ack(first).duration_since(*kill).ok()
            })
            .collect()
    };
    let failovers = after_kill(Programmed::bypassed_at);
    let label = format!("{label}, every {interval_ms} ms x {down_count}");
    println!(
        "{label:<52} entries written per change: min {} max {}; {} changes of the killed \
         pair's status, {false_verdicts} of others' (false verdicts)",
        writes.iter().min().unwrap_or(&0),
        writes.iter().max().unwrap_or(&0),
        programmed.len(),
    );
    summary(
        &format!("{label}: verdict to chip write acknowledged"),
        programmed.iter().map(|p| p.verdict_to_chip).collect(),
    );
    summary(
        &format!("{label}: filter death to bypass acknowledged (goal {goal:?})"),
        failovers,
    );
    if shape.rebalance {
        summary(
            &format!("{label}: verdict to rebalance acknowledged"),
            programmed.iter().map(|p| p.verdict_to_rebalance).collect(),
        );
        summary(
            &format!("{label}: filter death to rebalance acknowledged"),
            after_kill(|p| p.at),
        );
    }
}

/// Status changes logged after `since` for pairs other than `killed`.
fn verdicts_of_others(log: &str, since: SystemTime, killed: &str) -> usize {
    log.lines()
        .filter(|l| l.contains("pair liveness changed"))
        .filter(|l| {
            let stamp = l.split_whitespace().next().unwrap_or("");
            humantime::parse_rfc3339(stamp).is_ok_and(|at| at > since)
        })
        .filter(|l| {
            let pair = l
                .split("pair=")
                .nth(1)
                .and_then(|r| r.split_whitespace().next());
            pair.map(|p| p.trim_matches('"')) != Some(killed)
        })
        .count()
}

/// A `liveness programmed` line of efbd's log, written once the last step (the bypass, or
/// the rebalance after it) was acknowledged.
struct Programmed {
    at: SystemTime,
    written: u64,
    verdict_to_chip: Duration,
    verdict_to_rebalance: Duration,
}

impl Programmed {
    /// When the bypass was acknowledged: before the line by the time the rebalance took.
    fn bypassed_at(&self) -> SystemTime {
        let rebalance = self
            .verdict_to_rebalance
            .saturating_sub(self.verdict_to_chip);
        self.at - rebalance
    }
}

/// The chip writes of liveness changes logged after `since`.
fn programmed_since(log: &str, since: SystemTime) -> Vec<Programmed> {
    let field = |line: &str, name: &str| -> Option<u64> {
        line.split(&format!("{name}="))
            .nth(1)?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    };
    log.lines()
        .filter(|l| l.contains("liveness programmed"))
        .filter_map(|l| {
            let stamp = l.split_whitespace().next()?;
            Some(Programmed {
                at: humantime::parse_rfc3339(stamp).ok()?,
                written: field(l, "written")?,
                verdict_to_chip: Duration::from_micros(field(l, "verdict_to_chip_us")?),
                verdict_to_rebalance: Duration::from_micros(field(l, "verdict_to_rebalance_us")?),
            })
        })
        .filter(|p| p.at > since)
        .collect()
}

fn main() {
    let quick = std::env::var_os("EFB_BENCH_QUICK").is_some();
    let window = if quick {
        Duration::from_secs(1)
    } else {
        Duration::from_secs(10)
    };
    idle_cpu(window);
    keepalive_cpu(63, 10, window);
    if !quick {
        keepalive_cpu(24, 10, window);
        keepalive_cpu(63, 100, window);
        keepalive_cpu(24, 100, window);
    }
    let rounds = if quick { 2 } else { 20 };
    let rebalanced = Shape {
        pairs: 16,
        cores: 32,
        rebalance: true,
    };
    // A quick run (./test.sh) tries the shortest profile only: the soak test covers deaths
    // and returns at it for two minutes.
    let profiles: &[(u32, u32)] = if quick {
        &[(10, 3)]
    } else {
        &[(10, 3), (100, 5)]
    };
    for &(interval_ms, down_count) in profiles {
        failover(
            "63 pairs x 16 cores",
            LARGEST,
            interval_ms,
            down_count,
            rounds,
        );
        failover(
            "16 pairs x 32 cores, rebalance",
            rebalanced,
            interval_ms,
            down_count,
            rounds,
        );
    }
}
