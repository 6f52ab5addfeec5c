//! Where each unit's buckets live in the chip's bucket table. The table is direct-indexed
//! (the program reads slot `base | bucket`), so a unit owns a region as large as its bucket
//! count (a power of two) and aligned to it: then `base | bucket` is `base + bucket`, and
//! two units never share a slot.
//!
//! Regions stay put, like ids: a unit keeps its region while its bucket count does not
//! change, so a commit that does not touch a unit's pairs or cores writes none of its
//! buckets. A new or resized unit takes the lowest free aligned region, avoiding the ones
//! freed by the same commit: the units that held them may still be read by frames until
//! the commit's deletions, and a region never written reads pair 0, which bypasses. Only
//! when the free space is too fragmented are freed regions reused, and only when that
//! fails too are all regions laid out again (see README: a brief window in which frames of
//! a moved unit can reach the pairs of the unit that now holds its old slots).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A unit's slots in the bucket table: `base .. base + size`, `base` a multiple of `size`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Region {
    pub base: u32,
    pub size: u32,
}

impl Region {
    fn end(&self) -> u64 {
        u64::from(self.base) + u64::from(self.size)
    }

    fn overlaps(&self, other: &Region) -> bool {
        u64::from(self.base) < other.end() && u64::from(other.base) < self.end()
    }
}

/// More buckets wanted than the table has slots.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("units need {needed} buckets and the chip's bucket table has {capacity} slots")]
pub struct Full {
    pub needed: u64,
    pub capacity: u64,
}

/// Regions for the units `wanted` (name -> bucket count, each a power of two) in a table of
/// `capacity` slots, keeping the regions of `previous` whose unit kept its size.
pub fn place(
    previous: &BTreeMap<String, Region>,
    wanted: &BTreeMap<String, u32>,
    capacity: u64,
) -> Result<BTreeMap<String, Region>, Full> {
    let needed: u64 = wanted.values().map(|size| u64::from(*size)).sum();
    if needed > capacity {
        return Err(Full { needed, capacity });
    }
    let kept: BTreeMap<String, Region> = previous
        .iter()
        .filter(|(name, region)| wanted.get(*name) == Some(&region.size))
        .map(|(name, region)| (name.clone(), *region))
        .collect();
    let freed: Vec<Region> = previous
        .iter()
        .filter(|(name, _)| !kept.contains_key(*name))
        .map(|(_, region)| *region)
        .collect();
    let kept_regions: Vec<Region> = kept.values().copied().collect();
    let occupied_then_freed: Vec<Region> = kept_regions.iter().chain(&freed).copied().collect();
    let attempts = [
        (&kept, occupied_then_freed),
        (&kept, kept_regions),
        (&BTreeMap::new(), Vec::new()),
    ];
    for (fixed, occupied) in attempts {
        if let Some(placed) = place_rest(fixed, occupied, wanted, capacity) {
            return Ok(placed);
        }
    }
    // Unreachable in practice: powers of two laid out largest first from an empty table
    // always fit when their sum does. Said as the same error rather than a panic.
    Err(Full { needed, capacity })
}

/// `fixed` as they are, and the other units of `wanted`, largest first, each at the lowest
/// aligned base that overlaps nothing in `occupied`.
fn place_rest(
    fixed: &BTreeMap<String, Region>,
    mut occupied: Vec<Region>,
    wanted: &BTreeMap<String, u32>,
    capacity: u64,
) -> Option<BTreeMap<String, Region>> {
    let mut placed = fixed.clone();
    let mut rest: Vec<(&String, u32)> = wanted
        .iter()
        .filter(|(name, _)| !fixed.contains_key(*name))
        .map(|(name, size)| (name, *size))
        .collect();
    rest.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    for (name, size) in rest {
        let region = lowest_free(&occupied, size, capacity)?;
        occupied.push(region);
        placed.insert(name.clone(), region);
    }
    Some(placed)
}

