use efb_model::{Action, Config, Flow, Unit};
use serde::{Serialize, Serializer};

use crate::matching::select_flow;
use crate::{BalancingError, BypassMode, LiveState, Session, UnitLayout, session_hash};

/// The answer of rpc lookup-session: where the chip sends a session today, and why, so that
/// finding a subscriber's filter no longer means walking every filter.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct Lookup {
    #[serde(serialize_with = "action_name")]
    pub action: Action,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flow: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bucket: Option<u32>,
    /// When bypassed, the slot the bucket belongs to, to show which filter is missing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slot: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pair: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub core: Option<u16>,
    /// Set only when the packet really leaves towards a filter, so that a bypassed session
    /// never points anyone at a filter port.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lan_egress_port: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wan_egress_port: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pair_live: Option<bool>,
    pub software_bypass: bool,
    pub reason: String,
    /// The reverse direction (addresses and ports swapped) goes elsewhere.
    pub split: bool,
    /// Where the reverse direction goes, when the session is split.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reverse: Option<String>,
}

fn action_name<S: Serializer>(action: &Action, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(action.as_str())
}

impl Lookup {
    fn new(action: Action, flow: Option<&Flow>, reason: String) -> Lookup {
        Lookup {
            action,
            flow: flow.map(|f| f.name.clone()),
            unit: None,
            bucket: None,
            slot: None,
            pair: None,
            core: None,
            lan_egress_port: None,
            wan_egress_port: None,
            pair_live: None,
            software_bypass: false,
            reason,
            split: false,
            reverse: None,
        }
    }

    /// Where the packet ends up: what a filter sees of it (the unit, pair and core it
    /// reaches, or none when it is bypassed or dropped).
    fn destination(&self) -> (&Action, Option<&str>, Option<u16>, bool) {
        let to_filter = self.lan_egress_port.is_some();
        let pair = self.pair.as_deref().filter(|_| to_filter);
        let core = self.core.filter(|_| to_filter);
        (&self.action, pair, core, self.software_bypass)
    }

    /// The destination in words: `unit ef1, pair p2, core 3 (flow web)`.
    fn words(&self) -> String {
        let mut out = match (&self.unit, &self.pair, self.core) {
            (Some(unit), Some(pair), Some(core)) if !self.software_bypass => {
                format!("unit {unit}, pair {pair}, core {core}")
            }
            (Some(unit), ..) => format!("software bypass of unit {unit}"),
            _ => self.action.as_str().to_string(),
        };
        match &self.flow {
            Some(flow) => out.push_str(&format!(" (flow {flow})")),
            None => out.push_str(" (no flow matches)"),
        }
        out
    }
}

/// Computes what the chip does, from the same configuration and liveness it was programmed
/// from. A mixed-family session is an error even when no flow would send it to a unit: no
/// such packet exists, so any answer would mislead.
pub fn lookup_session(
    config: &Config,
    session: &Session,
    live: &LiveState,
) -> Result<Lookup, BalancingError> {
    let mut out = lookup_direction(config, session, live)?;
    let reverse = lookup_direction(config, &session.reversed(), live)?;
    if out.destination() != reverse.destination() {
        out.split = true;
        out.reverse = Some(format!(
            "{}: the session is split, a filter sees one direction only",
            reverse.words()
        ));
    }
    Ok(out)
}

/// Where one direction of a session goes.
fn lookup_direction(
    config: &Config,
    session: &Session,
    live: &LiveState,
) -> Result<Lookup, BalancingError> {
    if let Some(link) = &session.link
        && !config.links.contains_key(link)
    {
        return Err(BalancingError::UnknownLink {
            link: link.clone(),
            known: config.links.keys().cloned().collect(),
        });
    }
    let hash = session_hash(config.balancing_method, session)?;
    let Some(flow) = select_flow(config.flows.values(), session) else {
        let reason = "no flow matches: bypass by default".to_string();
        return Ok(Lookup::new(Action::Bypass, None, reason));
    };
    match &flow.action {
        Action::ToUnit(unit) => to_unit(config, flow, unit, hash, live),
        other => {
            let reason = format!("flow {}: {}", flow.name, other.as_str());
            Ok(Lookup::new(other.clone(), Some(flow), reason))
        }
    }
}

/// Where a unit sends a bucket: to a slot, or to software bypass (with the bucket's own
/// slot, if it has one, for diagnosis).
enum Decision {
    Filter { slot: usize, why: String },
    Bypass { slot: Option<usize>, why: String },
}

