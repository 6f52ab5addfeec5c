//! Careless and hostile input through the shell and the APIs it stands on, against a real
//! efbd: each gets one clear, short error, and nothing changes. Rollback past history,
//! names and comments past their limits or with terminal escapes, a 400 KB line, enum
//! values the API does not define, sessions past the cap or left idle, commit confirmed
//! for longer than Junos allows.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use efb_mgmt_proto::v1::{
    CommitRequest, CompareRequest, EditLinesRequest, Empty, GetRequest, LoadRequest,
    OpenSessionRequest, RollbackRequest,
};
use efb_tests::gnmi_io::{authed, path};
use efb_tests::mgmt_io::{connect as mgmt, open};
use efb_tests::{Daemon, binary, repo};
use gnmi_proto::gnmi::g_nmi_client::GNmiClient;
use gnmi_proto::gnmi::{SetRequest, TypedValue, Update, typed_value};
use gnmi_proto::gnmi_ext::{self, commit, extension};
use tonic::Code;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// efbd with a settings file holding `settings` (TOML).
fn daemon_with(dir: &Path, settings: &str, extra: &[&str]) -> Daemon {
    let file = dir.join("efbd.toml");
    std::fs::write(&file, settings).unwrap();
    let mut args = vec!["--config", file.to_str().unwrap()];
    args.extend_from_slice(extra);
    Daemon::start(&dir.join("datastore"), &args)
}

/// `count` commits, each changing port p1's MTU.
fn commits(daemon: &Daemon, count: usize) {
    let mut script = String::from("edit\n");
    for i in 0..count {
        script.push_str(&format!(
            "set ports port p1 number 1 speed 100g mtu {}\ncommit\n",
            1600 + i
        ));
    }
    let (code, out, err) = daemon.cli(&[], &script);
    assert_eq!(code, 0, "{out}{err}");
}

#[test]
fn rollback_one_past_history_is_refused_and_the_candidate_kept() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(&dir.path().join("datastore"), &[]);
    commits(&daemon, 5);
    let (code, out, _) = daemon.cli(&["-c", "show system commit"], "");
    assert_eq!(code, 0);
    // Id first, then how many commits back: ids 1 to 5, rollback 4 to 0.
    let rollbacks: Vec<&str> = out
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(1))
        .collect();
    assert_eq!(rollbacks, ["0", "1", "2", "3", "4"], "{out}");

    let (code, _, err) = daemon.cli(&[], "edit\nrollback 5\n");
    assert_eq!(code, 1);
    assert!(
        err.contains("rollback 5: history goes back 4 commits: rollback 0 (commit 5) to rollback 4 (commit 1); commit 5 (its id) is rollback 0"),
        "{err}"
    );
    let (code, out, err) = daemon.cli(&[], "edit\nrollback 4\nshow | compare\ndiscard\n");
    assert_eq!(code, 0, "the oldest listed commit loads: {out}{err}");
    assert!(
        out.contains("[edit ports port p1]\n-   mtu 1604;\n+   mtu 1600;"),
        "{out}"
    );

    // A candidate with changes keeps them when the rollback is refused.
    let rt = runtime();
    let mut client = mgmt(&rt, &daemon);
    let held = open(&rt, &mut client, "tester");
    let session = held.id;
    rt.block_on(client.edit_lines(EditLinesRequest {
        session,
        lines: "set ports port p1 mtu 9000".into(),
    }))
    .unwrap();
    let err = rt
        .block_on(client.rollback(RollbackRequest { session, index: 5 }))
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound, "{err:?}");
    let compare = rt
        .block_on(client.compare(CompareRequest {
            session,
            format: 1,
            ..CompareRequest::default()
        }))
        .unwrap()
        .into_inner();
    assert_eq!(compare.lines, ["set ports port p1 mtu 9000"]);
}

