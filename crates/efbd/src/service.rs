//! The management API: a thin translation of gRPC requests into jobs for the configuration
//! owner. One tracing span per request. Every request is checked against the caller's role
//! ([`efb_gnmi::access::may`], the one decision gNMI shares); refusals and changes go to
//! the audit.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use efb_balancing::config_hash;
use efb_datastore::{
    CommitRequest as DsCommit, DatastoreError, Holder, LoadMode, Opener, SessionId, SessionInfo,
};
use efb_gnmi::access::{self, Operation};
use efb_gnmi::audit::{self, Audit, Kind, Record};
use efb_mgmt_proto::v1::management_server::Management;
use efb_mgmt_proto::v1::*;
use efb_yang::json::{self, PrintOptions};
use efb_yang::validate::Scope;
use efb_yang::{DataPath, DataTree, NodeRef, Schema, setlines};
use tokio::sync::broadcast::error::RecvError;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};
use tracing::{Instrument, info_span};

use crate::audit::AuditLog;
use crate::baselines::{self, ClearError};
use crate::callers::{Caller, Callers};
use crate::chip::{CounterLists, CountersToRead};
use crate::errors::{bounded, status};
use crate::events::{self, Events, Recorded};
use crate::held::{Ending, HeldSessions, NoticeStream, stopped};
use crate::owner::{Owner, OwnerState};
use crate::rpcs;

/// Change lines a commit reply carries at most (the count is always exact).
const MAX_CHANGE_LINES: usize = 1000;

/// Audit records `show system audit` returns when the request does not say.
const DEFAULT_AUDIT_RECORDS: usize = 100;

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

    /// The caller of `request`, if its role may do `operation`; a refusal is audited with
    /// `what`. The guard identified the caller before the request was read (identified
    /// here when the service runs without it).
    async fn allow<T>(
        &self,
        request: &Request<T>,
        operation: Operation,
        what: impl FnOnce() -> String,
    ) -> Result<Caller, Status> {
        let caller = match request.extensions().get::<Caller>() {
            Some(caller) => caller.clone(),
            None => self.callers.identify(request).await.map_err(bounded)?,
        };
        self.check(&caller, operation, what)?;
        Ok(caller)
    }

    /// Refuses (and audits) what `caller`'s role may not do.
    fn check(
        &self,
        caller: &Caller,
        operation: Operation,
        what: impl FnOnce() -> String,
    ) -> Result<(), Status> {
        let Err(denied) = access::may(caller.role, operation) else {
            return Ok(());
        };
        let message = denied.message(&caller.name) + &self.callers.hint(caller);
        let refused = Status::permission_denied(message);
        self.record(caller, what(), Err(&refused), Kind::Access);
        Err(refused)
    }

    /// Audits a request of `caller`: what it asked, and how it ended.
    fn record(&self, caller: &Caller, what: String, result: Result<String, &Status>, kind: Kind) {
        self.audit.record(Record {
            time_ms: audit::now_ms(),
            user: caller.name.clone(),
            role: caller.role,
            from: caller.from.clone(),
            what,
            accepted: result.is_ok(),
            result: result.unwrap_or_else(audit::refusal),
            kind,
        });
    }

    /// Audits a change: accepted with `done` of its result, or refused.
    fn audited<R>(
        &self,
        caller: &Caller,
        what: String,
        result: Result<R, Status>,
        done: impl FnOnce(&R) -> String,
    ) -> Result<R, Status> {
        self.record(caller, what, result.as_ref().map(done), Kind::Change);
        result
    }

    /// Runs a datastore job on the owner, inside a span named after the request. Idle
    /// sessions are closed first. Its error, if any, is bounded in size.
    async fn run<R, F>(&self, method: &'static str, job: F) -> Result<R, Status>
    where
        R: Send + 'static,
        F: FnOnce(&mut OwnerState) -> Result<R, Status> + Send + 'static,
    {
        self.run_job(method, None, job).await
    }

    /// [`Service::run`] for a job on `session`, which must be `caller`'s own: anyone
    /// else's is, to them, a session that does not exist (NOT_FOUND).
    async fn run_in<R, F>(
        &self,
        caller: &Caller,
        method: &'static str,
        session: SessionId,
        job: F,
    ) -> Result<R, Status>
    where
        R: Send + 'static,
        F: FnOnce(&mut OwnerState) -> Result<R, Status> + Send + 'static,
    {
        self.run_job(method, Some((session, caller.holder.clone())), job)
            .await
    }

    async fn run_job<R, F>(
        &self,
        method: &'static str,
        entering: Option<(SessionId, Holder)>,
        job: F,
    ) -> Result<R, Status>
    where
        R: Send + 'static,
        F: FnOnce(&mut OwnerState) -> Result<R, Status> + Send + 'static,
    {
        let session = entering.as_ref().map_or(0, |(id, _)| *id);
        let span = info_span!("request", method, session);
        // On the owner's thread too: what the job logs (a commit's event) says which
        // request it served.
        let on_owner = span.clone();
        let job = move |s: &mut OwnerState| {
            let _entered = on_owner.enter();
            let expired = s.expire_idle_sessions();
            let result = match entering {
                Some((session, holder)) => {
                    ds(s.enter_session(session, &holder)).and_then(|()| job(s))
                }
                None => job(s),
            };
            (expired, result)
        };
        let (expired, result) = self.owner.call(job).instrument(span).await?;
        for info in expired {
            self.session_ended(&info, "closed: idle longer than the idle timeout");
        }
        result.map_err(bounded)
    }

    /// Audits a session efbd closed and tells its holder why.
    fn session_ended(&self, info: &SessionInfo, why: &str) {
        let why = format!("{why}{}", dropped(info));
        let role = self.held.end(info.id, Ending::Closed(why.clone()));
        self.audit.record(session_record(info, role, &why));
    }
}

