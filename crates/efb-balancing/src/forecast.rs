//! What a change does to traffic, told in the shell's words before the commit: which traffic
//! goes to another destination (a unit, bypass, drop) because flows were added, removed or
//! changed, and what removing units or pairs takes away. [`crate::bucket_moves`] counts the
//! sessions that move inside a unit; operators run `commit check` to learn, beyond that,
//! which traffic goes somewhere else altogether.

use std::fmt::Display;
use std::sync::Arc;

use efb_model::protocols::PROTOCOLS;
use efb_model::regions::{covers, flows_overlap};
use efb_model::rules::reverse_elsewhere;
use efb_model::{Action, Config, Direction, Flow, FlowMatch, MacMatch, PortRange, Unit};
use efb_text_table::grouped;
use imbl::ordmap::DiffItem;

use crate::liveness::LiveState;
use crate::matching::outranks;
use crate::moves::destinations;

/// Flow changes told one by one. Each costs a pass over every flow, and a change loaded by
/// automation (thousands of flows) is read better in `show | compare` than here.
const TOLD_FLOWS: usize = 20;
/// Names listed before "and N more", so that a sentence stays about one line.
const NAMED: usize = 2;

/// One consequence of a change, told in the shell's words, one sentence: flows added,
/// removed or changed first (the first few by name, then how many more), then units
/// removed, then pairs removed from or added to units that stay.
pub fn flow_consequences(before: &Config, after: &Config) -> Vec<String> {
    let mut out = flows(before, after);
    out.extend(removed_units(before, after));
    out.extend(pair_changes(before, after));
    out
}

// ---- Flows -------------------------------------------------------------------------------

