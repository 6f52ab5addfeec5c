//! efbd's side of liveness: a task that probes the pairs of every unit with a liveness
//! profile (keep-alives out through the driver, back as packet-ins), and hands each status
//! change on (to the configuration owner, which updates the live state, programs the chip
//! and logs it). Probing never waits for the owner or for a commit: a 4-second commit must
//! not make healthy filters look dead.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use efb_liveness::{Change, Engine, KeepAlive, PairSpec, PairState, PairStatus, Timing};
use efb_model::Config;
use efb_p4::Driver;
use efb_p4info::PortMap;
use p4runtime_proto::p4::v1::PacketIn;
use tokio::sync::{mpsc, watch};
use tracing::{error, warn};

use crate::chip;

/// Frames waiting between the driver and the probing task.
const PACKET_IN_QUEUE: usize = 8192;

/// The owner's handle: it tells the task about new configurations and reads what the
/// task found.
#[derive(Clone)]
pub struct Liveness {
    engine: Arc<Mutex<Engine>>,
    configs: Arc<watch::Sender<Arc<Config>>>,
}

/// The probing task, ready to run.
pub struct Task {
    engine: Arc<Mutex<Engine>>,
    configs: watch::Receiver<Arc<Config>>,
}

impl Liveness {
    pub fn new(running: Arc<Config>) -> (Liveness, Task) {
        let engine = Arc::new(Mutex::new(Engine::new()));
        let (configs, receiver) = watch::channel(running);
        (
            Liveness {
                engine: engine.clone(),
                configs: Arc::new(configs),
            },
            Task {
                engine,
                configs: receiver,
            },
        )
    }

    /// A commit made `config` running.
    pub fn config_changed(&self, config: Arc<Config>) {
        self.configs.send_replace(config);
    }

    /// A better reason for a pair's last change, found after the verdict.
    pub fn explain_change(&self, unit: &str, pair: &str, was: &str, reason: &str) {
        if let Ok(mut engine) = self.engine.lock() {
            engine.explain_change(unit, pair, was, reason);
        }
    }

    /// Every probed pair as it is now.
    pub fn pairs(&self) -> Vec<PairState> {
        self.engine
            .lock()
            .map(|e| e.pairs().cloned().collect())
            .unwrap_or_default()
    }
}

impl Task {
    /// Runs until `stop` turns true, handing every batch of status changes to `changes`,
    /// which must not wait. The returned task ends once `changes` is dropped (efbd waits for
    /// it before it waits for the owner `changes` holds).
    /// Each returned keep-alive's round trip (packet-out sent to packet-in handled) goes to
    /// `round_trips`.
    pub fn spawn(
        self,
        driver: Driver,
        changes: impl Fn(Verdicts) + Send + 'static,
        round_trips: impl Fn(Duration) + Send + 'static,
        stop: watch::Receiver<bool>,
    ) -> tokio::task::JoinHandle<()> {
        tokio::spawn(self.run(driver, changes, round_trips, stop))
    }

