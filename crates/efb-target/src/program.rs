//! The emulation of `p4/efb.p4`: the ingress control applied to a parsed frame, against
//! the tables the controller wrote. Bound to a P4Info by name (ids come from the P4Info,
//! as in any P4Runtime client); a P4Info that is not this program binds to nothing and
//! the target then forwards nothing.

use std::net::IpAddr;

use efb_model::BalancingMethod;
use efb_p4info::names::{
    actions as a, counters, drop_reasons, ethertypes, fields as f, flows, tables as t,
};
use efb_p4info::{P4InfoIndex, contract};

use crate::packet::{self, Parsed};
use crate::tables::{ActionValue, Entry, Objects, Table, exact_key};

/// What the program does with a frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Out of a device port.
    Emit { port: u32, frame: Vec<u8> },
    /// To the port the `platform` table names as the CPU's (a keep-alive back from a
    /// filter): a packet-in when that is the chip's CPU port.
    ToCpu { port: u32, frame: Vec<u8> },
    /// Dropped, counted under a `drop_reasons` index.
    Drop { reason: u32 },
}

/// Resolved ids of the program's tables and actions.
#[derive(Clone, Debug)]
pub struct Program {
    ingress_port: u32,
    link_ports: u32,
    balancing: u32,
    platform: u32,
    /// The flow tables, in the order of [`flows::ALL`].
    flows: [FlowIds; 3],
    units: u32,
    buckets: u32,
    pairs: u32,
    from_link_lan: u32,
    from_link_wan: u32,
    from_pair_lan: u32,
    from_pair_wan: u32,
    from_cpu: u32,
    set_link_ports: u32,
    hash_layer3: u32,
    hash_layer4: u32,
    hash_dst_ip: u32,
    set_cpu_port: u32,
    unit_active: u32,
    to_pair: u32,
    pair_up: u32,
    pub drop_counter: u32,
    /// The initial default action of each table (from the contract, which the P4Info agrees with).
    pub initial_defaults: Vec<(u32, u32)>,
}

/// Packet attributes the flow table matches on.
/// One flow table: its id, actions, and for each field (P4Info order) which packet
/// attribute it reads.
#[derive(Clone, Debug)]
struct FlowIds {
    table: u32,
    bypass: u32,
    drop: u32,
    to_unit: Option<u32>,
    slots: Vec<Slot>,
}

impl FlowIds {
    fn bind(index: &P4InfoIndex, spec: &flows::FlowTable) -> Result<FlowIds, Vec<String>> {
        let problem = |e: efb_p4info::P4InfoError| vec![e.to_string()];
        let table = index.table_by_name(spec.table).map_err(problem)?;
        let action = |n: &str| index.action_by_name(n).map(|x| x.id).map_err(problem);
        let slots = table
            .fields
            .iter()
            .map(|fi| {
                slot(&fi.name)
                    .ok_or_else(|| vec![format!("flow field {} has no meaning here", fi.name)])
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(FlowIds {
            table: table.id,
            bypass: action(spec.bypass)?,
            drop: action(spec.drop)?,
            to_unit: spec.to_unit.map(action).transpose()?,
            slots,
        })
    }
}

/// The CPU port the program starts with (`platform`'s default action in efb.p4): that of
/// a two-pipe Tofino 1.
pub const INITIAL_CPU_PORT: u32 = 192;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    LinkId,
    VlanDepth,
    Vlan(usize),
    MplsDepth,
    SrcMac,
    DstMac,
    EtherType,
    LlcValid,
    LlcDsap,
    LlcSsap,
    Ipv4Src,
    Ipv4Dst,
    Ipv6Src,
    Ipv6Dst,
    IpProto,
    L4Valid,
    L4Src,
    L4Dst,
}

fn slot(name: &str) -> Option<Slot> {
    Some(match name {
        f::LINK_ID => Slot::LinkId,
        f::VLAN_DEPTH => Slot::VlanDepth,
        f::VLAN0_VID => Slot::Vlan(0),
        f::VLAN1_VID => Slot::Vlan(1),
        f::VLAN2_VID => Slot::Vlan(2),
        f::MPLS_DEPTH => Slot::MplsDepth,
        f::SRC_MAC => Slot::SrcMac,
        f::DST_MAC => Slot::DstMac,
        f::ETHER_TYPE => Slot::EtherType,
        f::LLC_VALID => Slot::LlcValid,
        f::LLC_DSAP => Slot::LlcDsap,
        f::LLC_SSAP => Slot::LlcSsap,
        f::IPV4_SRC => Slot::Ipv4Src,
        f::IPV4_DST => Slot::Ipv4Dst,
        f::IPV6_SRC => Slot::Ipv6Src,
        f::IPV6_DST => Slot::Ipv6Dst,
        f::IP_PROTO => Slot::IpProto,
        f::L4_VALID => Slot::L4Valid,
        f::L4_SRC_PORT => Slot::L4Src,
        f::L4_DST_PORT => Slot::L4Dst,
        _ => return None,
    })
}

/// How the frame entered: by which side of a link, or of a pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    Lan,
    Wan,
}

