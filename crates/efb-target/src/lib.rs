//! The software target: a P4Runtime server that behaves like the Tofino chip running
//! `p4/efb.p4` (PIPELINE.md). It validates writes as a real target does (two strictness
//! profiles: the P4Runtime specification, and what Stratum on Tofino accepts), keeps the
//! tables, counters, registers and multicast groups, forwards frames through an emulation
//! of the program, emulates the filters behind pair ports (delay, loss, death), serves its
//! ports as OpenConfig interfaces over gNMI as Stratum does ([`interfaces`]), and offers a
//! control interface (`efb.target.v1.TargetControl`) for tests and demos.

pub mod arbitration;
pub mod bytes;
pub mod checks;
pub mod control;
pub mod device;
pub mod device_config;
pub mod error;
pub mod filters;
pub mod frames;
pub mod interfaces;
pub mod metrics;
pub mod packet;
pub mod ports;
pub mod profile;
pub mod program;
pub mod read;
pub mod registers;
pub mod replication;
pub mod server;
pub mod tables;
pub mod write;

pub use device::{Device, DeviceOptions};
pub use profile::Profile;
pub use server::{Servers, serve};

/// Generated code of the control service.
pub use efb_target_proto as control_proto;
