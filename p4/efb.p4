/*
 * efb.p4: the EcoFilter Balancer data plane, for Tofino (TNA).
 *
 * Spreads operator traffic over DPI filters by the symmetric hash of MODEL.md, with
 * per-pair liveness (software bypass) and whole-unit bypass. The contract with the
 * controller is the P4Info (efb.p4info.txtpb): names and @id-pinned ids below.
 * See README.md beside this file for the tables, the header and the port map.
 *
 * Frame paths (PIPELINE.md):
 *   link port -> flows -> bypass (the link's other port) | drop | to_unit:
 *     units -> buckets (unit, hash & mask) -> pairs -> out of the pair's LAN port (frame
 *     entered by the link's LAN port) or WAN port, with the 4-byte tag after the source
 *     MAC: TPID 0x88B5, link id, core.
 *   pair port, tagged -> strip the tag -> the tag's link: LAN port if it came back by the
 *     pair's LAN side, WAN port if by its WAN side.
 *   pair port, EtherType 0x88B6 (keep-alive back from a filter) -> controller (packet-in
 *     with the ingress port and the arrival time).
 *   controller packet-out -> the port it names; keep-alives get their departure time.
 */

#include <core.p4>
#include <tna.p4>

/* ---------------------------------------------------------------- constants */

const bit<16> ETHERTYPE_IPV4      = 0x0800;
const bit<16> ETHERTYPE_IPV6      = 0x86DD;
const bit<16> ETHERTYPE_VLAN      = 0x8100;
const bit<16> ETHERTYPE_QINQ      = 0x88A8;
const bit<16> ETHERTYPE_MPLS      = 0x8847;
const bit<16> ETHERTYPE_MPLS_MC   = 0x8848;
const bit<16> ETHERTYPE_PPPOE     = 0x8864;
const bit<16> ETHERTYPE_EFB_TAG   = 0x88B5;
const bit<16> ETHERTYPE_KEEPALIVE = 0x88B6;
const bit<16> PPP_IPV4            = 0x0021;
const bit<16> PPP_IPV6            = 0x0057;
const bit<8>  PROTO_IPIP          = 4;
const bit<8>  PROTO_TCP           = 6;
const bit<8>  PROTO_UDP           = 17;
const bit<8>  PROTO_DCCP          = 33;
const bit<8>  PROTO_IPV6          = 41;
const bit<8>  PROTO_GRE           = 47;
const bit<8>  PROTO_SCTP          = 132;
const bit<8>  PROTO_UDPLITE       = 136;

/* The CPU (PCIe) port of the 32-port board; also in port-map.json. */
const PortId_t CPU_PORT = 320;

/* drop_reasons indexes (names::drop_reasons in crates/efb-p4info). */
const bit<3> DROP_UNKNOWN_PORT         = 0;
const bit<3> DROP_LINK_MISSING         = 1;
const bit<3> DROP_MALFORMED            = 2;
const bit<3> DROP_FLOW                 = 3;
const bit<3> DROP_FROM_FILTER_UNTAGGED = 4;
const bit<3> DROP_PACKET_OUT_PORT      = 5;

/* Balancing methods, chosen by the default action of table `balancing`. */
const bit<2> METHOD_LAYER3 = 0;
const bit<2> METHOD_LAYER4 = 1;
const bit<2> METHOD_DST_IP = 2;

/* ---------------------------------------------------------------- headers */

