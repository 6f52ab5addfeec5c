//! The one owner of the configuration: a thread holding the datastore, handling the
//! requests clients send it one after the other, and rolling back a `commit confirmed`
//! when its time is up. Requests never share the data; commits are serialized without
//! locks.
//!
//! The servers (management API, gNMI, the metrics) reach [`OwnerState`] only through a
//! [`Request`] (`request.rs`, a closed set of values); this module imports none of them.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use efb_balancing::{BypassMode, LiveState};
use efb_datastore::{
    CommitKind, CommitOutcome, CommitRequest, Datastore, DatastoreError, Edit, Opened, Running,
    SessionId, SessionInfo, SessionLimits, Written,
};
use efb_liveness::PairState;
use efb_model::Config;
use efb_northbound::published::{Pending, Snapshot};
use efb_yang::{Problem, Schema};
use tokio::sync::broadcast;
use tracing::{debug, error, info};

use crate::chip::liveness::Liveness;
use crate::chip::{self, CountersToRead};
use crate::owner::baselines::Baselines;
use crate::process::memory;
use crate::record::events::{self, ConfirmTimeout, Event, Events, Origin, Rollback};
use crate::state::StateInputs;
use crate::state::instruments::Instruments;

pub mod baselines;
pub mod live;
pub mod request;

pub use request::{Answer, Client, Commit, CommitRefused, Committed, Entered, Request};

/// What the owner thread holds.
pub struct OwnerState {
    datastore: Datastore,
    /// What the daemon knows of the data plane's state: bypass modes set by operators, and
    /// pair liveness once keep-alives run.
    live: LiveState,
    /// Bumped by every change of `live`.
    state_version: u64,
    started: Instant,
    /// Where snapshots go after each change (to gNMI subscribers).
    snapshots: broadcast::Sender<Arc<Snapshot>>,
    /// The last snapshot published.
    latest: Arc<Snapshot>,
    /// The southbound driver, once attached: it programs the chip at every commit.
    driver: Option<efb_p4::Driver>,
    /// Keep-alive probing, when there is a chip to probe through.
    liveness: Option<Liveness>,
    /// Counter values `clear ... statistics` took, applied wherever counters are read.
    baselines: Baselines,
    /// Commits, liveness changes, chip refusals: logged and kept for `show log`.
    events: Events,
    /// The chip's port states last heard, to tell which links they changed.
    ports_up: BTreeMap<u32, bool>,
    /// Commits counted and timed, for the metrics.
    instruments: Instruments,
    /// The running configuration's warnings, told when it was committed: a commit tells
    /// only the warnings its change brought, not every one still true.
    told_warnings: HashSet<Problem>,
    /// The running configuration's balancing hash.
    running_hash: RunningHash,
    /// Asked to stop ([`Request::Stop`]).
    stopping: bool,
}

/// The balancing hash of one running configuration: the commit event, the state tree and
/// the commit reply all tell it, and hashing a 100 000-flow configuration at each of them
/// would be paid several times per commit and at every change of liveness.
struct RunningHash {
    /// The running configuration it is of (commit ids are never reused).
    commit_id: u64,
    hash: String,
}

impl RunningHash {
    fn of(running: &Running) -> RunningHash {
        RunningHash {
            commit_id: running.commit_id,
            hash: efb_balancing::config_hash(&running.config),
        }
    }
}

/// The daemon as `show system status` tells it.
#[derive(Clone, Debug)]
pub struct Status {
    pub uptime: Duration,
    pub running_commit_id: u64,
    pub confirm_deadline: Option<SystemTime>,
    pub sessions: usize,
    /// The chip in one line.
    pub chip: String,
    /// Units an operator put in bypass or primary.
    pub manual_modes: Vec<(String, BypassMode)>,
    pub open_sessions: Vec<SessionInfo>,
}

/// Start-up: the datastore, and the chip and its keep-alives when there is one.
impl OwnerState {
    pub fn new(
        datastore: Datastore,
        snapshots: broadcast::Sender<Arc<Snapshot>>,
        events: Events,
    ) -> OwnerState {
        let running_hash = RunningHash::of(datastore.running());
        // Nothing known yet: no chip, nothing probed, every pair up.
        let inputs = StateInputs {
            running: datastore.running().clone(),
            config_hash: running_hash.hash.clone(),
            live: LiveState::all_up(),
            pairs: Vec::new(),
            driver: None,
            baselines: Baselines::default(),
        };
        let latest = Arc::new(snapshot(datastore.schema(), &inputs, 0));
        OwnerState {
            datastore,
            live: inputs.live,
            state_version: 0,
            ports_up: BTreeMap::new(),
            started: Instant::now(),
            snapshots,
            latest,
            driver: None,
            liveness: None,
            baselines: inputs.baselines,
            events,
            instruments: Instruments::default(),
            told_warnings: HashSet::new(),
            running_hash,
            stopping: false,
        }
    }

