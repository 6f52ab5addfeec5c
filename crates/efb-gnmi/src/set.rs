//! Set: deletes, then replaces, then updates, each in message order, as one list of
//! datastore edits committed in one all-or-nothing transaction by the backend (the same
//! validation and commit as the shell's). Deleting what does not exist succeeds; a replace
//! resets what the value leaves out to its default; an update merges (a leaf-list update
//! adds its items to the ones there).
//!
//! The commit confirmed extension: `commit` starts one (a rollback duration of 0 or none
//! means 10 minutes, at most 65 535 minutes as Junos), `confirm` keeps it, `cancel` rolls it
//! back, `set_rollback_duration` makes it wait that long from now instead; while one waits,
//! other Sets are refused with FAILED_PRECONDITION, and a wrong id with INVALID_ARGUMENT.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use efb_datastore::{DEFAULT_CONFIRM_TIMEOUT, Edit, MAX_CONFIRM_TIMEOUT, check_confirm_timeout};
use efb_northbound::request::Kind;
use efb_yang::Schema;
use efb_yang::text::{escaped, excerpt, logged};
use gnmi_proto::gnmi::{self, SetRequest, SetResponse, UpdateResult, update_result::Operation};
use gnmi_proto::gnmi_ext::{self, commit::Action, extension::Ext};
use tokio::sync::Mutex;
use tonic::metadata::MetadataValue;
use tonic::{Response, Status};
use tracing::{info, warn};

use crate::backend::{Backend, Committed, pending_message};
use crate::decode::fragment;
use crate::errors;
use crate::message::now_ns;
use crate::path::{PathError, Pattern};
use efb_northbound::caller::Caller;

/// What Set needs: the backend, and the commit confirmed made over gNMI that waits.
pub(crate) struct SetState {
    backend: Arc<dyn Backend>,
    schema: Arc<Schema>,
    waiting: Mutex<Option<Waiting>>,
}

/// A commit confirmed made over gNMI, waiting for its confirmation, and the client's id
/// for it.
#[derive(Clone, Debug)]
struct Waiting {
    id: String,
    commit_id: u64,
}

impl SetState {
    pub(crate) fn new(backend: Arc<dyn Backend>) -> SetState {
        SetState {
            schema: backend.schema(),
            backend,
            waiting: Mutex::new(None),
        }
    }
}

pub(crate) async fn set(
    state: &SetState,
    caller: &Caller,
    request: SetRequest,
) -> Result<Response<SetResponse>, Status> {
    let commit = efb_northbound::access::may(caller.role, Kind::Set.operation());
    commit.map_err(|denied| denied.status(&caller.name))?;
    if !request.union_replace.is_empty() {
        return Err(Status::unimplemented(
            "union_replace is not supported; use replace",
        ));
    }
    let commit = commit_extension(&request.extension)?;
    let (edits, results) = edits(state, &request).await?;
    // One Set at a time decides about the waiting commit confirmed.
    let mut waiting = state.waiting.lock().await;
    let outcome = match commit {
        None => plain(state, caller, edits, &mut waiting).await?,
        Some(commit) => confirmed(state, caller, edits, commit, &mut waiting).await?,
    };
    drop(waiting);
    let mut response = Response::new(SetResponse {
        prefix: request.prefix.clone(),
        response: results,
        timestamp: now_ns(),
        ..SetResponse::default()
    });
    for w in &outcome.warnings {
        warn!(warning = %escaped(&w.to_string()), "committed with a warning");
        if let Ok(value) = MetadataValue::try_from(ascii(&w.to_string())) {
            response.metadata_mut().append("efb-warning", value);
        }
    }
    info!(commit = ?outcome.commit_id, warnings = outcome.warnings.len(), "Set committed");
    Ok(response)
}

/// A client's id inside a message's quotes: bounded, its quotes and control characters
/// escaped (the message reaches the audit and the log).
fn quoted(id: &str) -> String {
    excerpt(id).escape_debug().to_string()
}

