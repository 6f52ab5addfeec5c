//! Crossed balancers, as a site runs them: two balancers with the same balancing
//! configuration (examples/crossed/) but their own ports, links and flows must send every
//! session to the same unit, pair and core, and `efb-config hash-compare` must say whether
//! balancers agree and, when not, exactly what differs, whatever else is unreachable.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use efb_balancing::{LiveState, Lookup, Session};
use efb_model::Config;
use efb_target::frames;
use efb_target_proto::{self as pb, target_control_client::TargetControlClient};
use efb_tests::{Daemon, Target, binary, repo};
use rand::{Rng, SeedableRng};

fn example(side: &str) -> PathBuf {
    repo().join(format!("examples/crossed/balancer-{side}.json"))
}

fn read_config(path: &Path) -> Config {
    let schema = Arc::new(efb_yang::Schema::load().unwrap());
    let validator = efb_model::validation::Validator::new(schema.clone()).unwrap();
    let text = std::fs::read_to_string(path).unwrap();
    let tree = efb_yang::json::from_json(&schema, &text, efb_yang::json::Check::Complete).unwrap();
    let validated = validator.validate(&tree, true);
    assert!(
        validated.report.errors.is_empty() && validated.report.warnings.is_empty(),
        "{}: {:?}",
        path.display(),
        validated.report
    );
    validator.read(&tree).unwrap()
}

/// The link each balancer's sessions enter by (the examples name them differently).
const LINK_A: &str = "l1";
const LINK_B: &str = "north";

/// Sessions a site sees, never BGP (port 179) or multicast, which the two balancers' flows
/// bypass in different ways on purpose: TCP, UDP and ICMP, IPv4 and IPv6.
fn random_sessions(count: usize, seed: u64) -> Vec<Session> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        let v6 = rng.random_bool(0.2);
        let (src, dst) = if v6 {
            let mut s: [u8; 16] = rng.random();
            s[0] = 0xfd;
            let mut d: [u8; 16] = rng.random();
            d[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
            (IpAddr::V6(Ipv6Addr::from(s)), IpAddr::V6(Ipv6Addr::from(d)))
        } else {
            let s = [
                100,
                64 + rng.random_range(0..64),
                rng.random(),
                rng.random(),
            ];
            let d = [
                rng.random_range(1..224),
                rng.random(),
                rng.random(),
                rng.random(),
            ];
            (IpAddr::V4(Ipv4Addr::from(s)), IpAddr::V4(Ipv4Addr::from(d)))
        };
        let ip_proto = match rng.random_range(0..20) {
            0..10 => 6,
            10..18 => 17,
            _ if v6 => 58,
            _ => 1,
        };
        let port = |rng: &mut rand::rngs::StdRng| loop {
            let p = rng.random_range(1..=65535);
            if p != 179 {
                return p;
            }
        };
        let (src_port, dst_port) = if efb_balancing::has_ports(ip_proto) {
            let dst_port = [443, 80, 53, 8080][rng.random_range(0..4)];
            let dst_port = if rng.random_bool(0.2) {
                port(&mut rng)
            } else {
                dst_port
            };
            (port(&mut rng), dst_port)
        } else {
            (0, 0)
        };
        let session = Session {
            src,
            dst,
            ip_proto,
            src_port,
            dst_port,
            link: None,
        };
        if seen.insert(key(&session)) {
            out.push(session);
        }
    }
    out
}

type Key = (IpAddr, IpAddr, u8, u16, u16);

fn key(s: &Session) -> Key {
    (s.src, s.dst, s.ip_proto, s.src_port, s.dst_port)
}

fn lookup(config: &Config, session: &Session, link: &str) -> Lookup {
    let session = Session {
        link: Some(link.to_string()),
        ..session.clone()
    };
    efb_balancing::lookup_session(config, &session, &LiveState::all_up()).unwrap()
}

/// Where a lookup sends a session, in terms both balancers share (no local port names).
fn placement(found: &Lookup) -> (Option<String>, Option<String>, Option<u16>, Option<u32>) {
    (
        found.unit.clone(),
        found.pair.clone(),
        found.core,
        found.bucket,
    )
}

