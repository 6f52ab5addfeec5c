//! efbd, the EcoFilter Balancer daemon: it owns the datastore (one thread, see [`owner`])
//! and serves the management API the shell uses ([`service`], on a Unix [`socket`], its
//! callers identified by [`callers`]), the model's operations ([`rpcs`]) and gNMI
//! ([`gnmi_server`]); changes and refusals go to the [`audit`] log. The owner imports none
//! of the servers. What operators watch for (commits, liveness, the chip) are [`events`],
//! logged as [`logging`] sets up and kept for `show log`.

pub mod admission;
pub mod audit;
pub mod baselines;
pub mod board;
pub mod callers;
pub mod chip;
pub mod errors;
pub mod events;
pub mod gnmi_backend;
pub mod gnmi_server;
pub mod held;
pub mod instruments;
pub mod links;
pub mod liveness;
pub mod logging;
pub mod metrics;
pub mod notify;
pub mod open_files;
pub mod openconfig;
pub mod owner;
pub mod rpcs;
pub mod service;
pub mod settings;
pub mod socket;
pub mod state;
pub mod state_dir;
