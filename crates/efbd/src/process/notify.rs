//! systemd's readiness protocol (`sd_notify`), written directly: one datagram to the socket
//! the service manager names in `$NOTIFY_SOCKET`. With `Type=notify` in efbd.service,
//! systemd considers efbd started only once it says READY=1, so units ordered after it (and
//! `systemctl start` itself) wait until the management API and gNMI listen. Without the
//! variable (efbd not run by systemd) nothing is sent.

use std::ffi::OsStr;
use std::io;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};

use tracing::warn;

/// Tells the service manager `state` ("READY=1", "STOPPING=1", "STATUS=..." lines); a
/// failure is logged, not fatal: efbd serves all the same, and systemd reports the missing
/// readiness itself when its start timeout passes.
pub fn tell(state: &str) {
    let Some(socket) = std::env::var_os("NOTIFY_SOCKET") else {
        return;
    };
    if let Err(e) = send(&socket, state) {
        warn!(socket = %socket.display(), state, error = %e, "cannot notify the service manager (NOTIFY_SOCKET)");
    }
}

/// Sends `state` to the notification socket `socket`: a path, or `@name` for an abstract
/// socket (as container managers give).
pub fn send(socket: &OsStr, state: &str) -> io::Result<()> {
    let address = match socket.as_encoded_bytes().strip_prefix(b"@") {
        Some(name) => SocketAddr::from_abstract_name(name)?,
        None => SocketAddr::from_pathname(socket)?,
    };
    let sent = UnixDatagram::unbound()?.send_to_addr(state.as_bytes(), &address)?;
    if sent != state.len() {
        return Err(io::Error::other(format!(
            "sent {sent} of {} bytes",
            state.len()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_datagram_to_a_path_or_an_abstract_socket() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notify");
        let listener = UnixDatagram::bind(&path).unwrap();
        send(path.as_os_str(), "READY=1\nSTATUS=serving").unwrap();
        let mut buffer = [0; 64];
        let n = listener.recv(&mut buffer).unwrap();
        assert_eq!(&buffer[..n], b"READY=1\nSTATUS=serving");

        let name = format!("efbd-notify-test-{}", std::process::id());
        let address = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let abstract_listener = UnixDatagram::bind_addr(&address).unwrap();
        send(OsStr::new(&format!("@{name}")), "STOPPING=1").unwrap();
        let n = abstract_listener.recv(&mut buffer).unwrap();
        assert_eq!(&buffer[..n], b"STOPPING=1");

        let err = send(dir.path().join("nobody").as_os_str(), "READY=1").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
    }
}
