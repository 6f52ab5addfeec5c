//! The chip's side of a commit as data, between the datastore (which only knows that a
//! southbound stands between a candidate and running) and the P4Runtime driver (which
//! programs the chip): what a commit wrote or a check would write ([`ChipWrites`]), and why
//! the chip refused ([`ChipError`]). Clients say them in their own words.

mod error;
mod writes;

pub use error::{ChipError, ChipErrorKind, OverCapacity, Refusal, Refusals};
pub use writes::{ChipWrites, EntryWrite, Planned, TableWrites, UpdateKind};
