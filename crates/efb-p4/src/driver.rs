//! The driver: keeps the chip holding the compiled running configuration.
//!
//! - A commit goes through [`Driver::apply`] before it becomes running: compile, plan the
//!   difference from what the chip holds, write it phase by phase; if the target refuses any
//!   update, what was written is undone and the commit is refused with the configuration
//!   path that caused it.
//! - A background task holds the P4Runtime connection: it is elected primary with an
//!   election id that only ever grows (saved, so a restarted efbd still wins), pushes the
//!   pipeline only when the target's cookie differs, and reconciles (reads what the target
//!   holds, writes only the difference) at every (re)connection, retrying with backoff.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, SystemTime};

use efb_balancing::LiveState;
use efb_datastore::{ChipError, Refusal, Refusals, Running, Southbound};
use efb_model::Config;
use efb_p4info::{P4InfoIndex, PortMap};
use p4runtime_proto::p4::config::v1::P4Info;
use p4runtime_proto::p4::v1::TableEntry;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio::sync::{Mutex, mpsc, watch};
use tracing::{error, info, warn};

use crate::client::{ClientError, Connection, Opened, PacketSender, StreamEvent, WriteFailure};
use crate::compile::{CompileError, Compiled, Compiler, Desired, Group};
use crate::entry::{EntryKey, normalized};
use crate::ids::Ids;
use crate::plan::{Op, Plan, Tables};

/// Updates per Write: small enough that the per-update errors of a failed batch always fit
/// in the status trailer.
pub const DEFAULT_BATCH: usize = 256;

#[derive(Clone, Debug)]
pub struct DriverSettings {
    /// The P4Runtime server (Stratum on the box, efb-target here).
    pub target: String,
    pub device_id: u64,
    /// Where the election id and the chip's link, unit and pair numbers are kept.
    pub state_file: PathBuf,
    pub batch: usize,
}

/// What a liveness change wrote: first the bypass of the pairs found down (their pair and
/// unit entries), acknowledged at `bypass_acked`, then the buckets of `rebalance` units.
#[derive(Clone, Copy, Debug, Default)]
pub struct LivenessWrites {
    pub bypass: usize,
    /// None when the chip was not written (not connected).
    pub bypass_acked: Option<std::time::Instant>,
    pub rebalance: usize,
    /// None when no rebalancing unit's buckets had to move.
    pub rebalance_acked: Option<std::time::Instant>,
}

/// How much of a change one programming writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Whole,
    /// All but the buckets only liveness moved (see [`Compiler::compile_bypass_first`]).
    BypassFirst,
}

/// What `show` tells about the chip.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DriverStatus {
    pub connected: bool,
    pub primary: bool,
    /// The chip holds exactly the compiled running configuration.
    pub in_sync: bool,
    pub last_reconcile: Option<SystemTime>,
    /// Entries written by the last reconcile.
    pub reconcile_written: usize,
    /// How long the last reconcile took (read, compare, write).
    pub reconcile_time: Duration,
    /// Entries the chip holds for the configuration.
    pub entries: usize,
    /// In words: why not connected, why out of sync.
    pub message: String,
}

/// What the driver wrote since it started (metrics): counters that only grow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DriverCounts {
    /// Table updates the chip took: commits, liveness and bypass changes, reconciles, and
    /// the undoing of refused writes.
    pub entries_written: u64,
    /// Writes the chip refused (a commit, a bypass or liveness change); a lost connection
    /// is not a refusal.
    pub refusals: u64,
    /// Reconciles (at every connection) that completed, and that failed.
    pub reconciles: u64,
    pub reconciles_failed: u64,
    /// Entries the completed reconciles wrote.
    pub reconcile_entries_written: u64,
}

/// [`DriverCounts`] as the driver's tasks update them.
#[derive(Debug, Default)]
struct Counts {
    entries_written: AtomicU64,
    refusals: AtomicU64,
    reconciles: AtomicU64,
    reconciles_failed: AtomicU64,
    reconcile_entries_written: AtomicU64,
}

impl Counts {
    fn add(counter: &AtomicU64, n: usize) {
        counter.fetch_add(n as u64, Ordering::Relaxed);
    }

