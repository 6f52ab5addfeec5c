//! The compiler: a configuration (and the liveness and bypass modes of its units) in, the
//! complete set of table entries for `p4/efb.p4` out, deterministic, each entry with the
//! configuration path it came from.
//!
//! Entries are compiled in groups (the balancing method, each link, each unit with its
//! pairs, each flow). A group whose inputs did not change is taken from the previous
//! compilation as it is, so a commit that touches one flow of 100 000 compiles one flow.

use std::collections::BTreeMap;
use std::sync::Arc;

use imbl::ordmap::DiffItem;

use efb_balancing::{BypassMode, LiveState, UnitLayout, bucket_table, unit_active};
use efb_model::{Action, BalancingMethod, Config, Flow, FlowMatch, MacMatch, Prefix, paths};
use efb_p4info::names::{actions as a, fields as f, tables as t};
use efb_p4info::{P4InfoIndex, PortMap, PortName};
use p4runtime_proto::p4::v1 as p4;

use crate::entry::{Builder, Criterion, EntryError, EntryKey};
use crate::ids::{Exhausted, Ids};

/// One entry the chip should hold, and where in the configuration it comes from.
#[derive(Clone, Debug, PartialEq)]
pub struct Desired {
    pub entry: p4::TableEntry,
    pub source: String,
}

/// What compiles together.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Group {
    Balancing,
    Link(String),
    /// A unit's status and its pairs (what liveness changes).
    Unit(String),
    /// A unit's bucket table (changed by liveness only with `rebalance`).
    Buckets(String),
    Flow(String),
}

