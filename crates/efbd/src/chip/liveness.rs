//! efbd's side of liveness: a task that probes the pairs of every unit with a liveness
//! profile (one keep-alive round per unit through the driver, to the unit's multicast
//! group; what came back read from the chip's registers once a round), and hands each
//! status change on (to the configuration owner, which updates the live state, programs the
//! chip and logs it). Probing never waits for the owner or for a commit: a 4-second commit
//! must not make healthy filters look dead.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use efb_liveness::{Change, Engine, PairSpec, PairState, PairStatus, Records, Timing, Wanted};
use efb_model::Config;
use efb_p4::Driver;
use efb_p4::keepalive::RoundReader;
use efb_p4info::PortMap;
use tokio::sync::watch;
use tracing::{error, warn};

use crate::chip;

/// What the probing task tells as it goes (efbd's metrics).
pub struct Observers {
    /// How long after a round was sent efbd read that the chip took it in.
    pub round_trip: Box<dyn Fn(Duration) + Send + Sync>,
    /// A read of the chip's records, and whether it was of pairs' cells too (not only of
    /// the units' tallies).
    pub read: Box<dyn Fn(bool) + Send + Sync>,
}

/// How long a read of the chip's records may take before the round is read again later.
const READ_WAIT: Duration = Duration::from_millis(200);

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
    /// which must not wait, and telling `observers` what it does. The returned task ends
    /// once `changes` is dropped (efbd waits for it before it waits for the owner `changes`
    /// holds).
    pub fn spawn(
        self,
        driver: Driver,
        changes: impl Fn(Verdicts) + Send + Sync + 'static,
        observers: Observers,
        stop: watch::Receiver<bool>,
    ) -> tokio::task::JoinHandle<()> {
        tokio::spawn(self.run(driver, changes, observers, stop))
    }

    async fn run(
        mut self,
        driver: Driver,
        changes: impl Fn(Verdicts),
        observers: Observers,
        mut stop: watch::Receiver<bool>,
    ) {
        // When each round still in flight was sent: seq -> sent at.
        let mut sent: HashMap<u32, Instant> = HashMap::new();
        let mut reader: Option<RoundReader> = None;
        self.resync(&driver, &changes).await;
        loop {
            let due = self.lock().next_due();
            let wake = async {
                match due {
                    Some(at) => tokio::time::sleep_until(at.into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                () = stopped(&mut stop) => break,
                changed = self.configs.changed() => {
                    if changed.is_err() {
                        break;
                    }
                    self.resync(&driver, &changes).await;
                }
                () = wake => {
                    reader = self.connected(&driver, reader).await;
                    self.send_rounds(&driver, &mut sent);
                    let (found, took) =
                        self.read_records(reader.as_ref(), &mut sent, &observers).await;
                    took.into_iter().for_each(&observers.round_trip);
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

    /// The reader of the chip's records on the current connection; on a new one, counting
    /// starts again from what the chip holds (see `Engine::reconnected`).
    async fn connected(&self, driver: &Driver, reader: Option<RoundReader>) -> Option<RoundReader> {
        let current = driver.round_reader();
        let same = matches!((&reader, &current), (Some(a), Some(b)) if a.same_connection(b));
        if same || current.is_none() {
            return current;
        }
        let fresh = current?;
        match tokio::time::timeout(READ_WAIT, fresh.newest_round()).await {
            Ok(Ok(newest)) => {
                self.lock().reconnected(newest);
                Some(fresh)
            }
            Ok(Err(e)) => {
                warn!(%e, "the chip's keep-alive records could not be read: pairs are not judged");
                None
            }
            Err(_) => None,
        }
    }

    /// Sends the rounds due; a round the chip cannot be sent counts neither way.
    fn send_rounds(&self, driver: &Driver, sent: &mut HashMap<u32, Instant>) {
        let rounds = self.lock().tick(Instant::now());
        for round in rounds {
            if driver.send_round(round.unit_id, round.frame).is_err() {
                self.lock().not_sent(&round.unit, round.seq);
                continue;
            }
            sent.insert(round.seq, Instant::now());
        }
    }

    /// Reads what the chip recorded of the units whose read is due, and judges it. Also
    /// returns, for each round the chip was first seen to have taken in, how long after
    /// it was sent.
    async fn read_records(
        &self,
        reader: Option<&RoundReader>,
        sent: &mut HashMap<u32, Instant>,
        observers: &Observers,
    ) -> (Vec<Change>, Vec<Duration>) {
        let Some(wanted) = self.lock().wanted(Instant::now()) else {
            return (Vec::new(), Vec::new());
        };
        (observers.read)(!wanted.cells.is_empty());
        let Some(records) = read(reader, &wanted).await else {
            self.lock().unread(&wanted, Instant::now() + READ_WAIT);
            return (Vec::new(), Vec::new());
        };
        // A quiet unit's rounds are read when the next is due: not the control path's time.
        let took = (records.rounds.iter())
            .filter_map(|(unit, seq)| Some((unit, sent.remove(seq)?)))
            .filter(|(unit, _)| wanted.after_round.contains(unit))
            .map(|(_, at)| at.elapsed())
            .collect();
        // Rounds the chip never took in are forgotten after a while.
        sent.retain(|_, at| at.elapsed() < Duration::from_secs(60));
        let changes = self
            .lock()
            .recorded(&records, Instant::now(), SystemTime::now());
        (changes, took)
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

    /// Probes the pairs of the configuration now running, and tells the owner (with no
    /// change of status) so that the state it publishes shows the pairs probed.
    async fn resync(&mut self, driver: &Driver, changes: &impl Fn(Verdicts)) {
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
        changes(Verdicts {
            changes: Vec::new(),
            ports: None,
        });
    }
}

/// One read of the chip's records, bounded in time; none without a connection.
async fn read(reader: Option<&RoundReader>, wanted: &Wanted) -> Option<Records> {
    match tokio::time::timeout(READ_WAIT, reader?.read(wanted)).await {
        Ok(Ok(records)) => Some(records),
        Ok(Err(e)) => {
            warn!(%e, "the chip's keep-alive records could not be read");
            None
        }
        Err(_) => {
            warn!("the chip's keep-alive records took over 200 ms to read");
            None
        }
    }
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
            let (Some(unit_id), Some(id), Some(lan), Some(wan)) = (
                ids.unit(&unit.name).and_then(|id| u8::try_from(id).ok()),
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
                unit_id,
                id,
                ports: [lan, wan],
                timing: Timing::from(profile),
            });
        }
    }
    out
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