/// Header values are visible ASCII: anything else becomes `?`.
fn ascii(text: &str) -> String {
    text.chars()
        .map(|c| if (' '..='~').contains(&c) { c } else { '?' })
        .collect()
}

fn commit_extension(
    extensions: &[gnmi_ext::Extension],
) -> Result<Option<gnmi_ext::Commit>, Status> {
    let mut found = None;
    for ext in extensions {
        match &ext.ext {
            Some(Ext::Commit(c)) if found.is_none() => found = Some(c.clone()),
            Some(Ext::Commit(_)) => {
                return Err(Status::invalid_argument("more than one commit extension"));
            }
            Some(Ext::History(_) | Ext::Depth(_)) => {
                return Err(Status::invalid_argument(
                    "history and depth do not apply to Set",
                ));
            }
            _ => {}
        }
    }
    Ok(found)
}

/// The edits of the request, in the order the specification sets, and one result each.
async fn edits(
    state: &SetState,
    request: &SetRequest,
) -> Result<(Vec<Edit>, Vec<UpdateResult>), Status> {
    let schema = &state.schema;
    let prefix = request.prefix.as_ref();
    let mut edits = Vec::new();
    let mut results = Vec::new();
    for path in &request.delete {
        let doing = Doing {
            verb: "delete",
            path,
        };
        let pattern =
            Pattern::parse(schema, prefix, Some(path)).map_err(|e| doing.path_error(e))?;
        if pattern.has_wildcards() {
            // What the wildcards select now; the commit rebases onto anything newer.
            let snapshot = state.backend.snapshot().await.map_err(errors::backend)?;
            for data_path in pattern.expand(schema, &snapshot.running) {
                edits.push(Edit::Remove { path: data_path });
            }
        } else {
            let data_path = pattern.data_path(schema).map_err(|e| doing.path_error(e))?;
            edits.push(Edit::Remove { path: data_path });
        }
        results.push(result(path, Operation::Delete));
    }
    for (updates, op) in [
        (&request.replace, Operation::Replace),
        (&request.update, Operation::Update),
    ] {
        for update in updates {
            let path = update.path.clone().unwrap_or_default();
            let verb = if op == Operation::Replace {
                "replace"
            } else {
                "update"
            };
            let doing = Doing { verb, path: &path };
            let pattern =
                Pattern::parse(schema, prefix, Some(&path)).map_err(|e| doing.path_error(e))?;
            let data_path = pattern.data_path(schema).map_err(|e| doing.path_error(e))?;
            if let Some(id) = data_path.node()
                && !schema.node(id).config
            {
                return Err(Status::invalid_argument(format!(
                    "{doing}{} is state (config false): it cannot be set",
                    data_path.display(schema)
                )));
            }
            let data = fragment(schema, &data_path, update.val.as_ref())
                .map_err(|e| errors::decode(&doing.to_string(), e))?;
            edits.push(match op {
                Operation::Replace => Edit::Replace {
                    path: data_path,
                    data,
                },
                _ => Edit::Merge {
                    path: data_path,
                    data,
                },
            });
            results.push(result(&path, op));
        }
    }
    Ok((edits, results))
}

fn result(path: &gnmi::Path, op: Operation) -> UpdateResult {
    UpdateResult {
        path: Some(path.clone()),
        op: op as i32,
        ..UpdateResult::default()
    }
}

/// What a Set does to one path, opening its error messages (`update /a/b[k=v]: `); the
/// path stays the client's message until a message needs it written out.
struct Doing<'a> {
    verb: &'static str,
    path: &'a gnmi::Path,
}

impl Doing<'_> {
    fn path_error(&self, e: PathError) -> Status {
        errors::path(&self.to_string(), e)
    }
}

