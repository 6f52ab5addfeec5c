//! The balancer's configuration as typed values ([`Config`]), read from a data tree
//! ([`read`]), the rules of MODEL.md that YANG cannot express ([`rules`]), and the complete
//! validation a commit runs: libyang, then the rules ([`validation`]).

pub mod paths;
pub mod protocols;
pub mod read;
pub mod regions;
pub mod rules;
pub mod types;
pub mod validation;

pub use read::{ModelIds, ReadError};
pub use types::*;
