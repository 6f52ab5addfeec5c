//! `[p4runtime]`: the chip's P4Runtime server, or none (no data plane).

use serde::Deserialize;

#[derive(Deserialize, serde::Serialize, Debug, Clone, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct P4Runtime {
    /// False: no data plane, commits change the configuration only.
    pub enabled: bool,
    pub target: String,
    pub device_id: u64,
}

impl Default for P4Runtime {
    fn default() -> P4Runtime {
        P4Runtime {
            enabled: true,
            target: "127.0.0.1:9559".to_string(),
            device_id: 1,
        }
    }
}
