//! `efb-target filter` and `efb-target port`, the operator's hands on a running target, run
//! as the real binary: what they refuse is one line and exit status 2, a target that does
//! not answer one line naming it and exit status 1, and a flag changes only what it names.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::time::{Duration, Instant};

use efb_cli::client::Client;
use efb_mgmt_proto::v1::{Datastore, Format};
use efb_target_proto as pb;
use efb_tests::chip_io::{self, Chip, FAST_PROBING};
use efb_tests::{Daemon, Target, binary};

/// `efb-target ARGS --target ADDRESS`: exit code, standard output, standard error. With
/// RUST_BACKTRACE=1, as an engineer chasing a problem has it: still one line.
fn efb_target(address: &str, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(binary("efb-target"))
        .args(args)
        .args(["--target", address])
        .env("RUST_BACKTRACE", "1")
        .output()
        .expect("efb-target runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs `args` and checks that it failed with `code` and one line on standard error,
/// nothing on standard output; returns the line.
fn refused(address: &str, args: &[&str], code: i32) -> String {
    let (got, out, err) = efb_target(address, args);
    assert_eq!(
        (got, out.as_str()),
        (code, ""),
        "efb-target {args:?}:\n{err}"
    );
    assert_eq!(err.lines().count(), 1, "one line: {err:?}");
    err.trim_end().to_string()
}

/// Runs `args` and checks that it succeeded with one line, which it returns.
fn done(address: &str, args: &[&str]) -> String {
    let (code, out, err) = efb_target(address, args);
    assert_eq!(code, 0, "efb-target {args:?}: {out}{err}");
    assert_eq!(out.lines().count(), 1, "one line: {out:?}");
    out.trim_end().to_string()
}

#[test]
fn a_port_the_target_lacks_is_refused_in_one_line_naming_the_ports() {
    let target = Target::start(&[]);
    let ports = "ports are p1..p32, lanes p1-0..p32-3";
    assert_eq!(
        refused(&target.address, &["port", "p99", "down"], 2),
        format!("efb-target: no port p99: {ports}")
    );
    assert_eq!(
        refused(&target.address, &["port", "p1-4", "up"], 2),
        format!("efb-target: no port p1-4: {ports}")
    );
    assert_eq!(
        refused(&target.address, &["filter", "p9-0", "uplink", "--dead"], 2),
        format!("efb-target: no port uplink: {ports}")
    );
}

#[test]
fn a_target_that_does_not_answer_is_one_line_naming_its_address() {
    // A port nothing listens on: bound, then let go.
    let address = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .to_string();
    for args in [&["port", "p1", "down"][..], &["filter", "p9-0", "p9-1"]] {
        let line = refused(&address, args, 1);
        assert!(
            line.starts_with(&format!(
                "efb-target: cannot reach efb-target at {address}: "
            )),
            "{line}"
        );
    }
    assert_eq!(
        refused("not an address", &["port", "p1", "down"], 2),
        "efb-target: --target \"not an address\" is not HOST:PORT"
    );
}

/// The chip's gNMI names lanes (p1-0); efbd's configuration names a whole port p1, whose
/// device port is its lane 0's. Both name one port, and the answer is in the chip's terms.
#[test]
fn a_whole_port_and_its_lane_0_are_one_port() {
    let target = Target::start(&[]);
    let mut chip = Chip::connect(&target);
    assert_eq!(
        done(&target.address, &["port", "p1", "down"]),
        "port p1-0: down"
    );
    assert_eq!(port_up(&mut chip, "p1-0"), Some(false));
    assert_eq!(
        port_up(&mut chip, "p1-1"),
        Some(true),
        "other lanes untouched"
    );
    assert_eq!(
        done(&target.address, &["port", "p1-0", "up"]),
        "port p1-0: up"
    );
    assert_eq!(port_up(&mut chip, "p1-0"), Some(true));
}

fn port_up(chip: &mut Chip, name: &str) -> Option<bool> {
    let ports = chip
        .rt
        .block_on(chip.control.get_ports(pb::GetPortsRequest {}))
        .unwrap()
        .into_inner()
        .ports;
    ports.iter().find(|p| p.name == name).map(|p| p.up)
}

#[test]
fn no_filter_is_there_before_a_controller_cables_the_pairs() {
    let target = Target::start(&[]);
    assert_eq!(
        refused(&target.address, &["filter", "p9-0", "p9-1", "--dead"], 2),
        "efb-target: p9-0 and p9-1 are not the two ports of one filter; no filter is cabled yet \
         (a controller cables the pairs when it programs the chip)"
    );
}

/// The one-filter site, programmed by efbd, its liveness probing every 50 ms.
struct Site {
    _dir: tempfile::TempDir,
    target: Target,
    _daemon: Daemon,
    client: Client,
}

impl Site {
    fn start() -> Site {
        let dir = tempfile::tempdir().unwrap();
        let target = Target::start(&[]);
        let daemon = chip_io::daemon_on(dir.path(), &target);
        chip_io::configure(&daemon, FAST_PROBING);
        let client = Client::connect(&daemon.address, "test").unwrap();
        let mut site = Site {
            _dir: dir,
            target,
            _daemon: daemon,
            client,
        };
        site.wait_status("f1-te1-te2", "up");
        site
    }

    /// What efbd's liveness says of `pair`.
    fn status(&mut self, pair: &str) -> String {
        let path = "/ecofilter-balancer:ecofilter-balancer/ecofilter-unit[name='ef1']";
        let text = self
            .client
            .get(Datastore::Operational, path, Format::Json, false)
            .unwrap();
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        let unit = &doc["ecofilter-balancer:ecofilter-balancer"]["ecofilter-unit"][0];
        let pairs = unit["pair"].as_array().cloned().unwrap_or_default();
        pairs
            .iter()
            .find(|p| p["name"] == pair)
            .and_then(|p| p["state"]["status"].as_str())
            .unwrap_or("unknown")
            .to_string()
    }

    fn wait_status(&mut self, pair: &str, want: &str) {
        let started = Instant::now();
        while self.status(pair) != want {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "{pair} never {want}: {}",
                self.status(pair)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

#[test]
fn a_filter_is_shown_and_changed_only_as_its_flags_say() {
    let mut site = Site::start();
    let address = site.target.address.clone();
    let filter = |args: &[&str]| done(&address, &[&["filter"], args].concat());
    assert_eq!(
        filter(&["p9-0", "p9-1"]),
        "filter between p9-0 and p9-1: alive, loss 0, delay 25 us",
        "no flag: the filter as it is"
    );

    // p9-0 and p9-2 are two filters' ports: refused, naming the pairs there are.
    let line = refused(&address, &["filter", "p9-0", "p9-2", "--dead"], 2);
    assert!(
        line.starts_with(
            "efb-target: p9-0 and p9-2 are not the two ports of one filter; the filters are \
             between p9-0 and p9-1, p9-2 and p9-3, p10-0 and p10-1,"
        ) && line.ends_with("p12-2 and p12-3"),
        "{line}"
    );
    assert_eq!(
        filter(&["p9-2", "p9-3"]),
        "filter between p9-2 and p9-3: alive, loss 0, delay 25 us",
        "the refusal changed nothing"
    );

    assert_eq!(
        filter(&["p9-0", "p9-1", "--dead"]),
        "filter between p9-0 and p9-1: dead, loss 0, delay 25 us"
    );
    site.wait_status("f1-te1-te2", "down");
    // Neither the delay nor the loss revives it, in either order of the ports.
    assert_eq!(
        filter(&["p9-1", "p9-0", "--delay-us", "5"]),
        "filter between p9-0 and p9-1: dead, loss 0, delay 5 us"
    );
    assert_eq!(
        filter(&["p9-0", "p9-1", "--loss", "0.5"]),
        "filter between p9-0 and p9-1: dead, loss 0.5, delay 5 us"
    );
    assert_eq!(
        filter(&["p9-0", "p9-1"]),
        "filter between p9-0 and p9-1: dead, loss 0.5, delay 5 us"
    );
    // Liveness calls a pair up after 3 keep-alives back (150 ms): a second is plenty.
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(site.status("f1-te1-te2"), "down", "still dead");

    assert_eq!(
        filter(&["p9-0", "p9-1", "--alive", "--loss", "0"]),
        "filter between p9-0 and p9-1: alive, loss 0, delay 5 us",
        "the delay stays"
    );
    site.wait_status("f1-te1-te2", "up");
}