/// A session closed (`why`: "closed: ..."), for the audit, with how long it was open.
fn session_record(info: &SessionInfo, role: Option<efb_gnmi::Role>, why: &str) -> Record {
    let age = humantime::format_duration(Duration::from_secs(info.age.as_secs()));
    Record {
        time_ms: audit::now_ms(),
        user: info.user.clone(),
        role,
        from: info.from.clone(),
        what: format!("session {} (open {age}) {why}", info.id),
        accepted: true,
        result: String::new(),
        kind: Kind::Access,
    }
}

/// What a closed session lost, said after why it closed.
fn dropped(info: &SessionInfo) -> &'static str {
    if info.uncommitted {
        "; its uncommitted changes were dropped"
    } else {
        ""
    }
}

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

impl Service {
    /// The operational tree with the counters `wanted` read from the chip, off the owner's
    /// thread (a read of 100 000 flow counters must not hold up commits).
    async fn operational(
        &self,
        reader: Reader<'_>,
        method: &'static str,
        wanted: CountersToRead,
    ) -> Result<DataTree, Status> {
        let inputs = self.read(reader, method, |s| Ok(s.state_inputs())).await?;
        let schema = self.schema.clone();
        tokio::task::spawn_blocking(move || inputs.tree(&schema, &wanted))
            .await
            .map_err(|e| Status::internal(format!("reading the counters: {e}")))
    }

    /// A datastore's tree; the operational one without counters.
    async fn tree(
        &self,
        reader: Reader<'_>,
        method: &'static str,
        which: Which,
    ) -> Result<DataTree, Status> {
        let session = reader.1;
        match which {
            Which::Operational => {
                self.operational(reader, method, CountersToRead::NOTHING)
                    .await
            }
            Which::Running => self.read(reader, method, |s| Ok(s.running_tree())).await,
            Which::Candidate => {
                self.read(reader, method, move |s| ds(s.candidate(session)))
                    .await
            }
            Which::Startup => self
                .read(reader, method, |s| ds(s.startup()))
                .await?
                .ok_or_else(|| {
                    Status::not_found("no startup configuration: nothing was saved yet")
                }),
        }
    }

    /// A read for `reader`: in its session when it names one (its own, or NOT_FOUND), which
    /// is then not idle any more.
    async fn read<R, F>(
        &self,
        reader: Reader<'_>,
        method: &'static str,
        job: F,
    ) -> Result<R, Status>
    where
        R: Send + 'static,
        F: FnOnce(&mut OwnerState) -> Result<R, Status> + Send + 'static,
    {
        let (caller, session) = reader;
        if session == 0 {
            self.run(method, job).await
        } else {
            self.run_in(caller, method, session, job).await
        }
    }
}

/// Who reads, and the session the request names (0: none).
type Reader<'a> = (&'a Caller, SessionId);

#[tonic::async_trait]
impl Management for Service {
    async fn hello(&self, request: Request<HelloRequest>) -> Result<Response<HelloReply>, Status> {
        self.allow(&request, Operation::Show, || "hello".into())
            .await?;
        let module = self.schema.module();
        ok(HelloReply {
            daemon_version: env!("CARGO_PKG_VERSION").to_string(),
            module_name: module.name.clone(),
            module_revision: module.revision.clone(),
            module_text: efb_yang::schema::MODULE_TEXT.to_string(),
        })
    }

