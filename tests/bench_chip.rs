//! The southbound path end to end (release build; management API -> efbd -> P4Runtime ->
//! efb-target, real gRPC on loopback): the first push of a large configuration, the latency
//! of a one-flow commit, counters read back (one flow, every flow), and a restart of efbd
//! with nothing to reconcile, at 100 flows and at the chip's capacity (the IPv4 flow table's
//! size as compiled for Tofino, less the example site's own entries). Prints figures:
//! `cargo bench -p efb-tests --bench chip`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use efb_cli::client::Client;
use efb_cli::commit_report;
use efb_mgmt_proto::v1::chip_writes::Outcome;
use efb_mgmt_proto::v1::{CommitRequest, Datastore, Format, LoadMode};
use efb_tests::figures::{peak_resident_kib, site_with_flows, summary};
use efb_tests::{Daemon, Target};

/// The chip line of `show system status`, once efbd says the chip is in sync.
fn in_sync(client: &mut Client) -> String {
    for _ in 0..3000 {
        let chip = client.status().unwrap().chip;
        if chip.starts_with("in sync") {
            return chip;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("the chip never got in sync");
}

/// The number before `word` in `text` ("... wrote 12 entries in 3 ms" -> 12 for "entries").
fn number_before(text: &str, word: &str) -> u64 {
    let words: Vec<&str> = text.split_whitespace().collect();
    words
        .windows(2)
        .find(|w| w[1].trim_end_matches([';', ',']) == word)
        .and_then(|w| w[0].parse().ok())
        .unwrap_or_else(|| panic!("no number before {word:?} in {text:?}"))
}

fn start(datastore: &Path, target: &Target) -> (Daemon, Client) {
    let daemon = Daemon::start(datastore, &["--p4runtime", &target.address, "--no-gnmi"]);
    let mut client = Client::connect(&daemon.address, "bench").unwrap();
    in_sync(&mut client);
    (daemon, client)
}

fn initial_push(client: &mut Client, flows: usize) {
    client
        .load(LoadMode::Override, Format::Json, site_with_flows(flows))
        .unwrap();
    // What the commit spends before writing: validation, compilation, the plan.
    let started = Instant::now();
    client
        .commit(CommitRequest {
            check_only: true,
            ..CommitRequest::default()
        })
        .unwrap();
    let checked = started.elapsed();
    let started = Instant::now();
    let reply = client
        .commit(CommitRequest {
            comment: "bench".into(),
            ..CommitRequest::default()
        })
        .unwrap();
    let took = started.elapsed();
    let chip = reply.chip_writes.unwrap_or_default();
    assert_eq!(chip.outcome(), Outcome::Written, "{chip:?}");
    let written = chip.entries as f64;
    let writing = took.saturating_sub(checked).as_secs_f64();
    println!(
        "{:<52} {written} entries, commit {:.2} s ({:.0} entries/s); of which writing about {writing:.2} s ({:.0} entries/s; commit check: {:.2} s)",
        format!("first push, {flows} flows"),
        took.as_secs_f64(),
        written / took.as_secs_f64(),
        written / writing,
        checked.as_secs_f64(),
    );
}

/// One flow's action changes at each round: one entry modified on the chip.
fn one_flow_commits(client: &mut Client, flows: usize, rounds: usize) {
    let mut times = Vec::new();
    for round in 0..rounds {
        let action = if round % 2 == 0 { "drop" } else { "bypass" };
        let started = Instant::now();
        client
            .edit_lines(&format!(
                "set ecofilter-balancer flow sub{} action {action}",
                flows / 2
            ))
            .unwrap();
        let reply = client.commit(CommitRequest::default()).unwrap();
        times.push(started.elapsed());
        assert_eq!(
            commit_report::chip(&reply),
            ["chip programmed: 1 entry written"],
            "one flow, one entry"
        );
    }
    summary(&format!("one-flow commit, {flows} flows"), times);
}

fn restart_without_changes(daemon: Daemon, target: &Target, datastore: &Path, flows: usize) {
    assert!(daemon.stop());
    let started = Instant::now();
    let (daemon, mut client) = start(datastore, target);
    let chip = in_sync(&mut client);
    let until_in_sync = started.elapsed();
    // "in sync: N entries; last reconcile T wrote 0 entries in M ms; ..."
    let reconcile = chip.split("wrote ").nth(1).unwrap_or_default();
    assert_eq!(number_before(reconcile, "entries"), 0, "{chip}");
    println!(
        "{:<52} reconcile {} ms (nothing written); efbd start to in sync {:.2} s",
        format!("efbd restart, {flows} flows"),
        number_before(reconcile, "ms"),
        until_in_sync.as_secs_f64()
    );
    println!(
        "{:<52} {} MiB",
        "  efbd peak memory",
        peak_resident_kib(daemon.pid()) / 1024
    );
}

/// The operational state of one flow (`show ecofilter-balancer flow NAME`: its entries'
/// counters read from the chip) and of every flow (one read of the whole flow table).
fn counter_reads(client: &mut Client, flows: usize, rounds: usize) {
    let mut read = |path: &str, rounds: usize| {
        let mut times = Vec::new();
        for _ in 0..rounds {
            let started = Instant::now();
            let text = client
                .get(Datastore::Operational, path, Format::Json, false)
                .unwrap();
            times.push(started.elapsed());
            assert!(text.contains("\"packets\""), "counters read: {path}");
        }
        times
    };
    let one = format!(
        "/ecofilter-balancer:ecofilter-balancer/flow[name='sub{}']",
        flows / 3
    );
    summary(
        &format!("state of one flow, {flows} flows"),
        read(&one, rounds),
    );
    summary(
        &format!("state of every flow, {flows} flows"),
        read("/ecofilter-balancer:ecofilter-balancer/flow", 3),
    );
}

/// The example site's own flows take at most this many IPv4 entries.
const SITE_ENTRIES: usize = 16;

/// The most one-link IPv4 flows (one entry each) the chip holds beside the example site's.
fn chip_capacity() -> usize {
    let index = efb_p4info::index().unwrap();
    let ipv4 = index
        .table_by_name(efb_p4info::names::flows::IPV4.table)
        .unwrap();
    usize::try_from(ipv4.size).unwrap() - SITE_ENTRIES
}

fn main() {
    let quick = std::env::var_os("EFB_BENCH_QUICK").is_some();
    let sizes: Vec<(usize, usize)> = if quick {
        vec![(100, 4)]
    } else {
        vec![(100, 200), (chip_capacity(), 200)]
    };
    for (flows, rounds) in sizes {
        let dir = tempfile::tempdir().unwrap();
        let datastore = dir.path().join("datastore");
        let target = Target::start(&["--capture-limit", "0"]);
        let (daemon, mut client) = start(&datastore, &target);
        initial_push(&mut client, flows);
        one_flow_commits(&mut client, flows, rounds);
        counter_reads(&mut client, flows, rounds.min(50));
        drop(client);
        restart_without_changes(daemon, &target, &datastore, flows);
    }
}
