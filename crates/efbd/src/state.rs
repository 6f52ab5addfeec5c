//! Operational state, served through the same model as configuration: the running
//! configuration plus the `config false` values the daemon actually knows. What it does not
//! know (pair liveness before keep-alives run, counters when the chip is not reachable) is
//! left out, so that clients show it as unknown rather than made up.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use efb_balancing::LiveState;
use efb_datastore::Running;
use efb_liveness::PairState;
use efb_model::Config;
use efb_p4::Driver;
use efb_p4::platform::PortCounters;
use efb_p4info::PortName;
use efb_yang::{DataPath, DataTree, Schema};
use tracing::error;

use crate::chip::board::{self, BoardPort};
use crate::chip::liveness;
use crate::chip::{self, Counters, CountersToRead};
use crate::owner::baselines::{self, Baselines, ClearError, Counted};

pub mod instruments;
pub mod metrics;
mod paths;

use paths::{
    BalancerLeaf, BoardPortLeaf, DevicePortLeaf, FlowLeaf, LaneLeaf, LinkLeaf, PairLeaf,
    ProfilePairLeaf, ProfilePortLeaf, ProfileUnitLeaf, UnitLeaf,
};

/// What the operational state is built from: the running configuration and what the
/// daemon knows beside it at one moment (liveness, bypass modes, the chip to read counters
/// through, their baselines). Taken from the owner so that the tree is built (and the
/// counters read) off its thread; the metrics read the same values.
#[derive(Clone)]
pub struct StateInputs {
    pub running: Running,
    /// The running configuration's balancing hash, as the owner keeps it.
    pub config_hash: String,
    pub live: LiveState,
    /// Every probed pair.
    pub pairs: Vec<PairState>,
    /// The chip's counters are read through it, when there is a chip.
    pub driver: Option<Driver>,
    /// What `clear ... statistics` took: readers see the counts since.
    pub baselines: Baselines,
}

impl StateInputs {
    /// The operational tree (the one place it is built): running configuration, the state
    /// known, and the counters `wanted` read from the chip now. Reading them blocks: with
    /// counters wanted, not on the runtime's threads nor the owner's.
    pub fn tree(&self, schema: &Schema, wanted: &CountersToRead) -> DataTree {
        let counters = self.counters(wanted);
        let mut leaves = LeafWriter::new(schema, self.running.tree.clone());
        put_state(self, counters.as_ref(), &mut leaves);
        leaves.finish()
    }

    /// The counters `wanted`, if any and if there is a chip (blocking, as
    /// [`StateInputs::tree`]), counted since they were last cleared.
    pub fn counters(&self, wanted: &CountersToRead) -> Option<Counters> {
        let mut counters = self.chip_counters(wanted)?;
        self.baselines.apply(&mut counters);
        counters.ports_onto_board();
        Some(counters)
    }

    /// Takes the baselines of the ports or flows `names` (none: every configured one) from
    /// the chip's counters now; the names cleared. Blocking: it reads the chip.
    pub fn clear_counters(
        &self,
        counted: Counted,
        names: &[String],
    ) -> Result<Vec<String>, ClearError> {
        let names = baselines::configured(&self.running.config, counted, names)?;
        let read = self.chip_counters(&counted.to_read(&names));
        self.baselines.clear(counted, &names, read)?;
        Ok(names)
    }

    /// The counters `wanted` as the chip has them (to take baselines from).
    pub fn chip_counters(&self, wanted: &CountersToRead) -> Option<Counters> {
        if wanted.is_nothing() {
            return None;
        }
        let driver = self.driver.as_ref()?;
        Some(chip::counters(driver, &self.running.config, wanted))
    }
}

/// Writes the state's leaves into a tree by typed path ([`paths`]) and text, keeping the
/// values the schema refuses: a refused one is a bug (a value out of its type) that must
/// not just go missing from the tree.
struct LeafWriter<'a> {
    schema: &'a Schema,
    tree: DataTree,
    refused: Vec<String>,
}

