//! Sessions and connections that belong to someone, tried as careless users and local
//! attackers would, against a real efbd over its Unix socket: real Unix accounts (made
//! here; root only, as CI runs), the real shell, and efb-probe for raw API calls.
//!
//! - A shell piped into `head` or killed frees its session at once; nothing leaks.
//! - A session is its opener's: nobody else (admins included) reads, commits or closes
//!   it, except an admin's audited `request system logout session N`, which ends it.
//! - Per-account limits on sessions and connections, room kept for admins, connections
//!   that never make a request closed; requests judged before their body is read.
//! - Refusals by the thousand do not push a change out of the audit: they are accesses,
//!   kept 20 a minute and counted past that, the count written at stop at the latest.
//! - A stream ends when its account loses its role, and the change of role is audited.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use efb_tests::accounts::{Accounts, is_root, open_dir, prefix, run};
use efb_tests::figures::peak_resident_kib;
use efb_tests::{Daemon, binary, repo};

/// efbd on a fresh datastore in `dir` with the example site, `settings` in its TOML file
/// and `groups` (admin, operator, viewer) giving Unix accounts their roles.
fn site(dir: &Path, groups: [&str; 3], settings: &str) -> Daemon {
    let file = dir.join("efbd.toml");
    std::fs::write(
        &file,
        format!(
            "{settings}\n[management.groups]\nadmin = \"{}\"\noperator = \"{}\"\nviewer = \"{}\"\n",
            groups[0], groups[1], groups[2]
        ),
    )
    .unwrap();
    let daemon = Daemon::start_logging(
        &dir.join("datastore"),
        &["--config", file.to_str().unwrap()],
        &dir.join("efbd.log"),
    );
    daemon.commit_file(&repo().join("examples/one-filter-site.json"));
    daemon
}

/// Copies of the programs every account may run (the build's directory may be closed to
/// them).
struct Programs {
    _dir: tempfile::TempDir,
    cli: PathBuf,
    probe: PathBuf,
}

fn programs() -> Programs {
    let dir = open_dir();
    let cli = dir.path().join("efb-cli");
    let probe = dir.path().join("efb-probe");
    std::fs::copy(binary("efb-cli"), &cli).unwrap();
    std::fs::copy(binary("efb-probe"), &probe).unwrap();
    Programs {
        _dir: dir,
        cli,
        probe,
    }
}

