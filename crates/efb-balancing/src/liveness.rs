use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// The manual control of a whole unit (rpc set-bypass-ecofilter-unit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BypassMode {
    /// Liveness decides: the normal state, and what a unit absent from
    /// [`LiveState::modes`] is in.
    #[default]
    Auto,
    Bypass,
    Primary,
}

impl BypassMode {
    /// The YANG enum names, which the RPC and the CLI use verbatim.
    pub fn as_str(self) -> &'static str {
        match self {
            BypassMode::Auto => "auto",
            BypassMode::Bypass => "bypass",
            BypassMode::Primary => "primary",
        }
    }

    pub fn parse(text: &str) -> Option<BypassMode> {
        Some(match text {
            "auto" => BypassMode::Auto,
            "bypass" => BypassMode::Bypass,
            "primary" => BypassMode::Primary,
            _ => return None,
        })
    }
}

/// Runtime state kept apart from the configuration: it changes with every keep-alive, and
/// the offline tool has to be able to ask "what if these pairs were down".
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LiveState {
    /// (unit, pair) names of pairs that are down; listing what is down, not what is up,
    /// makes a freshly configured pair live until liveness says otherwise.
    pub down_pairs: BTreeSet<(String, String)>,
    pub modes: BTreeMap<String, BypassMode>,
}

impl LiveState {
    pub fn all_up() -> LiveState {
        LiveState::default()
    }

    pub fn mode(&self, unit: &str) -> BypassMode {
        self.modes.get(unit).copied().unwrap_or_default()
    }

    pub fn is_pair_up(&self, unit: &str, pair: &str) -> bool {
        !self
            .down_pairs
            .contains(&(unit.to_string(), pair.to_string()))
    }
}

/// Whether a unit filters traffic (`active`) or bypasses all of it. `bypass` and `primary`
/// are the operator's; in `auto` the unit needs `active_pairs` live pairs (its liveness
/// profile's; without a profile nothing is probed and the unit is active). The compiler
/// and the state the daemon shows both ask this, so they cannot disagree.
pub fn unit_active(mode: BypassMode, live_pairs: usize, active_pairs: Option<u16>) -> bool {
    match mode {
        BypassMode::Bypass => false,
        BypassMode::Primary => true,
        BypassMode::Auto => active_pairs.is_none_or(|needed| live_pairs >= usize::from(needed)),
    }
}
