//! The shell as engineers use it: a real efbd process, efb-cli in a real terminal (PTY),
//! keys typed, the screen read.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use efb_tests::terminal::{shell_on_screen, site_daemon};
use efb_tests::{Daemon, binary, one_filter_site_lines};
use rexpect::session::{PtySession, spawn_command};

/// A shell on a terminal, waiting at its first prompt.
fn shell(daemon: &Daemon, home: &Path, user: &str) -> PtySession {
    let mut command = Command::new(binary("efb-cli"));
    command
        .args(["--connect", &daemon.address, "--user", user])
        .env("EFB_CLI_HISTORY", home.join(format!("history-{user}")))
        .env("TERM", "xterm");
    let mut session = spawn_command(command, Some(30_000)).expect("efb-cli in a terminal");
    session.exp_string("efb> ").expect("operational prompt");
    session
}

/// Types a line, waits for `expect` in what the command printed, then for the next prompt
/// (so the next keys are not typed while the command still runs).
fn run(session: &mut PtySession, line: &str, expect: &str) -> String {
    session.send_line(line).unwrap();
    // The line editor redraws the line at each key; the output starts after Enter's newline.
    session.exp_string("\r\n").unwrap();
    let before = session
        .exp_string(expect)
        .unwrap_or_else(|e| panic!("after {line:?}, expected {expect:?}: {e}"));
    if !expect.is_empty() {
        prompt(session);
    }
    before
}

/// Types a line that prints nothing when it succeeds, and waits for the next prompt.
fn quiet(session: &mut PtySession, line: &str) {
    session.send_line(line).unwrap();
    session.exp_string("\r\n").unwrap();
    let printed = session.exp_regex("efb[>#] ").unwrap().0;
    assert!(!printed.contains("error"), "{line:?} failed: {printed}");
}

/// Types keys without Enter.
fn keys(session: &mut PtySession, text: &str) {
    session.send(text).unwrap();
    session.flush().unwrap();
}

/// Waits for a fresh prompt.
fn prompt(session: &mut PtySession) {
    session.exp_regex("efb[>#] ").unwrap();
}

fn configure(session: &mut PtySession) {
    run(session, "edit", "Entering configuration mode");
}

#[test]
fn configure_the_one_filter_site_from_scratch_and_find_it_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(&dir.path().join("datastore"), &["--boot-id", "boot-1"]);
    let mut sh = shell(&daemon, dir.path(), "alice");
    configure(&mut sh);
    let lines = one_filter_site_lines();
    for line in &lines {
        quiet(&mut sh, line);
    }
    // Junos's hierarchical compare: the place, then what comes, whole.
    run(&mut sh, "show | compare", "[edit]\r\n+   ports {\r\n");
    run(
        &mut sh,
        "show | compare | match to-filters",
        "+       flow to-filters {",
    );
    run(&mut sh, "show | compare | count", "Count:");
    run(&mut sh, "commit check", "configuration check succeeds");
    run(
        &mut sh,
        "show ecofilter-balancer flow bgp-to",
        "priority 310;",
    );
    run(&mut sh, "apply", "commit complete");
    run(&mut sh, "save", "running configuration saved as startup");
    // A change that is committed but not saved.
    quiet(&mut sh, "set ecofilter-balancer flow unsaved priority 1");
    run(&mut sh, "commit comment \"not saved\"", "commit complete");
    run(&mut sh, "exit", "Exiting configuration mode");
    run(&mut sh, "show system commit", "not saved");
    run(&mut sh, "exit", "");
    sh.exp_eof().unwrap();
    assert!(daemon.stop(), "efbd stops cleanly on SIGTERM");

    // efbd restarted on the same boot: running is still what was committed.
    let daemon = Daemon::start(&dir.path().join("datastore"), &["--boot-id", "boot-1"]);
    let mut sh = shell(&daemon, dir.path(), "alice");
    run(
        &mut sh,
        "show configuration ecofilter-balancer flow unsaved",
        "priority 1;",
    );
    run(&mut sh, "exit", "");
    assert!(daemon.stop());

    // The box rebooted: it boots with what was saved.
    let daemon = Daemon::start(&dir.path().join("datastore"), &["--boot-id", "boot-2"]);
    let mut sh = shell(&daemon, dir.path(), "alice");
    run(
        &mut sh,
        "show configuration ecofilter-balancer | match flow",
        "flow to-filters {",
    );
    run(
        &mut sh,
        "show configuration | match unsaved | count",
        "Count: 0 lines",
    );
    run(
        &mut sh,
        "show ecofilter-balancer ecofilter-unit ef1",
        "Unit ef1: cores 17",
    );
    run(
        &mut sh,
        "show ecofilter-balancer balancing-config-hash",
        "64351d629194d2923340e38a3f94e497ab22e318cf93a2408867c469990c014f",
    );
    run(&mut sh, "exit", "");
}

#[test]
fn tab_completes_and_question_mark_explains() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(&dir.path().join("datastore"), &[]);
    let mut sh = shell(&daemon, dir.path(), "bob");
    // Tab completes a keyword.
    keys(&mut sh, "show ecofilter-balancer fl");
    keys(&mut sh, "\t");
    sh.exp_string("flow ").unwrap();
    sh.send_control('u').unwrap();
    // ? lists what may come next with the model's descriptions, and keeps the line.
    keys(&mut sh, "show ecofilter-balancer ?");
    sh.exp_string("Possible completions:").unwrap();
    sh.exp_string("balancing-config-hash").unwrap();
    sh.exp_string("Hash of the balancing configuration")
        .unwrap();
    // The listing ends with the prompt and the line again: read past it, so that later
    // expectations cannot match what is left of the listing.
    prompt(&mut sh);
    sh.send_control('u').unwrap();
    configure(&mut sh);
    keys(&mut sh, "set ports port p4-2 speed ?");
    sh.exp_string("<speed>").unwrap();
    sh.exp_string("Port speed").unwrap();
    sh.exp_string("100 Gbit/s using the whole port").unwrap();
    prompt(&mut sh);
    sh.send_control('u').unwrap();
    quiet(&mut sh, "set ports port p4-2 number 4 lane 2 speed 10g");
    // List keys come live from the daemon (the candidate, in configuration mode).
    keys(&mut sh, "set ports port p4");
    keys(&mut sh, "\t");
    sh.exp_string("p4-2 ").unwrap();
    sh.send_control('u').unwrap();
    // Descriptions are not cut at "e.g.".
    keys(&mut sh, "set ecofilter-balancer flow f1 match ?");
    sh.exp_string("IPv4 source prefix, e.g. 10.0.0.0/8")
        .unwrap();
    prompt(&mut sh);
    sh.send_control('u').unwrap();
    keys(&mut sh, "set ecofilter-balancer flow f1 action ?");
    sh.exp_string("to-ecofilter").unwrap();
    sh.exp_string("Send the packet to an ecofilter unit")
        .unwrap();
    prompt(&mut sh);
    sh.send_control('u').unwrap();
    run(&mut sh, "discard", "candidate discarded");
}

#[test]
fn lines_pasted_or_typed_ahead_all_run() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(&dir.path().join("datastore"), &[]);
    let mut sh = shell(&daemon, dir.path(), "carol");
    configure(&mut sh);
    // Typed ahead (or pasted by a terminal without bracketed paste): all at once, before
    // the shell has read the first line.
    keys(
        &mut sh,
        "set ports port a1 number 1\nset ports port a2 number 2\nset ports port a3 number 3\n",
    );
    // Pasted by a terminal with bracketed paste: one block with the newlines in it.
    keys(
        &mut sh,
        "\x1b[200~set ports port b1 number 4\nset ports port b2 number 5\n\x1b[201~\n",
    );
    // Five ports, five lines; the count appears nowhere in what was typed.
    run(
        &mut sh,
        "show | compare | display set | match number | count",
        "Count: 5 lines",
    );
    run(&mut sh, "discard", "candidate discarded");
}

#[test]
fn two_shells_commit_different_paths_and_the_second_of_a_conflict_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(&dir.path().join("datastore"), &[]);
    let (code, _, err) = daemon.cli(
        &[],
        &format!("{}\ncommit\n", one_filter_site_lines().join("\n")),
    );
    assert_eq!(code, 0, "{err}");
    let mut a = shell(&daemon, dir.path(), "ann");
    let mut b = shell(&daemon, dir.path(), "ben");
    configure(&mut a);
    configure(&mut b);
    quiet(&mut a, "set ecofilter-balancer flow bgp-to priority 311");
    quiet(&mut b, "set ecofilter-balancer flow bgp-from priority 301");
    run(&mut a, "commit", "commit complete");
    run(&mut b, "commit", "commit complete");
    quiet(
        &mut a,
        "set ecofilter-balancer flow multicast-v4 priority 201",
    );
    quiet(
        &mut b,
        "set ecofilter-balancer flow multicast-v4 priority 202",
    );
    run(&mut a, "commit", "commit complete");
    // The refusal names the place in the shell's words, not as a data path.
    let said = run(
        &mut b,
        "commit",
        "the same configuration:\r\necofilter-balancer flow multicast-v4 priority\r\n",
    );
    assert!(!said.contains("[name="), "{said}");
    // The shells run under the test's own account (an admin), which records "ACCOUNT as ann".
    assert!(
        said.contains("commit refused") && said.contains(" as ann"),
        "{said}"
    );
    run(&mut b, "rollback 0", "load complete");
    run(&mut b, "show | compare | count", "Count: 0 lines");
    let (_, out, _) = daemon.cli(
        &[
            "-c",
            "show configuration ecofilter-balancer flow multicast-v4",
        ],
        "",
    );
    assert!(out.contains("priority 201;"), "{out}");
}