    fn now(&self) -> DriverCounts {
        let read = |c: &AtomicU64| c.load(Ordering::Relaxed);
        DriverCounts {
            entries_written: read(&self.entries_written),
            refusals: read(&self.refusals),
            reconciles: read(&self.reconciles),
            reconciles_failed: read(&self.reconciles_failed),
            reconcile_entries_written: read(&self.reconcile_entries_written),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    #[error("P4Info: {0}")]
    P4Info(#[from] efb_p4info::P4InfoError),
    #[error("state file {path}: {message}")]
    State { path: String, message: String },
}

/// What survives a restart of efbd.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Saved {
    election_id: u128,
    ids: Ids,
}

struct Inner {
    settings: DriverSettings,
    compiler: Compiler,
    tables: Tables,
    p4info: P4Info,
    /// The compiled program for the chip (a serialized `BfPipelineConfig`).
    device_config: Arc<Vec<u8>>,
    cookie: u64,
    conn: Option<Connection>,
    /// What the chip holds, as compiled from the configuration last programmed.
    programmed: Compiled,
    /// What it should hold: running, and the state of its units.
    config: Arc<Config>,
    live: LiveState,
    saved: Saved,
    counts: Arc<Counts>,
    /// The platform's ports: `enabled false` in the configuration is their admin-status.
    platform: crate::platform::Platform,
}

/// A handle on the driver; clones share it.
#[derive(Clone)]
pub struct Driver {
    runtime: tokio::runtime::Handle,
    inner: Arc<Mutex<Inner>>,
    /// A watch, so that efbd hears of the connection coming and going when it happens.
    status: Arc<watch::Sender<DriverStatus>>,
    packet_ins: Arc<StdMutex<Option<mpsc::Sender<p4runtime_proto::p4::v1::PacketIn>>>>,
    /// The current connection's packet-out path (none while not primary).
    packet_out: Arc<StdMutex<Option<PacketSender>>>,
    /// Id of the packet-out header's egress port field.
    packet_out_port: Option<u32>,
    stop: Arc<tokio::sync::Notify>,
    counts: Arc<Counts>,
    platform: crate::platform::Platform,
}

impl Driver {
    /// Starts the driver for `running`: the connection task connects, reconciles, and keeps
    /// at it. Must be called inside the tokio runtime.
    pub fn start(
        settings: DriverSettings,
        ports: PortMap,
        running: Arc<Config>,
    ) -> Result<Driver, DriverError> {
        let p4info = efb_p4info::p4info()?;
        let index = P4InfoIndex::new(&p4info)?;
        let packet_out_port = index
            .packet_out()
            .and_then(|header| header.field(efb_p4info::names::packet_io::EGRESS_PORT))
            .map(|f| f.id);
        let tables = Tables::new(&index)?;
        let device_config = Arc::new(efb_p4info::device_config::device_config());
        let cookie = cookie_of(&p4info, &device_config);
        let saved = load_state(&settings.state_file)?;
        let counts = Arc::new(Counts::default());
        let platform = crate::platform::Platform::start(&settings.target, ports.clone());
        let inner = Inner {
            compiler: Compiler { index, ports },
            tables,
            p4info,
            device_config,
            cookie,
            conn: None,
            programmed: Compiled::with_ids(saved.ids.clone()),
            config: running,
            live: LiveState::all_up(),
            saved,
            settings,
            counts: counts.clone(),
            platform: platform.clone(),
        };
        let driver = Driver {
            runtime: tokio::runtime::Handle::current(),
            inner: Arc::new(Mutex::new(inner)),
            status: Arc::new(watch::Sender::new(DriverStatus {
                message: "connecting".into(),
                ..DriverStatus::default()
            })),
            packet_ins: Arc::new(StdMutex::new(None)),
            packet_out: Arc::new(StdMutex::new(None)),
            packet_out_port,
            stop: Arc::new(tokio::sync::Notify::new()),
            counts,
            platform,
        };
        let task = driver.clone();
        let stop = driver.stop.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = task.keep_connected() => {}
                () = stop.notified() => {}
            }
        });
        Ok(driver)
    }

    /// Stops the connection task and drops the connection (efbd stopping).
    pub async fn stop(&self) {
        self.stop.notify_one();
        self.set_packet_out(None);
        self.inner.lock().await.conn = None;
        self.set_status(|s| {
            s.connected = false;
            s.primary = false;
            s.message = "stopped".into();
        });
    }

    /// What the driver wrote since it started.
    pub fn counts(&self) -> DriverCounts {
        self.counts.now()
    }

    pub fn status(&self) -> DriverStatus {
        self.status.borrow().clone()
    }

    /// The status from now on, marked changed at every update.
    pub fn watch_status(&self) -> watch::Receiver<DriverStatus> {
        self.status.subscribe()
    }

    fn set_status(&self, change: impl FnOnce(&mut DriverStatus)) {
        self.status.send_modify(change);
    }

    /// Where packet-ins (keep-alives coming back) go.
    pub fn subscribe_packet_ins(&self, sender: mpsc::Sender<p4runtime_proto::p4::v1::PacketIn>) {
        if let Ok(mut slot) = self.packet_ins.lock() {
            *slot = Some(sender);
        }
    }

    /// The connection task: connect, reconcile, wait until the connection is lost, again.
    async fn keep_connected(self) {
        let mut backoff = Duration::from_millis(200);
        loop {
            let (events, mut received) = mpsc::channel(4096);
            match self.connect_and_reconcile(events).await {
                Ok(()) => backoff = Duration::from_millis(200),
                Err(e) => {
                    self.set_status(|s| {
                        s.connected = false;
                        s.primary = false;
                        s.in_sync = false;
                        s.message = e.to_string();
                    });
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                    continue;
                }
            }
            while let Some(event) = received.recv().await {
                match event {
                    StreamEvent::PacketIn(p) => self.forward_packet_in(p),
                    StreamEvent::Lost(reason) => {
                        self.lose_connection(&reason).await;
                        break;
                    }
                }
            }
        }
    }

    fn forward_packet_in(&self, packet: p4runtime_proto::p4::v1::PacketIn) {
        if let Ok(slot) = self.packet_ins.lock()
            && let Some(sender) = slot.as_ref()
        {
            let _ = sender.try_send(packet);
        }
    }

    fn set_packet_out(&self, sender: Option<PacketSender>) {
        if let Ok(mut slot) = self.packet_out.lock() {
            *slot = sender;
        }
    }

    /// Sends a frame out of a device port (keep-alives). Never waits for a commit in
    /// progress.
    pub fn packet_out(&self, device_port: u32, payload: Vec<u8>) -> Result<(), String> {
        let sender = self
            .packet_out
            .lock()
            .ok()
            .and_then(|slot| slot.clone())
            .ok_or("the chip is not connected")?;
        let metadata = self
            .packet_out_port
            .iter()
            .map(|id| p4runtime_proto::p4::v1::PacketMetadata {
                metadata_id: *id,
                value: crate::entry::canonical(u128::from(device_port)),
            })
            .collect();
        sender
            .send(p4runtime_proto::p4::v1::PacketOut { payload, metadata })
            .map_err(|e| e.to_string())
    }

    /// The link, unit and pair ids the chip is programmed with.
    pub async fn ids(&self) -> crate::ids::Ids {
        self.inner.lock().await.programmed.ids.clone()
    }

    async fn lose_connection(&self, reason: &str) {
        self.set_packet_out(None);
        self.inner.lock().await.conn = None;
        self.set_status(|s| {
            s.connected = false;
            s.primary = false;
            s.in_sync = false;
            s.message = format!("connection lost: {reason}; reconnecting");
        });
    }

    async fn connect_and_reconcile(
        &self,
        events: mpsc::Sender<StreamEvent>,
    ) -> Result<(), ClientError> {
        let mut inner = self.inner.lock().await;
        // A new id at every connection, above any we used before (the target remembers the
        // highest it saw, and a restarted efbd must still win).
        inner.saved.election_id = inner.saved.election_id.saturating_add(1);
        inner.save();
        let settings = inner.settings.clone();
        let elected = match Connection::open(
            &settings.target,
            settings.device_id,
            inner.saved.election_id,
        )
        .await?
        {
            Opened::Primary(elected) => elected,
            Opened::Backup(backup) => {
                // Not under the lock: this may wait for long, and commits must meanwhile
                // get their answer (not connected) at once.
                drop(inner);
                let holder = backup.holder();
                self.set_status(|s| {
                    s.connected = true;
                    s.primary = false;
                    s.in_sync = false;
                    s.message =
                        format!("{holder}; efbd waits as backup and takes over when it leaves");
                });
                let elected = backup.take_over().await?;
                inner = self.inner.lock().await;
                elected
            }
        };
        if elected.election_id() > inner.saved.election_id {
            inner.saved.election_id = elected.election_id();
            inner.save();
        }
        let mut conn = elected.into_primary(events);
        let (p4info, device_config, cookie) = (
            inner.p4info.clone(),
            inner.device_config.clone(),
            inner.cookie,
        );
        conn.ensure_pipeline(&p4info, &device_config, cookie)
            .await?;
        let packet_sender = conn.packet_sender();
        inner.conn = Some(conn);
        let started = std::time::Instant::now();
        let written = inner.reconcile().await;
        let reconcile_time = started.elapsed();
        drop(inner);
        match written {
            Ok((written, entries)) => {
                Counts::add(&self.counts.reconciles, 1);
                Counts::add(&self.counts.reconcile_entries_written, written);
                self.set_packet_out(Some(packet_sender));
                info!(written, entries, ms = reconcile_time.as_millis() as u64, target = %settings.target, "reconciled the chip with the running configuration");
                self.set_status(|s| {
                    *s = DriverStatus {
                        connected: true,
                        primary: true,
                        in_sync: true,
                        last_reconcile: Some(SystemTime::now()),
                        reconcile_written: written,
                        reconcile_time,
                        entries,
                        message: format!(
                            "P4Runtime {} device {}",
                            settings.target, settings.device_id
                        ),
                    }
                });
                Ok(())
            }
            Err(e) => {
                warn!(%e, "reconcile failed");
                Counts::add(&self.counts.reconciles_failed, 1);
                self.inner.lock().await.conn = None;
                Err(ClientError::NotPrimary(e.to_string()))
            }
        }
    }

    /// Programs the chip for the unit state in `live` (bypass modes, pair liveness): only
    /// the entries that state changes are written.
    /// On failure the chip and the driver keep the previous state.
    pub fn set_live(&self, live: LiveState) -> Result<usize, ChipError> {
        self.runtime.block_on(async {
            let mut inner = self.inner.lock().await;
            if inner.conn.as_ref().is_none_or(|c| !c.is_primary()) {
                return Err(inner.unreachable("nothing was changed"));
            }
            let previous = std::mem::replace(&mut inner.live, live);
            let config = inner.config.clone();
            let result = inner.program(&config, false).await;
            if result.is_err() {
                inner.live = previous;
            }
            result
        })
    }

    /// Takes the pairs liveness found down into account, in two steps: the bypass (pair and
    /// unit entries), then the buckets `rebalance` units move. Unlike [`Driver::set_live`]
    /// the state is kept when the chip cannot be written: it is what is true, and the next
    /// reconcile programs it.
    pub fn set_liveness(&self, live: LiveState) -> Result<LivenessWrites, ChipError> {
        let result = self.runtime.block_on(async {
            let mut inner = self.inner.lock().await;
            let was = std::mem::replace(&mut inner.live, live);
            let mut writes = LivenessWrites::default();
            if inner.conn.as_ref().is_none_or(|c| !c.is_primary()) {
                return Ok(writes);
            }
            let config = inner.config.clone();
            writes.bypass = inner
                .program_with(&config, false, Step::BypassFirst)
                .await?;
            writes.bypass_acked = Some(std::time::Instant::now());
            if rebalance_moves(&config, &was, &inner.live) {
                writes.rebalance = inner.program(&config, false).await?;
                writes.rebalance_acked = Some(std::time::Instant::now());
            }
            Ok(writes)
        });
        if result.is_err() {
            self.set_status(|s| {
                s.in_sync = false;
                s.message = "out of sync: a liveness change could not be written".into();
            });
        }
        result
    }

    /// Flow counters: packets and bytes per flow name, summed over its entries; of the
    /// named flows only (their entries read one by one), or of every flow (`None`: one
    /// read of the flow tables).
    pub fn flow_counters(&self, only: Option<&[String]>) -> Option<BTreeMap<String, (u64, u64)>> {
        self.runtime.block_on(async {
            let mut guard = self.inner.lock().await;
            let inner = &mut *guard;
            let flow_of = flows_by_entry(&inner.programmed, only);
            let conn = inner.conn.as_mut()?;
            let entries = match only {
                Some(_) => {
                    // An entry that matches everything has no key to read it by (a read
                    // without one is a wildcard read): its table is read whole, and only
                    // the wanted entries are counted.
                    let (keyed, keyless): (Vec<_>, Vec<_>) = flow_of
                        .values()
                        .map(|(_, e)| (*e).clone())
                        .partition(|e| !e.r#match.is_empty());
                    let mut read = Vec::new();
                    if !keyed.is_empty() {
                        read = conn.read_counters_of(&keyed).await.ok()?;
                    }
                    let mut tables: Vec<u32> = keyless.iter().map(|e| e.table_id).collect();
                    tables.sort_unstable();
                    tables.dedup();
                    if !tables.is_empty() {
                        read.extend(conn.read_counters(&tables).await.ok()?);
                    }
                    read
                }
                None => conn.read_counters(&inner.tables.flows).await.ok()?,
            };
            Some(sum_by_flow(&flow_of, entries))
        })
    }

    /// Port counters by device port (`None` when the platform does not serve them).
    pub fn port_counters(&self) -> Option<BTreeMap<u32, crate::platform::PortCounters>> {
        let counters = self.runtime.block_on(self.platform.port_counters())?;
        Some(counters.into_iter().map(|c| (c.device_port, c)).collect())
    }

    /// Which device ports are up, as the platform's oper-status subscription last told
    /// (liveness asks when a pair goes down, to say whether a port or the filter is to
    /// blame). Asks nothing: never waits for the platform nor for a write to the chip.
    pub async fn port_states(&self) -> Option<BTreeMap<u32, bool>> {
        self.platform.port_states().map(|states| (*states).clone())
    }

    /// The platform's interfaces by device port (state and counters, read now), or `None`
    /// when the platform does not answer.
    pub async fn chip_interfaces(&self) -> Option<BTreeMap<u32, efb_openconfig::Interface>> {
        self.platform.interfaces().await
    }

    /// Port states from now on (None while the platform does not answer).
    pub fn watch_port_states(&self) -> tokio::sync::watch::Receiver<crate::platform::PortStates> {
        self.platform.watch_port_states()
    }

    /// Entries per flow, as compiled (what `entries` in the flow's state says); of the
    /// named flows only, or of every flow (`None`).
    pub fn flow_entries(&self, only: Option<&[String]>) -> BTreeMap<String, usize> {
        self.runtime.block_on(async {
            let inner = self.inner.lock().await;
            let programmed = &inner.programmed;
            match only {
                Some(names) => names
                    .iter()
                    .map(|name| {
                        let entries = programmed.group(&Group::Flow(name.clone())).len();
                        (name.clone(), entries)
                    })
                    .collect(),
                None => programmed
                    .groups()
                    .filter_map(|(group, entries)| match group {
                        Group::Flow(name) => Some((name.clone(), entries.len())),
                        _ => None,
                    })
                    .collect(),
            }
        })
    }
}

