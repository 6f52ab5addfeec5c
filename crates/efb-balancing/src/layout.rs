use efb_model::Unit;

/// The shape of a unit that the balancing depends on: only the pair count and cores matter,
/// which is why the config hash covers exactly these (and the pair order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct UnitLayout {
    pub pairs: usize,
    pub cores: usize,
}

/// At least 16 buckets per slot keeps the most loaded slot within 1/16 of the mean; the
/// bounds are what the chip's table memory allows.
const MIN_BUCKETS: usize = 256;
const MAX_BUCKETS: usize = 65536;
const BUCKETS_PER_SLOT: usize = 16;

impl UnitLayout {
    pub fn of(unit: &Unit) -> UnitLayout {
        UnitLayout {
            pairs: unit.pairs.len(),
            cores: usize::from(unit.cores),
        }
    }

    pub fn slots(&self) -> usize {
        self.pairs.saturating_mul(self.cores)
    }

    pub fn buckets(&self) -> usize {
        // Clamp before rounding up so that absurd layouts cannot overflow.
        let wanted = self
            .slots()
            .saturating_mul(BUCKETS_PER_SLOT)
            .min(MAX_BUCKETS);
        wanted.next_power_of_two().max(MIN_BUCKETS)
    }

    /// A power-of-two table lets the chip take the low bits of the hash instead of dividing.
    pub fn bucket_of(&self, hash: u32) -> usize {
        hash as usize & (self.buckets() - 1)
    }

    /// A pair's cores are adjacent slots (MODEL.md step 3). A zero-core layout has no slots;
    /// answering (0, 0) beats dividing by zero in a library the daemon calls.
    pub fn pair_core(&self, slot: usize) -> (usize, u16) {
        let pair = slot.checked_div(self.cores).unwrap_or(0);
        let core = slot.checked_rem(self.cores).unwrap_or(0);
        (pair, u16::try_from(core).unwrap_or(u16::MAX))
    }

    /// `live` is per pair in configured order; a pair missing from it counts as down, since
    /// sending traffic to a pair nobody vouched for would lose it.
    pub fn slot_for_bucket(&self, bucket: usize, live: &[bool], rebalance: bool) -> Option<usize> {
        let home = self.home_slot(bucket)?;
        if self.slot_live(home, live) {
            return Some(home);
        }
        // Only a dead home slot needs the slot lists, so a lookup pays for them only then.
        self.resolve(bucket, live, rebalance, &Slots::of(self, live))
    }

    fn resolve(
        &self,
        bucket: usize,
        live: &[bool],
        rebalance: bool,
        slots: &Slots,
    ) -> Option<usize> {
        let home = self.home_slot(bucket)?;
        if self.slot_live(home, live) {
            Some(home)
        } else if rebalance {
            self.rebalanced_slot(bucket, home, slots)
        } else {
            None
        }
    }

    fn home_slot(&self, bucket: usize) -> Option<usize> {
        bucket.checked_rem(self.slots())
    }

    fn slot_live(&self, slot: usize, live: &[bool]) -> bool {
        live.get(self.pair_core(slot).0).copied().unwrap_or(false)
    }

    /// MODEL.md step 6: the dead slots' buckets are dealt round-robin over the live slots.
    /// Bucket b of dead slot number j gets ordinal n = (b / S) * D + j, so consecutive rounds
    /// of the D dead slots take consecutive live slots: no live slot gets more than
    /// ceil(dead buckets / L) of them.
    fn rebalanced_slot(&self, bucket: usize, home: usize, slots: &Slots) -> Option<usize> {
        let j = slots.dead_rank.get(home).copied().flatten()?;
        let round = bucket.checked_div(self.slots())?;
        let n = round.checked_mul(slots.dead)?.checked_add(j)?;
        slots.live.get(n.checked_rem(slots.live.len())?).copied()
    }
}

/// The live slots in slot order, and each dead slot's number among the dead ones.
struct Slots {
    live: Vec<usize>,
    dead_rank: Vec<Option<usize>>,
    dead: usize,
}

impl Slots {
    fn of(layout: &UnitLayout, live: &[bool]) -> Slots {
        let mut slots = Slots {
            live: Vec::new(),
            dead_rank: vec![None; layout.slots()],
            dead: 0,
        };
        for s in 0..layout.slots() {
            if layout.slot_live(s, live) {
                slots.live.push(s);
            } else {
                slots.dead_rank[s] = Some(slots.dead);
                slots.dead += 1;
            }
        }
        slots
    }
}

/// The whole table at once, for the chip compiler: the slot lists are made once, not once
/// per bucket.
pub fn bucket_table(layout: UnitLayout, live: &[bool], rebalance: bool) -> Vec<Option<usize>> {
    let slots = Slots::of(&layout, live);
    (0..layout.buckets())
        .map(|bucket| layout.resolve(bucket, live, rebalance, &slots))
        .collect()
}