header ethernet_h {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

/* The balancer's tag, after the source MAC: ethernet.ether_type carries the TPID
 * 0x88B5, this header the link id, the core and the original EtherType. Shaped like a
 * VLAN tag so that the filters' NICs pass it, but it is not one. */
header efb_tag_h {
    bit<8>  link_id;
    bit<8>  core;
    bit<16> ether_type;
}

header vlan_tag_h {
    bit<3>  pcp;
    bit<1>  dei;
    bit<12> vid;
    bit<16> ether_type;
}

header mpls_h {
    bit<20> label;
    bit<3>  tc;
    bit<1>  bos;
    bit<8>  ttl;
}

header pppoe_h {
    bit<4>  version;
    bit<4>  type;
    bit<8>  code;
    bit<16> session_id;
    bit<16> length;
    bit<16> protocol;
}

header llc_h {
    bit<8> dsap;
    bit<8> ssap;
    bit<8> control;
}

header ipv4_h {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  diffserv;
    bit<16> total_len;
    bit<16> identification;
    bit<3>  flags;
    bit<13> frag_offset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdr_checksum;
    bit<32> src_addr;
    bit<32> dst_addr;
}

header ipv4_options_h {
    varbit<320> options;
}

header ipv6_h {
    bit<4>   version;
    bit<8>   traffic_class;
    bit<20>  flow_label;
    bit<16>  payload_len;
    bit<8>   next_hdr;
    bit<8>   hop_limit;
    bit<128> src_addr;
    bit<128> dst_addr;
}

header gre_h {
    bit<1>  checksum_present;
    bit<1>  routing_present;
    bit<1>  key_present;
    bit<1>  seq_present;
    bit<9>  reserved;
    bit<3>  version;
    bit<16> protocol;
}

header gre_option_h {
    bit<32> value;
}

/* The first four bytes of TCP, UDP, SCTP, DCCP and UDP-Lite: the ports. */
header l4_ports_h {
    bit<16> src_port;
    bit<16> dst_port;
}

/* Keep-alive payload (EtherType 0x88B6), built by the controller. */
header keepalive_h {
    bit<8>  pair_id;
    bit<8>  direction;   /* 0: sent out of the pair's LAN port, 1: out of its WAN port */
    bit<32> seq;
    bit<64> tx_tstamp;   /* ns, chip clock: written at departure by this program */
}

@controller_header("packet_in")
header packet_in_h {
    bit<16> ingress_port;
    bit<48> rx_tstamp;
}

@controller_header("packet_out")
header packet_out_h {
    bit<16> egress_port;
}

struct headers_t {
    packet_out_h   packet_out;
    packet_in_h    packet_in;
    ethernet_h     ethernet;
    efb_tag_h      efb_tag;
    keepalive_h    keepalive;
    vlan_tag_h[3]  vlan;
    mpls_h[6]      mpls;
    pppoe_h        pppoe;
    llc_h          llc;
    ipv4_h         ipv4;        /* outer (or only) IPv4 */
    ipv4_options_h ipv4_options;
    ipv6_h         ipv6;        /* outer (or only) IPv6 */
    gre_h          gre;
    gre_option_h[3] gre_options;
    ipv4_h         inner_ipv4;  /* after GRE or IP-in-IP */
    ipv6_h         inner_ipv6;
    l4_ports_h     l4;
}

/* What the flow table and the hash see: the innermost IP header reached. */
struct lookup_t {
    bit<2>   vlan_depth;
    bit<12>  vlan0_vid;
    bit<12>  vlan1_vid;
    bit<12>  vlan2_vid;
    bit<3>   mpls_depth;
    bit<16>  ether_type;
    bit<1>   llc_valid;
    bit<4>   ip_version;
    bit<32>  ipv4_src;
    bit<32>  ipv4_dst;
    bit<128> ipv6_src;
    bit<128> ipv6_dst;
    bit<8>   ip_proto;
    bit<1>   l4_valid;
    bit<16>  l4_src_port;
    bit<16>  l4_dst_port;
}

/* Carried from ingress to egress. */
header bridged_h {
    bit<1>  is_keepalive_out;
    bit<1>  check_length;
    bit<6>  pad;
    bit<16> ip_end;      /* bytes from the frame start to the end of the outermost IP packet */
}

struct ig_metadata_t {
    bridged_h bridged;
    lookup_t  lkp;
    bit<8>    link_id;
    bit<8>    pair_id;
    bit<1>    from_link;
    bit<1>    from_pair;
    bit<1>    side_wan;    /* the frame came in by a WAN side (link or pair) */
    bit<16>   ip_offset;   /* where the outermost IP header starts */
    bit<16>   ip_len;      /* its total length (IPv6: payload + 40) */
    PortId_t  lan_port;
    PortId_t  wan_port;
    bit<8>    unit_id;
    bit<16>   bucket_mask;
    bit<2>    method;
    bit<32>   hash;
    bit<16>   bucket;
    bit<8>    core;
    /* The symmetric key of MODEL.md version 2: source XOR destination. */
    bit<32>   xor_v4;
    bit<128>  xor_v6;
    bit<16>   xor_port;
}

struct eg_metadata_t {
    bridged_h bridged;
}

/* ---------------------------------------------------------------- ingress parser */

parser EfbIngressParser(packet_in pkt,
                        out headers_t hdr,
                        out ig_metadata_t md,
                        out ingress_intrinsic_metadata_t ig_intr_md) {
    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        md.lkp.vlan_depth = 0;
        md.lkp.mpls_depth = 0;
        md.lkp.ip_version = 0;
        md.ip_offset = 14;
        transition select(ig_intr_md.ingress_port) {
            CPU_PORT : parse_packet_out;
            default  : parse_ethernet;
        }
    }

    state parse_packet_out {
        pkt.extract(hdr.packet_out);
        transition accept;
    }

    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        md.lkp.ether_type = hdr.ethernet.ether_type;
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_EFB_TAG   : parse_efb_tag;
            ETHERTYPE_KEEPALIVE : parse_keepalive;
            default             : parse_l2;
        }
    }

    state parse_efb_tag {
        pkt.extract(hdr.efb_tag);
        transition accept;
    }

    state parse_keepalive {
        pkt.extract(hdr.keepalive);
        transition accept;
    }

    state parse_l2 {
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_VLAN    : parse_vlan0;
            ETHERTYPE_QINQ    : parse_vlan0;
            default           : parse_after_vlans;
        }
    }

    /* Up to three tags; a fourth leaves the frame non-IP (passed, never filtered). */
    state parse_vlan0 {
        pkt.extract(hdr.vlan[0]);
        md.lkp.vlan_depth = 1;
        md.lkp.vlan0_vid = hdr.vlan[0].vid;
        md.lkp.ether_type = hdr.vlan[0].ether_type;
        md.ip_offset = 18;
        transition select(hdr.vlan[0].ether_type) {
            ETHERTYPE_VLAN : parse_vlan1;
            ETHERTYPE_QINQ : parse_vlan1;
            default        : parse_after_vlans;
        }
    }

    state parse_vlan1 {
        pkt.extract(hdr.vlan[1]);
        md.lkp.vlan_depth = 2;
        md.lkp.vlan1_vid = hdr.vlan[1].vid;
        md.lkp.ether_type = hdr.vlan[1].ether_type;
        md.ip_offset = 22;
        transition select(hdr.vlan[1].ether_type) {
            ETHERTYPE_VLAN : parse_vlan2;
            ETHERTYPE_QINQ : parse_vlan2;
            default        : parse_after_vlans;
        }
    }

    state parse_vlan2 {
        pkt.extract(hdr.vlan[2]);
        md.lkp.vlan_depth = 3;
        md.lkp.vlan2_vid = hdr.vlan[2].vid;
        md.lkp.ether_type = hdr.vlan[2].ether_type;
        md.ip_offset = 26;
        transition select(hdr.vlan[2].ether_type) {
            ETHERTYPE_VLAN : accept;    /* a 4th tag: deeper than we parse */
            ETHERTYPE_QINQ : accept;
            default        : parse_after_vlans;
        }
    }

    state parse_after_vlans {
        transition select(md.lkp.ether_type) {
            ETHERTYPE_IPV4        : parse_ipv4;
            ETHERTYPE_IPV6        : parse_ipv6;
            ETHERTYPE_MPLS        : parse_mpls;
            ETHERTYPE_MPLS_MC     : parse_mpls;
            ETHERTYPE_PPPOE       : parse_pppoe;
            0x0000 &&& 0xF800     : parse_llc;   /* 802.3 length (0..2047 covers 0..1500) */
            default               : accept;
        }
    }

    state parse_llc {
        pkt.extract(hdr.llc);
        md.lkp.llc_valid = 1;
        transition accept;
    }

    /* Up to six labels; a seventh leaves the frame non-IP. After the bottom of stack,
     * the first nibble tells IPv4 from IPv6, as routers guess. */
    state parse_mpls {
        pkt.extract(hdr.mpls.next);
        md.lkp.mpls_depth = md.lkp.mpls_depth + 1;
        md.ip_offset = md.ip_offset + 4;
        transition select(hdr.mpls.last.bos, hdr.mpls.lastIndex) {
            (1, _) : parse_mpls_payload;
            (0, 5) : accept;              /* six labels, no bottom: deeper than we parse */
            default : parse_mpls;
        }
    }

    state parse_mpls_payload {
        transition select(pkt.lookahead<bit<4>>()) {
            4       : parse_ipv4;
            6       : parse_ipv6;
            default : accept;
        }
    }

    state parse_pppoe {
        pkt.extract(hdr.pppoe);
        md.ip_offset = md.ip_offset + 8;
        transition select(hdr.pppoe.protocol) {
            PPP_IPV4 : parse_ipv4;
            PPP_IPV6 : parse_ipv6;
            default  : accept;
        }
    }

    /* A wrong version or a header length below 20 is malformed: the parser rejects
     * it, ingress counts and drops it. */
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        md.ip_len = hdr.ipv4.total_len;
        transition select(hdr.ipv4.version, hdr.ipv4.ihl) {
            (4, 5)            : parse_ipv4_payload;
            (4, 0 &&& 0xC)    : reject;            /* ihl 0..3 */
            (4, 4)            : reject;
            (4, _)            : parse_ipv4_options;
            default           : reject;
        }
    }

    state parse_ipv4_options {
        pkt.extract(hdr.ipv4_options, ((bit<32>)hdr.ipv4.ihl - 5) * 32);
        transition parse_ipv4_payload;
    }

    state parse_ipv4_payload {
        transition select(hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (0, PROTO_IPIP)    : parse_inner_ipv4;
            (0, PROTO_IPV6)    : parse_inner_ipv6;
            (0, PROTO_GRE)     : parse_gre;
            (0, PROTO_TCP)     : parse_l4;
            (0, PROTO_UDP)     : parse_l4;
            (0, PROTO_DCCP)    : parse_l4;
            (0, PROTO_SCTP)    : parse_l4;
            (0, PROTO_UDPLITE) : parse_l4;
            default            : accept;
        }
    }

    state parse_ipv6 {
        pkt.extract(hdr.ipv6);
        md.ip_len = hdr.ipv6.payload_len + 40;
        transition select(hdr.ipv6.version, hdr.ipv6.next_hdr) {
            (6, PROTO_IPIP)    : parse_inner_ipv4;
            (6, PROTO_IPV6)    : parse_inner_ipv6;
            (6, PROTO_GRE)     : parse_gre;
            (6, PROTO_TCP)     : parse_l4;
            (6, PROTO_UDP)     : parse_l4;
            (6, PROTO_DCCP)    : parse_l4;
            (6, PROTO_SCTP)    : parse_l4;
            (6, PROTO_UDPLITE) : parse_l4;
            (6, _)             : accept;
            default            : reject;
        }
    }

    /* GRE version 0 carrying IP; other GRE keeps the outer header for balancing. */
    state parse_gre {
        pkt.extract(hdr.gre);
        transition select(hdr.gre.version, hdr.gre.checksum_present, hdr.gre.key_present, hdr.gre.seq_present) {
            (0, 0, 0, 0) : parse_gre_payload;
            (0, _, _, _) : parse_gre_option;
            default      : accept;
        }
    }

    state parse_gre_option {
        /* C, K and S each add four bytes; count them by extracting in turn. */
        pkt.extract(hdr.gre_options.next);
        transition select(hdr.gre.checksum_present ++ hdr.gre.key_present ++ hdr.gre.seq_present,
                          hdr.gre_options.lastIndex) {
            (0b001, 0) : parse_gre_payload;
            (0b010, 0) : parse_gre_payload;
            (0b100, 0) : parse_gre_payload;
            (0b011, 1) : parse_gre_payload;
            (0b101, 1) : parse_gre_payload;
            (0b110, 1) : parse_gre_payload;
            (0b111, 2) : parse_gre_payload;
            default    : parse_gre_option;
        }
    }

    state parse_gre_payload {
        transition select(hdr.gre.protocol) {
            ETHERTYPE_IPV4 : parse_inner_ipv4;
            ETHERTYPE_IPV6 : parse_inner_ipv6;
            default        : accept;
        }
    }

    state parse_inner_ipv4 {
        pkt.extract(hdr.inner_ipv4);
        transition select(hdr.inner_ipv4.version, hdr.inner_ipv4.ihl, hdr.inner_ipv4.frag_offset, hdr.inner_ipv4.protocol) {
            (4, 5, 0, PROTO_TCP)     : parse_l4;
            (4, 5, 0, PROTO_UDP)     : parse_l4;
            (4, 5, 0, PROTO_DCCP)    : parse_l4;
            (4, 5, 0, PROTO_SCTP)    : parse_l4;
            (4, 5, 0, PROTO_UDPLITE) : parse_l4;
            (4, 5, _, _)             : accept;
            default                  : reject;
        }
    }

    state parse_inner_ipv6 {
        pkt.extract(hdr.inner_ipv6);
        transition select(hdr.inner_ipv6.version, hdr.inner_ipv6.next_hdr) {
            (6, PROTO_TCP)     : parse_l4;
            (6, PROTO_UDP)     : parse_l4;
            (6, PROTO_DCCP)    : parse_l4;
            (6, PROTO_SCTP)    : parse_l4;
            (6, PROTO_UDPLITE) : parse_l4;
            (6, _)             : accept;
            default            : reject;
        }
    }

    state parse_l4 {
        pkt.extract(hdr.l4);
        transition accept;
    }
}