/// The programmed entries of the named flows (of every flow: `None`), each with the flow
/// whose group holds it.
fn flows_by_entry<'a>(
    programmed: &'a Compiled,
    only: Option<&'a [String]>,
) -> BTreeMap<EntryKey, (&'a str, &'a TableEntry)> {
    let flows: Vec<(&str, &[Desired])> = match only {
        Some(names) => names
            .iter()
            .map(|name| (name.as_str(), programmed.group(&Group::Flow(name.clone()))))
            .collect(),
        None => programmed
            .groups()
            .filter_map(|(group, entries)| match group {
                Group::Flow(name) => Some((name.as_str(), entries.as_slice())),
                _ => None,
            })
            .collect(),
    };
    flows
        .into_iter()
        .flat_map(|(name, entries)| entries.iter().map(move |d| (name, &d.entry)))
        .map(|(name, entry)| (EntryKey::of(entry), (name, entry)))
        .collect()
}

/// Packets and bytes per flow of the entries read, summed over each flow's entries.
fn sum_by_flow(
    flow_of: &BTreeMap<EntryKey, (&str, &TableEntry)>,
    read: Vec<TableEntry>,
) -> BTreeMap<String, (u64, u64)> {
    let mut out: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for entry in read {
        let Some(data) = entry.counter_data else {
            continue;
        };
        if let Some((name, _)) = flow_of.get(&EntryKey::of(&normalized(&entry))) {
            let counts = out.entry(name.to_string()).or_default();
            counts.0 += u64::try_from(data.packet_count).unwrap_or(0);
            counts.1 += u64::try_from(data.byte_count).unwrap_or(0);
        }
    }
    out
}

