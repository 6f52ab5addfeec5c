//! End to end: the shell -> efbd -> efb-target, real processes and real gRPC. What is
//! committed is what the chip does with frames; what the chip refuses is not committed; the
//! chip is reconciled after restarts of either side.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::Duration;

use efb_balancing::{LiveState, Session};
use efb_target::frames;
use efb_tests::chip_io::{Chip, PAIR_LAN_PORTS, configure, daemon_on, wait_reconciled};
use efb_tests::{Daemon, Target, mgmt_io, repo};
use rand::{Rng, SeedableRng};

#[test]
fn what_is_committed_is_what_the_chip_does() {
    let dir = tempfile::tempdir().unwrap();
    let target = Target::start(&[]);
    let daemon = daemon_on(dir.path(), &target);
    let out = configure(
        &daemon,
        "set ecofilter-balancer flow dns priority 250 match ip-proto 17 dst-port 53 action drop",
    );
    assert!(out.contains("chip programmed"), "{out}");
    // `commit check` tells the writes a change would make (a priority is part of an entry's
    // key: delete and insert, in both IP flow tables), and makes none.
    let (code, check, err) = daemon.cli(
        &[],
        "edit\nset ecofilter-balancer flow dns priority 251\ncommit check\ndiscard\n",
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        check.contains("chip: 4 writes")
            && check.contains("flows_ipv4.flows: 1 deletion")
            && check.contains("flows_ipv6.flows: 1 insert"),
        "{check}"
    );
    let mut chip = Chip::connect(&target);

    // to-filters: to a pair with the tag, back from the filter, out of the link's WAN port
    // exactly as it came in.
    let web = frames::tcp4([10, 1, 2, 3], [8, 8, 8, 8], 40000, 443);
    chip.inject("p2", vec![web.clone()]);
    let to_filter = chip.out(&PAIR_LAN_PORTS, 1);
    assert_eq!(to_filter.len(), 1);
    assert_eq!(
        &to_filter[0].payload[12..14],
        &[0x88, 0xb5],
        "tagged towards the filter"
    );
    assert_eq!(
        chip.out(&["p1"], 1)[0].payload,
        web,
        "back out of the WAN port, untagged"
    );
    // bypass (BGP): straight to the link's other port, never to a filter.
    let bgp = frames::tcp4([10, 0, 0, 1], [10, 0, 0, 2], 50000, 179);
    chip.inject("p2", vec![bgp.clone()]);
    assert_eq!(chip.out(&["p1"], 1)[0].payload, bgp);
    assert!(chip.out(&PAIR_LAN_PORTS, 0).is_empty());
    // drop (the dns flow added above).
    let dns = frames::eth(
        &[],
        0x0800,
        &frames::ipv4([10, 0, 0, 1], [9, 9, 9, 9], 17, &frames::udp(5353, 53)),
    );
    chip.inject("p2", vec![dns]);
    std::thread::sleep(Duration::from_millis(200));
    assert!(chip.out(&["p1", "p3", "p4"], 0).is_empty(), "dropped");
    // service VLAN (bypass) and non-IP frames: to the other port, not to a filter.
    let vlan = frames::eth(
        &[3999],
        0x0800,
        &frames::ipv4([10, 0, 0, 1], [8, 8, 8, 8], 6, &frames::tcp(1, 2)),
    );
    let arp = frames::eth(&[], 0x0806, &[0u8; 28]);
    chip.inject("p2", vec![vlan.clone(), arp.clone()]);
    assert_eq!(chip.out(&["p1"], 2).len(), 2);
    // The counters come back into the model.
    let (_, out, _) = daemon.cli(&["-c", "show ecofilter-balancer flow dns"], "");
    let row = out.lines().nth(1).unwrap_or_default().to_string();
    assert!(
        row.split_whitespace().rev().nth(1) == Some("1"),
        "one packet counted on dns: {out}"
    );
    // So do those of a flow that matches everything (its entry has no key to read it by).
    let (_, out, _) = daemon.cli(&["-c", "show ecofilter-balancer flow to-filters"], "");
    assert!(
        out.contains("to-filters") && !out.contains("unknown"),
        "counters known: {out}"
    );
    // Counters read for one named flow never make up a flow that is not configured.
    let (code, _, err) = daemon.cli(&["-c", "show ecofilter-balancer flow nope"], "");
    assert!(code == 1 && err.contains("no such entry"), "{err}");
    // Five frames came in by p2, the dns one was dropped; the emulated platform counts no
    // errors, so those stay unknown rather than a made-up zero.
    let (_, out, _) = daemon.cli(&["-c", "show ports p2 statistics"], "");
    let row: Vec<String> = out
        .lines()
        .nth(1)
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect();
    assert_eq!(row[..3], ["p2", "5", "270"], "{out}");
    assert_eq!(row[6], "1", "one discard: {out}");
    // A port nothing crossed counts zeros, as a chip does: known, not unknown.
    let (_, out, _) = daemon.cli(&["-c", "show ports p4 statistics"], "");
    let row = out.lines().nth(1).unwrap_or_default();
    assert_eq!(
        row.split_whitespace().take(5).collect::<Vec<_>>(),
        ["p4", "0", "0", "0", "0"],
        "{out}"
    );
}