#[test]
fn mistakes_get_one_clear_error_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(&dir.path().join("datastore"), &[]);
    let mut sh = shell(&daemon, dir.path(), "carl");
    run(
        &mut sh,
        "shwo ports",
        "unknown command \"shwo\"; expected one of:",
    );
    run(
        &mut sh,
        "show ecofiltr-balancer",
        "unknown word \"ecofiltr-balancer\" after \"show\"",
    );
    run(
        &mut sh,
        "set ports port p1 speed 10g",
        "set is a configuration command",
    );
    // Words after a command that takes none are refused, not ignored.
    run(
        &mut sh,
        "show system status foo",
        "\"show system status\" takes nothing after it: unexpected \"foo\"",
    );
    run(
        &mut sh,
        "show system commit 2",
        "show system commit 2: no commit has id 2; history is empty",
    );
    run(
        &mut sh,
        "show liveness",
        "\"show liveness\" is incomplete; continue with one of: profile-status",
    );
    run(
        &mut sh,
        "show system commit last",
        "show system commit: \"last\" is not a commit id; history is empty",
    );
    configure(&mut sh);
    run(
        &mut sh,
        "save it now",
        "save takes nothing (running becomes startup) or one FILE",
    );
    run(
        &mut sh,
        "discard please",
        "\"discard\" takes nothing after it",
    );
    run(
        &mut sh,
        "set ports port p1 mtu 20",
        "expected an integer in 1500..10240",
    );
    run(
        &mut sh,
        "set ports port p1 speed 11g",
        "expected one of 10g, 25g, 40g, 50g, 100g",
    );
    run(
        &mut sh,
        "set ports prot p1",
        "unknown word \"prot\"; expected one of: port",
    );
    run(
        &mut sh,
        "delete ecofilter-balancer flow nope",
        "no such data",
    );
    run(&mut sh, "comit", "unknown command \"comit\"");
    run(&mut sh, "commit confirmed 0", "minutes must be 1 to 65535");
    run(&mut sh, "show | compare | count", "Count: 0 lines");
    // A candidate that breaks a rule is refused with the path and the reason.
    quiet(&mut sh, "set ports port p1 number 1 speed 100g lane 1");
    let said = run(
        &mut sh,
        "commit",
        "ports port p1 lane: a 100g port uses the whole port",
    );
    assert!(said.contains("configuration is not valid"), "{said}");
    run(&mut sh, "exit", "uncommitted change");
    run(&mut sh, "exit", "Exiting configuration mode");
    let (_, out, _) = daemon.cli(&["-c", "show configuration"], "");
    assert!(!out.contains("p1"), "nothing was committed: {out}");
}

#[test]
fn commit_confirmed_not_confirmed_rolls_back_by_itself() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(&dir.path().join("datastore"), &[]);
    let mut sh = shell(&daemon, dir.path(), "dora");
    configure(&mut sh);
    quiet(&mut sh, "set ecofilter-balancer balancing-method layer-4");
    run(&mut sh, "commit confirmed 1", "rolls back at");
    run(&mut sh, "run show system commit", "(unconfirmed)");
    // Nobody confirms; a minute later the previous configuration is back.
    std::thread::sleep(std::time::Duration::from_secs(62));
    run(&mut sh, "run show system commit", "confirm-timeout");
    run(
        &mut sh,
        "run show configuration | match balancing-method | count",
        "Count: 0 lines",
    );
    // efbd's events have it too, newest last.
    run(
        &mut sh,
        "run show log commit | last 1",
        "confirm-timeout  id=",
    );
}

#[test]
fn scripts_run_commands_and_exit_with_a_meaningful_status() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(&dir.path().join("datastore"), &[]);
    let site = one_filter_site_lines().join("\n");
    // set lines without a commit: nothing is applied, and the exit status says so.
    let (code, _, err) = daemon.cli(&[], &site);
    assert_eq!(code, 1);
    assert!(err.contains("uncommitted changes"), "{err}");
    // commit check summarises a long change by list, with the hash and the traffic.
    let (code, out, err) = daemon.cli(&[], &format!("{site}\ncommit check\ndiscard\n"));
    assert_eq!(code, 0, "{out}{err}");
    let ports: std::collections::BTreeSet<&str> = site
        .lines()
        .filter_map(|l| l.strip_prefix("set ports port ")?.split(' ').next())
        .collect();
    let ports = ports.len();
    assert!(
        out.contains(&format!("  ports port: {ports} entries ({ports} added)"))
            && out.contains("  ecofilter-balancer flow: ")
            && out.contains("(show | compare lists every line)")
            && !out.lines().any(|l| l.starts_with("  set ")),
        "{out}"
    );
    assert!(
        out.contains("balancing-config-hash would change: "),
        "{out}"
    );
    // A file of set lines ending in commit configures the site.
    let (code, out, err) = daemon.cli(&[], &format!("{site}\ncommit comment \"site\"\n"));
    assert_eq!(code, 0, "{out}{err}");
    // What a commit of the history changed, by its id.
    let (code, out, err) = daemon.cli(&["-c", "show system commit 1"], "");
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("# commit 1 by "), "{out}");
    assert!(
        out.contains("set ecofilter-balancer flow to-filters"),
        "{out}"
    );
    let (code, out, _) = daemon.cli(&["-c", "show ecofilter-balancer flow"], "");
    assert_eq!(code, 0);
    assert!(out.lines().next().unwrap().starts_with("Flow"), "{out}");
    assert!(
        out.contains("to-filters")
            && out.contains("to-ecofilter ecofilter-unit ef1")
            && out.contains("unknown"),
        "{out}"
    );
    // Ports in the order people count them: p2 before p9-0 before p10-0.
    let (_, out, _) = daemon.cli(&["-c", "show ports"], "");
    let names: Vec<&str> = out
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    let at = |name: &str| names.iter().position(|n| *n == name);
    assert!(
        at("p2") < at("p9-0") && at("p9-0") < at("p10-0") && at("p1") < at("p2"),
        "{out}"
    );
    assert!(at("p1").is_some() && at("p10-0").is_some(), "{out}");
    let (code, _, err) = daemon.cli(&["-c", "show ecofilter-balancer flow nope"], "");
    assert_eq!(code, 1);
    assert_eq!(
        err.trim(),
        "error: show ecofilter-balancer flow nope: no such entry",
        "one command: no line number"
    );
    // The first failing line stops the script, and its line number is given.
    let (code, _, err) = daemon.cli(
        &[],
        "edit\nset ports port p31 number 31 speed 100g\nset ports port p31 mtu 1\ncommit\n",
    );
    assert_eq!(code, 1);
    assert!(
        err.starts_with("error: line 3: ports port p31: mtu \"1\"")
            && err.contains("1500..10240")
            && err.lines().count() == 1,
        "one line naming the script line, the place and what is accepted: {err}"
    );
    let (_, out, _) = daemon.cli(&["-c", "show configuration ports"], "");
    assert!(!out.contains("p31"), "{out}");
    let (_, out, _) = daemon.cli(&["-c", "show ports p9-0 statistics"], "");
    assert!(
        out.starts_with("Port")
            && out.contains("In frames")
            && out
                .lines()
                .nth(1)
                .is_some_and(|l| l.starts_with("p9-0") && l.ends_with("unknown")),
        "{out}"
    );
    let (_, out, _) = daemon.cli(&["-c", "show ports | count"], "");
    assert_eq!(out.trim(), "Count: 21 lines", "a header and the 20 ports");
    // Pipes and displays.
    let (_, out, _) = daemon.cli(
        &[
            "-c",
            "show configuration ecofilter-balancer link | display set",
        ],
        "",
    );
    assert_eq!(
        out.lines().next(),
        Some("set ecofilter-balancer link l1 lan-port p2")
    );
    let (_, out, _) = daemon.cli(
        &[
            "-c",
            "show ecofilter-balancer lookup-session src 10.1.2.3 dst 8.8.8.8 proto 6 link l1",
        ],
        "",
    );
    assert!(out.contains("pair") && out.contains("f1-te7-te8"), "{out}");
    let (code, _, _) = daemon.cli(
        &[
            "-c",
            "call ecofilter-balancer set-bypass-ecofilter-unit ecofilter-unit ef1 mode bypass",
        ],
        "",
    );
    assert_eq!(code, 0);
    let (_, out, _) = daemon.cli(&["-c", "show ecofilter-balancer ecofilter-unit"], "");
    assert!(out.contains("bypass mode bypass"), "{out}");
}