impl Inner {
    /// Reads what the target holds and writes only the difference. Returns the number of
    /// entries written and the number the chip holds.
    async fn reconcile(&mut self) -> Result<(usize, usize), ChipError> {
        let config = self.config.clone();
        let compiled = self
            .compiler
            .compile(
                &config,
                &self.live,
                &Compiled::with_ids(self.saved.ids.clone()),
            )
            .map_err(compile_error)?;
        let tables: Vec<u32> = self.tables.all().to_vec();
        let conn = self
            .conn
            .as_mut()
            .ok_or_else(|| ChipError::Lost("not connected".into()))?;
        let actual: BTreeMap<EntryKey, _> = conn
            .read_tables(&tables)
            .await
            .map_err(|e| ChipError::Lost(e.to_string()))?
            .iter()
            .map(|e| {
                let n = normalized(e);
                (EntryKey::of(&n), n)
            })
            .collect();
        let plan = Plan::reconcile(&self.tables, &actual, &compiled);
        let written = plan.len();
        self.write_plan(&plan).await?;
        self.reconcile_admin_status(&config).await;
        let entries = compiled.len();
        self.saved.ids = compiled.ids.clone();
        self.programmed = compiled;
        self.save();
        Ok((written, entries))
    }

    /// Makes the chip hold `config`: compile, plan, write. On refusal, undoes what it wrote.
    /// Without a connection: an error, unless `offline_ok` (then the chip is out of sync).
    async fn program(
        &mut self,
        config: &Arc<Config>,
        offline_ok: bool,
    ) -> Result<usize, ChipError> {
        self.program_with(config, offline_ok, Step::Whole).await
    }

