//! The keep-alive frame (p4/README.md): Ethernet with EtherType 0x88B6 and a payload of pair
//! id (1 byte), direction (1: 0 sent out of the pair's LAN port, 1 out of its WAN port),
//! sequence (4) and transmit time in ns (8, written by the chip as the frame leaves).

/// EtherType of keep-alives.
pub const ETHERTYPE: u16 = 0x88B6;

/// Locally administered addresses: the filter passes the frame through unchanged, nobody
/// else ever sees it.
const DST_MAC: [u8; 6] = [0x02, 0xef, 0xb0, 0x00, 0x00, 0x00];
const SRC_MAC: [u8; 6] = [0x02, 0xef, 0xb0, 0x00, 0x00, 0x01];

/// Offsets in the frame.
const TYPE: usize = 12;
const PAIR: usize = 14;
const DIRECTION: usize = 15;
const SEQ: std::ops::Range<usize> = 16..20;
const TX: std::ops::Range<usize> = 20..28;
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
    pub pair_id: u8,
    pub direction: Direction,
    pub seq: u32,
    /// Departure time on the chip's clock (0 when built: the chip writes it).
    pub tx_ns: u64,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum KeepAliveError {
    #[error("not a keep-alive: EtherType {0:#06x}")]
    NotKeepAlive(u16),
    #[error("keep-alive of {0} bytes: too short")]
    Short(usize),
    #[error("keep-alive with direction {0}: expected 0 or 1")]
    Direction(u8),
}

impl KeepAlive {
    pub fn encode(&self) -> Vec<u8> {
        let mut frame = vec![0u8; MIN_FRAME];
        frame[0..6].copy_from_slice(&DST_MAC);
        frame[6..12].copy_from_slice(&SRC_MAC);
        frame[TYPE..TYPE + 2].copy_from_slice(&ETHERTYPE.to_be_bytes());
        frame[PAIR] = self.pair_id;
        frame[DIRECTION] = self.direction as u8;
        frame[SEQ].copy_from_slice(&self.seq.to_be_bytes());
        frame[TX].copy_from_slice(&self.tx_ns.to_be_bytes());
        frame
    }

    /// Reads a frame that came back (from the chip: checked, never trusted).
    pub fn decode(frame: &[u8]) -> Result<KeepAlive, KeepAliveError> {
        if frame.len() < TX.end {
            return Err(KeepAliveError::Short(frame.len()));
        }
        let ethertype = u16::from_be_bytes([frame[TYPE], frame[TYPE + 1]]);
        if ethertype != ETHERTYPE {
            return Err(KeepAliveError::NotKeepAlive(ethertype));
        }
        let direction = match frame[DIRECTION] {
            0 => Direction::OutOfLan,
            1 => Direction::OutOfWan,
            other => return Err(KeepAliveError::Direction(other)),
        };
        let mut seq = [0u8; 4];
        seq.copy_from_slice(&frame[SEQ]);
        let mut tx = [0u8; 8];
        tx.copy_from_slice(&frame[TX]);
        Ok(KeepAlive {
            pair_id: frame[PAIR],
            direction,
            seq: u32::from_be_bytes(seq),
            tx_ns: u64::from_be_bytes(tx),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_keep_alive_reads_back_as_written() {
        let ka = KeepAlive {
            pair_id: 7,
            direction: Direction::OutOfWan,
            seq: 0x0102_0304,
            tx_ns: 123_456_789,
        };
        let frame = ka.encode();
        assert_eq!(frame.len(), 60);
        assert_eq!(&frame[12..14], &[0x88, 0xb6]);
        assert_eq!(KeepAlive::decode(&frame), Ok(ka));
    }

    #[test]
    fn what_is_not_a_keep_alive_is_refused() {
        let mut frame = KeepAlive {
            pair_id: 1,
            direction: Direction::OutOfLan,
            seq: 1,
            tx_ns: 1,
        }
        .encode();
        assert_eq!(
            KeepAlive::decode(&frame[..20]),
            Err(KeepAliveError::Short(20))
        );
        frame[15] = 9;
        assert_eq!(KeepAlive::decode(&frame), Err(KeepAliveError::Direction(9)));
        frame[12] = 0x08;
        frame[13] = 0x00;
        assert_eq!(
            KeepAlive::decode(&frame),
            Err(KeepAliveError::NotKeepAlive(0x0800))
        );
    }
}
