//! The southbound: the running configuration compiled into P4Runtime entries for
//! `p4/efb.p4` ([`compile`]), the difference planned in safe phases ([`plan`]), written
//! through a P4Runtime connection ([`client`]) by the [`driver`], which also reconciles the
//! chip at every (re)connection. [`l2_classes`] computes the Ethernet-layer
//! pre-classification of the flows (the `l2_classes` table and each flow's class match).

pub mod client;
pub mod compile;
pub mod driver;
pub mod entry;
pub mod ids;
pub mod l2_classes;
pub mod plan;
pub mod platform;
pub mod regions;

pub use compile::{Compiled, Compiler, Desired, Group};
pub use driver::{Driver, DriverCounts, DriverSettings, DriverStatus, LivenessWrites};
pub use plan::{Op, Plan, Tables};
