//! Files efbd keeps in its datastore directory (the generated TLS key and certificate, the
//! audit log, the database's directory, the chip's state, the factory default) and the
//! files an administrator names for it (the users file, a TLS key): who may have written
//! them decides whether efbd may trust them.
//!
//! efbd often runs as root. A file it creates is therefore created exclusively (O_EXCL),
//! with its mode set exactly (not left to the umask), and opened without following a
//! symbolic link (O_NOFOLLOW): a link planted where efbd writes would otherwise make it
//! overwrite or append to any file of the system. A file it reads there, or appends to,
//! must be a regular file of root or its own account, writable by nobody else: what is in
//! it decides the box (the configuration it boots, the record of who did what). A file an administrator names may be a link
//! (`/etc/efb/users.toml` pointing into a configuration tree is fine): the file at its end
//! must be owned by root or by efbd's account, and writable by nobody else, since whoever
//! can write it decides who logs in, or holds the server's key.
//!
//! Every error names the file, what is wrong and the command that fixes it.

use std::fs::{File, Metadata, OpenOptions, Permissions};
use std::io::{self, Read};
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::unistd::{Uid, User, geteuid};

/// Why a file is not opened, created or trusted; the message names the file and the fix.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error(
        "{path}: is a symbolic link; efbd does not follow links to the files it keeps in its \
         datastore directory (a link planted there would make it write, or trust, whatever it \
         points at): remove the link (rm {path})"
    )]
    Symlink { path: String },
    #[error("{path}: is {kind}, where efbd expects a regular file")]
    NotRegular { path: String, kind: &'static str },
    #[error("{path}: exists already, and efbd only creates new files there: remove it")]
    Exists { path: String },
    #[error("{path}: {detail}, so another account could change what efbd trusts in it; {remedy}")]
    Untrusted {
        path: String,
        detail: String,
        remedy: String,
    },
    #[error("cannot {action} {path}: {error}")]
    Io {
        path: String,
        action: &'static str,
        // Not a `source`: the message already says it, and anyhow would print it twice.
        error: io::Error,
    },
}

impl FileError {
    /// The file is not there (a first start, a log not rotated yet).
    pub fn is_missing(&self) -> bool {
        matches!(self, FileError::Io { error, .. } if error.kind() == io::ErrorKind::NotFound)
    }

    fn io(path: &Path, action: &'static str, error: io::Error) -> FileError {
        FileError::Io {
            path: path.display().to_string(),
            action,
            error,
        }
    }
}

/// For callers that speak `io::Result` (the audit log): the same message, and the kind of
/// the underlying error when there is one.
impl From<FileError> for io::Error {
    fn from(error: FileError) -> io::Error {
        let kind = match &error {
            FileError::Io { error, .. } => error.kind(),
            FileError::Exists { .. } => io::ErrorKind::AlreadyExists,
            _ => io::ErrorKind::InvalidData,
        };
        io::Error::new(kind, error.to_string())
    }
}

/// Creates `path`, which must not exist (not even as a symbolic link), with exactly `mode`,
/// for writing.
pub fn create_new(path: &Path, mode: u32) -> Result<File, FileError> {
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(OFlag::O_NOFOLLOW.bits())
        .open(path)
        .map_err(|e| refused(path, "create", e))?;
    exact_mode(path, &file, mode)?;
    Ok(file)
}

