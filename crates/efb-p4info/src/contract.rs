//! What the compiler and the target rely on in the P4Info: every table with its fields
//! (width, match kind) and actions, every action with its parameters, the counters and
//! the packet I/O headers. [`check`] compares a P4Info against it, so that a change to
//! the program that breaks either side fails a test instead of a commit on site.

use crate::names::{
    ActionName, CounterName, FieldName, PacketFieldName, PacketHeaderName, RegisterName, TableName,
};
use crate::names::{
    actions as a, counters, fields as f, flows, packet_io as io, registers as r, tables as t,
};
use crate::{ActionScope, MatchKind, P4InfoError, P4InfoIndex};

pub struct TableSpec {
    pub name: TableName,
    pub fields: &'static [(FieldName, u32, MatchKind)],
    pub actions: &'static [ActionName],
    /// The default action the program starts with (checked against the P4Info's
    /// `initial_default_action` where it carries one).
    pub initial_default: ActionName,
    /// Whether the default is fixed by the program.
    pub const_default: bool,
    pub direct_counter: Option<CounterName>,
    /// When a plan writes the table's entries.
    pub write_level: WriteLevel,
}

/// When a plan writes a table's entries, removals in the reverse order: what other entries
/// point at comes first, so that no frame meets an entry whose target is not written yet
/// (or already removed).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum WriteLevel {
    /// Pointed at by others: link ports, pairs, the balancing method, the CPU port.
    Pointed,
    /// Buckets, pointing at pairs.
    Buckets,
    /// Units, pointing at their region of the buckets.
    Units,
    /// Ingress ports: a new link or pair starts receiving only once it is complete.
    Ports,
    /// Frame classes, which flows match.
    Classes,
    /// Flows, pointing at units and frame classes.
    Flows,
}

impl WriteLevel {
    pub const COUNT: usize = 6;
}

pub struct ActionSpec {
    pub name: ActionName,
    pub params: &'static [(FieldName, u32)],
}

use MatchKind::{Exact, Ternary};

/// A flow table's spec from its names in [`flows`].
macro_rules! flow_table_spec {
    ($table:ident, $fields:expr, [$($action:ident),*]) => {
        TableSpec {
            name: flows::$table.table,
            fields: $fields,
            actions: &[$(flow_action!($table, $action)),*],
            initial_default: flows::$table.bypass,
            const_default: false,
            direct_counter: Some(flows::$table.counter),
            write_level: WriteLevel::Flows,
        }
    };
}

macro_rules! flow_action {
    ($table:ident, to_unit) => {
        match flows::$table.to_unit {
            Some(name) => name,
            None => flows::$table.bypass,
        }
    };
    ($table:ident, $action:ident) => {
        flows::$table.$action
    };
}

