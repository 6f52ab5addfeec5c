//! The management API's requests (the `Management` trait), one method each: the caller's
//! role checked, the job run on the owner, changes audited, the answer made.

use efb_datastore::{DatastoreError, LoadMode, Opener};
use efb_mgmt_proto::v1::management_server::Management;
use efb_mgmt_proto::v1::*;
use efb_northbound::access::Operation;
use efb_northbound::budget::Spend;
use efb_northbound::request::{CommitAsk, Counters, Request as Asked};
use efb_yang::inactive::Inactive;
use efb_yang::json::{self, PrintOptions};
use efb_yang::{DataPath, setlines};
use tokio::sync::broadcast::error::RecvError;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

use super::accepted::{
    COMPARE_FORMATS, DATASTORES, GET_FORMATS, LOAD_FORMATS, LOAD_MODES, ProtoLoadMode, Which, known,
};
use super::logs::{audit_record, log_event};
use super::reads::{change_json, list_keys, marked_lines, parse_path, written_lines};
use super::sessions::{dropped, session_record};
use super::{Service, ok, problem, unix_ms};
use crate::northbound::errors::{bounded, status};
use crate::northbound::held::{Ending, NoticeStream, stopped};
use crate::northbound::rpcs;
use crate::owner::Request as R;
use crate::record::events;

/// Audit records `show system audit` returns when the request does not say.
const DEFAULT_AUDIT_RECORDS: usize = 100;

#[tonic::async_trait]
impl Management for Service {
    async fn hello(&self, request: Request<HelloRequest>) -> Result<Response<HelloReply>, Status> {
        self.allow(&request, &Asked::Hello).await?;
        let module = self.schema.module();
        ok(HelloReply {
            daemon_version: env!("CARGO_PKG_VERSION").to_string(),
            module_name: module.name.clone(),
            module_revision: module.revision.clone(),
            module_text: efb_yang::schema::MODULE_TEXT.to_string(),
        })
    }

