//! The one owner of the configuration: a thread holding the datastore, running the jobs
//! clients send it one after the other, and rolling back a `commit confirmed` when its time
//! is up. Requests never share the data; commits are serialized without locks.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use std::sync::Arc;

use efb_balancing::LiveState;
use efb_datastore::Datastore;
use efb_gnmi::backend::Snapshot;
use tokio::sync::broadcast;
use tracing::{error, info, warn};

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
}

impl OwnerState {
    pub fn new(datastore: Datastore, snapshots: broadcast::Sender<Arc<Snapshot>>) -> OwnerState {
        let live = LiveState::all_up();
        let latest = Arc::new(snapshot(&datastore, &live, 0));
        OwnerState {
            datastore,
            live,
            state_version: 0,
            started: Instant::now(),
            snapshots,
            latest,
            driver: None,
        }
    }

    /// From now on every commit programs the chip through `driver` before it is accepted.
    pub fn attach_driver(&mut self, driver: efb_p4::Driver) {
        self.datastore.set_southbound(Box::new(driver.clone()));
        self.driver = Some(driver);
    }

    /// Pushes a change of `live` (bypass modes, pair liveness) to the chip.
    pub fn program_live(&mut self) -> Result<usize, String> {
        self.state_version += 1;
        match &self.driver {
            Some(driver) => driver.set_live(self.live.clone()),
            None => Ok(0),
        }
    }

    /// Publishes a new snapshot when a commit or a state change happened since the last
    /// one. Called after each job, so subscribers never see a change before it is committed.
    fn publish_if_changed(&mut self) {
        let commit_id = self.datastore.running().commit_id;
        if commit_id == self.latest.commit_id && self.state_version == self.latest.state_version {
            return;
        }
        let next = Arc::new(snapshot(&self.datastore, &self.live, self.state_version));
        self.latest = next.clone();
        // No subscriber is not an error.
        let _ = self.snapshots.send(next);
    }
}

fn snapshot(datastore: &Datastore, live: &LiveState, state_version: u64) -> Snapshot {
    let running = datastore.running();
    Snapshot {
        commit_id: running.commit_id,
        state_version,
        timestamp_ns: SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64),
        running: running.tree.clone(),
        operational: state::operational_tree(datastore.schema(), running, live, None),
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