    async fn program_with(
        &mut self,
        config: &Arc<Config>,
        offline_ok: bool,
        step: Step,
    ) -> Result<usize, ChipError> {
        let compiled = match step {
            Step::Whole => self.compiler.compile(config, &self.live, &self.programmed),
            Step::BypassFirst => {
                self.compiler
                    .compile_bypass_first(config, &self.live, &self.programmed)
            }
        }
        .map_err(compile_error)?;
        if self.conn.as_ref().is_none_or(|c| !c.is_primary()) {
            if offline_ok {
                self.config = config.clone();
                return Ok(0);
            }
            return Err(self.unreachable(
                "nothing was changed; commit offline to commit without programming it",
            ));
        }
        let plan = Plan::between(&self.tables, &self.programmed, &compiled);
        let written = plan.len();
        self.write_plan(&plan).await?;
        self.follow_admin_status(config).await;
        let replaced = std::mem::replace(&mut self.programmed, compiled);
        // Freeing a replaced bucket table (thousands of entries) took 1.7 ms of a rebalance:
        // done beside it.
        tokio::task::spawn_blocking(move || drop(replaced));
        self.config = config.clone();
        // Written (and synced) only when ids were allocated or freed: a liveness change
        // allocates none, and its fsync cost the bypass 1 - 3 ms.
        if self.saved.ids != self.programmed.ids {
            self.saved.ids = self.programmed.ids.clone();
            self.save();
        }
        Ok(written)
    }

