//! Liveness of the filter pairs (DOMAIN.md, "Liveness and software bypass"): the keep-alive
//! frames ([`keepalive`]), what the chip records of them ([`records`]) and the state machine
//! that sends rounds and judges those records ([`engine`]). No I/O and no clock of its own:
//! the daemon sends what [`Engine::tick`] returns, reads what [`Engine::wanted`] names and
//! hands it to [`Engine::recorded`], and says what time it is, so tests can run hours of
//! probing in microseconds.

pub mod engine;
pub mod keepalive;
pub mod records;
mod tally;

pub use engine::{Change, Engine, PairSpec, PairState, PairStatus, Round, Timing};
pub use keepalive::{Direction, KeepAlive, KeepAliveError};
pub use records::{Records, Returned, Tally, Wanted};
