//! What stands between a validated candidate and running: the chip. A commit only becomes
//! running once the southbound has applied it; if the southbound refuses, nothing changes.

use crate::types::Running;
use efb_chip::{ChipError, ChipWrites};

/// Programs the configuration into the data plane.
pub trait Southbound: Send {
    /// Makes the data plane hold `next` instead of `current`. On error the data plane must
    /// be left as it was, and the error says what was refused and why (the configuration
    /// path). `offline_ok`: when the data plane cannot be reached, accept anyway and program
    /// it when it can. Says what was written.
    fn apply(
        &mut self,
        current: &Running,
        next: &Running,
        offline_ok: bool,
    ) -> Result<ChipWrites, ChipError>;

    /// What `apply` would write, for `commit check`; writes nothing.
    fn preview(&mut self, current: &Running, next: &Running) -> ChipWrites;
}

/// No data plane: the configuration is only managed (tests, offline use).
pub struct NoChip;

impl Southbound for NoChip {
    fn apply(
        &mut self,
        _current: &Running,
        _next: &Running,
        _offline_ok: bool,
    ) -> Result<ChipWrites, ChipError> {
        Ok(ChipWrites::NoChip)
    }

    fn preview(&mut self, _current: &Running, _next: &Running) -> ChipWrites {
        ChipWrites::NoChip
    }
}