/// A program run as `account` (root: as it is), stdin piped and kept open until the
/// returned child's stdin is dropped.
fn spawn_as(account: &str, program: &Path, args: &[&str]) -> Child {
    let mut command = if account == "root" {
        Command::new(program)
    } else {
        let mut c = Command::new("runuser");
        c.args(["-u", account, "--"]).arg(program);
        c
    };
    command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// A program run as `account` to its end: exit code, output, errors.
fn run_as(account: &str, program: &Path, args: &[&str], stdin: &str) -> (i32, String, String) {
    let mut child = spawn_as(account, program, args);
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A program held open, its output read line by line.
struct Held {
    child: Child,
    out: std::io::BufReader<std::process::ChildStdout>,
}

impl Held {
    fn new(mut child: Child) -> Held {
        let out = std::io::BufReader::new(child.stdout.take().unwrap());
        Held { child, out }
    }

    /// The next line it prints.
    fn line(&mut self) -> String {
        use std::io::BufRead;
        let mut line = String::new();
        self.out.read_line(&mut line).unwrap();
        line.trim().to_string()
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The open sessions as root sees them: (id, user, uncommitted).
fn sessions(daemon: &Daemon) -> Vec<(u64, String, bool)> {
    let (code, out, err) = daemon.cli(&["-c", "show system sessions | display json"], "");
    assert_eq!(code, 0, "{out}{err}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    json["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["session"].as_u64().unwrap(),
                s["user"].as_str().unwrap().to_string(),
                s["uncommitted"].as_bool().unwrap(),
            )
        })
        .collect()
}

/// The session with uncommitted changes (there is one).
fn editing(daemon: &Daemon) -> u64 {
    for _ in 0..100 {
        if let Some((id, _, _)) = sessions(daemon).into_iter().find(|s| s.2) {
            return id;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("no session with uncommitted changes");
}

fn audit(daemon: &Daemon) -> String {
    let (code, out, err) = daemon.cli(&["-c", "show system audit | no-more"], "");
    assert_eq!(code, 0, "{out}{err}");
    out
}

/// Many flows: `show configuration` prints far more than a pipe holds.
fn many_flows(daemon: &Daemon, dir: &Path) {
    let file = dir.join("flows.json");
    std::fs::write(&file, efb_tests::figures::site_with_flows(3000)).unwrap();
    daemon.commit_file(&file);
}

#[test]
fn a_piped_or_killed_shell_frees_its_session_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("efbd.toml");
    std::fs::write(&file, "[management]\nmax_sessions = 8\n").unwrap();
    let daemon = Daemon::start(
        &dir.path().join("datastore"),
        &["--config", file.to_str().unwrap()],
    );
    many_flows(&daemon, dir.path());
    // Each shell dies of its closed pipe in the middle of its output, its session open:
    // without efbd noticing, the eighth would find no session left.
    let cli = binary("efb-cli");
    for _ in 0..20 {
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "{} --connect {} -c 'show configuration | no-more' | head -1",
                cli.display(),
                daemon.address
            ))
            .output()
            .unwrap();
        assert!(String::from_utf8_lossy(&out.stdout).starts_with('{') || !out.stdout.is_empty());
    }
    let (code, out, err) = daemon.cli(&["-c", "show system status"], "");
    assert_eq!(code, 0, "a session is still to be had: {out}{err}");

    // A shell in configuration mode with an edit, killed: its session goes at once.
    let mut shell = spawn_as(
        "root",
        &cli,
        &["--connect", &daemon.address, "--user", "killed"],
    );
    let stdin = shell.stdin.as_mut().unwrap();
    stdin
        .write_all(b"edit\nset ports port p1 description \"lost\"\n")
        .unwrap();
    stdin.flush().unwrap();
    let id = editing(&daemon);
    shell.kill().unwrap();
    let killed = Instant::now();
    shell.wait().unwrap();
    while sessions(&daemon).iter().any(|s| s.0 == id) {
        assert!(killed.elapsed() < Duration::from_secs(5), "still open");
        std::thread::sleep(Duration::from_millis(5));
    }
    println!(
        "a killed shell's session was closed within {} ms (including one `show system sessions`)",
        killed.elapsed().as_millis()
    );
    let audit = audit(&daemon);
    let closed = audit
        .lines()
        .find(|l| l.contains(&format!("session {id} (open ")))
        .unwrap_or_else(|| panic!("no record of session {id}:\n{audit}"));
    assert!(
        closed.contains("closed: its client went away; its uncommitted changes were dropped"),
        "{closed}"
    );
}

/// The roles' groups and accounts of one test: an admin, a viewer, an account in no group.
struct People {
    accounts: Accounts,
    groups: [String; 3],
    admin: String,
    viewer: String,
    nobody: String,
}

fn people(tag: char) -> People {
    let p = prefix(tag);
    let groups = [format!("{p}adm"), format!("{p}op"), format!("{p}view")];
    let base = format!("{p}base");
    let mut accounts = Accounts::none();
    for group in groups.iter().chain([&base]) {
        accounts.group(group);
    }
    let (admin, viewer, nobody) = (format!("{p}-ada"), format!("{p}-vic"), format!("{p}-nob"));
    accounts.user(&admin, &[&groups[0]]);
    // In its role's group as a supplementary one, so that it can be taken out of it.
    accounts.user(&viewer, &[&base, &groups[2]]);
    accounts.user(&nobody, &[]);
    People {
        accounts,
        groups,
        admin,
        viewer,
        nobody,
    }
}

impl People {
    fn groups(&self) -> [&str; 3] {
        [&self.groups[0], &self.groups[1], &self.groups[2]]
    }
}

#[test]
fn a_session_is_its_opener_s_alone_until_an_admin_logs_it_out() {
    if !is_root() {
        println!("SKIPPED: creating Unix accounts needs root (CI runs as root)");
        return;
    }
    let people = people('s');
    let progs = programs();
    let dir = open_dir();
    let daemon = site(dir.path(), people.groups(), "");
    let socket = daemon.address.as_str();

    // Root edits and leaves its shell open.
    let mut shell = spawn_as("root", &progs.cli, &["--connect", socket]);
    let stdin = shell.stdin.as_mut().unwrap();
    stdin
        .write_all(b"edit\nset ports port p1 description \"root-was-here\"\n")
        .unwrap();
    stdin.flush().unwrap();
    let id = editing(&daemon).to_string();

    // Nobody else gets at it: not a viewer (who may not commit at all), not another admin.
    let not_found = format!("NotFound: no session {id}");
    for what in ["compare", "candidate", "close"] {
        let (_, out, _) = run_as(&people.viewer, &progs.probe, &[socket, what, &id], "");
        assert_eq!(out.trim(), not_found, "the viewer's {what}");
    }
    for what in ["compare", "candidate", "commit", "close"] {
        let (_, out, _) = run_as(&people.admin, &progs.probe, &[socket, what, &id], "");
        assert_eq!(out.trim(), not_found, "the other admin's {what}");
    }
    assert!(
        sessions(&daemon)
            .iter()
            .any(|s| s.0.to_string() == id && s.2)
    );
    let (_, out, _) = daemon.cli(&["-c", "show configuration ports port p1"], "");
    assert!(
        !out.contains("root-was-here"),
        "nothing was committed: {out}"
    );

    // A viewer may not log anyone out; an admin may, and the shell is told and ends.
    let logout = format!("request system logout session {id}");
    let (code, _, err) = run_as(
        &people.viewer,
        &progs.cli,
        &["--connect", socket, "-c", &logout],
        "",
    );
    assert_eq!(code, 1);
    assert!(
        err.contains("request system logout needs the admin role"),
        "{err}"
    );
    let (code, out, err) = run_as(
        &people.admin,
        &progs.cli,
        &["--connect", socket, "-c", &logout],
        "",
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains(&format!("session {id} closed")), "{out}");
    let mut stdin = shell.stdin.take().unwrap();
    stdin.write_all(b"show system status\n").unwrap();
    drop(stdin);
    let out = shell.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "efbd closed this shell's session: logged out by {} (request system logout session {id}); its uncommitted changes were dropped",
            people.admin
        )),
        "{err}"
    );
    let audit = audit(&daemon);
    assert!(
        audit.contains(&logout) && audit.contains("closed the session of root"),
        "{audit}"
    );
}

