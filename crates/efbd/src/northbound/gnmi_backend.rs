//! efbd as the gNMI server's backend: every request is a job for the configuration owner,
//! exactly like the management API's.

use std::sync::Arc;
use std::time::Duration;

use efb_datastore::{CommitOutcome, CommitRequest, DatastoreError, Edit};
use efb_gnmi::backend::{Backend, BackendError, Committed, Pending, Snapshot, pending_message};
use efb_gnmi::path::{Pattern, Relation};
use efb_yang::Schema;
use tokio::sync::broadcast;

use crate::chip::CounterLists;
use crate::owner::{Candidate, Owner, OwnerGone};
use crate::record::events::Origin;
use crate::state;

pub struct GnmiBackend {
    pub owner: Owner,
    pub schema: Arc<Schema>,
    pub snapshots: broadcast::Sender<Arc<Snapshot>>,
    pub counter_lists: CounterLists,
    pub interfaces: Arc<crate::northbound::openconfig::BoxInterfaces>,
}

/// The refusal keeps its kind: gNMI gives it the code the management API gives it
/// (`efb_northbound::status::code`).
fn error(e: DatastoreError) -> BackendError {
    BackendError::from(e)
}

fn gone(e: OwnerGone) -> BackendError {
    BackendError::Unavailable(e.to_string())
}

fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

fn committed(outcome: CommitOutcome) -> Committed {
    Committed {
        commit_id: outcome.commit_id,
        warnings: outcome.warnings,
    }
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
        self.owner.call(|s| s.latest_snapshot()).await.map_err(gone)
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
        let inputs = self.owner.call(|s| s.state_inputs()).await.map_err(gone)?;
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
        // One job of the owner: the pending check and the commit, so that nothing can start
        // a `commit confirmed` in between.
        let user = user.to_string();
        self.owner
            .call(move |s| {
                if let Some(pending) = s.pending_confirm() {
                    return Err(BackendError::Precondition(pending_message(&pending)));
                }
                let candidate = Candidate::Edits {
                    user: &user,
                    edits: &edits,
                };
                let request = CommitRequest {
                    comment: Some("gNMI Set".to_string()),
                    confirm_timeout: confirm,
                    ..CommitRequest::default()
                };
                s.commit(Origin::Gnmi, candidate, request)
                    .map(committed)
                    .map_err(error)
            })
            .await
            .map_err(gone)?
    }

    async fn confirm(&self) -> Result<Option<u64>, BackendError> {
        self.owner
            .call(|s| s.confirm().map_err(error))
            .await
            .map_err(gone)?
    }

    async fn cancel(&self) -> Result<Option<u64>, BackendError> {
        self.owner
            .call(|s| s.cancel_pending_confirm().map_err(error))
            .await
            .map_err(gone)?
    }

    async fn pending(&self) -> Result<Option<Pending>, BackendError> {
        self.owner.call(|s| s.pending_confirm()).await.map_err(gone)
    }

    async fn set_rollback_duration(&self, wait: Duration) -> Result<Option<Pending>, BackendError> {
        self.owner
            .call(move |s| s.set_confirm_timeout(wait).map_err(error))
            .await
            .map_err(gone)?
    }
}