fn lowest_free(occupied: &[Region], size: u32, capacity: u64) -> Option<Region> {
    let step = u64::from(size.max(1));
    (0..capacity / step)
        .map(|i| Region {
            base: u32::try_from(i * step).unwrap_or(u32::MAX),
            size,
        })
        .find(|candidate| !occupied.iter().any(|o| o.overlaps(candidate)))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn sizes(units: &[(&str, u32)]) -> BTreeMap<String, u32> {
        units.iter().map(|(n, s)| (n.to_string(), *s)).collect()
    }

    fn assert_aligned_and_disjoint(regions: &BTreeMap<String, Region>, capacity: u64) {
        let all: Vec<&Region> = regions.values().collect();
        for (i, a) in all.iter().enumerate() {
            assert_eq!(a.base % a.size, 0, "{a:?} is not aligned to its size");
            assert!(a.end() <= capacity, "{a:?} ends past the table");
            for b in &all[i + 1..] {
                assert!(!a.overlaps(b), "{a:?} overlaps {b:?}");
            }
        }
    }

    #[test]
    fn regions_are_aligned_disjoint_and_largest_first() {
        let wanted = sizes(&[("a", 256), ("b", 8192), ("c", 1024)]);
        let placed = place(&BTreeMap::new(), &wanted, 262_144).unwrap();
        assert_aligned_and_disjoint(&placed, 262_144);
        assert_eq!(placed["b"].base, 0);
        assert_eq!(placed["c"].base, 8192);
        assert_eq!(placed["a"].base, 8192 + 1024);
    }

    #[test]
    fn a_unit_keeps_its_region_while_its_size_stays() {
        let first = place(&BTreeMap::new(), &sizes(&[("a", 256), ("b", 512)]), 4096).unwrap();
        // b grows: a stays, b moves, and b's old region is not reused by the same commit.
        let second = place(&first, &sizes(&[("a", 256), ("b", 1024), ("c", 512)]), 4096).unwrap();
        assert_eq!(second["a"], first["a"]);
        assert_aligned_and_disjoint(&second, 4096);
        for name in ["b", "c"] {
            assert!(
                !second[name].overlaps(&first["b"]),
                "{name} reuses b's old slots"
            );
        }
    }

    #[test]
    fn freed_regions_are_reused_when_nothing_else_fits() {
        let first = place(&BTreeMap::new(), &sizes(&[("a", 512), ("b", 512)]), 1024).unwrap();
        let second = place(&first, &sizes(&[("a", 512), ("c", 512)]), 1024).unwrap();
        assert_eq!(second["a"], first["a"]);
        assert_eq!(second["c"], first["b"]);
    }

    #[test]
    fn fragmented_space_is_laid_out_again() {
        // 256 kept at 0 and at 512 leave no aligned 512 free, though 512 slots are.
        let previous: BTreeMap<String, Region> = [
            ("a".to_string(), Region { base: 0, size: 256 }),
            (
                "b".to_string(),
                Region {
                    base: 512,
                    size: 256,
                },
            ),
        ]
        .into();
        let wanted = sizes(&[("a", 256), ("b", 256), ("c", 512)]);
        let placed = place(&previous, &wanted, 1024).unwrap();
        assert_aligned_and_disjoint(&placed, 1024);
        assert_eq!(placed["c"].base, 0);
    }

    #[test]
    fn more_buckets_than_slots_is_refused() {
        let wanted = sizes(&[("a", 65_536), ("b", 65_536), ("c", 65_536), ("d", 65_536)]);
        assert!(place(&BTreeMap::new(), &wanted, 262_144).is_ok());
        let mut more = wanted.clone();
        more.insert("e".into(), 256);
        assert_eq!(
            place(&BTreeMap::new(), &more, 262_144),
            Err(Full {
                needed: 262_400,
                capacity: 262_144
            })
        );
    }
}