#[test]
fn no_account_takes_every_session_or_connection_and_admins_keep_room() {
    if !is_root() {
        println!("SKIPPED: creating Unix accounts needs root (CI runs as root)");
        return;
    }
    let people = people('l');
    let progs = programs();
    let dir = open_dir();
    let settings = "[management]\nmax_sessions = 10\nsessions_kept_for_admins = 3\nmax_sessions_per_account = 5\n\
                    [management.connections]\nmax = 24\nper_peer = 6\nkept_for_admins = 4\nfirst_request_timeout_s = 2\n";
    let daemon = site(dir.path(), people.groups(), settings);
    let socket = daemon.address.as_str();

    // A viewer opens what one account may.
    let mut viewer = Held::new(spawn_as(
        &people.viewer,
        &progs.probe,
        &[socket, "sessions", "100"],
    ));
    assert!(viewer.line().starts_with("opened 5 "));
    let refused = viewer.line();
    assert!(
        refused.starts_with("ResourceExhausted: too many sessions: this account has 5 open")
            && refused.ends_with("(management.max_sessions_per_account)"),
        "{refused}"
    );
    // The admin takes two of the five left; the last three are for admins only.
    let mut admin = Held::new(spawn_as(
        &people.admin,
        &progs.probe,
        &[socket, "sessions", "2"],
    ));
    assert!(admin.line().starts_with("opened 2 "));
    let status = ["--connect", socket, "-c", "show system status"];
    let (code, _, err) = run_as(&people.nobody, &progs.cli, &status, "");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("permission denied"), "{err}");
    let (code, _, err) = run_as(&people.viewer, &progs.cli, &status, "");
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("7 are open and the last 3 are kept for admins"),
        "{err}"
    );
    let (code, out, err) = run_as("root", &progs.cli, &status, "");
    assert_eq!(
        code, 0,
        "root gets one of the sessions kept for admins: {out}{err}"
    );

    // An account in no group floods the socket with connections that never make a
    // request: it gets its share, they are closed after first_request_timeout_s, and an
    // admin's shell works all along.
    let mut flood = Held::new(spawn_as(
        &people.nobody,
        &progs.probe,
        &[socket, "prefaces", "200"],
    ));
    assert!(flood.line().starts_with("connected"));
    let (code, out, err) = run_as("root", &progs.cli, &status, "");
    assert_eq!(code, 0, "{out}{err}");
    let log = std::fs::read_to_string(dir.path().join("efbd.log")).unwrap();
    assert!(
        log.contains("the peer has as many open as management.connections.per_peer allows"),
        "{log}"
    );
    // Past first_request_timeout_s the flood's connections are gone: the viewer, who holds
    // its sessions, and root find room.
    std::thread::sleep(Duration::from_secs(3));
    let (code, out, err) = run_as("root", &progs.cli, &status, "");
    assert_eq!(code, 0, "{out}{err}");
    drop(flood);
    drop(viewer);
    drop(admin);
}

