//! The keep-alive frame (p4/README.md): Ethernet with EtherType 0x88B6 and a payload of the
//! device port it left by (2 bytes), sequence (4), transmit time in ns (8), both written by
//! the chip as the frame leaves, flags (1: bit 0 asks the chip to send the return to the
//! controller as well) and the unit id (1). A round is sent to a unit's multicast group: the
//! chip writes each copy's port, which names the pair and direction.

/// EtherType of keep-alives.
pub const ETHERTYPE: u16 = 0x88B6;

/// Locally administered addresses: the filter passes the frame through unchanged, nobody
/// else ever sees it.
const DST_MAC: [u8; 6] = [0x02, 0xef, 0xb0, 0x00, 0x00, 0x00];
const SRC_MAC: [u8; 6] = [0x02, 0xef, 0xb0, 0x00, 0x00, 0x01];

/// Offsets in the frame.
const TYPE: usize = 12;
const OUT_PORT: std::ops::Range<usize> = 14..16;
const SEQ: std::ops::Range<usize> = 16..20;
const TX: std::ops::Range<usize> = 20..28;
const FLAGS: usize = 28;
const UNIT: usize = 29;
/// Flag: the chip sends the return to the controller too (for `monitor`).
pub const PUNT: u8 = 1;
/// The smallest Ethernet frame without its FCS.
const MIN_FRAME: usize = 60;

/// Which port of the pair a keep-alive left by; it comes back by the other one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Direction {
    /// Out of the LAN port, through the filter towards its WAN side.
    OutOfLan = 0,
    /// Out of the WAN port, through the filter towards its LAN side.
    OutOfWan = 1,
}

impl Direction {
    pub const BOTH: [Direction; 2] = [Direction::OutOfLan, Direction::OutOfWan];

    pub fn index(self) -> usize {
        self as usize
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeepAlive {
    /// The device port it left by (0 when built: the chip writes it).
    pub out_port: u16,
    pub seq: u32,
    /// Departure time on the chip's clock (0 when built: the chip writes it).
    pub tx_ns: u64,
    pub flags: u8,
    /// The chip's unit id, whose newest round the chip compares the return with.
    pub unit_id: u8,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum KeepAliveError {
    #[error("not a keep-alive: EtherType {0:#06x}")]
    NotKeepAlive(u16),
    #[error("keep-alive of {0} bytes: too short")]
    Short(usize),
}

impl KeepAlive {
    /// A round for a unit's multicast group: the chip writes each copy's pair and
    /// direction.
    pub fn round(unit_id: u8, seq: u32, flags: u8) -> KeepAlive {
        KeepAlive {
            out_port: 0,
            seq,
            tx_ns: 0,
            flags,
            unit_id,
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut frame = vec![0u8; MIN_FRAME];
        frame[0..6].copy_from_slice(&DST_MAC);
        frame[6..12].copy_from_slice(&SRC_MAC);
        frame[TYPE..TYPE + 2].copy_from_slice(&ETHERTYPE.to_be_bytes());
        frame[OUT_PORT].copy_from_slice(&self.out_port.to_be_bytes());
        frame[SEQ].copy_from_slice(&self.seq.to_be_bytes());
        frame[TX].copy_from_slice(&self.tx_ns.to_be_bytes());
        frame[FLAGS] = self.flags;
        frame[UNIT] = self.unit_id;
        frame
    }

    /// Reads a frame that came back (from the chip: checked, never trusted).
    pub fn decode(frame: &[u8]) -> Result<KeepAlive, KeepAliveError> {
        if frame.len() <= UNIT {
            return Err(KeepAliveError::Short(frame.len()));
        }
        let ethertype = u16::from_be_bytes([frame[TYPE], frame[TYPE + 1]]);
        if ethertype != ETHERTYPE {
            return Err(KeepAliveError::NotKeepAlive(ethertype));
        }
        let mut seq = [0u8; 4];
        seq.copy_from_slice(&frame[SEQ]);
        let mut tx = [0u8; 8];
        tx.copy_from_slice(&frame[TX]);
        Ok(KeepAlive {
            out_port: u16::from_be_bytes([frame[OUT_PORT.start], frame[OUT_PORT.start + 1]]),
            seq: u32::from_be_bytes(seq),
            tx_ns: u64::from_be_bytes(tx),
            flags: frame[FLAGS],
            unit_id: frame[UNIT],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_keep_alive_reads_back_as_written() {
        let ka = KeepAlive {
            out_port: 164,
            seq: 0x0102_0304,
            tx_ns: 123_456_789,
            flags: PUNT,
            unit_id: 3,
        };
        let frame = ka.encode();
        assert_eq!(frame.len(), 60);
        assert_eq!(&frame[12..14], &[0x88, 0xb6]);
        assert_eq!(frame[28], PUNT);
        assert_eq!(KeepAlive::decode(&frame), Ok(ka));
    }

    #[test]
    fn what_is_not_a_keep_alive_is_refused() {
        let mut frame = KeepAlive {
            out_port: 1,
            seq: 1,
            tx_ns: 1,
            flags: 0,
            unit_id: 1,
        }
        .encode();
        assert_eq!(
            KeepAlive::decode(&frame[..20]),
            Err(KeepAliveError::Short(20))
        );
        frame[12] = 0x08;
        frame[13] = 0x00;
        assert_eq!(
            KeepAlive::decode(&frame),
            Err(KeepAliveError::NotKeepAlive(0x0800))
        );
    }
}
