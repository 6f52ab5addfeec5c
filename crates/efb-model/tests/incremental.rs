//! A commit validates a change in proportion to it (libyang on the changed entries and
//! what refers to them, the rules on the flows that may be affected). Its verdict must be
//! the whole configuration's: for each kind of change (ports, links, units, pairs, liveness
//! profiles, flows, the balancing method), random edits of a site with 60 flows, many of
//! them breaking references or rules, are validated both ways and compared.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::sync::Arc;

use efb_model::validation::{Validated, Validator};
use efb_yang::json::{self, Check};
use efb_yang::validate::Scope;
use efb_yang::{DataTree, Schema, setlines};

/// Trials per kind, each of one to three edits.
const TRIALS: usize = 60;

/// xorshift64*: reproducible without a dependency; each failure names its seed.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    Port,
    Link,
    Unit,
    Pair,
    Profile,
    Flow,
    Method,
}

const LINKS: &[&str] = &["l1", "l2", "l3", "l4", "l9"];
const UNITS: &[&str] = &["ef1", "ef2", "ef9"];
const PRIORITIES: &[&str] = &["100", "110", "200", "300", "310", "400", "1000", "1001"];

fn port(r: &mut Random) -> String {
    format!("p{}-{}", 1 + r.below(32), r.below(4))
}

fn pair(r: &mut Random) -> (&'static str, String) {
    let (unit, first) = if r.below(2) == 0 {
        ("ef1", 1)
    } else {
        ("ef2", 6)
    };
    let k = r.below(6);
    let pair = format!("f{}-te{}-te{}", first + r.below(5), 2 * k + 1, 2 * k + 2);
    (unit, pair)
}

fn flow(r: &mut Random) -> String {
    if r.below(4) == 0 {
        ["bgp-to", "subscribers-a", "subscribers-b", "new"][r.below(4)].to_string()
    } else {
        format!("gen{}", r.below(70))
    }
}

