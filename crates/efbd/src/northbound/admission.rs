//! Who may call which method of the management API, judged from the request's head before
//! its body is read ([`efb_northbound::guard`]): an account in no group sending a 400 MiB Load
//! is refused with nothing read. Each method needs the least role of what it can do (a
//! Call may be a lookup, which a viewer may make: its handler judges the rest once it
//! knows which operation is called). Only the methods that carry configuration may send
//! large messages, and only admins may call them.

use std::sync::Arc;

use efb_northbound::access;
use efb_northbound::audit::{self, Audit, Record};
use efb_northbound::guard::{Admitted, Judge};
use efb_northbound::request::Kind;
use tonic::{Request, Status};

use crate::northbound::callers::{Caller, Callers};
use crate::northbound::errors::bounded;

/// Largest message of a request that carries no configuration (gRPC's own default): a
/// shell's requests are a few hundred bytes.
const SMALL_MESSAGE: usize = 4 * 1024 * 1024;

/// The request a method of the API (the gRPC path's last part) makes; None for a method
/// the API does not have.
fn kind(method: &str) -> Option<Kind> {
    Some(match method {
        "Hello" => Kind::Hello,
        "Status" => Kind::Status,
        "OpenSession" => Kind::OpenSession,
        "CloseSession" => Kind::CloseSession,
        "Compare" => Kind::Compare,
        "History" => Kind::History,
        "CommitChanges" => Kind::CommitChanges,
        "Get" => Kind::Show,
        "ListKeys" => Kind::ListKeys,
        "Audit" => Kind::Audit,
        "RecentEvents" => Kind::RecentEvents,
        "WatchEvents" => Kind::WatchEvents,
        "Call" => Kind::Call,
        "ClearStatistics" => Kind::ClearStatistics,
        "EditLines" => Kind::EditLines,
        "Load" => Kind::Load,
        "Discard" => Kind::Discard,
        "Rollback" => Kind::Rollback,
        "Commit" => Kind::Commit,
        "Confirm" => Kind::Confirm,
        "Save" => Kind::Save,
        "Logout" => Kind::Logout,
        _ => return None,
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
        let method = path.rsplit('/').next().unwrap_or_default();
        // The guard refuses methods the API does not have before they get here.
        let kind = kind(method).ok_or_else(|| Status::unimplemented("no such method"))?;
        let caller = self.callers.identify(head).await.map_err(bounded)?;
        if let Err(denied) = access::may(caller.role, kind.operation()) {
            let message = denied.message(&caller.name) + &self.callers.hint(&caller);
            let refused = Status::permission_denied(message);
            self.audit.record(Record {
                time_ms: audit::now_ms(),
                user: caller.name.clone(),
                role: caller.role,
                from: caller.from.clone(),
                what: format!("{} (refused before its body was read)", kind.words()),
                accepted: false,
                result: audit::refusal(&refused),
                kind: audit::Kind::Access,
            });
            return Err(refused);
        }
        Ok(Admitted {
            admin: caller.is_admin(),
            account: caller.name.clone(),
            max_message: if kind.large() {
                self.max_message
            } else {
                SMALL_MESSAGE
            },
            caller,
        })
    }

    /// Audited as far as the head tells without a login: the Unix account, or the address.
    async fn refused_unknown(&self, head: &Request<()>, method: &str) {
        let (user, role, from) = match self.callers.known_without_login(head).await {
            Some(caller) => (caller.name, caller.role, caller.from),
            None => (
                "(not logged in)".to_string(),
                None,
                efb_northbound::listen::remote_addr(head)
                    .map_or_else(|| "TCP".to_string(), |a| format!("TCP {a}")),
            ),
        };
        self.audit.record(Record {
            time_ms: audit::now_ms(),
            user,
            role,
            from,
            what: format!("call {}", efb_yang::text::logged(method)),
            accepted: false,
            result: "Unimplemented: the management API has no such method".into(),
            kind: audit::Kind::Access,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use efb_northbound::access::Operation;

    #[test]
    fn every_method_of_the_api_has_its_role() {
        let proto = include_str!("../../../../proto/efb/mgmt/v1/mgmt.proto");
        let methods: Vec<&str> = proto
            .lines()
            .filter_map(|l| l.trim().strip_prefix("rpc "))
            .filter_map(|l| l.split('(').next())
            .collect();
        assert!(methods.len() > 20, "{methods:?}");
        for method in methods {
            assert!(
                kind(method).is_some(),
                "{method} has no kind in admission.rs"
            );
        }
        assert_eq!(kind("Load"), Some(Kind::Load));
        assert!(Kind::Load.large() && !Kind::Show.large());
        assert_eq!(kind("Get").map(Kind::operation), Some(Operation::Show));
    }
}
