//! The emulation of `p4/efb.p4`: the ingress control applied to a parsed frame, against
//! the tables the controller wrote. Bound to a P4Info by name (ids come from the P4Info,
//! as in any P4Runtime client); a P4Info that is not this program binds to nothing and
//! the target then forwards nothing.

use efb_model::BalancingMethod;
use efb_p4info::contract::{self, Departure};
use efb_p4info::names::{
    ActionName, FieldName, RegisterName, TableName, actions as a, counters, drop_reasons,
    ethertypes, fields as f, flows, registers as r, tables as t,
};
use efb_p4info::{P4InfoError, P4InfoIndex};

use crate::packet::{self, Keepalive, PacketOut};
use crate::registers::Register;
use crate::tables::{ActionValue, Entry, Objects, Table, exact_key};

/// What the program does with a frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Out of a device port; `stamp_departure`: a packet-out, whose keep-alive (if it is
    /// one) gets its departure time in egress.
    Emit {
        port: u32,
        frame: Vec<u8>,
        stamp_departure: bool,
    },
    /// A packet-out to a multicast group (`mcast_grp_a`): the traffic manager makes one
    /// copy per replica, and egress stamps each one ([`egress_keepalive`]).
    Replicate { group: u16, frame: Vec<u8> },
    /// Dropped in ingress, counted under a `drop_reasons` index with `bytes` (the frame
    /// and its FCS).
    Drop { reason: u32, bytes: usize },
    /// Dropped without a count: by egress (an IP length past the frame), or consumed in
    /// ingress (`drop_ctl`: a keep-alive recorded that the controller did not ask for).
    Lost,
}

/// Where ingress sends a frame, and the frame it sends.
enum Forward {
    /// `ucast_egress_port`.
    Port(u32, Vec<u8>),
    /// `ucast_egress_port` of a packet-out, whose keep-alive egress stamps.
    PacketOut(u32, Vec<u8>),
    /// `mcast_grp_a`.
    Group(u16, Vec<u8>),
    /// Nowhere: marked for a counted drop, or consumed.
    Nowhere,
}

/// A table's id in the P4Info the program is bound to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct TableId(u32);

/// An action's id in the P4Info the program is bound to: typed apart from a table's, so
/// that the emulated control cannot compare one with the other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ActionId(u32);

/// The keep-alive registers' ids in the P4Info the program is bound to.
#[derive(Clone, Copy, Debug)]
struct KeepaliveRegisters {
    /// Per port a keep-alive left by (cell = that device port).
    seq: u32,
    returns: u32,
    path: u32,
    arrival: u32,
    /// Per unit (cell = the keep-alive's unit id).
    rounds: u32,
    /// Per unit and parity of the round's number (cell = [`tally_cell`]).
    copies: u32,
    counted: u32,
}

impl KeepaliveRegisters {
    fn bind(index: &P4InfoIndex) -> Result<KeepaliveRegisters, NotTheProgram> {
        let id = |n: RegisterName| index.register_by_name(n).map(|x| x.id);
        Ok(KeepaliveRegisters {
            seq: id(r::KEEPALIVE_SEQ)?,
            returns: id(r::KEEPALIVE_RETURNS)?,
            path: id(r::KEEPALIVE_PATH)?,
            arrival: id(r::KEEPALIVE_ARRIVAL)?,
            rounds: id(r::KEEPALIVE_ROUNDS)?,
            copies: id(r::KEEPALIVE_COPIES)?,
            counted: id(r::KEEPALIVE_COUNTED)?,
        })
    }
}

/// Resolved ids of the program's tables and actions.
#[derive(Clone, Debug)]
pub struct Program {
    ingress_port: TableId,
    link_ports: TableId,
    balancing: TableId,
    platform: TableId,
    /// `frame_classes`: its id and the packet attribute each of its fields reads.
    frame_classes: TableId,
    class_slots: Vec<Slot>,
    set_frame_class: ActionId,
    /// The flow tables, in the order of [`flows::ALL`].
    flows: [FlowIds; 3],
    units: TableId,
    buckets: TableId,
    pairs: TableId,
    from_link_lan: ActionId,
    from_link_wan: ActionId,
    from_pair_lan: ActionId,
    from_pair_wan: ActionId,
    from_cpu: ActionId,
    set_link_ports: ActionId,
    hash_layer4: ActionId,
    hash_dst_ip: ActionId,
    set_cpu_port: ActionId,
    unit_active: ActionId,
    to_pair: ActionId,
    pair_up: ActionId,
    keepalive: KeepaliveRegisters,
    pub drop_counter: u32,
    /// The initial default action of each table (from the contract, which the P4Info agrees with).
    initial_defaults: Vec<(TableId, ActionId)>,
}

