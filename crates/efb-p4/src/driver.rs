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
use efb_chip::{ChipError, ChipWrites, EntryWrite, Planned};
use efb_datastore::{Running, Southbound};
use efb_model::Config;
use efb_p4info::{P4InfoIndex, PortMap};
use p4runtime_proto::p4::config::v1::P4Info;
use sha2::{Digest, Sha256};
use tokio::sync::{Mutex, mpsc, watch};
use tracing::{error, info, warn};

use crate::client::{ClientError, Connection, Opened, PacketSender, StreamEvent};
use crate::compile::{CompileError, Compiled, Compiler};
use crate::entry::{EntryKey, normalized};
use crate::keepalive::{Groups, RegisterIds, RoundReader, group_updates, groups_read};
use crate::plan::{Plan, Tables};

mod flow_figures;
mod saved;
mod writes;

use saved::{Saved, load_state, save_state};

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
    /// Entries the chip holds for the configuration (table entries and keep-alive
    /// multicast groups).
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
    /// The keep-alive multicast groups the chip holds, as last written or read.
    groups: Groups,
}

/// A handle on the driver; clones share it.
#[derive(Clone)]
pub struct Driver {
    runtime: tokio::runtime::Handle,
    inner: Arc<Mutex<Inner>>,
    /// A watch, so that efbd hears of the connection coming and going when it happens.
    status: Arc<watch::Sender<DriverStatus>>,
    /// The current connection's packet-out path (none while not primary).
    packet_out: Arc<StdMutex<Option<PacketSender>>>,
    /// Ids of the packet-out header's egress port and multicast group fields.
    packet_out_fields: (Option<u32>, Option<u32>),
    /// Reads keep-alive records beside the connection (none while not connected).
    round_reader: Arc<StdMutex<Option<RoundReader>>>,
    register_ids: Option<RegisterIds>,
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
        let packet_out_field = |name| {
            index
                .packet_out()
                .and_then(|header| header.field(name))
                .map(|f| f.id)
        };
        let packet_out_fields = (
            packet_out_field(efb_p4info::names::packet_io::EGRESS_PORT),
            packet_out_field(efb_p4info::names::packet_io::MCAST_GRP),
        );
        let register_ids = RegisterIds::of(&index).ok();
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
            groups: Groups::new(),
        };
        let driver = Driver {
            runtime: tokio::runtime::Handle::current(),
            inner: Arc::new(Mutex::new(inner)),
            status: Arc::new(watch::Sender::new(DriverStatus {
                message: "connecting".into(),
                ..DriverStatus::default()
            })),
            packet_out: Arc::new(StdMutex::new(None)),
            packet_out_fields,
            round_reader: Arc::new(StdMutex::new(None)),
            register_ids,
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
                    // Keep-alives come back to the chip's registers; a packet-in is one
                    // asked for by its flags (diagnostics), which efbd does not ask for.
                    StreamEvent::PacketIn(p) => {
                        tracing::debug!(bytes = p.payload.len(), "packet-in ignored");
                    }
                    StreamEvent::Lost(reason) => {
                        self.lose_connection(&reason).await;
                        break;
                    }
                }
            }
        }
    }

    fn set_packet_out(&self, sender: Option<PacketSender>) {
        if let Ok(mut slot) = self.packet_out.lock() {
            *slot = sender;
        }
        if let Ok(mut slot) = self.round_reader.lock() {
            slot.take();
        }
    }

    fn set_round_reader(&self, reader: Option<RoundReader>) {
        if let Ok(mut slot) = self.round_reader.lock() {
            *slot = reader;
        }
    }

    /// Reads keep-alive records without waiting for the connection (none while not
    /// connected, or when the program has no keep-alive registers).
    pub fn round_reader(&self) -> Option<RoundReader> {
        self.round_reader.lock().ok().and_then(|slot| slot.clone())
    }

    /// Sends a keep-alive round: one frame to the unit's multicast group, which the chip
    /// copies out of each port of its pairs. Never waits for a commit in progress.
    pub fn send_round(&self, unit_id: u8, payload: Vec<u8>) -> Result<(), NotConnected> {
        let sender = self
            .packet_out
            .lock()
            .ok()
            .and_then(|slot| slot.clone())
            .ok_or(NotConnected)?;
        // No port (the group names them), and the group: the unit's id.
        let (port_field, group_field) = self.packet_out_fields;
        let metadata = [(port_field, 0), (group_field, u32::from(unit_id))]
            .into_iter()
            .filter_map(|(id, value)| {
                Some(p4runtime_proto::p4::v1::PacketMetadata {
                    metadata_id: id?,
                    value: crate::entry::canonical(u128::from(value)),
                })
            })
            .collect();
        // A send fails only when the stream ended: the connection is gone.
        sender
            .send(p4runtime_proto::p4::v1::PacketOut { payload, metadata })
            .map_err(|_| NotConnected)
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
        let round_reader = self.register_ids.map(|ids| RoundReader {
            reader: conn.reader(),
            ids,
        });
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
                self.set_round_reader(round_reader);
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

    /// Port counters by device port (`None` when the platform does not serve them).
    pub fn port_counters(&self) -> Option<BTreeMap<u32, crate::platform::PortCounters>> {
        let counters = self.runtime.block_on(self.platform.port_counters())?;
        Some(counters.into_iter().map(|c| (c.device_port, c)).collect())
    }

    /// Which device ports are up, as the platform's oper-status subscription last told
    /// (liveness asks when a pair goes down, to say whether a port or the filter is to
    /// blame). Asks nothing: never waits for the platform nor for a write to the chip.
    pub async fn port_states(&self) -> Option<BTreeMap<u32, bool>> {
        self.port_states_now()
    }

    /// The same, for callers off the runtime (the state tree is built on a blocking thread).
    pub fn port_states_now(&self) -> Option<BTreeMap<u32, bool>> {
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
        let mut written = plan.len();
        self.write_plan(&plan).await?;
        let held = self
            .conn
            .as_mut()
            .ok_or_else(|| ChipError::Lost("not connected".into()))?
            .read_multicast_groups()
            .await
            .map_err(|e| ChipError::Lost(e.to_string()))?;
        self.groups = groups_read(held);
        written += self.write_groups(&config, &compiled.ids).await?;
        self.reconcile_admin_status(&config).await;
        let entries = compiled.len() + self.groups.len();
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
        let mut written = plan.len();
        self.write_plan(&plan).await?;
        match self.write_groups(config, &compiled.ids).await {
            Ok(groups) => written += groups,
            Err(e) => {
                self.undo(plan.ops().cloned().collect()).await;
                return Err(e);
            }
        }
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

    /// Makes the chip hold the keep-alive groups of `config` (only the ones that differ).
    /// Returns the groups written.
    async fn write_groups(
        &mut self,
        config: &Config,
        ids: &crate::ids::Ids,
    ) -> Result<usize, ChipError> {
        let wanted = self.compiler.keepalive_groups(config, ids);
        let updates = group_updates(&self.groups, &wanted);
        if updates.is_empty() {
            return Ok(0);
        }
        let count = updates.len();
        let conn = self
            .conn
            .as_mut()
            .ok_or_else(|| ChipError::Lost("the connection to the chip was lost".into()))?;
        if let Err(failure) = conn.write_updates(updates).await {
            Counts::add(&self.counts.refusals, 1);
            let why = failure
                .overall
                .map(|s| s.message().to_string())
                .or_else(|| failure.errors.into_iter().flatten().map(|(_, m)| m).next())
                .unwrap_or_default();
            return Err(ChipError::WriteRefused(format!(
                "the keep-alive multicast groups: {why}"
            )));
        }
        Counts::add(&self.counts.entries_written, count);
        self.groups = wanted;
        Ok(count)
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
}

impl Southbound for Driver {
    fn apply(
        &mut self,
        _current: &Running,
        next: &Running,
        offline_ok: bool,
    ) -> Result<ChipWrites, ChipError> {
        let driver = self.clone();
        let config = next.config.clone();
        let result = self.runtime.block_on(async move {
            let mut inner = driver.inner.lock().await;
            let written = inner.program(&config, offline_ok).await?;
            let entries = inner.programmed.len() + inner.groups.len();
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
            ChipWrites::Written { entries: written }
        } else {
            ChipWrites::Offline
        })
    }

    fn preview(&mut self, _current: &Running, next: &Running) -> ChipWrites {
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
                    // A few writes are worth seeing one by one, with the configuration
                    // that makes each; thousands are the table counts.
                    let listed = if plan.len() <= LISTED_WRITES {
                        plan.ops()
                            .map(|op| EntryWrite {
                                source: op.entry().source.clone(),
                                update: op.kind(),
                                table: inner.tables.name(op.entry().entry.table_id).to_string(),
                            })
                            .collect()
                    } else {
                        Vec::new()
                    };
                    ChipWrites::Planned(Planned {
                        writes: plan.len(),
                        per_table: plan.summary(&inner.tables),
                        listed,
                    })
                }
                Err(e) => ChipWrites::NotCompiled(e.to_string()),
            }
        })
    }
}

/// A frame to send finds no connection to the chip (none yet, or it ended).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("the chip is not connected")]
pub struct NotConnected;

/// Writes a `commit check` lists one by one.
const LISTED_WRITES: usize = 10;

/// A configuration the compiler could not make into entries: too many for the chip is
/// "full" (as a full table would be), anything else a compile error.
fn compile_error(e: CompileError) -> ChipError {
    match e {
        CompileError::Capacity(over) => ChipError::OverCapacity(over),
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
mod tests;
