//! `clear ports statistics` and `clear ecofilter-balancer flow statistics`, as Junos's
//! `clear interfaces statistics`: efb-cli -> efbd -> efb-target, real processes, frames
//! injected into the software chip. Every reader sees the counts since the clear; the
//! chip's own counters are not touched; only operators (and admins) may clear.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::time::Duration;

use efb_target::frames;
use efb_tests::chip_io::{Chip, configure, daemon_with_demo_users};
use efb_tests::{Daemon, Target, binary};

const DNS_FLOW: &str =
    "set ecofilter-balancer flow dns priority 250 match ip-proto 17 dst-port 53 action drop";

fn arp() -> Vec<u8> {
    frames::eth(&[], 0x0806, &[0u8; 28])
}

fn dns() -> Vec<u8> {
    frames::eth(
        &[],
        0x0800,
        &frames::ipv4([10, 0, 0, 1], [9, 9, 9, 9], 17, &frames::udp(5353, 53)),
    )
}

/// The words of the first row of what `command` shows.
fn row(daemon: &Daemon, command: &str) -> Vec<String> {
    let (code, out, err) = daemon.cli(&["-c", command], "");
    assert_eq!(code, 0, "{command}: {out}{err}");
    out.lines()
        .nth(1)
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// In frames, in bytes and in discards of a port (`show ports NAME statistics`).
fn port_in(daemon: &Daemon, port: &str) -> [String; 3] {
    let row = row(daemon, &format!("show ports {port} statistics"));
    [row[1].clone(), row[2].clone(), row[6].clone()]
}

fn out_frames(daemon: &Daemon, port: &str) -> String {
    row(daemon, &format!("show ports {port} statistics"))[3].clone()
}

/// The packets of a flow (`show ecofilter-balancer flow NAME`: packets, then bytes, last).
fn packets(daemon: &Daemon, flow: &str) -> String {
    let row = row(daemon, &format!("show ecofilter-balancer flow {flow}"));
    row[row.len() - 2].clone()
}

fn clear(daemon: &Daemon, line: &str) -> (i32, String, String) {
    daemon.cli(&["-c", line], "")
}

/// The counters since the clear, as `show` and gNMI Get read them, for ports and flows;
/// unknown names refused; a chip that starts counting again is not a negative count.
#[test]
fn cleared_counters_count_from_zero_again_for_every_reader() {
    use efb_tests::gnmi_io::{authed, json, path};
    use gnmi_proto::gnmi::g_nmi_client::GNmiClient;
    use gnmi_proto::gnmi::{Encoding, GetRequest, get_request};

    let dir = tempfile::tempdir().unwrap();
    let target = Target::start(&[]);
    let daemon = daemon_with_demo_users(dir.path(), &target, &["--gnmi-plaintext"]);
    configure(&daemon, DNS_FLOW);
    let mut chip = Chip::connect(&target);
    chip.inject("p2", vec![arp(); 3]);
    chip.inject("p2", vec![dns(); 2]);
    let [frames, bytes, discards] = port_in(&daemon, "p2");
    assert_eq!(
        [frames.as_str(), discards.as_str()],
        ["5", "2"],
        "dns dropped"
    );
    assert_ne!(bytes, "0");
    // Errors and outgoing discards as the chip's gNMI says them (the emulated chip counts
    // none), not "unknown" where a collector reads 0.
    let p2 = row(&daemon, "show ports p2 statistics");
    assert_eq!([&p2[5], &p2[7], &p2[8]], ["0", "0", "0"], "{p2:?}");
    assert_eq!(packets(&daemon, "dns"), "2");
    let p1_out = out_frames(&daemon, "p1");
    assert_eq!(p1_out, "3", "the ARP frames left by p1");

    // Ports: p2 from zero, p1 untouched; then p2 counts again.
    let (code, out, err) = clear(&daemon, "clear ports statistics p2");
    assert!(
        code == 0 && out.contains("port statistics cleared: p2"),
        "{out}{err}"
    );
    assert_eq!(port_in(&daemon, "p2"), ["0", "0", "0"]);
    assert_eq!(out_frames(&daemon, "p1"), p1_out);
    chip.inject("p2", vec![arp()]);
    let [frames, bytes, discards] = port_in(&daemon, "p2");
    assert_eq!([frames.as_str(), discards.as_str()], ["1", "0"]);
    assert_ne!(bytes, "0");
    // gNMI reads the same.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut client = rt
        .block_on(GNmiClient::connect(format!(
            "http://{}",
            daemon.gnmi.clone().unwrap()
        )))
        .unwrap();
    let get = GetRequest {
        path: vec![path(&[
            ("ports", None),
            ("port", Some(("name", "p2"))),
            ("state", None),
            ("counters", None),
        ])],
        r#type: get_request::DataType::State as i32,
        encoding: Encoding::JsonIetf as i32,
        ..GetRequest::default()
    };
    let reply = rt
        .block_on(client.get(authed(get, "viewer")))
        .unwrap()
        .into_inner();
    let counters = json(reply.notification[0].update[0].val.clone());
    assert_eq!(counters["in-frames"], "1", "{counters}");

    // Flows: the same.
    let (code, out, err) = clear(&daemon, "clear ecofilter-balancer flow statistics dns");
    assert!(
        code == 0 && out.contains("flow statistics cleared: dns"),
        "{out}{err}"
    );
    assert_eq!(packets(&daemon, "dns"), "0");
    chip.inject("p2", vec![dns()]);
    assert_eq!(packets(&daemon, "dns"), "1");

    // Names that are not configured: refused, named, nothing cleared.
    let before = out_frames(&daemon, "p1");
    let (code, _, err) = clear(&daemon, "clear ports statistics p1 nope");
    assert!(
        code == 1 && err.contains("port nope: not configured") && !err.contains("p1,"),
        "{err}"
    );
    assert_eq!(out_frames(&daemon, "p1"), before);
    let (code, _, err) = clear(&daemon, "clear ecofilter-balancer flow statistics nope*");
    assert!(code == 1 && err.contains("no entry matches nope*"), "{err}");
    // All of them: none named.
    let (code, out, err) = clear(&daemon, "clear ports statistics");
    assert!(
        code == 0 && out.contains("port statistics cleared: ") && out.contains(" ports"),
        "{out}{err}"
    );
    assert_eq!(out_frames(&daemon, "p1"), "0");

    // The chip restarted empty: its flow counters start from zero, below the baseline
    // (3 packets), and count from there rather than going negative.
    let (code, _, err) = clear(&daemon, "clear ecofilter-balancer flow statistics dns");
    assert_eq!(code, 0, "{err}");
    let reconciled = || {
        let (_, status, _) = daemon.cli(&["-c", "show system status"], "");
        status
            .lines()
            .find(|l| l.starts_with("Chip") && l.contains("in sync:"))
            .and_then(|l| l.split("last reconcile").nth(1))
            .map(str::to_string)
            .unwrap_or_default()
    };
    let last = reconciled();
    chip.restart(false);
    let mut now = String::new();
    for _ in 0..200 {
        now = reconciled();
        if !now.is_empty() && now != last {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        !now.is_empty() && now != last,
        "the chip was reconciled: {now}"
    );
    chip.inject("p2", vec![dns()]);
    assert_eq!(packets(&daemon, "dns"), "1");

    // A script gets no endless view: monitor needs a terminal, and says what shows once.
    let (code, _, err) = clear(&daemon, "monitor ports p2");
    assert!(
        code == 1 && err.contains("needs a terminal") && err.contains("show ports statistics"),
        "{err}"
    );
    // Nor does a pipe make sense after a view that redraws itself.
    let (code, _, err) = clear(&daemon, "monitor ports | count");
    assert!(code == 1 && err.contains("it takes no pipe"), "{err}");
}

/// Clearing is an operator's action: a viewer is refused, naming the role needed, and the
/// audit has both, with who.
#[test]
fn only_operators_clear_and_the_audit_says_who() {
    let dir = tempfile::tempdir().unwrap();
    let target = Target::start(&[]);
    let daemon = daemon_with_demo_users(dir.path(), &target, &["--mgmt-listen", "127.0.0.1:0"]);
    configure(&daemon, "");
    let mut chip = Chip::connect(&target);
    chip.inject("p2", vec![arp(); 2]);
    let tcp = daemon.tcp.clone().expect("TCP is on");
    let cert = daemon.datastore.join("gnmi-cert.pem");
    let as_user = |user: &str, line: &str| {
        let mut command = Command::new(binary("efb-cli"));
        command
            .args(["--connect", &tcp, "--ca"])
            .arg(&cert)
            .args(["--user", user, "-c", line])
            .env("EFB_PASSWORD", user);
        efb_tests::run_cli(command, "")
    };
    let (code, _, err) = as_user("viewer", "clear ports statistics p2");
    assert!(
        code == 1
            && err.contains("clear statistics needs the operator role; viewer has the viewer role"),
        "{err}"
    );
    assert_eq!(
        port_in(&daemon, "p2")[0],
        "2",
        "the refusal cleared nothing"
    );
    let (code, out, err) = as_user("operator", "clear ports statistics p2");
    assert!(
        code == 0 && out.contains("port statistics cleared: p2"),
        "{out}{err}"
    );
    assert_eq!(port_in(&daemon, "p2")[0], "0");

    let (_, audit, _) = daemon.cli(&["-c", "show system audit"], "");
    let line = |user: &str, what: &str, result: &str| {
        audit.lines().any(|l| {
            l.split_whitespace().nth(1) == Some(user) && l.contains(what) && l.contains(result)
        })
    };
    // The viewer's request was refused by its head, its names unread.
    assert!(
        line(
            "viewer",
            "clear statistics (refused before its body was read)",
            "refused: PermissionDenied"
        ),
        "{audit}"
    );
    assert!(
        line(
            "operator",
            "clear ports statistics p2",
            "accepted: 1 counted from zero"
        ),
        "{audit}"
    );
}
