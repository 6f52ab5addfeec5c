//! The shell in a real terminal (PTY), as the shell tests drive it.

use std::path::Path;
use std::process::Command;

use rexpect::session::{PtySession, spawn_command};

use crate::{Daemon, binary};

/// A shell on a terminal of `rows` lines (set with stty before efb-cli starts, as a
/// terminal window would), waiting at its first prompt.
pub fn shell_on_screen(daemon: &Daemon, home: &Path, rows: u16) -> PtySession {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(format!("stty rows {rows} cols 120 && exec \"$0\" \"$@\""))
        .arg(binary("efb-cli"))
        .args(["--connect", &daemon.address, "--user", "pat"])
        .env("EFB_CLI_HISTORY", home.join("history-pat"))
        .env("TERM", "xterm");
    let mut session = spawn_command(command, Some(30_000)).expect("efb-cli in a terminal");
    session.exp_string("efb> ").expect("operational prompt");
    session
}

/// A daemon running the one-filter example site.
pub fn site_daemon(dir: &Path) -> Daemon {
    let daemon = Daemon::start(&dir.join("datastore"), &[]);
    crate::chip_io::configure(&daemon, "");
    daemon
}
