//! The backend behind a gate the server closes when it stops: requests still under way on
//! connections a client keeps open then get UNAVAILABLE, and the daemon's handles (its
//! configuration owner) are released at once.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use efb_datastore::Edit;
use efb_yang::Schema;
use tokio::sync::broadcast;

use crate::backend::{Backend, BackendError, Committed, Pending, Snapshot};
use crate::path::Pattern;

pub(crate) struct Gate {
    schema: Arc<Schema>,
    inner: RwLock<Option<Arc<dyn Backend>>>,
}

impl Gate {
    pub fn new(backend: Arc<dyn Backend>) -> Gate {
        Gate {
            schema: backend.schema(),
            inner: RwLock::new(Some(backend)),
        }
    }

    pub fn close(&self) {
        if let Ok(mut inner) = self.inner.write() {
            *inner = None;
        }
    }

    fn open(&self) -> Result<Arc<dyn Backend>, BackendError> {
        self.inner
            .read()
            .ok()
            .and_then(|inner| inner.clone())
            .ok_or_else(|| BackendError::Unavailable("efbd is stopping".into()))
    }
}

#[tonic::async_trait]
impl Backend for Gate {
    fn schema(&self) -> Arc<Schema> {
        self.schema.clone()
    }

    async fn snapshot(&self) -> Result<Arc<Snapshot>, BackendError> {
        self.open()?.snapshot().await
    }

    fn interfaces(&self) -> Option<Arc<dyn efb_openconfig::Source>> {
        self.open().ok()?.interfaces()
    }

    fn changes(&self) -> broadcast::Receiver<Arc<Snapshot>> {
        match self.open() {
            Ok(backend) => backend.changes(),
            // A channel without sender: the subscriber sees it closed.
            Err(_) => broadcast::channel(1).1,
        }
    }

    async fn with_counters(
        &self,
        snapshot: Arc<Snapshot>,
        patterns: &[Pattern],
    ) -> Result<Arc<Snapshot>, BackendError> {
        self.open()?.with_counters(snapshot, patterns).await
    }

    async fn commit(
        &self,
        user: &str,
        edits: Vec<Edit>,
        confirm: Option<Duration>,
    ) -> Result<Committed, BackendError> {
        self.open()?.commit(user, edits, confirm).await
    }

    async fn confirm(&self) -> Result<Option<u64>, BackendError> {
        self.open()?.confirm().await
    }

    async fn cancel(&self) -> Result<Option<u64>, BackendError> {
        self.open()?.cancel().await
    }

    async fn pending(&self) -> Result<Option<Pending>, BackendError> {
        self.open()?.pending().await
    }

    async fn set_rollback_duration(&self, wait: Duration) -> Result<Option<Pending>, BackendError> {
        self.open()?.set_rollback_duration(wait).await
    }
}
