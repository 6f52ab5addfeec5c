//! The rules of MODEL.md that YANG cannot express: errors refuse a commit, warnings go
//! through with it. Every finding names the path it is about and says why.

use std::collections::{BTreeMap, HashMap};

use efb_yang::Problem;

mod flow_sense;

pub use flow_sense::{MAX_SYMMETRY_COMPARISONS, never_matches, reverse_elsewhere};

use crate::paths;
use crate::regions::flows_overlap;
use crate::types::*;

/// The link id travels in one byte of the balancer's header, with one bit kept.
pub const MAX_LINKS: usize = 127;
/// Bytes the balancer adds on the way to a filter.
pub const HEADER_BYTES: u16 = 4;
/// Same-priority flows are compared pairwise; past this many in one priority the check
/// would cost seconds, so it is skipped with a warning saying so.
pub const MAX_OVERLAP_GROUP: usize = 4096;
/// Overlap warnings reported before the rest are summed up in one line.
pub const MAX_OVERLAP_WARNINGS: usize = 100;

/// Findings of the rules.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Findings {
    pub errors: Vec<Problem>,
    pub warnings: Vec<Problem>,
}

impl Findings {
    fn error(&mut self, path: String, message: String) {
        self.errors.push(Problem::new(path, message));
    }

    fn warning(&mut self, path: String, message: String) {
        self.warnings.push(Problem::new(path, message));
    }
}

/// Which flows get their own checks: all of them, or those a change touched or whose
/// references it changed (the others were checked when they were committed).
#[derive(Clone, Copy, Debug)]
pub enum FlowScope<'a> {
    All,
    Only {
        /// The flows to check.
        checked: &'a [String],
        /// Of those, the flows the change itself wrote: what a flow does to sessions
        /// depends on flows alone, not on the links and units they name.
        written: &'a [String],
    },
}

/// Runs every rule.
pub fn check(config: &Config, flows: FlowScope<'_>) -> Findings {
    let mut f = Findings::default();
    check_ports(config, &mut f);
    check_port_usage(config, &mut f);
    check_links(config, &mut f);
    check_units(config, &mut f);
    check_profiles(config, &mut f);
    check_mtu(config, &mut f);
    if config.balancing_method == BalancingMethod::DstIp {
        f.warning(
            paths::method(),
            "dst-ip is not session-symmetric: the two directions of a session may reach different filters".into(),
        );
    }
    check_flows(config, flows, &mut f);
    f
}

/// The board's front panel, as the model's ranges of a port's number and lane say it.
const BOARD_PORTS: u8 = 32;
const BOARD_LANES: u8 = 4;

/// The place a board name (`p21`, `p21-2`) names: port number and lane; None for a name the
/// board does not have (`p99`, `uplink`).
fn board_place(name: &str) -> Option<(u8, Option<u8>)> {
    let rest = name.strip_prefix('p')?;
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let (number, lane) = match rest.split_once('-') {
        Some((n, l)) if digits(n) && digits(l) => (n.parse().ok()?, Some(l.parse().ok()?)),
        None if digits(rest) => (rest.parse().ok()?, None),
        _ => return None,
    };
    let on_board = (1..=BOARD_PORTS).contains(&number) && lane.is_none_or(|l| l < BOARD_LANES);
    on_board.then_some((number, lane))
}

fn board_name(number: u8, lane: Option<u8>) -> String {
    match lane {
        Some(l) => format!("p{number}-{l}"),
        None => format!("p{number}"),
    }
}

/// A name spelled as the board names ports (`p<number>[-<lane>]`) must be the board's name
/// of the port's own place: `p20-0` on port 21 lane 2 would show as p21-2 in one view and
/// be taken for the board's p20-0 in another (efb-target, OpenConfig).
fn check_port_name(port: &Port, f: &mut Findings) {
    let Some((number, lane)) = board_place(&port.name) else {
        return;
    };
    if (number, lane) != (port.number, port.lane) {
        let own = board_name(port.number, port.lane);
        f.error(
            paths::port(&port.name),
            format!(
                "{} is the board's name of {}, but this port is {}: name it {own}, or a name \
                 not spelled p<number>[-<lane>]",
                port.name,
                place_words(number, lane),
                place_words(port.number, port.lane)
            ),
        );
    }
}