impl Program {
    /// Binds to a P4Info; `Err` lists why it is not the efb program.
    pub fn bind(index: &P4InfoIndex) -> Result<Program, Vec<String>> {
        let problems = contract::check(index);
        if !problems.is_empty() {
            return Err(problems);
        }
        let table = |n: &str| {
            index
                .table_by_name(n)
                .map(|x| x.id)
                .map_err(|e| vec![e.to_string()])
        };
        let action = |n: &str| {
            index
                .action_by_name(n)
                .map(|x| x.id)
                .map_err(|e| vec![e.to_string()])
        };
        let mut flow_tables = Vec::new();
        for spec in flows::ALL {
            flow_tables.push(FlowIds::bind(index, &spec)?);
        }
        let flows: [FlowIds; 3] = flow_tables
            .try_into()
            .map_err(|_| vec!["three flow tables".to_string()])?;
        let mut initial_defaults = Vec::new();
        for spec in contract::TABLES {
            initial_defaults.push((table(spec.name)?, action(spec.initial_default)?));
        }
        Ok(Program {
            ingress_port: table(t::INGRESS_PORT)?,
            link_ports: table(t::LINK_PORTS)?,
            balancing: table(t::BALANCING)?,
            platform: table(t::PLATFORM)?,
            flows,
            units: table(t::UNITS)?,
            buckets: table(t::BUCKETS)?,
            pairs: table(t::PAIRS)?,
            from_link_lan: action(a::FROM_LINK_LAN)?,
            from_link_wan: action(a::FROM_LINK_WAN)?,
            from_pair_lan: action(a::FROM_PAIR_LAN)?,
            from_pair_wan: action(a::FROM_PAIR_WAN)?,
            from_cpu: action(a::FROM_CPU)?,
            set_link_ports: action(a::SET_LINK_PORTS)?,
            hash_layer3: action(a::HASH_LAYER3)?,
            hash_layer4: action(a::HASH_LAYER4)?,
            hash_dst_ip: action(a::HASH_DST_IP)?,
            set_cpu_port: action(a::SET_CPU_PORT)?,
            unit_active: action(a::UNIT_ACTIVE)?,
            to_pair: action(a::TO_PAIR)?,
            pair_up: action(a::PAIR_UP)?,
            drop_counter: index
                .counter_by_name(counters::DROP_REASONS)
                .map_err(|e| vec![e.to_string()])?
                .id,
            initial_defaults,
        })
    }

    /// The ingress control for a frame that came in by a front-panel port.
    pub fn process(&self, objects: &Objects, ingress: u32, frame: &[u8]) -> Verdict {
        let class = self.exact(objects, self.ingress_port, &[(u128::from(ingress), 9)]);
        match class {
            Some((id, params)) if id == self.from_link_lan => {
                self.link_ingress(objects, param8(&params, 0), Side::Lan, frame)
            }
            Some((id, params)) if id == self.from_link_wan => {
                self.link_ingress(objects, param8(&params, 0), Side::Wan, frame)
            }
            Some((id, _)) if id == self.from_pair_lan => {
                self.filter_ingress(objects, Side::Lan, frame)
            }
            Some((id, _)) if id == self.from_pair_wan => {
                self.filter_ingress(objects, Side::Wan, frame)
            }
            _ => Verdict::Drop {
                reason: drop_reasons::UNKNOWN_PORT,
            },
        }
    }

