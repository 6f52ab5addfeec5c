//! Liveness of the filter pairs (DOMAIN.md, "Liveness and software bypass"): the keep-alive
//! frames ([`keepalive`]) and the state machine that sends them and judges what comes back
//! ([`engine`]). No I/O and no clock of its own: the daemon sends what [`Engine::tick`]
//! returns, hands back what the chip returns, and says what time it is, so tests can run
//! hours of probing in microseconds.

pub mod engine;
pub mod keepalive;

pub use engine::{Change, Engine, PairSpec, PairState, PairStatus, Probe, Timing};
pub use keepalive::{Direction, KeepAlive, KeepAliveError};