/* ---------------------------------------------------------------- ingress */

control EfbIngress(inout headers_t hdr,
                   inout ig_metadata_t md,
                   in ingress_intrinsic_metadata_t ig_intr_md,
                   in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                   inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                   inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {

    @id(0x12000001)
    Counter<bit<64>, bit<3>>(8, CounterType_t.PACKETS_AND_BYTES) drop_reasons;

    @id(0x13000001)
    DirectCounter<bit<64>>(CounterType_t.PACKETS_AND_BYTES) flow_counter;

    /* CRC-32/ISO-HDLC (zlib): reflected 0x04C11DB7, init and final xor 0xFFFFFFFF.
     * The key is symmetric by construction (XOR), as MODEL.md version 2 defines it. */
    CRCPolynomial<bit<32>>(32w0x04C11DB7, true, false, false, 32w0xFFFFFFFF, 32w0xFFFFFFFF) crc32;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, crc32) hash_v4_l3;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, crc32) hash_v4_l4;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, crc32) hash_v4_dst;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, crc32) hash_v6_l3;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, crc32) hash_v6_l4;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, crc32) hash_v6_dst;

    action count_drop(bit<3> reason) {
        drop_reasons.count(reason);
        ig_dprsr_md.drop_ctl = 1;
    }

    /* ---- ingress_port: what the port is */

    @id(0x01000001) action from_link_lan(bit<8> link_id) { md.from_link = 1; md.link_id = link_id; md.side_wan = 0; }
    @id(0x01000002) action from_link_wan(bit<8> link_id) { md.from_link = 1; md.link_id = link_id; md.side_wan = 1; }
    @id(0x01000003) action from_pair_lan(bit<8> pair_id) { md.from_pair = 1; md.pair_id = pair_id; md.side_wan = 0; }
    @id(0x01000004) action from_pair_wan(bit<8> pair_id) { md.from_pair = 1; md.pair_id = pair_id; md.side_wan = 1; }
    @id(0x01000005) action unknown_port() { count_drop(DROP_UNKNOWN_PORT); }

    @id(0x02000001)
    table ingress_port {
        key = { ig_intr_md.ingress_port : exact @name("ingress_port"); }
        actions = {
            @tableonly from_link_lan;
            @tableonly from_link_wan;
            @tableonly from_pair_lan;
            @tableonly from_pair_wan;
            @defaultonly unknown_port;
        }
        const default_action = unknown_port();
        size = 512;
    }

    /* ---- link_ports: a link's two operator ports */

    @id(0x01000006) action set_link_ports(PortId_t lan_port, PortId_t wan_port) {
        md.lan_port = lan_port;
        md.wan_port = wan_port;
    }
    @id(0x01000007) action link_missing() { count_drop(DROP_LINK_MISSING); }

    @id(0x02000002)
    table link_ports {
        key = { md.link_id : exact @name("link_id"); }
        actions = { @tableonly set_link_ports; @defaultonly link_missing; }
        const default_action = link_missing();
        size = 256;
    }

    /* ---- balancing: the box's method, as the default action of a keyless table */

    @id(0x01000008) action hash_layer3() { md.method = METHOD_LAYER3; }
    @id(0x01000009) action hash_layer4() { md.method = METHOD_LAYER4; }
    @id(0x0100000A) action hash_dst_ip() { md.method = METHOD_DST_IP; }

    @id(0x02000003)
    table balancing {
        actions = { @defaultonly hash_layer3; @defaultonly hash_layer4; @defaultonly hash_dst_ip; }
        default_action = hash_layer3();
        size = 1;
    }

    /* ---- flows: the configured flows, highest priority wins */

    @id(0x0100000B) action bypass() { flow_counter.count(); md.unit_id = 0; }
    @id(0x0100000C) action drop() { flow_counter.count(); count_drop(DROP_FLOW); }
    @id(0x0100000D) action to_unit(bit<8> unit_id) { flow_counter.count(); md.unit_id = unit_id; }

    @id(0x02000004)
    table flows {
        key = {
            md.link_id         : ternary @name("link_id");
            md.lkp.vlan_depth  : range   @name("vlan_depth");
            md.lkp.vlan0_vid   : ternary @name("vlan0_vid");
            md.lkp.vlan1_vid   : ternary @name("vlan1_vid");
            md.lkp.vlan2_vid   : ternary @name("vlan2_vid");
            md.lkp.mpls_depth  : range   @name("mpls_depth");
            hdr.ethernet.src_addr : ternary @name("src_mac");
            hdr.ethernet.dst_addr : ternary @name("dst_mac");
            md.lkp.ether_type  : ternary @name("ether_type");
            md.lkp.llc_valid   : ternary @name("llc_valid");
            hdr.llc.dsap       : ternary @name("llc_dsap");
            hdr.llc.ssap       : ternary @name("llc_ssap");
            md.lkp.ip_version  : ternary @name("ip_version");
            md.lkp.ipv4_src    : ternary @name("ipv4_src");
            md.lkp.ipv4_dst    : ternary @name("ipv4_dst");
            md.lkp.ipv6_src    : ternary @name("ipv6_src");
            md.lkp.ipv6_dst    : ternary @name("ipv6_dst");
            md.lkp.ip_proto    : ternary @name("ip_proto");
            md.lkp.l4_valid    : ternary @name("l4_valid");
            md.lkp.l4_src_port : range   @name("l4_src_port");
            md.lkp.l4_dst_port : range   @name("l4_dst_port");
        }
        actions = { bypass; drop; to_unit; }
        default_action = bypass();
        counters = flow_counter;
        size = 262144;
    }

    /* ---- units, buckets, pairs */

    @id(0x0100000E) action unit_active(bit<16> bucket_mask) { md.bucket_mask = bucket_mask; }
    @id(0x0100000F) action unit_bypass() { md.unit_id = 0; }

    @id(0x02000005)
    table units {
        key = { md.unit_id : exact @name("unit_id"); }
        actions = { @tableonly unit_active; unit_bypass; }
        default_action = unit_bypass();
        size = 256;
    }

    @id(0x01000010) action to_pair(bit<8> pair_id, bit<8> core) { md.pair_id = pair_id; md.core = core; }
    @id(0x01000011) action software_bypass() { md.unit_id = 0; }

    @id(0x02000006)
    table buckets {
        key = {
            md.unit_id : exact @name("unit_id");
            md.bucket  : exact @name("bucket");
        }
        actions = { @tableonly to_pair; @defaultonly software_bypass; }
        default_action = software_bypass();
        size = 262144;
    }

    @id(0x01000012) action pair_up(PortId_t lan_port, PortId_t wan_port) {
        /* Towards the filter by the side the frame entered the link. */
        ig_tm_md.ucast_egress_port = (md.side_wan == 0) ? lan_port : wan_port;
        hdr.efb_tag.setValid();
        hdr.efb_tag.link_id = md.link_id;
        hdr.efb_tag.core = md.core;
        hdr.efb_tag.ether_type = hdr.ethernet.ether_type;
        hdr.ethernet.ether_type = ETHERTYPE_EFB_TAG;
    }
    @id(0x01000013) action pair_down() { md.unit_id = 0; }

    @id(0x02000007)
    table pairs {
        key = { md.pair_id : exact @name("pair_id"); }
        actions = { @tableonly pair_up; pair_down; }
        default_action = pair_down();
        size = 256;
    }

    /* ---- lookup fields: the innermost IP header the parser reached */

    action lookup_ipv4(bit<32> src, bit<32> dst, bit<8> proto) {
        md.lkp.ip_version = 4;
        md.lkp.ipv4_src = src;
        md.lkp.ipv4_dst = dst;
        md.lkp.ip_proto = proto;
    }

    action lookup_ipv6(bit<128> src, bit<128> dst, bit<8> proto) {
        md.lkp.ip_version = 6;
        md.lkp.ipv6_src = src;
        md.lkp.ipv6_dst = dst;
        md.lkp.ip_proto = proto;
    }

    apply {
        if (hdr.packet_out.isValid()) {
            /* Keep-alives from the controller: out of the named port as they are. */
            ig_tm_md.ucast_egress_port = (PortId_t)hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
            md.bridged.setValid();
            md.bridged.is_keepalive_out = 1;
            ig_tm_md.bypass_egress = 0;
            exit;
        }

        ingress_port.apply();
        if (ig_dprsr_md.drop_ctl == 1) { exit; }

        if (md.from_pair == 1) {
            if (hdr.efb_tag.isValid()) {
                /* Back from a filter: strip the tag, return to the tag's link. */
                md.link_id = hdr.efb_tag.link_id;
                link_ports.apply();
                hdr.ethernet.ether_type = hdr.efb_tag.ether_type;
                hdr.efb_tag.setInvalid();
                ig_tm_md.ucast_egress_port = (md.side_wan == 0) ? md.lan_port : md.wan_port;
            } else if (hdr.keepalive.isValid()) {
                /* A keep-alive that went round its filter: to the controller. */
                ig_tm_md.ucast_egress_port = CPU_PORT;
                hdr.packet_in.setValid();
                hdr.packet_in.ingress_port = (bit<16>)ig_intr_md.ingress_port;
                hdr.packet_in.rx_tstamp = ig_intr_md.ingress_mac_tstamp;
            } else {
                count_drop(DROP_FROM_FILTER_UNTAGGED);
            }
            exit;
        }

        /* From an operator link. Malformed frames are counted and dropped. */
        if (ig_prsr_md.parser_err != 0) {
            count_drop(DROP_MALFORMED);
            exit;
        }
        link_ports.apply();
        if (ig_dprsr_md.drop_ctl == 1) { exit; }
        /* Bypass unless something below sends the frame to a filter. */
        ig_tm_md.ucast_egress_port = (md.side_wan == 0) ? md.wan_port : md.lan_port;

        if (hdr.inner_ipv4.isValid()) {
            lookup_ipv4(hdr.inner_ipv4.src_addr, hdr.inner_ipv4.dst_addr, hdr.inner_ipv4.protocol);
        } else if (hdr.inner_ipv6.isValid()) {
            lookup_ipv6(hdr.inner_ipv6.src_addr, hdr.inner_ipv6.dst_addr, hdr.inner_ipv6.next_hdr);
        } else if (hdr.ipv4.isValid()) {
            lookup_ipv4(hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4.protocol);
        } else if (hdr.ipv6.isValid()) {
            lookup_ipv6(hdr.ipv6.src_addr, hdr.ipv6.dst_addr, hdr.ipv6.next_hdr);
        }
        if (hdr.l4.isValid()) {
            md.lkp.l4_valid = 1;
            md.lkp.l4_src_port = hdr.l4.src_port;
            md.lkp.l4_dst_port = hdr.l4.dst_port;
        }
        if (hdr.ipv4.isValid() || hdr.ipv6.isValid()) {
            /* Egress drops frames shorter than their IP length says. */
            md.bridged.setValid();
            md.bridged.check_length = 1;
            md.bridged.ip_end = md.ip_offset + md.ip_len;
        }

        flows.apply();
        if (ig_dprsr_md.drop_ctl == 1 || md.unit_id == 0 || md.lkp.ip_version == 0) {
            exit;   /* bypass, drop, or no IP inside: never to a filter */
        }

        balancing.apply();
        units.apply();
        if (md.unit_id == 0) { exit; }

        /* The symmetric key of MODEL.md version 2: A XOR B (and PA XOR PB), the same in
         * both directions without any comparison, then CRC-32 over the field list.
         * Protocols without ports leave l4 invalid and the ports 0. */
        md.xor_port = md.lkp.l4_src_port ^ md.lkp.l4_dst_port;
        if (md.lkp.ip_version == 4) {
            md.xor_v4 = md.lkp.ipv4_src ^ md.lkp.ipv4_dst;
            if (md.method == METHOD_LAYER4) {
                md.hash = hash_v4_l4.get({ md.xor_v4, md.lkp.ip_proto, md.xor_port });
            } else if (md.method == METHOD_DST_IP) {
                md.hash = hash_v4_dst.get({ md.lkp.ipv4_dst });
            } else {
                md.hash = hash_v4_l3.get({ md.xor_v4, md.lkp.ip_proto });
            }
        } else {
            md.xor_v6 = md.lkp.ipv6_src ^ md.lkp.ipv6_dst;
            if (md.method == METHOD_LAYER4) {
                md.hash = hash_v6_l4.get({ md.xor_v6, md.lkp.ip_proto, md.xor_port });
            } else if (md.method == METHOD_DST_IP) {
                md.hash = hash_v6_dst.get({ md.lkp.ipv6_dst });
            } else {
                md.hash = hash_v6_l3.get({ md.xor_v6, md.lkp.ip_proto });
            }
        }
        md.bucket = md.hash[15:0] & md.bucket_mask;

        buckets.apply();
        if (md.unit_id == 0) { exit; }
        pairs.apply();
        /* pair_down / miss left the bypass port in place. */
    }
}