    /// An exact-match lookup: the hit's action and parameters, or the table's default.
    fn exact(
        &self,
        objects: &Objects,
        table: u32,
        key: &[(u128, u32)],
    ) -> Option<(u32, Vec<u128>)> {
        let t = objects.tables.get(&table)?;
        match t.lookup_exact(&exact_key(key)) {
            Some(entry) => direct(&entry.action),
            None => self.default_of(table, t),
        }
    }

    fn default_of(&self, table: u32, t: &Table) -> Option<(u32, Vec<u128>)> {
        match &t.default {
            Some(d) => direct(&d.value),
            None => self
                .initial_defaults
                .iter()
                .find(|(tid, _)| *tid == table)
                .map(|(_, action)| (*action, Vec::new())),
        }
    }

    fn link_ports(&self, objects: &Objects, link: u8) -> Option<(u32, u32)> {
        match self.exact(objects, self.link_ports, &[(u128::from(link), 8)]) {
            Some((id, p)) if id == self.set_link_ports => Some((param32(&p, 0), param32(&p, 1))),
            _ => None,
        }
    }

    fn link_ingress(&self, objects: &Objects, link: u8, side: Side, frame: &[u8]) -> Verdict {
        let parsed = match packet::parse(frame) {
            Ok(p) => p,
            Err(_) => {
                return Verdict::Drop {
                    reason: drop_reasons::MALFORMED,
                };
            }
        };
        // The chip looks the flow up beside the link's ports (not after): the flow
        // counts the frame even when the link's entry is missing.
        let flows = self.flow_table(&parsed);
        let (action, params) = self.flow_action(objects, flows, link, &parsed, frame.len());
        let Some((lan, wan)) = self.link_ports(objects, link) else {
            return Verdict::Drop {
                reason: drop_reasons::LINK_MISSING,
            };
        };
        let other = if side == Side::Lan { wan } else { lan };
        let bypass = Verdict::Emit {
            port: other,
            frame: frame.to_vec(),
        };
        if action == flows.drop {
            return Verdict::Drop {
                reason: drop_reasons::FLOW_DROP,
            };
        }
        if Some(action) != flows.to_unit {
            return bypass;
        }
        // A frame with no IP inside never goes to a filter.
        let Some(ip) = parsed.ip else { return bypass };
        match self.balance(objects, param8(&params, 0), &ip) {
            Some((pair_lan, pair_wan, core)) => {
                let port = if side == Side::Lan {
                    pair_lan
                } else {
                    pair_wan
                };
                Verdict::Emit {
                    port,
                    frame: packet::insert_tag(frame, link, core),
                }
            }
            None => bypass,
        }
    }

    /// The flow table a frame meets: by the IP version of its innermost IP header.
    fn flow_table(&self, parsed: &Parsed) -> &FlowIds {
        match parsed.ip.as_ref().map(|i| i.src) {
            Some(IpAddr::V4(_)) => &self.flows[0],
            Some(IpAddr::V6(_)) => &self.flows[1],
            None => &self.flows[2],
        }
    }

    fn flow_action(
        &self,
        objects: &Objects,
        flows: &FlowIds,
        link: u8,
        parsed: &Parsed,
        len: usize,
    ) -> (u32, Vec<u128>) {
        let Some(table) = objects.tables.get(&flows.table) else {
            return (flows.bypass, Vec::new());
        };
        let key = Self::flow_key(&flows.slots, link, parsed);
        let hit = table.lookup_ternary(&key);
        if let Some(entry) = hit {
            entry.counter.count(len);
        }
        hit.and_then(|e: &Entry| direct(&e.action))
            .or_else(|| self.default_of(flows.table, table))
            .unwrap_or((flows.bypass, Vec::new()))
    }