impl<'a> LeafWriter<'a> {
    fn new(schema: &'a Schema, tree: DataTree) -> LeafWriter<'a> {
        LeafWriter {
            schema,
            tree,
            refused: Vec::new(),
        }
    }

    /// Writes `leaf` of the container `at`: `value` as efbd knows it (a count, a time, a
    /// word), in the form the leaf's type takes.
    fn put<L: paths::Leaf, V: StateValue + ?Sized>(
        &mut self,
        at: &paths::At<L>,
        leaf: L,
        value: &V,
    ) {
        self.put_path(at.leaf(leaf), &value.state_text());
    }

    fn put_path(&mut self, path: String, text: &str) {
        let schema = self.schema;
        let set = DataPath::parse(schema, &path)
            .map_err(|e| e.to_string())
            .and_then(|parsed| {
                let node = parsed.node().ok_or("the top of the data takes no value")?;
                let value = schema.value(node, text).map_err(|e| e.to_string())?;
                self.tree
                    .set(schema, &parsed, Some(value))
                    .map_err(|e| e.to_string())
            });
        if let Err(e) = set {
            self.refused.push(format!("{path} = {text:?}: {e}"));
        }
    }

    /// Merges a tree made apart (by another writer).
    fn merge(&mut self, other: &DataTree) {
        self.tree.merge(self.schema, other);
    }

    /// The tree; refused paths are logged (and stop a debug build: tests see them).
    fn finish(self) -> DataTree {
        for refused in &self.refused {
            error!(%refused, "a state value the schema refuses was left out");
        }
        debug_assert!(
            self.refused.is_empty(),
            "state paths the schema refuses: {:#?}",
            self.refused
        );
        self.tree
    }
}

/// A value a state leaf takes, in the text RFC 7951 and the schema give it (a 64-bit count
/// as its digits, a time as RFC 3339 with milliseconds).
trait StateValue {
    fn state_text(&self) -> std::borrow::Cow<'_, str>;
}

impl StateValue for str {
    fn state_text(&self) -> std::borrow::Cow<'_, str> {
        self.into()
    }
}

impl StateValue for String {
    fn state_text(&self) -> std::borrow::Cow<'_, str> {
        self.as_str().into()
    }
}

macro_rules! counts {
    ($($t:ty),*) => {$(
        impl StateValue for $t {
            fn state_text(&self) -> std::borrow::Cow<'_, str> {
                self.to_string().into()
            }
        }
    )*};
}
counts!(u8, u16, u32, u64, usize);

impl StateValue for std::time::SystemTime {
    fn state_text(&self) -> std::borrow::Cow<'_, str> {
        humantime::format_rfc3339_millis(*self).to_string().into()
    }
}

/// An operational tree with the chip's counters put in (a gNMI snapshot read with them).
pub fn with_counters(schema: &Schema, tree: &DataTree, counters: &Counters) -> DataTree {
    let mut leaves = LeafWriter::new(schema, tree.clone());
    put_counters(counters, &mut leaves);
    leaves.finish()
}

fn put_state(inputs: &StateInputs, counters: Option<&Counters>, leaves: &mut LeafWriter<'_>) {
    let StateInputs {
        running,
        config_hash,
        live,
        pairs,
        ..
    } = inputs;
    leaves.put(&paths::balancer(), BalancerLeaf::ConfigHash, config_hash);
    if let Some(ports) = port_states(inputs, counters) {
        put_links(&running.config, &ports, leaves);
    }
    let statuses = liveness::unit_statuses(&running.config, live);
    for (unit, (active, live_pairs)) in &statuses {
        let state = paths::unit_state(unit);
        leaves.put(&state, UnitLeaf::BypassMode, live.mode(unit).as_str());
        let status = liveness::unit_status_name(*active);
        leaves.put(&state, UnitLeaf::Status, status);
        leaves.put(&state, UnitLeaf::ActivePairs, live_pairs);
    }
    put_pairs(pairs, &statuses, leaves);
    leaves.merge(&board_tree(leaves.schema, &running.config));
    if let Some(counters) = counters {
        put_counters(counters, leaves);
    }
}

