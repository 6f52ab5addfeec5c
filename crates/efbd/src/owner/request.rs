//! Everything the doors (the management API, gNMI, the metrics, the chip's watchers) may ask
//! of the owner: one closed [`Request`], each variant carrying its arguments and where its
//! answer goes, executed by [`OwnerState::handle`], the one match. No code crosses the
//! owner's boundary, only values: what the owner can be asked to do is read here.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use efb_balancing::{BalancingError, BypassMode, Session, UnitMoves};
use efb_datastore::{
    CommitInfo, CommitOutcome, CommitRequest, DatastoreError, EditOutcome, Holder, LoadMode,
    LoadOutcome, Opener, SessionId, SessionInfo, Written,
};
use efb_northbound::published::{Pending, Snapshot, pending_message};
use efb_yang::{Change, DataTree};
use tokio::sync::oneshot;

use super::live::{BypassError, SessionRoute};
use super::{Candidate, OwnerState, Status};
use crate::chip::liveness::Verdicts;
use crate::record::events::Origin;
use crate::state::StateInputs;

/// Where the owner sends a request's answer. A client that went away before it came is
/// not an error: the answer is dropped.
pub type Answer<T> = oneshot::Sender<T>;

type Done<T> = Answer<Result<T, DatastoreError>>;

/// What the owner can be asked.
pub enum Request {
    /// A management API request: idle sessions are closed first, then `then` is handled
    /// in the caller's session if it names one (anyone else's is, to the caller, a session
    /// that does not exist). Both in one turn of the owner.
    Client {
        client: Client,
        entered: Answer<Entered>,
        then: Box<Request>,
    },
    Status(Answer<Status>),
    OpenSession(Opener, Done<SessionId>),
    /// Closes a session, whoever holds it: what it was, if it was open.
    CloseSession(SessionId, Answer<Option<SessionInfo>>),
    EditLines(SessionId, String, Done<EditOutcome>),
    /// `load` of set lines: how many lines were applied.
    LoadLines(SessionId, LoadMode, String, Done<usize>),
    LoadJson(SessionId, LoadMode, String, Done<LoadOutcome>),
    Discard(SessionId, Done<()>),
    /// The session's candidate becomes the configuration of that many commits ago.
    Rollback(SessionId, usize, Done<()>),
    /// What `show | compare` compares: what the candidate started from (or, with the
    /// first number, that commit of history) and the candidate (or, with the second,
    /// that commit of history).
    Compared(
        SessionId,
        Option<usize>,
        Option<usize>,
        Done<(Written, Written)>,
    ),
    /// A session's candidate as written (with what it keeps inactive).
    Candidate(SessionId, Done<Written>),
    /// Running as written.
    Running(Answer<Written>),
    /// What the box boots with, if anything was saved.
    Startup(Done<Option<DataTree>>),
    /// A commit or a check, through the owner's one funnel.
    Commit(Box<Commit>, Answer<Result<Committed, CommitRefused>>),
    /// Confirms the waiting `commit confirmed`: the commit it confirmed.
    Confirm(Done<Option<u64>>),
    /// Rolls the waiting `commit confirmed` back now (gNMI's cancel): the commit undone.
    Cancel(Done<Option<u64>>),
    /// The waiting `commit confirmed`, if any.
    Pending(Answer<Option<Pending>>),
    /// The waiting `commit confirmed` now waits this long from now.
    ConfirmTimeout(Duration, Done<Option<Pending>>),
    /// Running becomes the startup configuration.
    Save(Done<()>),
    History(Answer<Vec<CommitInfo>>),
    /// What the commit that many commits ago changed.
    CommitChanges(usize, Done<Vec<Change>>),
    /// The bypass mode of one unit, or of every unit (none), programmed to the chip.
    SetBypass(Option<String>, BypassMode, Answer<Result<(), BypassError>>),
    /// Where a session goes, with today's liveness.
    LookupSession(Session, Answer<Result<SessionRoute, BalancingError>>),
    /// What the operational tree is built from now (read off the owner's thread).
    StateInputs(Answer<Box<StateInputs>>),
    /// The last snapshot published to gNMI.
    Snapshot(Answer<Arc<Snapshot>>),
    /// The chip's port states: links that went down or up are told. No answer.
    PortsChanged(BTreeMap<u32, bool>),
    /// Pair liveness changes, applied in the order they came. No answer.
    LivenessChanged(Verdicts),
    /// efbd stops: what was asked before is handled, then the owner stops, whatever
    /// handles a client's connection still holds (they are answered [`super::OwnerGone`]).
    Stop,
}

/// Who asks, for [`Request::Client`].
pub struct Client {
    /// The session the request names and who must hold it.
    pub session: Option<(SessionId, Holder)>,
    /// The request's span: what the owner logs while serving it says which request.
    pub span: tracing::Span,
}

/// How a [`Request::Client`] began: the sessions closed for being idle, and whether the
/// caller's session let it in (if it did not, the request was not handled).
pub struct Entered {
    pub expired: Vec<SessionInfo>,
    pub result: Result<(), DatastoreError>,
}