enum Change<'a> {
    Added(&'a Flow),
    Removed(&'a Flow),
    Changed(&'a Flow, &'a Flow),
}

fn flows(before: &Config, after: &Config) -> Vec<String> {
    let changes = flow_changes(before, after);
    let mut out: Vec<String> = changes
        .iter()
        .take(TOLD_FLOWS)
        .flat_map(|c| match c {
            Change::Added(f) => added(before, after, f).into_iter().collect(),
            Change::Removed(f) => removed(before, after, f).into_iter().collect(),
            Change::Changed(old, new) => changed(before, after, old, new),
        })
        .collect();
    out.extend(split(after, &changes));
    let untold = changes.len().saturating_sub(TOLD_FLOWS);
    if untold > 0 {
        out.push(format!(
            "{} more flow{} added, removed or changed: their consequences are not told one by one",
            grouped(untold),
            if untold == 1 { "" } else { "s" }
        ));
    }
    out
}

/// Flows added, removed or changed, by name. The maps' diff skips what both versions of
/// the configuration share, so a one-flow change of 100 000 flows reads a few nodes.
fn flow_changes<'a>(before: &'a Config, after: &'a Config) -> Vec<Change<'a>> {
    before
        .flows
        .diff(&after.flows)
        .filter_map(|item| match item {
            DiffItem::Add(_, new) => Some(Change::Added(new)),
            DiffItem::Remove(_, old) => Some(Change::Removed(old)),
            DiffItem::Update {
                old: (_, old),
                new: (_, new),
            } => differs(old, new).then(|| Change::Changed(old, new)),
        })
        .collect()
}

/// What decides where traffic goes; a description is not a consequence. Most flows of a
/// large configuration are shared with the last one, hence the pointer test first.
fn differs(old: &Arc<Flow>, new: &Arc<Flow>) -> bool {
    !Arc::ptr_eq(old, new)
        && (old.priority != new.priority
            || sorted_links(old) != sorted_links(new)
            || old.matches != new.matches
            || old.direction != new.direction
            || old.action != new.action)
}

fn sorted_links(flow: &Flow) -> Vec<&str> {
    let mut links: Vec<&str> = flow.links.iter().map(String::as_str).collect();
    links.sort_unstable();
    links
}

fn added(before: &Config, after: &Config, flow: &Flow) -> Option<String> {
    let except = above(after, flow);
    if shadowed(&except, flow) {
        return None;
    }
    let head = format!("flow {} added ({})", flow.name, describe(flow));
    let from = fallback(before, flow, None);
    taken(&head, "that traffic", &except, &flow.action, from)
}

fn removed(before: &Config, after: &Config, flow: &Flow) -> Option<String> {
    let except = above(before, flow);
    if shadowed(&except, flow) {
        return None;
    }
    let head = format!("flow {} removed ({})", flow.name, describe(flow));
    let to = fallback(after, flow, None);
    given(&head, "that traffic", &except, &flow.action, to)
}

/// A changed flow is at most three consequences: traffic it keeps under another action,
/// traffic it now takes from other flows, traffic it leaves to them.
fn changed(before: &Config, after: &Config, old: &Flow, new: &Flow) -> Vec<String> {
    let words = differences(old, new);
    let head = if words.is_empty() {
        format!("flow {} changed", new.name)
    } else {
        format!("flow {} changed ({})", new.name, words.join(", "))
    };
    let (new_above, old_above) = (above(after, new), above(before, old));
    let (takes, gives) = (!shadowed(&new_above, new), !shadowed(&old_above, old));
    let mut out = Vec::new();
    if takes && gives && old.action != new.action && flows_overlap(old, new) {
        let what = if words.is_empty() {
            "its traffic now"
        } else {
            "traffic it still matches now"
        };
        let from = Ways::single(&old.action);
        out.extend(taken(&head, what, &new_above, &new.action, from));
    }
    if takes {
        let from = fallback(before, new, Some(old));
        out.extend(taken(
            &head,
            "newly matched traffic",
            &new_above,
            &new.action,
            from,
        ));
    }
    if gives {
        let to = fallback(after, old, Some(new));
        out.extend(given(
            &head,
            "traffic no longer matched",
            &old_above,
            &old.action,
            to,
        ));
    }
    out
}

/// Flows added or changed (of those told) whose sessions the change leaves split: their
/// traffic goes one way and the reverse another, so a filter sees one direction of them.
/// One is told where its reverse goes; several are named.
fn split(after: &Config, changes: &[Change<'_>]) -> Option<String> {
    let told: Vec<&Flow> = changes
        .iter()
        .take(TOLD_FLOWS)
        .filter_map(|c| match c {
            Change::Added(f) | Change::Changed(_, f) => Some(*f),
            Change::Removed(_) => None,
        })
        .collect();
    if told.is_empty() {
        return None;
    }
    let flows: Vec<&Flow> = after.flows.values().map(Arc::as_ref).collect();
    let split: Vec<(&str, String)> = told
        .into_iter()
        .filter_map(|f| reverse_elsewhere(&flows, f).map(|goes| (f.name.as_str(), goes)))
        .collect();
    match split.as_slice() {
        [] => None,
        [(name, goes)] => Some(format!(
            "sessions of flow {name} are split: {goes} (`direction both` keeps them together)"
        )),
        many => {
            let names: Vec<&str> = many.iter().map(|(n, _)| *n).collect();
            Some(format!(
                "sessions of {} are split: their reverse goes elsewhere (the warnings say \
                 where; `direction both` keeps them together)",
                flow_names(&names)
            ))
        }
    }
}

// ---- Which flows share traffic -------------------------------------------------------------

/// The flows of `config` that outrank `flow` where they overlap it, best first: they keep
/// that traffic whatever `flow` does.
fn above<'a>(config: &'a Config, flow: &Flow) -> Vec<&'a Flow> {
    let mut found: Vec<&Flow> = config
        .flows
        .values()
        .map(Arc::as_ref)
        .filter(|g| g.name != flow.name && outranks(g, flow) && flows_overlap(flow, g))
        .collect();
    found.sort_by(|a, b| b.rank().cmp(&a.rank()));
    found
}

