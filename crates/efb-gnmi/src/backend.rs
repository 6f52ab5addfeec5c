//! What the gNMI server needs from the daemon, as a trait efbd implements: snapshots of the
//! configuration and state, a stream of them after every change, one transactional commit
//! through the same datastore the shell uses, and the pending `commit confirmed`.

use std::sync::Arc;
use std::time::Duration;

use efb_datastore::{DatastoreError, Edit};
use efb_yang::{Problem, Schema};
use tokio::sync::broadcast;

pub use efb_northbound::published::{Pending, Snapshot, pending_message};

use crate::path::Pattern;

/// A commit went through.
#[derive(Clone, Debug, Default)]
pub struct Committed {
    /// `None` when the edits changed nothing.
    pub commit_id: Option<u64>,
    pub warnings: Vec<Problem>,
}

/// Why the backend refused (each maps to a gNMI status code in one place).
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The edits or the resulting configuration are not valid; nothing changed.
    #[error("{}", lines(.0))]
    Invalid(Vec<Problem>),
    /// Something else holds what is asked for (a pending commit confirmed).
    #[error("{0}")]
    Precondition(String),
    /// The datastore or the chip refused: its kind says the code.
    #[error(transparent)]
    Datastore(DatastoreError),
    /// The daemon is stopping.
    #[error("{0}")]
    Unavailable(String),
    /// This backend cannot do it.
    #[error("{0}")]
    Unsupported(String),
}

impl From<DatastoreError> for BackendError {
    /// A configuration that is not valid lists its problems as gNMI says them; every other
    /// refusal keeps its kind.
    fn from(e: DatastoreError) -> BackendError {
        match e {
            DatastoreError::Invalid { errors, .. } => BackendError::Invalid(errors),
            DatastoreError::Edit(problems) => BackendError::Invalid(problems),
            e => BackendError::Datastore(e),
        }
    }
}

fn lines(problems: &[Problem]) -> String {
    efb_yang::text::problem_lines(problems, "")
}

/// The daemon, as the gNMI server sees it.
#[tonic::async_trait]
pub trait Backend: Send + Sync + 'static {
    fn schema(&self) -> Arc<Schema>;

    /// The box's ports as OpenConfig interfaces (origin `openconfig`), if served.
    fn interfaces(&self) -> Option<Arc<dyn efb_openconfig::Source>> {
        None
    }

    /// The latest snapshot.
    async fn snapshot(&self) -> Result<Arc<Snapshot>, BackendError>;

    /// Snapshots published after each change, newest last. A receiver that falls more than
    /// the channel's capacity behind gets `Lagged` (and its subscription is ended with a clear
    /// error): a slow subscriber never holds up a commit.
    fn changes(&self) -> broadcast::Receiver<Arc<Snapshot>>;

    /// `snapshot` with the chip's counters (flows, ports) read now, for the part of the
    /// tree the patterns cover: what Get, ONCE, POLL and SAMPLE show. Counters move with
    /// every packet, so they are read when asked for and never sent ON_CHANGE; reading a
    /// flow's counters costs a read of the whole flow table, so only when a pattern needs
    /// them. A snapshot with counters read is stamped with the time of the read. By
    /// default (a backend without a chip), the snapshot as it is.
    async fn with_counters(
        &self,
        snapshot: Arc<Snapshot>,
        _patterns: &[Pattern],
    ) -> Result<Arc<Snapshot>, BackendError> {
        Ok(snapshot)
    }

    /// Applies the edits in order, all or none, validates and commits, as `user`. With
    /// `confirm`, the commit rolls back by itself unless confirmed within that time.
    /// Refused with `Precondition` (see [`pending_message`]) while a `commit confirmed` is
    /// pending, checked in the same step as the commit: gNMI allows one pending commit at a
    /// time, and a plain commit must not confirm it as a side effect (the datastore's
    /// Junos-like rule for the shell).
    async fn commit(
        &self,
        user: &str,
        edits: Vec<Edit>,
        confirm: Option<Duration>,
    ) -> Result<Committed, BackendError>;

    /// Confirms the pending `commit confirmed`; returns the commit it confirmed.
    async fn confirm(&self) -> Result<Option<u64>, BackendError>;

    /// Rolls the pending `commit confirmed` back now.
    async fn cancel(&self) -> Result<Option<u64>, BackendError>;

    /// The pending `commit confirmed`, if any.
    async fn pending(&self) -> Result<Option<Pending>, BackendError>;

    /// The pending `commit confirmed` now waits `wait` from now; returns it (None: none
    /// waits).
    async fn set_rollback_duration(
        &self,
        _wait: Duration,
    ) -> Result<Option<Pending>, BackendError> {
        Err(BackendError::Unsupported(
            "this target cannot change the rollback duration of a waiting commit".into(),
        ))
    }
}
