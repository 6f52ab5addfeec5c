//! What the chip records of keep-alive rounds (p4/efb.p4's keep-alive registers), as the
//! driver reads them and the engine judges them. The chip counts a return only while its
//! round is its unit's newest (the next round has not entered the chip yet), so a round is
//! judged on the chip's clock, never on when efbd read. Arrival times are the chip's clock
//! in ticks of 1.024 us (its nanoseconds >> 10, 32 bits: wraps after 73 minutes).

use std::collections::BTreeMap;

/// Nanoseconds in one tick of the recorded times.
pub const TICK_NS: u64 = 1024;

/// The register cell of keep-alives that leave by device port `port`: the port (9 bits).
pub fn cell(port: u32) -> u16 {
    (port & 0x1FF) as u16
}

/// What came back by one pair and direction: the newest round counted, how many rounds
/// were counted (each once, in order: a duplicate or an overtaken round is not), the time
/// on path of the newest (ns) and when it arrived (ticks).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Returned {
    pub newest: u32,
    pub count: u32,
    pub path_ns: u32,
    pub arrival: u32,
}

/// A unit's tally of the rounds numbered with one parity: the copies that left the chip
/// and the returns it counted. Once a round of the other parity entered, it does not move.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub copies: u32,
    pub counted: u32,
}

/// One read of the registers: per unit id, per cell.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Records {
    /// Per unit id, the newest of its rounds that entered the chip.
    pub rounds: BTreeMap<u8, u32>,
    /// Per unit id, its tallies of even and odd rounds (read after its newest round).
    pub tallies: BTreeMap<u8, [Tally; 2]>,
    pub returns: BTreeMap<u16, Returned>,
}

/// What to read: units (their round register and tallies) and cells (their return
/// registers: only for units whose tallies cannot say that every copy came back).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Wanted {
    pub units: Vec<u8>,
    pub cells: Vec<u16>,
    /// Of `units`, those read right after a round (not a quiet unit's read when its next
    /// round is due): how soon the round shows is the control path's time.
    pub after_round: Vec<u8>,
}
