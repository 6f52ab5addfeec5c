//! `[audit]`: the sizes of the audit and access logs, and how much of one caller they keep.

use serde::Deserialize;

/// The audit: who changed what, or was refused (DIR/audit.log), and who came and went or
/// was refused for their role (DIR/access.log).
#[derive(Deserialize, serde::Serialize, Debug, Clone, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Audit {
    /// Each log's size at most, in KiB (the older half is dropped past it).
    pub max_kib: u64,
    /// Accesses of one caller kept in full per minute; more are counted in one record.
    pub access_per_minute: u32,
}

impl Default for Audit {
    fn default() -> Audit {
        Audit {
            max_kib: 4096,
            access_per_minute: 20,
        }
    }
}
