//! The shell's speed through a real efbd (release build, real gRPC on loopback): Tab
//! completion on 10 000 flows, one `set` + `commit` round trip, and `show configuration` of
//! 100 000 flows. Prints figures: `cargo bench -p efb-tests --bench shell`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use efb_cli::client::Client;
use efb_cli::complete::{Completer, KeySource, Mode};
use efb_cli::grammar::Grammar;
use efb_mgmt_proto::v1::{CommitRequest, Datastore, Format, LoadMode};
use efb_tests::Daemon;
use efb_tests::figures::{site_with_flows, summary};
use efb_yang::Schema;

struct Keys<'a>(std::cell::RefCell<&'a mut Client>);

impl KeySource for Keys<'_> {
    fn keys(&self, list_path: &str, prefix: &str) -> Vec<String> {
        self.0
            .borrow_mut()
            .list_keys(
                Datastore::Candidate,
                list_path,
                prefix,
                efb_cli::complete::KEY_LIMIT,
            )
            .map(|r| r.keys)
            .unwrap_or_default()
    }
}

fn loaded(flows: usize) -> (tempfile::TempDir, Daemon, Client) {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(&dir.path().join("datastore"), &[]);
    let mut client = Client::connect(&daemon.address, "bench").unwrap();
    client
        .load(LoadMode::Override, Format::Json, site_with_flows(flows))
        .unwrap();
    client
        .commit(CommitRequest {
            comment: "bench".into(),
            ..CommitRequest::default()
        })
        .unwrap();
    (dir, daemon, client)
}

fn main() {
    let quick = std::env::var_os("EFB_BENCH_QUICK").is_some();
    let (small, large, rounds) = if quick {
        (100, 1000, 5)
    } else {
        (10_000, 100_000, 200)
    };
    let schema = Schema::load().unwrap();
    let grammar = Grammar::load().unwrap();

    let (_dir, daemon, mut client) = loaded(small);
    let lines = [
        "set ecofilter-balancer flow sub12",
        "set ecofilter-balancer flow sub1 match ",
        "set ecofilter-balancer flow sub1 action to-ecofilter ecofilter-unit ",
        "show ecofilter-balancer flow ",
    ];
    let mut times = Vec::new();
    for round in 0..rounds {
        let line = lines[round % lines.len()];
        let keys = Keys(std::cell::RefCell::new(&mut client));
        let completer = Completer {
            schema: &schema,
            grammar: &grammar,
            keys: &keys,
        };
        let mode = if line.starts_with("show") {
            Mode::Operational
        } else {
            Mode::Configuration
        };
        let start = Instant::now();
        let found = completer.complete(mode, line);
        times.push(start.elapsed());
        assert!(!found.candidates.is_empty(), "{line}");
    }
    summary(&format!("Tab completion, {small} flows"), times);

    let mut times = Vec::new();
    for round in 0..rounds {
        let start = Instant::now();
        client
            .edit_lines(&format!(
                "set ecofilter-balancer flow sub{} priority {}",
                round % small,
                500_000 + round
            ))
            .unwrap();
        let reply = client.commit(CommitRequest::default()).unwrap();
        times.push(start.elapsed());
        assert_eq!(reply.changes, 1);
    }
    summary(&format!("set + commit round trip, {small} flows"), times);
    drop(client);
    drop(daemon);

    let (_dir, _daemon, mut client) = loaded(large);
    let mut times = Vec::new();
    let mut printed = 0;
    for _ in 0..if quick { 2 } else { 5 } {
        let start = Instant::now();
        let text = client
            .get(Datastore::Running, "", Format::Json, false)
            .unwrap();
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        printed = efb_cli::view::curly(&schema, &doc, &[]).len();
        times.push(start.elapsed());
    }
    summary(
        &format!("show configuration, {large} flows ({printed} lines)"),
        times,
    );
}