fn place_words(number: u8, lane: Option<u8>) -> String {
    match lane {
        Some(l) => format!("port {number} lane {l}"),
        None => format!("port {number}"),
    }
}

fn check_ports(config: &Config, f: &mut Findings) {
    let mut by_place: BTreeMap<(u8, Option<u8>), &str> = BTreeMap::new();
    for port in config.ports.values() {
        check_port_name(port, f);
        if port.speed.is_whole_port() && port.lane.is_some() {
            f.error(
                format!("{}/lane", paths::port(&port.name)),
                format!(
                    "a {} port uses the whole port and has no lane; remove the lane or use 10g, 25g or 50g",
                    port.speed.as_str()
                ),
            );
        }
        if let Some(other) = by_place.insert((port.number, port.lane), &port.name) {
            f.error(
                paths::port(&port.name),
                format!(
                    "port {} {} is already configured as {other}",
                    port.number,
                    port.lane
                        .map(|l| format!("lane {l}"))
                        .unwrap_or_else(|| "(whole)".into())
                ),
            );
        }
    }
    for port in config.ports.values().filter(|p| p.lane.is_some()) {
        if let Some(whole) = by_place.get(&(port.number, None)) {
            f.error(
                paths::port(&port.name),
                format!(
                    "physical port {} is also configured whole as {whole}; a port is either whole or broken out",
                    port.number
                ),
            );
        }
    }
}

/// Every port serves at most one link or pair side.
fn check_port_usage(config: &Config, f: &mut Findings) {
    let mut users: HashMap<&str, String> = HashMap::new();
    let mut uses: Vec<(&str, String, String)> = Vec::new();
    for link in config.links.values() {
        let base = paths::link(&link.name);
        uses.push((
            &link.lan_port,
            format!("{base}/lan-port"),
            format!("link {}", link.name),
        ));
        uses.push((
            &link.wan_port,
            format!("{base}/wan-port"),
            format!("link {}", link.name),
        ));
    }
    for unit in config.units.values() {
        for pair in &unit.pairs {
            let base = paths::pair(&unit.name, &pair.name);
            let who = format!("pair {} of unit {}", pair.name, unit.name);
            uses.push((&pair.lan_port, format!("{base}/lan-port"), who.clone()));
            uses.push((&pair.wan_port, format!("{base}/wan-port"), who));
        }
    }
    for (port, path, who) in uses {
        match users.get(port) {
            Some(first) => f.error(path, format!("port {port} is already used by {first}")),
            None => {
                users.insert(port, who);
            }
        }
    }
}

fn check_links(config: &Config, f: &mut Findings) {
    if config.links.len() > MAX_LINKS {
        f.error(
            paths::links(),
            format!(
                "{} links configured; the balancer's header carries at most {MAX_LINKS}",
                config.links.len()
            ),
        );
    }
    for link in config.links.values() {
        let base = paths::link(&link.name);
        parity(config, f, &format!("{base}/lan-port"), &link.lan_port, true);
        parity(
            config,
            f,
            &format!("{base}/wan-port"),
            &link.wan_port,
            false,
        );
    }
}

fn parity(config: &Config, f: &mut Findings, path: &str, port: &str, lan: bool) {
    let Some(p) = config.ports.get(port) else {
        return;
    };
    if p.is_lan_by_convention() != lan {
        let (side, want) = if lan { ("LAN", "even") } else { ("WAN", "odd") };
        let what = if p.lane.is_some() {
            "lane"
        } else {
            "port number"
        };
        f.warning(
            path.to_string(),
            format!("{port} is on the {side} side but its {what} is not {want} (convention: even LAN, odd WAN)"),
        );
    }
}

fn check_units(config: &Config, f: &mut Findings) {
    for unit in config.units.values() {
        let base = paths::unit(&unit.name);
        if !unit.cores_set && !unit.pairs.is_empty() {
            f.warning(
                format!("{base}/cores"),
                "cores is left at its default of 1: every session of a pair goes to one filter core; set it to the filter's CPU cores minus one".into(),
            );
        }
        for pair in &unit.pairs {
            let pbase = paths::pair(&unit.name, &pair.name);
            parity(
                config,
                f,
                &format!("{pbase}/lan-port"),
                &pair.lan_port,
                true,
            );
            parity(
                config,
                f,
                &format!("{pbase}/wan-port"),
                &pair.wan_port,
                false,
            );
        }
        check_active_pairs(config, unit, f);
    }
}