    async fn status(&self, request: Request<Empty>) -> Result<Response<StatusReply>, Status> {
        let caller = self
            .allow(&request, Operation::Show, || "show system status".into())
            .await?;
        let datastore = self.datastore_dir.clone();
        let reply = self
            .run("Status", move |s| {
                let status = s.status();
                Ok(StatusReply {
                    daemon_version: env!("CARGO_PKG_VERSION").to_string(),
                    datastore,
                    uptime_seconds: status.uptime.as_secs(),
                    running_commit_id: status.running_commit_id,
                    confirm_deadline_unix_ms: unix_ms(status.confirm_deadline),
                    sessions: status.sessions as u32,
                    chip: status.chip,
                    manual_modes: status
                        .manual_modes
                        .into_iter()
                        .map(|(unit, mode)| UnitMode {
                            unit,
                            mode: mode.as_str().to_string(),
                        })
                        .collect(),
                    open_sessions: status
                        .open_sessions
                        .into_iter()
                        .map(|s| SessionSummary {
                            session: s.id,
                            yours: s.holder == caller.holder,
                            user: s.user,
                            idle_seconds: s.idle.as_secs(),
                            uncommitted: s.uncommitted,
                            from: s.from,
                            age_seconds: s.age.as_secs(),
                        })
                        .collect(),
                })
            })
            .await?;
        ok(reply)
    }

    type OpenSessionStream = NoticeStream;

    async fn open_session(
        &self,
        request: Request<OpenSessionRequest>,
    ) -> Result<Response<NoticeStream>, Status> {
        let asked = request.get_ref().user.clone();
        let caller = self
            .allow(&request, Operation::Show, || "open a session".into())
            .await?;
        let opener = Opener {
            user: self.recorded_user(&caller, &asked)?,
            holder: caller.holder.clone(),
            from: caller.from.clone(),
            admin: caller.is_admin(),
        };
        let session = self
            .run("OpenSession", move |s| ds(s.open_session(&opener)))
            .await?;
        let (owner, audit, role) = (self.owner.clone(), self.audit.clone(), caller.role);
        let close = move |why: String| async move {
            let closed = owner.call(move |s| s.close_session(session)).await;
            if let Ok(Some(info)) = closed {
                let why = format!("{why}{}", dropped(&info));
                audit.record(session_record(&info, role, &why));
            }
        };
        let callers = self.callers.clone();
        let revoked = async move {
            callers.until_refused(&caller, Operation::Show).await;
            format!("{} no longer has a role", caller.name)
        };
        ok(self
            .held
            .hold(session, role, self.stopping.clone(), revoked, close))
    }

    async fn close_session(&self, request: Request<SessionRef>) -> Result<Response<Empty>, Status> {
        let caller = self
            .allow(&request, Operation::Show, || "close a session".into())
            .await?;
        let session = request.into_inner().session;
        let closed = self
            .run_in(&caller, "CloseSession", session, move |s| {
                Ok(s.close_session(session))
            })
            .await?;
        self.held.end(session, Ending::Quietly);
        if let Some(info) = closed {
            self.audit
                .record(session_record(&info, caller.role, "closed by its client"));
        }
        ok(Empty {})
    }

    async fn logout(&self, request: Request<SessionRef>) -> Result<Response<Empty>, Status> {
        let session = request.get_ref().session;
        let what = format!("request system logout session {session}");
        let caller = self
            .allow(&request, Operation::Logout, || what.clone())
            .await?;
        let closed = self
            .run("Logout", move |s| {
                s.close_session(session)
                    .ok_or_else(|| status(DatastoreError::UnknownSession(session)))
            })
            .await;
        let closed = self.audited(&caller, what, closed, |info| {
            format!(
                "closed the session of {} ({}){}",
                info.user,
                info.from,
                dropped(info)
            )
        })?;
        let by = format!(
            "logged out by {} (request system logout session {session})",
            caller.name
        );
        self.held.end(
            session,
            Ending::LoggedOut(format!("{by}{}", dropped(&closed))),
        );
        ok(Empty {})
    }

    async fn edit_lines(
        &self,
        request: Request<EditLinesRequest>,
    ) -> Result<Response<EditReply>, Status> {
        let caller = self
            .allow(&request, Operation::Edit, || {
                format!("edit: {}", first_line(&request.get_ref().lines))
            })
            .await?;
        let EditLinesRequest { session, lines } = request.into_inner();
        let outcome = self
            .run_in(&caller, "EditLines", session, move |s| {
                ds(s.edit_lines(session, &lines))
            })
            .await?;
        ok(EditReply {
            broken: outcome.broken.into_iter().map(problem).collect(),
            ..lines_applied(outcome.applied)
        })
    }

    async fn load(&self, request: Request<LoadRequest>) -> Result<Response<EditReply>, Status> {
        let caller = self
            .allow(&request, Operation::Edit, || {
                format!("load ({} bytes)", request.get_ref().content.len())
            })
            .await?;
        let request = request.into_inner();
        let session = request.session;
        let mode = match known(
            "mode",
            request.mode,
            &LOAD_MODES,
            ProtoLoadMode::as_str_name,
        )? {
            ProtoLoadMode::Merge => LoadMode::Merge,
            ProtoLoadMode::Override => LoadMode::Override,
        };
        let format = known("format", request.format, &LOAD_FORMATS, Format::as_str_name)?;
        let content = request.content;
        self.run_in(&caller, "Load", session, move |s| match format {
            Format::Set => ds(s.load_lines(session, mode, &content)).map(lines_applied),
            _ => {
                let outcome = ds(s.load_json(session, mode, &content))?;
                Ok(EditReply {
                    incomplete: outcome.incomplete.into_iter().map(problem).collect(),
                    ..EditReply::default()
                })
            }
        })
        .await
        .map(Response::new)
    }

