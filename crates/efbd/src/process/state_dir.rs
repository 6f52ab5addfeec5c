//! The datastore directory (setting `datastore`): efbd writes its database, the audit log,
//! the generated gNMI certificate and, by default, its socket there. Checked before anything
//! starts, so that a directory efbd may not write stops it with one message naming the
//! setting and what to do, instead of a storage error from deep inside the database.
//!
//! It must also be efbd's alone: owned by the account efbd runs as and writable by nobody
//! else. Another account that may write there could replace the database, or plant a link
//! where efbd (often root) writes its key or its audit log. A missing directory is made with
//! mode 0711: other accounts may pass through to the socket, not list or change anything.

use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::Path;

use efb_datastore::files;
use nix::errno::Errno;
use nix::unistd::{AccessFlags, access, geteuid, getuid};

/// The mode of a datastore directory efbd makes: its own, and passable (not readable) by
/// others, who reach the management API's socket in it by default.
pub const CREATED_MODE: u32 = 0o711;

#[derive(Debug, thiserror::Error)]
#[error("datastore {path} (setting `datastore`, flag --datastore): {problem}; {remedy}")]
pub struct StateDirError {
    path: String,
    /// What is wrong, with the system's error when there is one.
    problem: String,
    remedy: String,
}

/// Creates `dir` if it is missing and checks that this account may create files in it and
/// that no other account may. A symbolic link at `dir` is judged by its owner, then the
/// directory it leads to as any other.
pub fn check(dir: &Path) -> Result<(), StateDirError> {
    let named = Named::of(dir)?;
    if std::fs::metadata(dir).is_err() {
        let account = format!("efbd's account (uid {})", getuid());
        create(dir).map_err(|e| named.unwritable(format!("{account} cannot create it"), e))?;
    }
    let meta =
        std::fs::metadata(dir).map_err(|e| named.unwritable("cannot inspect it".into(), e))?;
    if !meta.is_dir() {
        return Err(named.refused(
            "is not a directory".into(),
            "set `datastore` to a directory".into(),
        ));
    }
    access(dir, AccessFlags::W_OK | AccessFlags::X_OK).map_err(|errno| {
        let problem = format!("efbd's account (uid {}) may not write there", getuid());
        named.unwritable(problem, errno.into())
    })?;
    named.owned_by_efbd(&meta)?;
    named.writable_by_efbd_alone(&meta)
}

/// The datastore as the operator named it, and the directory it is: itself, or where the
/// symbolic link at its path leads (messages name both; fixes apply to the directory).
struct Named {
    /// How messages show it: `DIR`, or `DIR (a link to TARGET)`.
    shown: String,
    /// What `chmod` and `chown` are told to fix.
    directory: String,
}

impl Named {
    /// Judges a symbolic link at `dir` by its owner: one of another account than root or
    /// efbd's is that account's to re-point (in /tmp, or any directory it may write), to a
    /// directory of its own after efbd judged this one.
    fn of(dir: &Path) -> Result<Named, StateDirError> {
        let path = dir.display().to_string();
        let link = match std::fs::symlink_metadata(dir) {
            Ok(meta) if meta.file_type().is_symlink() => meta,
            _ => {
                return Ok(Named {
                    shown: path.clone(),
                    directory: path,
                });
            }
        };
        let target = std::fs::canonicalize(dir)
            .or_else(|_| std::fs::read_link(dir))
            .map_or_else(|_| "?".to_string(), |t| t.display().to_string());
        let named = Named {
            shown: format!("{path} (a link to {target})"),
            directory: target.clone(),
        };
        match files::foreign_owner(&link) {
            None => Ok(named),
            Some((owner, _)) => Err(named.refused(
                format!(
                    "is a symbolic link {owner}, so that account could re-point it to a \
                     directory of its own"
                ),
                format!(
                    "chown -h root {path}, or set `datastore` to the directory it leads to \
                     ({target})"
                ),
            )),
        }
    }

    fn refused(&self, problem: String, remedy: String) -> StateDirError {
        StateDirError {
            path: self.shown.clone(),
            problem,
            remedy,
        }
    }

    /// A directory efbd cannot create or write: with the system's error, and what to do.
    fn unwritable(&self, problem: String, error: io::Error) -> StateDirError {
        let remedy = if error.raw_os_error() == Some(Errno::EROFS as i32) {
            "under systemd, ProtectSystem=strict leaves only the state directory /var/lib/efb \
             writable: keep the datastore there, or add its directory to ReadWritePaths="
        } else {
            "give the directory to efbd's account (chown; under systemd StateDirectory=efb does \
             it for /var/lib/efb), or set `datastore` to a directory it may write"
        };
        self.refused(format!("{problem}: {error}"), remedy.to_string())
    }

    fn owned_by_efbd(&self, meta: &std::fs::Metadata) -> Result<(), StateDirError> {
        let me = geteuid().as_raw();
        if meta.uid() == me {
            return Ok(());
        }
        Err(self.refused(
            format!(
                "owned by {}, not by efbd's account {}, so another account could change \
                 efbd's database and files there",
                files::account(meta.uid()),
                files::account(me)
            ),
            format!(
                "chown {} {}, or run efbd as the account that owns it",
                files::chown_name(me),
                self.directory
            ),
        ))
    }