/// One edit of `kind`, as set/delete lines (some of them fail to apply: a value out of
/// range, say; those are skipped, as the shell refuses them before any commit).
fn edit(kind: Kind, r: &mut Random) -> String {
    let n = r.next() % 100_000;
    match kind {
        Kind::Port => {
            let p = port(r);
            match r.below(7) {
                0 => format!("set ports port {p} description \"port {n}\""),
                1 => format!(
                    "set ports port {p} mtu {}",
                    ["1500", "9000", "9216", "10240"][r.below(4)]
                ),
                2 => format!("set ports port {p} enabled false"),
                3 => format!(
                    "set ports port {p} speed {}",
                    ["10g", "25g", "100g"][r.below(3)]
                ),
                4 => format!("delete ports port {p}"),
                5 => format!("set ports port {p} lane {}", r.below(4)),
                _ => format!(
                    "set ports port px{n} number {} lane {} speed 25g",
                    1 + r.below(32),
                    r.below(4)
                ),
            }
        }
        Kind::Link => {
            let l = r.pick(LINKS);
            match r.below(4) {
                0 => format!("set ecofilter-balancer link {l} description \"link {n}\""),
                1 => format!("delete ecofilter-balancer link {l}"),
                2 => format!("set ecofilter-balancer link {l} lan-port {}", port(r)),
                _ => format!(
                    "set ecofilter-balancer link {l} lan-port {} wan-port {}",
                    port(r),
                    port(r)
                ),
            }
        }
        Kind::Unit => {
            let u = r.pick(UNITS);
            match r.below(6) {
                0 => format!(
                    "set ecofilter-balancer ecofilter-unit {u} cores {}",
                    1 + r.below(255)
                ),
                1 => format!("set ecofilter-balancer ecofilter-unit {u} description \"unit {n}\""),
                2 => format!(
                    "set ecofilter-balancer ecofilter-unit {u} rebalance {}",
                    r.below(2) == 0
                ),
                3 => format!(
                    "set ecofilter-balancer ecofilter-unit {u} liveness-profile {}",
                    r.pick(&["standard", "fast", "nope"])
                ),
                4 => format!("delete ecofilter-balancer ecofilter-unit {u}"),
                _ => format!("set ecofilter-balancer ecofilter-unit {u} cores 3"),
            }
        }
        Kind::Pair => {
            let (u, p) = pair(r);
            match r.below(6) {
                0 | 1 => format!(
                    "set ecofilter-balancer ecofilter-unit {u} pair {p} description \"pair {n}\""
                ),
                2 => format!("delete ecofilter-balancer ecofilter-unit {u} pair {p}"),
                3 => format!("delete ecofilter-balancer ecofilter-unit {u} pair"),
                _ => format!(
                    "set ecofilter-balancer ecofilter-unit {u} pair {p} lan-port {}",
                    port(r)
                ),
            }
        }
        Kind::Profile => {
            let p = r.pick(&["standard", "fast"]);
            match r.below(6) {
                0 => format!(
                    "set liveness profile {p} interval {}",
                    r.pick(&["10", "50", "100", "1000"])
                ),
                1 => format!(
                    "set liveness profile {p} round-timeout {}",
                    r.pick(&["1", "5", "20", "200"])
                ),
                2 => format!(
                    "set liveness profile {p} probes-down-count {}",
                    1 + r.below(9)
                ),
                3 => format!("set liveness profile {p} active-pairs {}", 1 + r.below(40)),
                4 => format!("delete liveness profile {p}"),
                _ => format!("set liveness profile {p} description \"profile {n}\""),
            }
        }
        Kind::Flow => {
            let f = flow(r);
            let base = format!("set ecofilter-balancer flow {f}");
            match r.below(7) {
                0 => format!("{base} match ip-proto 6 dst-port {}", 1 + r.below(3)),
                1 => format!("{base} priority {}", r.pick(PRIORITIES)),
                2 => format!(
                    "{base} action to-ecofilter ecofilter-unit {}",
                    r.pick(UNITS)
                ),
                3 => format!("{base} links {}", r.pick(LINKS)),
                4 => format!("delete ecofilter-balancer flow {f}"),
                5 => format!(
                    "{base} match dst-port {}-{}",
                    1 + r.below(9),
                    1 + r.below(9)
                ),
                _ => format!("{base} action drop"),
            }
        }
        Kind::Method => format!(
            "set ecofilter-balancer balancing-method {}",
            r.pick(&["layer-3", "layer-4", "dst-ip"])
        ),
    }
}

fn validator() -> Validator {
    Validator::new(Arc::new(Schema::load().unwrap())).unwrap()
}

