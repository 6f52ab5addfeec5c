//! efbd as the gNMI server's backend: every request is a job for the configuration owner,
//! exactly like the management API's.

use std::sync::Arc;
use std::time::Duration;

use efb_datastore::{CommitRequest, DatastoreError, Edit};
use efb_gnmi::backend::{Backend, BackendError, Committed, Pending, Snapshot, pending_message};
use efb_gnmi::path::{Pattern, Relation};
use efb_yang::{DataPath, Schema};
use tokio::sync::broadcast;

use crate::owner::{Owner, OwnerGone, OwnerState};
use crate::{chip, state};

pub struct GnmiBackend {
    pub owner: Owner,
    pub schema: Arc<Schema>,
    pub snapshots: broadcast::Sender<Arc<Snapshot>>,
}

fn error(e: DatastoreError) -> BackendError {
    match e {
        DatastoreError::Invalid { errors, .. } => BackendError::Invalid(errors),
        DatastoreError::Edit(problems) => BackendError::Invalid(problems),
        DatastoreError::Conflict { .. } | DatastoreError::Southbound(_) => {
            BackendError::Precondition(e.to_string())
        }
        DatastoreError::NotFound(_) | DatastoreError::UnknownSession(_) => {
            BackendError::NotFound(e.to_string())
        }
        DatastoreError::Refused(message) => BackendError::Refused(message),
        DatastoreError::Locked { .. }
        | DatastoreError::Storage(_)
        | DatastoreError::SessionExpired { .. }
        | DatastoreError::TooManySessions { .. } => BackendError::Unavailable(e.to_string()),
    }
}

fn gone(e: OwnerGone) -> BackendError {
    BackendError::Unavailable(e.to_string())
}

/// One gNMI Set on the owner: a session of its own, the edits, the commit.
fn commit(
    s: &mut OwnerState,
    user: &str,
    edits: &[Edit],
    confirm: Option<Duration>,
) -> Result<Committed, BackendError> {
    let ds = &mut s.datastore;
    let session = ds.open_session(user);
    let result = ds.edit(session, edits).and_then(|()| {
        ds.commit(
            session,
            CommitRequest {
                comment: Some("gNMI Set".to_string()),
                confirm_timeout: confirm,
                ..CommitRequest::default()
            },
        )
    });
    ds.close_session(session);
    result
        .map(|outcome| Committed {
            commit_id: outcome.commit_id,
            warnings: outcome.warnings,
        })
        .map_err(error)
}

#[tonic::async_trait]
impl Backend for GnmiBackend {
    fn schema(&self) -> Arc<Schema> {
        self.schema.clone()
    }

    async fn snapshot(&self) -> Result<Arc<Snapshot>, BackendError> {
        self.owner.call(|s| s.latest.clone()).await.map_err(gone)
    }

    fn changes(&self) -> broadcast::Receiver<Arc<Snapshot>> {
        self.snapshots.subscribe()
    }

    async fn with_counters(
        &self,
        snapshot: Arc<Snapshot>,
        patterns: &[Pattern],
    ) -> Result<Arc<Snapshot>, BackendError> {
        let covers = |list: &str| {
            DataPath::parse(&self.schema, list).is_ok_and(|list| {
                patterns
                    .iter()
                    .any(|p| p.relation(&self.schema, &list) != Relation::Outside)
            })
        };
        let flows = covers(chip::FLOW_LIST);
        let ports = covers(chip::PORT_LIST);
        if !flows && !ports {
            return Ok(snapshot);
        }
        let wanted = chip::Wanted {
            flows: if flows {
                chip::Flows::All
            } else {
                chip::Flows::None
            },
            ports,
        };
        let (driver, config) = self
            .owner
            .call(|s| (s.driver.clone(), s.datastore.running().config.clone()))
            .await
            .map_err(gone)?;
        let Some(driver) = driver else {
            return Ok(snapshot);
        };
        let schema = self.schema.clone();
        // A read of 100 000 flow counters must not hold up the async threads.
        tokio::task::spawn_blocking(move || {
            let counters = chip::counters(&driver, &config, wanted);
            let mut counted = (*snapshot).clone();
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
        let user = user.to_string();
        self.owner
            .call(move |s| commit(s, &user, &edits, confirm))
            .await
            .map_err(gone)?
    }

    async fn commit_unless_pending(
        &self,
        user: &str,
        edits: Vec<Edit>,
        confirm: Option<Duration>,
    ) -> Result<Committed, BackendError> {
        let user = user.to_string();
        self.owner
            .call(move |s| {
                // Checked in the same job as the commit: nothing can start one in between.
                if let Some(deadline) = s.datastore.pending_confirm_deadline() {
                    return Err(BackendError::Precondition(pending_message(&Pending {
                        commit_id: s.datastore.running().commit_id,
                        deadline,
                    })));
                }
                commit(s, &user, &edits, confirm)
            })
            .await
            .map_err(gone)?
    }

    async fn confirm(&self) -> Result<Option<u64>, BackendError> {
        self.owner
            .call(|s| s.datastore.confirm().map_err(error))
            .await
            .map_err(gone)?
    }

    async fn cancel(&self) -> Result<Option<u64>, BackendError> {
        self.owner
            .call(|s| {
                let pending = s
                    .datastore
                    .pending_confirm_deadline()
                    .map(|_| s.datastore.running().commit_id);
                s.datastore
                    .cancel_pending_confirm()
                    .map(|_| pending)
                    .map_err(error)
            })
            .await
            .map_err(gone)?
    }

    async fn pending(&self) -> Result<Option<Pending>, BackendError> {
        self.owner
            .call(|s| {
                s.datastore
                    .pending_confirm_deadline()
                    .map(|deadline| Pending {
                        commit_id: s.datastore.running().commit_id,
                        deadline,
                    })
            })
            .await
            .map_err(gone)
    }
}