    /// From now on commits and validations are counted in `instruments`.
    pub fn attach_metrics(&mut self, instruments: Instruments) {
        self.datastore
            .on_validation(instruments.validation_observer());
        self.instruments = instruments;
    }

    pub fn set_session_limits(&mut self, limits: SessionLimits) {
        self.datastore.set_session_limits(limits);
    }

    pub fn running_config(&self) -> Arc<Config> {
        self.datastore.running().config.clone()
    }

    /// From now on every commit programs the chip through `driver` before it is accepted.
    pub fn attach_driver(&mut self, driver: efb_p4::Driver) {
        self.datastore.set_southbound(Box::new(driver.clone()));
        self.driver = Some(driver);
    }

    /// From now on probing follows every commit, and the state shows what it finds.
    pub fn attach_liveness(&mut self, liveness: Liveness) {
        self.liveness = Some(liveness);
    }
}

/// The candidates and running as written (the shell's configuration mode).
impl OwnerState {
    /// The candidate as written: the tree, and what it keeps inactive.
    fn candidate_written(&self, session: SessionId) -> Result<Written, DatastoreError> {
        Ok((
            self.datastore.candidate(session)?.clone(),
            self.datastore.candidate_inactive(session)?.clone(),
        ))
    }

    /// Running as written.
    fn running_written(&self) -> Written {
        let running = self.datastore.running();
        (running.tree.clone(), running.inactive.clone())
    }
}

/// Where a commit's candidate comes from.
pub enum Candidate {
    /// A session's candidate (the shell, the management API).
    Session(SessionId),
    /// Running with `edits`, in a session of the commit's own (a gNMI Set: all or nothing).
    Edits { user: String, edits: Vec<Edit> },
    /// The configuration before the first unconfirmed `commit confirmed` (gNMI's cancel,
    /// or nobody confirmed in time): nothing when none is pending.
    BeforeUnconfirmed,
}

/// Commits: the shell's, gNMI's, and the rollbacks of an unconfirmed `commit confirmed`.
impl OwnerState {
    /// A client's commit or check through `funnel`, its warnings told once.
    fn client_commit(
        &mut self,
        origin: Origin,
        candidate: Candidate,
        request: CommitRequest,
    ) -> Result<CommitOutcome, DatastoreError> {
        let mut outcome = self.funnel(origin, candidate, request)?.ok_or_else(|| {
            DatastoreError::NotFound("no commit confirmed is pending: nothing to roll back".into())
        })?;
        outcome.earlier_warnings = self.tell_warnings_once(&mut outcome);
        Ok(outcome)
    }

    /// The one way into a commit or a check, whoever asks: the datastore validates the
    /// candidate, has the chip written (the southbound plans and writes; a refusal leaves
    /// everything as it was) and persists running; then, in [`Self::published`], what
    /// happened is counted and evented (the state and snapshot follow the job:
    /// `publish_if_changed`). None: nothing to roll back.
    fn funnel(
        &mut self,
        origin: Origin,
        candidate: Candidate,
        request: CommitRequest,
    ) -> Result<Option<CommitOutcome>, DatastoreError> {
        let undone = self.pending_confirm().map(|p| p.commit_id);
        let started = Instant::now();
        let check_only = request.check_only;
        let result = match candidate {
            Candidate::Session(session) => self.datastore.commit(session, request).map(Some),
            Candidate::Edits { user, edits } => self.commit_edits(&user, &edits, request).map(Some),
            Candidate::BeforeUnconfirmed if origin == Origin::ConfirmTimeout => {
                self.datastore.expire_pending_confirm(SystemTime::now())
            }
            Candidate::BeforeUnconfirmed => self.datastore.cancel_pending_confirm(),
        };
        if !check_only && !matches!(result, Ok(None)) {
            self.count_commit(origin, started.elapsed(), result.as_ref().err());
        }
        self.published(&result, origin, undone.unwrap_or(0));
        result
    }

