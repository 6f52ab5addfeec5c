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
