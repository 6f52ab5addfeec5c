//! One interface as OpenConfig describes it, and the one table of the leaves served for it
//! (path under `/interfaces/interface[name=...]`, type, how to read and write it): every
//! Get, Subscribe, Set and client decoding goes through [`LEAVES`], so a leaf is added in
//! one place.

/// The state of one interface (a front-panel port or lane).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Interface {
    pub name: String,
    pub description: Option<String>,
    /// `config/enabled`: admin-status UP when true.
    pub enabled: bool,
    /// `state/oper-status`: UP or DOWN (a disabled interface is DOWN).
    pub oper_up: bool,
    /// `state/last-change`: when oper-status last changed, ns since the Unix epoch (0: never).
    pub last_change_ns: u64,
    /// `state/ifindex`: the device port (what the chip and P4Runtime call the port).
    pub ifindex: Option<u32>,
    pub mtu: Option<u16>,
    /// `ethernet/state/port-speed`, in Gbit/s (10, 25, 40, 50, 100).
    pub speed_gbps: Option<u32>,
    pub counters: Counters,
}

/// `state/counters`, indexed by [`Counter`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters(pub [u64; Counter::ALL.len()]);

impl Counters {
    pub fn get(&self, counter: Counter) -> u64 {
        self.0[counter as usize]
    }

    pub fn set(&mut self, counter: Counter, value: u64) {
        self.0[counter as usize] = value;
    }
}

/// The counters served, named as `openconfig-interfaces` names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Counter {
    InOctets,
    InPkts,
    InUnicastPkts,
    InBroadcastPkts,
    InMulticastPkts,
    InDiscards,
    InErrors,
    InFcsErrors,
    OutOctets,
    OutPkts,
    OutUnicastPkts,
    OutBroadcastPkts,
    OutMulticastPkts,
    OutDiscards,
    OutErrors,
    CarrierTransitions,
}

impl Counter {
    pub const ALL: [Counter; 16] = [
        Counter::InOctets,
        Counter::InPkts,
        Counter::InUnicastPkts,
        Counter::InBroadcastPkts,
        Counter::InMulticastPkts,
        Counter::InDiscards,
        Counter::InErrors,
        Counter::InFcsErrors,
        Counter::OutOctets,
        Counter::OutPkts,
        Counter::OutUnicastPkts,
        Counter::OutBroadcastPkts,
        Counter::OutMulticastPkts,
        Counter::OutDiscards,
        Counter::OutErrors,
        Counter::CarrierTransitions,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Counter::InOctets => "in-octets",
            Counter::InPkts => "in-pkts",
            Counter::InUnicastPkts => "in-unicast-pkts",
            Counter::InBroadcastPkts => "in-broadcast-pkts",
            Counter::InMulticastPkts => "in-multicast-pkts",
            Counter::InDiscards => "in-discards",
            Counter::InErrors => "in-errors",
            Counter::InFcsErrors => "in-fcs-errors",
            Counter::OutOctets => "out-octets",
            Counter::OutPkts => "out-pkts",
            Counter::OutUnicastPkts => "out-unicast-pkts",
            Counter::OutBroadcastPkts => "out-broadcast-pkts",
            Counter::OutMulticastPkts => "out-multicast-pkts",
            Counter::OutDiscards => "out-discards",
            Counter::OutErrors => "out-errors",
            Counter::CarrierTransitions => "carrier-transitions",
        }
    }
}

/// A leaf's value, before it is encoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Text(String),
    /// A 64-bit number (a string in JSON_IETF, as RFC 7951 writes them).
    Uint(u64),
    /// A narrower number (uint32, uint16: a number in every JSON).
    Number(u32),
    Bool(bool),
    /// An enumeration value (`UP`): a string in every encoding.
    Enum(&'static str),
    /// An identity, with the module that defines it (`iana-if-type`, `ethernetCsmacd`).
    Identity(&'static str, &'static str),
}

/// Which part of the data a leaf is (GetRequest's data type).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    Config,
    /// State that mirrors or derives from configuration (`state/enabled`, `state/mtu`).
    State,
    /// State the box makes: oper-status, last-change, counters.
    Operational,
}

/// How a leaf changes, which decides how it may be subscribed to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Changes {
    /// By events (configuration, a cable): ON_CHANGE is served.
    OnEvent,
    /// With every frame: SAMPLE only.
    Continuously,
}

/// One served leaf: its path under the interface, and how it is read and written.
pub struct Leaf {
    pub path: &'static [&'static str],
    pub part: Part,
    pub changes: Changes,
    pub read: fn(&Interface) -> Option<Value>,
    /// How a client sets the leaf back from a value it read (None: the leaf is derived).
    pub write: Option<fn(&mut Interface, &Value) -> bool>,
}

