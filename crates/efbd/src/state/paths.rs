//! Every `config false` leaf efbd writes, by the container it sits in: a container is a
//! function giving its data path from its keys, its leaves are an enum, so a misspelt leaf
//! does not compile and a leaf cannot be written under a container that lacks it. The test
//! below checks the table against the schema both ways: every path here is a state leaf of
//! the schema, and every state leaf of the schema is here or in [`NOT_WRITTEN`].
//!
//! A new state leaf: its line in the container's enum (or a new container: an enum, a
//! function, and a line in the test's `every_leaf`), then its value in `state.rs`.

use std::marker::PhantomData;

use efb_yang::path::quote;

const BALANCER: &str = "/ecofilter-balancer:ecofilter-balancer";
const BOARD: &str = "/ecofilter-balancer:board";

/// State leaves of the schema efbd does not write, by schema path: the status of a probed
/// pair's port is not filled in under profile-status (the port's oper-status is under
/// /ports). Every port counter comes from the platform's gNMI, as its OpenConfig says it.
#[cfg(test)]
pub const NOT_WRITTEN: [&str; 1] =
    ["/ecofilter-balancer:liveness/profile-status/ecofilter-unit/pair/port/status"];

/// The leaves of one state container.
pub trait Leaf: Copy + 'static {
    /// Every leaf of the container efbd writes (the test checks each).
    #[cfg(test)]
    const ALL: &'static [Self];
    /// The leaf's path below its container, as the schema names it.
    fn name(self) -> &'static str;
}

/// A state container of the data tree, whose leaves are `L`.
pub struct At<L> {
    path: String,
    leaves: PhantomData<fn(L)>,
}

impl<L: Leaf> At<L> {
    fn new(path: String) -> At<L> {
        At {
            path,
            leaves: PhantomData,
        }
    }

    /// The data path of `leaf` in this container.
    pub fn leaf(&self, leaf: L) -> String {
        format!("{}/{}", self.path, leaf.name())
    }
}

/// An enum of a container's leaves, each with its name in the schema.
macro_rules! leaves {
    ($(#[$doc:meta])* $name:ident { $($leaf:ident = $text:literal,)* }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum $name {
            $($leaf,)*
        }

        impl Leaf for $name {
            #[cfg(test)]
            const ALL: &'static [Self] = &[$($name::$leaf,)*];

            fn name(self) -> &'static str {
                match self {
                    $($name::$leaf => $text,)*
                }
            }
        }
    };
}

leaves!(
    /// `/ecofilter-balancer`.
    BalancerLeaf {
        ConfigHash = "balancing-config-hash",
    }
);

leaves!(
    /// `/ecofilter-balancer/link/state`.
    LinkLeaf {
        Status = "status",
        Reason = "reason",
    }
);

pub fn link_state(link: &str) -> At<LinkLeaf> {
    At::new(format!("{BALANCER}/link[name={}]/state", quote(link)))
}

leaves!(
    /// `/ecofilter-balancer/ecofilter-unit/state`.
    UnitLeaf {
        BypassMode = "bypass-mode",
        Status = "status",
        ActivePairs = "active-pairs",
    }
);

leaves!(
    /// `/ecofilter-balancer/ecofilter-unit/pair/state`.
    PairLeaf {
        Status = "status",
        ProbesLost = "probes-lost",
        StatusChanges = "status-changes",
        RoundsLost = "rounds-lost",
        RoundsLostInARow = "rounds-lost-in-a-row",
        Reason = "reason",
        TimeOnPathToLanNs = "time-on-path-to-lan-ns",
        TimeOnPathToWanNs = "time-on-path-to-wan-ns",
        LastChange = "last-change",
    }
);

leaves!(
    /// `/liveness/profile-status/ecofilter-unit`.
    ProfileUnitLeaf {
        Profile = "profile",
        Status = "status",
    }
);

leaves!(
    /// `/liveness/profile-status/ecofilter-unit/pair`.
    ProfilePairLeaf {
        Status = "status",
        RoundsLost = "rounds-lost",
        RoundsLostInARow = "rounds-lost-in-a-row",
        LastChange = "last-change",
        Reason = "reason",
    }
);

leaves!(
    /// `/liveness/profile-status/ecofilter-unit/pair/port`.
    ProfilePortLeaf {
        Side = "side",
        ProbesSent = "probes-sent",
        ProbesLost = "probes-lost",
        TimeOnPathNs = "time-on-path-ns",
    }
);

leaves!(
    /// `/board/port`.
    BoardPortLeaf {
        Usage = "usage",
    }
);

leaves!(
    /// `/board/port/lane`: what the lane is and what uses it.
    LaneLeaf {
        DevicePort = "device-port",
        Port = "port",
        UsedBy = "used-by",
    }
);

leaves!(
    /// A device port's status and counters: a configured port's `state`, or a lane of the
    /// board (the same leaves).
    DevicePortLeaf {
        OperStatus = "oper-status",
        InFrames = "counters/in-frames",
        InBytes = "counters/in-bytes",
        InDiscards = "counters/in-discards",
        InErrors = "counters/in-errors",
        OutFrames = "counters/out-frames",
        OutBytes = "counters/out-bytes",
        OutDiscards = "counters/out-discards",
        OutErrors = "counters/out-errors",
    }
);