    async fn discard(&self, request: Request<SessionRef>) -> Result<Response<Empty>, Status> {
        let caller = self
            .allow(&request, Operation::Edit, || "discard".into())
            .await?;
        let session = request.into_inner().session;
        self.run_in(&caller, "Discard", session, move |s| ds(s.discard(session)))
            .await?;
        ok(Empty {})
    }

    async fn rollback(
        &self,
        request: Request<RollbackRequest>,
    ) -> Result<Response<EditReply>, Status> {
        let caller = self
            .allow(&request, Operation::Edit, || {
                format!("rollback {}", request.get_ref().index)
            })
            .await?;
        let RollbackRequest { session, index } = request.into_inner();
        self.run_in(&caller, "Rollback", session, move |s| {
            ds(s.rollback(session, index as usize))
        })
        .await?;
        ok(EditReply::default())
    }

    async fn compare(&self, request: Request<CompareRequest>) -> Result<Response<Lines>, Status> {
        let caller = self
            .allow(&request, Operation::Show, || "compare".into())
            .await?;
        let request = request.into_inner();
        let session = request.session;
        let format = known(
            "format",
            request.format,
            &COMPARE_FORMATS,
            Format::as_str_name,
        )?;
        let rollback = request.rollback.map(|n| n as usize);
        let (base, candidate) = self
            .run_in(&caller, "Compare", session, move |s| {
                ds(s.compared(session, rollback))
            })
            .await?;
        let schema = &self.schema;
        let changes = || efb_yang::diff::diff(schema, &base, &candidate);
        let lines = match format {
            Format::Hierarchy => efb_yang::compare::hierarchical(schema, &base, &candidate),
            Format::Paths => changes().iter().map(|c| c.describe(schema)).collect(),
            Format::Json => changes().iter().map(|c| change_json(schema, c)).collect(),
            Format::Set => setlines::render_changes(schema, &changes()),
        };
        ok(Lines { lines })
    }

    async fn commit(
        &self,
        request: Request<CommitRequest>,
    ) -> Result<Response<CommitReply>, Status> {
        let what = describe_commit(request.get_ref());
        let caller = self
            .allow(&request, Operation::Commit, || what.clone())
            .await?;
        let request = request.into_inner();
        let reply = self.commit_reply(&caller, request).await;
        self.audited(&caller, what, reply, |r| match r.commit_id {
            0 => format!("{} changes, nothing committed", r.changes),
            id => format!("commit {id}, {} changes", r.changes),
        })
        .map(Response::new)
    }

    async fn confirm(&self, request: Request<Empty>) -> Result<Response<ConfirmReply>, Status> {
        let caller = self
            .allow(&request, Operation::Confirm, || "confirm".into())
            .await?;
        let id = self.run("Confirm", |s| ds(s.confirm())).await;
        let id = self.audited(&caller, "confirm".into(), id, |id| match id {
            Some(id) => format!("confirmed commit {id}"),
            None => "nothing waited for a confirmation".into(),
        })?;
        ok(ConfirmReply {
            commit_id: id.unwrap_or(0),
        })
    }

    async fn save(&self, request: Request<Empty>) -> Result<Response<Empty>, Status> {
        let what = "save (running becomes startup)";
        let caller = self
            .allow(&request, Operation::Save, || what.into())
            .await?;
        let saved = self.run("Save", |s| ds(s.save())).await;
        self.audited(&caller, what.into(), saved, |()| "saved".into())?;
        ok(Empty {})
    }

    async fn history(&self, request: Request<Empty>) -> Result<Response<HistoryReply>, Status> {
        self.allow(&request, Operation::Show, || "show system commit".into())
            .await?;
        let commits = self
            .run("History", |s| {
                Ok(s.history()
                    .into_iter()
                    .map(|c| CommitInfo {
                        index: c.index as u32,
                        id: c.id,
                        time: c.time,
                        user: c.user,
                        comment: c.comment.unwrap_or_default(),
                        kind: serde_json::to_value(c.kind)
                            .ok()
                            .and_then(|v| v.as_str().map(str::to_string))
                            .unwrap_or_default(),
                        records: c.records as u32,
                        pending_confirm: c.pending_confirm,
                    })
                    .collect())
            })
            .await?;
        ok(HistoryReply { commits })
    }

    async fn commit_changes(
        &self,
        request: Request<CommitChangesRequest>,
    ) -> Result<Response<Lines>, Status> {
        self.allow(&request, Operation::Show, || {
            "show a commit's changes".into()
        })
        .await?;
        let index = request.into_inner().index as usize;
        let changes = self
            .run("CommitChanges", move |s| ds(s.commit_changes(index)))
            .await?;
        let lines = setlines::render_changes(&self.schema, &changes);
        ok(Lines { lines })
    }

