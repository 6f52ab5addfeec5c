//! Logs where operators look: efbd's JSON log read as a log collector reads it (one JSON
//! object a line, with the event's fields), a client's text that cannot forge lines of the
//! text log, bad log settings refused before efbd starts, and efb-target's log in the file
//! run.sh names, without colour codes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use efb_tests::chip_io::{Chip, FAST_PROBING, configure};
use efb_tests::gnmi_io::{authed, connect, path};
use efb_tests::{Daemon, Target, binary, repo, run_cli};
use gnmi_proto::gnmi::g_nmi_client::GNmiClient;
use gnmi_proto::gnmi::{SetRequest, TypedValue, Update, typed_value};
use gnmi_proto::gnmi_ext::{self, commit, extension};
use serde_json::Value;

/// Every line of the log, each parsed as one JSON object (a line that is not one fails).
fn json_lines(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|line| {
            serde_json::from_str::<Value>(line)
                .unwrap_or_else(|e| panic!("not one JSON object ({e}): {line}"))
        })
        .collect()
}

/// Reads the log until one line satisfies `found` (10 s at most).
fn wait_for_line(log: &Path, what: &str, found: impl Fn(&Value) -> bool) -> Value {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(10) {
        if let Some(line) = json_lines(log).into_iter().find(&found) {
            return line;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!(
        "no {what} in the log:\n{}",
        std::fs::read_to_string(log).unwrap()
    );
}

/// A boot that loads a configuration (here the factory default) is a commit of efbd's own:
/// evented like a client's, with its origin, and listed by `show log commit`.
#[test]
fn a_boot_that_loads_a_configuration_is_a_commit_of_efbds_own() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("efbd.log");
    let site = repo().join("examples/one-filter-site.json");
    let site = site.to_str().unwrap();
    let daemon = Daemon::start_logging(
        &dir.path().join("datastore"),
        &["--factory-default", site, "--log-format", "json"],
        &log,
    );
    let boot = wait_for_line(&log, "boot commit event", |l| l["event"] == "commit");
    assert_eq!(boot["origin"], "boot", "{boot}");
    assert_eq!(boot["user"], "system", "{boot}");
    assert_eq!(boot["id"], 1, "{boot}");
    assert!(
        boot["comment"]
            .as_str()
            .unwrap()
            .starts_with("boot: factory default"),
        "{boot}"
    );
    assert!(boot["changes"].as_u64().unwrap() > 10, "{boot}");
    let (_, shown, _) = daemon.cli(&["-c", "show log commit"], "");
    assert!(shown.contains("id=1 user=system origin=boot"), "{shown}");
    assert!(daemon.stop());
}

#[test]
fn the_json_log_has_one_object_a_line_with_the_fields_of_commits_and_liveness_changes() {
    let dir = tempfile::tempdir().unwrap();
    let target = Target::start(&[]);
    let log = dir.path().join("efbd.log");
    let daemon = Daemon::start_logging(
        &dir.path().join("datastore"),
        &["--p4runtime", &target.address, "--log-format", "json"],
        &log,
    );
    configure(&daemon, FAST_PROBING);
    let commit = wait_for_line(&log, "commit event", |l| l["event"] == "commit");
    assert_eq!(commit["level"], "INFO", "{commit}");
    assert!(commit["id"].as_u64().is_some_and(|id| id >= 1), "{commit}");
    // Daemon::cli records its commits as "ACCOUNT as tester".
    assert!(
        commit["user"].as_str().unwrap().ends_with(" as tester"),
        "{commit}"
    );
    assert_eq!(commit["origin"], "shell", "{commit}");
    assert!(commit["changes"].as_u64().unwrap() > 10, "{commit}");
    let hash = commit["hash"].as_str().unwrap();
    assert!(
        hash.len() == 64 && hash.chars().all(|c| c.is_ascii_hexdigit()),
        "{commit}"
    );
    // The request it served, with its fields, from the span.
    let spans = commit["spans"].as_array().unwrap();
    assert!(
        spans
            .iter()
            .any(|s| s["name"] == "request" && s["method"] == "Commit"),
        "{commit}"
    );

    let pair = |l: &Value| l["event"] == "liveness" && l["pair"] == "f1-te1-te2";
    let up = wait_for_line(&log, "liveness change to up", |l| {
        pair(l) && l["to"] == "up"
    });
    assert_eq!(up["level"], "INFO", "{up}");
    let mut chip = Chip::connect(&target);
    chip.set_filter_dead("p9-0", "p9-1", true);
    let down = wait_for_line(&log, "liveness change to down", |l| {
        pair(l) && l["to"] == "down"
    });
    assert_eq!(down["level"], "WARN", "{down}");
    assert_eq!(
        (&down["unit"], &down["pair"], &down["from"]),
        (&"ef1".into(), &"f1-te1-te2".into(), &"up".into()),
        "{down}"
    );
    assert!(
        down["reason"].as_str().unwrap().contains("keep-alives"),
        "{down}"
    );
    assert!(daemon.stop());
    // Every line, to the last one, is JSON.
    assert!(json_lines(&log).len() > 5);
}

/// A gNMI Set of port p2 (empty when `port` is false) with the commit extension `action`
/// and the client's `id`.
fn confirmed_set(id: &str, port: bool, action: commit::Action) -> SetRequest {
    let update = Update {
        path: Some(path(&[("ports", None), ("port", Some(("name", "p2")))])),
        val: Some(TypedValue {
            value: Some(typed_value::Value::JsonIetfVal(
                br#"{"number": 2, "speed": "100g"}"#.to_vec(),
            )),
        }),
        ..Update::default()
    };
    SetRequest {
        update: if port { vec![update] } else { Vec::new() },
        extension: vec![gnmi_ext::Extension {
            ext: Some(extension::Ext::Commit(gnmi_ext::Commit {
                id: id.into(),
                action: Some(action),
            })),
        }],
        ..SetRequest::default()
    }
}

#[test]
fn a_client_s_commit_id_cannot_forge_lines_of_the_text_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("efbd.log");
    let users = repo().join("examples/users.demo.toml");
    let daemon = Daemon::start_logging(
        &dir.path().join("datastore"),
        &[
            "--gnmi-plaintext",
            "--gnmi-users",
            users.to_str().unwrap(),
            "--log-format",
            "text",
        ],
        &log,
    );
    // What a forger sends: a line of its own, with a colour code and a carriage return.
    let forged =
        "c1\n1999-12-31T23:59:59.000000Z  INFO audit: accepted user=admin what=FORGED\r\u{1b}[2K";
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mut gnmi = GNmiClient::new(connect(&daemon).await);
        let started = commit::Action::Commit(gnmi_ext::CommitRequest {
            rollback_duration: None,
        });
        gnmi.set(authed(confirmed_set(forged, true, started), "admin"))
            .await
            .unwrap();
        // A wrong id is refused (and audited, quoting it), then the right one confirms.
        let confirm = || commit::Action::Confirm(gnmi_ext::CommitConfirm {});
        let err = gnmi
            .set(authed(
                confirmed_set("x\nFORGED too", false, confirm()),
                "admin",
            ))
            .await
            .unwrap_err();
        assert!(err.message().contains("does not match"), "{err:?}");
        assert!(
            !err.message().contains("1999-12-31"),
            "the waiting id is its starter's, not told to whoever guesses: {err:?}"
        );
        gnmi.set(authed(confirmed_set(forged, false, confirm()), "admin"))
            .await
            .unwrap();
    });
    assert!(daemon.stop());
    let text = std::fs::read_to_string(&log).unwrap();
    let escaped = "c1\\n1999-12-31T23:59:59.000000Z  INFO audit: accepted user=admin what=FORGED\\r\\u{1b}[2K";
    for message in ["commit confirmed started", "commit confirmed ended"] {
        assert!(
            text.lines()
                .any(|l| l.contains(message) && l.contains(&format!("id={escaped}"))),
            "{message} with the id escaped:\n{text}"
        );
    }
    assert!(
        text.lines()
            .any(|l| l.contains(" audit: refused") && l.contains("x\\\\nFORGED too")),
        "the refusal's id escaped in the audit line:\n{text}"
    );
    for line in text.lines() {
        assert!(
            !line.starts_with("1999-12-31") && !line.starts_with("FORGED") && !line.contains('\r'),
            "a forged line:\n{text}"
        );
    }
    assert!(!text.contains('\u{1b}'), "a client's escape code: {text:?}");
}