/// Opens `path` for appending, creating it with exactly `mode` when it is missing. A
/// symbolic link, a FIFO or anything else that is not a regular file is refused, and so is
/// a file found there that is not efbd's (another account could have written records in
/// it, or could write more).
pub fn open_append(path: &Path, mode: u32) -> Result<File, FileError> {
    // Two tries: the file may be removed between finding it there and opening it.
    for _ in 0..2 {
        match OpenOptions::new()
            .append(true)
            .create_new(true)
            .mode(mode)
            .custom_flags(OFlag::O_NOFOLLOW.bits())
            .open(path)
        {
            Ok(file) => {
                exact_mode(path, &file, mode)?;
                return Ok(file);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(refused(path, "create", e)),
        }
        // O_NONBLOCK: opening a FIFO for writing would otherwise wait for a reader; it does
        // nothing to a regular file.
        match OpenOptions::new()
            .append(true)
            .custom_flags((OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK).bits())
            .open(path)
        {
            Ok(file) => {
                let meta = file
                    .metadata()
                    .map_err(|e| FileError::io(path, "inspect", e))?;
                regular(path, &meta)?;
                trusted(path, &meta)?;
                return Ok(file);
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(refused(path, "open", e)),
        }
    }
    Err(FileError::io(
        path,
        "open",
        io::Error::other("it keeps appearing and disappearing"),
    ))
}

/// Reads a file efbd keeps (one it made earlier, such as the generated TLS key): not
/// through a symbolic link, a regular file owned by root or efbd's account, writable by
/// nobody else.
pub fn read_trusted(path: &Path) -> Result<String, FileError> {
    read_all(path, open_trusted(path)?)
}

/// Reads a file an administrator named for efbd (the users file, a TLS key, a client CA):
/// links are followed, and the file they lead to must be a regular file owned by root or
/// efbd's account, writable by nobody else.
pub fn read_configured(path: &Path) -> Result<String, FileError> {
    read_all(path, open_configured(path)?)
}

/// Opens a file efbd keeps, judged as [`read_trusted`] judges it, for a caller that reads
/// it its own way (the factory default, read within a size limit).
pub fn open_trusted(path: &Path) -> Result<File, FileError> {
    open_judged(path, OFlag::O_NOFOLLOW)
}

/// Opens a file an administrator named, judged as [`read_configured`] judges it.
pub fn open_configured(path: &Path) -> Result<File, FileError> {
    open_judged(path, OFlag::empty())
}

/// Judges a file efbd keeps and reads later (the audit log's older files) as
/// [`read_trusted`] would, without reading it: at start, so that a file planted there
/// stops efbd then rather than being skipped in silence later. A missing file is fine.
pub fn check_trusted(path: &Path) -> Result<(), FileError> {
    match open_trusted(path) {
        Err(e) if e.is_missing() => Ok(()),
        judged => judged.map(drop),
    }
}

/// Opens, then judges the file opened (not the path again: it might change in between).
fn open_judged(path: &Path, flags: OFlag) -> Result<File, FileError> {
    // O_NONBLOCK: opening a FIFO would wait for a writer; it does nothing to a file.
    let file = OpenOptions::new()
        .read(true)
        .custom_flags((flags | OFlag::O_NONBLOCK).bits())
        .open(path)
        .map_err(|e| refused(path, "read", e))?;
    let meta = file
        .metadata()
        .map_err(|e| FileError::io(path, "inspect", e))?;
    regular(path, &meta)?;
    trusted(path, &meta)?;
    Ok(file)
}

fn read_all(path: &Path, mut file: File) -> Result<String, FileError> {
    let mut text = String::new();
    file.read_to_string(&mut text)
        .map_err(|e| FileError::io(path, "read", e))?;
    Ok(text)
}

/// Makes the directory `path` private to efbd's account (mode 0700), creating it when it
/// is missing. The database keeps its files there: they are created under the umask, so
/// the directory's mode is what keeps other accounts out, and its owner must be root or
/// efbd's account (0700 would give another owner the database).
pub fn private_dir(path: &Path) -> Result<(), FileError> {
    const PRIVATE: u32 = 0o700;
    match std::fs::DirBuilder::new().mode(PRIVATE).create(path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(FileError::io(path, "create", e)),
    }
    let meta = std::fs::symlink_metadata(path).map_err(|e| FileError::io(path, "inspect", e))?;
    if meta.file_type().is_symlink() {
        return Err(FileError::Symlink {
            path: path.display().to_string(),
        });
    }
    if !meta.is_dir() {
        return Err(FileError::NotRegular {
            path: path.display().to_string(),
            kind: kind(&meta),
        });
    }
    if let Some((detail, owner)) = foreign_owner(&meta) {
        let shown = path.display().to_string();
        return Err(FileError::Untrusted {
            detail,
            // -R: the database's files in it were made by that account too.
            remedy: format!("chown -R {owner} {shown}"),
            path: shown,
        });
    }
    // Also when it exists: made by an earlier efbd under umask 022, it was open to everyone.
    if meta.mode() & 0o7777 != PRIVATE {
        std::fs::set_permissions(path, Permissions::from_mode(PRIVATE))
            .map_err(|e| FileError::io(path, "chmod 0700", e))?;
    }
    Ok(())
}

/// `efb (uid 996)`: how messages name an account (`uid 1234` without a name).
pub fn account(uid: u32) -> String {
    match User::from_uid(Uid::from_raw(uid)) {
        Ok(Some(user)) => format!("{} (uid {uid})", user.name),
        _ => format!("uid {uid}"),
    }
}

/// Who besides the owner may write, by these permission bits: "group", "others", "group
/// and others", or None.
pub fn writable_by(mode: u32) -> Option<&'static str> {
    match (mode & 0o020 != 0, mode & 0o002 != 0) {
        (true, true) => Some("group and others"),
        (true, false) => Some("group"),
        (false, true) => Some("others"),
        (false, false) => None,
    }
}

/// The umask does not widen a mode, but it may narrow it: the mode asked for is set.
fn exact_mode(path: &Path, file: &File, mode: u32) -> Result<(), FileError> {
    file.set_permissions(Permissions::from_mode(mode))
        .map_err(|e| FileError::io(path, "set the mode of", e))
}

/// An open or create that failed: a symbolic link in the way is said as such.
fn refused(path: &Path, action: &'static str, error: io::Error) -> FileError {
    // ELOOP: O_NOFOLLOW met a link; EEXIST: O_EXCL met something, maybe a link.
    let maybe_link = error.raw_os_error() == Some(Errno::ELOOP as i32)
        || error.kind() == io::ErrorKind::AlreadyExists;
    if maybe_link && let Ok(meta) = std::fs::symlink_metadata(path) {
        if meta.file_type().is_symlink() {
            return FileError::Symlink {
                path: path.display().to_string(),
            };
        }
        if error.kind() == io::ErrorKind::AlreadyExists {
            return FileError::Exists {
                path: path.display().to_string(),
            };
        }
    }
    FileError::io(path, action, error)
}

fn regular(path: &Path, meta: &Metadata) -> Result<(), FileError> {
    if meta.is_file() {
        return Ok(());
    }
    Err(FileError::NotRegular {
        path: path.display().to_string(),
        kind: kind(meta),
    })
}

fn kind(meta: &Metadata) -> &'static str {
    let kind = meta.file_type();
    if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_block_device() || kind.is_char_device() {
        "a device"
    } else if kind.is_symlink() {
        "a symbolic link"
    } else {
        "a regular file"
    }
}