control EfbIngressDeparser(packet_out pkt,
                           inout headers_t hdr,
                           in ig_metadata_t md,
                           in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    apply {
        pkt.emit(md.bridged);
        pkt.emit(hdr.packet_in);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.efb_tag);
        pkt.emit(hdr.keepalive);
        pkt.emit(hdr.vlan);
        pkt.emit(hdr.mpls);
        pkt.emit(hdr.pppoe);
        pkt.emit(hdr.llc);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.ipv4_options);
        pkt.emit(hdr.ipv6);
        pkt.emit(hdr.gre);
        pkt.emit(hdr.gre_options);
        pkt.emit(hdr.inner_ipv4);
        pkt.emit(hdr.inner_ipv6);
        pkt.emit(hdr.l4);
    }
}

/* ---------------------------------------------------------------- egress */

parser EfbEgressParser(packet_in pkt,
                       out headers_t hdr,
                       out eg_metadata_t md,
                       out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        pkt.extract(md.bridged);
        transition select(md.bridged.is_keepalive_out) {
            1       : parse_keepalive_out;
            default : accept;
        }
    }

    state parse_keepalive_out {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_KEEPALIVE : parse_keepalive;
            default             : accept;
        }
    }

    state parse_keepalive {
        pkt.extract(hdr.keepalive);
        transition accept;
    }
}

control EfbEgress(inout headers_t hdr,
                  inout eg_metadata_t md,
                  in egress_intrinsic_metadata_t eg_intr_md,
                  in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                  inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                  inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    apply {
        if (hdr.keepalive.isValid()) {
            /* The departure time on the chip's clock, so that time on path uses one
             * clock (the arrival is stamped at ingress). */
            hdr.keepalive.tx_tstamp = (bit<64>)eg_prsr_md.global_tstamp;
        }
        /* Wrong lengths: an IP length past the frame (pkt_length counts the 4-byte FCS). */
        if (md.bridged.check_length == 1 && (bit<16>)md.bridged.ip_end > eg_intr_md.pkt_length - 4) {
            eg_dprsr_md.drop_ctl = 1;
        }
    }
}

control EfbEgressDeparser(packet_out pkt,
                          inout headers_t hdr,
                          in eg_metadata_t md,
                          in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.keepalive);
    }
}

Pipeline(EfbIngressParser(), EfbIngress(), EfbIngressDeparser(),
         EfbEgressParser(), EfbEgress(), EfbEgressDeparser()) pipe;

Switch(pipe) main;
