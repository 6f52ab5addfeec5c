//! The chip's numbers for links, units and pairs. They must not move when something else is
//! added or removed: a link's id is in every flow entry scoped to it and in the tag frames
//! carry through the filters, so renumbering would rewrite thousands of entries and, while
//! it happens, send traffic across links. New names get the lowest free number; a number is
//! freed when its name leaves the configuration. The allocation is saved with the driver's
//! state so that a restarted efbd finds the same numbers the chip holds.

use std::collections::{BTreeMap, BTreeSet};

use efb_model::Config;
use serde::{Deserialize, Serialize};

use crate::frame_classes::Layout;
use crate::regions::Region;

/// The largest id of each kind (the program's fields are 8 bits; 0 is never used, so a
/// zeroed field cannot look like a configured link). Links are as many as the model lets
/// a configuration have: one id each.
pub const MAX_LINK_ID: u32 = efb_model::rules::MAX_LINKS as u32;
pub const MAX_UNIT_ID: u32 = 255;
pub const MAX_PAIR_ID: u32 = 255;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ids {
    pub links: BTreeMap<String, u32>,
    pub units: BTreeMap<String, u32>,
    /// Pairs by (unit, pair) name.
    pub pairs: BTreeMap<String, BTreeMap<String, u32>>,
    /// Each unit's region of the bucket table (placed by the compiler, see
    /// [`crate::regions`]; absent from a state saved before regions existed).
    #[serde(default)]
    pub buckets: BTreeMap<String, Region>,
    /// Which `frame_class` bits each of the flows' criteria has (see
    /// [`crate::frame_classes`]): kept so that a restarted efbd gives the flows the class
    /// matches the chip holds.
    #[serde(default)]
    pub classes: Layout,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("no free {what} id (at most {max})")]
pub struct Exhausted {
    pub what: &'static str,
    pub max: u32,
}

impl Ids {
    /// Ids for `config`: existing names keep theirs, new names get the lowest free ones, and
    /// names no longer configured give theirs back.
    pub fn assign(&self, config: &Config) -> Result<Ids, Exhausted> {
        let links = assign(&self.links, config.links.keys(), "link", MAX_LINK_ID)?;
        let units = assign(&self.units, config.units.keys(), "unit", MAX_UNIT_ID)?;
        // Pair ids are one space across units (the pairs table is keyed by pair id alone).
        let mut previous = BTreeMap::new();
        for (unit, pairs) in &self.pairs {
            for (pair, id) in pairs {
                previous.insert(format!("{unit}\u{0}{pair}"), *id);
            }
        }
        let names: Vec<String> = config
            .units
            .values()
            .flat_map(|u| {
                u.pairs
                    .iter()
                    .map(move |p| format!("{}\u{0}{}", u.name, p.name))
            })
            .collect();
        let flat = assign(&previous, names.iter(), "pair", MAX_PAIR_ID)?;
        let mut pairs: BTreeMap<String, BTreeMap<String, u32>> = BTreeMap::new();
        for (key, id) in flat {
            if let Some((unit, pair)) = key.split_once('\u{0}') {
                pairs
                    .entry(unit.to_string())
                    .or_default()
                    .insert(pair.to_string(), id);
            }
        }
        Ok(Ids {
            links,
            units,
            pairs,
            buckets: self.buckets.clone(),
            classes: self.classes.clone(),
        })
    }

    /// Whether flow entries compiled with `other` hold with these: the same link and unit
    /// ids (the class layout is compared by the compiler, which knows when it was made
    /// afresh).
    pub fn same_flow_ids(&self, other: &Ids) -> bool {
        self.links == other.links && self.units == other.units
    }

    pub fn link(&self, name: &str) -> Option<u32> {
        self.links.get(name).copied()
    }

    pub fn unit(&self, name: &str) -> Option<u32> {
        self.units.get(name).copied()
    }

    pub fn bucket_base(&self, unit: &str) -> Option<u32> {
        self.buckets.get(unit).map(|r| r.base)
    }

    pub fn pair(&self, unit: &str, pair: &str) -> Option<u32> {
        self.pairs.get(unit).and_then(|p| p.get(pair)).copied()
    }
}

fn assign<'a>(
    previous: &BTreeMap<String, u32>,
    names: impl Iterator<Item = &'a String>,
    what: &'static str,
    max: u32,
) -> Result<BTreeMap<String, u32>, Exhausted> {
    let names: BTreeSet<&String> = names.collect();
    let mut out: BTreeMap<String, u32> = previous
        .iter()
        .filter(|(name, _)| names.contains(name))
        .map(|(n, id)| (n.clone(), *id))
        .collect();
    let mut used: BTreeSet<u32> = out.values().copied().collect();
    let mut next = 1;
    for name in names {
        if out.contains_key(name) {
            continue;
        }
        while used.contains(&next) {
            next += 1;
        }
        if next > max {
            return Err(Exhausted { what, max });
        }
        used.insert(next);
        out.insert(name.clone(), next);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use efb_model::{Config, Link};

    fn config(links: &[&str]) -> Config {
        let mut c = Config::default();
        for name in links {
            c.links.insert(
                name.to_string(),
                Link {
                    name: name.to_string(),
                    lan_port: String::new(),
                    wan_port: String::new(),
                    description: None,
                },
            );
        }
        c
    }

    #[test]
    fn ids_stay_put_when_others_come_and_go() {
        let first = Ids::default().assign(&config(&["b", "d"])).unwrap();
        assert_eq!((first.link("b"), first.link("d")), (Some(1), Some(2)));
        // "a" sorts first but takes a free number; b and d keep theirs.
        let second = first.assign(&config(&["a", "b", "d"])).unwrap();
        assert_eq!(
            (second.link("a"), second.link("b"), second.link("d")),
            (Some(3), Some(1), Some(2))
        );
        // b leaves; its number is free for the next newcomer.
        let third = second.assign(&config(&["a", "d", "e"])).unwrap();
        assert_eq!((third.link("e"), third.link("d")), (Some(1), Some(2)));
    }

    #[test]
    fn running_out_is_an_error() {
        let names: Vec<String> = (0..=MAX_LINK_ID).map(|i| format!("l{i}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        assert_eq!(
            Ids::default().assign(&config(&refs)),
            Err(Exhausted {
                what: "link",
                max: MAX_LINK_ID
            })
        );
    }
}