/// Packet attributes the flow table matches on.
/// One flow table: its id, actions, and for each field (P4Info order) which packet
/// attribute it reads.
#[derive(Clone, Debug)]
struct FlowIds {
    table: TableId,
    drop: ActionId,
    to_unit: Option<ActionId>,
    slots: Vec<Slot>,
}

/// Why a P4Info is not the efb program (the target then runs no program: every frame is
/// dropped).
#[derive(Debug, thiserror::Error)]
pub enum NotTheProgram {
    #[error("{}", departures.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Contract { departures: Vec<Departure> },
    #[error(transparent)]
    Missing(#[from] P4InfoError),
    #[error("field {field} of {table} has no meaning here")]
    UnknownField { table: String, field: String },
}

/// What each field of a table reads, in the P4Info's order.
fn slots(table: &efb_p4info::TableInfo) -> Result<Vec<Slot>, NotTheProgram> {
    table
        .fields
        .iter()
        .map(|fi| {
            slot(&fi.name).ok_or_else(|| NotTheProgram::UnknownField {
                table: table.name.clone(),
                field: fi.name.clone(),
            })
        })
        .collect()
}

impl FlowIds {
    fn bind(index: &P4InfoIndex, spec: &flows::FlowTable) -> Result<FlowIds, NotTheProgram> {
        let table = index.table_by_name(spec.table)?;
        let action = |n: ActionName| index.action_by_name(n).map(|x| ActionId(x.id));
        let slots = slots(table)?;
        Ok(FlowIds {
            table: TableId(table.id),
            drop: action(spec.drop)?,
            to_unit: spec.to_unit.map(action).transpose()?,
            slots,
        })
    }
}

/// The CPU port the program starts with (`platform`'s default action in efb.p4): that of
/// a two-pipe Tofino 1.
pub const INITIAL_CPU_PORT: u32 = 192;

/// The bucket table's slot number (`md.bucket_index`): the unit's base | its bucket.
const BUCKET_INDEX_BITS: u32 = 18;
const BUCKET_INDEX_MASK: u32 = (1 << BUCKET_INDEX_BITS) - 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    FrameClass,
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
    Some(match FieldName::find(name)? {
        f::FRAME_CLASS => Slot::FrameClass,
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

impl Program {
    /// Binds to a P4Info; `Err` says why it is not the efb program.
    pub fn bind(index: &P4InfoIndex) -> Result<Program, NotTheProgram> {
        let departures = contract::check(index);
        if !departures.is_empty() {
            return Err(NotTheProgram::Contract { departures });
        }
        let table = |n: TableName| index.table_by_name(n).map(|x| TableId(x.id));
        let action = |n: ActionName| index.action_by_name(n).map(|x| ActionId(x.id));
        let [ipv4, ipv6, other] = flows::ALL;
        let flows = [
            FlowIds::bind(index, &ipv4)?,
            FlowIds::bind(index, &ipv6)?,
            FlowIds::bind(index, &other)?,
        ];
        let classes = index.table_by_name(t::FRAME_CLASSES)?;
        let mut initial_defaults = Vec::new();
        for spec in contract::TABLES {
            initial_defaults.push((table(spec.name)?, action(spec.initial_default)?));
        }
        Ok(Program {
            ingress_port: table(t::INGRESS_PORT)?,
            link_ports: table(t::LINK_PORTS)?,
            balancing: table(t::BALANCING)?,
            platform: table(t::PLATFORM)?,
            frame_classes: TableId(classes.id),
            class_slots: slots(classes)?,
            set_frame_class: action(a::SET_FRAME_CLASS)?,
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
            hash_layer4: action(a::HASH_LAYER4)?,
            hash_dst_ip: action(a::HASH_DST_IP)?,
            set_cpu_port: action(a::SET_CPU_PORT)?,
            unit_active: action(a::UNIT_ACTIVE)?,
            to_pair: action(a::TO_PAIR)?,
            pair_up: action(a::PAIR_UP)?,
            keepalive: KeepaliveRegisters::bind(index)?,
            drop_counter: index.counter_by_name(counters::DROP_REASONS)?.id,
            initial_defaults,
        })
    }

    /// The ingress control of efb.p4 for `frame` entering by device port `ingress` (a
    /// packet-out enters by a CPU port, its header first), statement for statement; then
    /// what egress does with it, given the frame's length as it was received.
    pub fn process(&self, objects: &Objects, ingress: u32, frame: &[u8], rx_ns: u64) -> Verdict {
        let h = packet::parse(ingress, frame);
        let mut md = Metadata::default();
        // Counters count what the chip's do: the frame and its 4-byte FCS.
        let wire_len = frame.len() + FCS;

        self.ingress_port_table(objects, ingress, &h, &mut md);
        md.method = self.method(objects);
        let lkp = Lookup::of(&h);
        let hash = lkp.hash(md.method);

        let link_frame = md.from_link && !h.parser_err && !h.malformed;
        let returning = md.from_pair && h.efb_tag.is_some();
        if link_frame || returning {
            match self.link_ports(objects, md.link_id) {
                Some((lan, wan)) => (md.lan_port, md.wan_port) = (lan, wan),
                None => md.mark_drop(drop_reasons::LINK_MISSING),
            }
        }
        let mut check_length = None;
        if link_frame {
            let ip_len = match (&h.ipv4, &h.ipv6) {
                (Some(v4), _) => Some(v4.total_len),
                (None, Some(v6)) => Some(v6.payload_len.saturating_add(40)),
                _ => None,
            };
            if let Some(ip_len) = ip_len {
                check_length = Some(ip_offset(&h).saturating_add(ip_len));
            }
            md.frame_class = self.frame_class(objects, &lkp, md.link_id);
            self.flows(objects, &lkp, &mut md, wire_len);
        }

        self.keepalive_registers(objects, &h, &md, rx_ns);

        let forward = if md.drop.is_some() {
            // Unknown port or link: counted below.
            Forward::Nowhere
        } else if let Some(header) = h.packet_out {
            packet_out(&mut md, header, frame)
        } else if returning {
            let port = if md.side_wan {
                md.wan_port
            } else {
                md.lan_port
            };
            Forward::Port(port, packet::strip_tag(frame))
        } else if md.from_pair {
            self.back_from_filter(objects, &h, &mut md, ingress, frame, rx_ns)
        } else if !link_frame {
            md.mark_drop(drop_reasons::MALFORMED);
            Forward::Nowhere
        } else {
            self.operator_frame(objects, &mut md, frame, hash)
        };

        if let Some(reason) = md.drop {
            return Verdict::Drop {
                reason,
                bytes: wire_len,
            };
        }
        match forward {
            Forward::Port(port, out) => egress(port, out, false, check_length, wire_len),
            Forward::PacketOut(port, out) => egress(port, out, true, check_length, wire_len),
            Forward::Group(group, frame) => Verdict::Replicate { group, frame },
            Forward::Nowhere => Verdict::Lost,
        }
    }

    /// A frame back from a filter, untagged: a keep-alive goes to the controller when it
    /// asks for it (the port `platform` names as the CPU's, with the packet-in header:
    /// where and when, on the ingress parser's clock), is consumed otherwise.
    fn back_from_filter(
        &self,
        objects: &Objects,
        h: &packet::Headers,
        md: &mut Metadata,
        ingress: u32,
        frame: &[u8],
        rx_ns: u64,
    ) -> Forward {
        if h.parser_err {
            // It ends inside a header (a keep-alive or a tag cut short).
            md.mark_drop(drop_reasons::MALFORMED);
            return Forward::Nowhere;
        }
        match h.keepalive {
            Some(ka) if ka.punt() => {
                let mut out = packet_in_header(ingress, rx_ns);
                out.extend_from_slice(frame);
                Forward::Port(self.cpu_port(objects), out)
            }
            // Recorded already: `drop_ctl`, which no drop reason counts.
            Some(_) => Forward::Nowhere,
            None => {
                md.mark_drop(drop_reasons::FROM_FILTER_UNTAGGED);
                Forward::Nowhere
            }
        }
    }

    /// A frame from an operator link: bypass (the link's other port) unless the flow sends
    /// it to a unit and a live pair takes its bucket (then tagged, to the pair's port).
    fn operator_frame(
        &self,
        objects: &Objects,
        md: &mut Metadata,
        frame: &[u8],
        hash: u32,
    ) -> Forward {
        if md.flow_drop {
            md.mark_drop(drop_reasons::FLOW_DROP);
            return Forward::Nowhere;
        }
        if md.unit_id != 0
            && let Some((port, core)) = self.balance(objects, md.unit_id, md.side_wan, hash)
        {
            return Forward::Port(port, packet::insert_tag(frame, md.link_id, core));
        }
        let bypass = if md.side_wan {
            md.lan_port
        } else {
            md.wan_port
        };
        Forward::Port(bypass, frame.to_vec())
    }

    /// A keep-alive back from a filter: efb.p4 sends it to the CPU port, whose egress
    /// records it in the keep-alive registers (by the port it left by). The emulated
    /// pipeline takes no time, so it is recorded here, at its arrival.
    fn keepalive_registers(
        &self,
        objects: &Objects,
        h: &packet::Headers,
        md: &Metadata,
        rx_ns: u64,
    ) {
        let Some(ka) = h.keepalive else { return };
        if md.from_pair && !h.parser_err {
            self.record_return(objects, ka, rx_ns);
        }
    }

    /// Egress of a copy of a keep-alive round (`bridged.round`): `keepalive_round_enter`,
    /// the round is its unit's newest from now on, and `keepalive_copy_tally`.
    pub fn round_enters(&self, objects: &Objects, copy: &[u8]) {
        if packet::outer_ethertype(copy) != Some(ethertypes::KEEPALIVE) {
            return;
        }
        let Some(ka) = copy.get(KEEPALIVE_OFFSET..).and_then(Keepalive::read) else {
            return;
        };
        if let Some(r) = register(objects, self.keepalive.rounds) {
            r.set(usize::from(ka.unit_id), ka.seq);
        }
        if let Some(r) = register(objects, self.keepalive.copies) {
            r.increment(tally_cell(ka));
        }
    }

    /// `keepalive_round_read`, `keepalive_behind`, `keepalive_newer`, and only for a
    /// return that counts `keepalive_count`, `keepalive_path_write`,
    /// `keepalive_arrival_write` and `keepalive_return_tally`: a late return (its unit's newest round is another,
    /// `ka_behind` != 0), a duplicate or an overtaken round is not a return.
    fn record_return(&self, objects: &Objects, ka: Keepalive, rx_ns: u64) {
        let ids = self.keepalive;
        // out_port[8:0]: the device port it left by.
        let cell = usize::from(ka.out_port & 0x1FF);
        let round = register(objects, ids.rounds)
            .and_then(|r| r.get(usize::from(ka.unit_id)))
            .unwrap_or(0);
        let behind = round.wrapping_sub(ka.seq);
        let newer =
            behind == 0 && register(objects, ids.seq).is_some_and(|r| r.raise(cell, ka.seq));
        if !newer {
            return;
        }
        // global_tstamp[31:0] - tx_tstamp[31:0]: ns on path, modulo 2^32.
        let path = (rx_ns as u32).wrapping_sub(ka.tx_tstamp as u32);
        if let Some(r) = register(objects, ids.returns) {
            r.increment(cell);
        }
        if let Some(r) = register(objects, ids.path) {
            r.set(cell, path);
        }
        if let Some(r) = register(objects, ids.arrival) {
            r.set(cell, chip_time_units(rx_ns));
        }
        if let Some(r) = register(objects, ids.counted) {
            r.increment(tally_cell(ka));
        }
    }

    /// `ingress_port`: what the port is. A frame from a filter names its link in the tag.
    fn ingress_port_table(
        &self,
        objects: &Objects,
        ingress: u32,
        h: &packet::Headers,
        md: &mut Metadata,
    ) {
        let tag_link = h.efb_tag.map_or(0, |t| t.link_id);
        match self.exact(objects, self.ingress_port, &[(u128::from(ingress), 9)]) {
            Some((id, p)) if id == self.from_link_lan => md.entered_by_link(param8(&p, 0), false),
            Some((id, p)) if id == self.from_link_wan => md.entered_by_link(param8(&p, 0), true),
            Some((id, _)) if id == self.from_pair_lan => md.entered_by_pair(tag_link, false),
            Some((id, _)) if id == self.from_pair_wan => md.entered_by_pair(tag_link, true),
            Some((id, _)) if id == self.from_cpu => md.from_cpu = true,
            _ => md.mark_drop(drop_reasons::UNKNOWN_PORT),
        }
    }

    /// An exact-match lookup: the hit's action and parameters, or the table's default.
    fn exact(
        &self,
        objects: &Objects,
        table: TableId,
        key: &[(u128, u32)],
    ) -> Option<(ActionId, Vec<u128>)> {
        let t = objects.tables.get(&table.0)?;
        match t.lookup_exact(&exact_key(key)) {
            Some(entry) => direct(&entry.action),
            None => self.default_of(table, t),
        }
    }

    fn default_of(&self, table: TableId, t: &Table) -> Option<(ActionId, Vec<u128>)> {
        match &t.default {
            Some(d) => direct(&d.value),
            None => self
                .initial_default(table.0)
                .map(|action| (ActionId(action), Vec::new())),
        }
    }

    /// The action a table starts with as its default (the contract's, which the P4Info
    /// agrees with), by the table's id.
    pub fn initial_default(&self, table_id: u32) -> Option<u32> {
        (self.initial_defaults.iter())
            .find(|(table, _)| table.0 == table_id)
            .map(|(_, action)| action.0)
    }

    fn link_ports(&self, objects: &Objects, link: u8) -> Option<(u32, u32)> {
        match self.exact(objects, self.link_ports, &[(u128::from(link), 8)]) {
            Some((id, p)) if id == self.set_link_ports => Some((param32(&p, 0), param32(&p, 1))),
            _ => None,
        }
    }

    /// `frame_classes`: the class of the frame's link, Ethernet layers and L4 header (its
    /// highest-priority entry's; none: 0).
    fn frame_class(&self, objects: &Objects, lkp: &Lookup, link: u8) -> u8 {
        let Some(table) = objects.tables.get(&self.frame_classes.0) else {
            return 0;
        };
        let key = lkp.key(&self.class_slots, link, 0);
        match table.lookup_ternary(&key).and_then(|e| direct(&e.action)) {
            Some((id, p)) if id == self.set_frame_class => param8(&p, 0),
            _ => 0,
        }
    }

    /// The flow table of the frame's kind (by the IP version of the innermost IP header):
    /// its action, counted by the entry that hit.
    fn flows(&self, objects: &Objects, lkp: &Lookup, md: &mut Metadata, wire_len: usize) {
        let flows = &self.flows[match lkp.ip_version {
            4 => 0,
            6 => 1,
            _ => 2,
        }];
        let Some(table) = objects.tables.get(&flows.table.0) else {
            return;
        };
        let key = lkp.key(&flows.slots, md.link_id, md.frame_class);
        let hit = table.lookup_ternary(&key);
        if let Some(entry) = hit {
            entry.counter.count(wire_len);
        }
        let action = hit
            .and_then(|e: &Entry| direct(&e.action))
            .or_else(|| self.default_of(flows.table, table));
        match action {
            Some((id, _)) if id == flows.drop => md.flow_drop = true,
            Some((id, p)) if Some(id) == flows.to_unit => md.unit_id = param8(&p, 0),
            _ => {}
        }
    }

    /// units -> buckets -> pairs: the pair's port on the side the frame entered its link
    /// by and the core, or `None` for software bypass (unit in bypass, pair down or not
    /// written). The bucket table is direct-indexed on the chip: it never misses, a slot
    /// never written holding the program's default `to_pair(0, 0)` (here: the initial
    /// default without parameters, which read as 0).
    fn balance(&self, objects: &Objects, unit: u8, wan: bool, hash: u32) -> Option<(u32, u8)> {
        let (action, params) = self.exact(objects, self.units, &[(u128::from(unit), 8)])?;
        if action != self.unit_active {
            return None;
        }
        let bucket = hash & 0xFFFF & param32(&params, 0);
        let index = (param32(&params, 1) & BUCKET_INDEX_MASK) | bucket;
        let (action, params) = self.exact(
            objects,
            self.buckets,
            &[(u128::from(index), BUCKET_INDEX_BITS)],
        )?;
        if action != self.to_pair {
            return None;
        }
        let (pair, core) = (param8(&params, 0), param8(&params, 1));
        let key = [(u128::from(pair), 8), (u128::from(wan), 1)];
        let (action, params) = self.exact(objects, self.pairs, &key)?;
        (action == self.pair_up).then(|| (param32(&params, 0), core))
    }

    fn method(&self, objects: &Objects) -> BalancingMethod {
        let action = objects
            .tables
            .get(&self.balancing.0)
            .and_then(|t| self.default_of(self.balancing, t))
            .map(|(id, _)| id);
        match action {
            Some(id) if id == self.hash_layer4 => BalancingMethod::Layer4,
            Some(id) if id == self.hash_dst_ip => BalancingMethod::DstIp,
            _ => BalancingMethod::Layer3,
        }
    }

    /// The CPU port the `platform` table names (the program's initial one until the
    /// controller sets it).
    fn cpu_port(&self, objects: &Objects) -> u32 {
        let written = objects
            .tables
            .get(&self.platform.0)
            .and_then(|t| t.default.as_ref())
            .and_then(|d| direct(&d.value));
        match written {
            Some((id, params)) if id == self.set_cpu_port => param32(&params, 0),
            _ => INITIAL_CPU_PORT,
        }
    }

    /// The pairs' ports as the `ingress_port` table cables them: port -> the other port
    /// of the same pair (where the emulated filter returns frames).
    pub fn pair_peers(&self, objects: &Objects) -> Vec<(u32, u32)> {
        let Some(table) = objects.tables.get(&self.ingress_port.0) else {
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

/// The 4-byte FCS every frame has on the wire, which the chip's counters and
/// `pkt_length` count.
const FCS: usize = 4;

/// The packet-out header: the egress port (2 bytes), the multicast group (2 bytes).
const PACKET_OUT_BYTES: usize = 4;

/// A packet-out by the CPU port: unicast to the port it names, or to the group it names;
/// by a port `ingress_port` does not mark as the CPU's, dropped (the other board's CPU
/// port number).
fn packet_out(md: &mut Metadata, header: PacketOut, frame: &[u8]) -> Forward {
    if !md.from_cpu {
        md.mark_drop(drop_reasons::PACKET_OUT_PORT);
        return Forward::Nowhere;
    }
    let out = frame.get(PACKET_OUT_BYTES..).unwrap_or_default().to_vec();
    if header.mcast_grp == 0 {
        // PortId_t is 9 bits wide.
        Forward::PacketOut(u32::from(header.egress_port) & 0x1FF, out)
    } else {
        Forward::Group(header.mcast_grp, out)
    }
}

/// `keepalive_tally`: the cell of a round's unit and its number's parity.
fn tally_cell(ka: Keepalive) -> usize {
    usize::from(ka.unit_id) << 1 | (ka.seq & 1) as usize
}

fn register(objects: &Objects, id: u32) -> Option<&Register> {
    objects.registers.get(&id)
}

/// The chip's clock as the keep-alive registers keep it: `global_tstamp[41:10]`, units of
/// 1.024 us.
fn chip_time_units(ns: u64) -> u32 {
    (ns >> 10) as u32
}

/// Where the keep-alive header starts: right after the Ethernet header.
const KEEPALIVE_OFFSET: usize = 14;
/// The 48-bit global timestamp egress writes (into the 64-bit `tx_tstamp`).
const TSTAMP_MASK: u64 = (1 << 48) - 1;

/// Egress of a packet-out (or a copy of one) that is a keep-alive: the departure time into
/// `tx_tstamp` and the port it leaves by into `out_port`. The egress parser extracts the
/// whole keep-alive header or none: a frame that ends inside it leaves unchanged.
pub fn egress_keepalive(frame: &mut [u8], departure_ns: u64, port: u32) {
    if packet::outer_ethertype(frame) != Some(ethertypes::KEEPALIVE) {
        return;
    }
    let Some(ka) = frame.get_mut(KEEPALIVE_OFFSET..KEEPALIVE_OFFSET + Keepalive::BYTES) else {
        return;
    };
    ka[6..14].copy_from_slice(&(departure_ns & TSTAMP_MASK).to_be_bytes());
    // (bit<16>) egress_port: PortId_t is 9 bits.
    ka[0..2].copy_from_slice(&((port & 0x1FF) as u16).to_be_bytes());
}

/// The packet-in header: the ingress port (2 bytes), the arrival time (6 bytes, ns).
pub const PACKET_IN_BYTES: usize = 8;

fn packet_in_header(ingress: u32, rx_ns: u64) -> Vec<u8> {
    let mut header = (ingress as u16).to_be_bytes().to_vec();
    header.extend_from_slice(&rx_ns.to_be_bytes()[2..]);
    header
}

/// efb.p4's `ig_metadata_t`, the part the ingress control decides with.
#[derive(Debug, Default)]
struct Metadata {
    link_id: u8,
    frame_class: u8,
    from_link: bool,
    from_pair: bool,
    from_cpu: bool,
    side_wan: bool,
    lan_port: u32,
    wan_port: u32,
    unit_id: u8,
    flow_drop: bool,
    /// `mark_drop`'s reason (the last one marked).
    drop: Option<u32>,
    method: BalancingMethod,
}

impl Metadata {
    fn mark_drop(&mut self, reason: u32) {
        self.drop = Some(reason);
    }

    fn entered_by_link(&mut self, link: u8, wan: bool) {
        (self.from_link, self.link_id, self.side_wan) = (true, link, wan);
    }

    fn entered_by_pair(&mut self, tag_link: u8, wan: bool) {
        (self.from_pair, self.link_id, self.side_wan) = (true, tag_link, wan);
    }
}

/// efb.p4's `lookup_t`: what the flow tables and the hash see, from the innermost IP
/// header the parser reached.
#[derive(Debug, Default)]
struct Lookup {
    vlan_depth: u8,
    vlan_vids: [u16; 3],
    mpls_depth: u8,
    ether_type: u16,
    src_mac: u64,
    dst_mac: u64,
    llc: Option<(u8, u8)>,
    ip_version: u8,
    src: u128,
    dst: u128,
    ip_proto: u8,
    l4: Option<(u16, u16)>,
}

impl Lookup {
    fn of(h: &packet::Headers) -> Lookup {
        let eth = h.ethernet.unwrap_or_default();
        let mut lkp = Lookup {
            vlan_depth: h.vlan.len() as u8,
            mpls_depth: h.mpls,
            // The EtherType after the tags (no_tags .. three_tags).
            ether_type: h.vlan.last().map_or(eth.ether_type, |t| t.ether_type),
            src_mac: eth.src,
            dst_mac: eth.dst,
            llc: h.llc,
            l4: h.l4,
            ..Lookup::default()
        };
        for (vid, tag) in lkp.vlan_vids.iter_mut().zip(&h.vlan) {
            *vid = tag.vid;
        }
        let v4 = |ip: &packet::parse::Ipv4| {
            (
                4,
                u128::from(u32::from(ip.src)),
                u128::from(u32::from(ip.dst)),
                ip.protocol,
            )
        };
        let v6 =
            |ip: &packet::parse::Ipv6| (6, u128::from(ip.src), u128::from(ip.dst), ip.next_hdr);
        let innermost = h
            .inner_ipv4
            .as_ref()
            .map(v4)
            .or_else(|| h.inner_ipv6.as_ref().map(v6))
            .or_else(|| h.ipv4.as_ref().map(v4))
            .or_else(|| h.ipv6.as_ref().map(v6));
        if let Some((version, src, dst, proto)) = innermost {
            (lkp.ip_version, lkp.src, lkp.dst, lkp.ip_proto) = (version, src, dst, proto);
        }
        lkp
    }

    /// The values of a table's fields (`frame_classes` or a flow table).
    fn key(&self, slots: &[Slot], link: u8, class: u8) -> Vec<u128> {
        let (sport, dport) = self.l4.unwrap_or_default();
        let (v4, v6) = match self.ip_version {
            4 => ((self.src, self.dst), (0, 0)),
            6 => ((0, 0), (self.src, self.dst)),
            _ => ((0, 0), (0, 0)),
        };
        slots
            .iter()
            .map(|s| match *s {
                Slot::FrameClass => u128::from(class),
                Slot::LinkId => u128::from(link),
                Slot::VlanDepth => u128::from(self.vlan_depth),
                Slot::Vlan(i) => u128::from(self.vlan_vids[i]),
                Slot::MplsDepth => u128::from(self.mpls_depth),
                Slot::SrcMac => u128::from(self.src_mac),
                Slot::DstMac => u128::from(self.dst_mac),
                Slot::EtherType => u128::from(self.ether_type),
                Slot::LlcValid => u128::from(self.llc.is_some()),
                Slot::LlcDsap => u128::from(self.llc.map_or(0, |l| l.0)),
                Slot::LlcSsap => u128::from(self.llc.map_or(0, |l| l.1)),
                Slot::Ipv4Src => v4.0,
                Slot::Ipv4Dst => v4.1,
                Slot::Ipv6Src => v6.0,
                Slot::Ipv6Dst => v6.1,
                Slot::IpProto => u128::from(self.ip_proto),
                Slot::L4Valid => u128::from(self.l4.is_some()),
                Slot::L4Src => u128::from(sport),
                Slot::L4Dst => u128::from(dport),
            })
            .collect()
    }

    /// What efb.p4's `Hash.get` computes: CRC-32 over the field list of the method, the
    /// source and destination XORed (MODEL.md version 2). Written from the P4 program, not
    /// taken from efb-balancing, so that a test through the target checks the library.
    fn hash(&self, method: BalancingMethod) -> u32 {
        let width = match self.ip_version {
            4 => 4,
            6 => 16,
            _ => return 0,
        };
        let bytes = |a: u128| a.to_be_bytes()[16 - width..].to_vec();
        let (sport, dport) = self.l4.unwrap_or_default();
        let mut fields: Vec<u8> = bytes(self.src ^ self.dst);
        match method {
            BalancingMethod::DstIp => fields = bytes(self.dst),
            BalancingMethod::Layer3 => fields.push(self.ip_proto),
            BalancingMethod::Layer4 => {
                fields.push(self.ip_proto);
                fields.extend_from_slice(&(sport ^ dport).to_be_bytes());
            }
        }
        crc32fast::hash(&fields)
    }
}

/// Where the outer IP header starts, plus the 4-byte FCS (efb.p4's table `ip_offset`):
/// Ethernet 14, a VLAN tag or an MPLS label 4, PPPoE and PPP 8.
fn ip_offset(h: &packet::Headers) -> u16 {
    let vlans = h.vlan.len() as u16;
    let labels = u16::from(h.mpls);
    let pppoe = if h.pppoe { 8 } else { 0 };
    14 + FCS as u16 + 4 * vlans + 4 * labels + pppoe
}

/// Egress: the length check of an operator's IP frame, which drops (uncounted, as the
/// chip's egress does) a frame whose outer IP packet runs past its end (a packet-out's
/// keep-alive is the device's to stamp, with the time it leaves: [`egress_keepalive`]). `pkt_length` is the frame as it was received,
/// with its FCS, whatever ingress added (the tag).
fn egress(
    port: u32,
    frame: Vec<u8>,
    keepalive_out: bool,
    ip_end: Option<u16>,
    pkt_length: usize,
) -> Verdict {
    if let Some(end) = ip_end
        && usize::from(end) > pkt_length
    {
        return Verdict::Lost;
    }
    Verdict::Emit {
        port,
        frame,
        stamp_departure: keepalive_out,
    }
}

fn direct(value: &ActionValue) -> Option<(ActionId, Vec<u128>)> {
    match value {
        ActionValue::Direct { action_id, params } => Some((ActionId(*action_id), params.clone())),
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
