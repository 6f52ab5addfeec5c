//! Who may call which method of the management API, judged from the request's head before
//! its body is read ([`efb_northbound::guard`]): an account in no group sending a 400 MiB Load
//! is refused with nothing read. Each method needs the least role of what it can do (a
//! Call may be a lookup, which a viewer may make: its handler judges the rest once it
//! knows which operation is called). Only the methods that carry configuration may send
//! large messages, and only admins may call them.

use std::sync::Arc;

use efb_northbound::access::{self, Operation};
use efb_northbound::audit::{self, Audit, Kind, Record};
use efb_northbound::guard::{Admitted, Judge};
use tonic::{Request, Status};

use crate::callers::{Caller, Callers};
use crate::errors::bounded;

/// Largest message of a request that carries no configuration (gRPC's own default): a
/// shell's requests are a few hundred bytes.
const SMALL_MESSAGE: usize = 4 * 1024 * 1024;

/// What a method of the API needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Need {
    /// The least role of what it can do.
    operation: Operation,
    /// It carries configuration: large messages.
    large: bool,
    /// The shell's words for it, for the audit of a refusal (its body is not read).
    words: &'static str,
}

/// What `method` (the gRPC path's last part) needs; None for a method the API does not
/// have.
fn needs(method: &str) -> Option<Need> {
    let (operation, large, words) = match method {
        "Hello" => (Operation::Show, false, "connect a shell"),
        "Status" => (Operation::Show, false, "show system status"),
        "OpenSession" => (Operation::Show, false, "open a session"),
        "CloseSession" => (Operation::Show, false, "close a session"),
        "Compare" => (Operation::Show, false, "show | compare"),
        "History" => (Operation::Show, false, "show system commit"),
        "CommitChanges" => (Operation::Show, false, "show system commit N"),
        "Get" => (Operation::Show, false, "show"),
        "ListKeys" => (Operation::Show, false, "list keys"),
        "Audit" => (Operation::Show, false, "show system audit"),
        "RecentEvents" => (Operation::Show, false, "show log"),
        "WatchEvents" => (Operation::Show, false, "watch events"),
        "Call" => (Operation::Lookup, false, "call"),
        "ClearStatistics" => (Operation::Clear, false, "clear statistics"),
        "EditLines" => (Operation::Edit, true, "edit"),
        "Load" => (Operation::Edit, true, "load"),
        "Discard" => (Operation::Edit, false, "discard"),
        "Rollback" => (Operation::Edit, false, "rollback"),
        "Commit" => (Operation::Commit, false, "commit"),
        "Confirm" => (Operation::Confirm, false, "commit confirm"),
        "Save" => (Operation::Save, false, "save"),
        "Logout" => (Operation::Logout, false, "request system logout"),
        _ => return None,
    };
    Some(Need {
        operation,
        large,
        words,
    })
}

/// The management API's judge: the caller (the Unix account, or a user logging in over
/// TCP), and whether its role may call the method. Refusals are audited.
pub struct ManagementJudge {
    callers: Arc<Callers>,
    audit: Audit,
    /// The largest message of a request that carries configuration.
    max_message: usize,
}

impl ManagementJudge {
    pub fn new(callers: Arc<Callers>, audit: Audit, max_message: usize) -> ManagementJudge {
        ManagementJudge {
            callers,
            audit,
            max_message,
        }
    }
}

#[tonic::async_trait]
impl Judge for ManagementJudge {
    type Caller = Caller;

    async fn judge(&self, head: &Request<()>, path: &str) -> Result<Admitted<Caller>, Status> {
        let caller = self.callers.identify(head).await.map_err(bounded)?;
        let method = path.rsplit('/').next().unwrap_or_default();
        let Some(need) = needs(method) else {
            // Unknown to the API: tonic answers UNIMPLEMENTED, without a large body.
            return Ok(Admitted {
                admin: caller.is_admin(),
                max_message: 0,
                caller,
            });
        };
        if let Err(denied) = access::may(caller.role, need.operation) {
            let message = denied.message(&caller.name) + &self.callers.hint(&caller);
            let refused = Status::permission_denied(message);
            self.audit.record(Record {
                time_ms: audit::now_ms(),
                user: caller.name.clone(),
                role: caller.role,
                from: caller.from.clone(),
                what: format!("{} (refused before its body was read)", need.words),
                accepted: false,
                result: audit::refusal(&refused),
                kind: Kind::Access,
            });
            return Err(refused);
        }
        Ok(Admitted {
            admin: caller.is_admin(),
            max_message: if need.large {
                self.max_message
            } else {
                SMALL_MESSAGE
            },
            caller,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_method_of_the_api_has_its_role() {
        let proto = include_str!("../../../proto/efb/mgmt/v1/mgmt.proto");
        let methods: Vec<&str> = proto
            .lines()
            .filter_map(|l| l.trim().strip_prefix("rpc "))
            .filter_map(|l| l.split('(').next())
            .collect();
        assert!(methods.len() > 20, "{methods:?}");
        for method in methods {
            assert!(
                needs(method).is_some(),
                "{method} has no role in admission.rs"
            );
        }
        let load = needs("Load").unwrap();
        assert_eq!((load.operation, load.large), (Operation::Edit, true));
        let get = needs("Get").unwrap();
        assert_eq!((get.operation, get.large), (Operation::Show, false));
    }
}
