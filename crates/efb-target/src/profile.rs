//! How strict the target is. `spec` accepts everything the P4Runtime specification
//! allows; `stratum-tofino` (the default) also refuses what Stratum on Tofino refuses,
//! so that a driver that works here works on the real box.

use std::fmt;
use std::str::FromStr;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Profile {
    Spec,
    #[default]
    StratumTofino,
}

/// Tofino's TCAM priorities are 24 bits wide.
pub const STRATUM_TOFINO_MAX_PRIORITY: i32 = (1 << 24) - 1;

impl Profile {
    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Spec => "spec",
            Profile::StratumTofino => "stratum-tofino",
        }
    }

    pub fn is_stratum(self) -> bool {
        self == Profile::StratumTofino
    }

    /// Stratum insists on the shortest byte strings; the specification asks servers to
    /// accept zero-padded ones too (P4Runtime 1.4, section "Bytestrings").
    pub fn canonical_bytes_required(self) -> bool {
        self.is_stratum()
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A profile name the target does not have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown profile {0:?} (spec, stratum-tofino)")]
pub struct UnknownProfile(pub String);

impl FromStr for Profile {
    type Err = UnknownProfile;

    fn from_str(s: &str) -> Result<Profile, UnknownProfile> {
        match s {
            "spec" => Ok(Profile::Spec),
            "stratum-tofino" => Ok(Profile::StratumTofino),
            other => Err(UnknownProfile(other.to_string())),
        }
    }
}