/// A commit as asked.
pub struct Commit {
    pub origin: Origin,
    pub candidate: Candidate,
    pub request: CommitRequest,
}

/// A commit's outcome, with what the shell's reply tells beside it.
pub struct Committed {
    pub outcome: CommitOutcome,
    /// What it does to the sessions flowing now (a session's commit only).
    pub moves: Vec<UnitMoves>,
    /// The balancing hashes before and after (a session's commit only).
    pub hashes: (String, String),
}

/// Why a commit was refused; nothing changed.
#[derive(Debug, thiserror::Error)]
pub enum CommitRefused {
    #[error(transparent)]
    Datastore(#[from] DatastoreError),
    /// gNMI allows one waiting `commit confirmed` at a time, and a plain commit must not
    /// confirm it as a side effect (the shell's Junos-like rule).
    #[error("{}", pending_message(.0))]
    ConfirmWaiting(Pending),
}

fn answer<T>(to: Answer<T>, value: T) {
    // The asker may have gone (its client disconnected): nothing to do then.
    let _ = to.send(value);
}

impl OwnerState {
    /// Does what `request` asks and sends the answer.
    pub(super) fn handle(&mut self, request: Request) {
        let ds = &mut self.datastore;
        match request {
            Request::Client {
                client,
                entered,
                then,
            } => self.handle_client(client, entered, *then),
            Request::Status(to) => answer(to, self.status()),
            Request::OpenSession(opener, to) => answer(to, ds.open_client_session(&opener)),
            Request::CloseSession(session, to) => answer(to, ds.close_session(session)),
            Request::EditLines(session, lines, to) => answer(to, ds.edit_lines(session, &lines)),
            Request::LoadLines(session, mode, text, to) => {
                answer(to, ds.load_lines(session, mode, &text))
            }
            Request::LoadJson(session, mode, text, to) => {
                answer(to, ds.load_json(session, mode, &text))
            }
            Request::Discard(session, to) => answer(to, ds.discard(session)),
            Request::Rollback(session, index, to) => answer(to, ds.rollback(session, index)),
            Request::Compared(session, rollback, compared, to) => {
                answer(to, ds.compared(session, rollback, compared))
            }
            Request::Candidate(session, to) => answer(to, self.candidate_written(session)),
            Request::Running(to) => answer(to, self.running_written()),
            Request::Startup(to) => answer(to, ds.startup()),
            Request::Commit(commit, to) => answer(to, self.commit(*commit)),
            Request::Confirm(to) => answer(to, ds.confirm()),
            Request::Cancel(to) => answer(to, self.cancel_pending_confirm()),
            Request::Pending(to) => answer(to, self.pending_confirm()),
            Request::ConfirmTimeout(wait, to) => answer(to, self.set_confirm_timeout(wait)),
            Request::Save(to) => answer(to, ds.save()),
            Request::History(to) => answer(to, ds.history()),
            Request::CommitChanges(index, to) => answer(to, ds.commit_changes(index)),
            Request::SetBypass(unit, mode, to) => {
                answer(to, self.set_bypass(unit.as_deref(), mode))
            }
            Request::LookupSession(session, to) => answer(to, self.lookup(&session)),
            Request::StateInputs(to) => answer(to, Box::new(self.state_inputs())),
            Request::Snapshot(to) => answer(to, self.latest.clone()),
            Request::PortsChanged(up) => self.ports_changed(&up),
            Request::LivenessChanged(verdicts) => self.liveness_changed(verdicts),
            Request::Stop => self.stopping = true,
        }
    }

    fn handle_client(&mut self, client: Client, entered: Answer<Entered>, then: Request) {
        let _entered = client.span.enter();
        let expired = self.datastore.expire_idle_sessions();
        let result = match &client.session {
            Some((session, holder)) => self.datastore.enter_session(*session, holder),
            None => Ok(()),
        };
        let admitted = result.is_ok();
        answer(entered, Entered { expired, result });
        if admitted {
            self.handle(then);
        }
    }

    /// A commit or a check through the funnel; a session's is told with its moves and
    /// hashes, and gNMI's is refused while a `commit confirmed` waits.
    fn commit(&mut self, commit: Commit) -> Result<Committed, CommitRefused> {
        if commit.origin == Origin::Gnmi
            && let Some(pending) = self.pending_confirm()
        {
            return Err(CommitRefused::ConfirmWaiting(pending));
        }
        let told = matches!(commit.candidate, Candidate::Session(_));
        let before = if told {
            self.running_hash()
        } else {
            String::new()
        };
        let outcome = self.client_commit(commit.origin, commit.candidate, commit.request)?;
        let (moves, hashes) = if told {
            let moves = self.bucket_moves(&outcome);
            (moves, self.config_hashes(before, &outcome))
        } else {
            Default::default()
        };
        Ok(Committed {
            outcome,
            moves,
            hashes,
        })
    }
}