    async fn get(&self, request: Request<GetRequest>) -> Result<Response<GetReply>, Status> {
        let caller = self
            .allow(&request, Operation::Show, || {
                format!("show {}", first_line(&request.get_ref().path))
            })
            .await?;
        let request = request.into_inner();
        let session = request.session;
        let schema = self.schema.clone();
        let path = parse_path(&schema, &request.path)?;
        let datastore = known(
            "datastore",
            request.datastore,
            &DATASTORES,
            Which::as_str_name,
        )?;
        let format = known("format", request.format, &GET_FORMATS, Format::as_str_name)?;
        let with_defaults = request.with_defaults;
        let tree = if datastore == Which::Operational {
            let wanted = self.counter_lists.under(&path);
            self.operational((&caller, session), "Get", wanted).await?
        } else {
            self.tree((&caller, session), "Get", datastore).await?
        };
        let part = tree.subtree(&path);
        let text = match format {
            Format::Set => setlines::render_tree(&schema, &part).join("\n"),
            _ => json::to_json(
                &schema,
                &part,
                PrintOptions {
                    with_defaults,
                    pretty: true,
                },
            ),
        };
        ok(GetReply { text })
    }

    async fn list_keys(
        &self,
        request: Request<ListKeysRequest>,
    ) -> Result<Response<ListKeysReply>, Status> {
        let caller = self
            .allow(&request, Operation::Show, || "list keys".into())
            .await?;
        let request = request.into_inner();
        let session = request.session;
        let path = parse_path(&self.schema, &request.list_path)?;
        let datastore = known(
            "datastore",
            request.datastore,
            &DATASTORES,
            Which::as_str_name,
        )?;
        let (prefix, limit) = (request.prefix, request.limit.max(1) as usize);
        let tree = self.tree((&caller, session), "ListKeys", datastore).await?;
        ok(list_keys(&self.schema, &tree, &path, &prefix, limit))
    }

    async fn call(&self, request: Request<CallRequest>) -> Result<Response<CallReply>, Status> {
        let operation = match request.get_ref().rpc.as_str() {
            rpcs::LOOKUP_SESSION => Operation::Lookup,
            _ => Operation::Call,
        };
        let what = format!(
            "call {} {}",
            request.get_ref().rpc,
            first_line(&request.get_ref().input_json)
        );
        let caller = self.allow(&request, operation, || what.clone()).await?;
        let request = request.into_inner();
        let output = self.call_rpc(request).await;
        if !operation.changes() {
            return output.map(Response::new);
        }
        self.audited(&caller, what, output, |_| "done".into())
            .map(Response::new)
    }

    async fn audit(&self, request: Request<AuditRequest>) -> Result<Response<AuditReply>, Status> {
        self.allow(&request, Operation::Show, || "show system audit".into())
            .await?;
        let last = match request.into_inner().last {
            0 => DEFAULT_AUDIT_RECORDS,
            n => n as usize,
        };
        let log = self.audit_log.clone();
        let records = tokio::task::spawn_blocking(move || log.last(last))
            .await
            .map_err(|e| Status::internal(format!("reading the audit log: {e}")))?;
        ok(AuditReply {
            records: records.into_iter().map(audit_record).collect(),
        })
    }

    async fn recent_events(
        &self,
        request: Request<RecentEventsRequest>,
    ) -> Result<Response<RecentEventsReply>, Status> {
        self.allow(&request, Operation::Show, || "show log".into())
            .await?;
        let RecentEventsRequest { max, kinds } = request.into_inner();
        let kinds = events::kinds_of(&kinds).map_err(|e| bounded(Status::invalid_argument(e)))?;
        let max = match max {
            0 => usize::MAX,
            n => n as usize,
        };
        let events = self.events.recent(max, &kinds);
        ok(RecentEventsReply {
            events: events.into_iter().map(log_event).collect(),
        })
    }

    type WatchEventsStream = ReceiverStream<Result<LogEvent, Status>>;

