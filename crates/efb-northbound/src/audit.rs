//! Who did what: one record per accepted change, and per access (a session opened or
//! closed, any request refused, for the caller's role or for what it asked), from the
//! management API and from gNMI, written to the tracing log here and handed to the
//! daemon's [`Sink`] (efbd keeps changes and accesses in files of their own, so that a
//! flood of refusals never pushes a change out, and `show system audit` reads both).

use std::sync::Arc;

use efb_yang::text::escaped;
use tonic::Status;
use tracing::{info, warn};

use crate::auth::Role;
use crate::caller::Caller;
use crate::request::{Kind as RequestKind, Request};

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
    /// An accepted change (configuration, state, a session closed by an admin, a role).
    #[default]
    Change,
    /// A session opened or closed by its own client, or any refusal: anyone can make many
    /// of these.
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

    /// Records what `caller` asked: accepted with the words of its result, or refused
    /// with its status. Filed as a change (a refusal is filed as an access).
    pub fn request(&self, caller: &Caller, asked: &Request, result: Result<String, &Status>) {
        self.by(caller, asked.describe(), result);
    }

    /// Records a request of `kind` refused for the caller's role before its body was read.
    pub fn refused_early(&self, caller: &Caller, kind: RequestKind, refused: &Status) {
        let what = format!("{} (refused before its body was read)", kind.words());
        self.by(caller, what, Err(refused));
    }

    fn by(&self, caller: &Caller, what: String, result: Result<String, &Status>) {
        self.record(Record {
            time_ms: now_ms(),
            user: caller.name.clone(),
            role: caller.role,
            from: caller.from.clone(),
            what,
            accepted: result.is_ok(),
            result: result.unwrap_or_else(refusal),
            kind: Kind::Change,
        });
    }

    /// Records one request: logged (info accepted, warn refused) and kept. A refusal is
    /// an access whatever it asked: a change refused (for bad input too) changed nothing,
    /// and anyone with a role can make refusals by the thousand, which must not push the
    /// changes out of their log.
    pub fn record(&self, mut record: Record) {
        if !record.accepted {
            record.kind = Kind::Access;
        }
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
    use std::sync::Mutex;

    #[derive(Default)]
    pub(crate) struct Kept(Mutex<Vec<Record>>);

    impl Sink for Kept {
        fn record(&self, record: &Record) {
            self.0.lock().unwrap().push(record.clone());
        }
    }

    #[test]
    fn records_reach_the_sink_bounded_and_without_control_characters() {
        let kept = Arc::new(Kept::default());
        let audit = Audit::new(kept.clone());
        audit.record(Record {
            time_ms: now_ms(),
            user: "ada".into(),
            role: Some(Role::Viewer),
            from: "gNMI 10.0.0.1:5000".into(),
            what: format!("Set: {}\x1b", "x".repeat(1000)),
            accepted: false,
            result: refusal(&Status::permission_denied("no\nmore")),
            kind: Kind::Access,
        });
        let records = kept.0.lock().unwrap();
        assert_eq!(records.len(), 1);
        let r = &records[0];
        assert_eq!(r.result, "PermissionDenied: no");
        assert!(!r.accepted && r.what.len() < 420 && !r.what.contains('\x1b'));
        assert!(r.what.ends_with("..."), "{}", r.what);
    }

    #[test]
    fn a_change_refused_for_what_it_asked_is_an_access_and_an_accepted_one_a_change() {
        let kept = Arc::new(Kept::default());
        let audit = Audit::new(kept.clone());
        let call = |accepted: bool, result: &str| Record {
            time_ms: now_ms(),
            user: "otto".into(),
            role: Some(Role::Operator),
            from: "unix socket, uid 1002, pid 1".into(),
            what: "call set-bypass-ecofilter-unit {\"mode\":\"sideways\"}".into(),
            accepted,
            result: result.into(),
            kind: Kind::Change,
        };
        let invalid = Status::invalid_argument("mode: expected auto, bypass or primary");
        audit.record(call(false, &refusal(&invalid)));
        audit.record(call(true, "done"));
        let kinds: Vec<Kind> = kept.0.lock().unwrap().iter().map(|r| r.kind).collect();
        assert_eq!(kinds, [Kind::Access, Kind::Change]);
    }
}
