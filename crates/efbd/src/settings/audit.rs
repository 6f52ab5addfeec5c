//! `[audit]`: the sizes of the audit and access logs, and how much of one caller they keep.

use serde::Deserialize;

use super::SettingRefused;

/// The audit: who changed what (DIR/audit.log), and who came and went or was refused
/// (DIR/access.log).
#[derive(Deserialize, serde::Serialize, Debug, Clone, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Audit {
    /// One file's size at most, in KiB: past it the file becomes NAME.1 and a new one
    /// starts.
    pub max_kib: u64,
    /// Files kept of each log, the current one included (NAME, NAME.1 ... NAME.N-1); the
    /// oldest is removed past it, and the new file says so.
    pub keep_files: u32,
    /// Accesses of one caller kept in full per minute; more are counted in one record.
    pub access_per_minute: u32,
}

/// Files of a log at most: `show system audit` may read them all.
const MAX_KEEP_FILES: u32 = 1000;

impl Default for Audit {
    /// A change's record is some 200 bytes (a commit, a call; 1 000 at most, as `what` and
    /// `result` are cut at 400 characters) and only admins and operators make accepted
    /// changes: 8 files of 4 MiB hold 32 000 to 160 000 of them, years of commits at tens a
    /// day. Refusals are accesses, counted past `access_per_minute`: one caller adds at
    /// most 21 records a minute to the access log.
    fn default() -> Audit {
        Audit {
            max_kib: 4096,
            keep_files: 8,
            access_per_minute: 20,
        }
    }
}

impl Audit {
    /// A file too small for a few records, or fewer than two files (a rotation would leave
    /// nothing but the record of what it removed), is refused before efbd starts.
    pub fn check(&self) -> Result<(), SettingRefused> {
        if self.max_kib < 16 {
            return Err(SettingRefused::AuditTooSmall);
        }
        if !(2..=MAX_KEEP_FILES).contains(&self.keep_files) {
            return Err(SettingRefused::OutOfRange {
                setting: "audit.keep_files".into(),
                value: self.keep_files as usize,
                least: 2,
                most: MAX_KEEP_FILES as usize,
            });
        }
        Ok(())
    }
}