#[test]
fn sessions_meet_at_the_pair_and_core_efb_config_predicts() {
    let dir = tempfile::tempdir().unwrap();
    let target = Target::start(&[]);
    let daemon = daemon_on(dir.path(), &target);
    configure(&daemon, "");
    let schema = Arc::new(efb_yang::Schema::load().unwrap());
    let validator = efb_model::validation::Validator::new(schema.clone()).unwrap();
    let site_json = std::fs::read_to_string(repo().join("examples/one-filter-site.json")).unwrap();
    let tree =
        efb_yang::json::from_json(&schema, &site_json, efb_yang::json::Check::Complete).unwrap();
    let config = validator.read(&tree).unwrap();
    let mut chip = Chip::connect(&target);
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let total = 10_000;
    let sessions: Vec<([u8; 4], [u8; 4], u16)> = (0..total)
        .map(|_| {
            (
                [10, rng.random(), rng.random(), rng.random()],
                [rng.random_range(11..200), rng.random(), rng.random(), 1],
                rng.random_range(1024..60000),
            )
        })
        .collect();
    for chunk in sessions.chunks(1000) {
        // Both directions of each session: LAN side in by p2, WAN side in by p1.
        chip.inject(
            "p2",
            chunk
                .iter()
                .map(|(s, d, sp)| frames::tcp4(*s, *d, *sp, 443))
                .collect(),
        );
        chip.inject(
            "p1",
            chunk
                .iter()
                .map(|(s, d, sp)| frames::tcp4(*d, *s, 443, *sp))
                .collect(),
        );
    }
    let pair_wan: Vec<String> = config.units["ef1"]
        .pairs
        .iter()
        .map(|p| p.wan_port.clone())
        .collect();
    let mut ports: Vec<&str> = PAIR_LAN_PORTS.to_vec();
    ports.extend(pair_wan.iter().map(String::as_str));
    let seen = chip.out(&ports, 2 * total);
    assert_eq!(seen.len(), 2 * total);
    // Frames seen per session (addresses in order): device port and the two tag bytes.
    type Seen = Vec<(u32, u8, u8)>;
    let mut by_session: std::collections::HashMap<(Ipv4Addr, Ipv4Addr), Seen> = Default::default();
    for frame in &seen {
        let ip = &frame.payload[18..];
        let a = Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]);
        let b = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);
        let key = if a < b { (a, b) } else { (b, a) };
        by_session.entry(key).or_default().push((
            frame.device_port,
            frame.payload[14],
            frame.payload[15],
        ));
    }
    let map = efb_p4info::PortMap::builtin().unwrap();
    let device = |name: &str| {
        let p = &config.ports[name];
        map.device_port(efb_p4info::PortName {
            port: u32::from(p.number),
            lane: p.lane.map(u32::from),
        })
        .unwrap()
    };
    for (s, d, sp) in &sessions {
        let (src, dst) = (Ipv4Addr::from(*s), Ipv4Addr::from(*d));
        let key = if src < dst { (src, dst) } else { (dst, src) };
        let both = &by_session[&key];
        assert_eq!(both.len(), 2, "both directions seen");
        let (lan, wan) = (
            both.iter()
                .find(|f| PAIR_LAN_PORTS.iter().any(|p| device(p) == f.0))
                .unwrap(),
            both.iter()
                .find(|f| pair_wan.iter().any(|p| device(p) == f.0))
                .unwrap(),
        );
        assert_eq!(lan.2, wan.2, "one core for both directions");
        // Every session lands where lookup-session says (MODEL.md version 2).
        let found = efb_balancing::lookup_session(
            &config,
            &Session {
                src: IpAddr::V4(src),
                dst: IpAddr::V4(dst),
                ip_proto: 6,
                src_port: *sp,
                dst_port: 443,
                link: Some("l1".into()),
            },
            &LiveState::all_up(),
        )
        .unwrap();
        assert_eq!(
            Some(device(found.lan_egress_port.as_deref().unwrap())),
            Some(lan.0)
        );
        assert_eq!(
            Some(device(found.wan_egress_port.as_deref().unwrap())),
            Some(wan.0)
        );
        assert_eq!(found.core, Some(u16::from(lan.2)));
    }
    // And efb-config itself agrees, for one of them.
    let (s, d, sp) = sessions[0];
    let out = std::process::Command::new(efb_tests::binary("efb-config"))
        .arg("lookup")
        .arg(repo().join("examples/one-filter-site.json"))
        .args([
            "--src",
            &Ipv4Addr::from(s).to_string(),
            "--dst",
            &Ipv4Addr::from(d).to_string(),
            "--proto",
            "6",
            "--src-port",
            &sp.to_string(),
            "--dst-port",
            "443",
            "--link",
            "l1",
        ])
        .output()
        .unwrap();
    let predicted: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let key = if Ipv4Addr::from(s) < Ipv4Addr::from(d) {
        (Ipv4Addr::from(s), Ipv4Addr::from(d))
    } else {
        (Ipv4Addr::from(d), Ipv4Addr::from(s))
    };
    assert_eq!(
        predicted["core"].as_u64(),
        Some(u64::from(by_session[&key][0].2))
    );
}