#[test]
fn requests_are_judged_before_their_body_and_refusals_cannot_flush_the_audit() {
    if !is_root() {
        println!("SKIPPED: creating Unix accounts needs root (CI runs as root)");
        return;
    }
    let people = people('b');
    let progs = programs();
    let dir = open_dir();
    let daemon = site(dir.path(), people.groups(), "");
    let socket = daemon.address.as_str();
    let before = peak_resident_kib(daemon.pid());

    // 400 MiB from an account in no group: refused before efbd reads it.
    let started = Instant::now();
    let (_, out, _) = run_as(&people.nobody, &progs.probe, &[socket, "load", "400"], "");
    assert!(
        out.starts_with(
            "PermissionDenied: permission denied: configuration edit needs the admin role"
        ),
        "{out}"
    );
    let peak = peak_resident_kib(daemon.pid());
    println!(
        "efbd's peak memory before and after a 400 MiB Load from an account in no group: {} / {} MiB ({} ms)",
        before / 1024,
        peak / 1024,
        started.elapsed().as_millis()
    );
    assert!(peak < before + 64 * 1024, "{before} KiB -> {peak} KiB");

    // An admin's commit, then thousands of refusals: the commit stays in the audit.
    let (code, out, err) = daemon.cli(
        &[],
        "edit\nset ports port p1 description \"kept in the audit\"\ncommit comment \"the change\"\n",
    );
    assert_eq!(code, 0, "{out}{err}");
    let (_, out, _) = run_as(&people.nobody, &progs.probe, &[socket, "flood", "6000"], "");
    assert!(out.contains("6000 refused"), "{out}");
    let audit = audit(&daemon);
    assert!(audit.contains("the change"), "{audit}");
    let refusals = audit
        .lines()
        .filter(|l| l.contains(&people.nobody) && l.contains("refused"))
        .count();
    assert!(
        refusals <= 25,
        "{refusals} refusals kept one by one:\n{audit}"
    );
    let _ = people.accounts;
}

