//! The sessions: each a private candidate on the running configuration it started from,
//! held by whoever opened it, opened within limits and closed when idle for too long.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use efb_model::validation::Validated;
use efb_yang::DataTree;
use efb_yang::inactive::Inactive;
use tracing::{info, warn};

use crate::error::{DatastoreError, SessionLimit};
use crate::limits::check_user;
use crate::types::Running;

/// Expired sessions remembered, so that their clients are told why their session is gone.
const EXPIRED_REMEMBERED: usize = 1024;

/// A client's handle on its candidate.
pub type SessionId = u64;

/// Who holds a session: only requests of the same holder reach it (a Unix account by its
/// uid, a user of the users file by name; the daemon's own short sessions are held by
/// [`Holder::daemon`]). Anyone else is told the session does not exist.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Holder(String);

impl Holder {
    pub fn new(key: impl Into<String>) -> Holder {
        Holder(key.into())
    }

    /// efbd itself: a boot, a gNMI Set, a confirm timeout's rollback.
    pub fn daemon() -> Holder {
        Holder("efbd".into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Who opens a client session, and what the limits need to know of them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Opener {
    /// The name its commits record ("ada", or "root as setup").
    pub user: String,
    pub holder: Holder,
    /// Where it came from, as people read it ("unix socket, uid 1001, pid 4242").
    pub from: String,
    /// Admins may use the sessions kept for them.
    pub admin: bool,
}

/// How many client sessions may be open, and how long one may stay idle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionLimits {
    /// Sessions [`crate::Datastore::open_client_session`] opens at most at one time.
    pub max_sessions: usize,
    /// Of `max_sessions`, how many only admins may open: a flood of another role's
    /// sessions leaves admins room to log in and clean up.
    pub kept_for_admins: usize,
    /// Sessions one holder may have open at one time.
    pub max_per_holder: usize,
    /// A session without a request for longer is closed, its candidate dropped; `None`:
    /// never.
    pub idle_timeout: Option<Duration>,
}

impl Default for SessionLimits {
    /// No limit: the library's callers choose theirs (efbd from its settings).
    fn default() -> SessionLimits {
        SessionLimits {
            max_sessions: usize::MAX,
            kept_for_admins: 0,
            max_per_holder: usize::MAX,
            idle_timeout: None,
        }
    }
}

/// An open session as others see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionInfo {
    pub id: SessionId,
    pub user: String,
    pub holder: Holder,
    pub from: String,
    /// Since it was opened.
    pub age: Duration,
    /// Since its last request.
    pub idle: Duration,
    /// Its candidate differs from the running configuration it started from.
    pub uncommitted: bool,
}

pub(crate) struct Session {
    pub(crate) user: String,
    holder: Holder,
    from: String,
    /// Running when the candidate was started: the base its edits apply to.
    pub(crate) base: DataTree,
    pub(crate) base_id: u64,
    pub(crate) candidate: DataTree,
    /// What the candidate keeps but does not apply, and what its base kept so.
    pub(crate) inactive: Inactive,
    pub(crate) base_inactive: Inactive,
    /// The candidate as a complete load validated it whole (libyang and the rules), kept
    /// so that a commit of it unchanged does not validate 100 000 flows again.
    pub(crate) loaded: Option<(DataTree, Validated)>,
    opened: Instant,
    /// The last request that named it.
    last_used: Instant,
}

impl Session {
    fn new(user: &str, holder: Holder, from: &str, running: &Running) -> Session {
        let now = Instant::now();
        Session {
            user: user.to_string(),
            holder,
            from: from.to_string(),
            base: running.tree.clone(),
            base_id: running.commit_id,
            candidate: running.tree.clone(),
            inactive: running.inactive.clone(),
            base_inactive: running.inactive.clone(),
            loaded: None,
            opened: now,
            last_used: now,
        }
    }

    /// The candidate becomes `candidate`, its edits counted from `running` from now on
    /// (a discard, a rollback, a rebase, after a commit).
    pub(crate) fn reset_to(&mut self, running: &Running, candidate: DataTree, inactive: Inactive) {
        self.base = running.tree.clone();
        self.base_inactive = running.inactive.clone();
        self.base_id = running.commit_id;
        self.candidate = candidate;
        self.inactive = inactive;
        self.loaded = None;
    }

    pub(crate) fn has_changes(&self) -> bool {
        self.base != self.candidate || self.base_inactive != self.inactive
    }

    fn info(&self, id: SessionId) -> SessionInfo {
        SessionInfo {
            id,
            user: self.user.clone(),
            holder: self.holder.clone(),
            from: self.from.clone(),
            age: self.opened.elapsed(),
            idle: self.last_used.elapsed(),
            uncommitted: self.has_changes(),
        }
    }
}

/// The open sessions, and the ones closed for being idle (so their clients learn why).
#[derive(Default)]
pub(crate) struct Sessions {
    open: BTreeMap<SessionId, Session>,
    next: SessionId,
    limits: SessionLimits,
    /// Sessions closed for being idle: their holder, and how long they had been idle.
    expired: BTreeMap<SessionId, (Holder, Duration)>,
}

impl Sessions {
    /// A new session of efbd's own whose candidate is a copy of `running`.
    pub(crate) fn open(&mut self, user: &str, running: &Running) -> SessionId {
        self.insert(Session::new(user, Holder::daemon(), "efbd", running))
    }

