//! The live state the owner keeps beside the configuration: bypass modes set by operators
//! and pair liveness found by keep-alives, each change programmed to the chip and logged,
//! and the lookups that read it.

use std::collections::BTreeMap;
use std::time::Instant;

use efb_balancing::{BalancingError, BypassMode, Lookup, Session};
use efb_liveness::{Change, PairStatus};
use tracing::info;

use efb_chip::ChipError;

use super::OwnerState;
use crate::chip::liveness::{self, Verdicts};
use crate::record::events::{self, Event, LinkStatus};

/// Why a bypass mode was not set; nothing changed.
#[derive(Debug, thiserror::Error)]
pub enum BypassError {
    #[error("no unit {unit}; units are: {}", known.join(", "))]
    NoSuchUnit { unit: String, known: Vec<String> },
    /// The chip did not take it.
    #[error(transparent)]
    Chip(#[from] ChipError),
}

/// Where a session goes, and the status keep-alives found for its pair (none for a pair
/// that is not probed).
#[derive(Clone, Debug)]
pub struct SessionRoute {
    pub lookup: Lookup,
    pub pair_status: Option<PairStatus>,
}

impl OwnerState {
    /// Sets the bypass mode of one unit, or of every unit (`None`), and programs the chip.
    pub(super) fn set_bypass(
        &mut self,
        unit: Option<&str>,
        mode: BypassMode,
    ) -> Result<(), BypassError> {
        let config = self.running_config();
        let units: Vec<String> = match unit {
            Some(unit) if config.units.contains_key(unit) => vec![unit.to_string()],
            Some(unit) => {
                return Err(BypassError::NoSuchUnit {
                    unit: unit.to_string(),
                    known: config.units.keys().cloned().collect(),
                });
            }
            None => config.units.keys().cloned().collect(),
        };
        let previous = self.live.clone();
        for unit in &units {
            if mode == BypassMode::Auto {
                self.live.modes.remove(unit);
            } else {
                self.live.modes.insert(unit.clone(), mode);
            }
        }
        if let Err(e) = self.program_live() {
            self.live = previous;
            self.events.emit(Event::chip_refusal("bypass mode", &e));
            return Err(BypassError::Chip(e));
        }
        for unit in units {
            let old = previous.mode(&unit);
            info!(unit = %unit, old = old.as_str(), new = mode.as_str(), "bypass mode set");
        }
        let reason = format!("bypass mode set to {}", mode.as_str());
        self.unit_changes(
            &liveness::unit_statuses(&config, &previous),
            &liveness::unit_statuses(&config, &self.live),
            &reason,
        );
        Ok(())
    }

    /// Pushes a change of bypass modes to the chip.
    fn program_live(&mut self) -> Result<usize, ChipError> {
        self.state_version += 1;
        match &self.driver {
            Some(driver) => driver.set_live(self.live.clone()),
            None => Ok(0),
        }
    }

    /// Where the chip sends `session`, from the configuration and liveness it was
    /// programmed from.
    pub(super) fn lookup(&self, session: &Session) -> Result<SessionRoute, BalancingError> {
        let config = self.running_config();
        let lookup = efb_balancing::lookup_session(&config, session, &self.live)?;
        // A pair of a unit without a liveness profile is not probed: its status is not known.
        let pair_status = match (&lookup.unit, &lookup.pair) {
            (Some(unit), Some(pair)) => self
                .pairs()
                .into_iter()
                .find(|p| &p.unit == unit && &p.pair == pair)
                .map(|p| p.status),
            _ => None,
        };
        Ok(SessionRoute {
            lookup,
            pair_status,
        })
    }

