//! Set: deletes, then replaces, then updates, each in message order, as one list of
//! datastore edits committed in one all-or-nothing transaction by the backend (the same
//! validation and commit as the shell's). Deleting what does not exist succeeds; a replace
//! resets what the value leaves out to its default; an update merges (a leaf-list update
//! adds its items to the ones there).
//!
//! The commit confirmed extension: `commit` starts one (a rollback duration of 0 or none
//! means 10 minutes, at most 65 535 minutes as Junos), `confirm` keeps it, `cancel` rolls it back; while one waits, other
//! Sets are refused with FAILED_PRECONDITION, and a wrong id with INVALID_ARGUMENT.

use std::time::Duration;

use efb_datastore::{DEFAULT_CONFIRM_TIMEOUT, Edit, MAX_CONFIRM_TIMEOUT, check_confirm_timeout};
use gnmi_proto::gnmi::{self, SetRequest, SetResponse, UpdateResult, update_result::Operation};
use gnmi_proto::gnmi_ext::{self, commit::Action, extension::Ext};
use tonic::metadata::MetadataValue;
use tonic::{Response, Status};
use tracing::{info, warn};

use crate::auth::Caller;
use crate::backend::{Committed, pending_message};
use crate::decode::fragment;
use crate::errors;
use crate::path::Pattern;
use crate::service::{GnmiService, now_ns};

/// A commit confirmed made over gNMI, waiting for its confirmation.
#[derive(Clone, Debug)]
pub(crate) struct Waiting {
    pub id: String,
    pub commit_id: u64,
}

