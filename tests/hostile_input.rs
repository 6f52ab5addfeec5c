//! Configuration input that is empty, endless, blocking or ambiguous, through every door a
//! user has: the shell's `load` against a real efbd, the management API, efb-config, efbd's
//! factory default and gNMI Set from pygnmi. Each is refused with one clear message and
//! changes nothing; an explicit `{}` still empties the configuration.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use efb_cli::client::Client;
use efb_mgmt_proto::v1::{Format, LoadMode};
use efb_tests::{Daemon, binary, one_filter_site_lines, repo};

/// Far above what any of these runs takes; only a reader blocked for good gets there.
const HANG: Duration = Duration::from_secs(60);

fn example() -> PathBuf {
    repo().join("examples/one-filter-site.json")
}

/// The example site with port p1's speed given twice: last-wins readers took 40g.
fn repeated_member_file(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(example()).unwrap();
    let once = "\"speed\": \"100g\",";
    assert!(text.contains(once));
    let path = dir.join("repeated.json");
    std::fs::write(
        &path,
        text.replacen(once, "\"speed\": \"100g\", \"speed\": \"40g\",", 1),
    )
    .unwrap();
    path
}

fn fifo(dir: &Path) -> PathBuf {
    let path = dir.join("pipe");
    assert!(
        Command::new("mkfifo")
            .arg(&path)
            .status()
            .unwrap()
            .success()
    );
    path
}

/// Runs `command` with `stdin` to its end: (exit code, stdout, stderr). A run still going
/// after [`HANG`] is killed and fails the test (a reader blocked on a FIFO never ends).
fn finish(mut command: Command, stdin: &str) -> (i32, String, String) {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    if let Some(mut input) = child.stdin.take() {
        let _ = input.write_all(stdin.as_bytes());
    }
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > HANG {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{command:?} still running after {HANG:?}: it hangs");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn shell(daemon: &Daemon, args: &[&str], script: &str) -> (i32, String, String) {
    let mut command = Command::new(binary("efb-cli"));
    command
        .args(["--connect", &daemon.address, "--user", "tester"])
        .args(args);
    finish(command, script)
}

fn running(daemon: &Daemon) -> String {
    let (code, out, err) = daemon.cli(&["-c", "show configuration | display set"], "");
    assert_eq!(code, 0, "{out}{err}");
    out
}

fn site(dir: &Path, extra: &[&str]) -> Daemon {
    let daemon = Daemon::start(&dir.join("datastore"), extra);
    let (code, out, err) = daemon.cli(
        &[],
        &format!("edit\nload override {}\ncommit\n", example().display()),
    );
    assert_eq!(code, 0, "loading the example: {out}{err}");
    daemon
}

#[test]
fn the_shell_refuses_to_load_nothing_devices_fifos_and_repeated_members() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = site(dir.path(), &["--no-gnmi"]);
    let before = running(&daemon);
    assert!(before.contains("set ports port p1"), "{before}");
    let empty = dir.path().join("EMPTY.json");
    std::fs::write(&empty, "").unwrap();
    let blank = dir.path().join("blank.json");
    std::fs::write(&blank, " \n\t".repeat(100_000)).unwrap();
    let comments = dir.path().join("comments.set");
    std::fs::write(&comments, "# the new site\n\n# to be written\n").unwrap();
    let cases: Vec<(PathBuf, &str)> = vec![
        (
            empty,
            "EMPTY.json is empty: expected RFC 7951 JSON or set lines",
        ),
        (
            "/dev/null".into(),
            "/dev/null is a character device, not a regular file",
        ),
        (blank, "blank.json holds only white space"),
        (comments, "comments.set holds only comments and blank lines"),
        (
            "/dev/zero".into(),
            "/dev/zero is a character device, not a regular file",
        ),
        (
            fifo(dir.path()),
            "pipe is a FIFO (named pipe), not a regular file",
        ),
        (
            dir.path().to_path_buf(),
            "is a directory, not a regular file",
        ),
        (
            repeated_member_file(dir.path()),
            "ports port p1: member \"speed\" appears twice",
        ),
    ];
    for (file, expected) in cases {
        // As the attack ran it: load, then commit what was loaded.
        let script = format!("edit\nload override {}\ncommit\n", file.display());
        let (code, out, err) = shell(&daemon, &[], &script);
        assert!(
            code == 1 && err.contains(expected) && !out.contains("load complete"),
            "{}: exit {code}\n{out}\n{err}",
            file.display()
        );
        if !expected.contains("appears twice") {
            assert!(err.contains("load an empty JSON object `{}`") || err.contains("regular file"));
        }
        assert_eq!(
            running(&daemon),
            before,
            "{}: nothing changed",
            file.display()
        );
    }
    // The limit is the shell's flag, named in the refusal.
    let big = dir.path().join("big.json");
    std::fs::write(&big, format!("{{{}}}", " ".repeat(2 << 20))).unwrap();
    let (code, _, err) = shell(
        &daemon,
        &[
            "--max-input-mib",
            "1",
            "-c",
            &format!("load merge {}", big.display()),
        ],
        "",
    );
    assert!(
        code == 1 && err.contains("more than the limit of 1 MiB (raise it with --max-input-mib)"),
        "{err}"
    );
    // An explicit empty configuration is how everything is removed.
    let nothing = dir.path().join("nothing.json");
    std::fs::write(&nothing, "{}\n").unwrap();
    let (code, out, err) = shell(
        &daemon,
        &[],
        &format!("edit\nload override {}\ncommit\n", nothing.display()),
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("load complete"), "{out}");
    assert_eq!(running(&daemon).trim(), "");
    assert!(daemon.stop());
}