#[test]
fn user_names_and_comments_past_their_limits_are_refused_and_escapes_are_shown_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(&dir.path().join("datastore"), &[]);
    let rt = runtime();
    let mut client = mgmt(&rt, &daemon);
    let long = "u".repeat(70_000);
    let err = rt
        .block_on(client.open_session(OpenSessionRequest { user: long.clone() }))
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    assert!(err.message().contains("at most 64"), "{}", err.message());
    let err = rt
        .block_on(client.open_session(OpenSessionRequest {
            user: "mallory\x1b[2J".into(),
        }))
        .unwrap_err();
    assert!(
        err.message().contains("control character"),
        "{}",
        err.message()
    );

    let mut shell = Command::new(binary("efb-cli"));
    let out = shell
        .args(["--connect", &daemon.address, "--user", &long[..100]])
        .args(["-c", "show system commit"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("user name: 100 characters; at most 64"),
        "{err}"
    );

    // A comment with a terminal escape is refused; the error shows it escaped.
    let script = "edit\nset ports port p1 number 1 speed 100g\ncommit comment \"\x1b[2Jgotcha\"\n";
    let (code, _, err) = daemon.cli(&[], script);
    assert_eq!(code, 1);
    assert!(
        err.contains("commit comment: contains the control character"),
        "{err}"
    );
    assert!(
        !err.contains('\x1b'),
        "no raw ESC reaches the terminal: {err:?}"
    );

    // An error quoting such input shows it escaped.
    let script = "edit\nset ports port p1 number 1 speed 100g description \"a\x1b[2Jb\x07\"\n";
    let (code, _, err) = daemon.cli(&[], script);
    assert_eq!(code, 1);
    assert!(err.contains("description \"a\\e[2Jb\\u{7}\""), "{err}");
    assert!(!err.contains('\x1b') && !err.contains('\x07'), "{err:?}");

    // Text another user wrote (a description: YANG takes a tab and C1 controls such as
    // CSI, U+009B, which some terminals obey like ESC [) is shown escaped, not acted on.
    let script =
        "edit\nset ports port p1 number 1 speed 100g description \"a\u{9b}2Jb\tc\"\ncommit\n";
    let (code, out, err) = daemon.cli(&[], script);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, _) = daemon.cli(&["-c", "show configuration ports"], "");
    assert_eq!(code, 0);
    assert!(out.contains("a\\u{9b}2Jb\\tc"), "{out}");
    assert!(!out.contains('\u{9b}') && !out.contains('\t'), "{out:?}");
}

#[test]
fn a_400_kb_set_line_gets_a_short_error() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(&dir.path().join("datastore"), &[]);
    let huge = "A".repeat(400_000);
    let script = format!("edit\nset ports port p1 number 1 speed 100g description \"{huge}\"\n");
    let (code, _, err) = daemon.cli(&[], &script);
    assert_eq!(code, 1);
    assert!(err.len() < 2000, "{} bytes: {}", err.len(), &err[..2000]);
    assert!(
        err.contains("description \"AAAA") && err.contains("(400 000 bytes)"),
        "{err}"
    );
    let script = format!("edit\nset ports {huge}\n");
    let (code, _, err) = daemon.cli(&[], &script);
    assert_eq!(code, 1);
    assert!(err.len() < 2000 && err.contains("unknown word"), "{err}");
}