#[test]
fn output_longer_than_the_screen_waits_at_more() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = site_daemon(dir.path());
    // The configuration is some 250 lines; the screen holds 12.
    let mut sh = shell_on_screen(&daemon, dir.path(), 12);
    sh.send_line("show configuration").unwrap();
    let first = sh.exp_string("---(more").unwrap();
    assert!(first.contains("port p1 {"), "{first}");
    assert!(!first.contains("port p4 {"), "one screen only: {first}");
    // Space: the next screen.
    keys(&mut sh, " ");
    let second = sh.exp_string("---(more").unwrap();
    assert!(second.contains("port p3 {"), "{second}");
    // Enter: one more line.
    keys(&mut sh, "\r");
    let line = sh.exp_string("---(more").unwrap();
    assert_eq!(line.matches('\n').count(), 1, "one line: {line:?}");
    // q: back to the prompt; the rest is not shown.
    keys(&mut sh, "q");
    let rest = sh.exp_string("efb> ").unwrap();
    assert!(!rest.contains("active-pairs"), "{rest}");
    // | no-more: everything at once.
    let all = run(&mut sh, "show configuration | no-more", "active-pairs 4;");
    assert!(!all.contains("---(more"), "{all}");
    // Output that fits on the screen is not paged.
    run(&mut sh, "show configuration | count", "Count:");
    // set cli screen-length 0: no paging at all.
    run(&mut sh, "set cli screen-length 0", "Screen length set to 0");
    let all = run(&mut sh, "show configuration", "active-pairs 4;");
    assert!(!all.contains("---(more"), "{all}");
    run(&mut sh, "exit", "");
    // Scripts are never paged.
    let (_, out, _) = daemon.cli(&["-c", "show configuration"], "");
    assert!(
        out.contains("active-pairs") && !out.contains("more"),
        "{out}"
    );
}

#[test]
fn lists_come_as_people_count_flows_as_the_chip_matches() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = site_daemon(dir.path());
    let expected = [
        "p1", "p2", "p3", "p4", "p9-0", "p9-1", "p9-2", "p9-3", "p10-0", "p10-1", "p10-2", "p10-3",
        "p11-0", "p11-1", "p11-2", "p11-3", "p12-0", "p12-1", "p12-2", "p12-3",
    ];
    // The port names each output gives, in its order.
    let ports = |command: &str, prefix: &str| -> Vec<String> {
        let (code, out, err) = daemon.cli(&["-c", command], "");
        assert_eq!(code, 0, "{command}: {err}");
        let mut names: Vec<String> = out
            .lines()
            .filter_map(|l| l.trim_start().strip_prefix(prefix))
            .filter_map(|l| l.split_whitespace().next().map(str::to_string))
            .collect();
        names.dedup();
        names
    };
    assert_eq!(ports("show configuration ports", "port "), expected);
    assert_eq!(
        ports("show configuration | display set", "set ports port "),
        expected
    );
    assert_eq!(
        ports("show system commit 1", "set ports port "),
        expected,
        "what a commit changed"
    );
    // Flows: highest priority first, the order the chip matches in; ties by name.
    let (_, out, _) = daemon.cli(&["-c", "show ecofilter-balancer flow"], "");
    let flows: Vec<&str> = out
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(
        flows,
        [
            "service-vlan",
            "bgp-to",
            "bgp-from",
            "multicast-v4",
            "multicast-v6",
            "to-filters"
        ],
        "{out}"
    );
    // Several names, and wildcards.
    let (_, out, _) = daemon.cli(&["-c", "show ports p9* p1"], "");
    let shown: Vec<&str> = out
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(shown, ["p1", "p9-0", "p9-1", "p9-2", "p9-3"], "{out}");
    let (_, out, _) = daemon.cli(&["-c", "show ecofilter-balancer flow bgp* | count"], "");
    assert_eq!(
        out.trim(),
        "Count: 3 lines",
        "a header and bgp-to, bgp-from"
    );
    let (code, _, err) = daemon.cli(&["-c", "show ports p99*"], "");
    assert_eq!(
        (code, err.trim()),
        (1, "error: show ports: no entry matches p99*")
    );
    // A name of the board's convention says what the board has (tests/interfaces.rs).
    let (code, _, err) = daemon.cli(&["-c", "show ports p1 p77"], "");
    assert_eq!(
        (code, err.trim()),
        (
            1,
            "error: p77 is not configured, and the board has no such port or lane: its physical ports are p1 to p32, their lanes pN-0 to pN-3 (show interfaces lists them)"
        )
    );
    let (code, _, err) = daemon.cli(&["-c", "show ports p1 nope"], "");
    assert_eq!(
        (code, err.trim()),
        (1, "error: show ports nope: no such entry")
    );
}

#[test]
fn display_json_and_set_show_what_was_asked_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = site_daemon(dir.path());
    let cli = |command: &str| {
        let (code, out, err) = daemon.cli(&["-c", command], "");
        assert_eq!(code, 0, "{command}: {err}");
        out
    };
    let port: serde_json::Value =
        serde_json::from_str(&cli("show ports p1 | display json")).unwrap();
    assert_eq!(
        port.as_object()
            .map(|o| o.keys().cloned().collect::<Vec<_>>()),
        Some(vec!["ecofilter-balancer:ports".to_string()]),
        "only the port: {port}"
    );
    let set = cli("show ecofilter-balancer flow bgp-to | display set");
    assert!(
        set.starts_with("set ecofilter-balancer flow bgp-to ") && !set.contains("balancing-method"),
        "{set}"
    );
    let status: serde_json::Value =
        serde_json::from_str(&cli("show system status | display json")).unwrap();
    assert_eq!(status["running-commit"], 1, "{status}");
    assert!(status["sessions"].is_number(), "{status}");
    let history: serde_json::Value =
        serde_json::from_str(&cli("show system commit | display json")).unwrap();
    assert_eq!(history["commits"][0]["rollback"], 0, "{history}");
    assert!(
        history["commits"][0]["user"]
            .as_str()
            .is_some_and(|u| u.ends_with("tester")),
        "{history}"
    );
    let (code, _, err) = daemon.cli(&["-c", "show system status | display set"], "");
    assert_eq!(code, 1);
    assert!(
        err.contains("display set: this command shows no configuration"),
        "{err}"
    );
    // Junos pipes: the last lines, from the first match on.
    let last = cli("show configuration | last 2");
    assert_eq!(last.lines().collect::<Vec<_>>(), ["    }", "}"]);
    let found = cli("show configuration | find \"flow to-filters\"");
    assert!(found.starts_with("    flow to-filters {"), "{found}");
    // A mistyped pipe is refused before the command runs: nothing is committed.
    let (code, _, err) = daemon.cli(
        &[],
        "set ecofilter-balancer flow x priority 1\ncommit | lats 3\n",
    );
    assert_eq!(code, 1);
    assert!(
        err.contains("unknown pipe \"lats 3\"") && err.contains("last N"),
        "{err}"
    );
    assert!(
        !cli("show configuration").contains("flow x "),
        "not committed"
    );
}

#[test]
fn protocols_by_name_and_parameters_by_the_words_typed() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = site_daemon(dir.path());
    let (code, out, err) = daemon.cli(
        &[],
        "set ecofilter-balancer flow dns priority 250 match ip-proto udp dst-port 53 action bypass\ncommit\n",
    );
    assert_eq!(code, 0, "{out}{err}");
    let (_, out, _) = daemon.cli(
        &["-c", "show configuration ecofilter-balancer flow dns"],
        "",
    );
    assert!(out.contains("ip-proto 17;"), "{out}");
    let lookup = "show ecofilter-balancer lookup-session src 10.1.2.3 dst 8.8.8.8";
    let (code, out, err) = daemon.cli(&["-c", &format!("{lookup} proto tcp link l1")], "");
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("f1-te7-te8"), "the same as proto 6: {out}");
    let (code, _, err) = daemon.cli(&["-c", lookup], "");
    assert_eq!(code, 1);
    assert!(
        err.starts_with("error: show ecofilter-balancer lookup-session: missing proto;"),
        "named by the word typed: {err}"
    );
    let (_, _, err) = daemon.cli(&["-c", &format!("{lookup} proto tpc")], "");
    assert!(
        err.contains("proto \"tpc\" is not a protocol; expected a protocol number 0-255 or one of icmp, igmp, tcp, udp"),
        "{err}"
    );
    let (_, _, err) = daemon.cli(&["-c", &format!("{lookup} proto 6 src-port x")], "");
    assert!(
        err.contains("src-port \"x\"") && !err.contains("/ecofilter-balancer:"),
        "{err}"
    );
    let (code, _, err) = daemon.cli(
        &[],
        "set ecofilter-balancer flow dns match ip-proto 300\ncommit\n",
    );
    assert_eq!(code, 1);
    assert!(
        err.contains("ecofilter-balancer flow dns match: ip-proto \"300\" is not a protocol; expected a protocol number 0-255"),
        "{err}"
    );
}