    /// The chip's ports changed: links that went down or came up are events, and the state
    /// (and its snapshot, which gNMI serves) says the links' status again.
    pub(super) fn ports_changed(&mut self, up: &BTreeMap<u32, bool>) {
        if *up == self.ports_up {
            return;
        }
        // Both sides with the configuration running now: a commit is no link event, and a
        // link first heard of (efbd started) has nothing to compare with.
        let config = self.running_config();
        let before = crate::chip::links::link_states(&config, &self.ports_up);
        for (link, state) in crate::chip::links::link_states(&config, up) {
            let Some(was) = before.get(&link).filter(|w| w.up != state.up) else {
                continue;
            };
            let reason = if state.up {
                "both ports up again".to_string()
            } else {
                state.reason.clone()
            };
            self.events.emit(Event::LinkStatus(LinkStatus {
                link,
                from: was.word().to_string(),
                to: state.word().to_string(),
                reason,
            }));
        }
        self.ports_up = up.clone();
        self.state_version += 1;
    }

    /// Pairs whose liveness changed: the live state updated, the chip programmed (only the
    /// entries the change touches; the bypass first), then logged with the port to blame
    /// if a port went down, and the units whose status follows logged too.
    pub(super) fn liveness_changed(&mut self, mut verdicts: Verdicts) {
        if verdicts.changes.is_empty() {
            // The pairs probed changed (new ones are `init`): only the state says so.
            self.state_version += 1;
            return;
        }
        let config = self.running_config();
        let before = liveness::unit_statuses(&config, &self.live);
        for c in &verdicts.changes {
            let key = (c.unit.clone(), c.pair.clone());
            if c.new.is_live() {
                self.live.down_pairs.remove(&key);
            } else {
                self.live.down_pairs.insert(key);
            }
        }
        self.state_version += 1;
        self.program_liveness(&verdicts.changes);
        for (unit, pair, was, reason) in verdicts.blame_ports() {
            info!(unit = %unit, pair = %pair, %reason, "a pair's port is down");
            if let Some(liveness) = &self.liveness {
                liveness.explain_change(&unit, &pair, &was, &reason);
            }
        }
        for c in &verdicts.changes {
            self.events.emit(Event::Liveness(events::Liveness {
                unit: c.unit.clone(),
                pair: c.pair.clone(),
                from: c.old.as_str().into(),
                to: c.new.as_str().into(),
                reason: c.reason.clone(),
            }));
        }
        let reason = match verdicts.changes.as_slice() {
            [one] => format!("pair {} {}", one.pair, one.new.as_str()),
            many => format!("{} pairs changed", many.len()),
        };
        let after = liveness::unit_statuses(&config, &self.live);
        self.unit_changes(&before, &after, &reason);
    }

    /// Writes the live state to the chip, and logs how long after the verdict the bypass
    /// (and the rebalance, if any) was acknowledged: how long traffic still went to a dead
    /// filter after liveness knew.
    fn program_liveness(&self, changes: &[Change]) {
        let Some(driver) = &self.driver else {
            return;
        };
        match driver.set_liveness(self.live.clone()) {
            Ok(writes) => {
                let verdict = changes.first().map(|c| c.at);
                let since = |at: Option<Instant>| match (verdict, at) {
                    (Some(v), Some(at)) => at.saturating_duration_since(v).as_micros() as u64,
                    _ => 0,
                };
                info!(
                    written = writes.bypass + writes.rebalance,
                    rebalanced = writes.rebalance,
                    verdict_to_chip_us = since(writes.bypass_acked),
                    verdict_to_rebalance_us = since(writes.rebalance_acked),
                    "liveness programmed"
                );
            }
            Err(e) => self.events.emit(Event::chip_refusal("liveness change", &e)),
        }
    }

    /// An event for every unit whose status differs between `before` and `after`.
    fn unit_changes(
        &self,
        before: &BTreeMap<String, (bool, usize)>,
        after: &BTreeMap<String, (bool, usize)>,
        reason: &str,
    ) {
        for (unit, (active, live_pairs)) in after {
            let old = before.get(unit).map(|(a, _)| *a);
            if old.is_some_and(|old| old != *active) {
                self.events.emit(Event::UnitStatus(events::UnitStatus {
                    unit: unit.clone(),
                    from: liveness::unit_status_name(!active).into(),
                    to: liveness::unit_status_name(*active).into(),
                    live_pairs: *live_pairs,
                    reason: reason.to_string(),
                }));
            }
        }
    }
}
