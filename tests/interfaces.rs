//! The port inventory, as Junos's `show interfaces terse`: efb-cli -> efbd -> efb-target,
//! real processes, the one-filter site committed. Every physical port of the board is
//! listed, configured or free, with what uses it; counters on request, the same as the
//! configured ports' and gNMI's; `show ports` of a port nobody configured says what it is.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;

use efb_target::frames;
use efb_tests::chip_io::{Chip, configure, daemon_with_demo_users};
use efb_tests::{Daemon, Target};

/// What `command` prints, which must succeed.
fn show(daemon: &Daemon, command: &str) -> String {
    let (code, out, err) = daemon.cli(&["-c", command], "");
    assert_eq!(code, 0, "{command}: {out}{err}");
    out
}

/// The rows of a table, each as its words, the header left out.
fn rows(table: &str) -> Vec<Vec<String>> {
    table
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

/// The row of `interface` in a table.
fn row(table: &str, interface: &str) -> Vec<String> {
    rows(table)
        .into_iter()
        .find(|r| r[0] == interface)
        .unwrap_or_else(|| panic!("no row {interface} in:\n{table}"))
}

fn arp() -> Vec<u8> {
    frames::eth(&[], 0x0806, &[0u8; 28])
}

#[test]
fn every_port_of_the_board_is_listed_with_what_uses_it() {
    let dir = tempfile::tempdir().unwrap();
    let target = Target::start(&[]);
    let daemon = daemon_with_demo_users(dir.path(), &target, &["--gnmi-plaintext"]);
    configure(&daemon, "");
    let mut chip = Chip::connect(&target);

    let table = show(&daemon, "show interfaces");
    assert_eq!(
        table
            .lines()
            .next()
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>(),
        [
            "Interface",
            "Device",
            "ports",
            "Speed",
            "Admin",
            "Oper",
            "Configured",
            "as",
            "Used",
            "by"
        ]
    );
    // All 32 physical ports, whole, broken out (a row per lane) or free.
    let physical: BTreeSet<u32> = rows(&table)
        .iter()
        .map(|r| r[0][1..].split('-').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(physical, (1..=32).collect(), "{table}");
    assert_eq!(rows(&table).len(), 4 + 4 * 4 + 24, "{table}");
    assert_eq!(
        row(&table, "p1"),
        ["p1", "132", "100g", "up", "up", "p1", "link", "l1", "wan"]
    );
    assert_eq!(row(&table, "p2")[5..], ["p2", "link", "l1", "lan"]);
    assert_eq!(
        row(&table, "p9-1"),
        [
            "p9-1",
            "165",
            "10g",
            "up",
            "up",
            "p9-1",
            "pair",
            "ef1/f1-te1-te2",
            "wan"
        ]
    );
    assert_eq!(
        row(&table, "p5"),
        ["p5", "148-151", "-", "-", "up", "free", "-"]
    );

    // A name, a physical port's lanes, a pattern; the status as the chip has it.
    chip.set_port("p2", false);
    for lane in 0..4 {
        chip.set_port(&format!("p7-{lane}"), false);
    }
    let some = show(&daemon, "show interfaces p2 p7 p12");
    let names: Vec<String> = rows(&some).into_iter().map(|r| r[0].clone()).collect();
    assert_eq!(names, ["p2", "p7", "p12-0", "p12-1", "p12-2", "p12-3"]);
    assert_eq!(row(&some, "p2")[4], "down");
    assert_eq!(row(&some, "p7")[4..6], ["down", "free"]);
    let (code, _, err) = daemon.cli(&["-c", "show interfaces p40"], "");
    assert!(code == 1 && err.contains("p40: no such interface"), "{err}");
    chip.set_port("p2", true);

    // Counters: the configured port's own, and a free port's lanes counted too.
    chip.inject("p2", vec![arp(); 3]);
    chip.inject("p6-1", vec![arp(); 2]);
    let statistics = show(&daemon, "show interfaces statistics");
    assert!(
        statistics
            .lines()
            .next()
            .unwrap()
            .ends_with("In frames  In bytes  Out frames  Out bytes  In discards"),
        "{statistics}"
    );
    // Interface, Oper, Configured as, Used by (three words), then the counters.
    let p2 = row(&statistics, "p2");
    let ports = show(&daemon, "show ports p2 statistics");
    assert_eq!(p2[6], "3", "{statistics}");
    assert_eq!(
        p2[7],
        row(&ports, "p2")[2],
        "the same bytes as show ports:\n{ports}"
    );
    assert_eq!(row(&statistics, "p6")[..3], ["p6", "up", "free"]);
    assert_eq!(row(&statistics, "p6")[4], "2", "{statistics}");

    // gNMI reads the board with its counters too.
    assert_eq!(gnmi_lane_in_frames(&daemon, "6", "1"), "2");

    // A port name nobody configured: what it is on the board.
    let (code, _, err) = daemon.cli(&["-c", "show ports p5"], "");
    assert_eq!(code, 1);
    assert!(
        err.contains(
            "p5 is not configured: physical port 5 of the board, lanes 0-3 (device ports 148-151), free, oper-status up; see show interfaces p5"
        ),
        "{err}"
    );
    let (_, _, err) = daemon.cli(&["-c", "show ports p1-2 statistics"], "");
    assert!(
        err.contains("lane 2 of physical port 1 belongs to the whole port p1 (100g, device port 132, used by link l1 wan)"),
        "{err}"
    );
    let (_, _, err) = daemon.cli(&["-c", "show ports p9"], "");
    assert!(err.contains("physical port 9 is broken out"), "{err}");
    let (_, _, err) = daemon.cli(&["-c", "show ports uplink"], "");
    assert!(err.contains("show ports uplink: no such entry"), "{err}");

    // `?` offers the words.
    let asked = show(&daemon, "show ?");
    assert!(
        asked
            .lines()
            .any(|l| l.trim_start().starts_with("interfaces ")
                && l.ends_with("what uses it (statistics: counters)")),
        "{asked}"
    );
    let asked = show(&daemon, "show interfaces ?");
    assert!(
        asked.contains("statistics") && asked.contains("  p9-0") && asked.contains("  p32"),
        "{asked}"
    );
}

/// `in-frames` of a lane of the board, read by gNMI Get.
fn gnmi_lane_in_frames(daemon: &Daemon, number: &str, lane: &str) -> String {
    use efb_tests::gnmi_io::{authed, json, path};
    use gnmi_proto::gnmi::g_nmi_client::GNmiClient;
    use gnmi_proto::gnmi::{Encoding, GetRequest, get_request};

    let rt = tokio::runtime::Runtime::new().unwrap();
    let get = GetRequest {
        path: vec![path(&[
            ("board", None),
            ("port", Some(("number", number))),
            ("lane", Some(("lane", lane))),
            ("counters", None),
        ])],
        r#type: get_request::DataType::State as i32,
        encoding: Encoding::JsonIetf as i32,
        ..GetRequest::default()
    };
    let mut client = rt
        .block_on(GNmiClient::connect(format!(
            "http://{}",
            daemon.gnmi.clone().unwrap()
        )))
        .unwrap();
    let reply = rt
        .block_on(client.get(authed(get, "viewer")))
        .unwrap()
        .into_inner();
    let counters = json(reply.notification[0].update[0].val.clone());
    counters["in-frames"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}
