//! The driver against the software target over real gRPC: programming, reconcile after
//! restarts of either side, refused commits undone, and frames going where the balancing
//! algorithm says.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::Duration;

use efb_balancing::{LiveState, Session};
use efb_chip::{ChipError, ChipWrites};
use efb_datastore::{Running, Southbound};
use efb_model::Config;
use efb_model::validation::Validator;
use efb_p4::{Driver, DriverSettings, DriverStatus};
use efb_p4info::PortMap;
use efb_target::control_proto::{self as pb, target_control_client::TargetControlClient};
use efb_target::frames;
use efb_target::{Device, DeviceOptions, Profile, Servers};
use efb_yang::json::{self, Check};
use efb_yang::{DataTree, Schema, setlines};
use p4runtime_proto::p4::v1::{self as p4, p4_runtime_client::P4RuntimeClient};
use rand::{Rng, SeedableRng};

fn example(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/../../examples/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

fn config(lines: &str) -> Arc<Config> {
    let validator = Validator::new(Arc::new(Schema::load().unwrap())).unwrap();
    let mut tree = json::from_json(
        validator.schema(),
        &example("one-filter-site.json"),
        Check::Complete,
    )
    .unwrap();
    setlines::apply_lines(validator.schema(), &mut tree, lines).unwrap();
    let validated = validator.validate(&tree, false);
    assert!(
        validated.report.errors.is_empty(),
        "{:?}",
        validated.report.errors
    );
    validated.config.unwrap()
}

fn running(config: &Arc<Config>) -> Running {
    Running {
        tree: DataTree::new(),
        inactive: Default::default(),
        config: config.clone(),
        commit_id: 1,
    }
}

async fn target(table_size_limit: u64) -> Servers {
    let device = Device::new(DeviceOptions {
        device_id: 1,
        profile: Profile::StratumTofino,
        port_map: PortMap::builtin().unwrap(),
        capture_limit: 20_000,
        table_size_limit,
        emulated_filters: true,
    });
    efb_target::serve(device, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap()
}

fn settings(servers: &Servers, dir: &std::path::Path) -> DriverSettings {
    DriverSettings {
        target: servers.addr.to_string(),
        device_id: 1,
        state_file: dir.join("southbound.json"),
        batch: 256,
    }
}

/// Waits until the driver reports a reconcile after `after` (and in sync).
async fn reconciled(driver: &Driver, after: Option<std::time::SystemTime>) -> DriverStatus {
    for _ in 0..200 {
        let status = driver.status();
        if status.in_sync && status.last_reconcile.is_some() && status.last_reconcile > after {
            return status;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no reconcile: {:?}", driver.status());
}

/// A driver for `site` on the servers, once it has reconciled the target; with its status.
async fn start_reconciled(
    servers: &Servers,
    dir: &std::path::Path,
    site: &Arc<Config>,
) -> (Driver, DriverStatus) {
    let driver = Driver::start(
        settings(servers, dir),
        PortMap::builtin().unwrap(),
        site.clone(),
    )
    .unwrap();
    let status = reconciled(&driver, None).await;
    (driver, status)
}

/// Runs a blocking southbound call off the runtime (efbd calls it from its owner thread).
async fn apply(
    driver: &Driver,
    next: &Arc<Config>,
    offline: bool,
) -> Result<ChipWrites, ChipError> {
    let mut d = driver.clone();
    let next = running(next);
    tokio::task::spawn_blocking(move || d.apply(&next, &next, offline))
        .await
        .unwrap()
}

async fn entries_on_target(servers: &Servers) -> Vec<p4::TableEntry> {
    let mut client = P4RuntimeClient::connect(format!("http://{}", servers.addr))
        .await
        .unwrap()
        .max_decoding_message_size(usize::MAX);
    let mut stream = client
        .read(p4::ReadRequest {
            device_id: 1,
            entities: vec![p4::Entity {
                entity: Some(p4::entity::Entity::TableEntry(p4::TableEntry::default())),
            }],
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let mut out = Vec::new();
    while let Some(reply) = stream.message().await.unwrap() {
        for e in reply.entities {
            if let Some(p4::entity::Entity::TableEntry(t)) = e.entity {
                out.push(t);
            }
        }
    }
    out.sort_by_key(|e| format!("{e:?}"));
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_writes_only_what_differs() {
    let dir = tempfile::tempdir().unwrap();
    let servers = target(0).await;
    let site = config("");
    let (first, status) = start_reconciled(&servers, dir.path(), &site).await;
    // Everything but the balancing method, whose default (layer-3) the program starts with.
    assert_eq!(
        status.reconcile_written,
        status.entries - 1,
        "an empty target gets everything"
    );
    assert!(status.entries > 4000);
    first.stop().await;

    // efbd restarted with nothing changed: nothing written.
    let (second, status) = start_reconciled(&servers, dir.path(), &site).await;
    assert_eq!(status.reconcile_written, 0);

    // The target restarted empty: everything again, after reconnecting by itself.
    let mut control = TargetControlClient::connect(format!("http://{}", servers.addr))
        .await
        .unwrap();
    control
        .restart(pb::RestartRequest { keep_tables: false })
        .await
        .unwrap();
    let status = reconciled(&second, status.last_reconcile).await;
    assert_eq!(status.reconcile_written, status.entries - 1);

    // A stray entry (left by a configuration that is not running) and an altered one are
    // corrected: a driver for another configuration writes them, the next one repairs.
    let other = config(
        "set ecofilter-balancer flow stray priority 7 match ip-proto 17\nset ecofilter-balancer flow bgp-to action drop",
    );
    apply(&second, &other, false).await.unwrap();
    second.stop().await;
    let (third, status) = start_reconciled(&servers, dir.path(), &site).await;
    // The stray flow's IPv4 and IPv6 entries deleted, bgp-to's two modified.
    assert_eq!(status.reconcile_written, 4, "two deletes, two modifies");
    third.stop().await;
}

/// `n` flows that only IPv4 frames can match: one IPv4 flow entry each.
fn ipv4_flows(n: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                "set ecofilter-balancer flow many{i} priority {} match dst-ipv4 10.{}.{}.0/24\n",
                1000 + i,
                i / 256,
                i % 256
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_commit_leaves_the_target_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    // A chip with less room than the program declares: one core per filter makes 256
    // buckets, which fit in 1000 entries; 1200 IPv4 flows do not (the compiler, which
    // knows the program's size, lets them through).
    let servers = target(1000).await;
    let small_unit = "set ecofilter-balancer ecofilter-unit ef1 cores 1\n";
    let site = config(small_unit);
    let (driver, _) = start_reconciled(&servers, dir.path(), &site).await;
    let before = entries_on_target(&servers).await;
    let big = config(&format!("{small_unit}{}", ipv4_flows(1200)));
    let refused = apply(&driver, &big, false).await.unwrap_err();
    assert!(
        matches!(&refused, ChipError::TableFull { table, .. } if table == "flows_ipv4.flows"),
        "{refused:?}"
    );
    assert!(refused.to_string().contains("flow[name='many"), "{refused}");
    assert_eq!(
        entries_on_target(&servers).await,
        before,
        "what was written is undone"
    );
    // The driver still programs the next commit from what the chip holds: a flow on IP
    // frames is an entry in each IP flow table.
    let small = config(&format!(
        "{small_unit}set ecofilter-balancer flow one priority 9 match ip-proto 17"
    ));
    let written = apply(&driver, &small, false).await.unwrap();
    assert_eq!(written, ChipWrites::Written { entries: 2 });
    driver.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_past_the_chips_capacity_is_refused_before_any_write() {
    let dir = tempfile::tempdir().unwrap();
    let servers = target(0).await;
    let site = config("");
    let (driver, _) = start_reconciled(&servers, dir.path(), &site).await;
    let before = entries_on_target(&servers).await;
    // The site has 5 IPv4 flow entries of its own.
    let capacity = efb_p4info::index()
        .unwrap()
        .table_by_name(efb_p4info::names::flows::IPV4.table)
        .unwrap()
        .size;
    let big = config(&ipv4_flows(capacity as usize + 4));
    let refused = apply(&driver, &big, false).await.unwrap_err();
    let ChipError::OverCapacity(over) = &refused else {
        panic!("{refused:?}");
    };
    let message = over.to_string();
    assert!(
        message.contains(&format!("{capacity} IPv4 flow entries"))
            && message.contains(&format!("needs {}", capacity + 9)),
        "{message}"
    );
    assert_eq!(refused.kind(), efb_chip::ChipErrorKind::Full);
    assert_eq!(entries_on_target(&servers).await, before, "nothing written");
    assert!(driver.status().in_sync);
    driver.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_chip_a_commit_fails_unless_offline() {
    let dir = tempfile::tempdir().unwrap();
    let site = config("");
    let settings = DriverSettings {
        target: "127.0.0.1:1".into(),
        device_id: 1,
        state_file: dir.path().join("southbound.json"),
        batch: 256,
    };
    let driver = Driver::start(settings, PortMap::builtin().unwrap(), site.clone()).unwrap();
    let changed = config("set ecofilter-balancer flow x priority 9");
    let err = apply(&driver, &changed, false).await.unwrap_err();
    assert!(
        matches!(&err, ChipError::Unreachable { address, .. } if address == "127.0.0.1:1"),
        "{err:?}"
    );
    assert!(err.to_string().contains("commit offline"), "{err}");
    let ok = apply(&driver, &changed, true).await.unwrap();
    assert_eq!(ok, ChipWrites::Offline);
    assert!(!driver.status().in_sync);
    driver.stop().await;
}

/// Frames of random sessions reach the pair and core `lookup_session` names, with the link
/// and core in the tag, and come back out of the link's other port unchanged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_reach_the_pair_and_core_the_algorithm_names() {
    let dir = tempfile::tempdir().unwrap();
    let servers = target(0).await;
    let site = config("");
    let (driver, _) = start_reconciled(&servers, dir.path(), &site).await;
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("southbound.json")).unwrap())
            .unwrap();
    let link_id = saved["ids"]["links"]["l1"].as_u64().unwrap() as u8;
    let mut control = TargetControlClient::connect(format!("http://{}", servers.addr))
        .await
        .unwrap();
    let map = PortMap::builtin().unwrap();
    let port_of = |name: &str| {
        let p = &site.ports[name];
        map.device_port(efb_p4info::PortName {
            port: u32::from(p.number),
            lane: p.lane.map(u32::from),
        })
        .unwrap()
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    let sessions: Vec<([u8; 4], [u8; 4], u16, u16)> = (0..1000)
        .map(|_| {
            (
                rng.random(),
                [8, 8, rng.random(), rng.random()],
                rng.random_range(1024..65535),
                443,
            )
        })
        .map(|(mut src, dst, sp, dp): ([u8; 4], [u8; 4], u16, u16)| {
            src[0] = 10;
            (src, dst, sp, dp)
        })
        .collect();
    let injected: Vec<pb::InjectedFrame> = sessions
        .iter()
        .map(|(s, d, sp, dp)| pb::InjectedFrame {
            port: Some(pb::PortRef {
                port: Some(pb::port_ref::Port::Name("p2".into())),
            }),
            payload: frames::tcp4(*s, *d, *sp, *dp),
        })
        .collect();
    control
        .inject_frames(pb::InjectFramesRequest {
            frames: injected.clone(),
        })
        .await
        .unwrap();
    let pair_ports: Vec<pb::PortRef> = site.units["ef1"]
        .pairs
        .iter()
        .map(|p| pb::PortRef {
            port: Some(pb::port_ref::Port::Name(p.lan_port.clone())),
        })
        .collect();
    let to_filters = control
        .read_frames(pb::ReadFramesRequest {
            ports: pair_ports,
            min_frames: sessions.len() as u32,
            timeout_ms: 5000,
            keep: false,
        })
        .await
        .unwrap()
        .into_inner()
        .frames;
    assert_eq!(to_filters.len(), sessions.len());
    for frame in &to_filters {
        // dst mac, src mac, then the tag: TPID 0x88B5, link id, core.
        let tag = &frame.payload[12..16];
        assert_eq!(&tag[..2], &[0x88, 0xb5]);
        assert_eq!(tag[2], link_id);
        let ip = &frame.payload[16 + 2..];
        let src = Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]);
        let dst = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);
        let found = efb_balancing::lookup_session(
            &site,
            &Session {
                src: IpAddr::V4(src),
                dst: IpAddr::V4(dst),
                ip_proto: 6,
                src_port: u16::from_be_bytes([ip[20], ip[21]]),
                dst_port: 443,
                link: Some("l1".into()),
            },
            &LiveState::all_up(),
        )
        .unwrap();
        assert_eq!(
            found.lan_egress_port.as_deref().map(port_of),
            Some(frame.device_port),
            "{src} -> {dst}"
        );
        assert_eq!(found.core, Some(u16::from(tag[3])));
    }
    // Back from the filters, out of the link's WAN port, exactly as they came in.
    let back = control
        .read_frames(pb::ReadFramesRequest {
            ports: vec![pb::PortRef {
                port: Some(pb::port_ref::Port::Name("p1".into())),
            }],
            min_frames: sessions.len() as u32,
            timeout_ms: 5000,
            keep: false,
        })
        .await
        .unwrap()
        .into_inner()
        .frames;
    let mut sent: Vec<Vec<u8>> = injected.into_iter().map(|f| f.payload).collect();
    let mut received: Vec<Vec<u8>> = back.into_iter().map(|f| f.payload).collect();
    sent.sort();
    received.sort();
    assert_eq!(received, sent);
    driver.stop().await;
}

/// The multicast groups the target holds, as (group, sorted (port, instance)).
async fn groups_on_target(servers: &Servers) -> Vec<(u32, Vec<(u32, u32)>)> {
    let mut client = P4RuntimeClient::connect(format!("http://{}", servers.addr))
        .await
        .unwrap();
    let all = p4::Entity {
        entity: Some(p4::entity::Entity::PacketReplicationEngineEntry(
            p4::PacketReplicationEngineEntry {
                r#type: Some(
                    p4::packet_replication_engine_entry::Type::MulticastGroupEntry(
                        p4::MulticastGroupEntry::default(),
                    ),
                ),
            },
        )),
    };
    let mut stream = client
        .read(p4::ReadRequest {
            device_id: 1,
            entities: vec![all],
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let mut read = Vec::new();
    while let Some(reply) = stream.message().await.unwrap() {
        for e in reply.entities {
            if let Some(p4::entity::Entity::PacketReplicationEngineEntry(pre)) = e.entity
                && let Some(p4::packet_replication_engine_entry::Type::MulticastGroupEntry(g)) =
                    pre.r#type
            {
                read.push(g);
            }
        }
    }
    // The driver's own reading of replicas, sorted by group.
    let mut out: Vec<(u32, Vec<(u32, u32)>)> =
        efb_p4::keepalive::groups_read(read).into_iter().collect();
    out.sort_unstable();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keep_alive_groups_follow_the_configuration_and_rounds_are_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let servers = target(0).await;
    let site = config("");
    let (driver, _) = start_reconciled(&servers, dir.path(), &site).await;
    let ids = driver.ids().await;
    let unit = ids.unit("ef1").unwrap();
    let groups = groups_on_target(&servers).await;
    assert_eq!(groups.len(), 1, "one group, the probed unit's: {groups:?}");
    let (group, replicas) = &groups[0];
    assert_eq!(*group, unit);
    assert_eq!(replicas.len(), 16, "both ports of each of the 8 pairs");
    let ports = PortMap::builtin().unwrap();
    let device = |name: &str| ports.resolve(name).unwrap();
    // The pair f1-te1-te2's two ports; the chip names each copy by its port.
    assert!(replicas.contains(&(device("p9-0"), 0)), "LAN: {replicas:?}");
    assert!(replicas.contains(&(device("p9-1"), 0)), "WAN: {replicas:?}");

    // A pair removed: the group is modified; the profile removed: the group deleted.
    let fewer = config("delete ecofilter-balancer ecofilter-unit ef1 pair f1-te1-te2");
    apply(&driver, &fewer, false).await.unwrap();
    assert_eq!(groups_on_target(&servers).await[0].1.len(), 14);
    let unprobed = config("delete ecofilter-balancer ecofilter-unit ef1 liveness-profile");
    apply(&driver, &unprobed, false).await.unwrap();
    assert!(groups_on_target(&servers).await.is_empty());

    // Back, then a round sent through the group comes back by the emulated filters and
    // is read from the chip's registers.
    apply(&driver, &site, false).await.unwrap();
    let reader = driver
        .round_reader()
        .expect("connected: records can be read");
    let seq = reader.newest_round().await.unwrap() + 1;
    let unit_id = u8::try_from(unit).unwrap();
    let round = efb_liveness::KeepAlive::round(unit_id, seq, 0).encode();
    driver.send_round(unit_id, round).unwrap();
    // Out of the pair's WAN port, back on its LAN port: recorded by the port it left by.
    let cell = efb_liveness::records::cell(device("p9-1"));
    let wanted = efb_liveness::Wanted {
        units: vec![unit_id],
        cells: vec![cell],
        ..Default::default()
    };
    let mut records = reader.read(&wanted).await.unwrap();
    // A read is no snapshot: the round may enter between the reads of two cells.
    for _ in 0..100 {
        if records.returns[&cell].newest == seq && records.rounds[&unit_id] == seq {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        records = reader.read(&wanted).await.unwrap();
    }
    assert_eq!(records.rounds[&unit_id], seq, "the round entered");
    let returned = records.returns[&cell];
    assert_eq!((returned.newest, returned.count), (seq, 1), "{returned:?}");
    assert!(returned.path_ns > 0, "timed by the chip: {returned:?}");
    let odd = usize::from(seq % 2 == 1);
    assert_eq!(
        records.tallies[&unit_id][odd],
        efb_liveness::Tally {
            copies: 16,
            counted: 16
        },
        "the unit's tally of the round's parity: 16 copies left, 16 came back"
    );
    driver.stop().await;
}
