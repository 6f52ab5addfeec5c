//! Ports the Stratum way: the chip (efb-target) serves its ports as OpenConfig interfaces
//! over gNMI, efbd's driver reads port state and counters only there, and efbd serves the
//! box's ports as OpenConfig interfaces to collectors. Judged by a real client (pygnmi,
//! `tests/gnmi/openconfig.py`) and by what the shell says after a cable is pulled.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::time::{Duration, Instant};

use efb_p4::platform::Platform;
use efb_p4info::PortMap;
use efb_target::frames;
use efb_tests::chip_io::{Chip, configure, daemon_with_demo_users};
use efb_tests::{Daemon, Target, python_scenario, repo, venv_tool};

fn pygnmi(scenario: &str, gnmi: &str, extra: &[&str]) {
    let mut command = Command::new(venv_tool("python"));
    command
        .arg(repo().join("tests/gnmi/openconfig.py"))
        .arg(scenario)
        .args(["--gnmi", gnmi])
        .args(extra);
    python_scenario(command, scenario);
}

#[test]
fn pygnmi_reads_the_chips_ports_and_sets_their_admin_status() {
    let target = Target::start(&[]);
    pygnmi("chip", &target.address, &[]);
}

/// Waits (5 s at most) until the shell shows port `name` down, or not down.
fn port_becomes(daemon: &Daemon, name: &str, down: bool, why: &str) {
    let started = Instant::now();
    loop {
        let (_, out, _) = daemon.cli(&["-c", &format!("show ports {name}")], "");
        if out.contains("down") == down {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{why}: {name} still {}:\n{out}",
            if down { "not down" } else { "down" }
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits (5 s at most) until `show ecofilter-balancer link NAME` says `status` and `why`.
fn link_says(daemon: &Daemon, link: &str, status: &str, why: &str) {
    let started = Instant::now();
    loop {
        let (_, out, _) = daemon.cli(&["-c", &format!("show ecofilter-balancer link {link}")], "");
        let row: Vec<&str> = out
            .lines()
            .nth(1)
            .unwrap_or_default()
            .split("  ")
            .map(str::trim)
            .filter(|w| !w.is_empty())
            .collect();
        if row.get(3) == Some(&status) && row.get(4) == Some(&why) {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "link {link}: wanted {status} ({why}):\n{out}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// pygnmi subscribes ON_CHANGE to `link`'s state on efbd's gNMI; once it says it is ready,
/// the chip's cable of `port` is pulled, and put back when pygnmi has seen the link down.
fn pygnmi_follows_a_link(daemon: &Daemon, chip: &mut Chip, link: &str, port_name: &str) {
    use std::io::{BufRead, BufReader};
    let cert = daemon
        .gnmi_cert
        .clone()
        .expect("efbd printed its certificate");
    let mut python = Command::new(venv_tool("python"))
        .arg(repo().join("tests/gnmi/openconfig.py"))
        .args([
            "link",
            "--gnmi",
            daemon.gnmi.as_deref().unwrap(),
            "--link",
            link,
        ])
        .arg("--cert")
        .arg(&cert)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python runs");
    let mut said = String::new();
    let lines = BufReader::new(python.stdout.take().unwrap()).lines();
    for line in lines.map_while(Result::ok) {
        said.push_str(&line);
        said.push('\n');
        let up = match line.as_str() {
            "ready" => false,
            "down" => true,
            _ => continue,
        };
        chip.set_port(port_name, up);
    }
    let out = python.wait_with_output().unwrap();
    println!("{said}");
    assert!(
        out.status.success() && said.contains("\ndone"),
        "pygnmi following link {link}:\n{said}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The admin-status of a chip interface (`config/enabled`), as efbd's driver reads the
/// chip's gNMI.
fn chip_admin_status(target: &Target, name: &str) -> Option<bool> {
    efb_tests::chip_io::runtime().block_on(async {
        let map = PortMap::builtin().ok()?;
        let device_port = map.resolve(name).ok()?;
        let platform = Platform::start(&target.address, map);
        platform
            .interfaces()
            .await?
            .get(&device_port)
            .map(|i| i.enabled)
    })
}

#[test]
fn efbd_hears_port_state_over_gnmi_and_serves_the_ports_as_openconfig() {
    let dir = tempfile::tempdir().unwrap();
    let target = Target::start(&[]);
    let daemon = daemon_with_demo_users(dir.path(), &target, &[]);
    configure(&daemon, "");
    let mut chip = Chip::connect(&target);
    let web = frames::tcp4([10, 1, 2, 3], [8, 8, 8, 8], 40000, 443);
    chip.inject("p2", vec![web; 10]);

    // The link is up once the chip has told its ports' status (a change from unknown is no
    // event); the first cable pulled after that is one.
    link_says(&daemon, "l2", "up", "-");
    // A cable pulled on the chip: efbd hears it from the chip's gNMI (ON_CHANGE), and the
    // shell says so.
    chip.set_port("p3", false);
    port_becomes(&daemon, "p3", true, "cable pulled");
    // The uplink it belongs to is down, says which port, and the change is an event.
    link_says(&daemon, "l2", "down", "p3 (WAN) down");
    chip.set_port("p3", true);
    port_becomes(&daemon, "p3", false, "cable back");
    link_says(&daemon, "l2", "up", "-");
    // A collector hears it too: ON_CHANGE on the link's state, with pygnmi.
    pygnmi_follows_a_link(&daemon, &mut chip, "l2", "p3");
    let (_, log, _) = daemon.cli(&["-c", "show log link"], "");
    let events: Vec<&str> = log.lines().filter(|l| l.contains("link-status")).collect();
    assert!(
        events.len() == 4
            && events[0].contains("link=l2")
            && events[0].contains("to=down")
            && events[0].contains("p3 (WAN) down")
            && events[1].contains("to=up"),
        "one event down, one up: {log}"
    );

    // `enabled false` is the port's admin-status on the chip: down at the commit, and up
    // again when enabled.
    let commit = |line: &str| {
        let (code, out, err) = daemon.cli(&[], &format!("edit\n{line}\ncommit\n"));
        assert_eq!(code, 0, "{out}{err}");
    };
    commit("set ports port p3 enabled false");
    port_becomes(&daemon, "p3", true, "a disabled port is down on the chip");
    assert_eq!(
        chip_admin_status(&target, "p3-0"),
        Some(false),
        "the chip's own gNMI says admin-status DOWN"
    );
    commit("delete ports port p3 enabled");
    port_becomes(&daemon, "p3", false, "enabled again");
    assert_eq!(chip_admin_status(&target, "p3-0"), Some(true));

    let cert = daemon
        .gnmi_cert
        .clone()
        .expect("efbd printed its certificate");
    pygnmi(
        "box",
        daemon.gnmi.as_deref().unwrap(),
        &[
            "--cert",
            cert.to_str().unwrap(),
            "--port",
            "p2",
            "--free",
            "p20",
        ],
    );
    assert!(daemon.stop());
}

/// Runs Google's oc-config-validate with a test file of `tests/oc-config-validate/` against
/// `gnmi`, pulling and putting back the chip's cable of `flapped` every second while it runs
/// (its ON_CHANGE case watches that port), and fails naming every case it did not pass.
fn oc_config_validate(file: &str, gnmi: &str, target: &Target, flapped: &str, extra: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results.json");
    let mut tool = Command::new(venv_tool("python"))
        .args(["-m", "oc_config_validate", "--target", gnmi, "--tests_file"])
        .arg(repo().join("tests/oc-config-validate").join(file))
        .arg("--results_file")
        .arg(&results)
        .args(extra)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("oc-config-validate starts");
    let mut chip = Chip::connect(target);
    let mut up = true;
    while tool.try_wait().unwrap().is_none() {
        std::thread::sleep(Duration::from_secs(1));
        up = !up;
        chip.set_port(flapped, up);
    }
    let out = tool.wait_with_output().unwrap();
    let text = std::fs::read_to_string(&results).unwrap_or_default();
    let report: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!(
            "{file}: no results ({e}):\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let mut failed = Vec::new();
    for test in report["results"].as_array().into_iter().flatten() {
        let name = test["test_name"].as_str().unwrap_or_default();
        for case in test["results"].as_array().into_iter().flatten() {
            println!("{file}: {} {name}", case["result"].as_str().unwrap_or("?"));
            if case["result"] != "PASS" {
                failed.push(format!("{name}: {}", case["log"].as_str().unwrap_or("")));
            }
        }
    }
    assert!(
        report["tests_total"].as_u64().unwrap_or(0) >= 10 && failed.is_empty(),
        "{file}: oc-config-validate failed:\n{}",
        failed.join("\n")
    );
}

#[test]
fn oc_config_validate_passes_every_case_on_the_chips_gnmi() {
    let target = Target::start(&[]);
    oc_config_validate("chip.yaml", &target.address, &target, "p1-1", &["--no_tls"]);
}

#[test]
fn oc_config_validate_passes_every_case_on_efbds_gnmi_with_tls_and_a_user() {
    let dir = tempfile::tempdir().unwrap();
    let target = Target::start(&[]);
    let daemon = daemon_with_demo_users(dir.path(), &target, &[]);
    configure(&daemon, "");
    let cert = daemon
        .gnmi_cert
        .clone()
        .expect("efbd printed its certificate");
    oc_config_validate(
        "efbd.yaml",
        daemon.gnmi.as_deref().unwrap(),
        &target,
        "p3",
        &["--root_ca_cert", cert.to_str().unwrap()],
    );
    assert!(daemon.stop());
}