fn frame(s: &Session) -> Vec<u8> {
    let l4 = match s.ip_proto {
        6 => frames::tcp(s.src_port, s.dst_port),
        17 => frames::udp(s.src_port, s.dst_port),
        // An echo request: type, code, checksum, identifier, sequence.
        _ => vec![8, 0, 0, 0, 0, 1, 0, 1],
    };
    match (s.src, s.dst) {
        (IpAddr::V4(a), IpAddr::V4(b)) => frames::eth(
            &[],
            0x0800,
            &frames::ipv4(a.octets(), b.octets(), s.ip_proto, &l4),
        ),
        (IpAddr::V6(a), IpAddr::V6(b)) => frames::eth(
            &[],
            0x86DD,
            &frames::ipv6(a.octets(), b.octets(), s.ip_proto, &l4),
        ),
        _ => unreachable!("sessions are of one family"),
    }
}

/// The session a frame towards a filter carries, and the core in its 4-byte header
/// (TPID 0x88B5, link id, core, then the frame's own EtherType).
fn tagged(payload: &[u8]) -> (Key, u8) {
    assert_eq!(&payload[12..14], &[0x88, 0xb5], "tagged towards the filter");
    let core = payload[15];
    let ethertype = u16::from_be_bytes([payload[16], payload[17]]);
    let ip = &payload[18..];
    let (src, dst, proto, l4): (IpAddr, IpAddr, u8, &[u8]) = if ethertype == 0x0800 {
        let ihl = usize::from(ip[0] & 0x0f) * 4;
        let a: [u8; 4] = ip[12..16].try_into().unwrap();
        let b: [u8; 4] = ip[16..20].try_into().unwrap();
        (a.into(), b.into(), ip[9], &ip[ihl..])
    } else {
        let a: [u8; 16] = ip[8..24].try_into().unwrap();
        let b: [u8; 16] = ip[24..40].try_into().unwrap();
        (a.into(), b.into(), ip[6], &ip[40..])
    };
    let (sp, dp) = if efb_balancing::has_ports(proto) {
        (
            u16::from_be_bytes([l4[0], l4[1]]),
            u16::from_be_bytes([l4[2], l4[3]]),
        )
    } else {
        (0, 0)
    };
    ((src, dst, proto, sp, dp), core)
}

/// One balancer of the crossed site: its chip, its efbd, its configuration.
struct Balancer {
    _target: Target,
    daemon: Daemon,
    control: TargetControlClient<tonic::transport::Channel>,
    config: Config,
    /// Device port of each pair's LAN port -> pair name.
    pair_lan: HashMap<u32, String>,
    link_lan: u32,
}

fn device_port(config: &Config, port: &str) -> u32 {
    let map = efb_p4info::PortMap::builtin().unwrap();
    let p = &config.ports[port];
    map.device_port(efb_p4info::PortName {
        port: u32::from(p.number),
        lane: p.lane.map(u32::from),
    })
    .unwrap()
}

fn start_balancer(rt: &tokio::runtime::Runtime, dir: &Path, side: &str, link: &str) -> Balancer {
    let target = Target::start(&[]);
    let daemon = Daemon::start(
        &dir.join(format!("datastore-{side}")),
        &["--p4runtime", &target.address],
    );
    let file = example(side);
    // Liveness is not what this test is about: primary sends every unit's traffic to its
    // filters whatever the keep-alives say, as with all pairs up.
    let script = format!(
        "edit\nload override {}\ncommit\nexit\ncall ecofilter-balancer set-bypass-ecofilter-unit mode primary\n",
        file.display()
    );
    let (code, out, err) = daemon.cli(&[], &script);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("chip programmed"), "{out}");
    let config = read_config(&file);
    let pair_lan = config
        .units
        .values()
        .flat_map(|u| &u.pairs)
        .map(|p| (device_port(&config, &p.lan_port), p.name.clone()))
        .collect();
    let link_lan = device_port(&config, &config.links[link].lan_port);
    let control = rt
        .block_on(TargetControlClient::connect(format!(
            "http://{}",
            target.address
        )))
        .unwrap();
    Balancer {
        _target: target,
        daemon,
        control,
        config,
        pair_lan,
        link_lan,
    }
}

