//! The balancer's gNMI server. [`backend`] is what it needs from efbd.

pub mod backend;