#[test]
fn a_commit_the_chip_refuses_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // A chip with less room than the program declares (the compiler lets the flows
    // through): one core per filter makes 256 buckets, which fit in 1000 entries; 1200
    // IPv4 flows do not.
    let target = Target::start(&["--table-size-limit", "1000"]);
    let users = repo().join("examples/users.demo.toml");
    let daemon = Daemon::start(
        &dir.path().join("datastore"),
        &[
            "--p4runtime",
            &target.address,
            "--gnmi-plaintext",
            "--gnmi-users",
            users.to_str().unwrap(),
        ],
    );
    configure(&daemon, "set ecofilter-balancer ecofilter-unit ef1 cores 1");
    let (_, before, _) = daemon.cli(&["-c", "show configuration | display set"], "");
    let many: String = (0..1200u32)
        .map(|i| {
            let [_, _, a, b] = i.to_be_bytes();
            format!(
                "set ecofilter-balancer flow many{i} priority {} match dst-ipv4 10.0.{a}.{b}/32\n",
                1000 + i
            )
        })
        .collect();
    let (code, _, err) = daemon.cli(&[], &format!("edit\n{many}commit\n"));
    assert_eq!(code, 1);
    assert!(
        err.contains("the chip refused") && err.contains("flow[name='many"),
        "{err}"
    );
    // Programs know a full table by its code, the same from both APIs.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut mgmt = mgmt_io::connect(&rt, &daemon);
    let err = mgmt_io::commit_lines(&rt, &mut mgmt, &many).unwrap_err();
    assert_eq!(err.code(), tonic::Code::ResourceExhausted, "{err:?}");
    assert!(err.message().contains("flow[name='many"), "{err:?}");
    let err = gnmi_set_flows(&rt, &daemon, 1200).unwrap_err();
    assert_eq!(err.code(), tonic::Code::ResourceExhausted, "{err:?}");
    assert!(err.message().contains("flow[name='many"), "{err:?}");
    let (_, after, _) = daemon.cli(&["-c", "show configuration | display set"], "");
    assert_eq!(after, before, "running unchanged");
    let status = wait_reconciled(&daemon, "in sync");
    assert!(status.contains("in sync"), "{status}");
    // The chip is as before: a site frame still goes to a filter, and a restarted efbd
    // finds nothing to correct.
    assert!(daemon.stop());
    let daemon = daemon_on(dir.path(), &target);
    wait_reconciled(&daemon, "wrote 0 entries");
}