/// Owned by root or efbd's account, and writable by no one else.
fn trusted(path: &Path, meta: &Metadata) -> Result<(), FileError> {
    // Through a link, the file to change is the one it leads to: named as well.
    let target = std::fs::symlink_metadata(path)
        .ok()
        .filter(|m| m.file_type().is_symlink())
        .and_then(|_| std::fs::canonicalize(path).ok());
    let (path, shown) = match &target {
        Some(target) => (
            target.as_path(),
            format!("{} (a link to {})", path.display(), target.display()),
        ),
        None => (path, path.display().to_string()),
    };
    let fix = path.display();
    if let Some((detail, owner)) = foreign_owner(meta) {
        return Err(FileError::Untrusted {
            detail,
            remedy: format!("chown {owner} {fix}"),
            path: shown,
        });
    }
    if let Some(who) = writable_by(meta.mode()) {
        return Err(FileError::Untrusted {
            detail: format!("writable by {who} (mode {:04o})", meta.mode() & 0o7777),
            remedy: format!("chmod go-w {fix}"),
            path: shown,
        });
    }
    Ok(())
}

/// When the owner is neither root nor efbd's account: what to say of it, and who should
/// own it instead (`root`, or `root or efb`: either, as `chown` would be told).
pub fn foreign_owner(meta: &Metadata) -> Option<(String, String)> {
    let me = geteuid().as_raw();
    if meta.uid() == 0 || meta.uid() == me {
        return None;
    }
    let owner = if me == 0 {
        "root".to_string()
    } else {
        format!("root or {}", chown_name(me))
    };
    let detail = format!(
        "owned by {}, neither root nor efbd's account {}",
        account(meta.uid()),
        account(me)
    );
    Some((detail, owner))
}

