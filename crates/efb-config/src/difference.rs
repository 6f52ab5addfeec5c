//! What differs between two balancers' balancing configurations, in the terms of the
//! balancing-config-hash input of MODEL.md: the method, the units, and per unit its cores,
//! rebalance and ordered pairs. Two balancers whose hash inputs differ must get at least one
//! difference here, or operators would see "disagree" with nothing to act on; a last-resort
//! line comparison of the hash text guarantees it even if the input grows a new line kind.

use std::collections::{BTreeMap, BTreeSet};

use efb_model::{Config, paths};
use serde::Serialize;

/// The part of a configuration the balancing-config-hash covers, kept structured so that
/// a difference can be named by path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Balancing {
    pub method: String,
    pub units: BTreeMap<String, UnitBalancing>,
    /// The hash input text and its digest, exactly as efb-balancing computes them.
    pub text: String,
    pub hash: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnitBalancing {
    pub cores: u16,
    pub rebalance: bool,
    /// In configured order: the order decides which slot a bucket lands on.
    pub pairs: Vec<String>,
}

impl Balancing {
    pub fn of(config: &Config) -> Balancing {
        Balancing {
            method: config.balancing_method.as_str().to_string(),
            units: config
                .units
                .iter()
                .map(|(name, unit)| {
                    let balancing = UnitBalancing {
                        cores: unit.cores,
                        rebalance: unit.rebalance,
                        pairs: unit.pairs.iter().map(|p| p.name.clone()).collect(),
                    };
                    (name.clone(), balancing)
                })
                .collect(),
            text: efb_balancing::config_hash_text(config),
            hash: efb_balancing::config_hash(config),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DifferenceKind {
    Method,
    /// On the reference, not on this balancer.
    UnitMissing,
    /// On this balancer, not on the reference.
    UnitExtra,
    PairMissing,
    PairExtra,
    /// The pairs both have, in another order.
    PairOrder,
    Cores,
    Rebalance,
    /// The balancer reports a hash its own configuration does not give here: the two
    /// programs compute the hash differently (another software version).
    ReportedHash,
    /// The hash input differs in a way none of the above names.
    Other,
}

/// One thing that differs, named by the configuration path where an operator fixes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct Difference {
    pub kind: DifferenceKind,
    pub path: String,
    /// The value on the reference balancer (absent when it has none there).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// The value on this balancer (absent when it has none there).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    pub message: String,
}

/// Everything in `other` (the balancer named `name`) that differs from `reference` (named
/// `reference_name`). Empty exactly when the hash inputs are equal.
pub fn differences(
    reference_name: &str,
    reference: &Balancing,
    name: &str,
    other: &Balancing,
) -> Vec<Difference> {
    let mut out = Vec::new();
    if reference.method != other.method {
        out.push(Difference {
            kind: DifferenceKind::Method,
            path: paths::method(),
            reference: Some(reference.method.clone()),
            value: Some(other.method.clone()),
            message: format!(
                "balancing-method is {} on {name} but {} on {reference_name}: sessions are hashed differently",
                other.method, reference.method
            ),
        });
    }
    let names: BTreeSet<&String> = reference.units.keys().chain(other.units.keys()).collect();
    for unit in names {
        match (reference.units.get(unit), other.units.get(unit)) {
            (Some(r), Some(o)) => unit_differences(&mut out, unit, (reference_name, r), (name, o)),
            (Some(r), None) => out.push(Difference {
                kind: DifferenceKind::UnitMissing,
                path: paths::unit(unit),
                reference: Some(unit_summary(r)),
                value: None,
                message: format!(
                    "unit {unit} ({}) is on {reference_name} but missing on {name}",
                    unit_summary(r)
                ),
            }),
            (None, Some(o)) => out.push(Difference {
                kind: DifferenceKind::UnitExtra,
                path: paths::unit(unit),
                reference: None,
                value: Some(unit_summary(o)),
                message: format!(
                    "unit {unit} ({}) is on {name} but not on {reference_name}",
                    unit_summary(o)
                ),
            }),
            (None, None) => {}
        }
    }
    if out.is_empty() && reference.text != other.text {
        out.push(text_difference(reference_name, reference, name, other));
    }
    out
}

fn unit_summary(unit: &UnitBalancing) -> String {
    format!(
        "{} pair{}, {} core{}, rebalance {}",
        unit.pairs.len(),
        if unit.pairs.len() == 1 { "" } else { "s" },
        unit.cores,
        if unit.cores == 1 { "" } else { "s" },
        unit.rebalance
    )
}

fn unit_differences(
    out: &mut Vec<Difference>,
    unit: &str,
    (reference_name, reference): (&str, &UnitBalancing),
    (name, other): (&str, &UnitBalancing),
) {
    let path = paths::unit(unit);
    if reference.cores != other.cores {
        out.push(Difference {
            kind: DifferenceKind::Cores,
            path: format!("{path}/cores"),
            reference: Some(reference.cores.to_string()),
            value: Some(other.cores.to_string()),
            message: format!(
                "cores of unit {unit} is {} on {name} but {} on {reference_name}",
                other.cores, reference.cores
            ),
        });
    }
    if reference.rebalance != other.rebalance {
        out.push(Difference {
            kind: DifferenceKind::Rebalance,
            path: format!("{path}/rebalance"),
            reference: Some(reference.rebalance.to_string()),
            value: Some(other.rebalance.to_string()),
            message: format!(
                "rebalance of unit {unit} is {} on {name} but {} on {reference_name}: sessions of a dead pair go elsewhere",
                other.rebalance, reference.rebalance
            ),
        });
    }
    pair_differences(out, unit, (reference_name, reference), (name, other));
}

fn pair_differences(
    out: &mut Vec<Difference>,
    unit: &str,
    (reference_name, reference): (&str, &UnitBalancing),
    (name, other): (&str, &UnitBalancing),
) {
    let in_reference: BTreeSet<&String> = reference.pairs.iter().collect();
    let in_other: BTreeSet<&String> = other.pairs.iter().collect();
    for (position, pair) in reference.pairs.iter().enumerate() {
        if !in_other.contains(pair) {
            out.push(Difference {
                kind: DifferenceKind::PairMissing,
                path: paths::pair(unit, pair),
                reference: Some(format!("position {}", position + 1)),
                value: None,
                message: format!(
                    "pair {pair} of unit {unit} (position {} on {reference_name}) is missing on {name}",
                    position + 1
                ),
            });
        }
    }
    for (position, pair) in other.pairs.iter().enumerate() {
        if !in_reference.contains(pair) {
            out.push(Difference {
                kind: DifferenceKind::PairExtra,
                path: paths::pair(unit, pair),
                reference: None,
                value: Some(format!("position {}", position + 1)),
                message: format!(
                    "pair {pair} of unit {unit} (position {} on {name}) is not on {reference_name}",
                    position + 1
                ),
            });
        }
    }
    // Order is judged on the pairs both have, so that one missing pair is reported once,
    // as missing, and not also as every later pair having moved.
    let common_reference: Vec<&String> = reference
        .pairs
        .iter()
        .filter(|p| in_other.contains(p))
        .collect();
    let common_other: Vec<&String> = other
        .pairs
        .iter()
        .filter(|p| in_reference.contains(p))
        .collect();
    let first_moved = common_reference
        .iter()
        .zip(&common_other)
        .position(|(a, b)| a != b);
    if let Some(at) = first_moved {
        let (here, there) = (common_other[at], common_reference[at]);
        out.push(Difference {
            kind: DifferenceKind::PairOrder,
            path: format!("{}/pair", paths::unit(unit)),
            reference: Some(join(&reference.pairs)),
            value: Some(join(&other.pairs)),
            message: format!(
                "pairs of unit {unit} are in another order: {name} has {here} where {reference_name} has {there} \
                 ({name}: {}; {reference_name}: {})",
                join(&other.pairs),
                join(&reference.pairs)
            ),
        });
    }
}

fn join(pairs: &[String]) -> String {
    pairs.join(" ")
}

/// The first line where the two hash inputs part, for what the structured comparison does
/// not know how to name.
fn text_difference(
    reference_name: &str,
    reference: &Balancing,
    name: &str,
    other: &Balancing,
) -> Difference {
    let mut reference_lines = reference.text.lines();
    let mut other_lines = other.text.lines();
    let mut number = 1;
    loop {
        let (r, o) = (reference_lines.next(), other_lines.next());
        if r != o || (r.is_none() && o.is_none()) {
            return Difference {
                kind: DifferenceKind::Other,
                path: "/ecofilter-balancer:ecofilter-balancer".to_string(),
                reference: r.map(str::to_string),
                value: o.map(str::to_string),
                message: format!(
                    "the balancing-config-hash input differs at line {number}: {:?} on {name}, {:?} on {reference_name} \
                     (efb-config hash --text FILE prints it)",
                    o.unwrap_or("(end)"),
                    r.unwrap_or("(end)")
                ),
            };
        }
        number += 1;
    }
}

/// The balancer computes the hash itself; if that is not what its configuration hashes to
/// here, the two programs disagree on the algorithm, and comparing configurations alone
/// would give false comfort.
pub fn reported_hash_difference(name: &str, computed: &str, reported: &str) -> Option<Difference> {
    (computed != reported).then(|| Difference {
        kind: DifferenceKind::ReportedHash,
        path: "/ecofilter-balancer:ecofilter-balancer/balancing-config-hash".to_string(),
        reference: Some(computed.to_string()),
        value: Some(reported.to_string()),
        message: format!(
            "{name} reports balancing-config-hash {reported}, but its configuration hashes to {computed} here: \
             its efbd balances by another algorithm version than this efb-config (version 2): a balancer \
             still on version 1 sends sessions to other filters and cores; upgrade it"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(cores: u16, rebalance: bool, pairs: &[&str]) -> UnitBalancing {
        UnitBalancing {
            cores,
            rebalance,
            pairs: pairs.iter().map(|p| p.to_string()).collect(),
        }
    }

    /// Builds the hash text the same way MODEL.md does, so that the tests cover the
    /// "empty exactly when the inputs are equal" promise.
    fn balancing(method: &str, units: &[(&str, UnitBalancing)]) -> Balancing {
        let mut text = format!("efb-balancing-v2\nmethod {method}\n");
        let units: BTreeMap<String, UnitBalancing> = units
            .iter()
            .map(|(n, u)| (n.to_string(), u.clone()))
            .collect();
        for (name, u) in &units {
            text.push_str(&format!(
                "unit {name} cores {} pairs {} rebalance {}\n",
                u.cores,
                u.pairs.len(),
                u.rebalance
            ));
            for p in &u.pairs {
                text.push_str(&format!("pair {p}\n"));
            }
        }
        Balancing {
            method: method.to_string(),
            units,
            hash: String::new(),
            text,
        }
    }

    fn site() -> Balancing {
        balancing(
            "layer-3",
            &[
                ("ef1", unit(17, false, &["f1-a", "f1-b", "f1-c", "f1-d"])),
                ("ef2", unit(7, false, &["f2-a", "f2-b"])),
            ],
        )
    }

    fn only(diffs: &[Difference]) -> &Difference {
        assert_eq!(diffs.len(), 1, "{diffs:#?}");
        &diffs[0]
    }

    #[test]
    fn identical_configurations_have_no_difference() {
        assert!(differences("a", &site(), "b", &site()).is_empty());
    }

    #[test]
    fn a_different_method_is_named() {
        let mut other = site();
        other.method = "layer-4".into();
        other.text = other.text.replace("layer-3", "layer-4");
        let diffs = differences("a", &site(), "b", &other);
        let d = only(&diffs);
        assert_eq!(d.kind, DifferenceKind::Method);
        assert_eq!(
            d.path,
            "/ecofilter-balancer:ecofilter-balancer/balancing-method"
        );
        assert_eq!(d.reference.as_deref(), Some("layer-3"));
        assert_eq!(d.value.as_deref(), Some("layer-4"));
        assert!(
            d.message.contains("layer-4 on b") && d.message.contains("layer-3 on a"),
            "{}",
            d.message
        );
    }

    #[test]
    fn a_missing_and_an_extra_unit_are_named() {
        let other = balancing(
            "layer-3",
            &[
                ("ef1", unit(17, false, &["f1-a", "f1-b", "f1-c", "f1-d"])),
                ("ef3", unit(3, false, &["f3-a"])),
            ],
        );
        let diffs = differences("a", &site(), "b", &other);
        assert_eq!(diffs.len(), 2, "{diffs:#?}");
        assert_eq!(diffs[0].kind, DifferenceKind::UnitMissing);
        assert_eq!(
            diffs[0].path,
            "/ecofilter-balancer:ecofilter-balancer/ecofilter-unit[name='ef2']"
        );
        assert!(
            diffs[0].message.contains("unit ef2 (2 pairs, 7 cores")
                && diffs[0].message.contains("on a but missing on b"),
            "{}",
            diffs[0].message
        );
        assert_eq!(diffs[1].kind, DifferenceKind::UnitExtra);
        assert!(
            diffs[1].message.contains("unit ef3"),
            "{}",
            diffs[1].message
        );
    }

    #[test]
    fn a_missing_pair_is_named_once_not_as_a_reordering() {
        let mut other = site();
        other
            .units
            .insert("ef1".into(), unit(17, false, &["f1-a", "f1-c", "f1-d"]));
        other.text = balancing(
            "layer-3",
            &[
                ("ef1", unit(17, false, &["f1-a", "f1-c", "f1-d"])),
                ("ef2", unit(7, false, &["f2-a", "f2-b"])),
            ],
        )
        .text;
        let diffs = differences("a", &site(), "b", &other);
        let d = only(&diffs);
        assert_eq!(d.kind, DifferenceKind::PairMissing);
        assert_eq!(
            d.path,
            "/ecofilter-balancer:ecofilter-balancer/ecofilter-unit[name='ef1']/pair[name='f1-b']"
        );
        assert!(d.message.contains("position 2 on a"), "{}", d.message);
    }

    #[test]
    fn an_extra_pair_is_named() {
        let other = balancing(
            "layer-3",
            &[
                (
                    "ef1",
                    unit(17, false, &["f1-a", "f1-b", "f1-c", "f1-d", "f1-e"]),
                ),
                ("ef2", unit(7, false, &["f2-a", "f2-b"])),
            ],
        );
        let diffs = differences("a", &site(), "b", &other);
        let d = only(&diffs);
        assert_eq!(d.kind, DifferenceKind::PairExtra);
        assert!(d.path.ends_with("pair[name='f1-e']"), "{}", d.path);
        assert!(d.message.contains("position 5 on b"), "{}", d.message);
    }

    #[test]
    fn pairs_in_another_order_are_named_with_where_they_part() {
        let other = balancing(
            "layer-3",
            &[
                ("ef1", unit(17, false, &["f1-a", "f1-c", "f1-b", "f1-d"])),
                ("ef2", unit(7, false, &["f2-a", "f2-b"])),
            ],
        );
        let diffs = differences("a", &site(), "b", &other);
        let d = only(&diffs);
        assert_eq!(d.kind, DifferenceKind::PairOrder);
        assert_eq!(
            d.path,
            "/ecofilter-balancer:ecofilter-balancer/ecofilter-unit[name='ef1']/pair"
        );
        assert!(
            d.message.contains("b has f1-c where a has f1-b"),
            "{}",
            d.message
        );
        assert_eq!(d.value.as_deref(), Some("f1-a f1-c f1-b f1-d"));
    }

    #[test]
    fn different_cores_and_rebalance_are_named() {
        let other = balancing(
            "layer-3",
            &[
                ("ef1", unit(17, false, &["f1-a", "f1-b", "f1-c", "f1-d"])),
                ("ef2", unit(8, true, &["f2-a", "f2-b"])),
            ],
        );
        let diffs = differences("a", &site(), "b", &other);
        assert_eq!(diffs.len(), 2, "{diffs:#?}");
        assert_eq!(diffs[0].kind, DifferenceKind::Cores);
        assert_eq!(
            diffs[0].path,
            "/ecofilter-balancer:ecofilter-balancer/ecofilter-unit[name='ef2']/cores"
        );
        assert_eq!(diffs[0].reference.as_deref(), Some("7"));
        assert_eq!(diffs[0].value.as_deref(), Some("8"));
        assert_eq!(diffs[1].kind, DifferenceKind::Rebalance);
        assert!(diffs[1].path.ends_with("[name='ef2']/rebalance"));
    }

    #[test]
    fn a_hash_input_difference_nothing_else_names_still_shows() {
        let mut other = site();
        other.text = other.text.replace("efb-balancing-v2", "efb-balancing-v1");
        let diffs = differences("a", &site(), "b", &other);
        let d = only(&diffs);
        assert_eq!(d.kind, DifferenceKind::Other);
        assert!(
            d.message.contains("line 1") && d.message.contains("efb-balancing-v1"),
            "{}",
            d.message
        );
    }

    /// On real configurations, every change of the hash input (and pairs of them) gives at
    /// least one difference, and changes outside it (ports, flows) give none.
    #[test]
    fn differences_are_empty_exactly_when_the_hashes_are_equal() {
        let schema = efb_yang::Schema::load().unwrap();
        let validator = efb_model::validation::Validator::new(std::sync::Arc::new(schema)).unwrap();
        let text = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../examples/crossed/balancer-a.json"),
        )
        .unwrap();
        let tree =
            efb_yang::json::from_json(validator.schema(), &text, efb_yang::json::Check::Complete)
                .unwrap();
        let base = validator.read(&tree).unwrap();
        type Change = fn(&mut Config);
        fn unit<'a>(c: &'a mut Config, name: &str) -> Option<&'a mut efb_model::Unit> {
            c.units.get_mut(name)
        }
        let changes: Vec<(&str, Change)> = vec![
            ("nothing", |_| {}),
            ("a flow", |c| {
                c.flows = c.flows.without("udp");
            }),
            ("a port name", |c| {
                if let Some(pair) = unit(c, "dpi-1").and_then(|u| u.pairs.first_mut()) {
                    pair.lan_port = "elsewhere".into();
                }
            }),
            ("method", |c| {
                c.balancing_method = efb_model::BalancingMethod::Layer4;
            }),
            ("cores", |c| {
                if let Some(u) = unit(c, "dpi-1") {
                    u.cores += 1;
                }
            }),
            ("rebalance", |c| {
                if let Some(u) = unit(c, "dpi-2") {
                    u.rebalance = true;
                }
            }),
            ("order", |c| {
                if let Some(u) = unit(c, "dpi-1") {
                    u.pairs.swap(1, 2);
                }
            }),
            ("a pair less", |c| {
                if let Some(u) = unit(c, "dpi-1") {
                    u.pairs.remove(0);
                }
            }),
            ("a unit less", |c| {
                c.units.remove("dpi-2");
            }),
            ("a renamed pair", |c| {
                if let Some(pair) = unit(c, "dpi-2").and_then(|u| u.pairs.last_mut()) {
                    pair.name = "f9-te1-te2".into();
                }
            }),
        ];
        for (first, change_first) in &changes {
            for (second, change_second) in &changes {
                let mut other = base.clone();
                change_first(&mut other);
                change_second(&mut other);
                let (r, o) = (Balancing::of(&base), Balancing::of(&other));
                let diffs = differences("a", &r, "b", &o);
                assert_eq!(
                    diffs.is_empty(),
                    r.hash == o.hash,
                    "{first} + {second}: {diffs:#?}"
                );
                assert!(
                    diffs.iter().all(|d| d.kind != DifferenceKind::Other),
                    "{first} + {second}: named by kind, not as a text line: {diffs:#?}"
                );
            }
        }
    }

    #[test]
    fn a_reported_hash_that_is_not_the_computed_one_is_named() {
        assert!(reported_hash_difference("b", "aa", "aa").is_none());
        let d = reported_hash_difference("b", "aa", "bb").expect("a difference");
        assert_eq!(d.kind, DifferenceKind::ReportedHash);
        assert!(d.message.contains("b reports balancing-config-hash bb"));
    }
}