    async fn watch_events(
        &self,
        request: Request<RecentEventsRequest>,
    ) -> Result<Response<Self::WatchEventsStream>, Status> {
        let caller = self
            .allow(&request, Operation::Show, || "watch events".into())
            .await?;
        let kinds = events::kinds_of(&request.into_inner().kinds)
            .map_err(|e| bounded(Status::invalid_argument(e)))?;
        let mut live = self.events.watch();
        let mut stopping = self.stopping.clone();
        let callers = self.callers.clone();
        let (sender, receiver) = tokio::sync::mpsc::channel(16);
        tokio::spawn(async move {
            let revoked = callers.until_refused(&caller, Operation::Show);
            tokio::pin!(revoked);
            loop {
                let next = tokio::select! {
                    next = live.recv() => next,
                    () = stopped(&mut stopping) => break,
                    () = &mut revoked => {
                        let message = format!(
                            "permission denied: {} no longer has a role that may watch events",
                            caller.name
                        );
                        let _ = sender.send(Err(Status::permission_denied(message))).await;
                        break;
                    }
                };
                let sent = match next {
                    Ok(r) if kinds.is_empty() || kinds.contains(&r.event.kind()) => {
                        sender.send(Ok(log_event(r))).await
                    }
                    Ok(_) => Ok(()),
                    Err(RecvError::Lagged(missed)) => {
                        // A stream ends with its error: the watcher starts again if it wants.
                        let message = format!("{missed} events missed: the watcher fell behind");
                        let _ = sender.send(Err(Status::data_loss(message))).await;
                        break;
                    }
                    Err(RecvError::Closed) => break,
                };
                // The client went away.
                if sent.is_err() {
                    break;
                }
            }
        });
        ok(ReceiverStream::new(receiver))
    }

    async fn clear_statistics(
        &self,
        request: Request<ClearStatisticsRequest>,
    ) -> Result<Response<ClearStatisticsReply>, Status> {
        let what = describe_clear(request.get_ref());
        let caller = self
            .allow(&request, Operation::Clear, || what.clone())
            .await?;
        let cleared = self.clear(request.into_inner()).await;
        self.audited(&caller, what, cleared, |r| {
            format!("{} counted from zero", r.cleared.len())
        })
        .map(Response::new)
    }
}

impl Service {
    /// The name a new session records: the caller's own; another one (`efb-cli --user`)
    /// only from an admin, as "ACCOUNT as NAME".
    fn recorded_user(&self, caller: &Caller, asked: &str) -> Result<String, Status> {
        if asked.is_empty() || asked == caller.name {
            return Ok(caller.name.clone());
        }
        ds(efb_datastore::check_user(asked))?;
        let what = || format!("open a session as {asked}");
        self.check(caller, Operation::ActAs, what)?;
        let user = format!("{} as {asked}", caller.name);
        let length = user.chars().count();
        if length > efb_datastore::MAX_USER_CHARS {
            return Err(Status::invalid_argument(format!(
                "user name: recorded as \"{user}\", {length} characters; at most {} in all",
                efb_datastore::MAX_USER_CHARS
            )));
        }
        self.record(
            caller,
            what(),
            Ok(format!("recorded as {user}")),
            Kind::Change,
        );
        Ok(user)
    }

    async fn commit_reply(
        &self,
        caller: &Caller,
        request: CommitRequest,
    ) -> Result<CommitReply, Status> {
        let session = request.session;
        let ds_request = DsCommit {
            comment: Some(request.comment).filter(|c| !c.is_empty()),
            confirm_timeout: (request.confirm_seconds > 0)
                .then(|| Duration::from_secs(u64::from(request.confirm_seconds))),
            check_only: request.check_only,
            offline: request.offline,
        };
        let (outcome, moves, earlier_warnings) = self
            .run_in(caller, "Commit", session, move |s| {
                let mut outcome = ds(s.commit(session, ds_request))?;
                let earlier = s.tell_warnings_once(&mut outcome);
                let moves = s.bucket_moves(&outcome);
                Ok((outcome, moves, earlier))
            })
            .await?;
        // Asked for by a check; a commit does not pay it (15 ms at 100 000 flows, cargo bench
        // -p efb-balancing --bench moves).
        let consequences = outcome
            .configs()
            .filter(|_| request.check_only)
            .map(|(b, a)| efb_balancing::flow_consequences(b, a))
            .unwrap_or_default();
        let (config_hash_before, config_hash_after) = outcome
            .configs()
            .map(|(b, a)| (config_hash(b), config_hash(a)))
            .unwrap_or_default();
        let changes = outcome.changes();
        let change_summary = setlines::summarise(&self.schema, changes);
        let mut change_lines = setlines::render_changes(&self.schema, changes);
        let change_lines_total = change_lines.len() as u64;
        change_lines.truncate(MAX_CHANGE_LINES);
        Ok(CommitReply {
            commit_id: outcome.commit_id.unwrap_or(0),
            changes: outcome.change_count() as u64,
            consequences,
            earlier_warnings: earlier_warnings as u32,
            warnings: outcome.warnings.into_iter().map(problem).collect(),
            change_lines,
            change_lines_total,
            confirm_deadline_unix_ms: unix_ms(outcome.confirm_deadline),
            confirmed_commit_id: outcome.confirmed.unwrap_or(0),
            validation_scope: validation_scope(outcome.scope),
            chip: outcome.chip,
            config_hash_before,
            config_hash_after,
            change_summary,
            moves: moves
                .into_iter()
                .map(|m| BucketMoves {
                    unit: m.unit,
                    moved: m.moved as u64,
                    buckets: m.buckets as u64,
                    why: m.why,
                })
                .collect(),
        })
    }