/// A flow wholly under a better one never gets a packet, so changing it changes nothing.
fn shadowed(above: &[&Flow], flow: &Flow) -> bool {
    above.iter().any(|h| covers(h, flow))
}

/// Where the traffic `flow` matches goes in `config` when `flow` does not take it: the
/// overlapping flows it outranks, best first, down to the first that takes all of it, else
/// bypass. `kept` is the flow's other version: traffic that was (or stays) the flow's own
/// below it did not come from, nor goes to, anywhere else.
fn fallback<'a>(config: &'a Config, flow: &Flow, kept: Option<&Flow>) -> Ways<'a> {
    let inside = kept.is_some_and(|k| covers(k, flow));
    let mut lower: Vec<&Flow> = config
        .flows
        .values()
        .map(Arc::as_ref)
        .filter(|g| g.name != flow.name && outranks(flow, g))
        .filter(|g| !(inside && kept.is_some_and(|k| outranks(k, g))))
        .filter(|g| flows_overlap(flow, g))
        .collect();
    lower.sort_by(|a, b| b.rank().cmp(&a.rank()));
    let mut ways = Ways::default();
    for g in lower {
        ways.add(&g.action, &g.name);
        if covers(g, flow) {
            return ways;
        }
    }
    ways.unmatched = !inside;
    ways
}

// ---- Destinations --------------------------------------------------------------------------

/// Where some traffic goes, by destination in the order first met, with the flows that send
/// it there; `unmatched` when part of it meets no flow at all (so is bypassed).
#[derive(Default)]
struct Ways<'a> {
    groups: Vec<(&'a Action, Vec<&'a str>)>,
    unmatched: bool,
}

impl<'a> Ways<'a> {
    fn single(action: &'a Action) -> Ways<'a> {
        Ways {
            groups: vec![(action, Vec::new())],
            unmatched: false,
        }
    }

    fn add(&mut self, action: &'a Action, flow: &'a str) {
        match self.groups.iter_mut().find(|(a, _)| *a == action) {
            Some((_, flows)) => flows.push(flow),
            None => self.groups.push((action, vec![flow])),
        }
    }

    /// Traffic already going to `action` does not change destination.
    fn without(mut self, action: &Action) -> Ways<'a> {
        self.groups.retain(|(a, _)| *a != action);
        self.unmatched &= *action != Action::Bypass;
        self
    }

    fn actions(&self) -> Vec<&Action> {
        let mut out: Vec<&Action> = self.groups.iter().map(|(a, _)| *a).collect();
        if self.unmatched && !out.contains(&&Action::Bypass) {
            out.push(&Action::Bypass);
        }
        out
    }

    fn is_empty(&self) -> bool {
        self.groups.is_empty() && !self.unmatched
    }

    /// `unit ef1 (flow web) or bypass (flow rest or no flow)`.
    fn render(&self) -> String {
        let mut parts: Vec<String> = self.groups.iter().map(|g| self.group(g)).collect();
        if self.unmatched && !self.groups.iter().any(|(a, _)| **a == Action::Bypass) {
            parts.push("bypass".into());
        }
        parts.join(" or ")
    }

    fn group(&self, (action, flows): &(&Action, Vec<&str>)) -> String {
        let mut names = Vec::new();
        if !flows.is_empty() {
            names.push(flow_names(flows));
        }
        if self.unmatched && **action == Action::Bypass {
            names.push("no flow".into());
        }
        if names.is_empty() {
            destination(action)
        } else {
            format!("{} ({})", destination(action), names.join(" or "))
        }
    }
}

fn destination(action: &Action) -> String {
    match action {
        Action::Bypass => "bypass".into(),
        Action::Drop => "drop".into(),
        Action::ToUnit(unit) => format!("unit {unit}"),
    }
}

