//! The southbound: the running configuration compiled into P4Runtime entries for
//! `p4/efb.p4` ([`compile`]), the difference planned in safe phases ([`plan`]), written
//! through a P4Runtime connection ([`client`]) by the [`driver`], which also reconciles the
//! chip at every (re)connection. [`frame_classes`] computes the pre-classification of the
//! flows (the `frame_classes` table, each flow's class match, and a layout kept from commit
//! to commit); `compile` keeps it up to date flow by flow.

pub mod client;
pub mod compile;
pub mod criteria;
pub mod driver;
pub mod entry;
pub mod frame_classes;
pub mod ids;
pub mod keepalive;
pub mod plan;
pub mod platform;
pub mod regions;

pub use compile::{Compiled, Compiler, Desired, Group};
pub use driver::{Driver, DriverCounts, DriverSettings, DriverStatus, LivenessWrites};
pub use plan::{Op, Plan, Tables};
