//! A unit's rounds judged from two cells instead of every pair's. The chip keeps, per unit
//! and parity of a round's number, how many copies of its rounds left and how many returns
//! it counted (p4/efb.p4's `keepalive_copies` and `keepalive_counted`); efbd alternates the
//! parity of a unit's rounds. While a round of one parity is the unit's newest, the other
//! parity's tally cannot move (its rounds are closed), so the difference between two reads
//! of it, each made while the other parity was newest, is exactly what the rounds between
//! them did. When copies and returns both moved by one round's copies per round, every copy
//! came back, each counted once: nothing more is to be read. Anything else (a copy missing,
//! rounds of both parities to judge, a first read, a read torn by a round entering) says
//! only that the pairs' own records must be read: the tallies never judge a loss.

use crate::records::Tally;

/// The last reads of a unit's two tallies, each made while it could not move.
#[derive(Clone, Debug, Default)]
pub(crate) struct Tallies {
    frozen: [Option<Tally>; 2],
}

impl Tallies {
    /// Takes in a read made while `newest` was the unit's newest round. Returns whether
    /// every copy of `closed` (the unit's rounds sent before `newest` and not judged yet)
    /// came back and was counted, `copies_per_round` copies a round.
    pub(crate) fn all_returned(
        &mut self,
        newest: u32,
        read: [Tally; 2],
        closed: &[u32],
        copies_per_round: u32,
    ) -> bool {
        let frozen = parity(newest.wrapping_add(1));
        let Some(before) = self.frozen[frozen].replace(read[frozen]) else {
            return false;
        };
        let Some(expected) = u32::try_from(closed.len())
            .ok()
            .and_then(|n| n.checked_mul(copies_per_round))
        else {
            return false;
        };
        let copies = read[frozen].copies.wrapping_sub(before.copies);
        let counted = read[frozen].counted.wrapping_sub(before.counted);
        expected > 0
            && closed.iter().all(|&seq| parity(seq) == frozen)
            && copies == expected
            && counted == expected
    }
}

/// Which tally a round's copies and returns go to.
pub(crate) fn parity(seq: u32) -> usize {
    (seq & 1) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(copies: u32, counted: u32) -> Tally {
        Tally { copies, counted }
    }

    #[test]
    fn a_complete_round_moves_copies_and_returns_alike() {
        let mut t = Tallies::default();
        // Round 4 is the newest: the odd rounds' tally is frozen; no earlier read of it.
        assert!(!t.all_returned(4, [tally(0, 0), tally(8, 8)], &[3], 4));
        // Round 5: the even tally froze, with round 4 in it; no earlier read of it either.
        assert!(!t.all_returned(5, [tally(4, 4), tally(10, 9)], &[4], 4));
        // Round 6: round 5's 4 copies left (8 -> 12) and came back (8 -> 12).
        assert!(t.all_returned(6, [tally(6, 6), tally(12, 12)], &[5], 4));
        // Round 7: round 6 had 4 copies (4 -> 8), 3 came back (4 -> 7).
        assert!(!t.all_returned(7, [tally(8, 7), tally(13, 13)], &[6], 4));
        // Round 8: round 7 complete again.
        assert!(t.all_returned(8, [tally(9, 8), tally(16, 16)], &[7], 4));
    }

    #[test]
    fn what_the_tallies_cannot_tell_is_never_a_verdict_of_complete() {
        let mut t = Tallies::default();
        assert!(!t.all_returned(4, [tally(0, 0), tally(4, 4)], &[3], 4));
        // Rounds of both parities to judge (a read missed one): the pairs are read.
        assert!(!t.all_returned(6, [tally(8, 8), tally(8, 8)], &[4, 5], 4));
        // A copy more than the unit's pairs make (the group and the pairs disagree): not
        // complete, even though every copy that left came back.
        assert!(!t.all_returned(8, [tally(8, 8), tally(13, 13)], &[7], 4));
        // Torn: round 9 entered, and 3 of its copies came back, between the read of the
        // newest round (8) and the read of the tallies.
        assert!(!t.all_returned(8, [tally(8, 8), tally(17, 16)], &[], 4));
        // Round 9 complete in the end, but the read before took some of it in.
        assert!(!t.all_returned(9, [tally(8, 8), tally(17, 17)], &[8], 4));
        assert!(!t.all_returned(10, [tally(12, 12), tally(17, 17)], &[9], 4));
        // From there on, reads made while the tallies stood still judge again.
        assert!(t.all_returned(11, [tally(12, 12), tally(17, 17)], &[10], 4));
    }
}
