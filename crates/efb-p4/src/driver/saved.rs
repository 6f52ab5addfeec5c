//! What the driver keeps across restarts of efbd (`southbound.json`): the election id and
//! the chip's ids and bucket regions, read and written as efbd's own file.

use serde::{Deserialize, Serialize};

use super::DriverError;
use crate::ids::Ids;

/// What survives a restart of efbd.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(super) struct Saved {
    pub(super) election_id: u128,
    pub(super) ids: Ids,
}

/// Read as efbd's own file (in its datastore directory): not through a link, and only if
/// nobody else may have written it.
pub(super) fn load_state(path: &std::path::Path) -> Result<Saved, DriverError> {
    use efb_datastore::files::{self, FileError};
    match files::read_trusted(path) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| DriverError::State {
            path: path.display().to_string(),
            message: e.to_string(),
        }),
        Err(FileError::Io { error, .. }) if error.kind() == std::io::ErrorKind::NotFound => {
            Ok(Saved::default())
        }
        Err(e) => Err(DriverError::State {
            path: path.display().to_string(),
            message: e.to_string(),
        }),
    }
}

/// Written to a new temporary file and renamed: a crash leaves the old state or the new.
/// The temporary file is created exclusively, never through a link (efbd may be root), with
/// its mode set; the rename replaces whatever is at `path` without following it.
pub(super) fn save_state(path: &std::path::Path, saved: &Saved) -> std::io::Result<()> {
    use std::io::Write;
    let text = serde_json::to_string_pretty(saved).map_err(std::io::Error::other)?;
    let tmp = path.with_extension("tmp");
    // Left by a crash between creating and renaming it (removing a link removes the link).
    match std::fs::remove_file(&tmp) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut file = efb_datastore::files::create_new(&tmp, 0o644)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)
}