impl fmt::Display for Doing<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ", self.verb)?;
        let path = self.path;
        if !path.origin.is_empty() {
            write!(f, "{}:", path.origin)?;
        }
        for elem in &path.elem {
            write!(f, "/{}", elem.name)?;
            let mut keys: Vec<_> = elem.key.iter().collect();
            keys.sort();
            for (k, v) in keys {
                write!(f, "[{k}={v}]")?;
            }
        }
        if path.elem.is_empty() {
            f.write_str("/")?;
        }
        f.write_str(": ")
    }
}

/// How long a commit confirmed waits: the default (10 minutes) for none or 0, else what
/// is asked for up to 65 535 minutes, Junos' limit.
fn rollback_wait(asked: Option<prost_types::Duration>) -> Result<Duration, Status> {
    let Some(asked) = asked.filter(|d| d.seconds != 0 || d.nanos != 0) else {
        return Ok(DEFAULT_CONFIRM_TIMEOUT);
    };
    let out_of_range = || {
        Status::invalid_argument(format!(
            "commit extension: rollback_duration {}s is out of range; it is 1 second to 65535 minutes ({} seconds), or 0 for the default 10 minutes",
            asked.seconds,
            MAX_CONFIRM_TIMEOUT.as_secs()
        ))
    };
    let wait = Duration::try_from(asked).map_err(|_| out_of_range())?;
    check_confirm_timeout(wait).map_err(|_| out_of_range())?;
    Ok(wait)
}

/// The gNMI commit confirmed that waits, if it still does (it may have been rolled back by
/// its timer, or confirmed from the shell).
async fn current(
    state: &SetState,
    waiting: &mut Option<Waiting>,
) -> Result<Option<crate::backend::Pending>, Status> {
    let pending = state.backend.pending().await.map_err(errors::backend)?;
    if waiting
        .as_ref()
        .is_some_and(|w| pending.as_ref().is_none_or(|p| p.commit_id != w.commit_id))
    {
        *waiting = None;
    }
    Ok(pending)
}

async fn plain(
    state: &SetState,
    caller: &Caller,
    edits: Vec<Edit>,
    waiting: &mut Option<Waiting>,
) -> Result<Committed, Status> {
    if let Some(pending) = current(state, waiting).await? {
        return Err(Status::failed_precondition(pending_message(&pending)));
    }
    state
        .backend
        .commit(&caller.name, edits, None)
        .await
        .map_err(errors::backend)
}

async fn confirmed(
    state: &SetState,
    caller: &Caller,
    edits: Vec<Edit>,
    commit: gnmi_ext::Commit,
    waiting: &mut Option<Waiting>,
) -> Result<Committed, Status> {
    if commit.id.is_empty() {
        return Err(Status::invalid_argument("the commit extension needs an id"));
    }
    let pending = current(state, waiting).await?;
    match commit.action {
        Some(Action::Commit(request)) => {
            if let Some(pending) = pending {
                return Err(Status::failed_precondition(pending_message(&pending)));
            }
            let wait = rollback_wait(request.rollback_duration)?;
            let outcome = state
                .backend
                .commit(&caller.name, edits, Some(wait))
                .await
                .map_err(errors::backend)?;
            if let Some(commit_id) = outcome.commit_id {
                // The id is the client's text: escaped, it cannot forge a log line.
                info!(id = %logged(&commit.id), commit_id, seconds = wait.as_secs(), "commit confirmed started");
                *waiting = Some(Waiting {
                    id: commit.id,
                    commit_id,
                });
            }
            Ok(outcome)
        }
        Some(Action::Confirm(_) | Action::Cancel(_) | Action::SetRollbackDuration(_)) => {
            if !edits.is_empty() {
                return Err(Status::invalid_argument(
                    "a confirm, cancel or set_rollback_duration carries no changes; send them in a Set of their own",
                ));
            }
            let Some(pending) = pending else {
                return Err(Status::failed_precondition(
                    "no commit confirmed is waiting",
                ));
            };
            match waiting.as_ref() {
                Some(w) if w.id == commit.id => {}
                // The waiting id is its starter's secret: not told to whoever guesses.
                Some(w) => {
                    return Err(Status::invalid_argument(format!(
                        "commit id \"{}\" does not match the id of the waiting commit confirmed (commit {})",
                        quoted(&commit.id),
                        w.commit_id
                    )));
                }
                None => {
                    return Err(Status::invalid_argument(format!(
                        "commit id \"{}\" does not match: the waiting commit {} was not made over gNMI",
                        quoted(&commit.id),
                        pending.commit_id
                    )));
                }
            }
            if let Some(Action::SetRollbackDuration(asked)) = commit.action {
                return rollback_duration(state, &commit.id, asked).await;
            }
            let confirm = matches!(commit.action, Some(Action::Confirm(_)));
            let done = if confirm {
                state.backend.confirm().await
            } else {
                state.backend.cancel().await
            }
            .map_err(errors::backend)?;
            info!(id = %logged(&commit.id), commit_id = ?done, confirm, "commit confirmed ended");
            *waiting = None;
            Ok(Committed::default())
        }
        None => Err(Status::invalid_argument(
            "the commit extension has no action",
        )),
    }
}