#[test]
fn tab_and_question_mark_list_names_as_people_count_and_protocols_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = site_daemon(dir.path());
    let mut sh = shell(&daemon, dir.path(), "quinn");
    keys(&mut sh, "show ports ?");
    sh.exp_string("Possible completions:").unwrap();
    let listing = sh.exp_string("efb> ").unwrap();
    let at = |name: &str| {
        listing
            .lines()
            .position(|l| l.trim() == name)
            .unwrap_or_else(|| panic!("{name} not in {listing}"))
    };
    assert!(
        at("p2") < at("p9-0") && at("p9-0") < at("p10-0"),
        "{listing}"
    );
    sh.send_control('u').unwrap();
    configure(&mut sh);
    keys(&mut sh, "set ecofilter-balancer flow f1 match ip-proto ?");
    sh.exp_string("a protocol number 0-255 or one of").unwrap();
    sh.exp_string("6: Transmission Control Protocol").unwrap();
    prompt(&mut sh);
    sh.send_control('u').unwrap();
    keys(&mut sh, "set ecofilter-balancer flow f1 match ip-proto tc");
    keys(&mut sh, "\t");
    sh.exp_string("tcp ").unwrap();
    sh.send_control('u').unwrap();
    run(&mut sh, "help pipes", "no-more");
    run(&mut sh, "help", "Help topics");
    run(&mut sh, "exit", "Exiting configuration mode");
    run(
        &mut sh,
        "help show ports",
        "show ports [NAME...] [statistics]",
    );
}

/// A commit has one name, its id, from `commit complete` to `show system commit ID`;
/// `rollback N` counts back from running and says which commit it loaded; a number of the
/// other kind gets an error naming both.
#[test]
fn commits_are_named_by_id_and_rollback_counts_back() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = site_daemon(dir.path());
    for mtu in [9000, 9100] {
        let (code, out, err) = daemon.cli(
            &[],
            &format!("set ports port p2 mtu {mtu}\ncommit comment \"mtu {mtu}\"\n"),
        );
        assert_eq!(code, 0, "{out}{err}");
    }
    let (_, out, _) = daemon.cli(&[], "set ports port p2 mtu 9200\ncommit\n");
    assert!(out.contains("commit complete (commit 4)"), "{out}");
    // The id the commit printed is the one `show system commit` takes.
    let (code, out, err) = daemon.cli(&["-c", "show system commit 3"], "");
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("# commit 3 by "), "{out}");
    assert!(out.contains("\"mtu 9100\""), "{out}");
    assert!(out.contains("set ports port p2 mtu 9100"), "{out}");
    // `?` offers the ids, each with how many commits back it is.
    let (_, out, _) = daemon.cli(&["-c", "show system commit ?"], "");
    assert!(
        out.lines()
            .any(|l| l.trim_start().starts_with("3 ") && l.contains("rollback 1:")),
        "{out}"
    );
    // A rollback number where an id is wanted, and the other way round.
    let (code, _, err) = daemon.cli(&["-c", "show system commit 0"], "");
    assert_ne!(code, 0);
    assert!(
        err.contains("no commit has id 0; history holds commits 1 to 4")
            && err.contains("rollback 0 (commits back from running) is commit 4"),
        "{err}"
    );
    let (code, _, err) = daemon.cli(&[], "rollback 4\n");
    assert_ne!(code, 0);
    assert!(
        err.contains("rollback 4: history goes back 3 commits")
            && err.contains("commit 4 (its id) is rollback 0"),
        "{err}"
    );
    // rollback 2 is commit 2, and the shell says so.
    let (code, out, err) = daemon.cli(&[], "rollback 2\nshow | compare | display set\ndiscard\n");
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("load complete: rollback 2, commit 2 by ") && out.contains("\"mtu 9000\""),
        "{out}"
    );
    assert!(out.contains("set ports port p2 mtu 9000"), "{out}");
}

/// One commit, one count of changes: the set / delete lines `show | compare | display set`
/// lists, said alike by commit check, the commit, the audit, `show log` and the metrics
/// (a new flow is several path-level changes and one history record, but its lines).
#[test]
fn a_commit_has_one_count_of_changes_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(
        &dir.path().join("datastore"),
        &["--metrics-listen", "127.0.0.1:0"],
    );
    efb_tests::chip_io::configure(&daemon, "");
    let committed = || {
        let metrics = daemon.metrics.as_deref().unwrap();
        let (_, text) = efb_tests::http_get(metrics, "/metrics").unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix("efb_committed_changes_total "))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or_else(|| panic!("{text}"))
    };
    let before = committed();
    let change = "set ecofilter-balancer flow dns priority 300\n\
                  set ecofilter-balancer flow dns match ip-proto udp dst-port 53\n\
                  set ecofilter-balancer flow dns action bypass\n\
                  set ports port p2 description uplink\n";
    let (_, lines, _) = daemon.cli(
        &[],
        &format!("{change}show | compare | display set\ndiscard\n"),
    );
    let listed = lines
        .lines()
        .filter(|l| l.starts_with("set ") || l.starts_with("delete "))
        .count();
    assert_eq!(listed, 5, "{lines}");
    let (code, out, err) = daemon.cli(&[], &format!("{change}commit check\ncommit\n"));
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("\n5 changes:\n"), "{out}");
    assert!(
        out.contains("commit complete (commit 2): 5 changes"),
        "{out}"
    );
    let (_, log, _) = daemon.cli(&["-c", "show log commit"], "");
    assert!(log.contains("id=2 ") && log.contains("changes=5"), "{log}");
    let (_, audit, _) = daemon.cli(&["-c", "show system audit"], "");
    assert!(audit.contains("commit 2, 5 changes"), "{audit}");
    assert_eq!(committed() - before, 5);
}

/// `show | compare` as Junos shows it, and its set and JSON forms; a warning is said in
/// words, once, and `commit check` lists it again when asked.
#[test]
fn compare_is_hierarchical_and_warnings_are_told_once_in_words() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = site_daemon(dir.path());
    let change = "set ports port p2 mtu 9100\n\
                  set ecofilter-balancer flow bgp-to priority 320\n\
                  set ecofilter-balancer flow dns priority 300\n\
                  set ecofilter-balancer flow dns match ip-proto udp dst-port 53\n\
                  set ecofilter-balancer flow dns action bypass\n\
                  delete ecofilter-balancer flow multicast-v6\n";
    let (code, out, err) = daemon.cli(&[], &format!("{change}show | compare\ndiscard\n"));
    assert_eq!(code, 0, "{err}");
    for part in [
        "[edit ports port p2]\n+   mtu 9100;\n",
        "[edit ecofilter-balancer flow bgp-to]\n-   priority 310;\n+   priority 320;\n",
        "[edit ecofilter-balancer]\n+   flow dns {\n+       priority 300;\n",
        "-   flow multicast-v6 {\n-       priority 200;\n",
    ] {
        assert!(out.contains(part), "{part}\nnot in\n{out}");
    }
    assert!(
        !out.contains("/ecofilter-balancer:"),
        "no data paths: {out}"
    );
    let (_, out, _) = daemon.cli(
        &[],
        &format!("{change}show | compare | display set\ndiscard\n"),
    );
    assert!(
        out.contains("delete ecofilter-balancer flow multicast-v6\n")
            && out.contains("set ports port p2 mtu 9100\n"),
        "{out}"
    );
    let (_, out, _) = daemon.cli(
        &[],
        &format!("{change}show | compare | display json\ndiscard\n"),
    );
    // The JSON, then what discard says.
    let json: serde_json::Value = serde_json::Deserializer::from_str(&out)
        .into_iter()
        .next()
        .and_then(Result::ok)
        .unwrap_or_else(|| panic!("{out}"));
    let changes = json["changes"].as_array().unwrap();
    assert!(
        changes.iter().any(|c| c["operation"] == "set"
            && c["words"] == "ecofilter-balancer flow bgp-to priority"
            && c["value"] == "320"
            && c["was"] == "310"),
        "{json}"
    );
    assert!(
        changes
            .iter()
            .any(|c| c["operation"] == "delete"
                && c["words"] == "ecofilter-balancer flow multicast-v6"),
        "{json}"
    );

    // A warning, in words, at the commit that brought it.
    let (code, out, err) = daemon.cli(
        &[],
        "set ecofilter-balancer balancing-method dst-ip\ncommit\n",
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(
            "warning: ecofilter-balancer balancing-method: dst-ip is not session-symmetric"
        ),
        "{out}"
    );
    // Not at the next commit, which only says it still holds; commit check lists it.
    let (_, out, _) = daemon.cli(&[], "set ports port p2 mtu 9200\ncommit\n");
    assert!(!out.contains("warning: ecofilter-balancer"), "{out}");
    assert!(
        out.contains("1 warning told at an earlier commit still holds (commit check lists them)"),
        "{out}"
    );
    let (_, out, _) = daemon.cli(&[], "set ports port p2 mtu 9100\ncommit check\ndiscard\n");
    assert!(
        out.contains("warning: ecofilter-balancer balancing-method: dst-ip"),
        "{out}"
    );
    // A value already in force (p4's MTU is the default 9000) is no change to compare.
    let (code, out, err) = daemon.cli(&[], "set ports port p4 mtu 9000\nshow | compare\ndiscard\n");
    assert_eq!(code, 0, "{out}{err}");
    assert!(!out.contains("[edit ports port p4]"), "{out}");
}

/// `commit check` says which traffic a flow change sends elsewhere, and what removing a
/// pair does to the unit's sessions, in the shell's words.
#[test]
fn commit_check_forecasts_flow_and_pair_changes() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = site_daemon(dir.path());
    let (code, out, err) = daemon.cli(
        &[],
        "set ecofilter-balancer flow dns priority 400\n\
         set ecofilter-balancer flow dns match ip-proto udp dst-port 53\n\
         set ecofilter-balancer flow dns action bypass\n\
         commit check\ndiscard\n",
    );
    assert_eq!(code, 0, "{out}{err}");
    let dns = out
        .lines()
        .find(|l| l.starts_with("traffic: flow dns added (priority 400, udp dst-port 53"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        dns.contains("goes to bypass instead of unit ef1") && dns.contains("lose filtering"),
        "{dns}"
    );
    let (code, out, err) = daemon.cli(
        &[],
        "delete ecofilter-balancer ecofilter-unit ef1 pair f1-te15-te16\ncommit check\ndiscard\n",
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.lines().any(
            |l| l.starts_with("traffic: unit ef1: pair f1-te15-te16 removed; its ")
                && l.contains("go to the other pairs")
        ),
        "{out}"
    );
}