fn check_active_pairs(config: &Config, unit: &Unit, f: &mut Findings) {
    let Some(profile) = unit
        .liveness_profile
        .as_ref()
        .and_then(|p| config.profiles.get(p))
    else {
        return;
    };
    let pairs = unit.pairs.len();
    let wanted = profile.active_pairs as usize;
    let path = format!("{}/liveness-profile", paths::unit(&unit.name));
    if wanted > pairs {
        f.error(
            path,
            format!(
                "profile {} needs {wanted} active pairs but unit {} has {pairs}; the unit could never be active",
                profile.name, unit.name
            ),
        );
    } else if wanted == pairs && pairs > 0 {
        f.warning(
            path,
            format!(
                "profile {} needs all {pairs} pairs of unit {} active: one failed pair bypasses the whole unit",
                profile.name, unit.name
            ),
        );
    }
}

/// A round is judged before the next one is sent. (Its keep-alives are timed by the chip,
/// from their departure to their return: the software path to the chip takes none of the
/// timeout.)
fn check_profiles(config: &Config, f: &mut Findings) {
    for profile in config.profiles.values() {
        let path = format!("{}/round-timeout", paths::profile(&profile.name));
        let (timeout, interval) = (profile.round_timeout_ms, profile.interval_ms);
        if timeout > interval {
            f.error(
                path,
                format!(
                    "round-timeout {timeout} ms is longer than the interval {interval} ms: a round is judged before the next is sent; use at most {interval}"
                ),
            );
        }
    }
}

/// Filter-facing ports carry the operator's largest frame plus the balancer's header.
fn check_mtu(config: &Config, f: &mut Findings) {
    let operator = config
        .links
        .values()
        .flat_map(|l| [&l.lan_port, &l.wan_port])
        .filter_map(|p| config.ports.get(p.as_str()))
        .max_by_key(|p| p.mtu);
    let Some(largest) = operator else {
        return;
    };
    let needed = largest.mtu.saturating_add(HEADER_BYTES);
    for unit in config.units.values() {
        for pair in &unit.pairs {
            for (side, port) in [("lan-port", &pair.lan_port), ("wan-port", &pair.wan_port)] {
                if let Some(p) = config.ports.get(port.as_str())
                    && p.mtu < needed
                {
                    f.warning(
                        format!("{}/{side}", paths::pair(&unit.name, &pair.name)),
                        format!(
                            "{port} has MTU {} but operator port {} has MTU {}: frames of more than {} bytes cannot reach the filter (needs {needed})",
                            p.mtu,
                            largest.name,
                            largest.mtu,
                            p.mtu - HEADER_BYTES.min(p.mtu)
                        ),
                    );
                }
            }
        }
    }
}

fn check_flows(config: &Config, scope: FlowScope<'_>, f: &mut Findings) {
    let all: Vec<&Flow> = config.flows.values().map(|v| v.as_ref()).collect();
    let named = |names: &[String]| -> Vec<&Flow> {
        names
            .iter()
            .filter_map(|n| config.flows.get(n).map(|v| v.as_ref()))
            .collect()
    };
    let (checked, written) = match scope {
        FlowScope::All => (None, None),
        FlowScope::Only { checked, written } => (Some(named(checked)), Some(named(written))),
    };
    let selected = checked.as_deref().unwrap_or(&all);
    for flow in selected {
        check_flow(config, flow, f);
        flow_sense::check_sense(flow, f);
    }
    check_overlaps(config, selected, matches!(scope, FlowScope::All), f);
    flow_sense::check_symmetry(&all, written.as_deref().unwrap_or(&all), f);
}