/// The lines of a log of the datastore and of its older file, as JSON records.
fn records(datastore: &Path, name: &str) -> Vec<serde_json::Value> {
    [format!("{name}.1"), name.to_string()]
        .iter()
        .filter_map(|file| std::fs::read_to_string(datastore.join(file)).ok())
        .flat_map(|text| {
            text.lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn an_operator_s_flood_of_refused_calls_is_counted_and_the_admin_s_commit_stays() {
    if !is_root() {
        println!("SKIPPED: creating Unix accounts needs root (CI runs as root)");
        return;
    }
    let p = prefix('f');
    let groups = [format!("{p}adm"), format!("{p}op"), format!("{p}view")];
    let mut accounts = Accounts::none();
    for group in &groups {
        accounts.group(group);
    }
    let (admin, operator) = (format!("{p}-ada"), format!("{p}-otto"));
    accounts.user(&admin, &[&groups[0]]);
    accounts.user(&operator, &[&groups[1]]);
    let progs = programs();
    let dir = open_dir();
    // The smallest files: were refusals changes, 12 000 of them would rotate audit.log
    // hundreds of times over.
    let settings = "[audit]\nmax_kib = 16\nkeep_files = 2\naccess_per_minute = 20\n";
    let daemon = site(dir.path(), [&groups[0], &groups[1], &groups[2]], settings);
    let socket = daemon.address.as_str();
    let connect = ["--connect", socket];

    let edit =
        "edit\nset ports port p1 description \"kept\"\ncommit comment \"the admin's change\"\n";
    let (code, out, err) = run_as(&admin, &progs.cli, &connect, edit);
    assert_eq!(code, 0, "{out}{err}");
    let started = Instant::now();
    let flood = ["bypass-flood", "12000"];
    let (_, out, _) = run_as(
        &operator,
        &progs.probe,
        &[&[socket][..], &flood].concat(),
        "",
    );
    let took = started.elapsed();
    assert!(
        out.starts_with("0 accepted, 12000 refused {\"InvalidArgument\": 12000}"),
        "{out}"
    );
    println!("12000 refused calls of set-bypass by an operator in {took:?}");
    let bypass = "call ecofilter-balancer set-bypass-ecofilter-unit ecofilter-unit ef1 mode bypass";
    let (code, out, err) = run_as(
        &operator,
        &progs.cli,
        &[&connect[..], &["-c", bypass]].concat(),
        "",
    );
    assert_eq!(code, 0, "{out}{err}");

    let shown = audit(&daemon);
    assert!(shown.contains("the admin's change"), "{shown}");
    let changes = records(&daemon.datastore, "audit.log");
    let whats: Vec<&str> = changes.iter().filter_map(|r| r["what"].as_str()).collect();
    assert!(
        whats.iter().any(|w| w.contains("the admin's change")),
        "{whats:?}"
    );
    assert!(
        whats.iter().any(|w| w.contains("\"mode\":\"bypass\"")),
        "{whats:?}"
    );
    assert!(changes.iter().all(|r| r["accepted"] == true), "{changes:?}");
    let summary = format!("more accesses of {operator} within a minute");
    let counted = |records: &[serde_json::Value]| {
        records
            .iter()
            .filter(|r| r["what"].as_str().is_some_and(|w| w.contains(&summary)))
            .count()
    };
    let in_time = started.elapsed() < Duration::from_secs(50);
    let datastore = daemon.datastore.clone();
    if in_time {
        assert_eq!(
            counted(&records(&datastore, "access.log")),
            0,
            "the minute is not over"
        );
    }
    assert!(daemon.stop(), "efbd stops cleanly");

    let accesses = records(&datastore, "access.log");
    let refusals = accesses
        .iter()
        .filter(|r| r["user"] == operator.as_str() && r["accepted"] == false)
        .count();
    assert_eq!(refusals, 20, "refusals kept one by one");
    assert_eq!(counted(&accesses), 1, "the count is written at stop");
    let size = |name: &str| std::fs::metadata(datastore.join(name)).map_or(0, |m| m.len());
    println!(
        "after the flood and stop: audit.log {} B ({} records), access.log {} + {} B ({} records, {refusals} refusals one by one)",
        size("audit.log"),
        changes.len(),
        size("access.log.1"),
        size("access.log"),
        accesses.len()
    );
}

#[test]
fn a_stream_ends_when_its_account_loses_its_role_and_the_change_is_audited() {
    if !is_root() {
        println!("SKIPPED: creating Unix accounts needs root (CI runs as root)");
        return;
    }
    let people = people('w');
    let progs = programs();
    let dir = open_dir();
    let daemon = site(dir.path(), people.groups(), "");
    let socket = daemon.address.as_str();
    let mut watch = Held::new(spawn_as(&people.viewer, &progs.probe, &[socket, "watch"]));
    assert_eq!(watch.line(), "watching");
    run("gpasswd", &["-d", &people.viewer, &people.groups[2]]);
    let started = Instant::now();
    let ended = watch.line();
    assert!(
        ended.starts_with("PermissionDenied: permission denied:")
            && ended.contains("no longer has a role"),
        "{ended}"
    );
    assert!(started.elapsed() < Duration::from_secs(15));
    let audit = audit(&daemon);
    assert!(
        audit.contains(&format!(
            "role of {} changed: viewer -> none",
            people.viewer
        )),
        "{audit}"
    );
}