#[test]
fn enum_values_the_api_does_not_define_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(&dir.path().join("datastore"), &[]);
    let rt = runtime();
    let mut client = mgmt(&rt, &daemon);
    let held = open(&rt, &mut client, "tester");
    let session = held.id;
    let load = LoadRequest {
        session,
        mode: 99,
        format: 1,
        content: "set ports port p1 number 1 speed 100g".into(),
    };
    let err = rt.block_on(client.load(load)).unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert_eq!(
        err.message(),
        "mode = 99 is not accepted here; mode is one of: LOAD_MODE_MERGE (0), LOAD_MODE_OVERRIDE (1)"
    );
    let get = GetRequest {
        session,
        datastore: 99,
        ..GetRequest::default()
    };
    let err = rt.block_on(client.get(get)).unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(
        err.message().starts_with("datastore = 99"),
        "{}",
        err.message()
    );
    let err = rt
        .block_on(client.compare(CompareRequest {
            session,
            format: 7,
            ..CompareRequest::default()
        }))
        .unwrap_err();
    assert!(
        err.message().contains("FORMAT_PATHS (2)"),
        "{}",
        err.message()
    );
    // Two commits compared need both named.
    let err = rt
        .block_on(client.compare(CompareRequest {
            session,
            format: 1,
            compared: Some(0),
            ..CompareRequest::default()
        }))
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    assert!(
        err.message().contains("rollback is missing"),
        "{}",
        err.message()
    );
    let compare = rt
        .block_on(client.compare(CompareRequest {
            session,
            format: 1,
            ..CompareRequest::default()
        }))
        .unwrap()
        .into_inner();
    assert!(compare.lines.is_empty(), "the refused load changed nothing");
}

#[test]
fn sessions_past_the_cap_are_refused_naming_the_setting() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon_with(dir.path(), "[management]\nmax_sessions = 3\n", &[]);
    let rt = runtime();
    let mut client = mgmt(&rt, &daemon);
    let first = open(&rt, &mut client, "a");
    let _b = open(&rt, &mut client, "b");
    let _c = open(&rt, &mut client, "c");
    let err = rt
        .block_on(client.open_session(OpenSessionRequest { user: "d".into() }))
        .unwrap_err();
    assert_eq!(err.code(), Code::ResourceExhausted, "{err:?}");
    assert!(
        err.message().contains("3 are open") && err.message().contains("management.max_sessions"),
        "{}",
        err.message()
    );
    let (code, _, err) = daemon.cli(&["-c", "show system status"], "");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("management.max_sessions"), "{err}");
    rt.block_on(client.close_session(efb_mgmt_proto::v1::SessionRef { session: first.id }))
        .unwrap();
    let (code, out, err) = daemon.cli(&["-c", "show system status"], "");
    assert_eq!(code, 0, "{out}{err}");
}

#[test]
fn an_idle_session_expires_and_the_shell_says_the_changes_were_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon_with(
        dir.path(),
        "[management]\nsession_idle_timeout_s = 1\n",
        &[],
    );
    let mut shell = Command::new(binary("efb-cli"))
        .args(["--connect", &daemon.address, "--user", "tester"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = shell.stdin.take().unwrap();
    input
        .write_all(b"edit\nset ports port p1 number 1 speed 100g\n")
        .unwrap();
    input.flush().unwrap();
    // Idle past the timeout (not a measure of speed: the session must be idle that long).
    std::thread::sleep(Duration::from_millis(2500));
    input.write_all(b"show | compare\n").unwrap();
    drop(input);
    let out = shell.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("line 3: session expired")
            && err.contains("your uncommitted changes were dropped")
            && err.contains("management.session_idle_timeout_s")
            && err.contains("a new session is open"),
        "{err}"
    );
    // The new session works: status counts it.
    let (code, out, _) = daemon.cli(&["-c", "show system status"], "");
    assert_eq!(code, 0);
    assert!(out.contains("Sessions"), "{out}");
}

