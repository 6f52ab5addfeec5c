//! What a configuration change does to traffic already flowing, told before the commit: for
//! each unit, how many of its buckets get another filter pair or core. A session's bucket
//! is its hash's low bits, so that share is the share of live sessions that will meet a
//! filter core that has never seen them (and that DPI state is lost for).

use efb_model::{Config, Unit};

use crate::layout::{UnitLayout, bucket_table};
use crate::liveness::{BypassMode, LiveState};

/// One unit whose buckets move.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnitMoves {
    pub unit: String,
    /// Buckets whose pair or core changes, counted over the larger of the two tables.
    pub moved: usize,
    pub buckets: usize,
    /// What changed in the unit's layout: `cores 11 -> 12`, `pairs 4 -> 5`...
    pub why: Vec<String>,
}

/// Units present before and after whose buckets move, by name. Liveness is today's in both
/// (a dead pair's buckets are where the chip has them now).
pub fn bucket_moves(before: &Config, after: &Config, live: &LiveState) -> Vec<UnitMoves> {
    after
        .units
        .values()
        .filter_map(|new| {
            let old = before.units.get(&new.name)?;
            // Every commit asks: a unit whose balancing did not change is not tabled twice.
            if same_balancing(old, new) {
                return None;
            }
            let (was, will) = (destinations(old, live), destinations(new, live));
            let buckets = was.len().max(will.len());
            let moved = (0..buckets)
                .filter(|b| at(&was, *b) != at(&will, *b))
                .count();
            (moved > 0).then(|| UnitMoves {
                unit: new.name.clone(),
                moved,
                buckets,
                why: why(old, new),
            })
        })
        .collect()
}

/// What the bucket table depends on: cores, the pairs in order (by name), rebalance.
fn same_balancing(old: &Unit, new: &Unit) -> bool {
    old.cores == new.cores
        && old.rebalance == new.rebalance
        && old.pairs.len() == new.pairs.len()
        && old
            .pairs
            .iter()
            .zip(&new.pairs)
            .all(|(a, b)| a.name == b.name)
}

/// Where each bucket sends its sessions: (pair name, core); none when the unit has no slot.
pub(crate) fn destinations(unit: &Unit, live: &LiveState) -> Vec<Option<(String, u16)>> {
    let layout = UnitLayout::of(unit);
    if layout.slots() == 0 {
        return Vec::new();
    }
    let up: Vec<bool> = match live.mode(&unit.name) {
        BypassMode::Primary => vec![true; unit.pairs.len()],
        _ => unit
            .pairs
            .iter()
            .map(|p| live.is_pair_up(&unit.name, &p.name))
            .collect(),
    };
    let table = if unit.rebalance {
        bucket_table(layout, &up, true)
    } else {
        bucket_table(layout, &vec![true; unit.pairs.len()], false)
    };
    table
        .into_iter()
        .enumerate()
        .map(|(bucket, slot)| {
            let (pair, core) = layout.pair_core(slot.unwrap_or(bucket % layout.slots()));
            unit.pairs.get(pair).map(|p| (p.name.clone(), core))
        })
        .collect()
}

/// Tables are powers of two: a session in bucket `b` of the larger table is in `b mod n`
/// of a table of `n`.
fn at(table: &[Option<(String, u16)>], bucket: usize) -> Option<&(String, u16)> {
    table.get(bucket.checked_rem(table.len())?)?.as_ref()
}

fn why(old: &Unit, new: &Unit) -> Vec<String> {
    let mut out = Vec::new();
    if old.cores != new.cores {
        out.push(format!("cores {} -> {}", old.cores, new.cores));
    }
    let names = |u: &Unit| u.pairs.iter().map(|p| p.name.clone()).collect::<Vec<_>>();
    let (was, will) = (names(old), names(new));
    if was.len() != will.len() {
        out.push(format!("pairs {} -> {}", was.len(), will.len()));
    } else if was != will {
        let (mut a, mut b) = (was.clone(), will.clone());
        a.sort();
        b.sort();
        out.push(
            if a == b {
                "pair order"
            } else {
                "pairs renamed"
            }
            .to_string(),
        );
    }
    if old.rebalance != new.rebalance {
        out.push(format!(
            "rebalance {} -> {}",
            on(old.rebalance),
            on(new.rebalance)
        ));
    }
    out
}

fn on(flag: bool) -> &'static str {
    if flag { "on" } else { "off" }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(pairs: usize, cores: u16) -> Unit {
        crate::fixtures::unit("dpi-1", pairs, cores)
    }

    fn config(u: Unit) -> Config {
        let mut c = Config::default();
        c.units.insert(u.name.clone(), u);
        c
    }

    #[test]
    fn more_cores_move_almost_every_bucket_and_say_why() {
        let moves = bucket_moves(
            &config(unit(4, 11)),
            &config(unit(4, 12)),
            &LiveState::all_up(),
        );
        assert_eq!(moves.len(), 1);
        let m = &moves[0];
        assert_eq!(m.buckets, 1024);
        assert!(m.moved > 900 && m.moved < 1024, "{m:?}");
        assert_eq!(m.why, vec!["cores 11 -> 12".to_string()]);
    }

    #[test]
    fn an_unchanged_layout_moves_nothing() {
        let moves = bucket_moves(
            &config(unit(4, 8)),
            &config(unit(4, 8)),
            &LiveState::all_up(),
        );
        assert!(moves.is_empty());
    }

    #[test]
    fn a_dead_pair_with_rebalance_off_counts_home_slots() {
        // Rebalance off: a dead pair's buckets stay home (bypassed), so turning rebalance on
        // moves exactly the dead pair's share.
        let mut live = LiveState::all_up();
        live.down_pairs.insert(("dpi-1".into(), "p0".into()));
        let mut on = unit(4, 1);
        on.rebalance = true;
        let moves = bucket_moves(&config(unit(4, 1)), &config(on), &live);
        assert_eq!(moves[0].moved, 256 / 4);
        assert_eq!(moves[0].moved * 100 / moves[0].buckets, 25);
        assert_eq!(moves[0].why, vec!["rebalance off -> on".to_string()]);
    }
}