/// efbd started with `args` and settings file `settings` (if any) must not start: its
/// exit code and what it said.
fn refused(dir: &Path, settings: Option<&str>, args: &[&str]) -> (i32, String) {
    let mut command = Command::new(binary("efbd"));
    command
        .arg("--datastore")
        .arg(dir.join("datastore"))
        .args(["--no-data-plane", "--no-gnmi"])
        .args(args);
    if let Some(text) = settings {
        let file = dir.join("efbd.toml");
        std::fs::write(&file, text).unwrap();
        command.arg("--config").arg(file);
    }
    let (code, out, err) = run_cli(command, "");
    assert!(out.is_empty(), "efbd started: {out}");
    (code, err)
}

#[test]
fn bad_log_settings_are_refused_naming_the_setting() {
    let dir = tempfile::tempdir().unwrap();
    let (code, err) = refused(dir.path(), None, &["--log-format", "xml"]);
    assert_eq!(code, 2);
    assert!(
        err.contains(
            "log.format (--log-format) = \"xml\": expected one of auto, text, json, journal"
        ),
        "{err}"
    );
    // A typo in the level used to mean `info` without a word.
    let (code, err) = refused(dir.path(), Some("[log]\nlevel = \"debg\"\n"), &[]);
    assert_eq!(code, 2);
    assert!(
        err.contains("efbd.toml: log.level (--log-level) = \"debg\": \"debg\" is not a level")
            && err.contains("expected error, warn, info, debug, trace or off"),
        "{err}"
    );
    let (code, err) = refused(dir.path(), Some("[log]\nformat = \"journald\"\n"), &[]);
    assert!(code == 2 && err.contains("log.format"), "{err}");
    assert!(
        !dir.path().join("datastore").exists(),
        "nothing was created"
    );
}

#[test]
fn efb_target_logs_to_standard_error_without_colour_codes() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("efb-target.log");
    let mut child = Command::new(binary("efb-target"))
        .args(["--listen", "127.0.0.1:0", "--log-level", "info"])
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut banner = String::new();
    stdout.read_line(&mut banner).unwrap();
    assert!(banner.starts_with("efb-target: P4Runtime on "), "{banner}");
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    child.wait().unwrap();
    assert_eq!(rest, "", "standard output has only the banner");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("efb-target serving P4Runtime") && text.contains("stopping"),
        "{text}"
    );
    assert!(!text.contains('\u{1b}'), "colour codes in a file: {text:?}");
}