    /// Makes every port's admin-status what the configuration says, from what the platform
    /// reads now (a restarted chip, or ports set by someone else, are corrected).
    async fn reconcile_admin_status(&self, config: &Config) {
        let Some(chip) = self.platform.interfaces().await else {
            warn!("the platform did not answer: ports' admin-status not reconciled");
            return;
        };
        let chip: BTreeMap<u32, bool> = chip.iter().map(|(p, i)| (*p, i.enabled)).collect();
        let disabled = crate::platform::disabled_ports(&self.compiler.ports, config);
        self.set_admin_status(&crate::platform::admin_changes(&chip, &disabled))
            .await;
    }

    /// Sets the admin-status of the ports whose `enabled` changed from the configuration
    /// programmed last to `config`. Only then: a commit that touches no port asks nothing.
    async fn follow_admin_status(&self, config: &Arc<Config>) {
        // A liveness change programs the same configuration again: nothing to compare.
        if Arc::ptr_eq(config, &self.config) {
            return;
        }
        let ports = &self.compiler.ports;
        let before = crate::platform::disabled_ports(ports, &self.config);
        let after = crate::platform::disabled_ports(ports, config);
        let changes: Vec<(u32, bool)> = before
            .symmetric_difference(&after)
            .map(|port| (*port, before.contains(port)))
            .collect();
        self.set_admin_status(&changes).await;
    }

    async fn set_admin_status(&self, changes: &[(u32, bool)]) {
        if changes.is_empty() {
            return;
        }
        match self.platform.set_enabled(changes).await {
            Ok(()) => info!(?changes, "ports' admin-status set (device port, enabled)"),
            // The entries are written and the configuration stands: the next reconcile
            // sets what is missing.
            Err(status) => warn!(%status, "the platform refused the ports' admin-status"),
        }
    }

    fn unreachable(&self, message: &str) -> ChipError {
        ChipError::Unreachable {
            address: self.settings.target.clone(),
            message: message.to_string(),
        }
    }

    fn save(&self) {
        if let Err(e) = save_state(&self.settings.state_file, &self.saved) {
            error!(%e, "could not save the driver's state");
        }
    }

    /// Writes a plan phase by phase, in batches. If an update is refused, every update
    /// already applied is undone (in reverse order) and the refusal is returned, naming the
    /// configuration path of the entry.
    async fn write_plan(&mut self, plan: &Plan) -> Result<(), ChipError> {
        let batch = self.settings.batch.max(1);
        let mut applied: Vec<Op> = Vec::new();
        for phase in &plan.phases {
            for chunk in phase.chunks(batch) {
                let conn = self
                    .conn
                    .as_mut()
                    .ok_or_else(|| ChipError::Lost("the connection to the chip was lost".into()))?;
                match conn.write(chunk).await {
                    Ok(()) => {
                        Counts::add(&self.counts.entries_written, chunk.len());
                        applied.extend(chunk.iter().cloned());
                    }
                    Err(failure) => {
                        let (done, error) = describe_failure(&self.tables, chunk, failure);
                        Counts::add(&self.counts.entries_written, done.len());
                        if !matches!(error, ChipError::Lost(_)) {
                            Counts::add(&self.counts.refusals, 1);
                        }
                        applied.extend(done);
                        self.undo(applied).await;
                        return Err(error);
                    }
                }
            }
        }
        Ok(())
    }

    async fn undo(&mut self, applied: Vec<Op>) {
        let inverse: Vec<Op> = applied.iter().rev().map(Op::inverse).collect();
        let Some(conn) = self.conn.as_mut() else {
            error!(
                "cannot undo {} writes: not connected; the next reconcile will",
                inverse.len()
            );
            return;
        };
        for chunk in inverse.chunks(self.settings.batch.max(1)) {
            if let Err(failure) = conn.write(chunk).await {
                error!(?failure.overall, "undoing a refused commit failed; the next reconcile will repair the chip");
                return;
            }
            Counts::add(&self.counts.entries_written, chunk.len());
        }
    }
}