    /// Running with `edits`, committed in a session of its own, closed after.
    fn commit_edits(
        &mut self,
        user: &str,
        edits: &[Edit],
        request: CommitRequest,
    ) -> Result<CommitOutcome, DatastoreError> {
        let ds = &mut self.datastore;
        let session = ds.open_session(user);
        let result = ds
            .edit(session, edits)
            .and_then(|()| ds.commit(session, request));
        ds.close_session(session);
        result
    }

    /// Each warning is told once: a commit's outcome keeps the warnings no earlier commit
    /// told; returns how many it left out (still true, told before). A check keeps all: it
    /// was asked.
    fn tell_warnings_once(&mut self, outcome: &mut CommitOutcome) -> usize {
        if outcome.commit_id.is_none() {
            return 0;
        }
        let now: HashSet<Problem> = outcome.warnings.iter().cloned().collect();
        let told = std::mem::replace(&mut self.told_warnings, now);
        let all = outcome.warnings.len();
        outcome.warnings.retain(|w| !told.contains(w));
        all - outcome.warnings.len()
    }

    /// What a commit (or a check) does to the sessions flowing now, with today's liveness.
    fn bucket_moves(&self, outcome: &CommitOutcome) -> Vec<efb_balancing::UnitMoves> {
        outcome
            .configs()
            .map(|(before, after)| efb_balancing::bucket_moves(before, after, &self.live))
            .unwrap_or_default()
    }

    /// The running configuration's balancing hash, worked out again only when running
    /// changed (a new commit id).
    fn running_hash(&mut self) -> String {
        let running = self.datastore.running();
        if self.running_hash.commit_id != running.commit_id {
            self.running_hash = RunningHash::of(running);
        }
        self.running_hash.hash.clone()
    }

    /// The balancing hashes of the configurations before and after a commit or check (none
    /// for a commit of nothing): `before` is running's, taken before it; after a commit, the
    /// new running one's is the owner's own; a check's candidate is hashed here.
    fn config_hashes(&mut self, before: String, outcome: &CommitOutcome) -> (String, String) {
        let Some((_, after)) = outcome.configs() else {
            return (String::new(), String::new());
        };
        let after = match outcome.commit_id {
            Some(_) => self.running_hash(),
            None => efb_balancing::config_hash(after),
        };
        (before, after)
    }

    /// The pending `commit confirmed`, if any.
    fn pending_confirm(&self) -> Option<Pending> {
        self.datastore
            .pending_confirm_deadline()
            .map(|deadline| Pending {
                commit_id: self.datastore.running().commit_id,
                deadline,
            })
    }

    /// The pending `commit confirmed` now waits `timeout` from now; returns it.
    fn set_confirm_timeout(
        &mut self,
        timeout: Duration,
    ) -> Result<Option<Pending>, DatastoreError> {
        self.datastore.set_confirm_timeout(timeout)?;
        Ok(self.pending_confirm())
    }

    /// Rolls the pending `commit confirmed` back now (gNMI's cancel); returns the commit it
    /// undid.
    fn cancel_pending_confirm(&mut self) -> Result<Option<u64>, DatastoreError> {
        let pending = self.pending_confirm().map(|p| p.commit_id);
        let done = self.funnel(
            Origin::Cancel,
            Candidate::BeforeUnconfirmed,
            CommitRequest::default(),
        )?;
        Ok(done.and(pending))
    }

    /// Rolls back a `commit confirmed` nobody confirmed in time (the owner's timer).
    fn expire_confirmed_commit(&mut self) {
        let result = self.funnel(
            Origin::ConfirmTimeout,
            Candidate::BeforeUnconfirmed,
            CommitRequest::default(),
        );
        if let Err(e) = result {
            // Retrying at once would fail again, in a loop: keep what is committed and say so.
            error!(%e, "could not roll back an unconfirmed commit: the configuration stays as committed");
            if let Err(e) = self.datastore.confirm() {
                error!(%e, "could not clear the pending confirmation");
            }
        }
    }
}

/// The events of commits: one per new running configuration, and the chip's refusals.
impl OwnerState {
    /// A commit from `origin` that `took` so long is done, refused with `error` or not.
    fn count_commit(&self, origin: Origin, took: Duration, error: Option<&DatastoreError>) {
        self.instruments.commit_finished(origin, error, took);
    }

