//! Crash safety: a child process commits in a loop and is killed with SIGKILL at a random
//! moment, again and again; after each kill the database must open and hold exactly the
//! configuration before or after the commit that was under way.

#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use efb_datastore::{CommitRequest, Datastore, LoadMode, OpenOptions};
use efb_yang::json::{self, PrintOptions};
use efb_yang::{DataTree, Schema, setlines};
use rand::{Rng, SeedableRng};

const CHILD_ENV: &str = "EFB_CRASH_CHILD_DIR";
const START_ENV: &str = "EFB_CRASH_CHILD_START";
const BATCH_ENV: &str = "EFB_CRASH_CHILD_BATCH";
/// Every other child writes its commits (100 to 300 records) in batches of this many
/// records: killed between its history entry and its last batch, the database must still
/// open with one configuration or the other.
const SMALL_BATCH: usize = 32;
const KILLS: usize = 200;
/// Starts the child's reports: the test harness may print on the same line before them.
const MARK: &str = "efb-crash: ";

/// Configuration number `i`: a few ports and links, and a number of flows that changes
/// from one commit to the next (creates, updates and deletes), plus a top-level leaf.
fn config_lines(i: u64) -> String {
    let mut lines = String::from(
        "set ports port p1 number 1 speed 100g\nset ports port p2 number 2 speed 100g\n\
         set ecofilter-balancer link l1 lan-port p2 wan-port p1\n",
    );
    let method = if i.is_multiple_of(2) {
        "layer-3"
    } else {
        "layer-4"
    };
    lines.push_str(&format!(
        "set ecofilter-balancer balancing-method {method}\n"
    ));
    let flows = 100 + (i % 3) * 100;
    for k in 0..flows {
        lines.push_str(&format!(
            "set ecofilter-balancer flow c{k} priority {} match ip-proto 6 dst-port {}\n",
            i * 1000 + k,
            k + 1
        ));
    }
    lines
}

fn expected(schema: &Schema, i: u64) -> String {
    let mut tree = DataTree::new();
    if i > 0 {
        setlines::apply_lines(schema, &mut tree, &config_lines(i)).unwrap();
    }
    json::to_json(schema, &tree, PrintOptions::default())
}

fn open(dir: &str, batch: usize) -> Datastore {
    let mut options = OpenOptions::new(dir);
    options.boot_id = Some("crash-test-boot".into());
    options.commit_batch_records = batch;
    Datastore::open(Arc::new(Schema::load().unwrap()), options).unwrap()
}

/// The child: commit configurations start, start+1, ... until killed, saying on stdout
/// which commit it begins and which it finished.
#[test]
#[ignore = "run by kill_at_random_points_of_commits as its child process"]
fn crash_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let start: u64 = std::env::var(START_ENV).unwrap().parse().unwrap();
    let batch: usize = std::env::var(BATCH_ENV).unwrap().parse().unwrap();
    let mut ds = open(&dir, batch);
    let s = ds.open_session("crash");
    say(&format!("{MARK}open"));
    for i in start.. {
        ds.load_json(s, LoadMode::Override, "{}").unwrap();
        ds.edit_lines(s, &config_lines(i)).unwrap();
        say(&format!("{MARK}begin {i}"));
        ds.commit(s, CommitRequest::default()).unwrap();
        say(&format!("{MARK}done {i}"));
    }
}

/// One line to the parent, flushed at once: stdout to a pipe may be block-buffered, and a
/// buffered line dies with the process.
fn say(line: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

#[test]
fn kill_at_random_points_of_commits() {
    let dir = tempfile::tempdir().unwrap();
    let dir_text = dir.path().to_str().unwrap().to_string();
    let schema = Schema::load().unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    // The configuration number running holds after the previous kill.
    let mut state: u64 = 0;
    let mut torn_commits = 0;
    let mut during_commit = 0;
    for kill in 0..KILLS {
        let batch = if kill % 2 == 0 {
            SMALL_BATCH
        } else {
            efb_datastore::COMMIT_BATCH_RECORDS
        };
        let mut child = Command::new(&exe)
            .args([
                "--ignored",
                "--exact",
                "crash_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, &dir_text)
            .env(START_ENV, (state + 1).to_string())
            .env(BATCH_ENV, batch.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // The kill lands at a random moment of the commits, not of the start-up: a loaded
        // machine may take longer to open the database than the whole window.
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut begun = None;
        let mut done = None;
        let mut report = |line: std::io::Result<String>| {
            let line = line.unwrap();
            let Some((_, report)) = line.split_once(MARK) else {
                return false;
            };
            if let Some(i) = report.strip_prefix("begin ") {
                begun = Some(i.parse::<u64>().unwrap());
            } else if let Some(i) = report.strip_prefix("done ") {
                done = Some(i.parse::<u64>().unwrap());
            }
            report == "open"
        };
        for line in lines.by_ref() {
            if report(line) {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(rng.random_range(20..160)));
        child.kill().unwrap();
        child.wait().unwrap();
        for line in lines {
            report(line);
        }
        let before = done.unwrap_or(state);
        let ds = open(&dir_text, batch);
        let running = json::to_json(&schema, &ds.running().tree, PrintOptions::default());
        let under_way = begun.filter(|b| Some(*b) != done);
        during_commit += usize::from(under_way.is_some());
        state = if running == expected(&schema, before) {
            before
        } else if let Some(b) = under_way.filter(|b| running == expected(&schema, *b)) {
            // Killed after the transaction but before it said so: the new configuration.
            torn_commits += 1;
            b
        } else {
            panic!(
                "kill {kill}: running is neither configuration {before} nor {under_way:?}\n{running:.300}"
            );
        };
        assert_eq!(
            ds.running().commit_id,
            ds.history().first().map_or(0, |c| c.id),
            "kill {kill}: history agrees"
        );
    }
    assert!(
        state > 10,
        "the child made progress between kills ({state} commits)"
    );
    assert!(
        during_commit >= KILLS / 10,
        "only {during_commit} kills landed during a commit"
    );
    eprintln!(
        "{KILLS} kills, {during_commit} during a commit ({torn_commits} after its transaction), {state} commits"
    );
}
