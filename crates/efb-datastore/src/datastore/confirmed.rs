//! `commit confirmed`: the pending confirmation, its deadline, and the automatic rollback
//! when nobody confirms in time.

use super::*;

impl Datastore {
    /// Confirms a pending `commit confirmed`; returns the commit it confirmed.
    pub fn confirm(&mut self) -> Result<Option<u64>, DatastoreError> {
        let Some(pending) = self.pending.take() else {
            return Ok(None);
        };
        self.store.set_pending(None)?;
        self.reload_history()?;
        info!(id = pending.commit_id, "commit confirmed");
        Ok(Some(pending.commit_id))
    }

    /// When a pending `commit confirmed` must be confirmed by.
    pub fn pending_confirm_deadline(&self) -> Option<SystemTime> {
        self.pending
            .as_ref()
            .map(|p| UNIX_EPOCH + Duration::from_millis(p.deadline_ms))
    }

    /// The pending `commit confirmed` now waits `timeout` from now (gNMI's
    /// set_rollback_duration); returns its commit, or None when none waits.
    pub fn set_confirm_timeout(
        &mut self,
        timeout: Duration,
    ) -> Result<Option<u64>, DatastoreError> {
        let Some(mut next) = self.pending.clone() else {
            return Ok(None);
        };
        next.deadline_ms = millis(SystemTime::now() + timeout);
        self.store.set_pending(Some(&next))?;
        info!(
            id = next.commit_id,
            seconds = timeout.as_secs(),
            "commit confirmed: new deadline"
        );
        let id = next.commit_id;
        self.pending = Some(next);
        Ok(Some(id))
    }

    /// Rolls back a `commit confirmed` whose time is up at `now`. Called by the owner's
    /// timer, and at open for deadlines that passed while nothing was running.
    pub fn expire_pending_confirm(
        &mut self,
        now: SystemTime,
    ) -> Result<Option<CommitOutcome>, DatastoreError> {
        match &self.pending {
            Some(pending) if millis(now) >= pending.deadline_ms => {
                let id = pending.commit_id;
                warn!(
                    id,
                    "commit confirmed was not confirmed in time: rolling back"
                );
                self.roll_back_pending(&format!(
                    "rollback: commit confirmed {id} was not confirmed in time"
                ))
                .map(Some)
            }
            _ => Ok(None),
        }
    }

    /// Rolls back a pending `commit confirmed` now (gNMI's cancel).
    pub fn cancel_pending_confirm(&mut self) -> Result<Option<CommitOutcome>, DatastoreError> {
        let Some(id) = self.pending.as_ref().map(|p| p.commit_id) else {
            return Ok(None);
        };
        info!(id, "commit confirmed cancelled: rolling back");
        self.roll_back_pending(&format!("rollback: commit confirmed {id} cancelled"))
            .map(Some)
    }

    /// Goes back to before the first unconfirmed commit, as a commit of its own.
    fn roll_back_pending(&mut self, comment: &str) -> Result<CommitOutcome, DatastoreError> {
        let Some(pending) = self.pending.clone() else {
            return Err(DatastoreError::NotFound(
                "no commit confirmed is pending".into(),
            ));
        };
        let unconfirmed = (self.running.commit_id + 1).saturating_sub(pending.since_commit_id);
        let (previous, inactive) = self.written_before(unconfirmed as usize)?;
        let session = self.open_session("system");
        self.load_tree(session, previous)?;
        self.session_mut(session)?.inactive = inactive;
        self.pending = None;
        let outcome = self.commit_as(
            session,
            CommitKind::ConfirmTimeout,
            CommitRequest {
                comment: Some(comment.to_string()),
                ..CommitRequest::default()
            },
        );
        self.close_session(session);
        if outcome.is_err() {
            self.pending = Some(pending);
        }
        outcome
    }
}
