//! The names of `p4/efb.p4` that code uses. Code resolves them through the loaded P4Info
//! ([`crate::P4InfoIndex`]) and never hard-codes ids. `tables`, `actions`, `fields`,
//! `counters`, `registers` and `packet_io` are written by `build.rs` from the compiler's P4Info (a name
//! the program lacks does not compile; each one's doc says its key or parameters);
//! [`crate::contract`] checks the widths and match kinds the code expects of them.

use std::fmt;

include!(concat!(env!("OUT_DIR"), "/p4_names.rs"));

/// A kind of name in the program: only the generated constants make one (its constructor
/// is private to this module and the generated modules below it), so a name the program
/// lacks does not compile, and a name of one kind cannot be passed for another (an action
/// for a table, a table's key field for a packet header's).
macro_rules! program_name {
    ($(#[$doc:meta])* $name:ident, $all:path) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(&'static str);

        impl $name {
            const fn new(name: &'static str) -> $name {
                $name(name)
            }

            /// The name as the P4Info spells it.
            pub const fn as_str(self) -> &'static str {
                self.0
            }

            /// The program's name spelt `text`, if it has one: for a name read from a
            /// P4Info at run time (which may be another program's).
            pub fn find(text: &str) -> Option<$name> {
                $all.iter().copied().find(|name| name.0 == text)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.0)
            }
        }
    };
}

program_name!(
    /// A table's fully qualified name ([`tables`]).
    ///
    /// An action's name is not a table's (checked by `cargo test --doc`, as ./test.sh runs it):
    ///
    /// ```compile_fail,E0308
    /// let index = efb_p4info::index().unwrap();
    /// index.table_by_name(efb_p4info::names::actions::TO_PAIR);
    /// ```
    ///
    /// and code outside this module cannot make a name the program lacks:
    ///
    /// ```compile_fail,E0624
    /// let made_up = efb_p4info::names::TableName::new("EfbIngress.no_such_table");
    /// ```
    ///
    /// while the generated ones are taken:
    ///
    /// ```
    /// let index = efb_p4info::index().unwrap();
    /// assert!(index.table_by_name(efb_p4info::names::tables::PAIRS).is_ok());
    /// ```
    TableName,
    tables::ALL
);
program_name!(
    /// An action's fully qualified name ([`actions`]).
    ActionName,
    actions::ALL
);
program_name!(
    /// A table's match field or an action's parameter ([`fields`]).
    FieldName,
    fields::ALL
);
program_name!(
    /// A counter's or a direct counter's fully qualified name ([`counters`]).
    CounterName,
    counters::ALL
);
program_name!(
    /// A register's fully qualified name ([`registers`]).
    RegisterName,
    registers::ALL
);
program_name!(
    /// A controller packet header ([`packet_io`]: `packet_in`, `packet_out`).
    PacketHeaderName,
    packet_io::ALL
);
program_name!(
    /// A field of a controller packet header ([`packet_io`]).
    PacketFieldName,
    packet_io::FIELDS
);

/// The flow tables. A frame meets exactly one, by what it carries (the TCAM holds a
/// key per kind, not one key wide enough for all), so a flow is written into each table
/// whose frames it can match.
pub mod flows {
    /// What the frames of a flow table carry.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
    pub enum FrameKind {
        Ipv4,
        Ipv6,
        /// No IP header the parser reached.
        Other,
    }

    /// One flow table: its name, actions and direct counter.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct FlowTable {
        pub kind: FrameKind,
        pub table: super::TableName,
        pub bypass: super::ActionName,
        pub drop: super::ActionName,
        /// Frames without IP never go to a filter: that table has no `to_unit`.
        pub to_unit: Option<super::ActionName>,
        pub counter: super::CounterName,
    }

    pub const IPV4: FlowTable = FlowTable {
        kind: FrameKind::Ipv4,
        table: super::tables::FLOWS_IPV4_FLOWS,
        bypass: super::actions::FLOWS_IPV4_BYPASS,
        drop: super::actions::FLOWS_IPV4_DROP,
        to_unit: Some(super::actions::FLOWS_IPV4_TO_UNIT),
        counter: super::counters::FLOWS_IPV4_COUNTER,
    };

    pub const IPV6: FlowTable = FlowTable {
        kind: FrameKind::Ipv6,
        table: super::tables::FLOWS_IPV6_FLOWS,
        bypass: super::actions::FLOWS_IPV6_BYPASS,
        drop: super::actions::FLOWS_IPV6_DROP,
        to_unit: Some(super::actions::FLOWS_IPV6_TO_UNIT),
        counter: super::counters::FLOWS_IPV6_COUNTER,
    };

    pub const OTHER: FlowTable = FlowTable {
        kind: FrameKind::Other,
        table: super::tables::FLOWS_OTHER_FLOWS,
        bypass: super::actions::FLOWS_OTHER_BYPASS,
        drop: super::actions::FLOWS_OTHER_DROP,
        to_unit: None,
        counter: super::counters::FLOWS_OTHER_COUNTER,
    };

    pub const ALL: [FlowTable; 3] = [IPV4, IPV6, OTHER];

    impl FrameKind {
        pub fn table(self) -> FlowTable {
            match self {
                FrameKind::Ipv4 => IPV4,
                FrameKind::Ipv6 => IPV6,
                FrameKind::Other => OTHER,
            }
        }

        pub fn as_str(self) -> &'static str {
            match self {
                FrameKind::Ipv4 => "IPv4",
                FrameKind::Ipv6 => "IPv6",
                FrameKind::Other => "non-IP",
            }
        }
    }
}

/// Indexes of the `drop_reasons` counter.
pub mod drop_reasons {
    /// The ingress port has no `ingress_port` entry.
    pub const UNKNOWN_PORT: u32 = 0;
    /// The link id (from the port or from a filter's tag) has no `link_ports` entry.
    pub const LINK_MISSING: u32 = 1;
    /// The parser met a truncated header or a wrong length.
    pub const MALFORMED: u32 = 2;
    /// A flow's `drop` action.
    pub const FLOW_DROP: u32 = 3;
    /// A frame from a filter without the balancer's tag and not a keep-alive.
    pub const FROM_FILTER_UNTAGGED: u32 = 4;
    /// A packet-out naming no usable port.
    pub const PACKET_OUT_PORT: u32 = 5;
    /// The egress port is administratively or operationally down.
    pub const PORT_DOWN: u32 = 6;
}

/// EtherTypes of the program's own headers.
pub mod ethertypes {
    /// The 4-byte tag towards the filters: TPID, link id, core.
    pub const EFB_TAG: u16 = 0x88B5;
    /// Keep-alives between the balancer and the filters.
    pub const KEEPALIVE: u16 = 0x88B6;
}