/// The account's name as `chown` takes it, or its number.
pub fn chown_name(uid: u32) -> String {
    match User::from_uid(Uid::from_raw(uid)) {
        Ok(Some(user)) => user.name,
        _ => uid.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use std::io::Write;
    use std::os::unix::fs::symlink;

    fn mode(path: &Path) -> u32 {
        std::fs::symlink_metadata(path).unwrap().mode() & 0o7777
    }

    #[test]
    fn new_files_get_their_mode_whatever_the_umask_and_are_never_reused() {
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("key.pem");
        let mut file = create_new(&key, 0o600).unwrap();
        file.write_all(b"secret").unwrap();
        assert_eq!(mode(&key), 0o600);
        let cert = dir.path().join("cert.pem");
        create_new(&cert, 0o644).unwrap();
        assert_eq!(mode(&cert), 0o644);
        let err = create_new(&key, 0o600).unwrap_err().to_string();
        assert!(err.contains("exists already"), "{err}");
        assert_eq!(std::fs::read_to_string(&key).unwrap(), "secret");
    }

    #[test]
    fn a_planted_link_is_refused_and_its_target_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("root-only");
        std::fs::write(&target, "precious").unwrap();
        let link = dir.path().join("gnmi-key.pem");
        symlink(&target, &link).unwrap();
        for err in [
            create_new(&link, 0o600).unwrap_err(),
            open_append(&link, 0o640).unwrap_err(),
            read_trusted(&link).unwrap_err(),
        ] {
            assert!(matches!(err, FileError::Symlink { .. }), "{err}");
            let text = err.to_string();
            assert!(
                text.starts_with(&format!("{}: is a symbolic link", link.display()))
                    && text.contains(&format!("rm {}", link.display())),
                "{text}"
            );
        }
        // A dangling link too: O_CREAT would have created its target.
        let dangling = dir.path().join("audit.log");
        symlink(dir.path().join("nowhere"), &dangling).unwrap();
        assert!(matches!(
            open_append(&dangling, 0o640),
            Err(FileError::Symlink { .. })
        ));
        assert!(!dir.path().join("nowhere").exists());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious");
    }

    #[test]
    fn appending_creates_with_the_mode_then_appends_and_refuses_a_fifo() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("audit.log");
        open_append(&log, 0o640)
            .unwrap()
            .write_all(b"one\n")
            .unwrap();
        assert_eq!(mode(&log), 0o640);
        open_append(&log, 0o640)
            .unwrap()
            .write_all(b"two\n")
            .unwrap();
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "one\ntwo\n");
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let err = open_append(&fifo, 0o640).unwrap_err().to_string();
        // No reader: the open itself fails rather than wait (ENXIO), naming the file.
        assert!(err.contains(&fifo.display().to_string()), "{err}");
        let err = read_configured(&fifo).unwrap_err().to_string();
        assert!(
            err.contains("is a FIFO (named pipe), where efbd expects a regular file"),
            "{err}"
        );
    }

    #[test]
    fn files_others_may_write_are_not_trusted_links_to_good_ones_are() {
        let dir = tempfile::tempdir().unwrap();
        let users = dir.path().join("users.toml");
        std::fs::write(&users, "[[user]]\n").unwrap();
        std::fs::set_permissions(&users, Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read_configured(&users).unwrap(), "[[user]]\n");
        let link = dir.path().join("link.toml");
        symlink(&users, &link).unwrap();
        assert_eq!(read_configured(&link).unwrap(), "[[user]]\n");
        for (bits, who) in [
            (0o666, "group and others (mode 0666)"),
            (0o620, "group (mode 0620)"),
            (0o602, "others (mode 0602)"),
        ] {
            std::fs::set_permissions(&users, Permissions::from_mode(bits)).unwrap();
            for (err, named) in [
                (read_configured(&users), users.display().to_string()),
                (
                    read_configured(&link),
                    format!("{} (a link to {})", link.display(), users.display()),
                ),
                (read_trusted(&users), users.display().to_string()),
            ] {
                let err = err.unwrap_err().to_string();
                assert!(
                    err.starts_with(&format!("{named}: writable by {who}"))
                        && err.ends_with(&format!("chmod go-w {}", users.display())),
                    "{err}"
                );
            }
        }
    }

    #[test]
    fn a_file_of_another_account_is_not_trusted() {
        if !geteuid().is_root() {
            println!("SKIPPED: giving a file to another account needs root");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let users = dir.path().join("users.toml");
        std::fs::write(&users, "").unwrap();
        // nobody: an account that is neither root nor this process's.
        std::os::unix::fs::chown(&users, Some(65534), None).unwrap();
        let err = read_configured(&users).unwrap_err().to_string();
        assert!(
            err.contains("owned by ")
                && err.contains("uid 65534")
                && err.contains("neither root nor efbd's account root (uid 0)")
                && err.ends_with(&format!("chown root {}", users.display())),
            "{err}"
        );
    }

    #[test]
    fn a_log_others_may_write_is_not_appended_to_or_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("audit.log");
        std::fs::write(&log, "{\"forged\": true}\n").unwrap();
        std::fs::set_permissions(&log, Permissions::from_mode(0o666)).unwrap();
        let old = dir.path().join("audit.log.1");
        std::fs::write(&old, "").unwrap();
        std::fs::set_permissions(&old, Permissions::from_mode(0o602)).unwrap();
        let err = open_append(&log, 0o640).unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "{path}: writable by group and others (mode 0666), so another account could \
                 change what efbd trusts in it; chmod go-w {path}",
                path = log.display()
            )
        );
        let err = check_trusted(&old).unwrap_err().to_string();
        assert!(err.contains("writable by others (mode 0602)"), "{err}");
        // Missing is fine (not rotated yet); a link is not.
        check_trusted(&dir.path().join("access.log.1")).unwrap();
        let link = dir.path().join("access.log.1");
        symlink(&log, &link).unwrap();
        assert!(matches!(
            check_trusted(&link),
            Err(FileError::Symlink { .. })
        ));
        std::fs::set_permissions(&log, Permissions::from_mode(0o640)).unwrap();
        open_append(&log, 0o640).unwrap();
        let opened = open_trusted(&log).unwrap();
        assert!(opened.metadata().unwrap().is_file());
    }

    #[test]
    fn a_log_or_database_directory_of_another_account_is_refused() {
        if !geteuid().is_root() {
            println!("SKIPPED: giving a file to another account needs root");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("audit.log");
        std::fs::write(&log, "").unwrap();
        std::fs::set_permissions(&log, Permissions::from_mode(0o640)).unwrap();
        std::os::unix::fs::chown(&log, Some(65534), None).unwrap();
        let err = open_append(&log, 0o640).unwrap_err().to_string();
        assert!(
            err.contains("uid 65534") && err.ends_with(&format!("chown root {}", log.display())),
            "{err}"
        );
        let db = dir.path().join("db");
        std::fs::create_dir(&db).unwrap();
        std::os::unix::fs::chown(&db, Some(65534), None).unwrap();
        let err = private_dir(&db).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("{}: owned by ", db.display()))
                && err.ends_with(&format!("chown -R root {}", db.display())),
            "{err}"
        );
    }

    #[test]
    fn the_private_directory_is_0700_made_or_found() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("db");
        private_dir(&db).unwrap();
        assert_eq!(mode(&db), 0o700);
        std::fs::set_permissions(&db, Permissions::from_mode(0o755)).unwrap();
        private_dir(&db).unwrap();
        assert_eq!(mode(&db), 0o700);
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        let link = dir.path().join("db-link");
        symlink(&elsewhere, &link).unwrap();
        assert!(matches!(private_dir(&link), Err(FileError::Symlink { .. })));
    }
}