    /// Takes baselines of the counters now, off the owner's thread (it reads the chip).
    async fn clear(&self, request: ClearStatisticsRequest) -> Result<ClearStatisticsReply, Status> {
        let counted = match known("what", request.what, &COUNTED, Counted::as_str_name)? {
            Counted::Ports => baselines::Counted::Ports,
            Counted::Flows => baselines::Counted::Flows,
        };
        let inputs = self
            .run("ClearStatistics", |s| Ok(s.state_inputs()))
            .await?;
        let names = request.names;
        let cleared = tokio::task::spawn_blocking(move || inputs.clear_counters(counted, &names))
            .await
            .map_err(|e| Status::internal(format!("reading the counters: {e}")))?;
        let cleared = cleared.map_err(|e| {
            let code = match e {
                ClearError::NotConfigured { .. } => tonic::Code::NotFound,
                ClearError::NoChip | ClearError::Unreadable { .. } => {
                    tonic::Code::FailedPrecondition
                }
            };
            bounded(Status::new(code, e.to_string()))
        })?;
        tracing::info!(cleared = cleared.len(), "statistics cleared");
        Ok(ClearStatisticsReply { cleared })
    }

    async fn call_rpc(&self, request: CallRequest) -> Result<CallReply, Status> {
        let input: serde_json::Value = if request.input_json.trim().is_empty() {
            serde_json::Value::Null
        } else {
            serde_json::from_str(&request.input_json)
                .map_err(|e| bounded(Status::invalid_argument(format!("input is not JSON: {e}"))))?
        };
        let name = request.rpc;
        let output = self
            .run("Call", move |s| rpcs::call(s, &name, &input))
            .await?;
        Ok(CallReply {
            output_json: output.to_string(),
        })
    }
}

/// A commit request in words, for the audit.
fn describe_commit(request: &CommitRequest) -> String {
    let mut what = if request.check_only {
        "commit check".to_string()
    } else {
        "commit".to_string()
    };
    if request.confirm_seconds > 0 {
        what += &format!(" confirmed {} s", request.confirm_seconds);
    }
    if request.offline {
        what += " offline";
    }
    if !request.comment.is_empty() {
        what += &format!(" comment {:?}", first_line(&request.comment));
    }
    what
}

/// A clear in the shell's words, for the audit.
fn describe_clear(request: &ClearStatisticsRequest) -> String {
    let list = match Counted::try_from(request.what) {
        Ok(Counted::Ports) => "ports",
        Ok(Counted::Flows) => "ecofilter-balancer flow",
        Err(_) => "(unknown counters)",
    };
    let mut what = format!("clear {list} statistics");
    for name in request.names.iter().take(20) {
        what += &format!(" {}", first_line(name));
    }
    if request.names.len() > 20 {
        what += &format!(" ... ({} names)", request.names.len());
    }
    what
}

/// The first line of a text, cut to 200 characters (the audit bounds it again).
fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or("");
    let mut cut: String = line.chars().take(200).collect();
    if cut.len() < text.len() {
        cut.push_str("...");
    }
    cut
}

fn audit_record(r: Record) -> AuditRecord {
    let time = UNIX_EPOCH + Duration::from_millis(r.time_ms);
    AuditRecord {
        time: humantime::format_rfc3339_seconds(time).to_string(),
        user: r.user,
        role: r.role.map_or("none", efb_gnmi::Role::as_str).to_string(),
        from: r.from,
        what: r.what,
        accepted: r.accepted,
        result: r.result,
        kind: match r.kind {
            Kind::Change => "change",
            Kind::Access => "access",
        }
        .to_string(),
    }
}

fn log_event(r: Recorded) -> LogEvent {
    LogEvent {
        time: humantime::format_rfc3339_millis(r.time).to_string(),
        kind: r.event.kind().to_string(),
        fields: r
            .event
            .fields()
            .into_iter()
            .map(|(name, value)| EventField { name, value })
            .collect(),
    }
}

fn lines_applied(applied: usize) -> EditReply {
    EditReply {
        applied: applied as u32,
        ..EditReply::default()
    }
}

fn problem(p: efb_yang::Problem) -> Problem {
    Problem {
        path: p.path,
        message: p.message,
    }
}

fn parse_path(schema: &Schema, text: &str) -> Result<DataPath, Status> {
    if text.trim().is_empty() {
        return Ok(DataPath::root());
    }
    DataPath::parse(schema, text).map_err(|e| bounded(Status::invalid_argument(e.to_string())))
}

type ProtoLoadMode = efb_mgmt_proto::v1::LoadMode;
type Which = efb_mgmt_proto::v1::Datastore;

const LOAD_MODES: [ProtoLoadMode; 2] = [ProtoLoadMode::Merge, ProtoLoadMode::Override];
const LOAD_FORMATS: [Format; 2] = [Format::Json, Format::Set];
/// Compare's default (JSON) gives `set` / `delete` lines, as the proto says.
const COMPARE_FORMATS: [Format; 4] = [Format::Json, Format::Set, Format::Paths, Format::Hierarchy];