/// Traffic a flow takes: it now goes to `to`, and went where `from` says.
fn taken(head: &str, what: &str, except: &[&Flow], to: &Action, from: Ways) -> Option<String> {
    let from = from.without(to);
    if from.is_empty() {
        return None;
    }
    let turns: Vec<(&Action, &Action)> = from.actions().into_iter().map(|a| (a, to)).collect();
    Some(sentence(
        head,
        what,
        except,
        &destination(to),
        &from.render(),
        &turns,
    ))
}

/// Traffic a flow gives up: it went to `from`, and now goes where `to` says.
fn given(head: &str, what: &str, except: &[&Flow], from: &Action, to: Ways) -> Option<String> {
    let to = to.without(from);
    if to.is_empty() {
        return None;
    }
    let turns: Vec<(&Action, &Action)> = to.actions().into_iter().map(|a| (from, a)).collect();
    Some(sentence(
        head,
        what,
        except,
        &to.render(),
        &destination(from),
        &turns,
    ))
}

fn sentence(
    head: &str,
    what: &str,
    except: &[&Flow],
    to: &str,
    instead_of: &str,
    turns: &[(&Action, &Action)],
) -> String {
    format!(
        "{head}: {what} goes to {to} instead of {instead_of}{}; its sessions {}",
        exceptions(except),
        sessions(turns)
    )
}

/// `, except where flow bgp (priority 300) matches`: those packets stay where they are.
fn exceptions(except: &[&Flow]) -> String {
    let Some(first) = except.first() else {
        return String::new();
    };
    let named: Vec<String> = except
        .iter()
        .take(NAMED)
        .map(|f| format!("{} (priority {})", f.name, f.priority))
        .collect();
    let more = more(except.len(), NAMED);
    if except.len() == 1 {
        format!(
            ", except where flow {} (priority {}) matches",
            first.name, first.priority
        )
    } else {
        format!(", except where flows {}{more} match", named.join(", "))
    }
}

/// What a change of destination does to the sessions flowing now, each said once.
fn sessions(turns: &[(&Action, &Action)]) -> String {
    let says = |(old, new): &(&Action, &Action)| match (old, new) {
        (_, Action::ToUnit(_)) => 0,
        (Action::ToUnit(_), Action::Bypass) => 1,
        (_, Action::Drop) => 2,
        _ => 3,
    };
    const WORDS: [&str; 4] = [
        "meet filter cores that have not seen them",
        "lose filtering",
        "are dropped",
        "are no longer dropped",
    ];
    let mut kinds: Vec<usize> = turns.iter().map(says).collect();
    kinds.sort_unstable();
    kinds.dedup();
    let words: Vec<&str> = kinds
        .iter()
        .filter_map(|k| WORDS.get(*k).copied())
        .collect();
    words.join(" or ")
}

// ---- Flows in words --------------------------------------------------------------------------

/// `priority 200, udp dst-port 53, every link`.
fn describe(flow: &Flow) -> String {
    let criteria: Vec<String> = leaves(&flow.matches)
        .into_iter()
        .filter_map(|(leaf, value)| {
            let value = value?;
            // The shell takes `udp` for `ip-proto 17`; a bare name reads as it is typed.
            Some(if leaf == "ip-proto" && is_protocol_name(&value) {
                value
            } else {
                format!("{leaf} {value}")
            })
        })
        .collect();
    let mut criteria = if criteria.is_empty() {
        "all traffic".to_string()
    } else {
        criteria.join(" ")
    };
    if flow.direction == Direction::Both && !flow.matches.is_symmetric() {
        criteria.push_str(" (both directions)");
    }
    format!(
        "priority {}, {criteria}, {}",
        flow.priority,
        links(flow, true)
    )
}