/// The ten-filter example and 60 generated flows on its links and units, some of them
/// overlapping at one priority (so that the base has warnings), plus a second profile.
fn base(v: &Validator) -> DataTree {
    let text = std::fs::read_to_string(format!(
        "{}/../../examples/ten-filter-site.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let mut tree = json::from_json(v.schema(), &text, Check::Complete).unwrap();
    let mut r = Random(7);
    let mut lines = vec!["set liveness profile fast interval 50".to_string()];
    for i in 0..60 {
        let f = format!("set ecofilter-balancer flow gen{i}");
        // Flows i and i + 30 share a priority; the first matches a port too: they overlap
        // where their links do.
        lines.push(format!("{f} priority {}", 1000 + i % 30));
        lines.push(format!("{f} match ip-proto 6"));
        if i < 30 {
            lines.push(format!("{f} match dst-port {}", 1 + i % 3));
        }
        lines.push(format!("{f} links {}", LINKS[r.below(4)]));
        lines.push(format!(
            "{f} action to-ecofilter ecofilter-unit {}",
            UNITS[r.below(2)]
        ));
    }
    setlines::apply_lines(v.schema(), &mut tree, &lines.join("\n")).unwrap();
    tree
}

fn texts(problems: &[efb_yang::Problem]) -> BTreeSet<String> {
    problems.iter().map(ToString::to_string).collect()
}

fn compare(
    what: &str,
    full: &Validated,
    incremental: &Validated,
    base_warnings: &BTreeSet<String>,
) {
    assert_eq!(
        incremental.report.errors, full.report.errors,
        "errors of {what}"
    );
    let (all, told) = (
        texts(&full.report.warnings),
        texts(&incremental.report.warnings),
    );
    assert!(
        told.is_subset(&all),
        "{what}: warnings a full validation does not give: {:?}",
        told.difference(&all)
    );
    let untold: Vec<&String> = all
        .difference(&told)
        .filter(|w| !base_warnings.contains(*w))
        .collect();
    assert!(
        untold.is_empty(),
        "{what}: new warnings not told: {untold:?}"
    );
    if full.report.errors.is_empty() {
        assert_eq!(
            incremental.config, full.config,
            "configuration read from {what}"
        );
        assert!(
            matches!(incremental.report.scope, Scope::Entries(_)),
            "{what} was validated whole"
        );
    }
}

fn equal_verdicts(kind: Kind, seed: u64) {
    let v = validator();
    let base = base(&v);
    let validated = v.validate(&base, false);
    assert!(
        validated.report.errors.is_empty(),
        "{:?}",
        validated.report.errors
    );
    assert!(
        !validated.report.warnings.is_empty(),
        "the base has overlap warnings"
    );
    let base_warnings = texts(&validated.report.warnings);
    let config = validated.config.unwrap();
    let mut r = Random(seed);
    let (mut valid, mut invalid) = (0, 0);
    for trial in 0..TRIALS {
        let mut candidate = base.clone();
        let mut applied = Vec::new();
        for _ in 0..=r.below(3) {
            let line = edit(kind, &mut r);
            if setlines::apply_lines(v.schema(), &mut candidate, &line).is_ok() {
                applied.push(line);
            }
        }
        if applied.is_empty() {
            continue;
        }
        let what = format!("{kind:?} trial {trial} (seed {seed}): {applied:?}");
        let full = v.validate(&candidate, false);
        let incremental = v.validate_change(&base, &config, &candidate);
        compare(&what, &full, &incremental, &base_warnings);
        if full.report.errors.is_empty() {
            valid += 1;
        } else {
            invalid += 1;
        }
    }
    // Both outcomes are exercised, or the comparison proves little.
    assert!(
        valid >= 5 && invalid >= 3,
        "{kind:?}: {valid} valid, {invalid} invalid"
    );
}

#[test]
fn port_changes_get_the_whole_configurations_verdict() {
    equal_verdicts(Kind::Port, 11);
}

#[test]
fn link_changes_get_the_whole_configurations_verdict() {
    equal_verdicts(Kind::Link, 12);
}

#[test]
fn unit_changes_get_the_whole_configurations_verdict() {
    equal_verdicts(Kind::Unit, 13);
}

#[test]
fn pair_changes_get_the_whole_configurations_verdict() {
    equal_verdicts(Kind::Pair, 14);
}

#[test]
fn profile_changes_get_the_whole_configurations_verdict() {
    equal_verdicts(Kind::Profile, 15);
}

#[test]
fn flow_changes_get_the_whole_configurations_verdict() {
    equal_verdicts(Kind::Flow, 16);
}

#[test]
fn method_changes_get_the_whole_configurations_verdict() {
    let v = validator();
    let base = base(&v);
    let validated = v.validate(&base, false);
    let base_warnings = texts(&validated.report.warnings);
    let config = validated.config.unwrap();
    let mut r = Random(17);
    for _ in 0..6 {
        let line = edit(Kind::Method, &mut r);
        let mut candidate = base.clone();
        setlines::apply_lines(v.schema(), &mut candidate, &line).unwrap();
        let full = v.validate(&candidate, false);
        let incremental = v.validate_change(&base, &config, &candidate);
        compare(&line, &full, &incremental, &base_warnings);
    }
}