    fn writable_by_efbd_alone(&self, meta: &std::fs::Metadata) -> Result<(), StateDirError> {
        let Some(who) = files::writable_by(meta.mode()) else {
            return Ok(());
        };
        Err(self.refused(
            format!(
                "writable by {who} (mode {:04o}), so another account could replace efbd's \
                 database and files there, or plant links where efbd writes",
                meta.mode() & 0o7777
            ),
            format!("chmod go-w {}", self.directory),
        ))
    }
}

/// Makes the directory with [`CREATED_MODE`] whatever the umask; missing parents get 0755
/// (at most: the umask may narrow it).
fn create(dir: &Path) -> io::Result<()> {
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(parent)?;
    }
    match std::fs::DirBuilder::new().mode(CREATED_MODE).create(dir) {
        Ok(()) => std::fs::set_permissions(dir, std::fs::Permissions::from_mode(CREATED_MODE)),
        // Made meanwhile (another efbd starting): judged as found.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().mode() & 0o7777
    }

    #[test]
    fn a_missing_directory_is_created_with_its_mode() {
        let dir = tempfile::tempdir().unwrap();
        let datastore = dir.path().join("var/lib/efb");
        check(&datastore).unwrap();
        assert!(datastore.is_dir());
        assert_eq!(mode(&datastore), CREATED_MODE);
        // Found as made: accepted again.
        check(&datastore).unwrap();
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
        let err = check(&file).unwrap_err().to_string();
        assert!(err.contains("is not a directory"), "{err}");
    }

    #[test]
    fn a_directory_others_may_write_is_refused_one_they_may_read_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let datastore = dir.path().join("efb");
        std::fs::create_dir(&datastore).unwrap();
        for (bits, who) in [
            (0o777, "group and others (mode 0777)"),
            (0o770, "group (mode 0770)"),
            (0o1733, "group and others (mode 1733)"),
        ] {
            std::fs::set_permissions(&datastore, std::fs::Permissions::from_mode(bits)).unwrap();
            let err = check(&datastore).unwrap_err().to_string();
            assert_eq!(
                err,
                format!(
                    "datastore {path} (setting `datastore`, flag --datastore): writable by {who}, \
                     so another account could replace efbd's database and files there, or plant \
                     links where efbd writes; chmod go-w {path}",
                    path = datastore.display()
                )
            );
        }
        // A repository checkout's datastore/ (0755) is fine: readable is not writable.
        for bits in [0o755, 0o750, 0o700] {
            std::fs::set_permissions(&datastore, std::fs::Permissions::from_mode(bits)).unwrap();
            check(&datastore).unwrap();
        }
    }

    #[test]
    fn a_link_of_efbds_account_leads_to_a_directory_judged_as_any() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("efb");
        std::fs::create_dir(&target).unwrap();
        let link = dir.path().join("datastore");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        check(&link).unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o777)).unwrap();
        let target = std::fs::canonicalize(&target).unwrap();
        let err = check(&link).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!(
                "datastore {} (a link to {}) (setting `datastore`",
                link.display(),
                target.display()
            )) && err.ends_with(&format!("; chmod go-w {}", target.display())),
            "{err}"
        );
    }

    #[test]
    fn a_link_of_another_account_is_refused() {
        if !geteuid().is_root() {
            println!("SKIPPED: giving a link to another account needs root");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("efb");
        std::fs::create_dir(&target).unwrap();
        let link = dir.path().join("datastore");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        // nobody: neither root nor this process's account.
        std::os::unix::fs::lchown(&link, Some(65534), None).unwrap();
        let err = check(&link).unwrap_err().to_string();
        let target = std::fs::canonicalize(&target).unwrap();
        assert!(
            err.contains(": is a symbolic link owned by ")
                && err.contains(
                    "uid 65534), neither root nor efbd's account root (uid 0), so \
                     that account could re-point it to a directory of its own; "
                )
                && err.ends_with(&format!(
                    "chown -h root {}, or set `datastore` to the directory it leads to ({})",
                    link.display(),
                    target.display()
                )),
            "{err}"
        );
        // The fix given works.
        std::os::unix::fs::lchown(&link, Some(0), None).unwrap();
        check(&link).unwrap();
    }

    #[test]
    fn a_directory_of_another_account_is_refused() {
        if !geteuid().is_root() {
            println!("SKIPPED: giving a directory to another account needs root");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let datastore = dir.path().join("efb");
        std::fs::create_dir(&datastore).unwrap();
        // nobody: neither root nor this process's account.
        std::os::unix::fs::chown(&datastore, Some(65534), None).unwrap();
        let err = check(&datastore).unwrap_err().to_string();
        assert!(
            err.contains("uid 65534")
                && err.contains("not by efbd's account root (uid 0)")
                && err.ends_with(&format!(
                    "chown root {}, or run efbd as the account that owns it",
                    datastore.display()
                )),
            "{err}"
        );
    }
}