pub const TABLES: &[TableSpec] = &[
    TableSpec {
        name: t::INGRESS_PORT,
        fields: &[(f::INGRESS_PORT, 9, Exact)],
        actions: &[
            a::FROM_LINK_LAN,
            a::FROM_LINK_WAN,
            a::FROM_PAIR_LAN,
            a::FROM_PAIR_WAN,
            a::FROM_CPU,
            a::UNKNOWN_PORT,
        ],
        initial_default: a::UNKNOWN_PORT,
        const_default: true,
        direct_counter: None,
        write_level: WriteLevel::Ports,
    },
    TableSpec {
        name: t::LINK_PORTS,
        fields: &[(f::LINK_ID, 8, Exact)],
        actions: &[a::SET_LINK_PORTS, a::LINK_MISSING],
        initial_default: a::LINK_MISSING,
        const_default: true,
        direct_counter: None,
        write_level: WriteLevel::Pointed,
    },
    TableSpec {
        name: t::BALANCING,
        fields: &[],
        actions: &[a::HASH_LAYER3, a::HASH_LAYER4, a::HASH_DST_IP],
        initial_default: a::HASH_LAYER3,
        const_default: false,
        direct_counter: None,
        write_level: WriteLevel::Pointed,
    },
    flow_table_spec!(IPV4, IPV4_FLOW_FIELDS, [bypass, drop, to_unit]),
    flow_table_spec!(IPV6, IPV6_FLOW_FIELDS, [bypass, drop, to_unit]),
    flow_table_spec!(OTHER, OTHER_FLOW_FIELDS, [bypass, drop]),
    TableSpec {
        name: t::UNITS,
        fields: &[(f::UNIT_ID, 8, Exact)],
        actions: &[a::UNIT_ACTIVE, a::UNIT_BYPASS],
        initial_default: a::UNIT_BYPASS,
        const_default: false,
        direct_counter: None,
        write_level: WriteLevel::Units,
    },
    TableSpec {
        name: t::BUCKETS,
        fields: &[(f::INDEX, 18, Exact)],
        actions: &[a::TO_PAIR],
        initial_default: a::TO_PAIR,
        const_default: false,
        direct_counter: None,
        write_level: WriteLevel::Buckets,
    },
    TableSpec {
        name: t::PAIRS,
        fields: &[(f::PAIR_ID, 8, Exact), (f::SIDE_WAN, 1, Exact)],
        actions: &[a::PAIR_UP, a::PAIR_DOWN],
        initial_default: a::PAIR_DOWN,
        const_default: true,
        direct_counter: None,
        write_level: WriteLevel::Pointed,
    },
    TableSpec {
        name: t::FRAME_CLASSES,
        fields: CLASS_FIELDS,
        actions: &[a::SET_FRAME_CLASS, a::NO_FRAME_CLASS],
        initial_default: a::NO_FRAME_CLASS,
        const_default: true,
        direct_counter: None,
        write_level: WriteLevel::Classes,
    },
    TableSpec {
        name: t::PLATFORM,
        fields: &[],
        actions: &[a::SET_CPU_PORT],
        initial_default: a::SET_CPU_PORT,
        const_default: false,
        direct_counter: None,
        write_level: WriteLevel::Pointed,
    },
];

type FieldSpec = (FieldName, u32, MatchKind);

/// What `frame_classes` matches: where the frame came from, its Ethernet layers and
/// whether it has an L4 header. Ternary, as the flow tables' fields: the controller writes
/// the VLAN-depth range as prefixes.
pub const CLASS_FIELDS: &[FieldSpec] = &[
    (f::LINK_ID, 8, Ternary),
    (f::VLAN_DEPTH, 2, Ternary),
    (f::VLAN0_VID, 12, Ternary),
    (f::VLAN1_VID, 12, Ternary),
    (f::VLAN2_VID, 12, Ternary),
    (f::MPLS_DEPTH, 3, Ternary),
    (f::SRC_MAC, 48, Ternary),
    (f::DST_MAC, 48, Ternary),
    (f::ETHER_TYPE, 16, Ternary),
    (f::L4_VALID, 1, Ternary),
];

/// What every flow table matches first: the frame's class. Ports are ternary: the
/// controller writes a range as prefixes, because Tofino's TCAM has no range units to
/// spare for a key this wide.
macro_rules! flow_fields {
    ($($rest:expr),* $(,)?) => {
        &[(f::FRAME_CLASS, 8, Ternary), $($rest),*]
    };
}

pub const IPV4_FLOW_FIELDS: &[FieldSpec] = flow_fields![
    (f::IPV4_SRC, 32, Ternary),
    (f::IPV4_DST, 32, Ternary),
    (f::IP_PROTO, 8, Ternary),
    (f::L4_SRC_PORT, 16, Ternary),
    (f::L4_DST_PORT, 16, Ternary),
];

pub const IPV6_FLOW_FIELDS: &[FieldSpec] = flow_fields![
    (f::IPV6_SRC, 128, Ternary),
    (f::IPV6_DST, 128, Ternary),
    (f::IP_PROTO, 8, Ternary),
    (f::L4_SRC_PORT, 16, Ternary),
    (f::L4_DST_PORT, 16, Ternary),
];

pub const OTHER_FLOW_FIELDS: &[FieldSpec] = flow_fields![
    (f::LLC_VALID, 1, Ternary),
    (f::LLC_DSAP, 8, Ternary),
    (f::LLC_SSAP, 8, Ternary),
];

