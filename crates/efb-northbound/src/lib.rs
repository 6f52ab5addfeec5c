//! What every client of the balancer goes through before and after its request, whatever
//! its protocol: gNMI (efb-gnmi) and the management API (efbd's service) are adapters that
//! turn their messages into these decisions.
//!
//! - [`auth`]: who the caller is: users and passwords (the users file), client
//!   certificates; [`argon`] runs the password checks in bounded memory, `login` holds the
//!   budgets of failed logins (refused per user and address, slowed per user and in all). [`tls`]: the server certificate and the client CA.
//! - [`request`]: every request a client can make, whatever its protocol: the role it
//!   needs and how the audit names it.
//! - [`access`]: what a role may do, the one decision for every API.
//! - [`audit`]: who did what, one record per change or refusal.
//! - [`listen`]: bounded connections (limits in all and per peer, deadlines for the
//!   handshake and the first request, keepalive); [`guard`]: callers judged from a
//!   request's head, before its body is read, its messages held against the [`budget`]
//!   (what [`decoded`] says they decode to included) before tonic takes them in.
//! - [`published`]: what the configuration owner publishes to every API (snapshots of
//!   configuration and state, the commit confirmed waiting).
//! - [`status`]: the gRPC code of each kind of refusal, and messages cut to a bound.

pub mod access;
pub mod argon;
pub mod audit;
pub mod auth;
pub mod budget;
pub mod caller;
pub mod decoded;
pub mod guard;
pub mod judge;
pub mod listen;
mod login;
pub mod published;
pub mod request;
pub mod status;
pub mod tls;

pub use auth::{Login, Role, Users};
pub use caller::Caller;
pub use tls::TlsIdentity;
