//! Who did what: one record per accepted or refused change, and per access (a session
//! opened or closed, a request refused for the caller's role), from the management API
//! and from gNMI, written to the tracing log here and handed to the daemon's [`Sink`]
//! (efbd keeps changes and accesses in files of their own, so that a flood of refusals
//! never pushes a change out, and `show system audit` reads both).

use std::fmt::Write as _;
use std::sync::Arc;

use efb_yang::text::escaped;
use gnmi_proto::gnmi::{Path, SetRequest};
use tonic::Status;
use tracing::{info, warn};

use crate::auth::{Caller, Role};

/// What the audit keeps of one request.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Record {
    /// Unix milliseconds.
    pub time_ms: u64,
    /// The user as authenticated: the Unix account, or the user of the users file.
    pub user: String,
    /// The role the request was judged with; none for an account in none of the groups.
    pub role: Option<Role>,
    /// Where it came from: "unix socket, uid 1001, pid 4242", "gNMI 10.0.0.1:52000".
    pub from: String,
    /// What was asked: "commit (comment \"x\")", "Set: update /ports/port[name=p1]".
    pub what: String,
    pub accepted: bool,
    /// "commit 12, 3 changes", or the reason of the refusal.
    pub result: String,
    #[serde(default)]
    pub kind: Kind,
}

/// What a record is about.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A change (configuration, state, a session closed by an admin, a role), accepted or
    /// refused for what it asked.
    #[default]
    Change,
    /// A session opened or closed by its own client, or a request refused for the
    /// caller's role: anyone can make many of these.
    Access,
}

/// Where the records go besides the log.
pub trait Sink: Send + Sync + 'static {
    fn record(&self, record: &Record);
}

/// The audit of a server: the log, and the sink when there is one.
#[derive(Clone, Default)]
pub struct Audit(Option<Arc<dyn Sink>>);

impl std::fmt::Debug for Audit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Audit(sink)"
        } else {
            "Audit(log only)"
        })
    }
}

/// Longest `what` or `result` kept: a refusal may quote a megabyte of input.
const MAX_TEXT: usize = 400;

impl Audit {
    pub fn new(sink: Arc<dyn Sink>) -> Audit {
        Audit(Some(sink))
    }

    /// Records one request: logged (info accepted, warn refused) and kept.
    pub fn record(&self, mut record: Record) {
        record.what = bounded(&record.what);
        record.result = bounded(&record.result);
        let role = record.role.map_or("none", Role::as_str);
        // `what` and `result` quote what clients sent (paths, names, comments): escaped, so
        // that they cannot forge lines of the text log.
        let (user, from) = (escaped(&record.user), escaped(&record.from));
        let (what, result) = (escaped(&record.what), escaped(&record.result));
        if record.accepted {
            info!(target: "audit", user = %user, role, from = %from, what = %what, result = %result, "accepted");
        } else {
            warn!(target: "audit", user = %user, role, from = %from, what = %what, result = %result, "refused");
        }
        if let Some(sink) = &self.0 {
            sink.record(&record);
        }
    }

    /// Records a gNMI Set by `caller`: `what` from [`describe_set`], and how it ended.
    pub fn gnmi_set<T>(&self, caller: &Caller, what: String, result: &Result<T, Status>) {
        let from = match caller.peer {
            Some(peer) => format!("gNMI {peer}"),
            None => "gNMI".to_string(),
        };
        self.record(Record {
            time_ms: now_ms(),
            user: caller.user.clone(),
            role: Some(caller.role),
            from,
            what,
            accepted: result.is_ok(),
            result: match result {
                Ok(_) => "committed".to_string(),
                Err(status) => refusal(status),
            },
            kind: match result {
                Err(status) if status.code() == tonic::Code::PermissionDenied => Kind::Access,
                _ => Kind::Change,
            },
        });
    }
}

