//! Who may call which method of the management API, judged from the request's head before
//! its body is read ([`efb_northbound::guard`]): an account in no group sending a 400 MiB Load
//! is refused with nothing read. Each method needs the least role of what it can do (a
//! Call may be a lookup, which a viewer may make: its handler judges the rest once it
//! knows which operation is called). Only the methods that carry configuration may send
//! large messages, and only admins may call them.

use std::sync::Arc;

use efb_northbound::Role;
use efb_northbound::audit::Audit;
use efb_northbound::caller::Caller;
use efb_northbound::judge::{Protocol, RoleJudge, SMALL_MESSAGE};
use efb_northbound::request::Kind;
use tonic::{Request, Status};

use crate::northbound::callers::Callers;
use crate::northbound::errors::bounded;

/// The request a method of the API (the gRPC path's last part) makes; None for a method
/// the API does not have.
fn kind(method: &str) -> Option<Kind> {
    Kind::ALL
        .into_iter()
        .find(|kind| kind.management_method() == Some(method))
}

/// The management API as its judge sees it: callers are the Unix account on the socket,
/// or a user logging in over TCP; the methods' kinds above.
pub struct Management {
    callers: Arc<Callers>,
    /// The largest message of a request that carries configuration.
    max_message: usize,
}

/// The management API's judge: the caller, and whether its role may call the method;
/// refusals audited ([`efb_northbound::judge`], gNMI's too).
pub type ManagementJudge = RoleJudge<Management>;

/// The judge of the management API.
pub fn judge(callers: Arc<Callers>, audit: Audit, max_message: usize) -> ManagementJudge {
    RoleJudge::new(
        Management {
            callers,
            max_message,
        },
        audit,
    )
}

#[tonic::async_trait]
impl Protocol for Management {
    fn method(&self, path: &str) -> Option<(Kind, usize)> {
        let kind = kind(path.rsplit('/').next().unwrap_or_default())?;
        let largest = if kind.large() {
            self.max_message
        } else {
            SMALL_MESSAGE
        };
        Some((kind, largest))
    }

    async fn identify(&self, head: &Request<()>) -> Result<Caller, Status> {
        self.callers.identify(head).await.map_err(bounded)
    }

    fn hint(&self, caller: &Caller) -> String {
        self.callers.hint(caller)
    }

    /// The Unix account, or the address.
    async fn known_without_login(&self, head: &Request<()>) -> (String, Option<Role>, String) {
        match self.callers.known_without_login(head).await {
            Some(caller) => (caller.name, caller.role, caller.from),
            None => (
                "(not logged in)".to_string(),
                None,
                efb_northbound::listen::remote_addr(head)
                    .map_or_else(|| "TCP".to_string(), |a| format!("TCP {a}")),
            ),
        }
    }

    fn service(&self) -> &'static str {
        "the management API"
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
        // Both ways: a kind naming a method the API lacks would never be admitted.
        for named in Kind::ALL.into_iter().filter_map(Kind::management_method) {
            assert!(
                methods.contains(&named),
                "{named} is not a method of the API"
            );
        }
        for method in methods {
            assert!(
                kind(method).is_some(),
                "{method} has no kind (efb_northbound::request::Kind::management_method)"
            );
        }
        assert_eq!(kind("Load"), Some(Kind::Load));
        assert!(Kind::Load.large() && !Kind::Show.large());
        assert_eq!(kind("Get").map(Kind::operation), Some(Operation::Show));
    }
}