/// Which device ports are up: as the chip's subscription last said, or as the counters
/// just read say (the same oper-status, read with them).
fn port_states(inputs: &StateInputs, counters: Option<&Counters>) -> Option<BTreeMap<u32, bool>> {
    if let Some(states) = inputs.driver.as_ref().and_then(Driver::port_states_now) {
        return Some(states);
    }
    let read: BTreeMap<u32, bool> = counters?
        .ports
        .values()
        .map(|c| (c.device_port, c.up))
        .collect();
    (!read.is_empty()).then_some(read)
}

/// Each link's status from its ports' oper-status (see [`crate::chip::links`]).
fn put_links(config: &Config, up: &BTreeMap<u32, bool>, leaves: &mut LeafWriter<'_>) {
    for (link, state) in crate::chip::links::link_states(config, up) {
        let at = paths::link_state(&link);
        leaves.put(&at, LinkLeaf::Status, state.word());
        if !state.up {
            leaves.put(&at, LinkLeaf::Reason, &state.reason);
        }
    }
}

/// Pair state under the unit, and the same seen per port under /liveness/profile-status.
fn put_pairs(
    pairs: &[PairState],
    statuses: &BTreeMap<String, (bool, usize)>,
    leaves: &mut LeafWriter<'_>,
) {
    for p in pairs {
        let state = paths::pair_state(&p.unit, &p.pair);
        leaves.put(&state, PairLeaf::Status, p.status.as_str());
        leaves.put(&state, PairLeaf::ProbesLost, &p.probes_lost());
        leaves.put(&state, PairLeaf::StatusChanges, &p.changes);
        leaves.put(&state, PairLeaf::RoundsLost, &p.rounds_lost);
        leaves.put(&state, PairLeaf::RoundsLostInARow, &p.lost_in_a_row);
        if let Some(reason) = &p.reason {
            leaves.put(&state, PairLeaf::Reason, reason);
        }
        // A keep-alive that left by the WAN port came back on the LAN side: "to LAN".
        let [out_of_lan, out_of_wan] = p.time_on_path_ns;
        if let Some(ns) = out_of_wan {
            leaves.put(&state, PairLeaf::TimeOnPathToLanNs, &ns);
        }
        if let Some(ns) = out_of_lan {
            leaves.put(&state, PairLeaf::TimeOnPathToWanNs, &ns);
        }
        if let Some(since) = &p.last_change {
            leaves.put(&state, PairLeaf::LastChange, since);
        }
        let unit = paths::profile_unit(&p.unit);
        leaves.put(&unit, ProfileUnitLeaf::Profile, &p.profile);
        if let Some((active, _)) = statuses.get(&p.unit) {
            let status = liveness::unit_status_name(*active);
            leaves.put(&unit, ProfileUnitLeaf::Status, status);
        }
        let pair = paths::profile_pair(&p.unit, &p.pair);
        leaves.put(&pair, ProfilePairLeaf::Status, p.status.as_str());
        leaves.put(&pair, ProfilePairLeaf::RoundsLost, &p.rounds_lost);
        leaves.put(&pair, ProfilePairLeaf::RoundsLostInARow, &p.lost_in_a_row);
        if let Some(since) = &p.last_change {
            leaves.put(&pair, ProfilePairLeaf::LastChange, since);
        }
        if let Some(reason) = &p.reason {
            leaves.put(&pair, ProfilePairLeaf::Reason, reason);
        }
        for (side, sent_out_of, back_on) in [("lan", 0, 1), ("wan", 1, 0)] {
            let port = paths::profile_port(&p.unit, &p.pair, &p.ports[sent_out_of]);
            leaves.put(&port, ProfilePortLeaf::Side, side);
            leaves.put(&port, ProfilePortLeaf::ProbesSent, &p.sent[sent_out_of]);
            leaves.put(&port, ProfilePortLeaf::ProbesLost, &p.lost[sent_out_of]);
            // What came back on this port left by the other one.
            if let Some(ns) = p.time_on_path_ns[back_on] {
                leaves.put(&port, ProfilePortLeaf::TimeOnPathNs, &ns);
            }
        }
    }
}

