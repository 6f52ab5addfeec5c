//! efbd, the EcoFilter Balancer daemon, in floors, each a folder: the doors clients come
//! in by ([`northbound`]: the management API the shell uses on a Unix socket, the model's
//! operations, gNMI and its OpenConfig interfaces); the one [`owner`] of the configuration
//! (one thread holding the datastore, which none of the doors import); the [`chip`] below it
//! (the southbound driver, the board, links and liveness); the operational [`state`] and
//! metrics; what efbd tells ([`record`]: the audit, the events, the log); its [`settings`];
//! and what it needs of the [`process`] and its files (the datastore directory, the
//! open-file limit, systemd's readiness).

pub mod chip;
pub mod northbound;
pub mod owner;
pub mod process;
pub mod record;
pub mod settings;
pub mod state;