    async fn run(
        mut self,
        driver: Driver,
        changes: impl Fn(Verdicts),
        round_trips: impl Fn(Duration),
        mut stop: watch::Receiver<bool>,
    ) {
        // When each pair's current round was sent: (pair id) -> (seq, sent at).
        let mut sent: HashMap<u8, (u32, Instant)> = HashMap::new();
        let (packet_ins, mut received) = mpsc::channel(PACKET_IN_QUEUE);
        driver.subscribe_packet_ins(packet_ins);
        let rx_field = rx_timestamp_field();
        self.resync(&driver).await;
        loop {
            let due = self.lock().next_due();
            let wake = async {
                match due {
                    Some(at) => tokio::time::sleep_until(at.into()).await,
                    None => std::future::pending().await,
                }
            };
            // Frames first: a keep-alive that is back must count before its round is judged.
            tokio::select! {
                biased;
                () = stopped(&mut stop) => break,
                Some(packet) = received.recv() => {
                    let rx_ns = rx_timestamp(&packet, rx_field);
                    if self.lock().received(&packet.payload, rx_ns)
                        && let Some(took) = round_trip(&sent, &packet.payload)
                    {
                        round_trips(took);
                    }
                }
                changed = self.configs.changed() => {
                    if changed.is_err() {
                        break;
                    }
                    self.resync(&driver).await;
                }
                () = wake => {
                    let found = self.probe(&driver, &mut sent);
                    if !found.is_empty() {
                        let went_down = found.iter().any(|c| c.new == PairStatus::Down);
                        changes(Verdicts {
                            ports: went_down.then(|| Self::ask_ports(&driver)),
                            changes: found,
                        });
                    }
                }
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Engine> {
        self.engine.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sends the rounds due; returns the status changes they decided.
    fn probe(&self, driver: &Driver, sent: &mut HashMap<u8, (u32, Instant)>) -> Vec<Change> {
        let (probes, found) = self.lock().tick(Instant::now(), SystemTime::now());
        let mut unsent = Vec::new();
        for probe in probes {
            if driver.packet_out(probe.device_port, probe.frame).is_err() {
                unsent.push((probe.unit, probe.pair));
                continue;
            }
            // A round's first keep-alive sets its time; the second (same seq) keeps it.
            let entry = sent
                .entry(probe.pair_id)
                .or_insert((probe.seq, Instant::now()));
            if entry.0 != probe.seq {
                *entry = (probe.seq, Instant::now());
            }
        }
        let mut engine = self.lock();
        for (unit, pair) in unsent {
            engine.not_sent(&unit, &pair);
        }
        found
    }

    /// Asks the chip which ports are up, beside the verdict: the bypass must not wait for
    /// the answer.
    fn ask_ports(driver: &Driver) -> std::sync::mpsc::Receiver<BTreeMap<u32, bool>> {
        let (answer, answered) = std::sync::mpsc::sync_channel(1);
        let driver = driver.clone();
        tokio::spawn(async move {
            if let Ok(Some(up)) = tokio::time::timeout(PORT_ANSWER_WAIT, driver.port_states()).await
            {
                let _ = answer.send(up);
            }
        });
        answered
    }

    async fn resync(&mut self, driver: &Driver) {
        let config = self.configs.borrow_and_update().clone();
        let ids = driver.ids().await;
        let specs = match PortMap::builtin() {
            Ok(map) => specs(&config, &ids, &map),
            Err(e) => {
                error!(%e, "no port map: pairs are not probed");
                Vec::new()
            }
        };
        self.lock().sync(specs, Instant::now());
    }
}

/// How long ago the round of the keep-alive `frame` was sent, if it is the current one.
fn round_trip(sent: &HashMap<u8, (u32, Instant)>, frame: &[u8]) -> Option<Duration> {
    let ka = KeepAlive::decode(frame).ok()?;
    let (seq, at) = sent.get(&ka.pair_id)?;
    (*seq == ka.seq).then(|| at.elapsed())
}

/// How long the owner waits, after programming the chip, for the answer to which ports are
/// down, before it logs the verdicts without it.
const PORT_ANSWER_WAIT: Duration = Duration::from_millis(100);

/// Status changes found together, and, when a pair went down, the chip's coming answer to
/// which ports are up.
pub struct Verdicts {
    pub changes: Vec<Change>,
    pub ports: Option<std::sync::mpsc::Receiver<BTreeMap<u32, bool>>>,
}

impl Verdicts {
    /// Keep-alives lost because a port went down are the port's fault, not the filter's:
    /// each such pair's reason says so ("port p9-0 down: 3 consecutive keep-alives lost
    /// ..."), once the chip has answered. Returns (unit, pair, reason before, reason now)
    /// of every reason changed.
    pub fn blame_ports(&mut self) -> Vec<(String, String, String, String)> {
        let Some(up) = self
            .ports
            .take()
            .and_then(|answer| answer.recv_timeout(PORT_ANSWER_WAIT).ok())
        else {
            return Vec::new();
        };
        let mut blamed = Vec::new();
        for change in &mut self.changes {
            if change.new != PairStatus::Down {
                continue;
            }
            let ports: Vec<&str> = change
                .ports
                .iter()
                .filter(|(_, device)| up.get(device) == Some(&false))
                .map(|(name, _)| name.as_str())
                .collect();
            if ports.is_empty() {
                continue;
            }
            let reason = format!("port {} down: {}", ports.join(" and "), change.reason);
            let was = std::mem::replace(&mut change.reason, reason.clone());
            blamed.push((change.unit.clone(), change.pair.clone(), was, reason));
        }
        blamed
    }
}

/// Completes when `stop` turns true (or its sender is gone).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|stop| *stop).await;
}

/// What to probe: every pair of every unit with a liveness profile that the chip knows
/// (a pair committed offline is probed once the chip has it).
fn specs(config: &Config, ids: &efb_p4::ids::Ids, map: &PortMap) -> Vec<PairSpec> {
    let mut out = Vec::new();
    for unit in config.units.values() {
        let Some((name, profile)) = unit
            .liveness_profile
            .as_ref()
            .and_then(|p| config.profiles.get_key_value(p))
        else {
            continue;
        };
        for pair in &unit.pairs {
            let port =
                |name: &str| chip::device_port(map, config, name).map(|d| (name.to_string(), d));
            let (Some(id), Some(lan), Some(wan)) = (
                ids.pair(&unit.name, &pair.name)
                    .and_then(|id| u8::try_from(id).ok()),
                port(&pair.lan_port),
                port(&pair.wan_port),
            ) else {
                warn!(unit = %unit.name, pair = %pair.name, "pair not on the chip yet: not probed");
                continue;
            };
            out.push(PairSpec {
                unit: unit.name.clone(),
                pair: pair.name.clone(),
                profile: name.clone(),
                id,
                ports: [lan, wan],
                timing: Timing::from(profile),
            });
        }
    }
    out
}

fn rx_timestamp_field() -> Option<u32> {
    let index = efb_p4info::index().ok()?;
    let header = index.packet_in()?;
    header
        .field(efb_p4info::names::packet_io::RX_TSTAMP)
        .map(|f| f.id)
}

/// The chip's arrival time of a packet-in (0 when it does not say).
fn rx_timestamp(packet: &PacketIn, field: Option<u32>) -> u64 {
    packet
        .metadata
        .iter()
        .find(|m| Some(m.metadata_id) == field)
        .map(|m| {
            m.value
                .iter()
                .rev()
                .take(8)
                .rev()
                .fold(0u64, |acc, b| (acc << 8) | u64::from(*b))
        })
        .unwrap_or(0)
}

/// Unit name -> whether it filters traffic, and how many of its pairs are live.
pub fn unit_statuses(
    config: &Config,
    live: &efb_balancing::LiveState,
) -> BTreeMap<String, (bool, usize)> {
    config
        .units
        .values()
        .map(|unit| {
            let live_pairs = unit
                .pairs
                .iter()
                .filter(|p| live.is_pair_up(&unit.name, &p.name))
                .count();
            let needed = unit
                .liveness_profile
                .as_ref()
                .and_then(|p| config.profiles.get(p))
                .map(|p| p.active_pairs);
            let active = efb_balancing::unit_active(live.mode(&unit.name), live_pairs, needed);
            (unit.name.clone(), (active, live_pairs))
        })
        .collect()
}

/// The YANG name of a unit status.
pub fn unit_status_name(active: bool) -> &'static str {
    if active { "active" } else { "bypass" }
}