    fn insert(&mut self, session: Session) -> SessionId {
        self.next += 1;
        self.open.insert(self.next, session);
        self.next
    }

    /// A client's session: its user name checked, idle sessions closed first, refused
    /// beyond the [`SessionLimits`].
    pub(crate) fn open_client(
        &mut self,
        opener: &Opener,
        running: &Running,
    ) -> Result<SessionId, DatastoreError> {
        check_user(&opener.user).inspect_err(|e| warn!(%e, "session refused"))?;
        self.expire_idle();
        if let Some(limit) = self.limit_reached(opener) {
            warn!(open = self.open.len(), user = %opener.user.escape_debug(), from = %opener.from.escape_debug(), %limit, "session refused");
            return Err(DatastoreError::TooManySessions(limit));
        }
        let session = Session::new(&opener.user, opener.holder.clone(), &opener.from, running);
        Ok(self.insert(session))
    }

    /// The limit a new session of `opener` would pass, if any.
    fn limit_reached(&self, opener: &Opener) -> Option<SessionLimit> {
        let limits = &self.limits;
        let open = self.open.len();
        if open >= limits.max_sessions {
            return Some(SessionLimit::All {
                max: limits.max_sessions,
            });
        }
        let for_others = limits.max_sessions.saturating_sub(limits.kept_for_admins);
        if !opener.admin && open >= for_others {
            return Some(SessionLimit::KeptForAdmins {
                open,
                kept: limits.kept_for_admins,
            });
        }
        let held = self
            .open
            .values()
            .filter(|s| s.holder == opener.holder)
            .count();
        (held >= limits.max_per_holder).then_some(SessionLimit::PerAccount {
            max: limits.max_per_holder,
        })
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
    /// them.
    pub(crate) fn expire_idle(&mut self) -> Vec<SessionInfo> {
        let Some(timeout) = self.limits.idle_timeout else {
            return Vec::new();
        };
        let idle: Vec<SessionId> = self
            .open
            .iter()
            .filter(|(_, s)| s.last_used.elapsed() > timeout)
            .map(|(id, _)| *id)
            .collect();
        let mut closed = Vec::new();
        for id in idle {
            if let Some(s) = self.open.remove(&id) {
                let info = s.info(id);
                info!(session = id, user = %s.user.escape_debug(), idle_s = info.idle.as_secs(), uncommitted_changes = info.uncommitted, "idle session expired");
                self.expired.insert(id, (s.holder, info.idle));
                closed.push(info);
            }
        }
        while self.expired.len() > EXPIRED_REMEMBERED {
            self.expired.pop_first();
        }
        closed
    }

    /// Closes a session, whoever holds it; what it was, if it was open.
    pub(crate) fn close(&mut self, session: SessionId) -> Option<SessionInfo> {
        self.open.remove(&session).map(|s| s.info(session))
    }

    /// Who has a session open, for `show system sessions`.
    pub(crate) fn list(&self) -> Vec<SessionInfo> {
        self.open.iter().map(|(id, s)| s.info(*id)).collect()
    }

    pub(crate) fn len(&self) -> usize {
        self.open.len()
    }

    pub(crate) fn get(&self, session: SessionId) -> Result<&Session, DatastoreError> {
        self.open
            .get(&session)
            .ok_or_else(|| self.gone(session, None))
    }

    pub(crate) fn get_mut(&mut self, session: SessionId) -> Result<&mut Session, DatastoreError> {
        let gone = self.gone(session, None);
        self.open.get_mut(&session).ok_or(gone)
    }

    /// Checks that `holder` holds `session`: a session held by someone else is, to them,
    /// a session that does not exist (the same error, so ids cannot be probed).
    pub(crate) fn held_by(
        &self,
        session: SessionId,
        holder: &Holder,
    ) -> Result<(), DatastoreError> {
        match self.open.get(&session) {
            Some(s) if &s.holder == holder => Ok(()),
            Some(_) => Err(DatastoreError::UnknownSession(session)),
            None => Err(self.gone(session, Some(holder))),
        }
    }

    /// After a commit: the committer's candidate is the new running, and so is that of
    /// every session without edits of its own (they simply follow running).
    pub(crate) fn after_commit(&mut self, committer: SessionId, running: &Running) {
        for (id, s) in &mut self.open {
            let follows = !s.has_changes() && s.base_id != running.commit_id;
            if *id == committer || follows {
                s.reset_to(running, running.tree.clone(), running.inactive.clone());
            }
        }
    }

    /// Why a session is not there: expired (told only to its holder, when one is asked
    /// for), or never opened (or closed).
    fn gone(&self, session: SessionId, asking: Option<&Holder>) -> DatastoreError {
        match self.expired.get(&session) {
            Some((holder, idle)) if asking.is_none_or(|a| a == holder) => {
                DatastoreError::SessionExpired {
                    session,
                    idle: Duration::from_secs(idle.as_secs()),
                }
            }
            _ => DatastoreError::UnknownSession(session),
        }
    }
}