/// The updates of a failed batch that were applied, and why the others were not.
fn describe_failure(tables: &Tables, chunk: &[Op], failure: WriteFailure) -> (Vec<Op>, ChipError) {
    if let Some(status) = failure.overall {
        return (Vec::new(), whole_write_failed(&status));
    }
    let mut done = Vec::new();
    let mut refused = Vec::new();
    for (op, outcome) in chunk.iter().zip(failure.errors) {
        match outcome {
            None => done.push(op.clone()),
            Some((code, message)) => refused.push((
                code,
                Refusal {
                    path: op.entry().source.clone(),
                    update: op.kind().to_string(),
                    table: tables.name(op.entry().entry.table_id).to_string(),
                    code: format!("{code:?}"),
                    message,
                },
            )),
        }
    }
    (done, refusal_error(refused))
}

/// A full table when room is the only reason given: P4Runtime says RESOURCE_EXHAUSTED for
/// a table without room, and ABORTED for the updates of an atomic batch left undone
/// because of another.
fn refusal_error(refused: Vec<(tonic::Code, Refusal)>) -> ChipError {
    use tonic::Code;
    let full = refused
        .iter()
        .find(|(code, _)| *code == Code::ResourceExhausted)
        .map(|(_, r)| r.table.clone());
    let other_reason = refused
        .iter()
        .any(|(code, _)| !matches!(code, Code::ResourceExhausted | Code::Aborted));
    // The first few say why; a full table would otherwise print a line per flow.
    let refusals = Refusals {
        more: refused.len().saturating_sub(REFUSALS_SHOWN),
        shown: refused
            .into_iter()
            .take(REFUSALS_SHOWN)
            .map(|(_, r)| r)
            .collect(),
    };
    match full {
        Some(table) if !other_reason => ChipError::TableFull { table, refusals },
        _ => ChipError::Refused(refusals),
    }
}

/// A write the chip answered as a whole: the chip gone, or efbd no longer its primary
/// controller, is not a refusal of the configuration (the words stay those of a refusal).
fn whole_write_failed(status: &tonic::Status) -> ChipError {
    let message = status.message().to_string();
    match status.code() {
        tonic::Code::Unavailable
        | tonic::Code::DeadlineExceeded
        | tonic::Code::Cancelled
        | tonic::Code::PermissionDenied => {
            ChipError::Lost(format!("the chip refused the write: {message}"))
        }
        _ => ChipError::WriteRefused(message),
    }
}

/// Refused updates named in a commit's error.
const REFUSALS_SHOWN: usize = 10;

impl Southbound for Driver {
    fn apply(
        &mut self,
        _current: &Running,
        next: &Running,
        offline_ok: bool,
    ) -> Result<Vec<String>, ChipError> {
        let driver = self.clone();
        let config = next.config.clone();
        let result = self.runtime.block_on(async move {
            let mut inner = driver.inner.lock().await;
            let written = inner.program(&config, offline_ok).await?;
            let entries = inner.programmed.len();
            Ok::<_, ChipError>((written, entries, inner.conn.is_some()))
        });
        let (written, entries, connected) = result?;
        self.set_status(|s| {
            s.in_sync = connected;
            s.entries = entries;
            if !connected {
                s.message = "out of sync: committed offline; the next connection reconciles".into();
            }
        });
        Ok(if connected {
            vec![format!(
                "chip programmed: {written} entr{} written",
                if written == 1 { "y" } else { "ies" }
            )]
        } else {
            vec![
                "chip NOT programmed (offline commit): out of sync until it reconnects".to_string(),
            ]
        })
    }

    fn preview(&mut self, _current: &Running, next: &Running) -> Vec<String> {
        let driver = self.clone();
        let config = next.config.clone();
        self.runtime.block_on(async move {
            let inner = driver.inner.lock().await;
            match inner
                .compiler
                .compile(&config, &inner.live, &inner.programmed)
            {
                Ok(compiled) => {
                    let plan = Plan::between(&inner.tables, &inner.programmed, &compiled);
                    let mut lines = vec![format!(
                        "chip: {} write{}",
                        plan.len(),
                        if plan.len() == 1 { "" } else { "s" }
                    )];
                    lines.extend(
                        plan.summary(&inner.tables)
                            .into_iter()
                            .map(|l| format!("  {l}")),
                    );
                    // A few writes are worth seeing one by one, with the configuration
                    // that makes each; thousands are the table counts above.
                    if plan.len() <= LISTED_WRITES {
                        lines.extend(plan.ops().map(|op| {
                            format!(
                                "  {}: {} {}",
                                op.entry().source,
                                op.kind(),
                                inner.tables.name(op.entry().entry.table_id),
                            )
                        }));
                    }
                    lines
                }
                Err(e) => vec![format!("chip: cannot compile: {e}")],
            }
        })
    }
}