const ETHERNET_CSMACD: Value = Value::Identity("iana-if-type", "ethernetCsmacd");

fn up_down(up: bool) -> Value {
    Value::Enum(if up { "UP" } else { "DOWN" })
}

/// The identity of a speed in Gbit/s, for the speeds the board's ports run at.
pub fn speed_identity(gbps: u32) -> Option<Value> {
    let name = match gbps {
        10 => "SPEED_10GB",
        25 => "SPEED_25GB",
        40 => "SPEED_40GB",
        50 => "SPEED_50GB",
        100 => "SPEED_100GB",
        _ => return None,
    };
    Some(Value::Identity("openconfig-if-ethernet", name))
}

/// The speed an identity (`SPEED_25GB`, module-qualified or not) names, in Gbit/s.
pub fn speed_of(value: &Value) -> Option<u32> {
    let name = match value {
        Value::Identity(_, name) | Value::Enum(name) => *name,
        Value::Text(text) => text.rsplit(':').next().unwrap_or(text),
        _ => return None,
    };
    name.strip_prefix("SPEED_")?
        .strip_suffix("GB")?
        .parse()
        .ok()
}

fn text(value: &Value) -> Option<&str> {
    match value {
        Value::Text(t) => Some(t),
        Value::Enum(t) => Some(t),
        _ => None,
    }
}

fn uint(value: &Value) -> Option<u64> {
    match value {
        Value::Uint(n) => Some(*n),
        Value::Number(n) => Some((*n).into()),
        _ => None,
    }
}

macro_rules! counter_leaf {
    ($c:expr, $name:literal) => {
        Leaf {
            path: &["state", "counters", $name],
            part: Part::Operational,
            changes: if matches!($c, Counter::CarrierTransitions) {
                Changes::OnEvent
            } else {
                Changes::Continuously
            },
            read: |i| Some(Value::Uint(i.counters.get($c))),
            write: Some(|i, v| uint(v).map(|n| i.counters.set($c, n)).is_some()),
        }
    };
}

