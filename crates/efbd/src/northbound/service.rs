//! The management API: a thin translation of gRPC requests into jobs for the configuration
//! owner. One tracing span per request. Every request is checked against the caller's role
//! ([`efb_northbound::access::may`], the one decision gNMI shares); refusals and changes go to
//! the audit (which files every refusal as an access).
//!
//! Here is what every request goes through: the caller's role, the audit, a job on the
//! owner. The requests are in `requests` (the `Management` trait, one method each), with
//! what some of them need beside: `sessions`, `reads` (datastores and the operational
//! tree), `commit`, `statistics`, `calls` (the model's operations), `logs` (the audit's
//! records and the events) and `accepted` (the enum values each request accepts).

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use efb_datastore::{DatastoreError, SessionId};
use efb_mgmt_proto::v1::*;
use efb_northbound::access;
use efb_northbound::audit::Audit;
use efb_northbound::request::Request as Asked;
use efb_yang::Schema;
use tonic::{Request, Response, Status};
use tracing::{Instrument, info_span};

use crate::chip::CounterLists;
use crate::northbound::callers::Callers;
use crate::northbound::errors::{bounded, status};
use crate::northbound::held::HeldSessions;
use crate::owner::{Answer, Client, Owner, Request as OwnerRequest};
use crate::record::audit::AuditLog;
use crate::record::events::Events;
use efb_northbound::caller::Caller;

mod accepted;
mod calls;
mod commit;
mod logs;
mod reads;
mod requests;
mod sessions;
mod statistics;

pub struct Service {
    owner: Owner,
    schema: Arc<Schema>,
    counter_lists: CounterLists,
    datastore_dir: String,
    callers: Arc<Callers>,
    audit: Audit,
    audit_log: Arc<AuditLog>,
    events: Events,
    /// The streams that hold the client sessions.
    held: HeldSessions,
    /// Turns true when efbd stops; ends the event streams.
    stopping: Option<tokio::sync::watch::Receiver<bool>>,
}

impl Service {
    pub fn new(
        owner: Owner,
        schema: Arc<Schema>,
        counter_lists: CounterLists,
        datastore_dir: String,
        callers: Arc<Callers>,
        audit_log: Arc<AuditLog>,
        events: Events,
    ) -> Service {
        Service {
            owner,
            schema,
            counter_lists,
            datastore_dir,
            callers,
            audit: Audit::new(audit_log.clone()),
            audit_log,
            events,
            held: HeldSessions::default(),
            stopping: None,
        }
    }

    /// Streams (`WatchEvents`) end when `stopping` turns true: a shell left open must not
    /// keep efbd from stopping (graceful shutdown waits for every open request).
    pub fn ending_streams_on(mut self, stopping: tokio::sync::watch::Receiver<bool>) -> Service {
        self.stopping = Some(stopping);
        self
    }

    /// The caller of `request`, if its role may do what it `asked`; a refusal is audited.
    /// The guard identified the caller before the request was read (identified here when
    /// the service runs without it).
    async fn allow<T>(&self, request: &Request<T>, asked: &Asked) -> Result<Caller, Status> {
        let caller = match request.extensions().get::<Caller>() {
            Some(caller) => caller.clone(),
            None => self.callers.identify(request).await.map_err(bounded)?,
        };
        self.check(&caller, asked)?;
        Ok(caller)
    }

    /// Refuses (and audits) what `caller`'s role may not do.
    fn check(&self, caller: &Caller, asked: &Asked) -> Result<(), Status> {
        let Err(denied) = access::may(caller.role, asked.operation()) else {
            return Ok(());
        };
        let message = denied.message(&caller.name) + &self.callers.hint(caller);
        let refused = Status::permission_denied(message);
        self.audit.request(caller, asked, Err(&refused));
        Err(refused)
    }

    /// Audits a change: accepted with `done` of its result, or refused.
    fn audited<R>(
        &self,
        caller: &Caller,
        asked: &Asked,
        result: Result<R, Status>,
        done: impl FnOnce(&R) -> String,
    ) -> Result<R, Status> {
        self.audit.request(caller, asked, result.as_ref().map(done));
        result
    }

    /// Asks the owner, inside a span named after the request, in `session` when it names
    /// one (0: none), which must be `caller`'s own: anyone else's is, to them, a session
    /// that does not exist (NOT_FOUND). Idle sessions are closed first.
    async fn ask<T: Send + 'static>(
        &self,
        method: &'static str,
        (caller, session): Reader<'_>,
        asked: impl FnOnce(Answer<T>) -> OwnerRequest,
    ) -> Result<T, Status> {
        let span = info_span!("request", method, session);
        let client = Client {
            session: (session != 0).then(|| (session, caller.holder.clone())),
            span: span.clone(),
        };
        let (expired, result) = self.owner.ask_for(client, asked).instrument(span).await?;
        for info in expired {
            self.session_ended(&info, "closed: idle longer than the idle timeout");
        }
        result.map_err(status)
    }

    /// [`Service::ask`] for an answer the datastore may refuse.
    async fn ask_done<T: Send + 'static>(
        &self,
        method: &'static str,
        reader: Reader<'_>,
        asked: impl FnOnce(Answer<Result<T, DatastoreError>>) -> OwnerRequest,
    ) -> Result<T, Status> {
        self.ask(method, reader, asked).await.and_then(ds)
    }
}

/// Who asks, and the session the request names (0: none).
pub(super) type Reader<'a> = (&'a Caller, SessionId);

fn ok<T>(value: T) -> Result<Response<T>, Status> {
    Ok(Response::new(value))
}

fn unix_ms(time: Option<SystemTime>) -> u64 {
    time.and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis() as u64)
}

fn ds<T>(result: Result<T, DatastoreError>) -> Result<T, Status> {
    result.map_err(status)
}

fn problem(p: efb_yang::Problem) -> Problem {
    Problem {
        path: p.path,
        message: p.message,
    }
}