/// `priority 100 -> 300`, `links every link -> l1`, `dst-port 53 -> 53-54`.
fn differences(old: &Flow, new: &Flow) -> Vec<String> {
    let mut out = Vec::new();
    if old.priority != new.priority {
        out.push(format!("priority {} -> {}", old.priority, new.priority));
    }
    if sorted_links(old) != sorted_links(new) {
        out.push(format!(
            "links {} -> {}",
            links(old, false),
            links(new, false)
        ));
    }
    if old.direction != new.direction {
        out.push(format!(
            "direction {} -> {}",
            direction_word(old.direction),
            direction_word(new.direction)
        ));
    }
    let pairs = leaves(&old.matches).into_iter().zip(leaves(&new.matches));
    for ((leaf, was), (_, will)) in pairs.filter(|((_, a), (_, b))| a != b) {
        let any = || "any".to_string();
        out.push(format!(
            "{leaf} {} -> {}",
            was.unwrap_or_else(any),
            will.unwrap_or_else(any)
        ));
    }
    out
}

fn direction_word(direction: Direction) -> &'static str {
    match direction {
        Direction::AsWritten => "as-written",
        Direction::Both => "both",
    }
}

/// `every link`, `link l1`, `links l1, l2` (`l1, l2` without the leading word).
fn links(flow: &Flow, word: bool) -> String {
    let names = sorted_links(flow);
    let list = format!(
        "{}{}",
        names.iter().take(3).copied().collect::<Vec<_>>().join(", "),
        more(names.len(), 3)
    );
    match (names.len(), word) {
        (0, _) => "every link".into(),
        (_, false) => list,
        (1, true) => format!("link {list}"),
        _ => format!("links {list}"),
    }
}