leaves!(
    /// `/ecofilter-balancer/flow/state`.
    FlowLeaf {
        Entries = "entries",
        Packets = "packets",
        Bytes = "bytes",
    }
);

pub fn balancer() -> At<BalancerLeaf> {
    At::new(BALANCER.to_string())
}

pub fn unit_state(unit: &str) -> At<UnitLeaf> {
    At::new(format!(
        "{BALANCER}/ecofilter-unit[name={}]/state",
        quote(unit)
    ))
}

pub fn pair_state(unit: &str, pair: &str) -> At<PairLeaf> {
    At::new(format!(
        "{BALANCER}/ecofilter-unit[name={}]/pair[name={}]/state",
        quote(unit),
        quote(pair)
    ))
}

fn profile_unit_path(unit: &str) -> String {
    format!(
        "/ecofilter-balancer:liveness/profile-status/ecofilter-unit[name={}]",
        quote(unit)
    )
}

pub fn profile_unit(unit: &str) -> At<ProfileUnitLeaf> {
    At::new(profile_unit_path(unit))
}

fn profile_pair_path(unit: &str, pair: &str) -> String {
    format!("{}/pair[name={}]", profile_unit_path(unit), quote(pair))
}

pub fn profile_pair(unit: &str, pair: &str) -> At<ProfilePairLeaf> {
    At::new(profile_pair_path(unit, pair))
}

pub fn profile_port(unit: &str, pair: &str, port: &str) -> At<ProfilePortLeaf> {
    At::new(format!(
        "{}/port[name={}]",
        profile_pair_path(unit, pair),
        quote(port)
    ))
}

pub fn board_port(number: u32) -> At<BoardPortLeaf> {
    At::new(format!("{BOARD}/port[number='{number}']"))
}

fn lane_path(number: u32, lane: u32) -> String {
    format!("{BOARD}/port[number='{number}']/lane[lane='{lane}']")
}

pub fn board_lane(number: u32, lane: u32) -> At<LaneLeaf> {
    At::new(lane_path(number, lane))
}

/// The status and counters of a lane of the board.
pub fn lane_status(number: u32, lane: u32) -> At<DevicePortLeaf> {
    At::new(lane_path(number, lane))
}

/// The status and counters of a configured port.
pub fn port_state(port: &str) -> At<DevicePortLeaf> {
    At::new(format!(
        "/ecofilter-balancer:ports/port[name={}]/state",
        quote(port)
    ))
}

pub fn flow_state(flow: &str) -> At<FlowLeaf> {
    At::new(format!("{BALANCER}/flow[name={}]/state", quote(flow)))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use efb_yang::{DataPath, NodeKind, Schema};

    use super::*;

    fn paths<L: Leaf>(at: At<L>) -> Vec<String> {
        L::ALL.iter().map(|leaf| at.leaf(*leaf)).collect()
    }

    /// Every leaf of the table, under made-up keys.
    fn every_leaf() -> Vec<String> {
        [
            paths(balancer()),
            paths(link_state("l")),
            paths(unit_state("u")),
            paths(pair_state("u", "p")),
            paths(profile_unit("u")),
            paths(profile_pair("u", "p")),
            paths(profile_port("u", "p", "te1")),
            paths(board_port(1)),
            paths(board_lane(1, 0)),
            paths(lane_status(1, 0)),
            paths(port_state("te1")),
            paths(flow_state("f")),
        ]
        .concat()
    }

    #[test]
    fn the_table_is_the_schemas_state_leaves() {
        let schema = Schema::load().expect("schema");
        let mut in_table = BTreeSet::new();
        for path in every_leaf() {
            let parsed = DataPath::parse(&schema, &path).unwrap_or_else(|e| panic!("{path}: {e}"));
            let node = schema.node(parsed.node().expect("a node"));
            assert!(
                matches!(node.kind, NodeKind::Leaf) && !node.config,
                "{path} is not a state leaf"
            );
            assert!(
                in_table.insert(node.schema_path.clone()),
                "{path} twice in the table"
            );
        }
        let state_leaves: BTreeSet<String> = schema
            .nodes()
            .filter(|n| !n.config && !n.is_key)
            .filter(|n| matches!(n.kind, NodeKind::Leaf | NodeKind::LeafList))
            .filter(|n| schema.roots().contains(&schema.top(n.id)))
            .map(|n| n.schema_path.clone())
            .collect();
        let not_written: BTreeSet<String> = NOT_WRITTEN.iter().map(|p| p.to_string()).collect();
        let missing: Vec<&String> = state_leaves
            .difference(&in_table)
            .filter(|p| !not_written.contains(*p))
            .collect();
        assert!(
            missing.is_empty(),
            "state leaves not in the table: {missing:#?}"
        );
        let both: Vec<&String> = in_table.intersection(&not_written).collect();
        assert!(both.is_empty(), "in the table and NOT_WRITTEN: {both:#?}");
    }
}