impl Balancer {
    fn device(port: u32) -> Option<pb::PortRef> {
        Some(pb::PortRef {
            port: Some(pb::port_ref::Port::DevicePort(port)),
        })
    }

    /// Injects every session by the link's LAN port and returns, per session, the pair and
    /// core its frame reached.
    fn through_the_chip(
        &mut self,
        rt: &tokio::runtime::Runtime,
        sessions: &[Session],
    ) -> HashMap<Key, (String, u8)> {
        for chunk in sessions.chunks(500) {
            let frames = chunk
                .iter()
                .map(|s| pb::InjectedFrame {
                    port: Balancer::device(self.link_lan),
                    payload: frame(s),
                })
                .collect();
            rt.block_on(
                self.control
                    .inject_frames(pb::InjectFramesRequest { frames }),
            )
            .unwrap();
        }
        let request = pb::ReadFramesRequest {
            ports: self
                .pair_lan
                .keys()
                .map(|p| pb::PortRef {
                    port: Balancer::device(*p).and_then(|r| r.port),
                })
                .collect(),
            min_frames: u32::try_from(sessions.len()).unwrap(),
            timeout_ms: 10_000,
            keep: false,
        };
        let seen = rt
            .block_on(self.control.read_frames(request))
            .unwrap()
            .into_inner()
            .frames;
        assert_eq!(seen.len(), sessions.len(), "every session reached a filter");
        seen.iter()
            .map(|f| {
                let (key, core) = tagged(&f.payload);
                (key, (self.pair_lan[&f.device_port].clone(), core))
            })
            .collect()
    }
}

