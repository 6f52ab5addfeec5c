//! The one judge of every door: a request's head names the caller and the method; the
//! method's [`Kind`] says which operation it is and so the role it needs
//! ([`access::may`]); a refusal is the same status and the same audit record whatever the
//! protocol. Each protocol says only what differs: how it knows its callers and its
//! methods ([`Protocol`]); every door's caller is the one [`Caller`].

use tonic::{Request, Status};

use crate::access;
use crate::audit::{self, Audit, Record};
use crate::auth::Role;
use crate::caller::Caller;
use crate::guard::{Admitted, Judge};
use crate::request::Kind;

/// Largest message of a request that carries no configuration (a shell's requests, a Get,
/// a Subscribe): gRPC's own default.
pub const SMALL_MESSAGE: usize = 4 * 1024 * 1024;

/// What a door tells the judge.
#[tonic::async_trait]
pub trait Protocol: Send + Sync + 'static {
    /// The request a method (the gRPC path) makes, and the largest message it may send;
    /// None for a method the service does not have.
    fn method(&self, path: &str) -> Option<(Kind, usize)>;

    /// Who the head names (a login, a certificate, the kernel's word).
    async fn identify(&self, head: &Request<()>) -> Result<Caller, Status>;

    /// What a refusal tells the caller beyond the role it lacks (how to get it).
    fn hint(&self, _caller: &Caller) -> String {
        String::new()
    }

    /// Who the head names without a login, for the audit of a method the service does not
    /// have: the user (or "(not logged in)"), its role and where it came from.
    async fn known_without_login(&self, head: &Request<()>) -> (String, Option<Role>, String);

    /// The service's name in the audit ("the management API", "gNMI").
    fn service(&self) -> &'static str;
}

/// Judges a door's requests from their heads: the caller, and whether its role may call the
/// method; refusals audited.
pub struct RoleJudge<P> {
    protocol: P,
    audit: Audit,
}

impl<P: Protocol> RoleJudge<P> {
    pub fn new(protocol: P, audit: Audit) -> RoleJudge<P> {
        RoleJudge { protocol, audit }
    }
}

#[tonic::async_trait]
impl<P: Protocol> Judge for RoleJudge<P> {
    type Caller = Caller;

    async fn judge(&self, head: &Request<()>, path: &str) -> Result<Admitted<Caller>, Status> {
        // The guard refuses methods the service does not have before they get here.
        let (kind, max_message) = self
            .protocol
            .method(path)
            .ok_or_else(|| Status::unimplemented("no such method"))?;
        let caller = self.protocol.identify(head).await?;
        if let Err(denied) = access::may(caller.role, kind.operation()) {
            let message = denied.message(&caller.name) + &self.protocol.hint(&caller);
            let refused = Status::permission_denied(message);
            self.audit.refused_early(&caller, kind, &refused);
            return Err(refused);
        }
        Ok(Admitted {
            admin: caller.is_admin(),
            account: caller.name.clone(),
            max_message,
            caller,
        })
    }

    async fn refused_unknown(&self, head: &Request<()>, method: &str) {
        let (user, role, from) = self.protocol.known_without_login(head).await;
        self.audit.record(Record {
            time_ms: audit::now_ms(),
            user,
            role,
            from,
            what: format!("call {}", efb_yang::text::logged(method)),
            accepted: false,
            result: format!(
                "Unimplemented: {} has no such method",
                self.protocol.service()
            ),
            kind: audit::Kind::Access,
        });
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use efb_datastore::Holder;

    use super::*;
    use crate::audit::Sink;

    #[derive(Default)]
    struct Kept(Mutex<Vec<Record>>);

    impl Sink for Kept {
        fn record(&self, record: &Record) {
            self.0.lock().unwrap().push(record.clone());
        }
    }

    /// A door whose only caller is a viewer, with two methods.
    struct Door;

    #[tonic::async_trait]
    impl Protocol for Door {
        fn method(&self, path: &str) -> Option<(Kind, usize)> {
            match path {
                "/door/Get" => Some((Kind::Show, SMALL_MESSAGE)),
                "/door/Set" => Some((Kind::Set, 1 << 30)),
                _ => None,
            }
        }

        async fn identify(&self, _head: &Request<()>) -> Result<Caller, Status> {
            Ok(Caller {
                name: "vera".into(),
                role: Some(Role::Viewer),
                from: "door 10.0.0.1:5000".into(),
                uid: None,
                holder: Holder::new("user vera"),
            })
        }

        fn hint(&self, _caller: &Caller) -> String {
            " (ask an admin)".into()
        }

        async fn known_without_login(&self, _head: &Request<()>) -> (String, Option<Role>, String) {
            ("(not logged in)".into(), None, "door".into())
        }

        fn service(&self) -> &'static str {
            "the door"
        }
    }

    fn judge() -> (RoleJudge<Door>, Arc<Kept>) {
        let kept = Arc::new(Kept::default());
        (RoleJudge::new(Door, Audit::new(kept.clone())), kept)
    }

    #[tokio::test]
    async fn a_role_that_may_is_admitted_and_one_that_may_not_is_refused_and_audited() {
        let (judge, kept) = judge();
        let head = Request::new(());
        let admitted = judge.judge(&head, "/door/Get").await.unwrap();
        assert_eq!(
            (
                admitted.account.as_str(),
                admitted.admin,
                admitted.max_message
            ),
            ("vera", false, SMALL_MESSAGE)
        );
        assert!(
            kept.0.lock().unwrap().is_empty(),
            "an admission is not audited"
        );
        let Err(refused) = judge.judge(&head, "/door/Set").await else {
            panic!("a viewer was admitted to Set");
        };
        assert_eq!(refused.code(), tonic::Code::PermissionDenied);
        assert!(
            refused
                .message()
                .ends_with("vera has the viewer role (ask an admin)")
        );
        let records = kept.0.lock().unwrap();
        let r = &records[0];
        assert_eq!(
            (r.user.as_str(), r.from.as_str()),
            ("vera", "door 10.0.0.1:5000")
        );
        assert!(!r.accepted && r.kind == audit::Kind::Access);
        assert!(
            r.what.ends_with("(refused before its body was read)"),
            "{}",
            r.what
        );
    }

    #[tokio::test]
    async fn an_unknown_method_is_audited_escaped_with_the_service_s_name() {
        let (judge, kept) = judge();
        judge
            .refused_unknown(&Request::new(()), "/door/Nope\u{1b}[2J")
            .await;
        let records = kept.0.lock().unwrap();
        let r = &records[0];
        assert_eq!(r.user, "(not logged in)");
        assert_eq!(r.result, "Unimplemented: the door has no such method");
        assert!(!r.what.contains('\u{1b}'), "{}", r.what);
    }
}