pub const ACTIONS: &[ActionSpec] = &[
    ActionSpec {
        name: a::FROM_LINK_LAN,
        params: &[(f::LINK_ID, 8)],
    },
    ActionSpec {
        name: a::FROM_LINK_WAN,
        params: &[(f::LINK_ID, 8)],
    },
    ActionSpec {
        name: a::FROM_PAIR_LAN,
        params: &[(f::PAIR_ID, 8)],
    },
    ActionSpec {
        name: a::FROM_PAIR_WAN,
        params: &[(f::PAIR_ID, 8)],
    },
    ActionSpec {
        name: a::UNKNOWN_PORT,
        params: &[],
    },
    ActionSpec {
        name: a::SET_LINK_PORTS,
        params: &[(f::LAN_PORT, 9), (f::WAN_PORT, 9)],
    },
    ActionSpec {
        name: a::LINK_MISSING,
        params: &[],
    },
    ActionSpec {
        name: a::HASH_LAYER3,
        params: &[],
    },
    ActionSpec {
        name: a::HASH_LAYER4,
        params: &[],
    },
    ActionSpec {
        name: a::HASH_DST_IP,
        params: &[],
    },
    ActionSpec {
        name: a::FROM_CPU,
        params: &[],
    },
    ActionSpec {
        name: a::SET_CPU_PORT,
        params: &[(f::PORT, 9)],
    },
    ActionSpec {
        name: a::UNIT_ACTIVE,
        params: &[(f::BUCKET_MASK, 16), (f::BUCKET_BASE, 18)],
    },
    ActionSpec {
        name: a::UNIT_BYPASS,
        params: &[],
    },
    ActionSpec {
        name: a::TO_PAIR,
        params: &[(f::PAIR_ID, 8), (f::CORE, 8)],
    },
    ActionSpec {
        name: a::PAIR_UP,
        params: &[(f::PORT, 9)],
    },
    ActionSpec {
        name: a::SET_FRAME_CLASS,
        params: &[(f::FRAME_CLASS, 8)],
    },
    ActionSpec {
        name: a::NO_FRAME_CLASS,
        params: &[],
    },
    ActionSpec {
        name: a::PAIR_DOWN,
        params: &[],
    },
];

/// The flow tables' actions: each table has its own (its direct counter counts in them).
fn flow_action_specs() -> Vec<ActionSpec> {
    let mut specs = Vec::new();
    for table in flows::ALL {
        specs.push(ActionSpec {
            name: table.bypass,
            params: &[],
        });
        specs.push(ActionSpec {
            name: table.drop,
            params: &[],
        });
        if let Some(to_unit) = table.to_unit {
            specs.push(ActionSpec {
                name: to_unit,
                params: &[(f::UNIT_ID, 8)],
            });
        }
    }
    specs
}

/// Packet I/O headers: (header, [(field, width)]).
pub const PACKET_IO: &[(PacketHeaderName, &[(PacketFieldName, u32)])] = &[
    (
        io::PACKET_IN,
        &[(io::INGRESS_PORT, 16), (io::RX_TSTAMP, 48)],
    ),
    (
        io::PACKET_OUT,
        &[(io::EGRESS_PORT, 16), (io::MCAST_GRP, 16)],
    ),
];

/// The keep-alive registers and their cells: per port a keep-alive left by what came back,
/// per unit (its multicast group) the newest round that entered, and per unit and parity
/// of its rounds' numbers (unit id << 1 | parity) the copies that left and returns counted.
pub const REGISTERS: &[(RegisterName, u64)] = &[
    (r::KEEPALIVE_SEQ, KEEPALIVE_CELLS),
    (r::KEEPALIVE_RETURNS, KEEPALIVE_CELLS),
    (r::KEEPALIVE_PATH, KEEPALIVE_CELLS),
    (r::KEEPALIVE_ARRIVAL, KEEPALIVE_CELLS),
    (r::KEEPALIVE_ROUNDS, KEEPALIVE_UNITS),
    (r::KEEPALIVE_COPIES, KEEPALIVE_TALLIES),
    (r::KEEPALIVE_COUNTED, KEEPALIVE_TALLIES),
];
/// Cells of a per-port keep-alive register: the 9 bits of a device port.
pub const KEEPALIVE_CELLS: u64 = 512;
/// Cells of a per-unit keep-alive register: 256 unit ids.
pub const KEEPALIVE_UNITS: u64 = 256;
/// Cells of a per-unit tally: 256 unit ids x 2 parities of a round's number.
pub const KEEPALIVE_TALLIES: u64 = 512;
/// Width of a keep-alive register's cell.
pub const KEEPALIVE_BITS: u32 = 32;