    /// The values of a flow table's fields for a frame.
    fn flow_key(slots: &[Slot], link: u8, p: &Parsed) -> Vec<u128> {
        let ip = p.ip.as_ref();
        let v4 = |addr: Option<IpAddr>| match addr {
            Some(IpAddr::V4(a)) => u128::from(u32::from(a)),
            _ => 0,
        };
        let v6 = |addr: Option<IpAddr>| match addr {
            Some(IpAddr::V6(a)) => u128::from(a),
            _ => 0,
        };
        let ports = ip.and_then(|i| i.ports);
        slots
            .iter()
            .map(|s| match *s {
                Slot::LinkId => u128::from(link),
                Slot::VlanDepth => u128::from(p.vlan_depth),
                Slot::Vlan(i) => u128::from(p.vlan_vids[i]),
                Slot::MplsDepth => u128::from(p.mpls_depth),
                Slot::SrcMac => u128::from(p.src_mac),
                Slot::DstMac => u128::from(p.dst_mac),
                Slot::EtherType => u128::from(p.ether_type),
                Slot::LlcValid => u128::from(p.llc.is_some()),
                Slot::LlcDsap => u128::from(p.llc.map_or(0, |l| l.0)),
                Slot::LlcSsap => u128::from(p.llc.map_or(0, |l| l.1)),
                Slot::Ipv4Src => v4(ip.map(|i| i.src)),
                Slot::Ipv4Dst => v4(ip.map(|i| i.dst)),
                Slot::Ipv6Src => v6(ip.map(|i| i.src)),
                Slot::Ipv6Dst => v6(ip.map(|i| i.dst)),
                Slot::IpProto => u128::from(ip.map_or(0, |i| i.proto)),
                Slot::L4Valid => u128::from(ports.is_some()),
                Slot::L4Src => u128::from(ports.map_or(0, |x| x.0)),
                Slot::L4Dst => u128::from(ports.map_or(0, |x| x.1)),
            })
            .collect()
    }

    /// The unit's verdict for a session: (pair LAN port, pair WAN port, core), or `None`
    /// for software bypass (unit in bypass, bucket without pair, pair down).
    fn balance(
        &self,
        objects: &Objects,
        unit: u8,
        ip: &packet::IpHeader,
    ) -> Option<(u32, u32, u8)> {
        let (action, params) = self.exact(objects, self.units, &[(u128::from(unit), 8)])?;
        if action != self.unit_active {
            return None;
        }
        let mask = param32(&params, 0);
        let hash = key_hash(self.method(objects), ip);
        let bucket = hash & mask;
        let (action, params) = self.exact(
            objects,
            self.buckets,
            &[(u128::from(unit), 8), (u128::from(bucket), 16)],
        )?;
        if action != self.to_pair {
            return None;
        }
        let (pair, core) = (param8(&params, 0), param8(&params, 1));
        let (action, params) = self.exact(objects, self.pairs, &[(u128::from(pair), 8)])?;
        (action == self.pair_up).then(|| (param32(&params, 0), param32(&params, 1), core))
    }

    fn method(&self, objects: &Objects) -> BalancingMethod {
        let action = objects
            .tables
            .get(&self.balancing)
            .and_then(|t| self.default_of(self.balancing, t))
            .map(|(id, _)| id);
        match action {
            Some(id) if id == self.hash_layer4 => BalancingMethod::Layer4,
            Some(id) if id == self.hash_dst_ip => BalancingMethod::DstIp,
            Some(id) if id == self.hash_layer3 => BalancingMethod::Layer3,
            _ => BalancingMethod::Layer3,
        }
    }

    /// A frame back from a filter: tagged frames return to their link, keep-alives go to
    /// the controller, anything else is dropped.
    fn filter_ingress(&self, objects: &Objects, side: Side, frame: &[u8]) -> Verdict {
        if let Some((link, _core)) = packet::read_tag(frame) {
            return match self.link_ports(objects, link) {
                Some((lan, wan)) => Verdict::Emit {
                    port: if side == Side::Lan { lan } else { wan },
                    frame: packet::strip_tag(frame),
                },
                None => Verdict::Drop {
                    reason: drop_reasons::LINK_MISSING,
                },
            };
        }
        match packet::outer_ethertype(frame) {
            Some(ethertypes::KEEPALIVE) => Verdict::ToCpu {
                port: self.cpu_port(objects),
                frame: frame.to_vec(),
            },
            Some(ethertypes::EFB_TAG) | None => Verdict::Drop {
                reason: drop_reasons::MALFORMED,
            },
            Some(_) => Verdict::Drop {
                reason: drop_reasons::FROM_FILTER_UNTAGGED,
            },
        }
    }