/// `save FILE` writes the candidate as set lines and `| save FILE` writes any output, as in
/// Junos; `load merge FILE` reads the first back into another balancer's candidate.
#[test]
fn save_to_a_file_and_load_it_back() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = site_daemon(dir.path());
    let saved = dir.path().join("site.set");
    let ports = dir.path().join("ports.txt");
    let (code, out, err) = daemon.cli(
        &[],
        &format!(
            "set ecofilter-balancer flow dns priority 500 direction both match ip-proto udp dst-port 53\n\
             save {}\nrun show ports | save {}\ndiscard\n",
            saved.display(),
            ports.display()
        ),
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(&format!(
            "lines to {}: the candidate configuration",
            saved.display()
        )),
        "{out}"
    );
    let text = std::fs::read_to_string(&saved).unwrap();
    assert!(
        text.contains("set ecofilter-balancer flow dns match ip-proto 17")
            && text.contains("set ports port p2 number 2"),
        "{text}"
    );
    let shown = std::fs::read_to_string(&ports).unwrap();
    assert!(
        shown.starts_with("Port") && shown.contains("p10-0"),
        "{shown}"
    );

    let other = tempfile::tempdir().unwrap();
    let empty = Daemon::start(&other.path().join("datastore"), &[]);
    let (code, out, err) = empty.cli(&[], &format!("load merge {}\ncommit\n", saved.display()));
    assert_eq!(code, 0, "{out}{err}");
    let (_, out, _) = empty.cli(
        &[
            "-c",
            "show configuration ecofilter-balancer flow dns | display set",
        ],
        "",
    );
    assert!(out.contains("direction both"), "{out}");
}

/// A flow written for one direction splits sessions: the warning names its reverse and
/// where that goes, the forecast says the sessions are split, lookup-session says where
/// the reverse goes; `direction both` ends all three.
#[test]
fn a_one_direction_flow_is_named_splitting_sessions_and_direction_both_mends_it() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = site_daemon(dir.path());
    let flow = "set ecofilter-balancer flow web priority 150 match dst-ipv4 192.0.2.0/24\n\
                set ecofilter-balancer flow web action bypass\n";
    let (code, out, err) = daemon.cli(&[], &format!("{flow}commit check\ncommit\n"));
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.lines().any(|l| l.starts_with(
            "warning: ecofilter-balancer flow web: flow web bypasses traffic, \
             but the reverse (src-ipv4 192.0.2.0/24) goes to unit ef1 (flow to-filters)"
        ) && l.contains("set `direction both` on web")),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("traffic: sessions of flow web are split: the reverse")),
        "{out}"
    );
    let lookup = "show ecofilter-balancer lookup-session src 192.0.2.5 dst 10.1.1.1 proto tcp \
                  src-port 443 dst-port 40000";
    let (code, out, err) = daemon.cli(&["-c", lookup], "");
    assert_eq!(code, 0, "{out}{err}");
    let reverse = out
        .lines()
        .find(|l| l.trim_start().starts_with("reverse"))
        .unwrap_or_default();
    let flow_line = out
        .lines()
        .find(|l| l.trim_start().starts_with("flow"))
        .unwrap_or_default();
    assert!(
        flow_line.ends_with("to-filters"),
        "192.0.2.5 -> 10.1.1.1 is the reverse of web's traffic, filtered: {out}"
    );
    assert!(
        reverse.contains("bypass (flow web): the session is split"),
        "{out}"
    );

    let (code, out, err) = daemon.cli(
        &[],
        "set ecofilter-balancer flow web direction both\ncommit check\ncommit\n",
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(!out.contains("split"), "{out}");
    assert!(out.contains("direction as-written -> both"), "{out}");
    let (_, out, _) = daemon.cli(&["-c", lookup], "");
    assert!(out.contains("web") && out.contains("the same way"), "{out}");
}

/// `?` ending a line that came from `-c` or a script lists what the key would, and runs
/// nothing.
#[test]
fn question_mark_through_dash_c_and_scripts_lists_what_may_come_next() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = site_daemon(dir.path());
    let (code, out, err) = daemon.cli(&["-c", "show system ?"], "");
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.starts_with("Possible completions:"), "{out}");
    assert!(out.contains("commit"), "{out}");
    // Names come live from the daemon, counted as people count.
    let (code, out, _) = daemon.cli(&["-c", "show ports p1?"], "");
    assert_eq!(code, 0);
    assert!(out.contains("p10-0") && !out.contains("p2 "), "{out}");
    // A script's configuration command is answered as configuration mode would, and the
    // candidate is left as it was.
    let (code, out, err) = daemon.cli(&[], "set ports port p2 mtu ?\n");
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("1500..10240, in bytes"), "{out}");
    let (code, out, err) = daemon.cli(&[], "set liveness profile fast interval ?\n");
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("10..60000, in milliseconds"), "{out}");
    // Inside quotes `?` is a character like any other.
    let (code, _, err) = daemon.cli(&["-c", "show ports \"p2?\""], "");
    assert_ne!(code, 0);
    assert!(err.contains("p2?"), "{err}");
}

/// Refusals in the shell's words, not libyang's: a value out of range, a deleted port that a
/// link still uses (said when the delete is typed, and again by the commit), a mandatory
/// leaf missing; and `commit check` says what a change does to the balancing.
#[test]
fn refusals_speak_the_shells_words_and_commit_check_tells_the_consequences() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = site_daemon(dir.path());

    let (code, _, err) = daemon.cli(&["-c", "set ports port p2 mtu 100000"], "");
    assert_ne!(code, 0);
    assert!(
        err.contains(
            "ports port p2: mtu \"100000\" is out of range; expected an integer in 1500..10240"
        ),
        "{err}"
    );
    let (_, _, err) = daemon.cli(&["-c", "set ports port p2 mtu abc"], "");
    assert!(err.contains("\"abc\" is not an integer"), "{err}");
    assert!(!err.contains("uint16"), "{err}");
    // The header carries the core in one byte: refused when typed, as `?` says, not only
    // by the commit.
    let (code, _, err) = daemon.cli(
        &["-c", "set ecofilter-balancer ecofilter-unit ef1 cores 256"],
        "",
    );
    assert_ne!(code, 0);
    assert!(
        err.contains("cores \"256\" is out of range; expected an integer in 1..255"),
        "{err}"
    );

    let (code, out, err) = daemon.cli(&[], "edit\ndelete ports port p1\ncommit check\n");
    assert_ne!(code, 0);
    assert!(
        out.contains("warning: port p1 is used by link l1 wan-port; a commit is refused"),
        "{out}"
    );
    assert!(
        err.contains(
            "ecofilter-balancer link l1 wan-port: refers to port p1, which does not exist"
        ),
        "{err}"
    );
    assert!(!err.contains("leafref") && !err.contains("/efb:"), "{err}");

    let (_, _, err) = daemon.cli(
        &[],
        "edit\nset ecofilter-balancer link l9 wan-port p1\ncommit check\n",
    );
    assert!(
        err.contains("ecofilter-balancer link l9: lan-port is missing: it is mandatory"),
        "{err}"
    );

    let (code, out, err) = daemon.cli(
        &[],
        "edit\nset ecofilter-balancer ecofilter-unit ef1 cores 18\ncommit check\ndiscard\n",
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("balancing-config-hash would change: "),
        "{out}"
    );
    let moves = out
        .lines()
        .find(|l| l.starts_with("traffic: ef1: "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        moves.contains("buckets would move (") && moves.ends_with("): cores 17 -> 18"),
        "{moves}"
    );
    let (_, out, _) = daemon.cli(
        &[],
        "edit\nset ports port p1 description uplink\ncommit check\ndiscard\n",
    );
    assert!(
        out.contains("balancing-config-hash unchanged") && out.contains("traffic: no bucket moves"),
        "{out}"
    );
}