fn to_unit(
    config: &Config,
    flow: &Flow,
    name: &str,
    hash: u32,
    live: &LiveState,
) -> Result<Lookup, BalancingError> {
    let unit = config
        .units
        .get(name)
        .ok_or_else(|| BalancingError::UnknownUnit {
            flow: flow.name.clone(),
            unit: name.to_string(),
        })?;
    let mut out = Lookup::new(flow.action.clone(), Some(flow), String::new());
    out.unit = Some(name.to_string());
    let layout = UnitLayout::of(unit);
    if layout.slots() == 0 {
        out.software_bypass = true;
        out.reason = format!("unit {name} has no pairs: software bypass");
        return Ok(out);
    }
    let bucket = layout.bucket_of(hash);
    out.bucket = u32::try_from(bucket).ok();
    let pairs_live: Vec<bool> = unit
        .pairs
        .iter()
        .map(|p| live.is_pair_up(name, &p.name))
        .collect();
    let decision = decide(config, unit, layout, bucket, &pairs_live, live.mode(name))?;
    fill(&mut out, decision, unit, layout, &pairs_live);
    Ok(out)
}

fn decide(
    config: &Config,
    unit: &Unit,
    layout: UnitLayout,
    bucket: usize,
    pairs_live: &[bool],
    mode: BypassMode,
) -> Result<Decision, BalancingError> {
    let home = bucket % layout.slots();
    Ok(match mode {
        BypassMode::Bypass => Decision::Bypass {
            slot: Some(home),
            why: format!("unit {} set to bypass mode", unit.name),
        },
        BypassMode::Primary => Decision::Filter {
            slot: home,
            why: format!("unit {} forced primary: liveness ignored", unit.name),
        },
        BypassMode::Auto => match below_active_pairs(config, unit, pairs_live)? {
            Some(why) => Decision::Bypass {
                slot: Some(home),
                why,
            },
            None => by_liveness(unit, layout, bucket, pairs_live),
        },
    })
}

/// The whole-unit rule of the liveness profile; a unit without a profile has no threshold.
fn below_active_pairs(
    config: &Config,
    unit: &Unit,
    pairs_live: &[bool],
) -> Result<Option<String>, BalancingError> {
    let Some(profile_name) = &unit.liveness_profile else {
        return Ok(None);
    };
    let profile =
        config
            .profiles
            .get(profile_name)
            .ok_or_else(|| BalancingError::UnknownProfile {
                unit: unit.name.clone(),
                profile: profile_name.clone(),
            })?;
    let live_count = pairs_live.iter().filter(|&&l| l).count();
    let needed = usize::from(profile.active_pairs);
    Ok((live_count < needed).then(|| {
        format!(
            "unit {}: {live_count} live pairs, fewer than active-pairs {needed}: whole unit in bypass",
            unit.name
        )
    }))
}

fn by_liveness(unit: &Unit, layout: UnitLayout, bucket: usize, pairs_live: &[bool]) -> Decision {
    let home = bucket % layout.slots();
    let home_pair = pair_name(unit, layout, home);
    match layout.slot_for_bucket(bucket, pairs_live, unit.rebalance) {
        Some(slot) if slot == home => Decision::Filter {
            slot,
            why: format!("bucket {bucket} -> slot {slot}"),
        },
        Some(slot) => Decision::Filter {
            slot,
            why: format!("pair {home_pair} down, bucket {bucket} rebalanced to slot {slot}"),
        },
        None if unit.rebalance => Decision::Bypass {
            slot: Some(home),
            why: format!("pair {home_pair} down and no live pair to rebalance to: software bypass"),
        },
        None => Decision::Bypass {
            slot: Some(home),
            why: format!("pair {home_pair} down, rebalance off: software bypass"),
        },
    }
}

fn pair_name(unit: &Unit, layout: UnitLayout, slot: usize) -> &str {
    let (index, _) = layout.pair_core(slot);
    unit.pairs.get(index).map_or("?", |p| p.name.as_str())
}

fn fill(out: &mut Lookup, decision: Decision, unit: &Unit, layout: UnitLayout, live: &[bool]) {
    let (slot, to_filter, why) = match decision {
        Decision::Filter { slot, why } => (Some(slot), true, why),
        Decision::Bypass { slot, why } => (slot, false, why),
    };
    out.software_bypass = !to_filter;
    out.reason = why;
    let Some(slot) = slot else { return };
    let (index, core) = layout.pair_core(slot);
    let Some(pair) = unit.pairs.get(index) else {
        return;
    };
    out.slot = u32::try_from(slot).ok();
    out.pair = Some(pair.name.clone());
    out.core = Some(core);
    out.pair_live = live.get(index).copied();
    if to_filter {
        out.lan_egress_port = Some(pair.lan_port.clone());
        out.wan_egress_port = Some(pair.wan_port.clone());
    }
}