    /// The CPU port the `platform` table names (the program's initial one until the
    /// controller sets it).
    fn cpu_port(&self, objects: &Objects) -> u32 {
        let written = objects
            .tables
            .get(&self.platform)
            .and_then(|t| t.default.as_ref())
            .and_then(|d| direct(&d.value));
        match written {
            Some((id, params)) if id == self.set_cpu_port => param32(&params, 0),
            _ => INITIAL_CPU_PORT,
        }
    }

    /// Whether a packet-out coming in by `cpu_port` gets through ingress: only by the
    /// port `ingress_port` marks as the CPU's (a drop reason otherwise).
    pub fn accepts_packet_out(&self, objects: &Objects, cpu_port: u32) -> Result<(), u32> {
        match self.exact(objects, self.ingress_port, &[(u128::from(cpu_port), 9)]) {
            Some((id, _)) if id == self.from_cpu => Ok(()),
            Some((id, _)) if self.is_front_panel_class(id) => Err(drop_reasons::PACKET_OUT_PORT),
            _ => Err(drop_reasons::UNKNOWN_PORT),
        }
    }

    fn is_front_panel_class(&self, action: u32) -> bool {
        [
            self.from_link_lan,
            self.from_link_wan,
            self.from_pair_lan,
            self.from_pair_wan,
        ]
        .contains(&action)
    }

    /// The pairs' ports as the `ingress_port` table cables them: port -> the other port
    /// of the same pair (where the emulated filter returns frames).
    pub fn pair_peers(&self, objects: &Objects) -> Vec<(u32, u32)> {
        let Some(table) = objects.tables.get(&self.ingress_port) else {
            return Vec::new();
        };
        let mut lan = std::collections::HashMap::new();
        let mut wan = std::collections::HashMap::new();
        for entry in table.entries.values() {
            let port = entry.matchers.first().map(|m| match *m {
                crate::tables::Matcher::Masked { value, .. } => value,
                crate::tables::Matcher::Range { low, .. } => low,
            });
            let (Some(port), Some((action, params))) = (port, direct(&entry.action)) else {
                continue;
            };
            let port = u32::try_from(port).unwrap_or(u32::MAX);
            if action == self.from_pair_lan {
                lan.insert(param8(&params, 0), port);
            } else if action == self.from_pair_wan {
                wan.insert(param8(&params, 0), port);
            }
        }
        lan.iter()
            .filter_map(|(pair, l)| wan.get(pair).map(|w| (*l, *w)))
            .collect()
    }
}

/// What efb.p4's `Hash.get` computes: CRC-32 over the field list the program builds, the
/// source and destination XORed (MODEL.md version 2). Written from the P4 program, not
/// taken from efb-balancing, so that a test through the target checks the library.
fn key_hash(method: BalancingMethod, ip: &packet::IpHeader) -> u32 {
    let octets = |a: IpAddr| match a {
        IpAddr::V4(a) => a.octets().to_vec(),
        IpAddr::V6(a) => a.octets().to_vec(),
    };
    let (src, dst) = (octets(ip.src), octets(ip.dst));
    // The parser fills the ports only for protocols that have them; otherwise they are 0.
    let (sport, dport) = ip.ports.unwrap_or((0, 0));
    let mut fields: Vec<u8> = src.iter().zip(&dst).map(|(a, b)| a ^ b).collect();
    match method {
        BalancingMethod::DstIp => fields = dst,
        BalancingMethod::Layer3 => fields.push(ip.proto),
        BalancingMethod::Layer4 => {
            fields.push(ip.proto);
            fields.extend_from_slice(&(sport ^ dport).to_be_bytes());
        }
    }
    crc32fast::hash(&fields)
}

fn direct(value: &ActionValue) -> Option<(u32, Vec<u128>)> {
    match value {
        ActionValue::Direct { action_id, params } => Some((*action_id, params.clone())),
        _ => None,
    }
}

fn param8(params: &[u128], i: usize) -> u8 {
    params
        .get(i)
        .map_or(0, |v| u8::try_from(*v).unwrap_or(u8::MAX))
}

fn param32(params: &[u128], i: usize) -> u32 {
    params
        .get(i)
        .map_or(0, |v| u32::try_from(*v).unwrap_or(u32::MAX))
}
