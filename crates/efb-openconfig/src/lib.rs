//! OpenConfig interfaces over gNMI, as a Stratum switch serves its ports: the state and
//! counters of each interface under `/interfaces/interface[name=...]`
//! (`openconfig-interfaces`, `openconfig-if-ethernet`), Get, Set of `config/enabled`
//! (admin-status), and Subscribe (ON_CHANGE for oper- and admin-status, SAMPLE for
//! counters).
//!
//! - [`interface`]: an interface and the one table of the leaves served.
//! - [`query`]: gNMI paths against those leaves.
//! - [`encode`]: values in PROTO, JSON and JSON_IETF; [`object`]: a subtree as one RFC 7951
//!   object.
//! - [`server`] / [`subscribe`]: the answers, from any [`Source`] of interfaces;
//!   [`service`]: the whole gNMI service (efb-target serves it; efbd routes its
//!   `openconfig` origin to the same answers).
//! - [`client`]: interfaces read back from replies (efbd's driver).

pub mod client;
pub mod encode;
pub mod interface;
pub mod object;
pub mod query;
pub mod server;
pub mod service;
pub mod subscribe;

pub use interface::{Counter, Counters, Interface};
pub use query::{ORIGIN, is_openconfig};
pub use server::{Change, Setting, Source};
pub use service::InterfacesService;
