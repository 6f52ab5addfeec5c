//! The doors: every way a client reaches efbd, each a thin translation of its protocol
//! into jobs for the configuration owner. The management API ([`service`] on a Unix
//! [`socket`], its [`callers`] identified by the kernel, admitted by role before the body
//! is read: [`admission`]; sessions [`held`] by their stream; [`errors`] as gRPC statuses),
//! the model's operations ([`rpcs`]), and gNMI ([`gnmi_server`], [`gnmi_backend`], the
//! ports as OpenConfig interfaces: [`openconfig`]).

pub mod admission;
pub mod callers;
pub mod errors;
pub mod gnmi_backend;
pub mod gnmi_server;
pub mod held;
pub mod openconfig;
pub mod rpcs;
pub mod service;
pub mod socket;