#[test]
fn show_log_lists_the_commit_just_made_and_a_liveness_change() {
    use efb_tests::Target;
    use efb_tests::chip_io::{self, Chip, FAST_PROBING};
    let dir = tempfile::tempdir().unwrap();
    let target = Target::start(&[]);
    let daemon = chip_io::daemon_on(dir.path(), &target);
    chip_io::configure(&daemon, FAST_PROBING);
    let logged = |kind: &str, text: &str| {
        let (_, out, _) = daemon.cli(&["-c", &format!("show log {kind}")], "");
        out.contains(text)
    };
    for _ in 0..200 {
        if logged("liveness", "pair=f1-te1-te2 from=init to=up") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let mut sh = shell(&daemon, dir.path(), "erin");
    configure(&mut sh);
    quiet(&mut sh, "set ports port p1 description uplink");
    run(
        &mut sh,
        "commit comment \"describe p1\" and-quit",
        "commit complete",
    );
    let mut chip = Chip::connect(&target);
    chip.set_filter_dead("p9-0", "p9-1", true);
    for _ in 0..200 {
        if logged("liveness", "to=down") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // The commit just made, with who, from where and why.
    let commits = run(&mut sh, "show log commit", "comment=\"describe p1\"");
    assert!(
        commits.contains("Time") && commits.contains(" as erin\" origin=shell"),
        "{commits}"
    );
    // Newest last: the pair that went down ends the liveness events.
    run(
        &mut sh,
        "show log liveness | last 1",
        "liveness  unit=ef1 pair=f1-te1-te2 from=up to=down reason=\"4 consecutive keep-alives lost",
    );
    // Everything, one table: the commit before the liveness change that followed it.
    let all = run(&mut sh, "show log | no-more", "from=up to=down");
    assert!(all.contains("comment=\"describe p1\""), "{all}");
    // A word that is no kind is refused, naming the kinds.
    run(&mut sh, "show log commits", "kinds are: commit, rollback");
}

/// A manual bypass skips the filters for every session of the unit: on a terminal the shell
/// asks first (scripts do not), and `show system status` says which units are in a manual
/// mode; `show system users` says who else is editing.
#[test]
fn a_manual_bypass_is_confirmed_on_a_terminal_and_shown_in_the_status() {
    let dir = tempfile::tempdir().unwrap();
    let target = efb_tests::Target::start(&[]);
    let daemon = efb_tests::chip_io::daemon_on(dir.path(), &target);
    efb_tests::chip_io::configure(&daemon, "");

    let mut sh = shell(&daemon, dir.path(), "alice");
    let call = "call ecofilter-balancer set-bypass-ecofilter-unit ecofilter-unit ef1 mode bypass";
    sh.send_line(call).unwrap();
    sh.exp_string("ef1: every session then skips the DPI filters, until the mode is auto again.")
        .unwrap();
    sh.exp_string("Continue? [yes,no] (no) ").unwrap();
    sh.send_line("no").unwrap();
    sh.exp_string("not confirmed: nothing changed").unwrap();
    prompt(&mut sh);
    run(
        &mut sh,
        "show system status | match Manual",
        "none: every unit follows liveness (auto)",
    );
    sh.send_line(call).unwrap();
    sh.exp_string("Continue? [yes,no] (no) ").unwrap();
    sh.send_line("yes").unwrap();
    sh.exp_string("ok").unwrap();
    prompt(&mut sh);
    run(&mut sh, "show system status | match Manual", "ef1 bypass");

    // Another session with uncommitted changes shows in the status and in users.
    let mut bob = shell(&daemon, dir.path(), "bob");
    configure(&mut bob);
    quiet(&mut bob, "set ports port p1 description uplink");
    run(
        &mut sh,
        "show system users | match bob",
        "uncommitted changes",
    );
    run(
        &mut sh,
        "show system status | match Sessions",
        "bob (uncommitted changes)",
    );
    // Both shells run under one Unix account: only this shell's own session has the `*`.
    // Three sessions of one Unix account: alice's, bob's and this `-c`'s.
    let (_, users, _) = daemon.cli(&["-c", "show system users"], "");
    let rows: Vec<&str> = users.lines().skip(1).collect();
    let marked: Vec<&&str> = rows
        .iter()
        .filter(|l| {
            l.split_whitespace()
                .next()
                .is_some_and(|id| id.ends_with('*'))
        })
        .collect();
    assert!(
        rows.len() == 3
            && marked.len() == 1
            && !marked[0].contains("alice")
            && !marked[0].contains("bob"),
        "only the asking session is marked: {users}"
    );
    // Entering configuration mode says who else holds uncommitted changes.
    run(
        &mut sh,
        "edit",
        "Users with uncommitted changes: root as bob (session",
    );
    quiet(&mut sh, "exit");

    // A script means what it says: no question.
    let (code, out, err) = daemon.cli(
        &[
            "-c",
            "call ecofilter-balancer set-bypass-ecofilter-unit mode primary",
        ],
        "",
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(!out.contains("Continue?"), "{out}");
    run(&mut sh, "show system status | match Manual", "ef1 primary");
    run(&mut sh, "exit", "");
    run(&mut bob, "exit", "");
}

/// A `commit confirmed` nobody confirms is rolled back by efbd, and every open shell is
/// told at once, above its prompt (as Junos tells every terminal).
#[test]
fn an_automatic_rollback_is_told_to_every_open_shell() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(&dir.path().join("datastore"), &[]);
    let mut sh = shell(&daemon, dir.path(), "alice");
    // bob commits with a 2 s wait through the management API (the shell counts minutes).
    let mut bob = efb_cli::client::Client::connect(&daemon.address, "bob").unwrap();
    bob.edit_lines("set ports port p1 number 1 speed 100g")
        .unwrap();
    let reply = bob
        .commit(efb_mgmt_proto::v1::CommitRequest {
            confirm_seconds: 2,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(reply.commit_id, 1);
    sh.exp_string("commit 1 was not confirmed in time; efbd rolled it back (now commit 2")
        .unwrap();
    // The prompt is drawn again and works.
    run(&mut sh, "show configuration | count", "Count: 0 lines");

    // efbd restarts under the open shell: the shell hears the next one too.
    assert!(daemon.stop());
    let daemon = Daemon::start(&dir.path().join("datastore"), &[]);
    run(
        &mut sh,
        "show system status | match Running",
        "Running commit",
    );
    std::thread::sleep(std::time::Duration::from_secs(2));
    let mut bob = efb_cli::client::Client::connect(&daemon.address, "bob").unwrap();
    bob.edit_lines("set ports port p2 number 2 speed 100g")
        .unwrap();
    let reply = bob
        .commit(efb_mgmt_proto::v1::CommitRequest {
            confirm_seconds: 2,
            ..Default::default()
        })
        .unwrap();
    sh.exp_string(&format!(
        "commit {} was not confirmed in time; efbd rolled it back",
        reply.commit_id
    ))
    .unwrap();
    run(&mut sh, "exit", "");
}

/// Junos habits: `load merge terminal` (paste, then Ctrl-D), file names completed by Tab,
/// `rollback ?` with each commit's time, user and comment, `show | compare rollback N`.
#[test]
fn load_terminal_rollback_help_and_compare_with_a_rollback() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(&dir.path().join("datastore"), &[]);
    let (code, out, err) = daemon.cli(
        &[],
        "set ports port p1 number 1 speed 100g\ncommit comment \"first port\"\n",
    );
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = daemon.cli(
        &[],
        "set ports port p2 number 2 speed 100g\ncommit comment \"second port\"\n",
    );
    assert_eq!(code, 0, "{out}{err}");
    // Operational mode, as Junos: running against a past commit, in the hierarchical form.
    let (code, out, err) = daemon.cli(&["-c", "show configuration | compare rollback 1"], "");
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("[edit ports]\n+   port p2 {"), "{out}");
    let (code, _, err) = daemon.cli(&["-c", "show configuration | compare"], "");
    assert!(code != 0 && err.contains("takes rollback N here"), "{err}");
    // Two past commits side by side: what changed from rollback 1 to rollback 0 (the
    // second port), and back the other way.
    let (code, out, err) = daemon.cli(&["-c", "show system rollback 0 compare 1"], "");
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("# from rollback 1, commit 1 by "), "{out}");
    assert!(out.contains("\"first port\""), "{out}");
    assert!(out.contains("[edit ports]\n+   port p2 {"), "{out}");
    let (code, out, err) = daemon.cli(&["-c", "show system rollback 1 compare 0"], "");
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("[edit ports]\n-   port p2 {"), "{out}");
    let (code, out, _) = daemon.cli(&["-c", "show system rollback 1 compare 1"], "");
    assert!(
        code == 0 && out.contains("they are the same configuration"),
        "{out}"
    );
    let (code, _, err) = daemon.cli(&["-c", "show system rollback 0 compare 7"], "");
    assert!(
        code != 0 && err.contains("rollback 7: history goes back 1 commits"),
        "{err}"
    );
    let (code, _, err) = daemon.cli(&["-c", "show system rollback 0 with 1"], "");
    assert!(code != 0 && err.contains("expected compare M"), "{err}");
    let site = dir.path().join("site-part.set");
    std::fs::write(&site, "set ports port p3 number 3 speed 100g\n").unwrap();

    let mut sh = shell(&daemon, dir.path(), "alice");
    configure(&mut sh);
    // Pasted lines, ended by Ctrl-D at the start of a line.
    sh.send_line("load merge terminal").unwrap();
    sh.exp_string("[Type ^D at a new line to end input]")
        .unwrap();
    sh.send_line("set ports port p4 number 4 speed 100g")
        .unwrap();
    sh.send_line("set ports port p4 description pasted")
        .unwrap();
    sh.send("\x04").unwrap();
    sh.flush().unwrap();
    sh.exp_string("load complete").unwrap();
    prompt(&mut sh);
    run(&mut sh, "show ports port p4", "description pasted;");
    // JSON is not what load set takes.
    sh.send_line("load set terminal").unwrap();
    sh.exp_string("[Type ^D").unwrap();
    sh.send_line("{\"ecofilter-balancer:ports\": {}}").unwrap();
    sh.send("\x04").unwrap();
    sh.flush().unwrap();
    sh.exp_string("load set takes set / delete lines").unwrap();
    prompt(&mut sh);

    // Tab completes a file name.
    let partial = format!("load merge {}/site-p", dir.path().display());
    keys(&mut sh, &partial);
    keys(&mut sh, "\t");
    sh.exp_string("site-part.set").unwrap();
    keys(&mut sh, "\r");
    sh.exp_string("load complete").unwrap();
    prompt(&mut sh);

    // rollback ? says when, who and why for each number.
    keys(&mut sh, "rollback ?");
    sh.exp_string("second port").unwrap();
    sh.exp_string("first port").unwrap();
    keys(&mut sh, "\x15"); // Ctrl-U: clear the line
    prompt(&mut sh);
    sh.send_line("").unwrap();
    prompt(&mut sh);
    // Against rollback 1 (before the second port) the candidate also adds p2.
    let out = run(
        &mut sh,
        "show | compare rollback 1 | display set",
        "set ports port p4 description pasted",
    );
    assert!(out.contains("set ports port p2 "), "{out}");
    let out = run(&mut sh, "show | compare | display set", "set ports port p4");
    assert!(!out.contains("port p2 "), "{out}");
    run(
        &mut sh,
        "show | compare rollback 9",
        "rollback 9: no such commit",
    );
    run(&mut sh, "rollback 0", "load complete");
    run(&mut sh, "exit", "Exiting configuration mode");
    run(&mut sh, "exit", "");
}