    /// The commits the datastore made as it opened (the boot, a rollback of a `commit
    /// confirmed` whose time ran out while efbd was stopped), counted and evented like any
    /// other, once the metrics, the chip and liveness are attached. The chip gets their
    /// configuration from the driver's reconcile with running when it connects.
    fn publish_opened(&mut self) {
        // A boot with nothing to load (no startup, no factory default) committed nothing.
        let made = |o: &Opened| o.outcome.commit_id.is_some();
        for opened in self.datastore.take_opened().into_iter().filter(made) {
            let origin = match opened.kind {
                CommitKind::ConfirmTimeout => Origin::ConfirmTimeout,
                _ => Origin::Boot,
            };
            self.count_commit(origin, opened.took, None);
            let undone = opened.undone.unwrap_or(0);
            self.published(&Ok(Some(opened.outcome)), origin, undone);
        }
    }

    /// What a commit from `origin` did, told once for every origin: the chip's refusal,
    /// or the new running configuration (a commit; for a rollback of the unconfirmed
    /// commit `undone`, the rollback).
    fn published(
        &mut self,
        result: &Result<Option<CommitOutcome>, DatastoreError>,
        origin: Origin,
        undone: u64,
    ) {
        let during = match origin {
            Origin::Shell | Origin::Gnmi | Origin::Boot => "commit",
            Origin::Cancel => "rollback",
            Origin::ConfirmTimeout => "confirm timeout",
        };
        self.chip_refused(during, result);
        let Ok(Some(outcome)) = result else {
            return;
        };
        let Some(commit) = self.commit_event(outcome, origin) else {
            return;
        };
        let event = match origin {
            Origin::Shell | Origin::Gnmi | Origin::Boot => Event::Commit(commit),
            // Only gNMI cancels.
            Origin::Cancel => Event::Rollback(Rollback {
                id: commit.id,
                undone,
                origin: Origin::Gnmi,
                changes: commit.changes,
                hash: commit.hash,
            }),
            Origin::ConfirmTimeout => Event::ConfirmTimeout(ConfirmTimeout {
                id: commit.id,
                undone,
                changes: commit.changes,
                hash: commit.hash,
            }),
        };
        self.events.emit(event);
    }

    fn chip_refused<T>(&self, during: &str, result: &Result<T, DatastoreError>) {
        if let Err(DatastoreError::Southbound(e)) = result {
            self.events.emit(Event::chip_refusal(during, e));
        }
    }

    /// The commit `outcome` made, from the history's record of it; none for a check or
    /// a commit of nothing. Its changes are counted in the metrics here, where every new
    /// running configuration passes.
    fn commit_event(&mut self, outcome: &CommitOutcome, origin: Origin) -> Option<events::Commit> {
        let id = outcome.commit_id?;
        self.instruments.changes_committed(outcome.change_count());
        let info = self.datastore.history().into_iter().find(|c| c.id == id)?;
        Some(events::Commit {
            id,
            user: info.user,
            origin,
            comment: info.comment.unwrap_or_default(),
            changes: outcome.change_count(),
            hash: self.running_hash(),
        })
    }
}

/// Reading the configuration, its history and the daemon.
impl OwnerState {
    fn status(&self) -> Status {
        Status {
            uptime: self.started.elapsed(),
            running_commit_id: self.datastore.running().commit_id,
            confirm_deadline: self.datastore.pending_confirm_deadline(),
            sessions: self.datastore.session_count(),
            chip: self.driver.as_ref().map_or_else(
                || "not programmed: efbd runs without a data plane".to_string(),
                |d| chip::describe(&d.status()),
            ),
            manual_modes: self
                .live
                .modes
                .iter()
                .filter(|(_, mode)| **mode != BypassMode::Auto)
                .map(|(unit, mode)| (unit.clone(), *mode))
                .collect(),
            open_sessions: self.datastore.sessions(),
        }
    }

    /// What the operational tree is built from now (with or without the chip's counters),
    /// off this thread.
    fn state_inputs(&mut self) -> StateInputs {
        StateInputs {
            config_hash: self.running_hash(),
            running: self.datastore.running().clone(),
            live: self.live.clone(),
            pairs: self.pairs(),
            driver: self.driver.clone(),
            baselines: self.baselines.clone(),
        }
    }

    fn pairs(&self) -> Vec<PairState> {
        self.liveness
            .as_ref()
            .map(Liveness::pairs)
            .unwrap_or_default()
    }
}

/// Publishing to gNMI.
impl OwnerState {
    /// Publishes a new snapshot when a commit or a state change happened since the last
    /// one. Called after each job, so subscribers never see a change before it is committed.
    fn publish_if_changed(&mut self) {
        let commit_id = self.datastore.running().commit_id;
        if commit_id == self.latest.commit_id && self.state_version == self.latest.state_version {
            return;
        }
        if commit_id != self.latest.commit_id
            && let Some(liveness) = &self.liveness
        {
            liveness.config_changed(self.running_config());
        }
        let inputs = self.state_inputs();
        let schema = self.datastore.schema();
        let next = Arc::new(snapshot(schema, &inputs, self.state_version));
        self.latest = next.clone();
        // No subscriber is not an error.
        let _ = self.snapshots.send(next);
    }
}

