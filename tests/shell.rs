//! The shell as engineers use it: a real efbd process, efb-cli in a real terminal (PTY),
//! keys typed, the screen read.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

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
    run(
        &mut sh,
        "show | compare",
        "+ /ecofilter-balancer:ecofilter-balancer/flow[name='to-filters']",
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
    let said = run(
        &mut b,
        "commit",
        "/ecofilter-balancer:ecofilter-balancer/flow[name='multicast-v4']/priority",
    );
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
        "commit 2: no such commit in history (history is empty)",
    );
    run(
        &mut sh,
        "show liveness",
        "\"show liveness\" is incomplete; continue with one of: profile-status",
    );
    run(
        &mut sh,
        "show system commit last",
        "\"last\" is not a rollback number",
    );
    configure(&mut sh);
    run(
        &mut sh,
        "save now",
        "\"save\" takes nothing after it: unexpected \"now\"",
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
        "port[name='p1']/lane: a 100g port uses the whole port",
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
    // commit check counts the change in the lines it lists.
    let (code, out, err) = daemon.cli(&[], &format!("{site}\ncommit check\ndiscard\n"));
    assert_eq!(code, 0, "{out}{err}");
    let listed = out
        .lines()
        .filter(|l| l.starts_with("  set ") || l.starts_with("  delete "))
        .count();
    assert!(
        listed > 0 && out.contains(&format!("\n{listed} changes:\n")) && !out.contains("more"),
        "{out}"
    );
    // A file of set lines ending in commit configures the site.
    let (code, out, err) = daemon.cli(&[], &format!("{site}\ncommit comment \"site\"\n"));
    assert_eq!(code, 0, "{out}{err}");
    // What a commit of the history changed, by its rollback number.
    let (code, out, err) = daemon.cli(&["-c", "show system commit 0"], "");
    assert_eq!(code, 0, "{err}");
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