#[test]
fn a_commit_past_the_chips_capacity_is_refused_with_the_number() {
    let dir = tempfile::tempdir().unwrap();
    let target = Target::start(&[]);
    let daemon = daemon_on(dir.path(), &target);
    configure(&daemon, "");
    let (_, before, _) = daemon.cli(&["-c", "show configuration | display set"], "");
    // The IPv6 flow table as compiled for the chip; the site has IPv6 entries of its own.
    let capacity = efb_p4info::index()
        .unwrap()
        .table_by_name(efb_p4info::names::flows::IPV6.table)
        .unwrap()
        .size;
    let many: String = (0..capacity)
        .map(|i| {
            format!(
                "set ecofilter-balancer flow v6-{i} priority {} match src-ipv6 2001:db8::{i:x}/128\n",
                1000 + i
            )
        })
        .collect();
    let (code, _, err) = daemon.cli(&[], &format!("edit\n{many}commit\n"));
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(&format!("the chip holds {capacity} IPv6 flow entries")),
        "{err}"
    );
    // Before anything was written: the same code as a full table, from the API too.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut mgmt = mgmt_io::connect(&rt, &daemon);
    let err = mgmt_io::commit_lines(&rt, &mut mgmt, &many).unwrap_err();
    assert_eq!(err.code(), tonic::Code::ResourceExhausted, "{err:?}");
    assert!(err.message().contains("needs"), "{err:?}");
    let (_, after, _) = daemon.cli(&["-c", "show configuration | display set"], "");
    assert_eq!(after, before, "running unchanged");
    assert!(daemon.stop());
    let daemon = daemon_on(dir.path(), &target);
    wait_reconciled(&daemon, "wrote 0 entries");
}

/// A gNMI Set of `count` flows as the shell's `many` lines make them.
fn gnmi_set_flows(
    rt: &tokio::runtime::Runtime,
    daemon: &Daemon,
    count: u32,
) -> Result<gnmi_proto::gnmi::SetResponse, tonic::Status> {
    use efb_tests::gnmi_io::{authed, connect, path};
    use gnmi_proto::gnmi::g_nmi_client::GNmiClient;
    use gnmi_proto::gnmi::{SetRequest, TypedValue, Update, typed_value};

    let flows: Vec<serde_json::Value> = (0..count)
        .map(|i| {
            let [_, _, a, b] = i.to_be_bytes();
            serde_json::json!({
                "name": format!("many{i}"),
                "priority": 1000 + i,
                "match": {"dst-ipv4": format!("10.0.{a}.{b}/32")},
            })
        })
        .collect();
    let set = SetRequest {
        update: vec![Update {
            path: Some(path(&[("ecofilter-balancer", None)])),
            val: Some(TypedValue {
                value: Some(typed_value::Value::JsonIetfVal(
                    serde_json::json!({ "flow": flows })
                        .to_string()
                        .into_bytes(),
                )),
            }),
            ..Update::default()
        }],
        ..SetRequest::default()
    };
    rt.block_on(async {
        let mut client = GNmiClient::new(connect(daemon).await);
        client
            .set(authed(set, "admin"))
            .await
            .map(tonic::Response::into_inner)
    })
}

#[test]
fn reconcile_after_restarts_of_efbd_and_of_the_chip() {
    let dir = tempfile::tempdir().unwrap();
    let target = Target::start(&[]);
    let daemon = daemon_on(dir.path(), &target);
    configure(&daemon, "");
    assert!(daemon.stop());
    // efbd restarted, nothing changed: nothing written.
    let daemon = daemon_on(dir.path(), &target);
    wait_reconciled(&daemon, "wrote 0 entries");
    // The chip restarted empty: everything written again (every table entry but the
    // balancing method's default, which the program starts with, and the unit's keep-alive
    // multicast group).
    let mut chip = Chip::connect(&target);
    chip.restart(false);
    let status = wait_reconciled(&daemon, "wrote 4155 entries");
    assert!(status.contains("4156 entries"), "{status}");
    // A commit while the chip is away: refused, unless offline; then reconciled on return.
    drop(target);
    std::thread::sleep(Duration::from_millis(300));
    let (code, _, err) = daemon.cli(
        &[],
        "edit\nset ecofilter-balancer flow late priority 5\ncommit\n",
    );
    assert_eq!(code, 1);
    assert!(
        err.contains("not reachable") && err.contains("commit offline"),
        "{err}"
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut mgmt = mgmt_io::connect(&rt, &daemon);
    let err = mgmt_io::commit_lines(
        &rt,
        &mut mgmt,
        "set ecofilter-balancer flow late priority 5",
    )
    .unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unavailable, "{err:?}");
    let (code, out, err) = daemon.cli(
        &[],
        "edit\nset ecofilter-balancer flow late priority 5\ncommit offline\n",
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("NOT programmed"), "{out}");
    let (_, status, _) = daemon.cli(&["-c", "show system status"], "");
    assert!(
        status.contains("out of sync") || status.contains("not connected"),
        "{status}"
    );
}

