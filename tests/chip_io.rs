//! The software chip seen from a test: frames injected and read through efb-target's
//! control service, and the one-filter site committed through the shell.

use std::time::{Duration, Instant};

use efb_target_proto::{self as pb, target_control_client::TargetControlClient};

use crate::{Daemon, Target, one_filter_site_lines};

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// Commits the one-filter site (plus `extra` lines) through the shell.
pub fn configure(daemon: &Daemon, extra: &str) -> String {
    let script = format!("{}\n{extra}\ncommit\n", one_filter_site_lines().join("\n"));
    let (code, out, err) = daemon.cli(&[], &script);
    assert_eq!(code, 0, "{out}{err}");
    out
}

pub fn port(name: &str) -> Option<pb::PortRef> {
    Some(pb::PortRef {
        port: Some(pb::port_ref::Port::Name(name.into())),
    })
}

/// A control connection to a running efb-target.
pub struct Chip {
    pub rt: tokio::runtime::Runtime,
    pub control: TargetControlClient<tonic::transport::Channel>,
}

impl Chip {
    pub fn connect(target: &Target) -> Chip {
        let rt = runtime();
        let control = rt
            .block_on(TargetControlClient::connect(format!(
                "http://{}",
                target.address
            )))
            .expect("efb-target's control service answers");
        Chip { rt, control }
    }

    /// Pulls the cable of port `name` (`up` false) or puts it back.
    pub fn set_port(&mut self, name: &str, up: bool) {
        let request = pb::SetPortStateRequest {
            port: port(name),
            up,
        };
        self.rt
            .block_on(self.control.set_port_state(request))
            .expect("efb-target sets the port's state");
    }

    pub fn inject(&mut self, on: &str, payloads: Vec<Vec<u8>>) {
        let frames = payloads
            .into_iter()
            .map(|payload| pb::InjectedFrame {
                port: port(on),
                payload,
            })
            .collect();
        self.rt
            .block_on(
                self.control
                    .inject_frames(pb::InjectFramesRequest { frames }),
            )
            .expect("efb-target takes the frames");
    }

    /// Frames a test sent that left by these ports (waiting up to 5 s for `min` of them):
    /// keep-alives left out.
    pub fn out(&mut self, ports: &[&str], min: usize) -> Vec<pb::Frame> {
        // Keep-alives go round the filters at every interval, whatever a test sends: a test
        // that counts its own frames must neither count them nor stop waiting for them.
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut traffic = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let wanted = u32::from(traffic.len() < min);
            let frames = self.read(ports, wanted, left);
            traffic.extend(frames.into_iter().filter(|f| !is_keepalive(&f.payload)));
            if traffic.len() >= min || deadline <= Instant::now() {
                return traffic;
            }
        }
    }

    /// Whatever left `ports`, waiting up to `timeout` for `min` frames.
    fn read(&mut self, ports: &[&str], min: u32, timeout: Duration) -> Vec<pb::Frame> {
        let request = pb::ReadFramesRequest {
            ports: ports
                .iter()
                .map(|p| pb::PortRef {
                    port: Some(pb::port_ref::Port::Name(p.to_string())),
                })
                .collect(),
            min_frames: min,
            timeout_ms: u32::try_from(timeout.as_millis()).unwrap_or(u32::MAX),
            keep: false,
        };
        self.rt
            .block_on(self.control.read_frames(request))
            .expect("efb-target returns the frames")
            .into_inner()
            .frames
    }

    /// The emulated filter between two ports stops answering (`dead`) or answers again.
    pub fn set_filter_dead(&mut self, port_a: &str, port_b: &str, dead: bool) {
        let request = pb::SetFilterRequest {
            port_a: port(port_a),
            port_b: port(port_b),
            delay_ns: 25_000,
            loss_ratio: 0.0,
            dead,
            update_mask: None,
        };
        self.rt
            .block_on(self.control.set_filter(request))
            .expect("efb-target sets the filter");
    }

    pub fn restart(&mut self, keep_tables: bool) {
        self.rt
            .block_on(self.control.restart(pb::RestartRequest { keep_tables }))
            .expect("efb-target restarts");
    }
}

/// Probing fast enough for tests: every 50 ms, a pair down after 4 keep-alives lost.
pub const FAST_PROBING: &str = "set liveness profile standard initial-delay 300 interval 50 probes-down-count 4 probes-up-count 3";

pub const PAIR_LAN_PORTS: [&str; 8] = [
    "p9-0", "p9-2", "p10-0", "p10-2", "p11-0", "p11-2", "p12-0", "p12-2",
];

/// efbd with its datastore in `dir`, programming `target`.
pub fn daemon_on(dir: &std::path::Path, target: &Target) -> Daemon {
    Daemon::start(&dir.join("datastore"), &["--p4runtime", &target.address])
}

/// efbd programming `target`, with the demo users of examples/users.demo.toml (password =
/// name) for gNMI and TCP logins, and `extra` flags.
pub fn daemon_with_demo_users(dir: &std::path::Path, target: &Target, extra: &[&str]) -> Daemon {
    let users = crate::repo().join("examples/users.demo.toml");
    let mut flags = vec![
        "--p4runtime",
        target.address.as_str(),
        "--gnmi-users",
        users.to_str().unwrap_or_default(),
    ];
    flags.extend_from_slice(extra);
    Daemon::start(&dir.join("datastore"), &flags)
}

/// Waits until efbd says the chip is in sync after a reconcile that wrote `written`.
pub fn wait_reconciled(daemon: &Daemon, written: &str) -> String {
    for _ in 0..100 {
        let (_, out, _) = daemon.cli(&["-c", "show system status"], "");
        if out.contains("in sync") && out.contains(written) {
            return out;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let (_, out, _) = daemon.cli(&["-c", "show system status"], "");
    panic!("not reconciled ({written}):\n{out}");
}

/// A keep-alive (EtherType 0x88B6 after the MACs): liveness's frame, not a test's.
fn is_keepalive(frame: &[u8]) -> bool {
    frame.get(12..14) == Some(&[0x88, 0xb6][..])
}
