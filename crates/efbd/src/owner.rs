//! The one owner of the configuration: a thread holding the datastore, running the jobs
//! clients send it one after the other, and rolling back a `commit confirmed` when its time
//! is up. Requests never share the data; commits are serialized without locks.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use std::sync::Arc;

use std::collections::BTreeMap;

use efb_balancing::LiveState;
use efb_datastore::Datastore;
use efb_gnmi::backend::Snapshot;
use efb_liveness::Change;
use tokio::sync::broadcast;
use tracing::{error, info, warn};

use crate::liveness::{self, Liveness};
use crate::state;

/// What the owner thread holds.
pub struct OwnerState {
    pub datastore: Datastore,
    /// What the daemon knows of the data plane's state: bypass modes set by operators.
    /// Pair liveness joins it once keep-alives run.
    pub live: LiveState,
    /// Bumped by every change of `live`.
    pub state_version: u64,
    pub started: Instant,
    /// Where snapshots go after each change (to gNMI subscribers).
    pub snapshots: broadcast::Sender<Arc<Snapshot>>,
    /// The last snapshot published.
    pub latest: Arc<Snapshot>,
    /// The southbound driver, once attached: it programs the chip at every commit.
    pub driver: Option<efb_p4::Driver>,
    /// Keep-alive probing, when there is a chip to probe through.
    pub liveness: Option<Liveness>,
}

impl OwnerState {
    pub fn new(datastore: Datastore, snapshots: broadcast::Sender<Arc<Snapshot>>) -> OwnerState {
        let live = LiveState::all_up();
        let latest = Arc::new(snapshot(&datastore, &live, &[], 0));
        OwnerState {
            datastore,
            live,
            state_version: 0,
            started: Instant::now(),
            snapshots,
            latest,
            driver: None,
            liveness: None,
        }
    }

    /// From now on every commit programs the chip through `driver` before it is accepted.
    pub fn attach_driver(&mut self, driver: efb_p4::Driver) {
        self.datastore.set_southbound(Box::new(driver.clone()));
        self.driver = Some(driver);
    }

    /// Pushes a change of bypass modes to the chip.
    pub fn program_live(&mut self) -> Result<usize, String> {
        self.state_version += 1;
        match &self.driver {
            Some(driver) => driver.set_live(self.live.clone()),
            None => Ok(0),
        }
    }

    /// Pairs whose liveness changed: logged, the live state updated, the chip programmed
    /// (only the entries the change touches), the units whose status follows logged too.
    pub fn liveness_changed(&mut self, changes: Vec<Change>) {
        let config = self.datastore.running().config.clone();
        let before = liveness::unit_statuses(&config, &self.live);
        for c in &changes {
            let key = (c.unit.clone(), c.pair.clone());
            if c.new.is_live() {
                self.live.down_pairs.remove(&key);
                info!(unit = %c.unit, pair = %c.pair, old = c.old.as_str(), new = c.new.as_str(), reason = %c.reason, "pair-state-change");
            } else {
                self.live.down_pairs.insert(key);
                warn!(unit = %c.unit, pair = %c.pair, old = c.old.as_str(), new = c.new.as_str(), reason = %c.reason, "pair-state-change");
            }
        }
        self.state_version += 1;
        if let Some(driver) = &self.driver {
            match driver.set_liveness(self.live.clone()) {
                Ok(written) => {
                    // From the verdict to the chip's acknowledgement: how long traffic still
                    // went to a dead filter after liveness knew.
                    let latency = changes.first().map(|c| c.at.elapsed()).unwrap_or_default();
                    info!(
                        written,
                        verdict_to_chip_us = latency.as_micros() as u64,
                        "liveness programmed"
                    );
                }
                Err(e) => error!(%e, "a liveness change could not be written to the chip"),
            }
        }
        let reason = match changes.as_slice() {
            [one] => format!("pair {} {}", one.pair, one.new.as_str()),
            many => format!("{} pairs changed", many.len()),
        };
        log_unit_changes(
            &before,
            &liveness::unit_statuses(&config, &self.live),
            &reason,
        );
    }

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
            liveness.config_changed(self.datastore.running().config.clone());
        }
        let pairs = self
            .liveness
            .as_ref()
            .map(Liveness::pairs)
            .unwrap_or_default();
        let next = Arc::new(snapshot(
            &self.datastore,
            &self.live,
            &pairs,
            self.state_version,
        ));
        self.latest = next.clone();
        // No subscriber is not an error.
        let _ = self.snapshots.send(next);
    }
}

