//! The software target's control service (inject and read frames, filter faults, port
//! counters, restarts), generated from `proto/efb/target/v1/control.proto`: one crate for
//! the target that serves it and for the clients (tests, the demo, efbd's port counters).

#![allow(clippy::all, clippy::pedantic, missing_docs)]

include!(concat!(env!("OUT_DIR"), "/efb.target.v1.rs"));