/// One change as a JSON object on its line (`show | compare | display json`): what was
/// done, where (libyang's path and the shell's words), the value and the one it replaced.
fn change_json(schema: &Schema, change: &efb_yang::Change) -> String {
    use efb_yang::Change;
    let path = change.path();
    let mut object = serde_json::json!({
        "path": path.display(schema).to_string(),
        "words": setlines::words(schema, path),
    });
    match change {
        Change::Create { .. } => object["operation"] = "create".into(),
        Change::Delete { .. } => object["operation"] = "delete".into(),
        Change::Set { old, new, .. } => {
            object["operation"] = "set".into();
            object["value"] = new.as_str().into();
            if let Some(old) = old {
                object["was"] = old.as_str().into();
            }
        }
    }
    object.to_string()
}
const GET_FORMATS: [Format; 2] = [Format::Json, Format::Set];
const COUNTED: [Counted; 2] = [Counted::Ports, Counted::Flows];
const DATASTORES: [Which; 4] = [
    Which::Running,
    Which::Candidate,
    Which::Startup,
    Which::Operational,
];

/// The value of an enum field, if this request may have it. prost reads a number the
/// proto does not define as the default, which would make `mode = 99` a merge: refused
/// instead, naming the field and what it accepts.
fn known<E: Copy + Into<i32>>(
    field: &str,
    value: i32,
    accepted: &[E],
    name: fn(&E) -> &'static str,
) -> Result<E, Status> {
    accepted
        .iter()
        .copied()
        .find(|e| (*e).into() == value)
        .ok_or_else(|| {
            tracing::warn!(
                field,
                value,
                "request refused: a value its enum does not define"
            );
            let names: Vec<String> = accepted
                .iter()
                .map(|e| format!("{} ({})", name(e), (*e).into()))
                .collect();
            Status::invalid_argument(format!(
                "{field} = {value} is not accepted here; {field} is one of: {}",
                names.join(", ")
            ))
        })
}

fn list_keys(
    schema: &Schema,
    tree: &DataTree,
    path: &DataPath,
    prefix: &str,
    limit: usize,
) -> ListKeysReply {
    let Some(NodeRef::List(list)) = tree.get(schema, path) else {
        return ListKeysReply::default();
    };
    // The first `limit` as people count them (p2 before p10), the order the shell lists.
    let mut keys: Vec<&str> = list
        .keys()
        .filter_map(|keys| keys.first())
        .map(|key| key.as_str())
        .filter(|key| key.starts_with(prefix))
        .collect();
    let total = keys.len() as u64;
    keys.sort_by(|a, b| efb_text_table::natural_cmp(a, b));
    keys.truncate(limit);
    ListKeysReply {
        keys: keys.into_iter().map(str::to_string).collect(),
        total,
    }
}

/// What a commit validated, in words: flows the change does not concern are not validated
/// again (see `efb_yang::validate::validate_change`).
fn validation_scope(scope: Scope) -> String {
    match scope {
        Scope::Full => "the whole configuration".to_string(),
        Scope::Entries(0) => "everything but the flows, none of which it concerns".to_string(),
        Scope::Entries(1) => "everything but the flows, and the 1 flow it concerns".to_string(),
        Scope::Entries(n) => format!("everything but the flows, and the {n} flows it concerns"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_come_as_people_count_them_before_the_limit_cuts() {
        let schema = Schema::load().unwrap();
        let mut tree = DataTree::new();
        let lines = ["p10", "p2", "p1", "p9-0"]
            .map(|p| format!("set ports port {p} description x"))
            .join("\n");
        setlines::apply_lines(&schema, &mut tree, &lines).unwrap();
        let ports = DataPath::parse(&schema, "/ecofilter-balancer:ports/port").unwrap();
        let reply = list_keys(&schema, &tree, &ports, "p", 3);
        assert_eq!(reply.keys, ["p1", "p2", "p9-0"]);
        assert_eq!(reply.total, 4);
    }

    #[test]
    fn enum_values_the_proto_does_not_define_are_refused_by_name() {
        let mode = known("mode", 1, &LOAD_MODES, ProtoLoadMode::as_str_name).unwrap();
        assert_eq!(mode, ProtoLoadMode::Override);
        let err = known("mode", 99, &LOAD_MODES, ProtoLoadMode::as_str_name).unwrap_err();
        assert_eq!(err.code(), tonic::Code::InvalidArgument);
        assert_eq!(
            err.message(),
            "mode = 99 is not accepted here; mode is one of: LOAD_MODE_MERGE (0), LOAD_MODE_OVERRIDE (1)"
        );
        // Defined, but not for this request: a load has no path-level format.
        let err = known("format", 2, &LOAD_FORMATS, Format::as_str_name).unwrap_err();
        assert!(
            err.message().contains("FORMAT_SET (1)"),
            "{}",
            err.message()
        );
    }
}