    async fn status(&self, request: Request<Empty>) -> Result<Response<StatusReply>, Status> {
        let caller = self.allow(&request, &Asked::Status).await?;
        let datastore = self.datastore_dir.clone();
        let status = self.ask("Status", (&caller, 0), R::Status).await?;
        ok(StatusReply {
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
    }

    type OpenSessionStream = NoticeStream;

    async fn open_session(
        &self,
        request: Request<OpenSessionRequest>,
    ) -> Result<Response<NoticeStream>, Status> {
        let asked = request.get_ref().user.clone();
        let caller = self.allow(&request, &Asked::OpenSession).await?;
        let opener = Opener {
            user: self.recorded_user(&caller, &asked)?,
            holder: caller.holder.clone(),
            from: caller.from.clone(),
            admin: caller.is_admin(),
        };
        let session = self
            .ask_done("OpenSession", (&caller, 0), |to| R::OpenSession(opener, to))
            .await?;
        let (owner, audit, role) = (self.owner.clone(), self.audit.clone(), caller.role);
        let close = move |why: String| async move {
            let closed = owner.ask(|to| R::CloseSession(session, to)).await;
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
        let caller = self.allow(&request, &Asked::CloseSession).await?;
        let session = request.into_inner().session;
        let closed = self
            .ask("CloseSession", (&caller, session), |to| {
                R::CloseSession(session, to)
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
        let asked = Asked::Logout { session };
        let caller = self.allow(&request, &asked).await?;
        let closed = self
            .ask("Logout", (&caller, 0), |to| R::CloseSession(session, to))
            .await
            .and_then(|closed| {
                closed.ok_or_else(|| status(DatastoreError::UnknownSession(session)))
            });
        let closed = self.audited(&caller, &asked, closed, |info| {
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
        let asked = Asked::EditLines {
            lines: request.get_ref().lines.clone(),
        };
        let caller = self.allow(&request, &asked).await?;
        let EditLinesRequest { session, lines } = request.into_inner();
        let outcome = self
            .ask_done("EditLines", (&caller, session), |to| {
                R::EditLines(session, lines, to)
            })
            .await?;
        ok(EditReply {
            broken: outcome.broken.into_iter().map(problem).collect(),
            ..lines_applied(outcome.applied)
        })
    }

    async fn load(&self, request: Request<LoadRequest>) -> Result<Response<EditReply>, Status> {
        let asked = Asked::Load {
            bytes: request.get_ref().content.len(),
        };
        let caller = self.allow(&request, &asked).await?;
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
        let reader = (&caller, session);
        let reply = match format {
            Format::Set => self
                .ask_done("Load", reader, |to| {
                    R::LoadLines(session, mode, content, to)
                })
                .await
                .map(lines_applied)?,
            _ => {
                let outcome = self
                    .ask_done("Load", reader, |to| R::LoadJson(session, mode, content, to))
                    .await?;
                EditReply {
                    incomplete: outcome.incomplete.into_iter().map(problem).collect(),
                    ..EditReply::default()
                }
            }
        };
        ok(reply)
    }

    async fn discard(&self, request: Request<SessionRef>) -> Result<Response<Empty>, Status> {
        let caller = self.allow(&request, &Asked::Discard).await?;
        let session = request.into_inner().session;
        self.ask_done("Discard", (&caller, session), |to| R::Discard(session, to))
            .await?;
        ok(Empty {})
    }

    async fn rollback(
        &self,
        request: Request<RollbackRequest>,
    ) -> Result<Response<EditReply>, Status> {
        let asked = Asked::Rollback {
            index: request.get_ref().index,
        };
        let caller = self.allow(&request, &asked).await?;
        let RollbackRequest { session, index } = request.into_inner();
        self.ask_done("Rollback", (&caller, session), |to| {
            R::Rollback(session, index as usize, to)
        })
        .await?;
        ok(EditReply::default())
    }

    async fn compare(&self, request: Request<CompareRequest>) -> Result<Response<Lines>, Status> {
        let caller = self.allow(&request, &Asked::Compare).await?;
        let request = request.into_inner();
        let session = request.session;
        let format = known(
            "format",
            request.format,
            &COMPARE_FORMATS,
            Format::as_str_name,
        )?;
        let rollback = request.rollback.map(|n| n as usize);
        let compared = request.compared.map(|n| n as usize);
        if compared.is_some() && rollback.is_none() {
            return Err(Status::invalid_argument(
                "compared names a commit to compare with the one rollback names; rollback is missing",
            ));
        }
        let ((base, base_inactive), (candidate, inactive)) = self
            .ask_done("Compare", (&caller, session), |to| {
                R::Compared(session, rollback, compared, to)
            })
            .await?;
        let schema = &self.schema;
        // The configurations as written, inactive nodes in place; then what changed state.
        let (base, candidate) = (
            base_inactive.whole(schema, &base),
            inactive.whole(schema, &candidate),
        );
        let changes = || efb_yang::diff::diff(schema, &base, &candidate);
        let mut lines = match format {
            Format::Hierarchy => efb_yang::compare::hierarchical(schema, &base, &candidate),
            Format::Paths => changes().iter().map(|c| c.describe(schema)).collect(),
            Format::Json => changes().iter().map(|c| change_json(schema, c)).collect(),
            Format::Set => setlines::render_changes(schema, &changes()),
        };
        lines.extend(marked_lines(
            schema,
            format,
            (&base_inactive, &inactive),
            &candidate,
        ));
        ok(Lines { lines })
    }

    async fn commit(
        &self,
        request: Request<CommitRequest>,
    ) -> Result<Response<CommitReply>, Status> {
        let ask = request.get_ref();
        let asked = Asked::Commit(CommitAsk {
            check_only: ask.check_only,
            confirm_seconds: ask.confirm_seconds,
            offline: ask.offline,
            comment: ask.comment.clone(),
        });
        let caller = self.allow(&request, &asked).await?;
        let request = request.into_inner();
        let reply = self.commit_reply(&caller, request).await;
        self.audited(&caller, &asked, reply, |r| match r.commit_id {
            0 => format!("{} changes, nothing committed", r.changes),
            id => format!("commit {id}, {} changes", r.changes),
        })
        .map(Response::new)
    }

    async fn confirm(&self, request: Request<Empty>) -> Result<Response<ConfirmReply>, Status> {
        let caller = self.allow(&request, &Asked::Confirm).await?;
        let id = self.ask_done("Confirm", (&caller, 0), R::Confirm).await;
        let id = self.audited(&caller, &Asked::Confirm, id, |id| match id {
            Some(id) => format!("confirmed commit {id}"),
            None => "nothing waited for a confirmation".into(),
        })?;
        ok(ConfirmReply {
            commit_id: id.unwrap_or(0),
        })
    }

    async fn save(&self, request: Request<Empty>) -> Result<Response<Empty>, Status> {
        let caller = self.allow(&request, &Asked::Save).await?;
        let saved = self.ask_done("Save", (&caller, 0), R::Save).await;
        self.audited(&caller, &Asked::Save, saved, |()| "saved".into())?;
        ok(Empty {})
    }

    async fn history(&self, request: Request<Empty>) -> Result<Response<HistoryReply>, Status> {
        let caller = self.allow(&request, &Asked::History).await?;
        let commits = self
            .ask("History", (&caller, 0), R::History)
            .await?
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
            .collect();
        ok(HistoryReply { commits })
    }

    async fn commit_changes(
        &self,
        request: Request<CommitChangesRequest>,
    ) -> Result<Response<Lines>, Status> {
        let caller = self.allow(&request, &Asked::CommitChanges).await?;
        let index = request.into_inner().index as usize;
        let changes = self
            .ask_done("CommitChanges", (&caller, 0), |to| {
                R::CommitChanges(index, to)
            })
            .await?;
        let lines = setlines::render_changes(&self.schema, &changes);
        ok(Lines { lines })
    }

    async fn get(&self, request: Request<GetRequest>) -> Result<Response<GetReply>, Status> {
        let asked = Asked::Show {
            path: request.get_ref().path.clone(),
        };
        let caller = self.allow(&request, &asked).await?;
        let spend = Spend::of(&request);
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
        let as_written = request.inactive && matches!(datastore, Which::Running | Which::Candidate);
        let (tree, inactive) = if datastore == Which::Operational {
            let wanted = self.counter_lists.under(&path);
            let tree = self.operational((&caller, session), "Get", wanted).await?;
            (tree, Inactive::default())
        } else if as_written {
            self.written((&caller, session), "Get", datastore).await?
        } else {
            let tree = self.tree((&caller, session), "Get", datastore).await?;
            (tree, Inactive::default())
        };
        let inactive_here: Vec<&DataPath> = inactive.paths().filter(|p| path.contains(p)).collect();
        let part = inactive.whole(&schema, &tree).subtree(&path);
        let text = match format {
            Format::Set => written_lines(&schema, &part, &inactive_here).join("\n"),
            _ => json::to_json(
                &schema,
                &part,
                PrintOptions {
                    with_defaults,
                    pretty: true,
                },
            ),
        };
        // Held until the reply has left (its encoded copy is counted on its way out): a
        // client that does not read its replies, a whole large configuration each, is
        // refused past its budget rather than given more.
        if let Some(spend) = spend {
            spend.take(text.len())?;
        }
        let inactive = inactive_here.iter().map(|p| p.display(&schema)).collect();
        ok(GetReply { text, inactive })
    }

    async fn list_keys(
        &self,
        request: Request<ListKeysRequest>,
    ) -> Result<Response<ListKeysReply>, Status> {
        let caller = self.allow(&request, &Asked::ListKeys).await?;
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
        let (rpc, input) = (
            request.get_ref().rpc.clone(),
            request.get_ref().input_json.clone(),
        );
        let asked = match rpc.as_str() {
            rpcs::LOOKUP_SESSION => Asked::Lookup { rpc, input },
            _ => Asked::Call { rpc, input },
        };
        let caller = self.allow(&request, &asked).await?;
        let request = request.into_inner();
        let output = self.call_rpc(&caller, request).await;
        if !asked.operation().changes() {
            return output.map(Response::new);
        }
        self.audited(&caller, &asked, output, |_| "done".into())
            .map(Response::new)
    }

    async fn audit(&self, request: Request<AuditRequest>) -> Result<Response<AuditReply>, Status> {
        self.allow(&request, &Asked::Audit).await?;
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
        self.allow(&request, &Asked::RecentEvents).await?;
        let RecentEventsRequest { max, kinds } = request.into_inner();
        let kinds = events::kinds_of(&kinds)
            .map_err(|e| bounded(Status::invalid_argument(e.to_string())))?;
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
        let caller = self.allow(&request, &Asked::WatchEvents).await?;
        let kinds = events::kinds_of(&request.into_inner().kinds)
            .map_err(|e| bounded(Status::invalid_argument(e.to_string())))?;
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
        let asked = Asked::ClearStatistics {
            counters: match Counted::try_from(request.get_ref().what) {
                Ok(Counted::Ports) => Counters::Ports,
                Ok(Counted::Flows) => Counters::Flows,
                Err(_) => Counters::Unknown,
            },
            names: request.get_ref().names.clone(),
        };
        let caller = self.allow(&request, &asked).await?;
        let cleared = self.clear(&caller, request.into_inner()).await;
        self.audited(&caller, &asked, cleared, |r| {
            format!("{} counted from zero", r.cleared.len())
        })
        .map(Response::new)
    }
}

fn lines_applied(applied: usize) -> EditReply {
    EditReply {
        applied: applied as u32,
        ..EditReply::default()
    }
}