#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    #[error(transparent)]
    Entry(#[from] EntryError),
    #[error(transparent)]
    Ids(#[from] Exhausted),
    #[error("{path}: port {port}: {message}")]
    Port {
        path: String,
        port: String,
        message: String,
    },
}

/// What a group was compiled from: equal inputs give equal entries.
#[derive(Clone, Debug, PartialEq)]
enum Inputs {
    Balancing(BalancingMethod),
    Link {
        link: efb_model::Link,
        id: u32,
        ports: (u32, u32),
    },
    Unit(Box<UnitInputs>),
    Buckets(Box<BucketInputs>),
    Flow {
        flow: Arc<Flow>,
        links: Vec<u32>,
        unit: Option<u32>,
    },
}

/// What a bucket table depends on: liveness only with `rebalance`.
#[derive(Clone, Debug, PartialEq)]
struct BucketInputs {
    unit: efb_model::Unit,
    id: u32,
    pair_ids: Vec<u32>,
    /// Which pairs take traffic, when the table follows it (`rebalance`).
    live: Option<Vec<bool>>,
}

#[derive(Clone, Debug, PartialEq)]
struct UnitInputs {
    unit: efb_model::Unit,
    id: u32,
    pairs: Vec<(u32, u32, u32)>,
    live: Vec<bool>,
    mode: BypassMode,
    active_pairs: Option<u16>,
}

/// A compiled group: its inputs and its entries.
#[derive(Clone, Debug)]
struct Compiled1 {
    inputs: Inputs,
    entries: Arc<Vec<Desired>>,
}

/// Two groups are the same when they hold the very same entries (a group left alone by a
/// compilation shares them); this is what lets [`Compiled::changed_groups`] skip the rest.
impl PartialEq for Compiled1 {
    fn eq(&self, other: &Compiled1) -> bool {
        Arc::ptr_eq(&self.entries, &other.entries)
    }
}

/// A compiled configuration. Groups live in a persistent map: a compilation that changes
/// one flow shares every other group with the previous one, and comparing the two visits
/// only what differs.
#[derive(Clone, Debug, Default)]
pub struct Compiled {
    pub ids: Ids,
    groups: imbl::OrdMap<Group, Compiled1>,
    /// The flows compiled, as the configuration held them (to find the ones that changed).
    flows: imbl::OrdMap<String, Arc<Flow>>,
}

impl Compiled {
    /// Nothing compiled yet, with the ids a previous run allocated.
    pub fn with_ids(ids: Ids) -> Compiled {
        Compiled {
            ids,
            ..Compiled::default()
        }
    }

    pub fn groups(&self) -> impl Iterator<Item = (&Group, &Arc<Vec<Desired>>)> {
        self.groups.iter().map(|(g, c)| (g, &c.entries))
    }

    /// Entries of one group (empty when the group does not exist).
    pub fn group(&self, group: &Group) -> &[Desired] {
        self.groups
            .get(group)
            .map(|c| c.entries.as_slice())
            .unwrap_or(&[])
    }

    /// Every entry by key.
    pub fn by_key(&self) -> BTreeMap<EntryKey, &Desired> {
        self.groups
            .values()
            .flat_map(|c| c.entries.iter())
            .map(|d| (EntryKey::of(&d.entry), d))
            .collect()
    }

    pub fn len(&self) -> usize {
        self.groups.values().map(|c| c.entries.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.groups.values().all(|c| c.entries.is_empty())
    }

    /// The groups whose entries differ between `self` and `next`: their entries here and
    /// there (empty where the group does not exist). Shared groups are not visited.
    pub fn changed_groups<'a>(
        &'a self,
        next: &'a Compiled,
    ) -> impl Iterator<Item = (&'a [Desired], &'a [Desired])> {
        self.groups.diff(&next.groups).map(|item| match item {
            DiffItem::Add(_, new) => (&[][..], new.entries.as_slice()),
            DiffItem::Remove(_, old) => (old.entries.as_slice(), &[][..]),
            DiffItem::Update { old, new } => (old.1.entries.as_slice(), new.1.entries.as_slice()),
        })
    }
}

/// The compiler for one P4Info and one platform.
pub struct Compiler {
    pub index: P4InfoIndex,
    pub ports: PortMap,
}

impl Compiler {
    /// Compiles `config`, reusing the groups of `previous` whose inputs did not change.
    /// When the ids are those of `previous`, only the flows that differ from the ones it
    /// compiled are looked at: one changed flow of 100 000 costs one flow.
    pub fn compile(
        &self,
        config: &Config,
        live: &LiveState,
        previous: &Compiled,
    ) -> Result<Compiled, CompileError> {
        let ids = previous.ids.assign(config)?;
        let builder = Builder { index: &self.index };
        let mut groups = previous.groups.clone();
        let mut put = |group: Group, inputs: Inputs| -> Result<(), CompileError> {
            if let Some(old) = groups.get(&group)
                && same_inputs(&old.inputs, &inputs)
            {
                return Ok(());
            }
            let entries = Arc::new(compile_group(&builder, &group, &inputs)?);
            groups.insert(group, Compiled1 { inputs, entries });
            Ok(())
        };
        put(Group::Balancing, Inputs::Balancing(config.balancing_method))?;
        for link in config.links.values() {
            let ports = (
                self.device_port(config, &paths::link(&link.name), &link.lan_port)?,
                self.device_port(config, &paths::link(&link.name), &link.wan_port)?,
            );
            let id = ids.link(&link.name).unwrap_or(0);
            put(
                Group::Link(link.name.clone()),
                Inputs::Link {
                    link: link.clone(),
                    id,
                    ports,
                },
            )?;
        }
        for unit in config.units.values() {
            let inputs = self.unit_inputs(config, unit, &ids, live)?;
            put(
                Group::Buckets(unit.name.clone()),
                Inputs::Buckets(Box::new(inputs.buckets())),
            )?;
            put(
                Group::Unit(unit.name.clone()),
                Inputs::Unit(Box::new(inputs)),
            )?;
        }
        let flow_inputs = |flow: &Arc<Flow>| Inputs::Flow {
            flow: flow.clone(),
            links: flow.links.iter().filter_map(|l| ids.link(l)).collect(),
            unit: match &flow.action {
                Action::ToUnit(u) => ids.unit(u),
                _ => None,
            },
        };
        // A flow's entries depend on the flow and on link and unit ids: with the ids
        // unchanged, the flows that did not change keep their entries.
        let incremental = ids == previous.ids;
        let mut gone: Vec<Group> = Vec::new();
        let changed: Vec<Arc<Flow>> = if incremental {
            let mut changed = Vec::new();
            for item in previous.flows.diff(&config.flows) {
                match item {
                    DiffItem::Add(_, flow) | DiffItem::Update { new: (_, flow), .. } => {
                        changed.push(flow.clone());
                    }
                    DiffItem::Remove(name, _) => gone.push(Group::Flow(name.clone())),
                }
            }
            changed
        } else {
            config.flows.values().cloned().collect()
        };
        for flow in &changed {
            put(Group::Flow(flow.name.clone()), flow_inputs(flow))?;
        }
        // Groups of what is gone (flows are last in the map's order).
        gone.extend(
            groups
                .keys()
                .take_while(|group| !incremental || !matches!(group, Group::Flow(_)))
                .filter(|group| match group {
                    Group::Balancing => false,
                    Group::Link(name) => !config.links.contains_key(name),
                    Group::Unit(name) | Group::Buckets(name) => !config.units.contains_key(name),
                    Group::Flow(name) => !config.flows.contains_key(name),
                })
                .cloned(),
        );
        for group in gone {
            groups.remove(&group);
        }
        Ok(Compiled {
            ids,
            groups,
            flows: config.flows.clone(),
        })
    }

    fn device_port(&self, config: &Config, path: &str, port: &str) -> Result<u32, CompileError> {
        let fail = |message: String| CompileError::Port {
            path: path.to_string(),
            port: port.to_string(),
            message,
        };
        let p = config
            .ports
            .get(port)
            .ok_or_else(|| fail("not configured".into()))?;
        let name = PortName {
            port: u32::from(p.number),
            lane: p.lane.map(u32::from),
        };
        self.ports
            .device_port(name)
            .map_err(|e| fail(e.to_string()))
    }

    fn unit_inputs(
        &self,
        config: &Config,
        unit: &efb_model::Unit,
        ids: &Ids,
        live: &LiveState,
    ) -> Result<UnitInputs, CompileError> {
        let mut pairs = Vec::with_capacity(unit.pairs.len());
        for pair in &unit.pairs {
            let path = paths::pair(&unit.name, &pair.name);
            pairs.push((
                ids.pair(&unit.name, &pair.name).unwrap_or(0),
                self.device_port(config, &path, &pair.lan_port)?,
                self.device_port(config, &path, &pair.wan_port)?,
            ));
        }
        Ok(UnitInputs {
            unit: unit.clone(),
            id: ids.unit(&unit.name).unwrap_or(0),
            pairs,
            live: unit
                .pairs
                .iter()
                .map(|p| live.is_pair_up(&unit.name, &p.name))
                .collect(),
            mode: live.mode(&unit.name),
            active_pairs: unit
                .liveness_profile
                .as_ref()
                .and_then(|p| config.profiles.get(p))
                .map(|p| p.active_pairs),
        })
    }
}

fn same_inputs(old: &Inputs, new: &Inputs) -> bool {
    match (old, new) {
        // A flow unchanged by a commit is the very same shared value: no need to compare it.
        (
            Inputs::Flow {
                flow: a,
                links: la,
                unit: ua,
            },
            Inputs::Flow {
                flow: b,
                links: lb,
                unit: ub,
            },
        ) => (Arc::ptr_eq(a, b) || a == b) && la == lb && ua == ub,
        _ => old == new,
    }
}

fn compile_group(
    b: &Builder,
    group: &Group,
    inputs: &Inputs,
) -> Result<Vec<Desired>, CompileError> {
    match (group, inputs) {
        (_, Inputs::Balancing(method)) => balancing(b, *method),
        (Group::Link(name), Inputs::Link { id, ports, .. }) => link(b, name, *id, *ports),
        (_, Inputs::Unit(u)) => unit(b, u),
        (_, Inputs::Buckets(u)) => buckets(b, u),
        (
            _,
            Inputs::Flow {
                flow: f,
                links,
                unit,
            },
        ) => flow(b, f, links, *unit),
        _ => Ok(Vec::new()),
    }
}

fn balancing(b: &Builder, method: BalancingMethod) -> Result<Vec<Desired>, CompileError> {
    let action = match method {
        BalancingMethod::Layer3 => a::HASH_LAYER3,
        BalancingMethod::Layer4 => a::HASH_LAYER4,
        BalancingMethod::DstIp => a::HASH_DST_IP,
    };
    Ok(vec![Desired {
        entry: b.default_entry(t::BALANCING, action, &[])?,
        source: paths::method(),
    }])
}

fn link(
    b: &Builder,
    name: &str,
    id: u32,
    (lan, wan): (u32, u32),
) -> Result<Vec<Desired>, CompileError> {
    let source = paths::link(name);
    let id = u128::from(id);
    let desired = |entry| Desired {
        entry,
        source: source.clone(),
    };
    Ok(vec![
        desired(b.entry(
            t::INGRESS_PORT,
            &[(f::INGRESS_PORT, Criterion::Exact(lan.into()))],
            0,
            a::FROM_LINK_LAN,
            &[(f::LINK_ID, id)],
        )?),
        desired(b.entry(
            t::INGRESS_PORT,
            &[(f::INGRESS_PORT, Criterion::Exact(wan.into()))],
            0,
            a::FROM_LINK_WAN,
            &[(f::LINK_ID, id)],
        )?),
        desired(b.entry(
            t::LINK_PORTS,
            &[(f::LINK_ID, Criterion::Exact(id))],
            0,
            a::SET_LINK_PORTS,
            &[(f::LAN_PORT, lan.into()), (f::WAN_PORT, wan.into())],
        )?),
    ])
}

impl UnitInputs {
    /// Which pairs take traffic: all of them when the operator forces `primary`.
    fn effective_live(&self) -> Vec<bool> {
        match self.mode {
            BypassMode::Primary => vec![true; self.pairs.len()],
            _ => self.live.clone(),
        }
    }

    fn buckets(&self) -> BucketInputs {
        BucketInputs {
            unit: self.unit.clone(),
            id: self.id,
            pair_ids: self.pairs.iter().map(|(id, _, _)| *id).collect(),
            live: self.unit.rebalance.then(|| self.effective_live()),
        }
    }
}

/// A unit's bucket table. With `rebalance` off it never changes with liveness: a dead
/// pair's `pair_down` entry bypasses its buckets (one write). With `rebalance` on, only the
/// dead pair's buckets move (MODEL.md), and a bucket with nowhere to go keeps its home
/// slot, which the pair's `pair_down` bypasses.
fn buckets(b: &Builder, u: &BucketInputs) -> Result<Vec<Desired>, CompileError> {
    let layout = UnitLayout::of(&u.unit);
    if layout.slots() == 0 {
        return Ok(Vec::new());
    }
    let uid = u128::from(u.id);
    let source = paths::unit(&u.unit.name);
    let table = match &u.live {
        Some(live) => bucket_table(layout, live, true),
        None => bucket_table(layout, &vec![true; u.pair_ids.len()], false),
    };
    let mut out = Vec::with_capacity(table.len());
    for (bucket, slot) in table.into_iter().enumerate() {
        let slot = slot.unwrap_or(bucket % layout.slots());
        let (pair_index, core) = layout.pair_core(slot);
        let Some(pair_id) = u.pair_ids.get(pair_index) else {
            continue;
        };
        out.push(Desired {
            entry: b.entry(
                t::BUCKETS,
                &[
                    (f::UNIT_ID, Criterion::Exact(uid)),
                    (f::BUCKET, Criterion::Exact(bucket as u128)),
                ],
                0,
                a::TO_PAIR,
                &[
                    (f::PAIR_ID, u128::from(*pair_id)),
                    (f::CORE, u128::from(core)),
                ],
            )?,
            source: source.clone(),
        });
    }
    Ok(out)
}

/// A unit: its status, its pairs and their ports.
fn unit(b: &Builder, u: &UnitInputs) -> Result<Vec<Desired>, CompileError> {
    let name = &u.unit.name;
    let uid = u128::from(u.id);
    let live = u.effective_live();
    let live_count = live.iter().filter(|l| **l).count();
    let active = unit_active(u.mode, live_count, u.active_pairs);
    let layout = UnitLayout::of(&u.unit);
    let source = paths::unit(name);
    let mut out = Vec::new();
    let unit_entry = if active {
        b.entry(
            t::UNITS,
            &[(f::UNIT_ID, Criterion::Exact(uid))],
            0,
            a::UNIT_ACTIVE,
            &[(f::BUCKET_MASK, (layout.buckets() - 1) as u128)],
        )?
    } else {
        b.entry(
            t::UNITS,
            &[(f::UNIT_ID, Criterion::Exact(uid))],
            0,
            a::UNIT_BYPASS,
            &[],
        )?
    };
    out.push(Desired {
        entry: unit_entry,
        source,
    });
    for (i, (pair, (pid, lan, wan))) in u.unit.pairs.iter().zip(&u.pairs).enumerate() {
        let source = paths::pair(name, &pair.name);
        let pid = u128::from(*pid);
        let status = if live.get(i).copied().unwrap_or(false) {
            b.entry(
                t::PAIRS,
                &[(f::PAIR_ID, Criterion::Exact(pid))],
                0,
                a::PAIR_UP,
                &[(f::LAN_PORT, (*lan).into()), (f::WAN_PORT, (*wan).into())],
            )?
        } else {
            b.entry(
                t::PAIRS,
                &[(f::PAIR_ID, Criterion::Exact(pid))],
                0,
                a::PAIR_DOWN,
                &[],
            )?
        };
        for entry in [
            status,
            b.entry(
                t::INGRESS_PORT,
                &[(f::INGRESS_PORT, Criterion::Exact((*lan).into()))],
                0,
                a::FROM_PAIR_LAN,
                &[(f::PAIR_ID, pid)],
            )?,
            b.entry(
                t::INGRESS_PORT,
                &[(f::INGRESS_PORT, Criterion::Exact((*wan).into()))],
                0,
                a::FROM_PAIR_WAN,
                &[(f::PAIR_ID, pid)],
            )?,
        ] {
            out.push(Desired {
                entry,
                source: source.clone(),
            });
        }
    }
    Ok(out)
}

/// A flow: one entry per link it is scoped to (one for every link when it names none).
/// Its priority on the chip is its configured priority plus one (the chip wants them
/// positive).
fn flow(
    b: &Builder,
    flow: &Flow,
    links: &[u32],
    unit: Option<u32>,
) -> Result<Vec<Desired>, CompileError> {
    let Some(criteria) = criteria(&flow.matches) else {
        // The match can never hold (an IPv4 and an IPv6 address, a VLAN deeper than the
        // depth asked for): nothing to program.
        return Ok(Vec::new());
    };
    let (action, params): (&str, Vec<(&str, u128)>) = match (&flow.action, unit) {
        (Action::Bypass, _) => (a::BYPASS, vec![]),
        (Action::Drop, _) => (a::DROP, vec![]),
        (Action::ToUnit(_), Some(uid)) => (a::TO_UNIT, vec![(f::UNIT_ID, u128::from(uid))]),
        (Action::ToUnit(_), None) => (a::BYPASS, vec![]),
    };
    let priority = i32::try_from(flow.priority).unwrap_or(i32::MAX - 1) + 1;
    let source = paths::flow(&flow.name);
    let scopes: Vec<Option<u32>> = if flow.links.is_empty() {
        vec![None]
    } else {
        links.iter().map(|l| Some(*l)).collect()
    };
    let mut out = Vec::with_capacity(scopes.len());
    for scope in scopes {
        let mut c = criteria.clone();
        if let Some(link) = scope {
            c.push((f::LINK_ID, Criterion::Ternary(link.into(), 0xff)));
        }
        out.push(Desired {
            entry: b.entry(t::FLOWS, &c, priority, action, &params)?,
            source: source.clone(),
        });
    }
    Ok(out)
}

/// The flow table's criteria for a match; `None` when no packet can match.
fn criteria(m: &FlowMatch) -> Option<Vec<(&'static str, Criterion)>> {
    let mut c: Vec<(&'static str, Criterion)> = Vec::new();
    // VLAN tags: a tag criterion needs that many tags (an absent tag reads 0).
    let vids = [f::VLAN0_VID, f::VLAN1_VID, f::VLAN2_VID];
    let mut min_depth = 0u8;
    for (i, tag) in m.vlan_tags.iter().enumerate() {
        if let Some(vid) = tag {
            c.push((vids[i], Criterion::Ternary((*vid).into(), 0xfff)));
            min_depth = i as u8 + 1;
        }
    }
    let (lo, hi) = match m.vlan_depth {
        Some(d) if d < min_depth => return None,
        Some(d) => (d, d),
        None => (min_depth, 3),
    };
    c.push((f::VLAN_DEPTH, Criterion::Range(lo.into(), hi.into())));
    if let Some(d) = m.mpls_depth {
        c.push((f::MPLS_DEPTH, Criterion::Range(d.into(), d.into())));
    }
    for (field, mac) in [(f::SRC_MAC, m.src_mac), (f::DST_MAC, m.dst_mac)] {
        if let Some(MacMatch { addr, mask }) = mac {
            c.push((field, Criterion::Ternary(be(&addr), be(&mask))));
        }
    }
    if let Some(t) = m.packet_type {
        c.push((f::ETHER_TYPE, Criterion::Ternary(t.into(), 0xffff)));
    }
    if m.llc_dsap.is_some() || m.llc_ssap.is_some() {
        c.push((f::LLC_VALID, Criterion::Ternary(1, 1)));
    }
    if let Some(v) = m.llc_dsap {
        c.push((f::LLC_DSAP, Criterion::Ternary(v.into(), 0xff)));
    }
    if let Some(v) = m.llc_ssap {
        c.push((f::LLC_SSAP, Criterion::Ternary(v.into(), 0xff)));
    }
    ip_criteria(m, &mut c)?;
    for (field, range) in [(f::L4_SRC_PORT, m.src_port), (f::L4_DST_PORT, m.dst_port)] {
        if let Some(r) = range {
            c.push((field, Criterion::Range(r.lo.into(), r.hi.into())));
        }
    }
    if m.src_port.is_some() || m.dst_port.is_some() {
        c.push((f::L4_VALID, Criterion::Ternary(1, 1)));
    }
    Some(c)
}

/// The IP version the match needs (4, 6, or either: value 4 mask 0xd matches 4 and 6) and
/// the address criteria.
fn ip_criteria(m: &FlowMatch, c: &mut Vec<(&'static str, Criterion)>) -> Option<()> {
    let v4 = m.src_ipv4.is_some() || m.dst_ipv4.is_some();
    let v6 = m.src_ipv6.is_some() || m.dst_ipv6.is_some();
    let needs_ip = m.ip_proto.is_some() || m.src_port.is_some() || m.dst_port.is_some();
    match (v4, v6) {
        (true, true) => return None,
        (true, false) => c.push((f::IP_VERSION, Criterion::Ternary(4, 0xf))),
        (false, true) => c.push((f::IP_VERSION, Criterion::Ternary(6, 0xf))),
        (false, false) if needs_ip => c.push((f::IP_VERSION, Criterion::Ternary(4, 0xd))),
        _ => {}
    }
    for (field, prefix, width) in [
        (f::IPV4_SRC, m.src_ipv4, 32u32),
        (f::IPV4_DST, m.dst_ipv4, 32),
        (f::IPV6_SRC, m.src_ipv6, 128),
        (f::IPV6_DST, m.dst_ipv6, 128),
    ] {
        if let Some(p) = prefix {
            let (value, mask) = prefix_bits(&p, width);
            c.push((field, Criterion::Ternary(value, mask)));
        }
    }
    if let Some(p) = m.ip_proto {
        c.push((f::IP_PROTO, Criterion::Ternary(p.into(), 0xff)));
    }
    Some(())
}

fn prefix_bits(p: &Prefix, width: u32) -> (u128, u128) {
    let value = match p.addr {
        std::net::IpAddr::V4(a) => u128::from(u32::from(a)),
        std::net::IpAddr::V6(a) => u128::from(a),
    };
    let len = u32::from(p.len).min(width);
    let ones = if len == 0 {
        0
    } else {
        u128::MAX << (128 - len) >> (128 - width)
    };
    (value & ones, ones)
}

fn be(bytes: &[u8]) -> u128 {
    bytes
        .iter()
        .fold(0u128, |acc, b| (acc << 8) | u128::from(*b))
}

/// Keys of a compiled set, for tests and reports.
pub fn keys(entries: &[Desired]) -> Vec<EntryKey> {
    entries.iter().map(|d| EntryKey::of(&d.entry)).collect()
}
