//! The management API's Unix socket: bound at the configured path with the configured
//! mode and group, a stale one (left by an efbd that was killed) replaced, one another
//! process serves refused, removed when efbd stops. A symbolic link at the path is refused,
//! never followed: efbd often runs as root, and the mode and group it sets would otherwise
//! go to whatever file the link names.

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use nix::fcntl::{AT_FDCWD, AtFlags};
use nix::sys::stat::{FchmodatFlags, Mode, fchmodat};
use nix::unistd::{Group, fchownat};
use tokio::net::UnixListener;

use crate::settings::Management;

/// sun_path holds 108 bytes with the terminating NUL.
const MAX_PATH_BYTES: usize = 107;

#[derive(Debug, thiserror::Error)]
pub enum SocketError {
    #[error(
        "management.socket {path}: {len} bytes; a Unix socket path has at most {MAX_PATH_BYTES} (set a shorter management.socket, --mgmt-socket)"
    )]
    TooLong { path: String, len: usize },
    #[error("management.socket {0}: exists and is not a socket; remove it or set another path")]
    NotASocket(String),
    #[error(
        "management.socket {0}: is a symbolic link, which efbd does not follow (it would set the mode of what it names); remove it or set another path"
    )]
    Symlink(String),
    #[error("management.socket {0}: another process serves it (another efbd?)")]
    InUse(String),
    #[error("management.socket_group {0}: no such group")]
    NoGroup(String),
    #[error("management.socket {path}: {action}: {source}")]
    Io {
        path: String,
        action: &'static str,
        source: std::io::Error,
    },
}

/// The socket's file, removed when this is dropped (efbd stops).
pub struct SocketFile(pub PathBuf);

impl Drop for SocketFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Binds `path` with the mode and group of `settings`.
pub fn bind(path: &Path, settings: &Management) -> Result<(UnixListener, SocketFile), SocketError> {
    let shown = path.display().to_string();
    let io = |action| {
        let path = shown.clone();
        move |source| SocketError::Io {
            path,
            action,
            source,
        }
    };
    let len = path.as_os_str().len();
    if len > MAX_PATH_BYTES {
        return Err(SocketError::TooLong { path: shown, len });
    }
    let mode = settings
        .socket_mode_bits()
        .map_err(|message| SocketError::Io {
            path: shown.clone(),
            action: "socket_mode",
            source: std::io::Error::other(message.to_string()),
        })?;
    let gid = match &settings.socket_group {
        Some(name) => Some(
            Group::from_name(name)
                .ok()
                .flatten()
                .ok_or_else(|| SocketError::NoGroup(name.clone()))?
                .gid,
        ),
        None => None,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(io("creating its directory"))?;
    }
    remove_stale(path)?;
    let listener = UnixListener::bind(path).map_err(io("binding"))?;
    let file = SocketFile(path.to_path_buf());
    // On the socket itself, not through a link someone may have put in its place since
    // the bind: both refuse a link (fchmodat says EOPNOTSUPP) instead of following it.
    if let Some(gid) = gid {
        fchownat(
            AT_FDCWD,
            path,
            None,
            Some(gid),
            AtFlags::AT_SYMLINK_NOFOLLOW,
        )
        .map_err(|e| io("setting its group")(e.into()))?;
    }
    fchmodat(
        AT_FDCWD,
        path,
        Mode::from_bits_truncate(mode),
        FchmodatFlags::NoFollowSymlink,
    )
    .map_err(|e| io("setting its mode")(e.into()))?;
    Ok((listener, file))
}

/// Removes a socket nobody serves any more; refuses a live one, or a file that is not a
/// socket.
fn remove_stale(path: &Path) -> Result<(), SocketError> {
    let shown = path.display().to_string();
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    if meta.file_type().is_symlink() {
        return Err(SocketError::Symlink(shown));
    }
    if !meta.file_type().is_socket() {
        return Err(SocketError::NotASocket(shown));
    }
    if std::os::unix::net::UnixStream::connect(path).is_ok() {
        return Err(SocketError::InUse(shown));
    }
    std::fs::remove_file(path).map_err(|source| SocketError::Io {
        path: shown,
        action: "removing the stale socket",
        source,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[tokio::test]
    async fn bound_with_its_mode_stale_ones_replaced_live_ones_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run/efbd.sock");
        let settings = Management {
            socket_mode: "0660".into(),
            ..Management::default()
        };
        let socket = bind(&path, &settings).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o660);
        let err = bind(&path, &settings).err().unwrap().to_string();
        assert!(err.contains("another process serves it"), "{err}");
        drop(socket);
        assert!(!path.exists(), "removed when efbd stops");
        // Killed: the file stays, nobody serves it; the next efbd replaces it.
        drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
        assert!(path.exists());
        assert!(bind(&path, &settings).is_ok());
        let file = dir.path().join("plain");
        std::fs::write(&file, "x").unwrap();
        let err = bind(&file, &settings).err().unwrap().to_string();
        assert!(err.contains("is not a socket"), "{err}");
        let long = dir.path().join("x".repeat(120));
        let err = bind(&long, &settings).err().unwrap().to_string();
        assert!(err.contains("at most 107"), "{err}");
    }

    #[tokio::test]
    async fn a_link_at_the_socket_path_is_refused_and_what_it_names_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let settings = Management {
            socket_mode: "0666".into(),
            ..Management::default()
        };
        let precious = dir.path().join("shadow");
        std::fs::write(&precious, "x").unwrap();
        std::fs::set_permissions(&precious, std::fs::Permissions::from_mode(0o600)).unwrap();
        // A link to a file, to a stale socket, and to nothing.
        let stale = dir.path().join("stale.sock");
        drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
        for (name, target) in [
            ("to-file.sock", precious.clone()),
            ("to-socket.sock", stale.clone()),
            ("dangling.sock", dir.path().join("nothing")),
        ] {
            let link = dir.path().join(name);
            std::os::unix::fs::symlink(&target, &link).unwrap();
            let err = bind(&link, &settings).err().unwrap().to_string();
            assert!(
                err.contains("is a symbolic link, which efbd does not follow"),
                "{err}"
            );
            assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        }
        let mode = std::fs::metadata(&precious).unwrap().permissions().mode();
        assert_eq!(
            mode & 0o777,
            0o600,
            "the file the link names keeps its mode"
        );
        assert!(stale.exists() && !dir.path().join("nothing").exists());
    }
}
