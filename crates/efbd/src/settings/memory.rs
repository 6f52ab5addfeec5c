//! `[memory]`: what efbd holds for its clients at most, whatever the door (the management
//! API, gNMI): requests being received, what they inflate and decode to, replies being built
//! and sent, subscriptions' queues. See efb_northbound::budget.

use serde::Deserialize;

use super::SettingRefused;

const MIB: usize = 1024 * 1024;

/// The budget, in MiB. The defaults fit a configured efbd in 256 MiB (its unit's MemoryMax
/// is 2G): about 60 MiB of its own, 64 KiB of HTTP/2 window and some 40 KiB of TLS and
/// HTTP/2 state for each of its 256 + 128 connections (40 MiB), and `clients_mib`.
#[derive(Deserialize, serde::Serialize, Debug, Clone, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Memory {
    /// All clients together.
    pub clients_mib: usize,
    /// One account (a user of the users file, a Unix account): all its requests and
    /// connections together. The largest configuration a client may send
    /// (`max_input_mib`, `gnmi.max_message_mib`) must fit in it twice: as sent, and read.
    pub per_account_mib: usize,
    /// One connection.
    pub per_connection_mib: usize,
    /// Of `clients_mib`, what only admins may take.
    pub kept_for_admins_mib: usize,
}

impl Default for Memory {
    fn default() -> Memory {
        Memory {
            clients_mib: 128,
            per_account_mib: 80,
            per_connection_mib: 80,
            kept_for_admins_mib: 48,
        }
    }
}

impl Memory {
    /// Refuses a budget that would refuse everything, or the largest configuration.
    pub(super) fn check(&self, largest: &[(usize, &'static str)]) -> Result<(), SettingRefused> {
        for (value, setting) in [
            (self.clients_mib, "memory.clients_mib"),
            (self.per_account_mib, "memory.per_account_mib"),
            (self.per_connection_mib, "memory.per_connection_mib"),
        ] {
            if value == 0 {
                return Err(SettingRefused::Zero {
                    setting: setting.to_string(),
                });
            }
        }
        if self.kept_for_admins_mib >= self.clients_mib {
            return Err(SettingRefused::NothingLeft {
                setting: "memory.kept_for_admins_mib".into(),
                kept: self.kept_for_admins_mib,
                what: "memory",
                limit_setting: "memory.clients_mib".into(),
                limit: self.clients_mib,
            });
        }
        for &(mib, setting) in largest {
            if mib.saturating_mul(2) >= self.per_account_mib {
                return Err(SettingRefused::Unfit {
                    setting,
                    mib,
                    per_account_mib: self.per_account_mib,
                });
            }
        }
        Ok(())
    }

    pub fn limits(&self) -> efb_northbound::budget::Limits {
        efb_northbound::budget::Limits {
            total: self.clients_mib.saturating_mul(MIB),
            per_account: self.per_account_mib.saturating_mul(MIB),
            per_connection: self.per_connection_mib.saturating_mul(MIB),
            kept_for_admins: self.kept_for_admins_mib.saturating_mul(MIB),
        }
    }
}