/// A match's criteria under their YANG leaf names, in the model's order; `None` when absent.
fn leaves(m: &FlowMatch) -> [(&'static str, Option<String>); 17] {
    [
        ("vlan0-tag", shown(&m.vlan_tags[0])),
        ("vlan1-tag", shown(&m.vlan_tags[1])),
        ("vlan2-tag", shown(&m.vlan_tags[2])),
        ("vlan-depth", shown(&m.vlan_depth)),
        ("mpls-depth", shown(&m.mpls_depth)),
        ("src-ipv4", shown(&m.src_ipv4)),
        ("dst-ipv4", shown(&m.dst_ipv4)),
        ("src-ipv6", shown(&m.src_ipv6)),
        ("dst-ipv6", shown(&m.dst_ipv6)),
        ("ip-proto", m.ip_proto.map(protocol)),
        ("src-port", m.src_port.map(port_range)),
        ("dst-port", m.dst_port.map(port_range)),
        ("src-mac", m.src_mac.map(mac)),
        ("dst-mac", m.dst_mac.map(mac)),
        ("packet-type", shown(&m.packet_type)),
        ("llc-dsap", shown(&m.llc_dsap)),
        ("llc-ssap", shown(&m.llc_ssap)),
    ]
}

fn shown<T: Display>(value: &Option<T>) -> Option<String> {
    value.as_ref().map(T::to_string)
}

fn protocol(number: u8) -> String {
    PROTOCOLS
        .iter()
        .find(|(_, n, _)| *n == number)
        .map_or_else(|| number.to_string(), |(name, _, _)| (*name).to_string())
}

fn is_protocol_name(word: &str) -> bool {
    PROTOCOLS.iter().any(|(name, _, _)| *name == word)
}

fn port_range(range: PortRange) -> String {
    if range.lo == range.hi {
        range.lo.to_string()
    } else {
        format!("{}-{}", range.lo, range.hi)
    }
}

/// `00:11:22:33:44:55`, with `/mask` when not every bit is compared.
fn mac(m: MacMatch) -> String {
    let hex = |bytes: [u8; 6]| {
        let parts: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
        parts.join(":")
    };
    if m.mask == [0xff; 6] {
        hex(m.addr)
    } else {
        format!("{}/{}", hex(m.addr), hex(m.mask))
    }
}

// ---- Units and pairs ---------------------------------------------------------------------

fn removed_units(before: &Config, after: &Config) -> Vec<String> {
    before
        .units
        .values()
        .filter(|u| !after.units.contains_key(&u.name))
        .map(|u| removed_unit(before, u))
        .collect()
}

/// The flows that fed the unit had to go or change with it; the flow sentences say where
/// their traffic goes, this one only names them.
fn removed_unit(before: &Config, unit: &Unit) -> String {
    let buckets = destinations(unit, &LiveState::all_up()).len();
    let mut out = format!(
        "unit {} removed: its {} and {} are gone",
        unit.name,
        counted(unit.pairs.len(), "pair"),
        counted(buckets, "bucket")
    );
    let senders: Vec<&str> = before
        .flows
        .values()
        .filter(|f| matches!(&f.action, Action::ToUnit(u) if *u == unit.name))
        .map(|f| f.name.as_str())
        .collect();
    if !senders.is_empty() {
        out.push_str(&format!("; {} sent traffic to it", flow_names(&senders)));
    }
    out
}

fn pair_changes(before: &Config, after: &Config) -> Vec<String> {
    after
        .units
        .values()
        .filter_map(|new| Some((before.units.get(&new.name)?, new)))
        .flat_map(|(old, new)| unit_pairs(old, new))
        .collect()
}

/// Pairs removed from or added to a unit that stays, with the share of buckets each one
/// gave up or takes (with every pair live: the forecast cannot know tomorrow's liveness).
fn unit_pairs(old: &Unit, new: &Unit) -> Vec<String> {
    let has = |unit: &Unit, name: &str| unit.pairs.iter().any(|p| p.name == name);
    let gone: Vec<&str> = names(old).filter(|p| !has(new, p)).collect();
    let came: Vec<&str> = names(new).filter(|p| !has(old, p)).collect();
    let live = LiveState::all_up();
    let mut out = Vec::new();
    // A bucket table holds up to 65 536 entries: made only for units whose pairs changed.
    if !gone.is_empty() {
        let table = destinations(old, &live);
        let to = if new.pairs.is_empty() {
            "no pair is left to take them"
        } else {
            "go to the other pairs"
        };
        for pair in gone {
            let share = share(&table, pair);
            out.push(format!(
                "unit {}: pair {pair} removed; its {share} {to}",
                new.name
            ));
        }
    }
    if !came.is_empty() {
        let table = destinations(new, &live);
        let from = if old.pairs.is_empty() {
            ""
        } else {
            " from the other pairs"
        };
        for pair in came {
            let share = share(&table, pair);
            out.push(format!(
                "unit {}: pair {pair} added; it takes {share}{from}",
                new.name
            ));
        }
    }
    out
}

fn names(unit: &Unit) -> impl Iterator<Item = &str> {
    unit.pairs.iter().map(|p| p.name.as_str())
}

/// `256 of 1 024 buckets (25 %)`: the buckets of the table that send to `pair`.
fn share(table: &[Option<(String, u16)>], pair: &str) -> String {
    let mine = table
        .iter()
        .filter(|d| d.as_ref().is_some_and(|(p, _)| p == pair))
        .count();
    let percent = match (mine * 100).checked_div(table.len()) {
        Some(0) if mine > 0 => 1,
        Some(p) => p,
        None => 0,
    };
    format!(
        "{} of {} buckets ({percent} %)",
        grouped(mine),
        grouped(table.len())
    )
}

// ---- Words ---------------------------------------------------------------------------------

/// `flow dns`, `flows dns, web`, `flows a, b and 3 more`.
fn flow_names(names: &[&str]) -> String {
    let listed: Vec<&str> = names.iter().take(NAMED).copied().collect();
    let word = if names.len() == 1 { "flow" } else { "flows" };
    format!("{word} {}{}", listed.join(", "), more(names.len(), NAMED))
}

fn more(total: usize, listed: usize) -> String {
    match total.saturating_sub(listed) {
        0 => String::new(),
        n => format!(" and {n} more"),
    }
}

/// `1 pair`, `1 024 buckets`.
fn counted(n: usize, noun: &str) -> String {
    format!("{} {noun}{}", grouped(n), if n == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests;