/// The waiting commit confirmed now waits `asked` from now (0 or none: 10 minutes), within
/// the same range as at its commit.
async fn rollback_duration(
    state: &SetState,
    id: &str,
    asked: gnmi_ext::CommitSetRollbackDuration,
) -> Result<Committed, Status> {
    let wait = rollback_wait(asked.rollback_duration)?;
    let pending = state
        .backend
        .set_rollback_duration(wait)
        .await
        .map_err(errors::backend)?
        .ok_or_else(|| Status::failed_precondition("no commit confirmed is waiting"))?;
    info!(
        id = %logged(id),
        commit_id = pending.commit_id,
        seconds = wait.as_secs(),
        "commit confirmed: rollback duration set"
    );
    Ok(Committed::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn minutes(m: i64) -> Option<prost_types::Duration> {
        Some(prost_types::Duration {
            seconds: m * 60,
            nanos: 0,
        })
    }

    #[test]
    fn an_error_opens_with_what_was_done_to_which_path() {
        let elem = |name: &str, keys: &[(&str, &str)]| gnmi::PathElem {
            name: name.into(),
            key: keys
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        let path = gnmi::Path {
            origin: "ecofilter-balancer".into(),
            elem: vec![
                elem("ports", &[]),
                elem("port", &[("name", "p1"), ("b", "x/y")]),
            ],
            ..gnmi::Path::default()
        };
        let doing = Doing {
            verb: "update",
            path: &path,
        };
        assert_eq!(
            doing.to_string(),
            "update ecofilter-balancer:/ports/port[b=x/y][name=p1]: "
        );
        let root = gnmi::Path::default();
        let doing = Doing {
            verb: "delete",
            path: &root,
        };
        assert_eq!(doing.to_string(), "delete /: ");
    }

    #[test]
    fn a_rollback_duration_is_at_most_65535_minutes() {
        assert_eq!(rollback_wait(None).unwrap(), DEFAULT_CONFIRM_TIMEOUT);
        assert_eq!(rollback_wait(minutes(0)).unwrap(), DEFAULT_CONFIRM_TIMEOUT);
        assert_eq!(
            rollback_wait(minutes(65_535)).unwrap(),
            Duration::from_secs(65_535 * 60)
        );
        for asked in [
            minutes(65_536),
            minutes(-1),
            Some(prost_types::Duration {
                seconds: i64::from(u32::MAX),
                nanos: 0,
            }),
        ] {
            let err = rollback_wait(asked).unwrap_err();
            assert_eq!(err.code(), tonic::Code::InvalidArgument);
            assert!(err.message().contains("65535 minutes"), "{}", err.message());
        }
    }
}
