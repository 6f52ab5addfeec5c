//! The compiler on real configurations: golden files of the entries, determinism, and the
//! size of the writes a change needs.

#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use efb_balancing::LiveState;
use efb_chip::{OverCapacity, TableWrites, UpdateKind};
use efb_model::Config;
use efb_model::validation::Validator;
use efb_p4::compile::{CompileError, range_prefixes};
use efb_p4::entry::describe;
use efb_p4::frame_classes::ClassesError;
use efb_p4::regions::Region;
use efb_p4::{Compiled, Compiler, Plan, Tables};
use efb_p4info::names::flows::IPV4;
use efb_p4info::{P4InfoIndex, PortMap};
use efb_yang::json::{self, Check};
use efb_yang::{Schema, setlines};
use p4runtime_proto::p4::v1 as p4;

struct Fixture {
    validator: Validator,
    compiler: Compiler,
    tables: Tables,
}

/// A plan's writes per table and kind, in words: `flows: 2 inserts`.
fn summary(plan: &Plan, tables: &Tables) -> Vec<String> {
    let noun = |update: UpdateKind| match update {
        UpdateKind::Insert => "insert",
        UpdateKind::Modify => "modification",
        UpdateKind::Delete => "deletion",
    };
    let words = |t: &TableWrites| {
        let plural = if t.count == 1 { "" } else { "s" };
        format!("{}: {} {}{plural}", t.table, t.count, noun(t.update))
    };
    plan.summary(tables).iter().map(words).collect()
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
        Config::clone(&validated.config.unwrap())
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
    let summary = summary(&plan, &f.tables);
    // 2 links x 2 ports + 8 pairs x 2 ports + the CPU port; 8 x 17 = 136 slots -> 4096
    // buckets; one unit, 8 pairs of two sides, 2 links; the balancing and platform
    // defaults are modified. Flows, one entry per table they can match: to-filters,
    // service-vlan and the scoped flow in each; multicast-v4 and multicast-v6 in theirs;
    // the two BGP flows in each IP table. The classes: one bit each for the links (2
    // cubes), the VLAN (depth 1..=3 is 2 cubes) and the L4 header (1 cube), an entry per
    // combination of cubes: 2 + 2 + 1 + 4 + 2 + 2 + 4.
    assert_eq!(
        summary,
        vec![
            "balancing: 1 modification",
            "buckets: 4096 inserts",
            "flows_ipv4.flows: 6 inserts",
            "flows_ipv6.flows: 6 inserts",
            "flows_other.flows: 3 inserts",
            "frame_classes: 17 inserts",
            "ingress_port: 21 inserts",
            "link_ports: 2 inserts",
            "pairs: 16 inserts",
            "platform: 1 modification",
            "units: 1 insert",
        ]
    );
}