/// A refusal in one line: its code and the first line of its message.
pub fn refusal(status: &Status) -> String {
    let first = status.message().lines().next().unwrap_or("");
    format!("{:?}: {first}", status.code())
}

/// Now, in Unix milliseconds.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// A Set in a line: its operations and the paths they name (the first few).
pub fn describe_set(request: &SetRequest) -> String {
    let prefix = request.prefix.as_ref();
    let mut parts: Vec<String> = Vec::new();
    parts.extend(request.delete.iter().map(|p| text("delete", prefix, p)));
    for (op, updates) in [("replace", &request.replace), ("update", &request.update)] {
        parts.extend(
            updates
                .iter()
                .map(|u| text(op, prefix, u.path.as_ref().unwrap_or(&Path::default()))),
        );
    }
    let total = parts.len();
    let mut what = format!(
        "Set: {}",
        parts.iter().take(5).cloned().collect::<Vec<_>>().join(", ")
    );
    if total > 5 {
        let _ = write!(what, " and {} more", total - 5);
    }
    if total == 0 {
        what.push_str("nothing");
    }
    what
}

fn text(op: &str, prefix: Option<&Path>, path: &Path) -> String {
    let mut out = format!("{op} ");
    for elem in prefix.into_iter().chain([path]).flat_map(|p| &p.elem) {
        out.push('/');
        out.push_str(&elem.name);
        let mut keys: Vec<_> = elem.key.iter().collect();
        keys.sort();
        for (k, v) in keys {
            let _ = write!(out, "[{k}={v}]");
        }
    }
    if out.len() == op.len() + 1 {
        out.push('/');
    }
    out
}

fn bounded(text: &str) -> String {
    let cleaned: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if cleaned.chars().count() <= MAX_TEXT {
        return cleaned;
    }
    let cut: String = cleaned.chars().take(MAX_TEXT).collect();
    format!("{cut}...")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use gnmi_proto::gnmi::{PathElem, Update};
    use std::sync::Mutex;

    #[derive(Default)]
    struct Kept(Mutex<Vec<Record>>);

    impl Sink for Kept {
        fn record(&self, record: &Record) {
            self.0.lock().unwrap().push(record.clone());
        }
    }

    fn path(names: &[&str]) -> Path {
        Path {
            elem: names
                .iter()
                .map(|n| PathElem {
                    name: n.to_string(),
                    key: [("name".to_string(), "p1".to_string())]
                        .into_iter()
                        .filter(|_| *n == "port")
                        .collect(),
                })
                .collect(),
            ..Path::default()
        }
    }

    #[test]
    fn a_set_is_described_by_its_operations_and_paths() {
        let request = SetRequest {
            delete: vec![path(&["ports", "port"])],
            update: vec![Update {
                path: Some(path(&["ecofilter-balancer"])),
                ..Update::default()
            }],
            ..SetRequest::default()
        };
        assert_eq!(
            describe_set(&request),
            "Set: delete /ports/port[name=p1], update /ecofilter-balancer"
        );
        assert_eq!(describe_set(&SetRequest::default()), "Set: nothing");
    }

    #[test]
    fn records_reach_the_sink_bounded_and_without_control_characters() {
        let kept = Arc::new(Kept::default());
        let audit = Audit::new(kept.clone());
        let caller = Caller {
            user: "ada".into(),
            role: Role::Viewer,
            peer: Some("10.0.0.1:5000".parse().unwrap()),
            certificate: false,
        };
        let refused: Result<(), Status> = Err(Status::permission_denied("no\nmore"));
        audit.gnmi_set(&caller, format!("Set: {}\x1b", "x".repeat(1000)), &refused);
        let records = kept.0.lock().unwrap();
        assert_eq!(records.len(), 1);
        let r = &records[0];
        assert_eq!(r.from, "gNMI 10.0.0.1:5000");
        assert_eq!(r.result, "PermissionDenied: no");
        assert!(!r.accepted && r.what.len() < 420 && !r.what.contains('\x1b'));
    }
}