/// Logs every unit whose status differs between `before` and `after`.
pub fn log_unit_changes(
    before: &BTreeMap<String, (bool, usize)>,
    after: &BTreeMap<String, (bool, usize)>,
    reason: &str,
) {
    for (unit, (active, live_pairs)) in after {
        let old = before.get(unit).map(|(a, _)| *a);
        if old.is_some_and(|old| old != *active) {
            warn!(
                unit = %unit,
                old = liveness::unit_status_name(!active),
                new = liveness::unit_status_name(*active),
                live_pairs,
                reason,
                "unit-state-change"
            );
        }
    }
}

fn snapshot(
    datastore: &Datastore,
    live: &LiveState,
    pairs: &[efb_liveness::PairState],
    state_version: u64,
) -> Snapshot {
    let running = datastore.running();
    Snapshot {
        commit_id: running.commit_id,
        state_version,
        timestamp_ns: SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64),
        running: running.tree.clone(),
        operational: state::operational_tree(
            datastore.schema(),
            running,
            state::Known {
                live,
                counters: None,
                pairs,
            },
        ),
    }
}

type Job = Box<dyn FnOnce(&mut OwnerState) + Send>;

/// A handle for sending the owner jobs; cheap to clone.
#[derive(Clone)]
pub struct Owner {
    queue: mpsc::Sender<Job>,
}

/// The owner thread has stopped (the daemon is shutting down).
#[derive(Debug, thiserror::Error)]
#[error("efbd is shutting down")]
pub struct OwnerGone;

impl Owner {
    /// Starts the owner thread. It stops when every handle is dropped.
    pub fn start(state: OwnerState) -> std::io::Result<(Owner, JoinHandle<()>)> {
        let (queue, jobs) = mpsc::channel::<Job>();
        let thread = std::thread::Builder::new()
            .name("configuration".into())
            .spawn(move || run(state, jobs))?;
        Ok((Owner { queue }, thread))
    }

    /// Runs `job` on the owner and returns its result.
    pub async fn call<R, F>(&self, job: F) -> Result<R, OwnerGone>
    where
        R: Send + 'static,
        F: FnOnce(&mut OwnerState) -> R + Send + 'static,
    {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move |state| {
            // The caller may have gone (client disconnected): nothing to do then.
            let _ = reply.send(job(state));
        });
        self.queue.send(job).map_err(|_| OwnerGone)?;
        answer.await.map_err(|_| OwnerGone)
    }
}

fn run(mut state: OwnerState, jobs: mpsc::Receiver<Job>) {
    loop {
        let next = match until_confirm_deadline(&state) {
            Some(wait) => jobs.recv_timeout(wait),
            None => jobs.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        match next {
            Ok(job) => job(&mut state),
            Err(RecvTimeoutError::Timeout) => expire_confirmed_commit(&mut state),
            Err(RecvTimeoutError::Disconnected) => break,
        }
        state.publish_if_changed();
    }
    info!("configuration owner stopped");
}

fn until_confirm_deadline(state: &OwnerState) -> Option<Duration> {
    let deadline = state.datastore.pending_confirm_deadline()?;
    Some(
        deadline
            .duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

fn expire_confirmed_commit(state: &mut OwnerState) {
    match state.datastore.expire_pending_confirm(SystemTime::now()) {
        Ok(Some(outcome)) => warn!(
            commit = outcome.commit_id.unwrap_or(0),
            "commit confirmed was not confirmed in time: previous configuration restored"
        ),
        Ok(None) => {}
        Err(e) => {
            // Retrying at once would fail again, in a loop: keep what is committed and say so.
            error!(%e, "could not roll back an unconfirmed commit: the configuration stays as committed");
            if let Err(e) = state.datastore.confirm() {
                error!(%e, "could not clear the pending confirmation");
            }
        }
    }
}