#[test]
fn identical_balancing_sends_every_session_to_the_same_unit_pair_and_core() {
    let a = read_config(&example("a"));
    let b = read_config(&example("b"));
    // What the example is about: the same balancing, nothing else in common.
    assert_eq!(
        efb_balancing::config_hash(&a),
        efb_balancing::config_hash(&b)
    );
    assert!(
        a.ports.keys().all(|p| !b.ports.contains_key(p)),
        "no local port name shared"
    );
    assert!(
        a.flows.keys().all(|f| !b.flows.contains_key(f)),
        "no flow shared"
    );
    assert!(
        a.links.keys().all(|l| !b.links.contains_key(l)),
        "no link shared"
    );

    let sessions = random_sessions(100_000, 8);
    let mut per_unit: HashMap<String, usize> = HashMap::new();
    for s in &sessions {
        let (on_a, on_b) = (lookup(&a, s, LINK_A), lookup(&b, s, LINK_B));
        assert_eq!(placement(&on_a), placement(&on_b), "{s:?}");
        assert!(
            !on_a.software_bypass && on_a.pair.is_some(),
            "{s:?}: {on_a:?}"
        );
        *per_unit.entry(on_a.unit.unwrap()).or_default() += 1;
    }
    // Both units took their share (TCP and ICMP to dpi-1, UDP to dpi-2).
    assert!(
        per_unit["dpi-1"] > 50_000 && per_unit["dpi-2"] > 30_000,
        "{per_unit:?}"
    );

    // A thousand of them through both chips: each frame towards a filter leaves by the LAN
    // port of the pair the lookup names, with the core it names, on both balancers.
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime();
    let mut chip_a = start_balancer(&rt, dir.path(), "a", LINK_A);
    let mut chip_b = start_balancer(&rt, dir.path(), "b", LINK_B);
    let sample = &sessions[..1000];
    let started = Instant::now();
    let seen_a = chip_a.through_the_chip(&rt, sample);
    let seen_b = chip_b.through_the_chip(&rt, sample);
    println!(
        "1 000 sessions through both chips in {:?}",
        started.elapsed()
    );
    for s in sample {
        let predicted = lookup(&chip_a.config, s, LINK_A);
        let expected = (
            predicted.pair.clone().unwrap(),
            u8::try_from(predicted.core.unwrap()).unwrap(),
        );
        assert_eq!(seen_a[&key(s)], expected, "efb-a, {s:?}");
        assert_eq!(seen_b[&key(s)], expected, "efb-b, {s:?}");
    }
    // And each daemon's own lookup-session says the same for one of them.
    let s = &sample[0];
    let predicted = lookup(&chip_b.config, s, LINK_B);
    let (_, out, err) = chip_b.daemon.cli(
        &[
            "-c",
            &format!(
                "show ecofilter-balancer lookup-session src {} dst {} proto {} src-port {} dst-port {} link {LINK_B}",
                s.src, s.dst, s.ip_proto, s.src_port, s.dst_port
            ),
        ],
        "",
    );
    let lines: Vec<&str> = out.lines().collect();
    let field = |name: &str| {
        lines
            .iter()
            .find_map(|l| l.strip_prefix(name).filter(|r| r.starts_with(' ')))
            .map(str::trim)
            .unwrap_or_else(|| panic!("no {name} in {out}{err}"))
    };
    assert_eq!(field("pair"), predicted.pair.unwrap());
    assert_eq!(field("core"), predicted.core.unwrap().to_string());
    assert_eq!(field("unit"), predicted.unit.unwrap());
    assert_eq!(
        Some(field("lan-egress-port")),
        predicted.lan_egress_port.as_deref()
    );
    assert!(chip_a.daemon.stop() && chip_b.daemon.stop());
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// efbd with the demo users, serving gNMI, configured with one of the examples.
fn gnmi_balancer(dir: &Path, side: &str, extra: &[&str]) -> Daemon {
    let users = repo().join("examples/users.demo.toml");
    let mut args = vec!["--gnmi-users", users.to_str().unwrap()];
    args.extend_from_slice(extra);
    let daemon = Daemon::start(&dir.join(format!("datastore-{side}")), &args);
    daemon.commit_file(&example(side));
    daemon
}

fn hash_compare(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(binary("efb-config"))
        .arg("hash-compare")
        .args(args)
        // The inventory names its own password sources; nothing may leak in from outside.
        .env_remove("EFB_GNMI_PASSWORD")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A loopback port nothing listens on.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[test]
fn hash_compare_over_gnmi_and_files_names_each_difference_and_each_unreadable_balancer() {
    let dir = tempfile::tempdir().unwrap();
    // One balancer over TLS (its self-signed certificate as the CA file), one in plain
    // text: both ways a site may run gNMI.
    let a = gnmi_balancer(dir.path(), "a", &[]);
    let b = gnmi_balancer(dir.path(), "b", &["--gnmi-plaintext"]);
    assert!(a.gnmi_tls && !b.gnmi_tls);
    let password = dir.path().join("viewer.pw");
    std::fs::write(&password, "viewer\n").unwrap();
    let wrong = dir.path().join("wrong.pw");
    std::fs::write(&wrong, "not-the-password\n").unwrap();
    let inventory = dir.path().join("site.toml");
    std::fs::write(
        &inventory,
        format!(
            r#"
[defaults]
username = "viewer"
password-file = "viewer.pw"

[[balancer]]
name = "efb-a"
gnmi = "{a}"
ca-file = "datastore-a/gnmi-cert.pem"

[[balancer]]
name = "efb-b"
gnmi = "{b}"
plaintext = true

[[balancer]]
name = "planned"
file = "{planned}"

[[balancer]]
name = "gone"
gnmi = "127.0.0.1:{closed}"
plaintext = true

[[balancer]]
name = "intruder"
gnmi = "{b}"
plaintext = true
password-file = "wrong.pw"
"#,
            a = a.gnmi.as_deref().unwrap(),
            b = b.gnmi.as_deref().unwrap(),
            planned = example("a").display(),
            closed = closed_port(),
        ),
    )
    .unwrap();
    let inventory = inventory.to_str().unwrap();

    // The three readable ones agree; the other two are named, and the verdict is no.
    let (code, out, err) = hash_compare(&["--inventory", inventory, "--json", "--timeout", "5"]);
    assert_eq!(code, 1, "{out}{err}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    println!("five balancers compared in {} ms", report["elapsed-ms"]);
    assert_eq!(report["agree"], false);
    assert_eq!(report["reference"], "efb-a");
    assert_eq!(
        (
            &report["compared"],
            &report["differing"],
            &report["not-compared"]
        ),
        (&3.into(), &0.into(), &2.into()),
        "{out}"
    );
    let row = |name: &str| {
        report["balancers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["name"] == name)
            .unwrap()
            .clone()
    };
    let hash = row("efb-a")["hash"].clone();
    for name in ["efb-a", "efb-b", "planned"] {
        assert_eq!(row(name)["status"], "ok", "{out}");
        assert_eq!(row(name)["agrees"], true, "{out}");
        assert_eq!(row(name)["hash"], hash, "{out}");
    }
    // The balancers' own hash is what efb-config computes from what they sent.
    assert_eq!(row("efb-b")["reported-hash"], hash);
    assert_eq!(row("gone")["status"], "unreachable", "{out}");
    assert_eq!(row("intruder")["status"], "unauthenticated", "{out}");
    assert!(
        row("intruder")["error"]
            .as_str()
            .unwrap()
            .contains("user viewer"),
        "{out}"
    );
    let (code, out, _) = hash_compare(&[
        "--inventory",
        inventory,
        "--reference",
        "planned",
        "efb-a-again=gnmi://viewer@",
    ]);
    assert_eq!(
        code, 2,
        "a gNMI balancer without an address is a usage error: {out}"
    );

    // Every kind of difference an engineer can make on a running balancer, at once.
    let (code, out, err) = b.cli(
        &[],
        "edit\n\
         set ecofilter-balancer balancing-method layer-4\n\
         set ecofilter-balancer ecofilter-unit dpi-2 cores 8\n\
         set ecofilter-balancer ecofilter-unit dpi-2 rebalance true\n\
         delete ecofilter-balancer ecofilter-unit dpi-2 pair f2-te3-te4\n\
         delete ecofilter-balancer ecofilter-unit dpi-1 pair f1-te1-te2\n\
         set ecofilter-balancer ecofilter-unit dpi-1 pair f1-te1-te2 lan-port p20-0 wan-port p20-1\n\
         commit\n",
    );
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = hash_compare(&["--inventory", inventory]);
    assert_eq!(code, 1, "{out}{err}");
    let unit = "/ecofilter-balancer:ecofilter-balancer/ecofilter-unit";
    for expected in [
        "efb-b differs from efb-a:".to_string(),
        "/ecofilter-balancer:ecofilter-balancer/balancing-method".to_string(),
        "balancing-method is layer-4 on efb-b but layer-3 on efb-a".to_string(),
        format!("{unit}[name='dpi-2']/cores"),
        "cores of unit dpi-2 is 8 on efb-b but 7 on efb-a".to_string(),
        format!("{unit}[name='dpi-2']/rebalance"),
        format!("{unit}[name='dpi-2']/pair[name='f2-te3-te4']"),
        "pair f2-te3-te4 of unit dpi-2 (position 2 on efb-a) is missing on efb-b".to_string(),
        format!("{unit}[name='dpi-1']/pair"),
        "efb-b has f1-te3-te4 where efb-a has f1-te1-te2".to_string(),
        "gone: not compared (unreachable)".to_string(),
        "intruder: not compared (unauthenticated)".to_string(),
        "DISAGREE: 1 of 3 balancers read differs from efb-a; 2 could not be compared".to_string(),
    ] {
        assert!(out.contains(&expected), "{expected:?} missing from:\n{out}");
    }
    assert!(!out.contains("planned differs"), "{out}");

    // Undone, and only the reachable ones asked: all agree, exit 0.
    let (code, out, err) = b.cli(&[], "edit\nrollback 1\ncommit\n");
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = hash_compare(&[
        "--password-file",
        password.to_str().unwrap(),
        "--username",
        "viewer",
        "--ca-file",
        a.datastore.join("gnmi-cert.pem").to_str().unwrap(),
        &format!("efb-a=gnmi://{}", a.gnmi.as_deref().unwrap()),
        &format!("planned={}", example("a").display()),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.trim_end()
            .ends_with("AGREE: all 2 balancers have the balancing configuration of efb-a"),
        "{out}"
    );
    assert!(a.stop() && b.stop());
}
