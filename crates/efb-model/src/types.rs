//! The configuration as typed values: what the rules, the balancing algorithm and the chip
//! compiler reason about. Read from a data tree by [`crate::read`], defaults from the schema.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

/// The whole configuration.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Config {
    pub balancing_method: BalancingMethod,
    pub ports: BTreeMap<String, Port>,
    pub links: BTreeMap<String, Link>,
    pub units: BTreeMap<String, Unit>,
    /// Flows by name; shared with earlier versions of the configuration, so that a commit
    /// touching one flow of 100 000 rebuilds one.
    pub flows: imbl::OrdMap<String, Arc<Flow>>,
    pub profiles: BTreeMap<String, Profile>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum BalancingMethod {
    #[default]
    Layer3,
    DstIp,
    Layer4,
}

impl BalancingMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            BalancingMethod::Layer3 => "layer-3",
            BalancingMethod::DstIp => "dst-ip",
            BalancingMethod::Layer4 => "layer-4",
        }
    }

    pub fn parse(text: &str) -> Option<BalancingMethod> {
        Some(match text {
            "layer-3" => BalancingMethod::Layer3,
            "dst-ip" => BalancingMethod::DstIp,
            "layer-4" => BalancingMethod::Layer4,
            _ => return None,
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Speed {
    G10,
    G25,
    G40,
    G50,
    G100,
}

impl Speed {
    pub fn parse(text: &str) -> Option<Speed> {
        Some(match text {
            "10g" => Speed::G10,
            "25g" => Speed::G25,
            "40g" => Speed::G40,
            "50g" => Speed::G50,
            "100g" => Speed::G100,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Speed::G10 => "10g",
            Speed::G25 => "25g",
            Speed::G40 => "40g",
            Speed::G50 => "50g",
            Speed::G100 => "100g",
        }
    }

    /// The rate in Gbit/s.
    pub fn gbps(self) -> u32 {
        match self {
            Speed::G10 => 10,
            Speed::G25 => 25,
            Speed::G40 => 40,
            Speed::G50 => 50,
            Speed::G100 => 100,
        }
    }

    /// 40G and 100G use all four lanes of a port.
    pub fn is_whole_port(self) -> bool {
        matches!(self, Speed::G40 | Speed::G100)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Port {
    pub name: String,
    pub number: u8,
    pub lane: Option<u8>,
    pub speed: Speed,
    pub mtu: u16,
    pub description: Option<String>,
    pub enabled: bool,
}

impl Port {
    /// The parity convention: even ports (lanes, for lane ports) face the LAN.
    pub fn is_lan_by_convention(&self) -> bool {
        self.lane.unwrap_or(self.number).is_multiple_of(2)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Link {
    pub name: String,
    pub lan_port: String,
    pub wan_port: String,
    pub description: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unit {
    pub name: String,
    pub cores: u16,
    /// Whether `cores` was set explicitly (the default of 1 is almost never right).
    pub cores_set: bool,
    pub liveness_profile: Option<String>,
    pub rebalance: bool,
    /// In configured order: the order is part of the balancing.
    pub pairs: Vec<Pair>,
    pub description: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pair {
    pub name: String,
    pub lan_port: String,
    pub wan_port: String,
    pub description: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Profile {
    pub name: String,
    pub initial_delay_ms: u32,
    pub interval_ms: u32,
    pub round_timeout_ms: u32,
    pub probes_down_count: u16,
    pub probes_up_count: u16,
    pub active_pairs: u16,
    pub description: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Flow {
    pub name: String,
    pub priority: u32,
    pub direction: Direction,
    /// Links the flow applies to; empty means every link.
    pub links: Vec<String>,
    pub matches: FlowMatch,
    pub action: Action,
    pub description: Option<String>,
}

impl Flow {
    pub fn applies_to_link(&self, link: &str) -> bool {
        self.links.is_empty() || self.links.iter().any(|l| l == link)
    }

    /// The order in which flows win where they overlap: priority, then the first name in
    /// byte order, so that two balancers with the same flows pick the same one (the chip's
    /// order among equal priorities is its own: the rules warn).
    pub fn rank(&self) -> (u32, std::cmp::Reverse<&str>) {
        (self.priority, std::cmp::Reverse(self.name.as_str()))
    }
}

/// Which directions of a session a flow matches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Only packets that match as written.
    #[default]
    AsWritten,
    /// Also the mirror: source and destination addresses and ports swapped.
    Both,
}

impl Direction {
    pub fn parse(text: &str) -> Option<Direction> {
        match text {
            "as-written" => Some(Direction::AsWritten),
            "both" => Some(Direction::Both),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    Bypass,
    Drop,
    ToUnit(String),
}

impl Action {
    pub fn as_str(&self) -> &'static str {
        match self {
            Action::Bypass => "bypass",
            Action::Drop => "drop",
            Action::ToUnit(_) => "to-ecofilter",
        }
    }
}

/// Match criteria; `None` matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FlowMatch {
    /// VLAN ids of the first, second and third tag.
    pub vlan_tags: [Option<u16>; 3],
    pub vlan_depth: Option<u8>,
    pub mpls_depth: Option<u8>,
    pub src_ipv4: Option<Prefix>,
    pub dst_ipv4: Option<Prefix>,
    pub src_ipv6: Option<Prefix>,
    pub dst_ipv6: Option<Prefix>,
    pub ip_proto: Option<u8>,
    pub src_port: Option<PortRange>,
    pub dst_port: Option<PortRange>,
    pub src_mac: Option<MacMatch>,
    pub dst_mac: Option<MacMatch>,
    pub packet_type: Option<u16>,
    pub llc_dsap: Option<u8>,
    pub llc_ssap: Option<u8>,
    /// MAC masks given without the address they mask (`src-mac-mask`, `dst-mac-mask`):
    /// meaningless, and reported by the rules.
    pub stray_masks: Vec<&'static str>,
}

/// An IPv4 or IPv6 prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Prefix {
    pub addr: IpAddr,
    pub len: u8,
}

impl Prefix {
    /// `192.0.2.0/24`, `2001:db8::/32`.
    pub fn parse(text: &str) -> Option<Prefix> {
        let (addr, len) = text.split_once('/')?;
        let addr: IpAddr = addr.parse().ok()?;
        let len: u8 = len.parse().ok()?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        (len <= max).then_some(Prefix { addr, len })
    }

    fn bits(addr: IpAddr) -> (u128, u32) {
        match addr {
            IpAddr::V4(a) => (u32::from(a) as u128, 32),
            IpAddr::V6(a) => (u128::from(a), 128),
        }
    }

    fn mask(&self) -> u128 {
        let (_, width) = Prefix::bits(self.addr);
        if self.len == 0 {
            0
        } else {
            let ones = (!0u128) << (128 - self.len as u32);
            ones >> (128 - width)
        }
    }

    pub fn contains(&self, addr: IpAddr) -> bool {
        if addr.is_ipv4() != self.addr.is_ipv4() {
            return false;
        }
        let mask = self.mask();
        (Prefix::bits(addr).0 & mask) == (Prefix::bits(self.addr).0 & mask)
    }

    /// Two prefixes overlap when one contains the other.
    pub fn overlaps(&self, other: &Prefix) -> bool {
        self.contains(other.addr) || other.contains(self.addr)
    }

    pub fn network_v4(&self) -> Option<Ipv4Addr> {
        match self.addr {
            IpAddr::V4(a) => Some(Ipv4Addr::from((u32::from(a) as u128 & self.mask()) as u32)),
            IpAddr::V6(_) => None,
        }
    }

    pub fn network_v6(&self) -> Option<Ipv6Addr> {
        match self.addr {
            IpAddr::V6(a) => Some(Ipv6Addr::from(u128::from(a) & self.mask())),
            IpAddr::V4(_) => None,
        }
    }
}

impl std::fmt::Display for Prefix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
}

/// An inclusive range of transport ports; a single port is `lo == hi`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PortRange {
    pub lo: u16,
    pub hi: u16,
}

impl PortRange {
    /// `179` or `1024-65535`. A reversed range is kept as written (the rules report it).
    pub fn parse(text: &str) -> Option<PortRange> {
        match text.split_once('-') {
            Some((lo, hi)) => Some(PortRange {
                lo: lo.parse().ok()?,
                hi: hi.parse().ok()?,
            }),
            None => {
                let port = text.parse().ok()?;
                Some(PortRange { lo: port, hi: port })
            }
        }
    }

    pub fn contains(&self, port: u16) -> bool {
        self.lo <= port && port <= self.hi
    }

    pub fn overlaps(&self, other: &PortRange) -> bool {
        self.lo <= other.hi && other.lo <= self.hi
    }
}

/// A MAC address and the bits of it that are compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MacMatch {
    pub addr: [u8; 6],
    pub mask: [u8; 6],
}

impl MacMatch {
    pub fn parse_mac(text: &str) -> Option<[u8; 6]> {
        let mut out = [0u8; 6];
        let mut parts = text.split(':');
        for byte in &mut out {
            *byte = u8::from_str_radix(parts.next()?, 16).ok()?;
        }
        parts.next().is_none().then_some(out)
    }

    pub fn matches(&self, mac: [u8; 6]) -> bool {
        (0..6).all(|i| mac[i] & self.mask[i] == self.addr[i] & self.mask[i])
    }

    /// Two masked matches overlap when they agree on every bit both compare.
    pub fn overlaps(&self, other: &MacMatch) -> bool {
        (0..6).all(|i| {
            let both = self.mask[i] & other.mask[i];
            self.addr[i] & both == other.addr[i] & both
        })
    }
}
