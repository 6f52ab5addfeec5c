//! The datastore directory (setting `datastore`): efbd writes its database, the audit log,
//! the generated gNMI certificate and, by default, its socket there. Checked before anything
//! starts, so that a directory efbd may not write stops it with one message naming the
//! setting and what to do, instead of a storage error from deep inside the database.

use std::io;
use std::path::Path;

use nix::errno::Errno;
use nix::unistd::{AccessFlags, access, getuid};

#[derive(Debug, thiserror::Error)]
#[error("datastore {path} (setting `datastore`, flag --datastore): {problem}: {error}; {remedy}")]
pub struct StateDirError {
    path: String,
    problem: String,
    // Not a `source`: the message already says it, and anyhow would print it twice.
    error: io::Error,
    remedy: &'static str,
}

/// Creates `dir` if it is missing and checks that this account may create files in it.
pub fn check(dir: &Path) -> Result<(), StateDirError> {
    let refused = |problem: String, error: io::Error| {
        let remedy = if error.raw_os_error() == Some(Errno::EROFS as i32) {
            "under systemd, ProtectSystem=strict leaves only the state directory /var/lib/efb \
             writable: keep the datastore there, or add its directory to ReadWritePaths="
        } else {
            "give the directory to efbd's account (chown; under systemd StateDirectory=efb does \
             it for /var/lib/efb), or set `datastore` to a directory it may write"
        };
        StateDirError {
            path: dir.display().to_string(),
            problem,
            error,
            remedy,
        }
    };
    let account = format!("efbd's account (uid {})", getuid());
    std::fs::create_dir_all(dir).map_err(|e| refused(format!("{account} cannot create it"), e))?;
    access(dir, AccessFlags::W_OK | AccessFlags::X_OK)
        .map_err(|errno| refused(format!("{account} may not write there"), errno.into()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_missing_directory_is_created() {
        let dir = tempfile::tempdir().unwrap();
        let datastore = dir.path().join("var/lib/efb");
        check(&datastore).unwrap();
        assert!(datastore.is_dir());
    }

    #[test]
    fn a_file_in_the_way_is_named_with_the_setting() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("plain");
        std::fs::write(&file, "x").unwrap();
        let err = check(&file.join("db")).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!(
                "datastore {}/db (setting `datastore`",
                file.display()
            )) && err.contains("cannot create it"),
            "{err}"
        );
    }
}
