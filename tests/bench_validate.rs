//! Validation at libyang's own cost: `efb-config validate` and efbd's resident memory
//! against `yanglint` (libyang's tool, Debian's libyang2-tools) on the same generated
//! files, with the ratios from the same run. `cargo bench -p efb-tests --bench validate`
//! (release); EFB_BENCH_FLOWS="10000,100000" picks the sizes. Each size in two shapes: flows
//! on links (a leafref each) and flows to ports (no link named).
//!
//! yanglint validates the file against the module (`-t config`: types, references,
//! mandatory nodes); efb-config does that through the same libyang, then reads the typed
//! configuration and runs the rules of MODEL.md, and prints a report. Time is wall-clock
//! from spawn to exit; memory is the process's peak resident set (VmHWM, read every 2 ms
//! while it runs); efbd's are the time of `load override` and `commit` from the shell, its
//! peak resident set and its resident set once the commit is done (and efbd idle for a
//! second).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use efb_tests::figures::{FlowShape, peak_resident_kib, resident_kib, site_with_flows_shaped};
use efb_tests::{Daemon, binary, repo};

/// What one run of a command cost.
struct Cost {
    time: Duration,
    peak_kib: u64,
}

/// Runs `command` to its end, watching its peak memory; panics unless it succeeds.
fn measured(mut command: Command) -> Cost {
    let started = Instant::now();
    let mut child = command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the command starts");
    let pid = child.id();
    let mut peak_kib = 0;
    let status = loop {
        peak_kib = peak_kib.max(peak_resident_kib(pid));
        if let Some(status) = child.try_wait().expect("waiting for the command") {
            break status;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let time = started.elapsed();
    assert!(status.success(), "{command:?} failed");
    Cost { time, peak_kib }
}

fn yanglint(file: &Path) -> Command {
    let yang = repo().join("yang");
    let mut command = Command::new("yanglint");
    command
        .args(["-t", "config", "-p"])
        .arg(&yang)
        .arg(yang.join("ecofilter-balancer.yang"))
        .arg(file);
    command
}

fn efb_config(file: &Path) -> Command {
    let mut command = Command::new(binary("efb-config"));
    command.arg("validate").arg(file);
    command
}

/// What efbd paid to load and commit a file.
struct Committed {
    /// `load override` and `commit`, as the shell's client sees them.
    time: Duration,
    /// The process's peak resident set (from start to after the commit).
    peak_kib: u64,
    /// Its resident set once the commit is done.
    resident_kib: u64,
}

/// efbd's cost of loading and committing `file`.
fn efbd_commit(dir: &Path, file: &Path) -> Committed {
    let daemon = Daemon::start_logging(&dir.join("datastore"), &[], &dir.join("efbd.log"));
    let started = Instant::now();
    daemon.commit_file(file);
    let time = started.elapsed();
    // Freed parse trees go back on libyang's reaper thread, and efbd gives its free memory
    // back once idle for a second (efbd::process::memory): the resident set an operator
    // sees after that.
    std::thread::sleep(Duration::from_millis(1500));
    let committed = Committed {
        time,
        peak_kib: peak_resident_kib(daemon.pid()),
        resident_kib: resident_kib(daemon.pid()),
    };
    assert!(daemon.stop());
    committed
}

fn mib(kib: u64) -> String {
    format!("{:.0} MiB", kib as f64 / 1024.0)
}

fn ratio(ours: f64, theirs: f64) -> String {
    format!("{:.2}x", ours / theirs)
}

fn sizes(quick: bool) -> Vec<usize> {
    if let Ok(list) = std::env::var("EFB_BENCH_FLOWS") {
        return list
            .split(',')
            .filter_map(|n| n.trim().parse().ok())
            .collect();
    }
    if quick {
        vec![200]
    } else {
        vec![10_000, 100_000]
    }
}

fn main() {
    let quick =
        std::env::args().any(|a| a == "--test") || std::env::var_os("EFB_BENCH_QUICK").is_some();
    if Command::new("yanglint").arg("--version").output().is_err() {
        println!("yanglint is missing (Debian: libyang2-tools): nothing to compare with");
        return;
    }
    // The best of three runs of each, one after the other, so that both see the same
    // machine.
    let runs = if quick { 1 } else { 3 };
    // Built (or found up to date) before anything is timed: the first commit would
    // otherwise count the build of the shell's client.
    binary("efbd");
    binary("efb-cli");
    println!("validation of one file: efb-config validate and efbd against yanglint");
    println!(
        "{:>14}  {:>10} {:>9}  {:>10} {:>9}  {:>6} {:>6}  {:>11} {:>9} {:>6}  {:>9} {:>6}",
        "flows",
        "yanglint",
        "peak",
        "efb-config",
        "peak",
        "time",
        "memory",
        "efbd commit",
        "peak",
        "memory",
        "resident",
        "memory"
    );
    let shapes = [(FlowShape::OnLinks, "links"), (FlowShape::ToPorts, "ports")];
    for (flows, (shape, shape_name)) in sizes(quick)
        .into_iter()
        .flat_map(|n| shapes.into_iter().map(move |s| (n, s)))
    {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let file = dir.path().join(format!("site-{flows}.json"));
        std::fs::write(&file, site_with_flows_shaped(flows, shape)).expect("the file is written");
        let best = |make: &dyn Fn() -> Command| {
            (0..runs)
                .map(|_| measured(make()))
                .min_by_key(|c| c.time)
                .expect("at least one run")
        };
        let theirs = best(&|| yanglint(&file));
        let ours = best(&|| efb_config(&file));
        let efbd = efbd_commit(dir.path(), &file);
        let of_theirs = |kib: u64| ratio(kib as f64, theirs.peak_kib as f64);
        println!(
            "{:>14}  {:>10} {:>9}  {:>10} {:>9}  {:>6} {:>6}  {:>11} {:>9} {:>6}  {:>9} {:>6}",
            format!("{flows} {shape_name}"),
            millis(theirs.time),
            mib(theirs.peak_kib),
            millis(ours.time),
            mib(ours.peak_kib),
            ratio(ours.time.as_secs_f64(), theirs.time.as_secs_f64()),
            of_theirs(ours.peak_kib),
            millis(efbd.time),
            mib(efbd.peak_kib),
            of_theirs(efbd.peak_kib),
            mib(efbd.resident_kib),
            of_theirs(efbd.resident_kib),
        );
    }
}

fn millis(time: Duration) -> String {
    format!("{:.0} ms", time.as_secs_f64() * 1000.0)
}