fn check_flow(config: &Config, flow: &Flow, f: &mut Findings) {
    let base = paths::flow(&flow.name);
    if let Action::ToUnit(unit) = &flow.action
        && config.units.get(unit).is_some_and(|u| u.pairs.is_empty())
    {
        f.error(
            format!("{base}/action/to-ecofilter/ecofilter-unit"),
            format!("unit {unit} has no pairs: there is nowhere to send the traffic"),
        );
    }
    for (leaf, range) in [
        ("src-port", flow.matches.src_port),
        ("dst-port", flow.matches.dst_port),
    ] {
        if let Some(r) = range
            && r.lo > r.hi
        {
            f.error(
                format!("{base}/match/{leaf}"),
                format!(
                    "range {}-{} is reversed; write LOW-HIGH, e.g. {}-{}",
                    r.lo, r.hi, r.hi, r.lo
                ),
            );
        }
    }
    for leaf in &flow.matches.stray_masks {
        f.error(
            format!("{base}/match/{leaf}"),
            format!(
                "{leaf} needs the address it masks ({})",
                leaf.trim_end_matches("-mask")
            ),
        );
    }
}

/// Two flows of the same priority that can match the same packet: which one wins is
/// arbitrary on the chip.
fn check_overlaps(config: &Config, selected: &[&Flow], all: bool, f: &mut Findings) {
    let mut groups: HashMap<u32, Vec<&Flow>> = HashMap::new();
    let wanted: std::collections::HashSet<u32> = selected.iter().map(|fl| fl.priority).collect();
    for flow in config.flows.values() {
        if wanted.contains(&flow.priority) {
            groups.entry(flow.priority).or_default().push(flow);
        }
    }
    let mut found: Vec<Problem> = Vec::new();
    let mut clashes: Vec<Problem> = Vec::new();
    let mut unreported = 0usize;
    let mut priorities: Vec<&u32> = groups.keys().collect();
    priorities.sort();
    for priority in priorities {
        let group = &groups[priority];
        if group.len() > MAX_OVERLAP_GROUP {
            f.warning(
                paths::flow(&group[0].name),
                format!(
                    "{} flows share priority {priority}; overlaps among them are not checked (more than {MAX_OVERLAP_GROUP}); give flows distinct priorities",
                    group.len()
                ),
            );
            continue;
        }
        let mut report = |a: &Flow, b: &Flow| {
            if !flows_overlap(a, b) {
                return;
            }
            let (a, b) = if a.name <= b.name { (a, b) } else { (b, a) };
            if same_entries(a, b) {
                clashes.push(Problem::new(
                    paths::flow(&b.name),
                    format!(
                        "flows {} and {} have the same priority {priority}, links and match: the chip cannot hold both; change the priority of one",
                        a.name, b.name
                    ),
                ));
                return;
            }
            if found.len() < MAX_OVERLAP_WARNINGS {
                found.push(Problem::new(
                    paths::flow(&a.name),
                    format!(
                        "flows {} and {} have the same priority {priority} and can match the same packets: the chip may apply either (lookup-session assumes {}, the first name in byte order); give them distinct priorities",
                        a.name, b.name, a.name
                    ),
                ));
            } else {
                unreported += 1;
            }
        };
        if all {
            for (i, a) in group.iter().enumerate() {
                for b in &group[i + 1..] {
                    report(a, b);
                }
            }
        } else {
            let changed: Vec<&Flow> = selected
                .iter()
                .copied()
                .filter(|fl| fl.priority == *priority)
                .collect();
            for a in &changed {
                for b in group {
                    // A pair of two changed flows is reported once, from its first name.
                    let both_changed_twice =
                        changed.iter().any(|c| c.name == b.name) && b.name < a.name;
                    if a.name != b.name && !both_changed_twice {
                        report(a, b);
                    }
                }
            }
        }
    }
    found.sort_by(|x, y| (&x.path, &x.message).cmp(&(&y.path, &y.message)));
    clashes.sort_by(|x, y| (&x.path, &x.message).cmp(&(&y.path, &y.message)));
    f.warnings.extend(found);
    f.errors.extend(clashes);
    if unreported > 0 {
        f.warning(
            String::new(),
            format!("{unreported} more pairs of same-priority flows overlap"),
        );
    }
}

/// Two flows that compile to entries with the same key: a match in common (as written or
/// mirrored), and links that share a link (or both for every link).
fn same_entries(a: &Flow, b: &Flow) -> bool {
    let links =
        (a.links.is_empty() && b.links.is_empty()) || a.links.iter().any(|l| b.links.contains(l));
    links
        && a.directions()
            .iter()
            .any(|x| b.directions().iter().any(|y| x == y))
}