/// Every leaf served, in the order a Get lists them.
pub static LEAVES: &[Leaf] = &[
    Leaf {
        path: &["name"],
        part: Part::Config,
        changes: Changes::OnEvent,
        read: |i| Some(Value::Text(i.name.clone())),
        write: None,
    },
    Leaf {
        path: &["config", "name"],
        part: Part::Config,
        changes: Changes::OnEvent,
        read: |i| Some(Value::Text(i.name.clone())),
        write: None,
    },
    Leaf {
        path: &["config", "type"],
        part: Part::Config,
        changes: Changes::OnEvent,
        read: |_| Some(ETHERNET_CSMACD),
        write: None,
    },
    Leaf {
        path: &["config", "enabled"],
        part: Part::Config,
        changes: Changes::OnEvent,
        read: |i| Some(Value::Bool(i.enabled)),
        write: Some(|i, v| match v {
            Value::Bool(b) => {
                i.enabled = *b;
                true
            }
            _ => false,
        }),
    },
    Leaf {
        path: &["config", "description"],
        part: Part::Config,
        changes: Changes::OnEvent,
        read: |i| i.description.clone().map(Value::Text),
        write: Some(|i, v| {
            i.description = text(v).map(str::to_string);
            i.description.is_some()
        }),
    },
    Leaf {
        path: &["config", "mtu"],
        part: Part::Config,
        changes: Changes::OnEvent,
        read: |i| i.mtu.map(|m| Value::Number(m.into())),
        write: Some(|i, v| {
            i.mtu = uint(v).and_then(|m| u16::try_from(m).ok());
            i.mtu.is_some()
        }),
    },
    Leaf {
        path: &["state", "name"],
        part: Part::State,
        changes: Changes::OnEvent,
        read: |i| Some(Value::Text(i.name.clone())),
        write: None,
    },
    Leaf {
        path: &["state", "type"],
        part: Part::State,
        changes: Changes::OnEvent,
        read: |_| Some(ETHERNET_CSMACD),
        write: None,
    },
    Leaf {
        path: &["state", "enabled"],
        part: Part::State,
        changes: Changes::OnEvent,
        read: |i| Some(Value::Bool(i.enabled)),
        write: None,
    },
    Leaf {
        path: &["state", "description"],
        part: Part::State,
        changes: Changes::OnEvent,
        read: |i| i.description.clone().map(Value::Text),
        write: None,
    },
    Leaf {
        path: &["state", "mtu"],
        part: Part::State,
        changes: Changes::OnEvent,
        read: |i| i.mtu.map(|m| Value::Number(m.into())),
        write: None,
    },
    Leaf {
        path: &["state", "ifindex"],
        part: Part::State,
        changes: Changes::OnEvent,
        read: |i| i.ifindex.map(Value::Number),
        write: Some(|i, v| {
            i.ifindex = uint(v).and_then(|n| u32::try_from(n).ok());
            i.ifindex.is_some()
        }),
    },
    Leaf {
        path: &["state", "admin-status"],
        part: Part::Operational,
        changes: Changes::OnEvent,
        read: |i| Some(up_down(i.enabled)),
        write: Some(|i, v| match text(v) {
            Some(s) => {
                i.enabled = s == "UP";
                true
            }
            None => false,
        }),
    },
    Leaf {
        path: &["state", "oper-status"],
        part: Part::Operational,
        changes: Changes::OnEvent,
        read: |i| Some(up_down(i.oper_up)),
        write: Some(|i, v| match text(v) {
            Some(s) => {
                i.oper_up = s == "UP";
                true
            }
            None => false,
        }),
    },
    Leaf {
        path: &["state", "last-change"],
        part: Part::Operational,
        changes: Changes::OnEvent,
        read: |i| Some(Value::Uint(i.last_change_ns)),
        write: Some(|i, v| uint(v).map(|n| i.last_change_ns = n).is_some()),
    },
    counter_leaf!(Counter::InOctets, "in-octets"),
    counter_leaf!(Counter::InPkts, "in-pkts"),
    counter_leaf!(Counter::InUnicastPkts, "in-unicast-pkts"),
    counter_leaf!(Counter::InBroadcastPkts, "in-broadcast-pkts"),
    counter_leaf!(Counter::InMulticastPkts, "in-multicast-pkts"),
    counter_leaf!(Counter::InDiscards, "in-discards"),
    counter_leaf!(Counter::InErrors, "in-errors"),
    counter_leaf!(Counter::InFcsErrors, "in-fcs-errors"),
    counter_leaf!(Counter::OutOctets, "out-octets"),
    counter_leaf!(Counter::OutPkts, "out-pkts"),
    counter_leaf!(Counter::OutUnicastPkts, "out-unicast-pkts"),
    counter_leaf!(Counter::OutBroadcastPkts, "out-broadcast-pkts"),
    counter_leaf!(Counter::OutMulticastPkts, "out-multicast-pkts"),
    counter_leaf!(Counter::OutDiscards, "out-discards"),
    counter_leaf!(Counter::OutErrors, "out-errors"),
    counter_leaf!(Counter::CarrierTransitions, "carrier-transitions"),
    Leaf {
        path: &["ethernet", "config", "port-speed"],
        part: Part::Config,
        changes: Changes::OnEvent,
        read: |i| i.speed_gbps.and_then(speed_identity),
        write: None,
    },
    Leaf {
        path: &["ethernet", "state", "port-speed"],
        part: Part::State,
        changes: Changes::OnEvent,
        read: |i| i.speed_gbps.and_then(speed_identity),
        write: Some(|i, v| {
            i.speed_gbps = speed_of(v);
            i.speed_gbps.is_some()
        }),
    },
];

/// The module that defines the first element of a leaf's path (for RFC 7951 names and
/// for Capabilities).
pub fn module_of(path: &[&str]) -> &'static str {
    if path.first() == Some(&"ethernet") {
        "openconfig-if-ethernet"
    } else {
        "openconfig-interfaces"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_counter_has_its_leaf_and_the_leaf_reads_that_counter() {
        for (n, counter) in Counter::ALL.iter().enumerate() {
            assert_eq!(*counter as usize, n, "Counter::ALL is in declaration order");
            let leaf = LEAVES
                .iter()
                .find(|l| l.path == ["state", "counters", counter.name()])
                .unwrap_or_else(|| panic!("no leaf for {}", counter.name()));
            let mut interface = Interface::default();
            interface.counters.set(*counter, 41 + n as u64);
            assert_eq!((leaf.read)(&interface), Some(Value::Uint(41 + n as u64)));
        }
    }

    #[test]
    fn what_a_writable_leaf_reads_it_writes_back() {
        let mut interface = Interface {
            name: "p1".into(),
            description: Some("to the core".into()),
            enabled: false,
            oper_up: true,
            last_change_ns: 7,
            ifindex: Some(132),
            mtu: Some(9000),
            speed_gbps: Some(100),
            counters: Counters::default(),
        };
        for (n, counter) in Counter::ALL.iter().enumerate() {
            interface.counters.set(*counter, n as u64 * 3 + 1);
        }
        let mut back = Interface {
            name: "p1".into(),
            ..Interface::default()
        };
        for leaf in LEAVES {
            if let (Some(write), Some(value)) = (leaf.write, (leaf.read)(&interface)) {
                assert!(
                    write(&mut back, &value),
                    "{:?} refused {value:?}",
                    leaf.path
                );
            }
        }
        assert_eq!(back, interface);
    }
}