/// Configuration and state as `inputs` make them; counters are read when a client asks
/// for them.
fn snapshot(schema: &Schema, inputs: &StateInputs, state_version: u64) -> Snapshot {
    Snapshot {
        commit_id: inputs.running.commit_id,
        state_version,
        timestamp_ns: SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64),
        running: inputs.running.tree.clone(),
        operational: inputs.tree(schema, &CountersToRead::NOTHING),
    }
}

/// A handle for asking the owner; cheap to clone.
#[derive(Clone)]
pub struct Owner {
    queue: mpsc::Sender<Request>,
}

/// The owner thread has stopped (the daemon is shutting down).
#[derive(Debug, thiserror::Error)]
#[error("efbd is shutting down")]
pub struct OwnerGone;

impl Owner {
    /// Starts the owner thread. It stops when every handle is dropped.
    pub fn start(state: OwnerState) -> std::io::Result<(Owner, JoinHandle<()>)> {
        let (queue, requests) = mpsc::channel::<Request>();
        let thread = std::thread::Builder::new()
            .name("configuration".into())
            .spawn(move || run(state, requests))?;
        Ok((Owner { queue }, thread))
    }

    /// Asks the owner what `asked` makes of the answer's way back (a variant of
    /// [`Request`]: `owner.ask(Request::History)`), and waits for the answer.
    pub async fn ask<T>(&self, asked: impl FnOnce(Answer<T>) -> Request) -> Result<T, OwnerGone> {
        let (to, answer) = tokio::sync::oneshot::channel();
        self.tell(asked(to))?;
        answer.await.map_err(|_| OwnerGone)
    }

    /// [`Owner::ask`] for a client of the management API ([`Request::Client`]): the
    /// sessions closed for being idle, then the answer, or why the client's session did
    /// not let the request in.
    pub async fn ask_for<T>(
        &self,
        client: Client,
        asked: impl FnOnce(Answer<T>) -> Request,
    ) -> Result<(Vec<SessionInfo>, Result<T, DatastoreError>), OwnerGone> {
        let (to, answer) = tokio::sync::oneshot::channel();
        let then = Box::new(asked(to));
        let Entered { expired, result } = self
            .ask(|entered| Request::Client {
                client,
                entered,
                then,
            })
            .await?;
        match result {
            Ok(()) => Ok((expired, Ok(answer.await.map_err(|_| OwnerGone)?))),
            Err(refused) => Ok((expired, Err(refused))),
        }
    }

    /// Hands the owner a request without waiting for it (the chip's port states, pair
    /// liveness: probing must never wait for a commit). Handled in the order told.
    pub fn tell(&self, request: Request) -> Result<(), OwnerGone> {
        self.queue.send(request).map_err(|_| OwnerGone)
    }
}

fn run(mut state: OwnerState, requests: mpsc::Receiver<Request>) {
    state.publish_opened();
    // When to give free memory back: once idle for a while after a request.
    let mut give_back: Option<Instant> = None;
    loop {
        let wake = [until_confirm_deadline(&state), give_back.map(until)];
        let next = match wake.into_iter().flatten().min() {
            Some(wait) => requests.recv_timeout(wait),
            None => requests.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        match next {
            Ok(request) => {
                state.handle(request);
                give_back = Some(Instant::now() + memory::IDLE_BEFORE_GIVING_BACK);
            }
            Err(RecvTimeoutError::Timeout)
                if until_confirm_deadline(&state).is_some_and(|w| w.is_zero()) =>
            {
                state.expire_confirmed_commit();
            }
            Err(RecvTimeoutError::Timeout) => {
                give_back = None;
                let free = memory::give_back_free();
                debug!(free_mib = free >> 20, "idle: free memory given back");
            }
            Err(RecvTimeoutError::Disconnected) => break,
        }
        state.publish_if_changed();
        if state.stopping {
            break;
        }
    }
    info!("configuration owner stopped");
}

fn until(instant: Instant) -> Duration {
    instant.saturating_duration_since(Instant::now())
}

fn until_confirm_deadline(state: &OwnerState) -> Option<Duration> {
    let deadline = state.datastore.pending_confirm_deadline()?;
    Some(
        deadline
            .duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}