/// Indexed counters: (name, size at least).
pub const COUNTERS: &[(CounterName, u64)] = &[(counters::DROP_REASONS, 8)];

/// One way a P4Info departs from the contract.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Departure {
    /// A table, action or counter the contract names is not there.
    #[error(transparent)]
    Missing(#[from] P4InfoError),
    #[error("table {table} has {has} match fields, the contract {wants}")]
    FieldCount {
        table: TableName,
        has: usize,
        wants: usize,
    },
    #[error(
        "table {table} field {field} is {} bit<{bits}>, the contract says {} bit<{wants_bits}>",
        kind.as_str(),
        wants_kind.as_str()
    )]
    FieldShape {
        table: TableName,
        field: FieldName,
        kind: MatchKind,
        bits: u32,
        wants_kind: MatchKind,
        wants_bits: u32,
    },
    #[error("table {table} has no field {field}")]
    NoField { table: TableName, field: FieldName },
    #[error("table {table} cannot use action {action}")]
    ActionNotInTable {
        table: TableName,
        action: ActionName,
    },
    #[error("table {table}: no action {action}")]
    NoDefaultAction {
        table: TableName,
        action: ActionName,
    },
    #[error("table {table}: default action {action} (const: {is_const}) does not match the P4Info")]
    DefaultAction {
        table: TableName,
        action: ActionName,
        is_const: bool,
    },
    #[error("table {table} lacks direct counter {counter}")]
    NoDirectCounter {
        table: TableName,
        counter: CounterName,
    },
    #[error("action {action} has {has} parameters, the contract {wants}")]
    ParamCount {
        action: ActionName,
        has: usize,
        wants: usize,
    },
    #[error("action {action} parameter {param} is bit<{bits}>, the contract says bit<{wants}>")]
    ParamWidth {
        action: ActionName,
        param: FieldName,
        bits: u32,
        wants: u32,
    },
    #[error("action {action} has no parameter {param}")]
    NoParam {
        action: ActionName,
        param: FieldName,
    },
    #[error("no controller header {0}")]
    NoPacketHeader(PacketHeaderName),
    #[error("controller header {header} lacks {field} bit<{bits}>")]
    PacketField {
        header: PacketHeaderName,
        field: PacketFieldName,
        bits: u32,
    },
    #[error(
        "register {register} is {cells} x bit<{bits}>, the contract says {wants} x bit<{}>",
        KEEPALIVE_BITS
    )]
    RegisterShape {
        register: RegisterName,
        cells: u64,
        bits: u32,
        wants: u64,
    },
    #[error("counter {counter} has {cells} cells, needs {wants}")]
    CounterSize {
        counter: CounterName,
        cells: u64,
        wants: u64,
    },
}

/// Every way `index` departs from the contract; empty when it holds.
pub fn check(index: &P4InfoIndex) -> Vec<Departure> {
    let mut problems = Vec::new();
    for spec in TABLES {
        check_table(index, spec, &mut problems);
    }
    for spec in ACTIONS.iter().chain(&flow_action_specs()) {
        check_action(index, spec, &mut problems);
    }
    for (header, fields) in PACKET_IO {
        check_packet_io(index, *header, fields, &mut problems);
    }
    for &(register, wants) in REGISTERS {
        match index.register_by_name(register) {
            Ok(info) if info.size == wants && info.bitwidth == KEEPALIVE_BITS => {}
            Ok(info) => problems.push(Departure::RegisterShape {
                register,
                cells: info.size,
                bits: info.bitwidth,
                wants,
            }),
            Err(e) => problems.push(e.into()),
        }
    }
    for &(counter, wants) in COUNTERS {
        match index.counter_by_name(counter) {
            Ok(c) if c.size >= wants => {}
            Ok(c) => problems.push(Departure::CounterSize {
                counter,
                cells: c.size,
                wants,
            }),
            Err(e) => problems.push(e.into()),
        }
    }
    problems
}