#[test]
fn a_killed_efbd_restarts_with_old_or_new_and_reconciles_the_chip() {
    let dir = tempfile::tempdir().unwrap();
    let target = Target::start(&[]);
    let daemon = daemon_on(dir.path(), &target);
    configure(&daemon, "");
    // As many flows as the chip holds beside the site's (one IPv4 entry each).
    let bulk = efb_p4info::index()
        .unwrap()
        .table_by_name(efb_p4info::names::flows::IPV4.table)
        .unwrap()
        .size as u32
        - 16;
    let mut lines = String::from("edit\n");
    for i in 0..bulk {
        let [_, a, b, c] = i.to_be_bytes();
        lines.push_str(&format!(
            "set ecofilter-balancer flow bulk{i} priority {} match dst-ipv4 10.{a}.{b}.{c}/32 ip-proto 17\n",
            1000 + i
        ));
    }
    lines.push_str("commit\n");
    // Commit from another thread and kill efbd while it runs.
    let address = daemon.address.clone();
    let committer = std::thread::spawn(move || {
        let mut child = std::process::Command::new(efb_tests::binary("efb-cli"))
            .args(["--connect", &address])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        use std::io::Write;
        let _ = child.stdin.take().unwrap().write_all(lines.as_bytes());
        let _ = child.wait();
    });
    std::thread::sleep(Duration::from_millis(1500));
    daemon.kill();
    committer.join().unwrap();
    let daemon = daemon_on(dir.path(), &target);
    let status = wait_reconciled(&daemon, "in sync");
    let (_, count, _) = daemon.cli(&["-c", "show ecofilter-balancer flow | count"], "");
    let flows: usize = count
        .trim()
        .trim_start_matches("Count: ")
        .trim_end_matches(" lines")
        .parse::<usize>()
        .unwrap()
        - 1;
    assert!(
        flows == 6 || flows == bulk as usize + 6,
        "running is the old or the new configuration: {flows} flows"
    );
    // What the chip holds is exactly the running configuration: a second restart of efbd
    // finds nothing to write.
    assert!(status.contains("in sync"));
    assert!(daemon.stop());
    let daemon = daemon_on(dir.path(), &target);
    wait_reconciled(&daemon, "wrote 0 entries");
}

/// gNMI serves the chip's counters as the shell does: Get reads them when asked, and a
/// SAMPLE subscription sees them move with the traffic.
#[test]
fn gnmi_get_and_sample_read_the_chips_counters() {
    use efb_tests::gnmi_io::{authed, json, path};
    use gnmi_proto::gnmi::g_nmi_client::GNmiClient;
    use gnmi_proto::gnmi::{
        Encoding, GetRequest, SubscribeRequest, Subscription, SubscriptionList, SubscriptionMode,
        get_request, subscribe_request, subscribe_response, subscription_list,
    };

    let dir = tempfile::tempdir().unwrap();
    let target = Target::start(&[]);
    let users = repo().join("examples/users.demo.toml");
    let daemon = Daemon::start(
        &dir.path().join("datastore"),
        &[
            "--p4runtime",
            &target.address,
            "--gnmi-plaintext",
            "--gnmi-users",
            users.to_str().unwrap(),
        ],
    );
    configure(&daemon, "");
    let mut chip = Chip::connect(&target);
    let arp = frames::eth(&[], 0x0806, &[0u8; 28]);
    chip.inject("p2", vec![arp.clone(); 3]);
    let address = format!("http://{}", daemon.gnmi.clone().unwrap());
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut client = rt.block_on(GNmiClient::connect(address)).unwrap();

    let state = path(&[
        ("ports", None),
        ("port", Some(("name", "p2"))),
        ("state", None),
    ]);
    let get = GetRequest {
        path: vec![state.clone()],
        r#type: get_request::DataType::State as i32,
        encoding: Encoding::JsonIetf as i32,
        ..GetRequest::default()
    };
    let reply = rt
        .block_on(client.get(authed(get, "viewer")))
        .unwrap()
        .into_inner();
    let value = json(reply.notification[0].update[0].val.clone());
    assert_eq!(value["oper-status"], "up", "{value}");
    assert_eq!(value["counters"]["in-frames"], "3", "{value}");

    let in_frames = path(&[
        ("ports", None),
        ("port", Some(("name", "p2"))),
        ("state", None),
        ("counters", None),
        ("in-frames", None),
    ]);
    let subscribe = SubscribeRequest {
        request: Some(subscribe_request::Request::Subscribe(SubscriptionList {
            subscription: vec![Subscription {
                path: Some(in_frames),
                mode: SubscriptionMode::Sample as i32,
                sample_interval: 100_000_000,
                suppress_redundant: true,
                ..Subscription::default()
            }],
            mode: subscription_list::Mode::Stream as i32,
            encoding: Encoding::JsonIetf as i32,
            ..SubscriptionList::default()
        })),
        ..SubscribeRequest::default()
    };
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    rt.block_on(tx.send(subscribe)).unwrap();
    let mut stream = rt
        .block_on(client.subscribe(authed(
            tokio_stream::wrappers::ReceiverStream::new(rx),
            "viewer",
        )))
        .unwrap()
        .into_inner();
    let mut next_count = || loop {
        let message = rt
            .block_on(async {
                tokio::time::timeout(Duration::from_secs(5), stream.message()).await
            })
            .expect("a sample in time")
            .unwrap()
            .unwrap();
        if let Some(subscribe_response::Response::Update(n)) = message.response
            && let Some(u) = n.update.into_iter().next()
        {
            return json(u.val);
        }
    };
    assert_eq!(next_count(), "3", "the first dump");
    chip.inject("p2", vec![arp; 2]);
    assert_eq!(next_count(), "5", "a later sample");
    drop(tx);
}

