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
use efb_chip::OverCapacity;
use efb_model::{Action, BalancingMethod, Config, Flow, paths};
use efb_p4info::names::flows;
use efb_p4info::names::{actions as a, fields as f, tables as t};
use efb_p4info::{P4InfoIndex, PortMap, PortName};
use p4runtime_proto::p4::v1 as p4;

use crate::entry::{Builder, Criterion, EntryError, EntryKey};
use crate::frame_classes::{ClassMatch, ClassesError, FrameClasses};
use crate::ids::{Exhausted, Ids};
use crate::regions::{self, Region};

mod classes;
mod flow_entries;

use classes::FlowClasses;

pub use crate::criteria::range_prefixes;
use flow_entries::flow;

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
    /// The board's CPU port (from the port map).
    Platform,
    Link(String),
    /// A unit's status and its pairs (what liveness changes).
    Unit(String),
    /// A unit's bucket table (changed by liveness only with `rebalance`).
    Buckets(String),
    /// The `frame_classes` table, made from every flow's link, Ethernet-layer and port
    /// criteria.
    Classes,
    Flow(String),
}

#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    #[error(transparent)]
    Entry(#[from] EntryError),
    #[error(transparent)]
    Ids(#[from] Exhausted),
    #[error(transparent)]
    Classes(#[from] ClassesError),
    #[error("{path}: port {port}: {message}")]
    Port {
        path: String,
        port: String,
        message: String,
    },
    #[error(transparent)]
    Capacity(OverCapacity),
}

/// What a group was compiled from: equal inputs give equal entries.
#[derive(Clone, Debug, PartialEq)]
enum Inputs {
    Balancing(BalancingMethod),
    Platform {
        cpu_port: u32,
    },
    Link {
        link: efb_model::Link,
        id: u32,
        ports: (u32, u32),
    },
    Unit(Box<UnitInputs>),
    Buckets(Box<BucketInputs>),
    Classes(Arc<FrameClasses>),
    Flow {
        flow: Arc<Flow>,
        /// What the flow matches on the frame's class; `None`: no frame can match it.
        class: Option<ClassMatch>,
        unit: Option<u32>,
    },
}

/// Whether a compilation rebuilds the bucket tables liveness moved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Buckets {
    Follow,
    Hold,
}

/// What a bucket table depends on: liveness only with `rebalance`.
#[derive(Clone, Debug, PartialEq)]
struct BucketInputs {
    unit: efb_model::Unit,
    /// Where the unit's region of the table starts.
    base: u32,
    pair_ids: Vec<u32>,
    /// Which pairs take traffic, when the table follows it (`rebalance`).
    live: Option<Vec<bool>>,
}

impl BucketInputs {
    fn same_but_liveness(&self, other: &BucketInputs) -> bool {
        self.unit == other.unit && self.base == other.base && self.pair_ids == other.pair_ids
    }
}

#[derive(Clone, Debug, PartialEq)]
struct UnitInputs {
    unit: efb_model::Unit,
    id: u32,
    bucket_base: u32,
    pairs: Vec<(u32, u32, u32)>,
    live: Vec<bool>,
    mode: BypassMode,
    active_pairs: Option<u16>,
}

/// A compiled group: its inputs and its entries.
#[derive(Clone, Debug)]
struct CompiledGroup {
    inputs: Inputs,
    entries: Arc<Vec<Desired>>,
}

/// Two groups are the same when they hold the very same entries (a group left alone by a
/// compilation shares them); this is what lets [`Compiled::changed_groups`] skip the rest.
impl PartialEq for CompiledGroup {
    fn eq(&self, other: &CompiledGroup) -> bool {
        Arc::ptr_eq(&self.entries, &other.entries)
    }
}

/// A compiled configuration. Groups live in a persistent map: a compilation that changes
/// one flow shares every other group with the previous one, and comparing the two visits
/// only what differs.
#[derive(Clone, Debug, Default)]
pub struct Compiled {
    pub ids: Ids,
    groups: imbl::OrdMap<Group, CompiledGroup>,
    /// The flows compiled, as the configuration held them (to find the ones that changed).
    flows: imbl::OrdMap<String, Arc<Flow>>,
    /// Every flow's class criteria and the `frame_classes` table they make.
    classes: FlowClasses,
    /// Entries per table, kept up to date group by group (capacity is checked on it).
    entries_per_table: BTreeMap<u32, usize>,
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
        self.compile_with(config, live, previous, Buckets::Follow)
    }

    /// Compiles `config`, but with the bucket tables `previous` holds kept where only
    /// liveness would move them: the first step of a liveness change of a `rebalance` unit.
    /// The dead pair's one `pair_down` entry then bypasses its buckets at once; building and
    /// writing the thousands of moved buckets is the second step (a plain compile).
    pub fn compile_bypass_first(
        &self,
        config: &Config,
        live: &LiveState,
        previous: &Compiled,
    ) -> Result<Compiled, CompileError> {
        self.compile_with(config, live, previous, Buckets::Hold)
    }

    fn compile_with(
        &self,
        config: &Config,
        live: &LiveState,
        previous: &Compiled,
        buckets: Buckets,
    ) -> Result<Compiled, CompileError> {
        let mut ids = previous.ids.assign(config)?;
        ids.buckets = self.place_buckets(config, &previous.ids)?;
        let builder = Builder { index: &self.index };
        let mut groups = previous.groups.clone();
        let mut put = |group: Group, inputs: Inputs| -> Result<(), CompileError> {
            if let Some(old) = groups.get(&group)
                && same_inputs(&old.inputs, &inputs)
            {
                return Ok(());
            }
            let entries = Arc::new(compile_group(&builder, &group, &inputs)?);
            groups.insert(group, CompiledGroup { inputs, entries });
            Ok(())
        };
        put(Group::Balancing, Inputs::Balancing(config.balancing_method))?;
        put(
            Group::Platform,
            Inputs::Platform {
                cpu_port: self.ports.cpu_port(),
            },
        )?;
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
            let group = Group::Buckets(unit.name.clone());
            let table = inputs.buckets();
            let held = buckets == Buckets::Hold
                && previous
                    .groups
                    .get(&group)
                    .is_some_and(|old| match &old.inputs {
                        Inputs::Buckets(held) => held.same_but_liveness(&table),
                        _ => false,
                    });
            if !held {
                put(group, Inputs::Buckets(Box::new(table)))?;
            }
            put(
                Group::Unit(unit.name.clone()),
                Inputs::Unit(Box::new(inputs)),
            )?;
        }
        // A flow's entries depend on the flow, on the link and unit ids, and on the class
        // layout: with the ids unchanged, the flows that did not change keep their
        // entries unless the layout is made afresh.
        let incremental = ids.same_flow_ids(&previous.ids);
        let link_ids =
            |flow: &Flow| -> Vec<u32> { flow.links.iter().filter_map(|l| ids.link(l)).collect() };
        let mut classes = if incremental {
            previous.classes.clone()
        } else {
            previous.classes.emptied()
        };
        let mut gone: Vec<Group> = Vec::new();
        let mut changed: Vec<Arc<Flow>> = Vec::new();
        if incremental {
            for item in previous.flows.diff(&config.flows) {
                match item {
                    DiffItem::Add(_, flow) | DiffItem::Update { new: (_, flow), .. } => {
                        changed.push(flow.clone());
                    }
                    DiffItem::Remove(name, _) => {
                        classes.remove(name);
                        gone.push(Group::Flow(name.clone()));
                    }
                }
            }
        } else {
            changed = config.flows.values().cloned().collect();
        }
        for flow in &changed {
            classes.set(flow, &link_ids(flow));
        }
        let class_table_size = self
            .index
            .table_by_name(t::FRAME_CLASSES)
            .map_err(EntryError::from)?
            .size;
        let relaid = classes.classify(
            &previous.ids.classes,
            usize::try_from(class_table_size).unwrap_or(usize::MAX),
        )?;
        ids.classes = classes.table.layout.clone();
        put(Group::Classes, Inputs::Classes(classes.table.clone()))?;
        if relaid {
            changed = config.flows.values().cloned().collect();
        }
        for flow in &changed {
            let inputs = Inputs::Flow {
                flow: flow.clone(),
                class: classes.class_match(&flow.name),
                unit: match &flow.action {
                    Action::ToUnit(u) => ids.unit(u),
                    _ => None,
                },
            };
            put(Group::Flow(flow.name.clone()), inputs)?;
        }
        // Groups of what is gone (flows are last in the map's order).
        gone.extend(
            groups
                .keys()
                .take_while(|group| !incremental || !matches!(group, Group::Flow(_)))
                .filter(|group| match group {
                    Group::Balancing | Group::Platform | Group::Classes => false,
                    Group::Link(name) => !config.links.contains_key(name),
                    Group::Unit(name) | Group::Buckets(name) => !config.units.contains_key(name),
                    Group::Flow(name) => !config.flows.contains_key(name),
                })
                .cloned(),
        );
        for group in gone {
            groups.remove(&group);
        }
        let entries_per_table = self.check_capacity(previous, &groups)?;
        Ok(Compiled {
            ids,
            groups,
            flows: config.flows.clone(),
            classes,
            entries_per_table,
        })
    }

    /// The entries per table of `groups`, from those of `previous` and the groups that
    /// changed; refuses a flow table with more entries than the chip as compiled holds
    /// (its P4Info size).
    fn check_capacity(
        &self,
        previous: &Compiled,
        groups: &imbl::OrdMap<Group, CompiledGroup>,
    ) -> Result<BTreeMap<u32, usize>, CompileError> {
        let mut counts = previous.entries_per_table.clone();
        for item in previous.groups.diff(groups) {
            let (old, new): (&[Desired], &[Desired]) = match item {
                DiffItem::Add(_, new) => (&[], &new.entries),
                DiffItem::Remove(_, old) => (&old.entries, &[]),
                DiffItem::Update { old, new } => (&old.1.entries, &new.1.entries),
            };
            for d in old {
                let n = counts.entry(d.entry.table_id).or_default();
                *n = n.saturating_sub(1);
            }
            for d in new {
                *counts.entry(d.entry.table_id).or_default() += 1;
            }
        }
        for (table, needed) in &counts {
            let Some(info) = self.index.table(*table) else {
                continue;
            };
            if *needed as u64 > info.size && info.size > 0 {
                return Err(over_capacity(info, *needed));
            }
        }
        Ok(counts)
    }

    /// Each unit's region of the bucket table, as large as its bucket count.
    fn place_buckets(
        &self,
        config: &Config,
        previous: &Ids,
    ) -> Result<BTreeMap<String, Region>, CompileError> {
        let wanted: BTreeMap<String, u32> = config
            .units
            .values()
            .map(|u| {
                let buckets = UnitLayout::of(u).buckets();
                (u.name.clone(), u32::try_from(buckets).unwrap_or(u32::MAX))
            })
            .collect();
        let capacity = self
            .index
            .table_by_name(t::BUCKETS)
            .map_err(EntryError::from)?
            .size;
        regions::place(&previous.buckets, &wanted, capacity).map_err(|full| {
            CompileError::Capacity(OverCapacity {
                what: "buckets (each unit's region of table buckets)".into(),
                needed: usize::try_from(full.needed).unwrap_or(usize::MAX),
                capacity: full.capacity,
                hint: " (a unit takes the smallest power of two >= 16 x pairs x cores, at least \
                       256 and at most 65 536)",
            })
        })
    }

    pub(crate) fn device_port(
        &self,
        config: &Config,
        path: &str,
        port: &str,
    ) -> Result<u32, CompileError> {
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
            bucket_base: ids.bucket_base(&unit.name).unwrap_or(0),
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
                class: ca,
                unit: ua,
            },
            Inputs::Flow {
                flow: b,
                class: cb,
                unit: ub,
            },
        ) => (Arc::ptr_eq(a, b) || a == b) && ca == cb && ua == ub,
        (Inputs::Classes(a), Inputs::Classes(b)) => Arc::ptr_eq(a, b) || a == b,
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
        (_, Inputs::Platform { cpu_port }) => platform(b, *cpu_port),
        (Group::Link(name), Inputs::Link { id, ports, .. }) => link(b, name, *id, *ports),
        (_, Inputs::Unit(u)) => unit(b, u),
        (_, Inputs::Buckets(u)) => buckets(b, u),
        (_, Inputs::Classes(table)) => classes::entries(b, table),
        (
            _,
            Inputs::Flow {
                flow: f,
                class: Some(class),
                unit,
            },
        ) => flow(b, f, *class, *unit),
        // A flow no frame can match (no class) has no entries.
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

