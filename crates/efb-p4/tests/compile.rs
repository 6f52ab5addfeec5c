//! The compiler on real configurations: golden files of the entries, determinism, and the
//! size of the writes a change needs.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use efb_balancing::LiveState;
use efb_model::Config;
use efb_model::validation::Validator;
use efb_p4::entry::describe;
use efb_p4::{Compiled, Compiler, Plan, Tables};
use efb_p4info::PortMap;
use efb_yang::json::{self, Check};
use efb_yang::{Schema, setlines};

struct Fixture {
    validator: Validator,
    compiler: Compiler,
    tables: Tables,
}

fn fixture() -> Fixture {
    let index = efb_p4info::index().unwrap();
    Fixture {
        validator: Validator::new(Arc::new(Schema::load().unwrap())).unwrap(),
        tables: Tables::new(&index).unwrap(),
        compiler: Compiler {
            index,
            ports: PortMap::builtin().unwrap(),
        },
    }
}

fn example(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/../../examples/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

impl Fixture {
    fn config(&self, json_text: &str, lines: &str) -> Config {
        let mut tree =
            json::from_json(self.validator.schema(), json_text, Check::Complete).unwrap();
        setlines::apply_lines(self.validator.schema(), &mut tree, lines).unwrap();
        let validated = self.validator.validate(&tree, false);
        assert!(
            validated.report.errors.is_empty(),
            "{:?}",
            validated.report.errors
        );
        validated.config.unwrap()
    }

    fn compile(&self, config: &Config, previous: &Compiled) -> Compiled {
        self.compiler
            .compile(config, &LiveState::all_up(), previous)
            .unwrap()
    }
}

/// Compares with `tests/golden/NAME`; `EFB_UPDATE_GOLDEN=1` writes it instead (review the
/// diff before committing it).
fn golden(name: &str, lines: &[String]) {
    let path = format!("{}/tests/golden/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = lines.join("\n") + "\n";
    if std::env::var_os("EFB_UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &text).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("{path} missing: run with EFB_UPDATE_GOLDEN=1"));
    if expected != text {
        let first = expected
            .lines()
            .zip(text.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        panic!(
            "{name} differs from the golden file at line {}:\n  golden:   {:?}\n  compiled: {:?}\n(EFB_UPDATE_GOLDEN=1 regenerates it)",
            first + 1,
            expected.lines().nth(first),
            text.lines().nth(first)
        );
    }
}

fn lines_of(f: &Fixture, compiled: &Compiled) -> Vec<String> {
    compiled
        .by_key()
        .values()
        .map(|d| format!("{}  <- {}", describe(&f.compiler.index, &d.entry), d.source))
        .collect()
}

#[test]
fn the_one_filter_site_compiles_to_its_golden_entries() {
    let f = fixture();
    let config = f.config(&example("one-filter-site.json"), "");
    let compiled = f.compile(&config, &Compiled::default());
    golden("one-filter-site.txt", &lines_of(&f, &compiled));
    // Deterministic: compiling again gives the same entries in the same order.
    let again = f.compile(&config, &Compiled::default());
    assert_eq!(lines_of(&f, &compiled), lines_of(&f, &again));
}

#[test]
fn entries_per_table_follow_the_configuration() {
    let f = fixture();
    let config = f.config(
        &example("one-filter-site.json"),
        "set ecofilter-balancer flow scoped links l1\nset ecofilter-balancer flow scoped links l2",
    );
    let compiled = f.compile(&config, &Compiled::default());
    let plan = Plan::reconcile(&f.tables, &Default::default(), &compiled);
    let summary = plan.summary(&f.tables);
    // 2 links x 2 ports + 8 pairs x 2 ports; 8 x 17 = 136 slots -> 4096 buckets; 6 flows + one
    // flow on two links; one unit, 8 pairs, 2 links; the balancing default is modified.
    assert_eq!(
        summary,
        vec![
            "balancing: 1 modify",
            "buckets: 4096 inserts",
            "flows: 8 inserts",
            "ingress_port: 20 inserts",
            "link_ports: 2 inserts",
            "pairs: 8 inserts",
            "units: 1 insert",
        ]
    );
}

#[test]
fn one_changed_flow_of_many_is_one_write() {
    let f = fixture();
    let mut lines = String::new();
    for i in 0..10_000 {
        lines.push_str(&format!(
            "set ecofilter-balancer flow bulk{i} priority {} match dst-port {}\n",
            1000 + i,
            i % 60000 + 1
        ));
    }
    let base = f.config(&example("one-filter-site.json"), &lines);
    let before = f.compile(&base, &Compiled::default());
    let changed = f.config(
        &example("one-filter-site.json"),
        &format!("{lines}set ecofilter-balancer flow bulk77 action drop"),
    );
    let after = f.compile(&changed, &before);
    let plan = Plan::between(&f.tables, &before, &after);
    assert_eq!(plan.len(), 1);
    assert_eq!(plan.summary(&f.tables), vec!["flows: 1 modify"]);
    // A priority is part of the key: a priority change is a delete and an insert.
    let moved = f.config(
        &example("one-filter-site.json"),
        &format!("{lines}set ecofilter-balancer flow bulk77 priority 7"),
    );
    let plan = Plan::between(&f.tables, &before, &f.compile(&moved, &before));
    assert_eq!(
        plan.summary(&f.tables),
        vec!["flows: 1 delete", "flows: 1 insert"]
    );
}

#[test]
fn a_new_link_keeps_the_numbers_of_the_others() {
    let f = fixture();
    let base = f.config(
        &example("one-filter-site.json"),
        "set ecofilter-balancer flow on-l2 priority 5 links l2",
    );
    let before = f.compile(&base, &Compiled::default());
    let grown = f.config(
        &example("one-filter-site.json"),
        "set ecofilter-balancer flow on-l2 priority 5 links l2\n\
         set ports port p5 number 5 speed 100g\nset ports port p6 number 6 speed 100g\n\
         set ecofilter-balancer link a0 lan-port p6 wan-port p5",
    );
    let after = f.compile(&grown, &before);
    assert_eq!(after.ids.link("l2"), before.ids.link("l2"));
    let plan = Plan::between(&f.tables, &before, &after);
    // Only the new link's entries: two ingress ports and its ports' entry.
    assert_eq!(
        plan.summary(&f.tables),
        vec!["ingress_port: 2 inserts", "link_ports: 1 insert"]
    );
    // The new link's ports start receiving only after its link_ports entry exists.
    let order: Vec<&str> = plan
        .ops()
        .map(|op| f.tables.name(op.entry().entry.table_id))
        .collect();
    assert_eq!(order, vec!["link_ports", "ingress_port", "ingress_port"]);
}

#[test]
fn removals_go_last_and_in_reverse() {
    let f = fixture();
    let base = f.config(&example("one-filter-site.json"), "");
    let before = f.compile(&base, &Compiled::default());
    let smaller = f.config(
        &example("one-filter-site.json"),
        "delete ecofilter-balancer flow to-filters\ndelete ecofilter-balancer ecofilter-unit ef1",
    );
    let plan = Plan::between(&f.tables, &before, &f.compile(&smaller, &before));
    let order: Vec<&str> = plan
        .phases
        .iter()
        .map(|p| f.tables.name(p[0].entry().entry.table_id))
        .collect();
    assert_eq!(
        order,
        vec!["flows", "ingress_port", "buckets", "units"],
        "{:?}",
        plan.summary(&f.tables)
    );
    assert!(plan.ops().all(|op| op.kind() == "delete"));
}

#[test]
fn a_dead_pair_is_one_write_and_rebalance_moves_only_its_buckets() {
    let f = fixture();
    let config = f.config(&example("one-filter-site.json"), "");
    let before = f.compile(&config, &Compiled::default());
    let mut live = LiveState::all_up();
    live.down_pairs.insert(("ef1".into(), "f1-te3-te4".into()));
    let after = f.compiler.compile(&config, &live, &before).unwrap();
    assert_eq!(
        Plan::between(&f.tables, &before, &after).summary(&f.tables),
        vec!["pairs: 1 modify"]
    );
    let rebalancing = f.config(
        &example("one-filter-site.json"),
        "set ecofilter-balancer ecofilter-unit ef1 rebalance true",
    );
    let before = f.compile(&rebalancing, &Compiled::default());
    let after = f.compiler.compile(&rebalancing, &live, &before).unwrap();
    let plan = Plan::between(&f.tables, &before, &after);
    // The dead pair's 17 slots own 17 x 4096 / 136 buckets (30 or 31 each).
    let moved = plan
        .ops()
        .filter(|op| f.tables.name(op.entry().entry.table_id) == "buckets")
        .count();
    assert!((17 * 30..=17 * 31).contains(&moved), "{moved}");
    assert!(plan.ops().all(|op| op.kind() == "modify"));
}

#[test]
fn compiling_change_after_change_gives_what_compiling_afresh_gives() {
    let f = fixture();
    let site = example("one-filter-site.json");
    let mut lines: Vec<String> = (0..200)
        .map(|i| {
            format!(
                "set ecofilter-balancer flow f{i} priority {} links l{} match dst-port {}",
                100 + i,
                1 + i % 2,
                i + 1
            )
        })
        .collect();
    let mut previous = f.compile(&f.config(&site, &lines.join("\n")), &Compiled::default());
    // Each step: flows changed, removed and added, and every few steps a link added or
    // removed (which renumbers nothing but recompiles every flow).
    for step in 0..12usize {
        lines.push(format!(
            "set ecofilter-balancer flow f{} action drop",
            step * 7
        ));
        lines[step * 7 + 1].clear();
        lines.push(format!(
            "set ecofilter-balancer flow new{step} priority {} match ip-proto 17",
            5000 + step
        ));
        if step % 4 == 1 {
            lines.push(
                "set ports port p5 number 5 speed 100g\nset ports port p6 number 6 speed 100g\n\
                 set ecofilter-balancer link a0 lan-port p6 wan-port p5"
                    .into(),
            );
        } else if step % 4 == 3 {
            lines.retain(|l| !l.contains("link a0"));
        }
        let config = f.config(&site, &lines.join("\n"));
        let incremental = f.compile(&config, &previous);
        let afresh = f.compile(&config, &Compiled::with_ids(previous.ids.clone()));
        assert_eq!(
            lines_of(&f, &incremental),
            lines_of(&f, &afresh),
            "step {step}"
        );
        let plan = Plan::between(&f.tables, &previous, &incremental);
        assert!(!plan.is_empty(), "step {step} changed something");
        previous = incremental;
    }
}