/// Another controller (an engineer's p4runtime-shell, say) arbitrates with a huge election
/// id and leaves: efbd waits as backup while it is there, says who holds the chip, and is
/// primary again within seconds of it leaving, though the target remembers that id.
#[test]
fn efbd_takes_the_chip_back_after_a_controller_with_a_higher_election_id_leaves() {
    use p4runtime_proto::p4::v1::{self as p4, p4_runtime_client::P4RuntimeClient};
    use tokio_stream::StreamExt;

    let dir = tempfile::tempdir().unwrap();
    let target = Target::start(&[]);
    let daemon = daemon_on(dir.path(), &target);
    configure(&daemon, "");
    let rt = efb_tests::chip_io::runtime();
    let huge: u128 = 1 << 100;
    let (other, mut answers) = rt.block_on(async {
        let mut client = P4RuntimeClient::connect(format!("http://{}", target.address))
            .await
            .unwrap();
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        tx.send(p4::StreamMessageRequest {
            update: Some(p4::stream_message_request::Update::Arbitration(
                p4::MasterArbitrationUpdate {
                    device_id: 1,
                    election_id: Some(p4::Uint128 {
                        high: (huge >> 64) as u64,
                        low: huge as u64,
                    }),
                    ..Default::default()
                },
            )),
        })
        .await
        .unwrap();
        let answers = client
            .stream_channel(tokio_stream::wrappers::ReceiverStream::new(rx))
            .await
            .unwrap()
            .into_inner();
        (tx, answers)
    });
    let first = rt.block_on(answers.next()).unwrap().unwrap();
    let Some(p4::stream_message_response::Update::Arbitration(a)) = first.update else {
        panic!("no arbitration answer: {first:?}");
    };
    assert_eq!(a.status.unwrap().code, 0, "the other controller is primary");

    let status = wait_status(&daemon, "another controller holds the chip");
    assert!(status.contains(&huge.to_string()), "{status}");
    let (code, _, err) = daemon.cli(
        &[],
        "edit\nset ecofilter-balancer flow x priority 5\ncommit\n",
    );
    assert_eq!(code, 1, "no commit while efbd does not hold the chip");
    assert!(err.contains("commit offline"), "{err}");

    // The other controller leaves: its connection closes with its runtime.
    drop((other, answers));
    drop(rt);
    let back = std::time::Instant::now();
    wait_reconciled(&daemon, "in sync");
    assert!(
        back.elapsed() < Duration::from_secs(5),
        "{:?}",
        back.elapsed()
    );
    let (code, _, err) = daemon.cli(
        &[],
        "edit\nset ecofilter-balancer flow x priority 5\ncommit\n",
    );
    assert_eq!(code, 0, "{err}");
}

/// `show system status` once it contains `text`.
fn wait_status(daemon: &Daemon, text: &str) -> String {
    for _ in 0..100 {
        let (_, out, _) = daemon.cli(&["-c", "show system status"], "");
        if out.contains(text) {
            return out;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let (_, out, _) = daemon.cli(&["-c", "show system status"], "");
    panic!("show system status never said {text:?}:\n{out}");
}