#[test]
fn commit_confirmed_is_bounded_to_65535_minutes_in_the_shell_the_api_and_gnmi() {
    let dir = tempfile::tempdir().unwrap();
    let users = repo().join("examples/users.demo.toml");
    let daemon = Daemon::start(
        &dir.path().join("datastore"),
        &["--gnmi-plaintext", "--gnmi-users", users.to_str().unwrap()],
    );
    for minutes in ["65536", "99999999999"] {
        let script =
            format!("edit\nset ports port p1 number 1 speed 100g\ncommit confirmed {minutes}\n");
        let (code, _, err) = daemon.cli(&[], &script);
        assert_eq!(code, 1);
        assert!(err.contains("minutes must be 1 to 65535"), "{err}");
    }

    let rt = runtime();
    let mut client = mgmt(&rt, &daemon);
    let held = open(&rt, &mut client, "tester");
    let session = held.id;
    rt.block_on(client.edit_lines(EditLinesRequest {
        session,
        lines: "set ports port p1 number 1 speed 100g".into(),
    }))
    .unwrap();
    let err = rt
        .block_on(client.commit(CommitRequest {
            session,
            confirm_seconds: u32::MAX,
            ..CommitRequest::default()
        }))
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().contains("65535 minutes"), "{}", err.message());

    let gnmi = format!("http://{}", daemon.gnmi.clone().unwrap());
    let mut gnmi = rt.block_on(GNmiClient::connect(gnmi)).unwrap();
    let set = SetRequest {
        update: vec![Update {
            path: Some(path(&[("ports", None), ("port", Some(("name", "p2")))])),
            val: Some(TypedValue {
                value: Some(typed_value::Value::JsonIetfVal(
                    br#"{"number": 2, "speed": "100g"}"#.to_vec(),
                )),
            }),
            ..Update::default()
        }],
        extension: vec![gnmi_ext::Extension {
            ext: Some(extension::Ext::Commit(gnmi_ext::Commit {
                id: "c1".into(),
                action: Some(commit::Action::Commit(gnmi_ext::CommitRequest {
                    rollback_duration: Some(prost_types::Duration {
                        seconds: 65_536 * 60,
                        nanos: 0,
                    }),
                })),
            })),
        }],
        ..SetRequest::default()
    };
    let err = rt.block_on(gnmi.set(authed(set, "admin"))).unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    assert!(err.message().contains("65535 minutes"), "{}", err.message());
    let status = rt.block_on(client.status(Empty {})).unwrap().into_inner();
    assert_eq!(status.confirm_deadline_unix_ms, 0, "nothing waits");
}

#[test]
fn a_huge_gnmi_value_gets_a_short_error() {
    let dir = tempfile::tempdir().unwrap();
    let users = repo().join("examples/users.demo.toml");
    let daemon = Daemon::start(
        &dir.path().join("datastore"),
        &["--gnmi-plaintext", "--gnmi-users", users.to_str().unwrap()],
    );
    let rt = runtime();
    let gnmi = format!("http://{}", daemon.gnmi.clone().unwrap());
    let mut gnmi = rt.block_on(GNmiClient::connect(gnmi)).unwrap();
    let value = format!("\"{}\"", "A".repeat(10 * 1024 * 1024));
    let set = SetRequest {
        update: vec![Update {
            path: Some(path(&[
                ("ports", None),
                ("port", Some(("name", "p1"))),
                ("description", None),
            ])),
            val: Some(TypedValue {
                value: Some(typed_value::Value::JsonIetfVal(value.into_bytes())),
            }),
            ..Update::default()
        }],
        ..SetRequest::default()
    };
    let err = rt.block_on(gnmi.set(authed(set, "admin"))).unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    assert!(err.message().len() < 5000, "{} bytes", err.message().len());
}

#[test]
fn a_gnmi_users_file_with_a_name_past_the_limit_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let demo = std::fs::read_to_string(repo().join("examples/users.demo.toml")).unwrap();
    let users = dir.path().join("users.toml");
    let long = "n".repeat(70_000);
    std::fs::write(
        &users,
        demo.replacen("name = \"viewer\"", &format!("name = \"{long}\""), 1),
    )
    .unwrap();
    let out = Command::new(binary("efbd"))
        .arg("--datastore")
        .arg(dir.path().join("datastore"))
        .arg("--no-data-plane")
        .args(["--gnmi-listen", "127.0.0.1:0", "--gnmi-plaintext"])
        .arg("--gnmi-users")
        .arg(&users)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("user name: 70 000 characters; at most 64") && err.len() < 2000,
        "{err}"
    );
}
