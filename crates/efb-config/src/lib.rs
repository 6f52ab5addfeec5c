//! The parts of `efb-config` that are more than argument handling: comparing the balancing
//! configurations of crossed balancers (`hash-compare`), read from saved files or from
//! running balancers over gNMI.

pub mod compare;
pub mod difference;
pub mod fetch;
pub mod inventory;