#[test]
fn the_management_api_refuses_content_with_nothing_in_it() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = site(dir.path(), &["--no-gnmi"]);
    let before = running(&daemon);
    let mut client = Client::connect(&daemon.address, "api-client").unwrap();
    for (format, content) in [
        (Format::Set, ""),
        (Format::Set, "\n  \n"),
        (Format::Set, "# nothing\n"),
        (Format::Json, ""),
        (Format::Json, "   "),
    ] {
        let e = client
            .load(LoadMode::Override, format, content.to_string())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("the content to load ") && e.contains("`{}`"),
            "{format:?} {content:?}: {e}"
        );
    }
    let repeated = r#"{"ecofilter-balancer:ecofilter-balancer": {"balancing-method": "layer-4", "balancing-method": "layer-3"}}"#;
    let e = client
        .load(LoadMode::Merge, Format::Json, repeated.to_string())
        .unwrap_err()
        .to_string();
    assert!(e.contains("\"balancing-method\" appears twice"), "{e}");
    assert!(
        client.compare(Format::Set, None).unwrap().is_empty(),
        "the candidate is unchanged"
    );
    client.close();
    // Its connection closed too: efbd stops once its clients have gone.
    drop(client);
    assert_eq!(running(&daemon), before);
    assert!(daemon.stop());
}

fn efb_config(args: &[&dyn AsRef<std::ffi::OsStr>]) -> (i32, String, String) {
    let mut command = Command::new(binary("efb-config"));
    for arg in args {
        command.arg(arg);
    }
    finish(command, "")
}

#[test]
fn efb_config_gives_every_command_the_same_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let repeated = repeated_member_file(dir.path());
    let lookup: [&dyn AsRef<std::ffi::OsStr>; 8] = [
        &"lookup",
        &repeated,
        &"--src",
        &"10.0.0.1",
        &"--dst",
        &"10.0.0.2",
        &"--proto",
        &"6",
    ];
    // The same verdict; the exit status 1, but diff's 2 (trouble, as diff(1): its 1 says
    // that the files differ).
    let runs = [
        (1, efb_config(&[&"validate", &repeated])),
        (1, efb_config(&[&"hash", &repeated])),
        (1, efb_config(&lookup)),
        (2, efb_config(&[&"diff", &example(), &repeated])),
        (1, efb_config(&[&"hash-compare", &example(), &repeated])),
    ];
    for (expected, (code, out, err)) in runs {
        assert!(
            code == expected
                && out.contains("/ecofilter-balancer:ports/port[name='p1']")
                && out.contains("member \"speed\" appears twice"),
            "exit {code}\n{out}\n{err}"
        );
    }
    // Not a regular file, or nothing in it: refused at once, whatever the command.
    let empty = dir.path().join("empty.json");
    std::fs::write(&empty, "").unwrap();
    let pipe = fifo(dir.path());
    for command in ["validate", "hash"] {
        for (file, code, expected) in [
            (
                Path::new("/dev/zero"),
                2,
                "is a character device, not a regular file",
            ),
            (&pipe, 2, "is a FIFO (named pipe), not a regular file"),
            (&empty, 1, "empty.json is empty"),
        ] {
            let (got, out, err) = efb_config(&[&command, &file]);
            assert!(
                got == code && format!("{out}{err}").contains(expected),
                "{command} {}: exit {got}\n{out}\n{err}",
                file.display()
            );
        }
    }
    let (code, out, err) = efb_config(&[&"validate", &"--max-input-mib", &"0", &example()]);
    assert!(
        code == 2 && err.contains("more than the limit of 0 MiB (raise it with --max-input-mib)"),
        "{out}{err}"
    );
    // Set lines are read as the shell's `load` reads them: the same configuration, the same hash.
    let lines = dir.path().join("site.set");
    std::fs::write(&lines, one_filter_site_lines().join("\n")).unwrap();
    let (code, from_lines, err) = efb_config(&[&"hash", &lines]);
    assert_eq!(code, 0, "{err}");
    let (_, from_json, _) = efb_config(&[&"hash", &example()]);
    assert_eq!(from_lines, from_json);
}

#[test]
fn efbd_refuses_a_factory_default_that_holds_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("factory-default.json");
    std::fs::write(&empty, "\n").unwrap();
    let mut command = Command::new(binary("efbd"));
    command
        .arg("--datastore")
        .arg(dir.path().join("datastore"))
        .arg("--factory-default")
        .arg(&empty)
        .args(["--no-data-plane", "--no-gnmi"]);
    let (code, out, err) = finish(command, "");
    assert!(
        code != 0 && err.contains("factory-default.json holds only white space"),
        "exit {code}\n{out}\n{err}"
    );
}

#[test]
fn gnmi_set_refuses_values_that_are_not_one_json_value() {
    let dir = tempfile::tempdir().unwrap();
    let users = repo().join("examples/users.demo.toml");
    let daemon = site(dir.path(), &["--gnmi-users", users.to_str().unwrap()]);
    daemon.gnmi_clients("bad_values");
    assert!(daemon.stop());
}
