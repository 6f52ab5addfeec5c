//! The sessions: each a private candidate on the running configuration it started from,
//! opened within limits and closed when idle for too long.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use efb_model::validation::Validated;
use efb_yang::DataTree;
use tracing::{info, warn};

use crate::error::DatastoreError;
use crate::limits::check_user;
use crate::types::Running;

/// Expired sessions remembered, so that their clients are told why their session is gone.
const EXPIRED_REMEMBERED: usize = 1024;

/// A client's handle on its candidate.
pub type SessionId = u64;

/// How many client sessions may be open, and how long one may stay idle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionLimits {
    /// Sessions [`crate::Datastore::open_client_session`] opens at most at one time.
    pub max_sessions: usize,
    /// A session without a request for longer is closed, its candidate dropped; `None`:
    /// never.
    pub idle_timeout: Option<Duration>,
}

impl Default for SessionLimits {
    /// No limit: the library's callers choose theirs (efbd from its settings).
    fn default() -> SessionLimits {
        SessionLimits {
            max_sessions: usize::MAX,
            idle_timeout: None,
        }
    }
}

/// An open session as others see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionInfo {
    pub id: SessionId,
    pub user: String,
    /// Since its last request.
    pub idle: Duration,
    /// Its candidate differs from the running configuration it started from.
    pub uncommitted: bool,
}

pub(crate) struct Session {
    pub(crate) user: String,
    /// Running when the candidate was started: the base its edits apply to.
    pub(crate) base: DataTree,
    pub(crate) base_id: u64,
    pub(crate) candidate: DataTree,
    /// The candidate as a complete load validated it whole (libyang and the rules), kept
    /// so that a commit of it unchanged does not validate 100 000 flows again.
    pub(crate) loaded: Option<(DataTree, Validated)>,
    /// The last request that named it.
    last_used: Instant,
}

impl Session {
    fn new(user: &str, running: &Running) -> Session {
        Session {
            user: user.to_string(),
            base: running.tree.clone(),
            base_id: running.commit_id,
            candidate: running.tree.clone(),
            loaded: None,
            last_used: Instant::now(),
        }
    }

    /// The candidate becomes `candidate`, its edits counted from `running` from now on
    /// (a discard, a rollback, a rebase, after a commit).
    pub(crate) fn reset_to(&mut self, running: &Running, candidate: DataTree) {
        self.base = running.tree.clone();
        self.base_id = running.commit_id;
        self.candidate = candidate;
        self.loaded = None;
    }

    pub(crate) fn has_changes(&self) -> bool {
        self.base != self.candidate
    }
}

/// The open sessions, and the ones closed for being idle (so their clients learn why).
#[derive(Default)]
pub(crate) struct Sessions {
    open: BTreeMap<SessionId, Session>,
    next: SessionId,
    limits: SessionLimits,
    /// Sessions closed for being idle, and how long they had been.
    expired: BTreeMap<SessionId, Duration>,
}

impl Sessions {
    /// A new session whose candidate is a copy of `running`.
    pub(crate) fn open(&mut self, user: &str, running: &Running) -> SessionId {
        self.next += 1;
        self.open.insert(self.next, Session::new(user, running));
        self.next
    }

    /// A client's session: its user name checked, idle sessions closed first, refused
    /// when [`SessionLimits::max_sessions`] are open.
    pub(crate) fn open_client(
        &mut self,
        user: &str,
        running: &Running,
    ) -> Result<SessionId, DatastoreError> {
        check_user(user).inspect_err(|e| warn!(%e, "session refused"))?;
        self.expire_idle();
        let max = self.limits.max_sessions;
        if self.open.len() >= max {
            warn!(open = self.open.len(), max, user = %user.escape_debug(), "session refused: too many sessions");
            return Err(DatastoreError::TooManySessions { max });
        }
        Ok(self.open(user, running))
    }

    pub(crate) fn set_limits(&mut self, limits: SessionLimits) {
        self.limits = limits;
    }

    pub(crate) fn touch(&mut self, session: SessionId) {
        if let Some(s) = self.open.get_mut(&session) {
            s.last_used = Instant::now();
        }
    }

    /// Closes the sessions idle for longer than [`SessionLimits::idle_timeout`]; returns
    /// how many.
    pub(crate) fn expire_idle(&mut self) -> usize {
        let Some(timeout) = self.limits.idle_timeout else {
            return 0;
        };
        let idle: Vec<(SessionId, Duration)> = self
            .open
            .iter()
            .map(|(id, s)| (*id, s.last_used.elapsed()))
            .filter(|(_, idle)| *idle > timeout)
            .collect();
        for (id, for_how_long) in &idle {
            if let Some(s) = self.open.remove(id) {
                info!(session = id, user = %s.user.escape_debug(), idle_s = for_how_long.as_secs(), uncommitted_changes = s.has_changes(), "idle session expired");
            }
            self.expired.insert(*id, *for_how_long);
        }
        while self.expired.len() > EXPIRED_REMEMBERED {
            self.expired.pop_first();
        }
        idle.len()
    }

    pub(crate) fn close(&mut self, session: SessionId) {
        self.open.remove(&session);
    }

    /// Who has a session open, for `show system users`.
    pub(crate) fn list(&self) -> Vec<SessionInfo> {
        self.open
            .iter()
            .map(|(id, s)| SessionInfo {
                id: *id,
                user: s.user.clone(),
                idle: s.last_used.elapsed(),
                uncommitted: s.has_changes(),
            })
            .collect()
    }

    pub(crate) fn len(&self) -> usize {
        self.open.len()
    }

    pub(crate) fn get(&self, session: SessionId) -> Result<&Session, DatastoreError> {
        self.open.get(&session).ok_or_else(|| self.gone(session))
    }

    pub(crate) fn get_mut(&mut self, session: SessionId) -> Result<&mut Session, DatastoreError> {
        let gone = self.gone(session);
        self.open.get_mut(&session).ok_or(gone)
    }

    /// After a commit: the committer's candidate is the new running, and so is that of
    /// every session without edits of its own (they simply follow running).
    pub(crate) fn after_commit(&mut self, committer: SessionId, running: &Running) {
        for (id, s) in &mut self.open {
            let follows = !s.has_changes() && s.base_id != running.commit_id;
            if *id == committer || follows {
                s.reset_to(running, running.tree.clone());
            }
        }
    }

    /// Why a session is not there: expired, or never opened (or closed).
    fn gone(&self, session: SessionId) -> DatastoreError {
        match self.expired.get(&session) {
            Some(idle) => DatastoreError::SessionExpired {
                session,
                idle: Duration::from_secs(idle.as_secs()),
            },
            None => DatastoreError::UnknownSession(session),
        }
    }
}