/// Writes a `commit check` lists one by one.
const LISTED_WRITES: usize = 10;

/// A configuration the compiler could not make into entries: too many for the chip is
/// "full" (as a full table would be), anything else a compile error.
fn compile_error(e: CompileError) -> ChipError {
    match e {
        CompileError::Capacity { .. } => ChipError::OverCapacity(e.to_string()),
        other => ChipError::Compile(Box::new(other)),
    }
}

/// Names the pipeline: the P4Info and the compiled program together, so that a new build
/// of either is pushed.
fn cookie_of(p4info: &P4Info, device_config: &[u8]) -> u64 {
    use prost::Message;
    let mut hasher = Sha256::new();
    hasher.update(p4info.encode_to_vec());
    hasher.update(device_config);
    let digest = hasher.finalize();
    u64::from_be_bytes(digest[..8].try_into().unwrap_or([0; 8]))
}

/// Read as efbd's own file (in its datastore directory): not through a link, and only if
/// nobody else may have written it.
fn load_state(path: &std::path::Path) -> Result<Saved, DriverError> {
    use efb_datastore::files::{self, FileError};
    match files::read_trusted(path) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| DriverError::State {
            path: path.display().to_string(),
            message: e.to_string(),
        }),
        Err(FileError::Io { error, .. }) if error.kind() == std::io::ErrorKind::NotFound => {
            Ok(Saved::default())
        }
        Err(e) => Err(DriverError::State {
            path: path.display().to_string(),
            message: e.to_string(),
        }),
    }
}

/// Written to a new temporary file and renamed: a crash leaves the old state or the new.
/// The temporary file is created exclusively, never through a link (efbd may be root), with
/// its mode set; the rename replaces whatever is at `path` without following it.
fn save_state(path: &std::path::Path, saved: &Saved) -> std::io::Result<()> {
    use std::io::Write;
    let text = serde_json::to_string_pretty(saved).map_err(std::io::Error::other)?;
    let tmp = path.with_extension("tmp");
    // Left by a crash between creating and renaming it (removing a link removes the link).
    match std::fs::remove_file(&tmp) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut file = efb_datastore::files::create_new(&tmp, 0o644)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)
}

/// Whether a liveness change moves buckets: some unit with rebalance on has a pair whose
/// up-or-down changed, or its bypass mode changed (only then does the second write run).
fn rebalance_moves(config: &Config, was: &LiveState, now: &LiveState) -> bool {
    config.units.values().filter(|u| u.rebalance).any(|u| {
        was.mode(&u.name) != now.mode(&u.name)
            || u.pairs
                .iter()
                .any(|p| was.is_pair_up(&u.name, &p.name) != now.is_pair_up(&u.name, &p.name))
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn only_a_rebalancing_units_liveness_change_rewrites_buckets() {
        let unit = |name: &str, rebalance: bool| efb_model::Unit {
            name: name.into(),
            cores: 4,
            cores_set: true,
            liveness_profile: None,
            rebalance,
            pairs: vec![efb_model::Pair {
                name: "p0".into(),
                lan_port: format!("{name}-l"),
                wan_port: format!("{name}-w"),
                description: None,
            }],
            description: None,
        };
        let mut config = Config::default();
        for u in [unit("moves", true), unit("holds", false)] {
            config.units.insert(u.name.clone(), u);
        }
        let up = LiveState::all_up();
        let down = |unit: &str| {
            let mut live = LiveState::all_up();
            live.down_pairs.insert((unit.into(), "p0".into()));
            live
        };
        assert!(rebalance_moves(&config, &up, &down("moves")));
        assert!(rebalance_moves(&config, &down("moves"), &up));
        assert!(!rebalance_moves(&config, &up, &down("holds")));
        assert!(!rebalance_moves(&config, &down("moves"), &down("moves")));
    }

    #[test]
    fn the_state_file_is_never_written_or_read_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let precious = dir.path().join("shadow");
        std::fs::write(&precious, "root only").unwrap();
        let path = dir.path().join("southbound.json");
        // A link where the temporary file goes: removed, not written through.
        symlink(&precious, dir.path().join("southbound.tmp")).unwrap();
        save_state(&path, &Saved::default()).unwrap();
        assert_eq!(std::fs::read_to_string(&precious).unwrap(), "root only");
        assert!(load_state(&path).is_ok());
        // A link in place of the state itself is refused when read.
        std::fs::remove_file(&path).unwrap();
        symlink(&precious, &path).unwrap();
        let err = load_state(&path).unwrap_err().to_string();
        assert!(err.contains("is a symbolic link"), "{err}");
        // Missing: a first start.
        std::fs::remove_file(&path).unwrap();
        assert_eq!(load_state(&path).unwrap().election_id, 0);
    }
}