fn check_table(index: &P4InfoIndex, spec: &TableSpec, problems: &mut Vec<Departure>) {
    let table = match index.table_by_name(spec.name) {
        Ok(t) => t,
        Err(e) => return problems.push(e.into()),
    };
    if table.fields.len() != spec.fields.len() {
        problems.push(Departure::FieldCount {
            table: spec.name,
            has: table.fields.len(),
            wants: spec.fields.len(),
        });
    }
    for &(field, wants_bits, wants_kind) in spec.fields {
        match table.field(field) {
            Some(fi) if fi.bitwidth == wants_bits && fi.kind == wants_kind => {}
            Some(fi) => problems.push(Departure::FieldShape {
                table: spec.name,
                field,
                kind: fi.kind,
                bits: fi.bitwidth,
                wants_kind,
                wants_bits,
            }),
            None => problems.push(Departure::NoField {
                table: spec.name,
                field,
            }),
        }
    }
    for &action in spec.actions {
        let ok = index
            .action_by_name(action)
            .is_ok_and(|ai| table.action_scope(ai.id).is_some());
        if !ok {
            problems.push(Departure::ActionNotInTable {
                table: spec.name,
                action,
            });
        }
    }
    check_default(index, spec, table, problems);
    if let Some(counter) = spec.direct_counter {
        let ok = index
            .direct_counter_by_name(counter)
            .is_ok_and(|(id, tid)| tid == table.id && table.direct_counter == Some(id));
        if !ok {
            problems.push(Departure::NoDirectCounter {
                table: spec.name,
                counter,
            });
        }
    }
}

fn check_default(
    index: &P4InfoIndex,
    spec: &TableSpec,
    table: &crate::TableInfo,
    problems: &mut Vec<Departure>,
) {
    let Ok(default) = index.action_by_name(spec.initial_default) else {
        return problems.push(Departure::NoDefaultAction {
            table: spec.name,
            action: spec.initial_default,
        });
    };
    let scope_ok = matches!(
        table.action_scope(default.id),
        Some(ActionScope::DefaultOnly | ActionScope::TableAndDefault)
    );
    let const_ok = (table.const_default_action == Some(default.id)) == spec.const_default;
    let initial_ok = table
        .initial_default_action
        .is_none_or(|initial| initial == default.id);
    if !scope_ok || !const_ok || !initial_ok {
        problems.push(Departure::DefaultAction {
            table: spec.name,
            action: spec.initial_default,
            is_const: spec.const_default,
        });
    }
}

fn check_action(index: &P4InfoIndex, spec: &ActionSpec, problems: &mut Vec<Departure>) {
    let action = match index.action_by_name(spec.name) {
        Ok(a) => a,
        Err(e) => return problems.push(e.into()),
    };
    if action.params.len() != spec.params.len() {
        problems.push(Departure::ParamCount {
            action: spec.name,
            has: action.params.len(),
            wants: spec.params.len(),
        });
    }
    for &(param, wants) in spec.params {
        match action.param(param) {
            Some(p) if p.bitwidth == wants => {}
            Some(p) => problems.push(Departure::ParamWidth {
                action: spec.name,
                param,
                bits: p.bitwidth,
                wants,
            }),
            None => problems.push(Departure::NoParam {
                action: spec.name,
                param,
            }),
        }
    }
}

fn check_packet_io(
    index: &P4InfoIndex,
    header: PacketHeaderName,
    fields: &[(PacketFieldName, u32)],
    problems: &mut Vec<Departure>,
) {
    let info = match header {
        io::PACKET_IN => index.packet_in(),
        _ => index.packet_out(),
    };
    let Some(info) = info else {
        return problems.push(Departure::NoPacketHeader(header));
    };
    for &(field, bits) in fields {
        if info.field(field).is_none_or(|f| f.bitwidth != bits) {
            problems.push(Departure::PacketField {
                header,
                field,
                bits,
            });
        }
    }
}
