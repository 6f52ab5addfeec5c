//! The names of `p4/efb.p4` that code uses. Code resolves them through the loaded P4Info
//! ([`crate::P4InfoIndex`]) and never hard-codes ids; [`crate::contract`] checks that
//! every name here exists with the width and match kind the code expects.

/// Tables (fully qualified names; the P4Info also carries the short alias).
pub mod tables {
    pub const INGRESS_PORT: &str = "EfbIngress.ingress_port";
    pub const LINK_PORTS: &str = "EfbIngress.link_ports";
    pub const BALANCING: &str = "EfbIngress.balancing";
    pub const UNITS: &str = "EfbIngress.units";
    pub const BUCKETS: &str = "EfbIngress.buckets";
    pub const PAIRS: &str = "EfbIngress.pairs";
    pub const PLATFORM: &str = "EfbIngress.platform";
    /// The link, the Ethernet layers and the L4 header of a frame, as one 8-bit class
    /// the flow tables match.
    pub const FRAME_CLASSES: &str = "EfbIngress.frame_classes";
}

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
        pub table: &'static str,
        pub bypass: &'static str,
        pub drop: &'static str,
        /// Frames without IP never go to a filter: that table has no `to_unit`.
        pub to_unit: Option<&'static str>,
        pub counter: &'static str,
    }

    pub const IPV4: FlowTable = FlowTable {
        kind: FrameKind::Ipv4,
        table: "EfbIngress.flows_ipv4.flows",
        bypass: "EfbIngress.flows_ipv4.bypass",
        drop: "EfbIngress.flows_ipv4.drop",
        to_unit: Some("EfbIngress.flows_ipv4.to_unit"),
        counter: "EfbIngress.flows_ipv4.counter",
    };

    pub const IPV6: FlowTable = FlowTable {
        kind: FrameKind::Ipv6,
        table: "EfbIngress.flows_ipv6.flows",
        bypass: "EfbIngress.flows_ipv6.bypass",
        drop: "EfbIngress.flows_ipv6.drop",
        to_unit: Some("EfbIngress.flows_ipv6.to_unit"),
        counter: "EfbIngress.flows_ipv6.counter",
    };

    pub const OTHER: FlowTable = FlowTable {
        kind: FrameKind::Other,
        table: "EfbIngress.flows_other.flows",
        bypass: "EfbIngress.flows_other.bypass",
        drop: "EfbIngress.flows_other.drop",
        to_unit: None,
        counter: "EfbIngress.flows_other.counter",
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

/// Actions.
pub mod actions {
    pub const FROM_LINK_LAN: &str = "EfbIngress.from_link_lan";
    pub const FROM_LINK_WAN: &str = "EfbIngress.from_link_wan";
    pub const FROM_PAIR_LAN: &str = "EfbIngress.from_pair_lan";
    pub const FROM_PAIR_WAN: &str = "EfbIngress.from_pair_wan";
    pub const FROM_CPU: &str = "EfbIngress.from_cpu";
    pub const UNKNOWN_PORT: &str = "EfbIngress.unknown_port";
    pub const SET_LINK_PORTS: &str = "EfbIngress.set_link_ports";
    pub const LINK_MISSING: &str = "EfbIngress.link_missing";
    pub const HASH_LAYER3: &str = "EfbIngress.hash_layer3";
    pub const HASH_LAYER4: &str = "EfbIngress.hash_layer4";
    pub const HASH_DST_IP: &str = "EfbIngress.hash_dst_ip";
    pub const UNIT_ACTIVE: &str = "EfbIngress.unit_active";
    pub const UNIT_BYPASS: &str = "EfbIngress.unit_bypass";
    pub const TO_PAIR: &str = "EfbIngress.to_pair";
    pub const PAIR_UP: &str = "EfbIngress.pair_up";
    pub const PAIR_DOWN: &str = "EfbIngress.pair_down";
    pub const SET_CPU_PORT: &str = "EfbIngress.set_cpu_port";
    pub const SET_FRAME_CLASS: &str = "EfbIngress.set_frame_class";
    pub const NO_FRAME_CLASS: &str = "EfbIngress.no_frame_class";
}

/// Match fields (per table) and action parameters.
pub mod fields {
    pub const INGRESS_PORT: &str = "ingress_port";
    pub const LINK_ID: &str = "link_id";
    pub const UNIT_ID: &str = "unit_id";
    /// The bucket table's slot: the unit's base | its bucket.
    pub const INDEX: &str = "index";
    pub const PAIR_ID: &str = "pair_id";
    /// The side a frame entered its link by (0 LAN, 1 WAN): the pair's port on that side.
    pub const SIDE_WAN: &str = "side_wan";
    /// What `frame_classes` gave the frame (also the action's parameter).
    pub const FRAME_CLASS: &str = "frame_class";
    pub const VLAN_DEPTH: &str = "vlan_depth";
    pub const VLAN0_VID: &str = "vlan0_vid";
    pub const VLAN1_VID: &str = "vlan1_vid";
    pub const VLAN2_VID: &str = "vlan2_vid";
    pub const MPLS_DEPTH: &str = "mpls_depth";
    pub const SRC_MAC: &str = "src_mac";
    pub const DST_MAC: &str = "dst_mac";
    pub const ETHER_TYPE: &str = "ether_type";
    pub const LLC_VALID: &str = "llc_valid";
    pub const LLC_DSAP: &str = "llc_dsap";
    pub const LLC_SSAP: &str = "llc_ssap";
    pub const IPV4_SRC: &str = "ipv4_src";
    pub const IPV4_DST: &str = "ipv4_dst";
    pub const IPV6_SRC: &str = "ipv6_src";
    pub const IPV6_DST: &str = "ipv6_dst";
    pub const IP_PROTO: &str = "ip_proto";
    pub const L4_VALID: &str = "l4_valid";
    pub const L4_SRC_PORT: &str = "l4_src_port";
    pub const L4_DST_PORT: &str = "l4_dst_port";
    // Action parameters.
    pub const LAN_PORT: &str = "lan_port";
    pub const WAN_PORT: &str = "wan_port";
    pub const CORE: &str = "core";
    pub const BUCKET_MASK: &str = "bucket_mask";
    pub const BUCKET_BASE: &str = "bucket_base";
    pub const PORT: &str = "port";
}

/// Counters.
pub mod counters {
    pub const DROP_REASONS: &str = "EfbIngress.drop_reasons";
}

/// Packet I/O headers and their fields.
pub mod packet_io {
    pub const PACKET_IN: &str = "packet_in";
    pub const PACKET_OUT: &str = "packet_out";
    pub const INGRESS_PORT: &str = "ingress_port";
    pub const RX_TSTAMP: &str = "rx_tstamp";
    pub const EGRESS_PORT: &str = "egress_port";
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
