//! Real Unix accounts for the tests of who may do what: made with useradd and groupadd
//! (root only; CI runs as root) with names unique to a run, and removed at the end.

#![allow(clippy::unwrap_used)]

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

/// Accounts and groups made for one test, removed when dropped (also when it fails).
pub struct Accounts {
    users: Vec<String>,
    groups: Vec<String>,
}

impl Accounts {
    pub fn none() -> Accounts {
        Accounts {
            users: Vec::new(),
            groups: Vec::new(),
        }
    }

    pub fn group(&mut self, name: &str) {
        run("groupadd", &[name]);
        self.groups.push(name.to_string());
    }

    /// A user without a home, in `groups` (the first one its primary group), or with a
    /// group of its own when `groups` is empty.
    pub fn user(&mut self, name: &str, groups: &[&str]) {
        let mut args = vec!["-M", "-s", "/usr/sbin/nologin"];
        match groups {
            [] => args.push("-U"),
            [primary, rest @ ..] => {
                args.extend(["-g", primary]);
                if !rest.is_empty() {
                    args.push("-G");
                    args.extend(rest);
                }
            }
        }
        args.push(name);
        run("useradd", &args);
        self.users.push(name.to_string());
    }
}

impl Drop for Accounts {
    fn drop(&mut self) {
        for user in &self.users {
            let _ = Command::new("userdel").arg(user).status();
        }
        for group in self.users.iter().chain(&self.groups) {
            // A user's own group is gone with the user; the others go here.
            let _ = Command::new("groupdel").arg(group).output();
        }
    }
}

/// Runs an account tool; again while another run (a parallel test) holds /etc/passwd's or
/// /etc/group's lock.
pub fn run(program: &str, args: &[&str]) {
    for _ in 0..20 {
        let out = Command::new(program).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        if out.status.success() {
            return;
        }
        assert!(err.contains("lock"), "{program} {args:?}: {err}");
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    panic!("{program} {args:?}: /etc/passwd or /etc/group stayed locked");
}

pub fn is_root() -> bool {
    let out = Command::new("id").arg("-u").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim() == "0"
}

/// A directory every account may traverse, holding a copy of efb-cli they may run (the
/// build's directory may be closed to them).
pub fn open_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// Names unique to this test of this run (`tag`: one letter per test), also apart from
/// accounts a killed run left behind: short enough for useradd (at most 32 characters).
pub fn prefix(tag: char) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!(
        "efb{tag}{}x{}",
        std::process::id() % 1_000_000,
        nanos % 10_000
    )
}