/// Junos's edit hierarchy: `edit` moves the place (said as `[edit ...]` above the prompt),
/// `set`, `delete`, `show`, Tab and `?` are relative to it, `up`, `top` and `exit` go back;
/// `rename`, `copy`, `insert` and `annotate` work on list entries.
#[test]
fn edit_hierarchy_rename_copy_and_annotate() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = site_daemon(dir.path());
    let mut sh = shell(&daemon, dir.path(), "edna");
    sh.send_line("edit").unwrap();
    sh.exp_string("Entering configuration mode").unwrap();
    sh.exp_string("[edit]\r\n").unwrap();
    prompt(&mut sh);

    // Down two levels at once, then relative set, show, Tab and ?.
    run(
        &mut sh,
        "edit ecofilter-balancer flow bgp-to",
        "[edit ecofilter-balancer flow bgp-to]",
    );
    quiet(&mut sh, "set priority 311 match dst-port 180");
    let before = run(&mut sh, "show", "priority 311;");
    assert!(!before.contains('{'), "no levels above the place: {before}");
    run(&mut sh, "show match", "dst-port 180;");
    keys(&mut sh, "set mat");
    keys(&mut sh, "\t");
    sh.exp_string("match ").unwrap();
    sh.send_control('u').unwrap();
    keys(&mut sh, "set match ?");
    sh.exp_string("src-ipv4").unwrap();
    prompt(&mut sh);
    sh.send_control('u').unwrap();
    quiet(&mut sh, "delete description");
    run(
        &mut sh,
        "show | match description | count",
        "Count: 0 lines",
    );
    run(
        &mut sh,
        "edit match",
        "[edit ecofilter-balancer flow bgp-to match]",
    );
    run(&mut sh, "up", "[edit ecofilter-balancer flow bgp-to]");
    run(
        &mut sh,
        "up 3",
        "up 3: [edit ecofilter-balancer flow bgp-to] is 2 levels below the top",
    );
    // top COMMAND runs from the top and stays where it was.
    quiet(&mut sh, "top set ports port p9-0 mtu 9100");
    run(
        &mut sh,
        "top show ports port p9-0 mtu",
        "[edit ecofilter-balancer flow bgp-to]",
    );
    run(&mut sh, "top", "[edit]");
    run(&mut sh, "up", "up: already at the top of the hierarchy");

    // exit goes back to where edit was typed; a list entry and its list are one level.
    run(
        &mut sh,
        "edit ecofilter-balancer",
        "[edit ecofilter-balancer]",
    );
    keys(&mut sh, "edit fl");
    keys(&mut sh, "\t");
    sh.exp_string("flow ").unwrap();
    keys(&mut sh, "bgp-from\n");
    sh.exp_string("[edit ecofilter-balancer flow bgp-from]")
        .unwrap();
    prompt(&mut sh);
    run(&mut sh, "up", "[edit ecofilter-balancer]");
    run(
        &mut sh,
        "edit flow bgp-from",
        "[edit ecofilter-balancer flow bgp-from]",
    );
    run(&mut sh, "exit", "[edit ecofilter-balancer]");
    // A new entry is fine: the first set makes it, as in Junos.
    run(
        &mut sh,
        "edit flow new-one",
        "[edit ecofilter-balancer flow new-one]",
    );
    quiet(&mut sh, "set priority 5");
    run(&mut sh, "exit", "[edit ecofilter-balancer]");
    run(&mut sh, "exit", "[edit]");
    run(
        &mut sh,
        "show ecofilter-balancer flow new-one",
        "priority 5;",
    );

    // rename keeps references as they were, and says which ones now name nothing.
    let said = run(
        &mut sh,
        "rename ports port p1 to p1-new",
        "rename changes no reference: set them to p1-new",
    );
    assert!(said.contains("warning: port p1 is used by"), "{said}");
    run(
        &mut sh,
        "show ports port p1-new | display set",
        "set ports port p1-new speed",
    );
    run(
        &mut sh,
        "show | compare | display set | match \"delete ports\"",
        "delete ports port p1",
    );
    run(
        &mut sh,
        "rename ports port p2 to p3",
        "ports port p3 already exists",
    );
    run(
        &mut sh,
        "rename ports port nope to p99",
        "ports port nope: no such entry",
    );
    run(
        &mut sh,
        "rename ports port p2 mtu to x",
        "mtu is not a list entry",
    );
    // A pair keeps its place in the unit: the order of pairs is part of the balancing.
    quiet(
        &mut sh,
        "rename ecofilter-balancer ecofilter-unit ef1 pair f1-te1-te2 to f1-first",
    );
    let pairs = run(
        &mut sh,
        "show ecofilter-balancer ecofilter-unit ef1 | display set | match lan-port",
        "f1-te15-te16 lan-port",
    );
    let at = |name: &str| pairs.find(name).unwrap_or(usize::MAX);
    assert!(
        at("f1-first") < at("f1-te3-te4") && at("f1-te3-te4") < at("f1-te5-te6"),
        "{pairs}"
    );
    // insert moves a pair (Junos's words, with or without the list's name), at the top
    // or at the unit; the other pairs keep their order.
    quiet(
        &mut sh,
        "insert ecofilter-balancer ecofilter-unit ef1 pair f1-te5-te6 before f1-first",
    );
    run(
        &mut sh,
        "edit ecofilter-balancer ecofilter-unit ef1",
        "[edit ecofilter-balancer ecofilter-unit ef1]",
    );
    quiet(&mut sh, "insert pair f1-first after pair f1-te15-te16");
    let pairs = run(
        &mut sh,
        "show | display set | match lan-port",
        "f1-first lan-port",
    );
    let at = |name: &str| pairs.find(name).unwrap_or(usize::MAX);
    assert!(
        at("f1-te5-te6") < at("f1-te3-te4")
            && at("f1-te3-te4") < at("f1-te7-te8")
            && at("f1-te15-te16") < at("f1-first"),
        "{pairs}"
    );
    let changes = run(&mut sh, "show | compare | display set", "pair f1-first");
    assert!(changes.contains("f1-te5-te6"), "{changes}");
    run(
        &mut sh,
        "insert pair f1-first after f1-te15-te16",
        "pair f1-first is already after f1-te15-te16",
    );
    // Tab and ? offer the words, then the other pairs.
    keys(&mut sh, "insert pair f1-te3-te4 ?");
    sh.exp_string("before").unwrap();
    keys(&mut sh, "\x15");
    prompt(&mut sh);
    sh.send_line("").unwrap();
    prompt(&mut sh);
    keys(&mut sh, "insert pair f1-te3-te4 after ?");
    sh.exp_string("f1-te9-te10").unwrap();
    keys(&mut sh, "\x15");
    prompt(&mut sh);
    sh.send_line("").unwrap();
    prompt(&mut sh);
    run(
        &mut sh,
        "insert pair f1-te3-te4 after nope",
        "no pair nope in the candidate; its pairs are, in order: f1-te5-te6, f1-te3-te4",
    );
    run(&mut sh, "top", "[edit]");
    // Where a port is taken (a link's or a pair's), ? and Tab offer the free ones only.
    quiet(&mut sh, "set ports port p20 number 20 speed 100g");
    keys(&mut sh, "set ecofilter-balancer link l9 lan-port ?");
    sh.exp_string("Possible completions:").unwrap();
    let offered = sh.exp_string("efb# ").unwrap();
    assert!(offered.contains("p20"), "{offered}");
    assert!(
        !offered.contains("p9-2") && !offered.contains("p10-0"),
        "{offered}"
    );
    keys(&mut sh, "\x15");
    sh.send_line("").unwrap();
    prompt(&mut sh);
    let said = run(
        &mut sh,
        "insert ecofilter-balancer flow bgp-to before bgp-from",
        "(ecofilter-balancer ecofilter-unit pair)",
    );
    assert!(
        said.contains("flow entries are kept in the order of their names"),
        "{said}"
    );
    // copy: the same content under another name.
    quiet(
        &mut sh,
        "copy ecofilter-balancer flow bgp-to to flow bgp-to-2",
    );
    run(
        &mut sh,
        "show ecofilter-balancer flow bgp-to-2",
        "dst-port 180;",
    );

    // annotate sets the description of an entry: at a place, or with a path.
    run(
        &mut sh,
        "edit ecofilter-balancer link l2",
        "[edit ecofilter-balancer link l2]",
    );
    quiet(&mut sh, "annotate \"second uplink\"");
    run(&mut sh, "show", "description \"second uplink\";");
    run(&mut sh, "top", "[edit]");
    quiet(
        &mut sh,
        "annotate ecofilter-balancer flow bgp-from \"BGP back\"",
    );
    run(
        &mut sh,
        "show ecofilter-balancer flow bgp-from",
        "description \"BGP back\";",
    );
    let said = run(
        &mut sh,
        "annotate ecofilter-balancer balancing-method \"x\"",
        "ecofilter-balancer ecofilter-unit pair",
    );
    assert!(
        said.contains("cannot be annotated") && said.contains("ports port"),
        "{said}"
    );
    run(
        &mut sh,
        "edit ports port p2 mtu",
        "edit ports port p2 mtu: mtu is a leaf, not a level",
    );

    // delete alone deletes the place, once confirmed.
    run(
        &mut sh,
        "edit ecofilter-balancer flow bgp-to-2",
        "[edit ecofilter-balancer flow bgp-to-2]",
    );
    sh.send_line("delete").unwrap();
    sh.exp_string("Delete everything under this level.")
        .unwrap();
    sh.exp_string("Continue? [yes,no] (no) ").unwrap();
    sh.send_line("yes").unwrap();
    prompt(&mut sh);
    run(
        &mut sh,
        "top show ecofilter-balancer flow bgp-to-2 | count",
        "Count: 0 lines",
    );

    // exit configuration-mode leaves from anywhere (with the usual warning first), and
    // configuration mode starts at the top again.
    run(
        &mut sh,
        "exit configuration-mode",
        "uncommitted changes: commit or discard them",
    );
    run(
        &mut sh,
        "exit configuration-mode",
        "Exiting configuration mode",
    );
    sh.send_line("configure").unwrap();
    sh.exp_string("Entering configuration mode").unwrap();
    sh.exp_string("[edit]\r\n").unwrap();
    prompt(&mut sh);
    run(&mut sh, "discard", "candidate discarded");
    run(&mut sh, "exit", "Exiting configuration mode");
    run(&mut sh, "exit", "");
}