/// The board's ports and lanes and what uses them (known without the chip), kept from one
/// tree to the next while they stay the same: a tree is built at every commit and every
/// change of a pair's liveness, few of which change ports, links or pairs, and the board's
/// 500 values, each checked by libyang, cost a millisecond. efbd has one schema: the ids
/// in the kept tree are its.
fn board_tree(schema: &Schema, config: &Config) -> DataTree {
    static KEPT: Mutex<Option<(Vec<BoardPort>, DataTree)>> = Mutex::new(None);
    let Some(map) = board::port_map() else {
        return DataTree::new();
    };
    let ports = board::board(map, config);
    let mut kept = KEPT.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((was, tree)) = kept.as_ref()
        && *was == ports
    {
        return tree.clone();
    }
    let mut leaves = LeafWriter::new(schema, DataTree::new());
    put_board(&ports, &mut leaves);
    let tree = leaves.finish();
    *kept = Some((ports, tree.clone()));
    tree
}

/// Usage of each physical port; device port, configured port and users of each lane.
fn put_board(ports: &[BoardPort], leaves: &mut LeafWriter<'_>) {
    for port in ports {
        let at = paths::board_port(port.number);
        leaves.put(&at, BoardPortLeaf::Usage, port.usage.as_str());
        for lane in &port.lanes {
            let at = paths::board_lane(port.number, lane.lane);
            leaves.put(&at, LaneLeaf::DevicePort, &lane.device_port);
            if let Some(name) = &lane.port {
                leaves.put(&at, LaneLeaf::Port, name);
            }
            if let Some(users) = &lane.used_by {
                leaves.put(&at, LaneLeaf::UsedBy, users);
            }
        }
    }
}

/// Status and counters of a device port: a configured port's `state`, or a lane of the
/// board (the same leaves).
fn put_port_counters(
    at: &paths::At<DevicePortLeaf>,
    c: &PortCounters,
    leaves: &mut LeafWriter<'_>,
) {
    let status = if c.up { "up" } else { "down" };
    leaves.put(at, DevicePortLeaf::OperStatus, status);
    for (leaf, value) in [
        (DevicePortLeaf::InFrames, c.in_frames),
        (DevicePortLeaf::InBytes, c.in_bytes),
        (DevicePortLeaf::InDiscards, c.in_discards),
        (DevicePortLeaf::InErrors, c.in_errors),
        (DevicePortLeaf::OutFrames, c.out_frames),
        (DevicePortLeaf::OutBytes, c.out_bytes),
        (DevicePortLeaf::OutDiscards, c.out_discards),
        (DevicePortLeaf::OutErrors, c.out_errors),
    ] {
        leaves.put(at, leaf, &value);
    }
}