/// The CPU port: where packet-ins go (`platform`), and the port packet-outs come in by
/// (`ingress_port`: the program drops them from any other).
fn platform(b: &Builder, cpu_port: u32) -> Result<Vec<Desired>, CompileError> {
    let source = "platform: the port map's cpu_port".to_string();
    Ok(vec![
        Desired {
            entry: b.default_entry(t::PLATFORM, a::SET_CPU_PORT, &[(f::PORT, cpu_port.into())])?,
            source: source.clone(),
        },
        Desired {
            entry: b.entry(
                t::INGRESS_PORT,
                &[(f::INGRESS_PORT, Criterion::Exact(cpu_port.into()))],
                0,
                a::FROM_CPU,
                &[],
            )?,
            source,
        },
    ])
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
            base: self.bucket_base,
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
    let base = u128::from(u.base);
    let source = paths::unit(&u.unit.name);
    let table = match &u.live {
        Some(live) => bucket_table(layout, live, true),
        None => bucket_table(layout, &vec![true; u.pair_ids.len()], false),
    };
    let shape = b.exact_shape(t::BUCKETS, &[f::INDEX], a::TO_PAIR, &[f::PAIR_ID, f::CORE])?;
    let mut out = Vec::with_capacity(table.len());
    for (bucket, slot) in table.into_iter().enumerate() {
        let slot = slot.unwrap_or(bucket % layout.slots());
        let (pair_index, core) = layout.pair_core(slot);
        let Some(pair_id) = u.pair_ids.get(pair_index) else {
            continue;
        };
        out.push(Desired {
            entry: shape.entry(
                &[base + bucket as u128],
                &[u128::from(*pair_id), u128::from(core)],
            ),
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
            &[
                (f::BUCKET_MASK, (layout.buckets() - 1) as u128),
                (f::BUCKET_BASE, u128::from(u.bucket_base)),
            ],
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
        let up = live.get(i).copied().unwrap_or(false);
        // One entry per side the frame entered its link by: the pair's port on that side.
        let mut status = Vec::with_capacity(2);
        for (side, port) in [(0, *lan), (1, *wan)] {
            let key = [
                (f::PAIR_ID, Criterion::Exact(pid)),
                (f::SIDE_WAN, Criterion::Exact(side)),
            ];
            status.push(if up {
                b.entry(t::PAIRS, &key, 0, a::PAIR_UP, &[(f::PORT, port.into())])?
            } else {
                b.entry(t::PAIRS, &key, 0, a::PAIR_DOWN, &[])?
            });
        }
        for entry in status.into_iter().chain([
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
        ]) {
            out.push(Desired {
                entry,
                source: source.clone(),
            });
        }
    }
    Ok(out)
}

/// The error for a table that would hold more than its size.
fn over_capacity(info: &efb_p4info::TableInfo, needed: usize) -> CompileError {
    let flow_table = flows::ALL.iter().find(|t| t.table.as_str() == info.name);
    let (what, hint) = match flow_table {
        Some(t) => (
            format!("{} flow entries", t.kind.as_str()),
            " (a flow takes one entry per link it names, times one per prefix of each port \
             or VLAN-depth range, in each of the IPv4, IPv6 and non-IP tables it can match)",
        ),
        None => (format!("entries in table {}", info.alias), ""),
    };
    CompileError::Capacity(OverCapacity {
        what,
        needed,
        capacity: info.size,
        hint,
    })
}

/// Keys of a compiled set, for tests and reports.
pub fn keys(entries: &[Desired]) -> Vec<EntryKey> {
    entries.iter().map(|d| EntryKey::of(&d.entry)).collect()
}