/// `monitor ports`: the view drawn again every second with rates, until a key (Ctrl-C
/// too) gives the prompt back; `?` offers monitor and clear.
#[test]
fn monitor_draws_rates_every_second_until_a_key_is_pressed() {
    use efb_tests::chip_io::{self, Chip};
    let dir = tempfile::tempdir().unwrap();
    let target = efb_tests::Target::start(&[]);
    let daemon = chip_io::daemon_on(dir.path(), &target);
    chip_io::configure(&daemon, "");
    let mut chip = Chip::connect(&target);
    let mut sh = shell(&daemon, dir.path(), "mona");
    keys(&mut sh, "?");
    sh.exp_string("Clear counters").unwrap();
    sh.exp_string("Watch a view drawn again every second")
        .unwrap();
    prompt(&mut sh);
    sh.send_control('u').unwrap();

    sh.send_line("monitor ports p2").unwrap();
    // The first drawing has no rate yet; the next one does (nothing moved: 0).
    sh.exp_string("Seconds: 0").unwrap();
    sh.exp_regex(r"p2\s+up\s+0\s+-\s+-\s").unwrap();
    sh.exp_string("Seconds: 1").unwrap();
    sh.exp_regex(r"p2\s+up\s+0\s+0\s+0\s").unwrap();
    // Frames come in: a later drawing counts them, at some rate per second.
    chip.inject(
        "p2",
        vec![efb_target::frames::eth(&[], 0x0806, &[0u8; 28]); 4],
    );
    sh.exp_regex(r"p2\s+up\s+4\s+[1-9]\d*\s+[1-9]\d*\s")
        .unwrap();
    keys(&mut sh, "q");
    prompt(&mut sh);
    run(&mut sh, "show ports p2 statistics", "p2");
    // Ctrl-C is a key too: the shell stays.
    sh.send_line("monitor ecofilter-balancer flow").unwrap();
    sh.exp_string("Packets/s").unwrap();
    sh.send_control('c').unwrap();
    prompt(&mut sh);
    run(&mut sh, "show system status", "Daemon");
    run(&mut sh, "exit", "");
}

/// Junos's `deactivate` / `activate`: a node kept in the configuration but not applied,
/// shown `inactive:`, written as a `deactivate` line, committed, kept through a restart
/// and a rollback; a pair comes back to its place (the hash with it).
#[test]
fn deactivate_keeps_a_node_without_applying_it() {
    let dir = tempfile::tempdir().unwrap();
    let datastore = dir.path().join("datastore");
    let daemon = site_daemon(dir.path());
    let script = |daemon: &Daemon, lines: &str| {
        let (code, out, err) = daemon.cli(&[], lines);
        assert_eq!(code, 0, "{lines}:\n{out}{err}");
        out
    };
    let hash = |daemon: &Daemon| {
        script(daemon, "show ecofilter-balancer balancing-config-hash\n")
            .trim()
            .to_string()
    };
    let first_hash = hash(&daemon);
    let out = script(
        &daemon,
        "edit\ndeactivate ecofilter-balancer flow bgp-to\nshow ecofilter-balancer flow bgp-to\n\
         show | compare\nshow | compare | display set\ncommit\n",
    );
    assert!(out.contains("inactive: flow bgp-to {"), "{out}");
    assert!(
        out.contains("! inactive: ecofilter-balancer flow bgp-to"),
        "{out}"
    );
    assert!(
        out.contains("\ndeactivate ecofilter-balancer flow bgp-to\n"),
        "{out}"
    );
    assert!(out.contains("commit complete"), "{out}");
    // Not applied: the flows in force leave it out; the configuration keeps it.
    let flows = script(&daemon, "show ecofilter-balancer flow\n");
    assert!(
        !flows.contains("bgp-to") && flows.contains("bgp-from"),
        "{flows}"
    );
    let written = script(&daemon, "show configuration | display set | match bgp-to\n");
    assert!(
        written.contains("set ecofilter-balancer flow bgp-to priority")
            && written
                .trim_end()
                .ends_with("deactivate ecofilter-balancer flow bgp-to"),
        "{written}"
    );
    // Typed below it, a line edits it where it is kept.
    let out = script(
        &daemon,
        "edit\nset ecofilter-balancer flow bgp-to description \"kept aside\"\n\
         show ecofilter-balancer flow bgp-to\ncommit\n",
    );
    assert!(
        out.contains("inactive: flow bgp-to {") && out.contains("kept aside"),
        "{out}"
    );

    // Kept through a restart; saved to a file and read back unchanged.
    assert!(daemon.stop());
    let daemon = Daemon::start(&datastore, &[]);
    let saved = dir.path().join("saved.set");
    let out = script(
        &daemon,
        &format!(
            "edit\nshow ecofilter-balancer flow bgp-to\nsave {0}\nload override {0}\n\
             show | compare | count\n",
            saved.display()
        ),
    );
    assert!(out.contains("inactive: flow bgp-to {"), "{out}");
    assert!(out.contains("Count: 0 lines"), "{out}");

    // A pair deactivated leaves the balancing; activated, it is back at its place.
    let pair = "ecofilter-balancer ecofilter-unit ef1 pair f1-te3-te4";
    script(&daemon, &format!("edit\ndeactivate {pair}\ncommit\n"));
    assert_ne!(hash(&daemon), first_hash);
    let out = script(
        &daemon,
        &format!(
            "edit\nactivate {pair}\nactivate ecofilter-balancer flow bgp-to\nshow | compare\ncommit\n"
        ),
    );
    assert!(
        out.contains("! active: ecofilter-balancer flow bgp-to"),
        "{out}"
    );
    assert_eq!(hash(&daemon), first_hash);
    let order = script(
        &daemon,
        "show configuration ecofilter-balancer ecofilter-unit ef1 | display set | match lan-port\n",
    );
    let at = |name: &str| order.find(name).unwrap_or(usize::MAX);
    assert!(
        at("f1-te1-te2") < at("f1-te3-te4") && at("f1-te3-te4") < at("f1-te5-te6"),
        "{order}"
    );
    let flows = script(&daemon, "show ecofilter-balancer flow\n");
    assert!(flows.contains("bgp-to"), "{flows}");

    // rollback brings back what was inactive then; what cannot be done is refused.
    let out = script(&daemon, "edit\nrollback 1\nshow | compare\ndiscard\n");
    assert!(
        out.contains("! inactive: ecofilter-balancer flow bgp-to"),
        "{out}"
    );
    let (code, _, err) = daemon.cli(&[], "edit\nactivate ecofilter-balancer flow bgp-to\n");
    assert!(code != 0 && err.contains("not inactive"), "{err}");
    assert!(daemon.stop());
}
