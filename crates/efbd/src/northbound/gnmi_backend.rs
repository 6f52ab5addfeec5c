//! efbd as the gNMI server's backend: every request is a request to the configuration
//! owner, exactly like the management API's.

use std::sync::Arc;
use std::time::Duration;

use efb_datastore::{CommitRequest, DatastoreError, Edit};
use efb_gnmi::backend::{Backend, BackendError, Committed, Pending, Snapshot, pending_message};
use efb_gnmi::path::{Pattern, Relation};
use efb_yang::Schema;
use tokio::sync::broadcast;

use crate::chip::CounterLists;
use crate::owner::{Candidate, Commit, CommitRefused, Owner, OwnerGone, Request as R};
use crate::record::events::Origin;
use crate::state;

pub struct GnmiBackend {
    pub owner: Owner,
    pub schema: Arc<Schema>,
    pub snapshots: broadcast::Sender<Arc<Snapshot>>,
    pub counter_lists: CounterLists,
    pub interfaces: Arc<crate::northbound::openconfig::BoxInterfaces>,
}

/// The owner's answer; a refusal keeps its kind: gNMI gives it the code the management
/// API gives it (`efb_northbound::status::code`).
fn done<T>(answer: Result<Result<T, DatastoreError>, OwnerGone>) -> Result<T, BackendError> {
    answer.map_err(gone)?.map_err(BackendError::from)
}

fn gone(e: OwnerGone) -> BackendError {
    BackendError::Unavailable(e.to_string())
}

fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

#[tonic::async_trait]
impl Backend for GnmiBackend {
    fn schema(&self) -> Arc<Schema> {
        self.schema.clone()
    }

    fn interfaces(&self) -> Option<Arc<dyn efb_openconfig::Source>> {
        Some(self.interfaces.clone())
    }

    async fn snapshot(&self) -> Result<Arc<Snapshot>, BackendError> {
        self.owner.ask(R::Snapshot).await.map_err(gone)
    }

    fn changes(&self) -> broadcast::Receiver<Arc<Snapshot>> {
        self.snapshots.subscribe()
    }

    async fn with_counters(
        &self,
        snapshot: Arc<Snapshot>,
        patterns: &[Pattern],
    ) -> Result<Arc<Snapshot>, BackendError> {
        let wanted = self.counter_lists.covered(|list| {
            patterns
                .iter()
                .any(|p| p.relation(&self.schema, list) != Relation::Outside)
        });
        if wanted.is_nothing() {
            return Ok(snapshot);
        }
        let inputs = self.owner.ask(R::StateInputs).await.map_err(gone)?;
        let schema = self.schema.clone();
        // A read of 100 000 flow counters must not hold up the async threads.
        tokio::task::spawn_blocking(move || {
            let before = now_ns();
            let Some(counters) = inputs.counters(&wanted) else {
                return snapshot;
            };
            // Values read now carry now (the middle of the read), not the last commit's
            // time: rates computed from two reads come out right.
            let after = now_ns();
            let mut counted = (*snapshot).clone();
            counted.timestamp_ns = before + (after.saturating_sub(before)) / 2;
            counted.operational = state::with_counters(&schema, &snapshot.operational, &counters);
            Arc::new(counted)
        })
        .await
        .map_err(|e| BackendError::Unavailable(format!("reading the counters: {e}")))
    }

    async fn commit(
        &self,
        user: &str,
        edits: Vec<Edit>,
        confirm: Option<Duration>,
    ) -> Result<Committed, BackendError> {
        // The owner refuses it while a `commit confirmed` waits, checked in the same turn
        // as the commit: nothing can start one in between.
        let commit = Box::new(Commit {
            origin: Origin::Gnmi,
            candidate: Candidate::Edits {
                user: user.to_string(),
                edits,
            },
            request: CommitRequest {
                comment: Some("gNMI Set".to_string()),
                confirm_timeout: confirm,
                ..CommitRequest::default()
            },
        });
        let committed = self.owner.ask(|to| R::Commit(commit, to)).await;
        match committed.map_err(gone)? {
            Ok(done) => Ok(Committed {
                commit_id: done.outcome.commit_id,
                warnings: done.outcome.warnings,
            }),
            Err(CommitRefused::Datastore(e)) => Err(BackendError::from(e)),
            Err(CommitRefused::ConfirmWaiting(pending)) => {
                Err(BackendError::Precondition(pending_message(&pending)))
            }
        }
    }

    async fn confirm(&self) -> Result<Option<u64>, BackendError> {
        done(self.owner.ask(R::Confirm).await)
    }

    async fn cancel(&self) -> Result<Option<u64>, BackendError> {
        done(self.owner.ask(R::Cancel).await)
    }

    async fn pending(&self) -> Result<Option<Pending>, BackendError> {
        self.owner.ask(R::Pending).await.map_err(gone)
    }

    async fn set_rollback_duration(&self, wait: Duration) -> Result<Option<Pending>, BackendError> {
        done(self.owner.ask(|to| R::ConfirmTimeout(wait, to)).await)
    }
}
