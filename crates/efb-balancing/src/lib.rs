//! The balancing algorithm and the balancing-config-hash of MODEL.md, in one place so that the
//! daemon (lookup-session), the chip compiler (bucket tables) and the offline comparison tool
//! cannot drift apart: crossed balancers only agree if every one of them computes exactly this.

mod config_hash;
mod error;
#[cfg(test)]
mod fixtures;
mod forecast;
mod key;
mod layout;
mod liveness;
mod lookup;
pub mod matching;
mod moves;

pub use config_hash::{config_hash, config_hash_text};
pub use error::BalancingError;
pub use forecast::flow_consequences;
pub use key::{Session, has_ports, session_hash, session_key};
pub use layout::{UnitLayout, bucket_table};
pub use liveness::{BypassMode, LiveState, unit_active};
pub use lookup::{Lookup, lookup_session};
pub use moves::{UnitMoves, bucket_moves};