fn put_counters(counters: &Counters, leaves: &mut LeafWriter<'_>) {
    for (flow, entries) in &counters.entries {
        let state = paths::flow_state(flow);
        leaves.put(&state, FlowLeaf::Entries, entries);
        // Unread counters stay unknown; read ones of a flow no packet hit are zero.
        if let Some(flows) = &counters.flows {
            let (packets, bytes) = flows.get(flow).copied().unwrap_or_default();
            leaves.put(&state, FlowLeaf::Packets, &packets);
            leaves.put(&state, FlowLeaf::Bytes, &bytes);
        }
    }
    for (port, c) in &counters.ports {
        put_port_counters(&paths::port_state(port), c, leaves);
    }
    let map = board::port_map();
    for (device_port, c) in &counters.board {
        // Only the front panel's device ports are read for the board.
        let Some(PortName {
            port,
            lane: Some(lane),
        }) = map.and_then(|m| m.name_of(*device_port))
        else {
            continue;
        };
        put_port_counters(&paths::lane_status(port, lane), c, leaves);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::sync::Arc;
    use std::time::SystemTime;

    use efb_liveness::PairStatus;
    use efb_model::validation::Validator;
    use efb_yang::json::{self, Check};
    use efb_yang::{Child, Inner, NodeKind, SchemaId};

    use super::*;

    fn example_site(validator: &Validator) -> Running {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../examples/one-filter-site.json"
        );
        let text = std::fs::read_to_string(path).expect("the example");
        let tree = json::from_json(validator.schema(), &text, Check::Complete).expect("JSON");
        let config = validator
            .validate(&tree, false)
            .config
            .expect("a valid site");
        Running {
            tree,
            inactive: Default::default(),
            config,
            commit_id: 1,
        }
    }

    /// Every pair probed, every measure known, as keep-alives running for a while give.
    fn probed(running: &Running) -> Vec<PairState> {
        let config = &running.config;
        let mut pairs = Vec::new();
        for unit in config.units.values() {
            let Some(profile) = &unit.liveness_profile else {
                continue;
            };
            for (i, pair) in unit.pairs.iter().enumerate() {
                pairs.push(PairState {
                    unit: unit.name.clone(),
                    pair: pair.name.clone(),
                    profile: profile.clone(),
                    ports: [pair.lan_port.clone(), pair.wan_port.clone()],
                    status: if i == 0 {
                        PairStatus::Down
                    } else {
                        PairStatus::Up
                    },
                    last_change: Some(SystemTime::now()),
                    changes: 2,
                    sent: [100, 100],
                    lost: [3, 1],
                    time_on_path_ns: [Some(1200), Some(1300)],
                    rounds_lost: 4,
                    lost_in_a_row: 0,
                    reason: Some("2 consecutive keep-alives returned".into()),
                });
            }
        }
        pairs
    }

    /// Counters of every flow and port, as a reachable chip gives them.
    fn counted(running: &Running) -> Counters {
        let config = &running.config;
        let flows = config
            .flows
            .keys()
            .map(|f| (f.clone(), (10, 1500)))
            .collect();
        let port = |device_port| PortCounters {
            device_port,
            up: true,
            in_frames: 1,
            in_bytes: 64,
            out_frames: 2,
            out_bytes: 128,
            in_discards: 0,
            ..PortCounters::default()
        };
        let map = board::port_map().expect("the port map");
        Counters {
            flows: Some(flows),
            entries: config.flows.keys().map(|f| (f.clone(), 4)).collect(),
            ports: config
                .ports
                .keys()
                .map(|name| {
                    let device_port = chip::device_port(map, config, name).expect("on the board");
                    // One uplink port down: its link says so, and why.
                    let counters = PortCounters {
                        up: name != "p1",
                        ..port(device_port)
                    };
                    (name.clone(), counters)
                })
                .collect(),
            board: map
                .device_ports()
                .into_iter()
                .map(|d| (d, port(d)))
                .collect(),
        }
    }

    fn nodes_in(inner: &Inner, found: &mut BTreeSet<SchemaId>) {
        for (id, child) in inner.children() {
            found.insert(id);
            match child {
                Child::Container(inner) => nodes_in(inner, found),
                Child::List(list) => {
                    for (_, entry) in list.iter() {
                        nodes_in(entry, found);
                    }
                }
                Child::Leaf(_) | Child::LeafList(_) => {}
            }
        }
    }

    #[test]
    fn the_operational_tree_has_every_state_leaf_of_the_schema() {
        let validator = Validator::new(Arc::new(Schema::load().expect("schema"))).expect("ids");
        let schema = validator.schema();
        let running = example_site(&validator);
        let unit = running.config.units.keys().next().expect("a unit").clone();
        let mut live = LiveState::all_up();
        live.modes.insert(unit, efb_balancing::BypassMode::Bypass);
        let pairs = probed(&running);
        assert!(!pairs.is_empty(), "the example site probes its pairs");

        let counters = counted(&running);
        let inputs = StateInputs {
            config_hash: efb_balancing::config_hash(&running.config),
            running,
            live,
            pairs,
            driver: None,
            baselines: Baselines::default(),
        };
        let mut leaves = LeafWriter::new(schema, inputs.running.tree.clone());
        put_state(&inputs, Some(&counters), &mut leaves);
        assert!(
            leaves.refused.is_empty(),
            "state paths the schema refuses: {:#?}",
            leaves.refused
        );
        let mut produced = BTreeSet::new();
        nodes_in(leaves.finish().root(), &mut produced);

        let state_leaves: Vec<_> = schema
            .nodes()
            .filter(|n| !n.config && !n.is_key)
            .filter(|n| matches!(n.kind, NodeKind::Leaf | NodeKind::LeafList))
            .filter(|n| schema.roots().contains(&schema.top(n.id)))
            .collect();
        assert!(
            state_leaves.len() > 20,
            "the schema's state leaves are found"
        );
        let missing: Vec<&str> = state_leaves
            .iter()
            .filter(|n| !produced.contains(&n.id))
            .map(|n| n.schema_path.as_str())
            .filter(|path| !paths::NOT_WRITTEN.contains(path))
            .collect();
        assert!(
            missing.is_empty(),
            "state leaves never produced: {missing:#?}"
        );
        let known_after_all: Vec<&str> = state_leaves
            .iter()
            .filter(|n| produced.contains(&n.id))
            .map(|n| n.schema_path.as_str())
            .filter(|path| paths::NOT_WRITTEN.contains(path))
            .collect();
        assert!(
            known_after_all.is_empty(),
            "produced now, take them out of NOT_WRITTEN: {known_after_all:#?}"
        );
    }

    /// The usage of physical port 1 in the board's tree for `config`.
    fn usage_of_port_1(schema: &Schema, config: &Config) -> String {
        let tree = board_tree(schema, config);
        let path = DataPath::parse(schema, &paths::board_port(1).leaf(BoardPortLeaf::Usage))
            .expect("a path");
        tree.leaf(schema, &path)
            .map(|v| v.as_str().to_string())
            .unwrap_or_default()
    }

    #[test]
    fn the_kept_board_follows_the_configuration() {
        let validator = Validator::new(Arc::new(Schema::load().expect("schema"))).expect("ids");
        let schema = validator.schema();
        let site = example_site(&validator);
        let empty = Config::default();
        assert_eq!(usage_of_port_1(schema, &empty), "free");
        assert_eq!(usage_of_port_1(schema, &site.config), "whole");
        assert_eq!(usage_of_port_1(schema, &site.config), "whole");
        assert_eq!(usage_of_port_1(schema, &empty), "free");
    }

    #[test]
    fn a_misspelt_state_path_is_kept_as_refused() {
        let schema = Schema::load().expect("schema");
        let mut leaves = LeafWriter::new(&schema, DataTree::new());
        let flow = paths::flow_state("f");
        leaves.put(&flow, FlowLeaf::Packets, "1");
        leaves.put_path(
            flow.leaf(FlowLeaf::Packets).replace("packets", "packet"),
            "1",
        );
        leaves.put(&flow, FlowLeaf::Bytes, "many");
        assert_eq!(leaves.refused.len(), 2, "{:#?}", leaves.refused);
        assert!(
            leaves.refused[0].contains("state/packet ="),
            "{}",
            leaves.refused[0]
        );
        assert!(leaves.refused[1].contains("many"), "{}", leaves.refused[1]);
    }
}