#[test]
fn one_changed_flow_of_many_is_one_write() {
    let f = fixture();
    // As many IPv4 flows (one entry each) as the chip holds with the site's own.
    let mut lines = String::new();
    for i in 0..ipv4_capacity() - 16 {
        lines.push_str(&format!(
            "set ecofilter-balancer flow bulk{i} priority {} match dst-ipv4 10.{}.{}.0/24 dst-port {}\n",
            1000 + i,
            i / 256,
            i % 256,
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
    assert_eq!(
        summary(&plan, &f.tables),
        vec!["flows_ipv4.flows: 1 modification"]
    );
    // A priority is part of the key: a priority change is a delete and an insert.
    let moved = f.config(
        &example("one-filter-site.json"),
        &format!("{lines}set ecofilter-balancer flow bulk77 priority 7"),
    );
    let plan = Plan::between(&f.tables, &before, &f.compile(&moved, &before));
    assert_eq!(
        summary(&plan, &f.tables),
        vec!["flows_ipv4.flows: 1 deletion", "flows_ipv4.flows: 1 insert"]
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
        summary(&plan, &f.tables),
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
    let order: Vec<BTreeSet<&str>> = plan
        .phases
        .iter()
        .map(|p| {
            p.iter()
                .map(|op| f.tables.name(op.entry().entry.table_id))
                .collect()
        })
        .collect();
    let phase = |tables: &[&'static str]| tables.iter().copied().collect::<BTreeSet<_>>();
    assert_eq!(
        order,
        vec![
            phase(&["flows_ipv4.flows", "flows_ipv6.flows", "flows_other.flows"]),
            phase(&["ingress_port"]),
            phase(&["units"]),
            phase(&["buckets"]),
            phase(&["pairs"]),
        ],
        "{:?}",
        summary(&plan, &f.tables)
    );
    assert!(plan.ops().all(|op| op.kind() == UpdateKind::Delete));
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
        summary(&Plan::between(&f.tables, &before, &after), &f.tables),
        vec!["pairs: 2 modifications"]
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
    assert!(plan.ops().all(|op| op.kind() == UpdateKind::Modify));

    // In two steps: the bypass (the pair's one entry) without a bucket, then the buckets,
    // ending where the one step ends.
    let bypassed = f
        .compiler
        .compile_bypass_first(&rebalancing, &live, &before)
        .unwrap();
    assert_eq!(
        summary(&Plan::between(&f.tables, &before, &bypassed), &f.tables),
        vec!["pairs: 2 modifications"]
    );
    let rebalanced = f.compiler.compile(&rebalancing, &live, &bypassed).unwrap();
    let second = Plan::between(&f.tables, &bypassed, &rebalanced);
    assert_eq!(second.len(), moved);
    assert!(Plan::between(&f.tables, &after, &rebalanced).is_empty());
    // Buckets moved by more than liveness (the unit's cores) are not held back.
    let grown = f.config(
        &example("one-filter-site.json"),
        "set ecofilter-balancer ecofilter-unit ef1 rebalance true\nset ecofilter-balancer ecofilter-unit ef1 cores 18",
    );
    let regrown = f
        .compiler
        .compile_bypass_first(&grown, &live, &before)
        .unwrap();
    assert!(
        Plan::between(
            &f.tables,
            &regrown,
            &f.compiler.compile(&grown, &live, &regrown).unwrap()
        )
        .is_empty()
    );
}

#[test]
fn a_grown_unit_writes_its_new_region_before_reading_it_and_frees_the_old_after() {
    let f = fixture();
    let site = example("one-filter-site.json");
    let before = f.compile(&f.config(&site, ""), &Compiled::default());
    // 8 pairs x 17 cores: 4 096 buckets; x 40 cores: 8 192, a region of its own.
    let grown = f.config(&site, "set ecofilter-balancer ecofilter-unit ef1 cores 40");
    let after = f.compile(&grown, &before);
    assert_eq!(
        before.ids.buckets["ef1"],
        Region {
            base: 0,
            size: 4096
        }
    );
    assert_eq!(
        after.ids.buckets["ef1"],
        Region {
            base: 8192,
            size: 8192
        }
    );
    let plan = Plan::between(&f.tables, &before, &after);
    assert_eq!(
        summary(&plan, &f.tables),
        vec![
            "buckets: 4096 deletions",
            "buckets: 8192 inserts",
            "units: 1 modification"
        ]
    );
    let phase = |table: &str, kind: UpdateKind| {
        plan.phases
            .iter()
            .position(|ops| {
                ops.iter().any(|op| {
                    f.tables.name(op.entry().entry.table_id) == table && op.kind() == kind
                })
            })
            .unwrap()
    };
    assert!(phase("buckets", UpdateKind::Insert) < phase("units", UpdateKind::Modify));
    assert!(phase("units", UpdateKind::Modify) < phase("buckets", UpdateKind::Delete));
    // Every slot written is in the new region; every slot freed in the old.
    let slot = |op: &efb_p4::Op| {
        let m = &op.entry().entry.r#match[0];
        match &m.field_match_type {
            Some(p4::field_match::FieldMatchType::Exact(e)) => {
                e.value.iter().fold(0u32, |n, b| n << 8 | u32::from(*b))
            }
            other => panic!("{other:?}"),
        }
    };
    for op in plan
        .ops()
        .filter(|op| f.tables.name(op.entry().entry.table_id) == "buckets")
    {
        let range = if op.kind() == UpdateKind::Insert {
            8192..16384
        } else {
            0..4096
        };
        assert!(
            range.contains(&slot(op)),
            "{} of slot {}",
            op.kind(),
            slot(op)
        );
    }
    // A unit added beside it takes free slots and moves nothing.
    let beside = f.config(
        &site,
        "set ecofilter-balancer ecofilter-unit ef1 cores 40\n\
         set ecofilter-balancer ecofilter-unit ef2 cores 1",
    );
    let with_two = f.compile(&beside, &after);
    assert_eq!(with_two.ids.buckets["ef1"], after.ids.buckets["ef1"]);
    assert_eq!(with_two.ids.buckets["ef2"], Region { base: 0, size: 256 });
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

/// The fewest prefixes of a `width`-bit field covering exactly `lo..=hi`, by the binary
/// trie (an aligned block inside the range is one prefix, a block across its edge splits):
/// the reference `range_prefixes` is held to.
fn fewest_prefixes(lo: u128, hi: u128, base: u128, bits: u32) -> usize {
    let last = base + (1u128 << bits) - 1;
    if hi < base || lo > last {
        0
    } else if lo <= base && last <= hi {
        1
    } else {
        let half = 1u128 << (bits - 1);
        fewest_prefixes(lo, hi, base, bits - 1) + fewest_prefixes(lo, hi, base + half, bits - 1)
    }
}

/// The values of `0..2^width` that `prefixes` match, each with how many of them match it.
fn matched(prefixes: &[(u128, u128)], width: u32) -> Vec<usize> {
    (0..1u128 << width)
        .map(|v| prefixes.iter().filter(|(p, m)| v & m == *p).count())
        .collect()
}

#[test]
fn range_prefixes_cover_a_range_exactly_with_the_fewest_entries() {
    assert_eq!(range_prefixes(1, 65535, 16).len(), 16);
    assert_eq!(
        range_prefixes(0, 65535, 16),
        vec![(0, 0)],
        "the whole field: one don't-care"
    );
    assert_eq!(range_prefixes(1024, 2047, 16), vec![(1024, 0xfc00)]);
    assert_eq!(range_prefixes(179, 179, 16), vec![(179, 0xffff)]);
    assert_eq!(range_prefixes(1024, 65535, 16).len(), 6);
    // VLAN depth (2 bits): 1..=3 is 1 and 2..=3; 2..=3 alone one prefix.
    assert_eq!(range_prefixes(1, 3, 2), vec![(1, 0b11), (2, 0b10)]);
    assert_eq!(range_prefixes(2, 3, 2), vec![(2, 0b10)]);
    // Every range of a 6-bit field: each value inside matched by exactly one prefix, none
    // outside, and no more prefixes than the trie needs.
    let width = 6;
    for lo in 0..64u128 {
        for hi in lo..64u128 {
            let prefixes = range_prefixes(lo, hi, width);
            let hits = matched(&prefixes, width);
            for (v, n) in hits.iter().enumerate() {
                let inside = (lo..=hi).contains(&(v as u128));
                assert_eq!(*n, usize::from(inside), "{lo}..={hi}: value {v}");
            }
            assert_eq!(
                prefixes.len(),
                fewest_prefixes(lo, hi, 0, width),
                "{lo}..={hi}: {prefixes:?}"
            );
            assert!(prefixes.iter().all(|(p, m)| p & !m == 0 && *m < 64));
        }
    }
    // 16-bit ports, at the worst case and a few others: minimal, never above 2w - 2.
    for (lo, hi) in [(1, 65534), (1023, 49153), (80, 8080), (32767, 32768)] {
        let prefixes = range_prefixes(lo, hi, 16);
        assert_eq!(
            prefixes.len(),
            fewest_prefixes(lo, hi, 0, 16),
            "{lo}..={hi}"
        );
        assert!(prefixes.len() <= 30);
        for v in [lo - 1, lo, hi, hi + 1] {
            let n = prefixes.iter().filter(|(p, m)| v & m == *p).count();
            assert_eq!(n, usize::from((lo..=hi).contains(&v)), "{lo}..={hi}: {v}");
        }
    }
    assert_eq!(range_prefixes(1, 65534, 16).len(), 30);
}

impl Fixture {
    /// The entries of a flow, by flow table alias.
    fn flow_entries(&self, compiled: &Compiled, flow: &str) -> BTreeMap<String, Vec<String>> {
        let source = efb_model::paths::flow(flow);
        let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for d in compiled.by_key().values().filter(|d| d.source == source) {
            out.entry(self.tables.name(d.entry.table_id).to_string())
                .or_default()
                .push(describe(&self.compiler.index, &d.entry));
        }
        out
    }
}

fn counts(entries: &BTreeMap<String, Vec<String>>) -> Vec<(&str, usize)> {
    entries.iter().map(|(t, e)| (t.as_str(), e.len())).collect()
}

#[test]
fn a_flow_with_port_ranges_is_written_into_both_ip_tables_as_prefixes() {
    let f = fixture();
    let config = f.config(
        &example("one-filter-site.json"),
        "set ecofilter-balancer flow web priority 50 links l1\n\
         set ecofilter-balancer flow web links l2\n\
         set ecofilter-balancer flow web match src-port 1-65535 dst-port 1024-65535",
    );
    let compiled = f.compile(&config, &Compiled::default());
    let web = f.flow_entries(&compiled, "web");
    // 16 source prefixes x 6 destination prefixes, in each IP table (the links and the
    // need of an L4 header are the frame's class, one match); frames without IP have no
    // ports: nothing in the non-IP table.
    assert_eq!(
        counts(&web),
        vec![("flows_ipv4.flows", 96), ("flows_ipv6.flows", 96)]
    );
    let v4 = &web["flows_ipv4.flows"];
    let class = v4[0].split(' ').find(|w| w.starts_with("frame_class="));
    assert!(
        class.is_some_and(|c| v4.iter().all(|e| e.contains(c))),
        "one class match for all: {v4:?}"
    );
    let dst_1024_2047 = v4
        .iter()
        .filter(|e| e.contains("l4_dst_port=0x0400&&&0xfc00"))
        .count();
    assert_eq!(dst_1024_2047, 16, "one per source prefix");
    assert!(v4.iter().all(|e| !e.contains("ipv6")));
}

#[test]
fn a_flow_in_both_directions_writes_its_mirror_at_the_same_priority() {
    let f = fixture();
    let config = f.config(
        &example("one-filter-site.json"),
        "set ecofilter-balancer flow dns priority 70 direction both match \
         dst-ipv4 192.0.2.0/24 ip-proto 17 dst-port 53\n\
         set ecofilter-balancer flow any-udp priority 71 direction both match ip-proto 17",
    );
    let compiled = f.compile(&config, &Compiled::default());
    let dns = &f.flow_entries(&compiled, "dns")["flows_ipv4.flows"];
    assert_eq!(dns.len(), 2, "{dns:?}");
    let written = dns.iter().find(|e| {
        e.contains("ipv4_dst=0xc0000200&&&0xffffff00") && e.contains("l4_dst_port=0x35&&&0xffff")
    });
    let mirror = dns.iter().find(|e| {
        e.contains("ipv4_src=0xc0000200&&&0xffffff00") && e.contains("l4_src_port=0x35&&&0xffff")
    });
    assert!(written.is_some() && mirror.is_some(), "{dns:?}");
    assert!(dns.iter().all(|e| e.contains("prio 71 ")), "{dns:?}");
    // A match that holds both ways is its own mirror: written once.
    let any_udp = f.flow_entries(&compiled, "any-udp");
    assert_eq!(
        counts(&any_udp),
        vec![("flows_ipv4.flows", 1), ("flows_ipv6.flows", 1)]
    );
}

#[test]
fn an_llc_flow_is_written_into_the_non_ip_table_only() {
    let f = fixture();
    let config = f.config(
        &example("one-filter-site.json"),
        "set ecofilter-balancer flow stp priority 60 match llc-dsap 66 llc-ssap 66",
    );
    let compiled = f.compile(&config, &Compiled::default());
    let stp = f.flow_entries(&compiled, "stp");
    assert_eq!(counts(&stp), vec![("flows_other.flows", 1)]);
    assert_eq!(
        stp["flows_other.flows"][0],
        "flows_other.flows prio 61 llc_valid=0x01&&&0x01 llc_dsap=0x42&&&0xff \
         llc_ssap=0x42&&&0xff -> flows_other.bypass()"
    );
}

#[test]
fn a_packet_type_flow_is_written_only_where_that_ether_type_can_arrive() {
    let f = fixture();
    let config = f.config(
        &example("one-filter-site.json"),
        "set ecofilter-balancer flow arp priority 60 match packet-type 2054\n\
         set ecofilter-balancer flow v4 priority 61 match packet-type 2048\n\
         set ecofilter-balancer flow mpls priority 62 match packet-type 34887",
    );
    let compiled = f.compile(&config, &Compiled::default());
    let tables = |flow: &str| -> Vec<String> {
        counts(&f.flow_entries(&compiled, flow))
            .into_iter()
            .map(|(table, _)| table.to_string())
            .collect()
    };
    assert_eq!(tables("arp"), ["flows_other.flows"]);
    assert_eq!(tables("v4"), ["flows_ipv4.flows"]);
    assert_eq!(
        tables("mpls"),
        ["flows_ipv4.flows", "flows_ipv6.flows", "flows_other.flows"]
    );
}

#[test]
fn a_flow_to_a_unit_is_a_bypass_in_the_non_ip_table() {
    let f = fixture();
    let config = f.config(&example("one-filter-site.json"), "");
    let compiled = f.compile(&config, &Compiled::default());
    let to_filters = f.flow_entries(&compiled, "to-filters");
    let expected =
        |table: &str, action: &str| vec![format!("{table}.flows prio 101 -> {table}.{action}")];
    assert_eq!(
        to_filters["flows_ipv4.flows"],
        expected("flows_ipv4", "to_unit(unit_id=0x01)")
    );
    assert_eq!(
        to_filters["flows_ipv6.flows"],
        expected("flows_ipv6", "to_unit(unit_id=0x01)")
    );
    assert_eq!(
        to_filters["flows_other.flows"],
        expected("flows_other", "bypass()"),
        "frames without IP never go to a filter"
    );
}

/// The IPv4 flow table's size as compiled for the chip.
fn ipv4_capacity() -> usize {
    let index = efb_p4info::index().unwrap();
    index.table_by_name(IPV4.table).unwrap().size as usize
}

/// A fixture whose P4Info gives the IPv4 flow table `size` entries instead of its own.
fn fixture_with_ipv4_flows(size: u64) -> Fixture {
    let text = efb_p4info::P4INFO_TEXT.replacen(
        &format!("size: {}\n", ipv4_capacity()),
        &format!("size: {size}\n"),
        1,
    );
    assert_ne!(text, efb_p4info::P4INFO_TEXT);
    let index = P4InfoIndex::new(&efb_p4info::p4info_from_text(&text).unwrap()).unwrap();
    assert_eq!(index.table_by_name(IPV4.table).unwrap().size, size);
    Fixture {
        tables: Tables::new(&index).unwrap(),
        compiler: Compiler {
            index,
            ports: PortMap::builtin().unwrap(),
        },
        ..fixture()
    }
}

/// `n` flows that only IPv4 frames can match: one entry each.
fn ipv4_flows(n: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                "set ecofilter-balancer flow v4-{i} priority {} match dst-ipv4 10.{}.{}.0/24\n",
                1000 + i,
                i / 256,
                i % 256
            )
        })
        .collect()
}

#[test]
fn more_flow_entries_than_the_chip_holds_are_refused_with_the_numbers() {
    // The chip as compiled; the site has 5 IPv4 flow entries of its own.
    let f = fixture();
    let capacity = ipv4_capacity();
    let config = f.config(&example("one-filter-site.json"), &ipv4_flows(capacity - 4));
    let err = f
        .compiler
        .compile(&config, &LiveState::all_up(), &Compiled::default())
        .unwrap_err();
    assert!(
        matches!(
            err,
            CompileError::Capacity(OverCapacity {
                ref what,
                needed,
                capacity: c,
                ..
            }) if what == "IPv4 flow entries" && needed == capacity + 1 && c as usize == capacity
        ),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(
        message.contains(&format!("{capacity} IPv4 flow entries"))
            && message.contains(&format!("needs {}", capacity + 1)),
        "{message}"
    );

    // At the boundary, on a smaller table: exactly full compiles, one more is refused,
    // afresh and as a change to what the chip holds.
    let small = fixture_with_ipv4_flows(40);
    let full = small.config(&example("one-filter-site.json"), &ipv4_flows(35));
    let at_capacity = small.compile(&full, &Compiled::default());
    let over = small.config(&example("one-filter-site.json"), &ipv4_flows(36));
    for previous in [&Compiled::default(), &at_capacity] {
        let err = small
            .compiler
            .compile(&over, &LiveState::all_up(), previous)
            .unwrap_err();
        assert!(
            matches!(
                err,
                CompileError::Capacity(OverCapacity {
                    ref what,
                    needed: 41,
                    capacity: 40,
                    ..
                }) if what == "IPv4 flow entries"
            ),
            "{err:?}"
        );
    }
    // A port range counts as its prefixes: 1..=65535 is 16 entries (in each IP table).
    let ranged = |n: usize| {
        small.config(
            &example("one-filter-site.json"),
            &format!(
                "{}set ecofilter-balancer flow high priority 9 match dst-port 1-65535\n",
                ipv4_flows(n)
            ),
        )
    };
    small.compile(&ranged(19), &at_capacity);
    let err = small
        .compiler
        .compile(&ranged(20), &LiveState::all_up(), &at_capacity)
        .unwrap_err();
    assert!(
        matches!(err, CompileError::Capacity(OverCapacity { needed: 41, .. })),
        "5 + 20 + 16: {err:?}"
    );
}

#[test]
fn flows_whose_criteria_need_more_class_bits_than_the_chip_has_are_refused() {
    // Nine MAC criteria of one bit each: any two can hold for the same frame, so each
    // needs a class bit of its own, and the class has eight.
    let f = fixture();
    let lines: String = (0..9)
        .map(|bit| {
            format!(
                "set ecofilter-balancer flow mac{bit} priority {} match src-mac 00:00:00:00:{:02x}:{:02x} src-mac-mask 00:00:00:00:{:02x}:{:02x}\n",
                2000 + bit,
                (1u16 << bit) >> 8,
                (1u16 << bit) & 0xff,
                (1u16 << bit) >> 8,
                (1u16 << bit) & 0xff,
            )
        })
        .collect();
    let config = f.config(&example("one-filter-site.json"), &lines);
    let previous = f.compile(
        &f.config(&example("one-filter-site.json"), ""),
        &Compiled::default(),
    );
    let err = f
        .compiler
        .compile(&config, &LiveState::all_up(), &previous)
        .unwrap_err();
    assert!(
        matches!(err, CompileError::Classes(ClassesError::TooManyBits { .. })),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(
        message.contains("-bit class") && message.contains("frame_class field has 8 bits"),
        "{message}"
    );
}