pub(crate) async fn set(
    service: &GnmiService,
    caller: &Caller,
    request: SetRequest,
) -> Result<Response<SetResponse>, Status> {
    if !caller.role.may_set() {
        return Err(Status::permission_denied(format!(
            "user {} has role {}, which may not change the configuration (Set needs admin)",
            caller.user,
            caller.role.as_str()
        )));
    }
    if !request.union_replace.is_empty() {
        return Err(Status::unimplemented(
            "union_replace is not supported; use replace",
        ));
    }
    let commit = commit_extension(&request.extension)?;
    let (edits, results) = edits(service, &request).await?;
    // One Set at a time decides about the waiting commit confirmed.
    let mut waiting = service.waiting.lock().await;
    let outcome = match commit {
        None => plain(service, caller, edits, &mut waiting).await?,
        Some(commit) => confirmed(service, caller, edits, commit, &mut waiting).await?,
    };
    drop(waiting);
    let mut response = Response::new(SetResponse {
        prefix: request.prefix.clone(),
        response: results,
        timestamp: now_ns(),
        ..SetResponse::default()
    });
    for w in &outcome.warnings {
        warn!(warning = %w, "committed with a warning");
        if let Ok(value) = MetadataValue::try_from(ascii(&w.to_string())) {
            response.metadata_mut().append("efb-warning", value);
        }
    }
    info!(commit = ?outcome.commit_id, warnings = outcome.warnings.len(), "Set committed");
    Ok(response)
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
    service: &GnmiService,
    request: &SetRequest,
) -> Result<(Vec<Edit>, Vec<UpdateResult>), Status> {
    let schema = &service.schema;
    let prefix = request.prefix.as_ref();
    let mut edits = Vec::new();
    let mut results = Vec::new();
    for path in &request.delete {
        let context = format!("delete {}: ", shown(path));
        let pattern =
            Pattern::parse(schema, prefix, Some(path)).map_err(|e| errors::path(&context, e))?;
        if pattern.has_wildcards() {
            // What the wildcards select now; the commit rebases onto anything newer.
            let snapshot = service.backend.snapshot().await.map_err(errors::backend)?;
            for data_path in pattern.expand(schema, &snapshot.running) {
                edits.push(Edit::Remove { path: data_path });
            }
        } else {
            let data_path = pattern
                .data_path(schema)
                .map_err(|e| errors::path(&context, e))?;
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
            let context = format!("{verb} {}: ", shown(&path));
            let pattern = Pattern::parse(schema, prefix, Some(&path))
                .map_err(|e| errors::path(&context, e))?;
            let data_path = pattern
                .data_path(schema)
                .map_err(|e| errors::path(&context, e))?;
            if let Some(id) = data_path.node()
                && !schema.node(id).config
            {
                return Err(Status::invalid_argument(format!(
                    "{context}{} is state (config false): it cannot be set",
                    data_path.display(schema)
                )));
            }
            let data = fragment(schema, &data_path, update.val.as_ref())
                .map_err(|e| errors::decode(&context, e))?;
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

/// A gNMI path for messages: `/a/b[k=v]`.
fn shown(path: &gnmi::Path) -> String {
    let mut out = String::new();
    if !path.origin.is_empty() {
        out.push_str(&path.origin);
        out.push(':');
    }
    for elem in &path.elem {
        out.push('/');
        out.push_str(&elem.name);
        let mut keys: Vec<_> = elem.key.iter().collect();
        keys.sort();
        for (k, v) in keys {
            out.push_str(&format!("[{k}={v}]"));
        }
    }
    if path.elem.is_empty() {
        out.push('/');
    }
    out
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
    service: &GnmiService,
    waiting: &mut Option<Waiting>,
) -> Result<Option<crate::backend::Pending>, Status> {
    let pending = service.backend.pending().await.map_err(errors::backend)?;
    if waiting
        .as_ref()
        .is_some_and(|w| pending.as_ref().is_none_or(|p| p.commit_id != w.commit_id))
    {
        *waiting = None;
    }
    Ok(pending)
}

async fn plain(
    service: &GnmiService,
    caller: &Caller,
    edits: Vec<Edit>,
    waiting: &mut Option<Waiting>,
) -> Result<Committed, Status> {
    if let Some(pending) = current(service, waiting).await? {
        return Err(Status::failed_precondition(pending_message(&pending)));
    }
    service
        .backend
        .commit_unless_pending(&caller.user, edits, None)
        .await
        .map_err(errors::backend)
}

async fn confirmed(
    service: &GnmiService,
    caller: &Caller,
    edits: Vec<Edit>,
    commit: gnmi_ext::Commit,
    waiting: &mut Option<Waiting>,
) -> Result<Committed, Status> {
    if commit.id.is_empty() {
        return Err(Status::invalid_argument("the commit extension needs an id"));
    }
    let pending = current(service, waiting).await?;
    match commit.action {
        Some(Action::Commit(request)) => {
            if let Some(pending) = pending {
                return Err(Status::failed_precondition(pending_message(&pending)));
            }
            let wait = rollback_wait(request.rollback_duration)?;
            let outcome = service
                .backend
                .commit_unless_pending(&caller.user, edits, Some(wait))
                .await
                .map_err(errors::backend)?;
            if let Some(commit_id) = outcome.commit_id {
                info!(id = %commit.id, commit_id, seconds = wait.as_secs(), "commit confirmed started");
                *waiting = Some(Waiting {
                    id: commit.id,
                    commit_id,
                });
            }
            Ok(outcome)
        }
        Some(Action::Confirm(_)) | Some(Action::Cancel(_)) => {
            if !edits.is_empty() {
                return Err(Status::invalid_argument(
                    "a confirm or cancel carries no changes; send them in a Set of their own",
                ));
            }
            let Some(pending) = pending else {
                return Err(Status::failed_precondition(
                    "no commit confirmed is waiting",
                ));
            };
            match waiting.as_ref() {
                Some(w) if w.id == commit.id => {}
                Some(w) => {
                    return Err(Status::invalid_argument(format!(
                        "commit id \"{}\" does not match the waiting commit confirmed (\"{}\")",
                        commit.id, w.id
                    )));
                }
                None => {
                    return Err(Status::invalid_argument(format!(
                        "commit id \"{}\" does not match: the waiting commit {} was not made over gNMI",
                        commit.id, pending.commit_id
                    )));
                }
            }
            let confirm = matches!(commit.action, Some(Action::Confirm(_)));
            let done = if confirm {
                service.backend.confirm().await
            } else {
                service.backend.cancel().await
            }
            .map_err(errors::backend)?;
            info!(id = %commit.id, commit_id = ?done, confirm, "commit confirmed ended");
            *waiting = None;
            Ok(Committed::default())
        }
        Some(Action::SetRollbackDuration(_)) => Err(Status::unimplemented(
            "set_rollback_duration is not supported: cancel and commit again",
        )),
        None => Err(Status::invalid_argument(
            "the commit extension has no action",
        )),
    }
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
