/*
 * efb.p4: the EcoFilter Balancer data plane, for Tofino (TNA), as bf-p4c compiles it.
 *
 * Spreads operator traffic over DPI filters by the symmetric hash of MODEL.md (balancing
 * algorithm version 2), with per-pair liveness (software bypass) and whole-unit bypass.
 * The contract with the controller is the P4Info the compiler writes (efb.p4info.txtpb);
 * code resolves names through it. See README.md beside this file.
 *
 * Frame paths (PIPELINE.md):
 *   link port -> flows_ipv4 | flows_ipv6 | flows_other (by what the frame carries) ->
 *     bypass (the link's other port) | drop | to_unit:
 *     units -> buckets [unit's base | hash & mask] -> pairs -> out of the pair's LAN port (frame
 *     entered by the link's LAN port) or WAN port, with the 4-byte tag after the source
 *     MAC: TPID 0x88B5, link id, core.
 *   pair port, tagged -> strip the tag -> the tag's link: LAN port if it came back by the
 *     pair's LAN side, WAN port if by its WAN side.
 *   pair port, EtherType 0x88B6 (keep-alive back from a filter) -> towards the CPU port,
 *     recorded by egress in the keep-alive registers (newest round back, returns, time on
 *     path, arrival), then dropped there, or to the controller (packet-in with the ingress
 *     port and the arrival time) when the keep-alive asks for it.
 *   controller packet-out -> the port it names, or every replica of the multicast group it
 *     names (a keep-alive round: a copy out of each pair port of a unit); keep-alives get
 *     the port they leave by and their departure time.
 *
 * Written for the chip, not for a software switch: no conditions inside actions (action
 * data and separate actions choose), no comparison of two variables, no arithmetic in the
 * parser, tables the TCAM holds, and one bridged header on every frame that reaches the
 * egress parser.
 */

#include <core.p4>
#include <tna.p4>

/* Table sizes: what the compiler places on Tofino 1 (p4/compiled/resources.txt). The
 * controller reads them from the P4Info and refuses a configuration that needs more. */
#define FLOWS_IPV4_SIZE  8192
#define FLOWS_IPV6_SIZE  2560
#define FLOWS_OTHER_SIZE 2048
#define FRAME_CLASSES_SIZE 512
#define BUCKETS_SIZE     262144
/* One keep-alive register cell per device port a keep-alive leaves by (9 bits), and one
 * per unit (its multicast group, 8 bits). */
#define KEEPALIVE_CELLS  512
#define KEEPALIVE_UNITS  256
#define KEEPALIVE_TALLIES 512   /* per unit, and per parity of its rounds' numbers */

/* The balancing method before the controller sets one (the default action of table
 * `balancing`). A compile-time choice so that p4testgen, which runs only the declared
 * default of a keyless table, can be run once per method. */
#ifndef EFB_DEFAULT_METHOD
#define EFB_DEFAULT_METHOD hash_layer3
#endif

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

/* The PCIe CPU port of Tofino 1 boards: 192 with two pipes, 320 with four. On a two-pipe
 * board 320 does not exist; on a four-pipe board 192 is a CPU Ethernet port, never a
 * front-panel one. The parser takes packet-outs from either; which one is this board's is
 * the controller's to say (port map file -> `cpu_port`), and ingress refuses packet-outs
 * from the other. */
const PortId_t CPU_PORT_2_PIPES = 192;
const PortId_t CPU_PORT_4_PIPES = 320;

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
    bit<8> ctrl;
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

/* One 32-bit word of IPv4 options: extracted (not skipped) so that the deparser puts
 * them back. */
header ipv4_option_h {
    bit<32> word;
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

/* Keep-alive payload (EtherType 0x88B6), built by the controller. Sent to a multicast
 * group (one packet-out a round), each copy gets the port it leaves by from egress: the
 * port names the pair and the direction, and it is where the return is recorded. */
header keepalive_h {
    bit<16> out_port;    /* the device port it left by: written at departure */
    bit<32> seq;         /* the round */
    bit<64> tx_tstamp;   /* ns, chip clock: written at departure by this program */
    bit<8>  flags;       /* bit 0: send the return to the controller as well */
    bit<8>  unit_id;     /* the unit whose round it is (its multicast group) */
}

/* Controller headers: whole bytes, as the compiler and Stratum lay them out. */
@controller_header("packet_in")
header packet_in_h {
    bit<16> ingress_port;
    bit<48> rx_tstamp;
}

@controller_header("packet_out")
header packet_out_h {
    bit<16> egress_port;  /* a device port, when mcast_grp is 0 */
    bit<16> mcast_grp;    /* a multicast group of the replication engine, or 0 */
}

/* Carried from ingress to egress on every frame, first: the egress parser always finds
 * it there. */
header bridged_h {
    bit<1>  is_keepalive_out;
    bit<1>  check_length;
    bit<1>  round;       /* a keep-alive round (a packet-out to a group): it enters its unit */
    bit<1>  ka_return;   /* a keep-alive back from a filter: egress records it */
    bit<1>  punted;      /* ... and the controller asked for it: packet_in follows */
    bit<3>  pad;
    bit<16> ip_end;      /* bytes from the frame start to the end of the outer IP packet, plus the FCS */
}

struct headers_t {
    bridged_h      bridged;
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
    ipv4_option_h[10] ipv4_options;
    ipv6_h         ipv6;        /* outer (or only) IPv6 */
    gre_h          gre;
    gre_option_h[3] gre_options;
    ipv4_h         inner_ipv4;  /* after GRE or IP-in-IP */
    ipv6_h         inner_ipv6;
    l4_ports_h     l4;
}

/* What the flow tables and the hash see: the innermost IP header reached. */
struct lookup_t {
    bit<2>   vlan_depth;
    bit<12>  vlan0_vid;
    bit<12>  vlan1_vid;
    bit<12>  vlan2_vid;
    bit<3>   mpls_depth;
    bit<16>  ether_type;
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

/* Metadata starts at zero on the chip too (bf-p4c leaves it undefined otherwise). */
@pa_auto_init_metadata
struct ig_metadata_t {
    lookup_t  lkp;
    bit<8>    link_id;
    bit<8>    frame_class;
    bit<8>    pair_id;
    bit<1>    from_link;
    bit<1>    from_pair;
    bit<1>    from_cpu;
    bit<1>    side_wan;    /* the frame came in by a WAN side (link or pair) */
    bit<1>    pppoe;       /* a PPPoE header before the outer IP header */
    bit<1>    malformed;   /* the parser found a wrong IP version or header length */
    bit<16>   ip_offset;   /* where the outermost IP header starts */
    bit<16>   ip_len;      /* its total length */
    PortId_t  lan_port;
    PortId_t  wan_port;
    PortId_t  cpu_port;
    bit<8>    unit_id;
    bit<1>    flow_drop;
    bit<1>    drop;
    bit<3>    drop_reason;
    bit<2>    method;
    bit<32>   hash;
    bit<16>   bucket;
    bit<18>   bucket_base;
    bit<18>   bucket_index;
    bit<8>    core;
    /* The symmetric key of MODEL.md version 2: source XOR destination. */
    bit<32>   xor_v4;
    bit<128>  xor_v6;
    bit<16>   xor_port;
}

struct eg_metadata_t {
    bit<16> ip_end_over;   /* how far the IP packet runs past the frame (0: it does not) */
    /* Keep-alives: a return's register cell, time on path, how many rounds of its unit
     * entered after its own, and the chip's clock in units of 1.024 us (wraps after 73
     * minutes, beyond any interval). */
    bit<9>  ka_cell;
    bit<9>  ka_tally;      /* the tally cell: the unit and its round number's parity */
    bit<32> ka_path;
    bit<32> ka_round;
    bit<32> ka_behind;
    bit<1>  ka_newer;
    bit<32> ka_now;
}

/* ---------------------------------------------------------------- ingress parser */

parser EfbIngressParser(packet_in pkt,
                        out headers_t hdr,
                        out ig_metadata_t md,
                        out ingress_intrinsic_metadata_t ig_intr_md) {
    /* The parser only extracts: Tofino's parser cannot overwrite a field it set
     * before, so depths and the EtherType after the tags are worked out in ingress from
     * which headers are valid. */
    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        transition select(ig_intr_md.ingress_port) {
            CPU_PORT_2_PIPES : parse_packet_out;
            CPU_PORT_4_PIPES : parse_packet_out;
            default          : parse_ethernet;
        }
    }

    state parse_packet_out {
        pkt.extract(hdr.packet_out);
        transition accept;
    }

/* Where an EtherType (after the MACs or after a tag) leads. Values up to 1500 are
 * IEEE 802.3 lengths (LLC follows), 0x0600 and up EtherTypes; 1501..1535 are neither and
 * pass as non-IP. The parser's TCAM matches value and mask, so 0..1500 takes eight. */
#define AFTER_ETHERTYPE                                                      \
            ETHERTYPE_IPV4        : parse_ipv4;                              \
            ETHERTYPE_IPV6        : parse_ipv6;                              \
            ETHERTYPE_MPLS        : parse_mpls0;                             \
            ETHERTYPE_MPLS_MC     : parse_mpls0;                             \
            ETHERTYPE_PPPOE       : parse_pppoe;                             \
            0x0000 &&& 0xFC00     : parse_llc;  /*    0..1023 */             \
            0x0400 &&& 0xFF00     : parse_llc;  /* 1024..1279 */             \
            0x0500 &&& 0xFF80     : parse_llc;  /* 1280..1407 */             \
            0x0580 &&& 0xFFC0     : parse_llc;  /* 1408..1471 */             \
            0x05C0 &&& 0xFFF0     : parse_llc;  /* 1472..1487 */             \
            0x05D0 &&& 0xFFF8     : parse_llc;  /* 1488..1495 */             \
            0x05D8 &&& 0xFFFC     : parse_llc;  /* 1496..1499 */             \
            0x05DC                : parse_llc;  /* 1500 */                   \
            default               : accept

    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_EFB_TAG   : parse_efb_tag;
            ETHERTYPE_KEEPALIVE : parse_keepalive;
            ETHERTYPE_VLAN      : parse_vlan0;
            ETHERTYPE_QINQ      : parse_vlan0;
            AFTER_ETHERTYPE;
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

    /* Up to three tags; a fourth leaves the frame non-IP (passed, never filtered). */
    state parse_vlan0 {
        pkt.extract(hdr.vlan[0]);
        transition select(hdr.vlan[0].ether_type) {
            ETHERTYPE_VLAN : parse_vlan1;
            ETHERTYPE_QINQ : parse_vlan1;
            AFTER_ETHERTYPE;
        }
    }

    state parse_vlan1 {
        pkt.extract(hdr.vlan[1]);
        transition select(hdr.vlan[1].ether_type) {
            ETHERTYPE_VLAN : parse_vlan2;
            ETHERTYPE_QINQ : parse_vlan2;
            AFTER_ETHERTYPE;
        }
    }

    state parse_vlan2 {
        pkt.extract(hdr.vlan[2]);
        transition select(hdr.vlan[2].ether_type) {
            ETHERTYPE_VLAN : accept;    /* a 4th tag: deeper than we parse */
            ETHERTYPE_QINQ : accept;
            AFTER_ETHERTYPE;
        }
    }

    state parse_llc {
        pkt.extract(hdr.llc);
        transition accept;
    }

    /* Up to six labels, one state each so that the depth is a constant; a seventh leaves
     * the frame non-IP. After the bottom of stack, the first nibble tells IPv4 from IPv6,
     * as routers guess. */
    state parse_mpls0 {
        pkt.extract(hdr.mpls[0]);
        transition select(hdr.mpls[0].bos) { 1 : parse_mpls_payload; default : parse_mpls1; }
    }
    state parse_mpls1 {
        pkt.extract(hdr.mpls[1]);
        transition select(hdr.mpls[1].bos) { 1 : parse_mpls_payload; default : parse_mpls2; }
    }
    state parse_mpls2 {
        pkt.extract(hdr.mpls[2]);
        transition select(hdr.mpls[2].bos) { 1 : parse_mpls_payload; default : parse_mpls3; }
    }
    state parse_mpls3 {
        pkt.extract(hdr.mpls[3]);
        transition select(hdr.mpls[3].bos) { 1 : parse_mpls_payload; default : parse_mpls4; }
    }
    state parse_mpls4 {
        pkt.extract(hdr.mpls[4]);
        transition select(hdr.mpls[4].bos) { 1 : parse_mpls_payload; default : parse_mpls5; }
    }
    state parse_mpls5 {
        pkt.extract(hdr.mpls[5]);
        transition select(hdr.mpls[5].bos) { 1 : parse_mpls_payload; default : accept; }
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
        transition select(hdr.pppoe.protocol) {
            PPP_IPV4 : parse_ipv4;
            PPP_IPV6 : parse_ipv6;
            default  : accept;
        }
    }

    /* A wrong IP version or a header length below 20 is malformed: ingress counts and
     * drops the frame. Tofino's parser takes `reject` as the end of parsing, with no error
     * (bf-p4c maps it to the same end as `accept`): the verdict is a flag of our own. */
    state malformed {
        md.malformed = 1;
        transition accept;
    }

    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.version, hdr.ipv4.ihl) {
            (4, 5)            : parse_ipv4_payload;
            (4, 0 &&& 0xC)    : malformed;         /* ihl 0..3 */
            (4, 4)            : malformed;
            (4, _)            : parse_ipv4_options;
            default           : malformed;
        }
    }

    /* ihl - 5 option words: the entry state by ihl, then one word per state down to the
     * payload (a constant count per state, no parser arithmetic). */
    state parse_ipv4_options {
        transition select(hdr.ipv4.ihl) {
            6       : parse_ipv4_option0;
            7       : parse_ipv4_option1;
            8       : parse_ipv4_option2;
            9       : parse_ipv4_option3;
            10      : parse_ipv4_option4;
            11      : parse_ipv4_option5;
            12      : parse_ipv4_option6;
            13      : parse_ipv4_option7;
            14      : parse_ipv4_option8;
            default : parse_ipv4_option9;
        }
    }
    state parse_ipv4_option9 { pkt.extract(hdr.ipv4_options[9]); transition parse_ipv4_option8; }
    state parse_ipv4_option8 { pkt.extract(hdr.ipv4_options[8]); transition parse_ipv4_option7; }
    state parse_ipv4_option7 { pkt.extract(hdr.ipv4_options[7]); transition parse_ipv4_option6; }
    state parse_ipv4_option6 { pkt.extract(hdr.ipv4_options[6]); transition parse_ipv4_option5; }
    state parse_ipv4_option5 { pkt.extract(hdr.ipv4_options[5]); transition parse_ipv4_option4; }
    state parse_ipv4_option4 { pkt.extract(hdr.ipv4_options[4]); transition parse_ipv4_option3; }
    state parse_ipv4_option3 { pkt.extract(hdr.ipv4_options[3]); transition parse_ipv4_option2; }
    state parse_ipv4_option2 { pkt.extract(hdr.ipv4_options[2]); transition parse_ipv4_option1; }
    state parse_ipv4_option1 { pkt.extract(hdr.ipv4_options[1]); transition parse_ipv4_option0; }
    state parse_ipv4_option0 { pkt.extract(hdr.ipv4_options[0]); transition parse_ipv4_payload; }

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
            default            : malformed;
        }
    }

    /* GRE version 0 carrying IP; other GRE keeps the outer header for balancing. */
    state parse_gre {
        pkt.extract(hdr.gre);
        transition select(hdr.gre.version, hdr.gre.checksum_present, hdr.gre.key_present, hdr.gre.seq_present) {
            (0, 0, 0, 0) : parse_gre_payload;
            (0, _, _, _) : parse_gre_options;
            default      : accept;
        }
    }

    /* C, K and S each add one word: the entry state by how many, then one per state. */
    state parse_gre_options {
        transition select(hdr.gre.checksum_present, hdr.gre.key_present, hdr.gre.seq_present) {
            (1, 1, 1) : parse_gre_option2;
            (0, 1, 1) : parse_gre_option1;
            (1, 0, 1) : parse_gre_option1;
            (1, 1, 0) : parse_gre_option1;
            default   : parse_gre_option0;
        }
    }
    state parse_gre_option2 { pkt.extract(hdr.gre_options[2]); transition parse_gre_option1; }
    state parse_gre_option1 { pkt.extract(hdr.gre_options[1]); transition parse_gre_option0; }
    state parse_gre_option0 { pkt.extract(hdr.gre_options[0]); transition parse_gre_payload; }

    state parse_gre_payload {
        transition select(hdr.gre.protocol) {
            ETHERTYPE_IPV4 : parse_inner_ipv4;
            ETHERTYPE_IPV6 : parse_inner_ipv6;
            default        : accept;
        }
    }

    /* An inner IPv4 header with options is balanced and matched on its addresses and
     * protocol; its ports, after the options, are not read (a second stack of option
     * words would cost 320 bits of PHV for a rare frame). */
    state parse_inner_ipv4 {
        pkt.extract(hdr.inner_ipv4);
        transition select(hdr.inner_ipv4.version, hdr.inner_ipv4.ihl, hdr.inner_ipv4.frag_offset, hdr.inner_ipv4.protocol) {
            (4, 5, 0, PROTO_TCP)     : parse_l4;
            (4, 5, 0, PROTO_UDP)     : parse_l4;
            (4, 5, 0, PROTO_DCCP)    : parse_l4;
            (4, 5, 0, PROTO_SCTP)    : parse_l4;
            (4, 5, 0, PROTO_UDPLITE) : parse_l4;
            (4, 0 &&& 0xC, _, _)     : malformed;  /* ihl 0..3 */
            (4, 4, _, _)             : malformed;
            (4, _, _, _)             : accept;
            default                  : malformed;
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
            default            : malformed;
        }
    }

    state parse_l4 {
        pkt.extract(hdr.l4);
        transition accept;
    }
}

/* ---------------------------------------------------------------- flow tables */

/* The flows the controller compiled for frames of one kind: IPv4, IPv6 or anything
 * else (no IP inside). A frame meets exactly one of the three, so a flow is written into
 * each table whose frames it can match, and the highest priority within that table wins.
 * Ranges (ports, depths) are written as ternary prefixes by the controller: the TCAM holds
 * them without range units, and the entry count of a flow is known before it is written. */

control FlowsIpv4(inout headers_t hdr, inout ig_metadata_t md) {
    DirectCounter<bit<64>>(CounterType_t.PACKETS_AND_BYTES) counter;

    action bypass() { counter.count(); md.unit_id = 0; }
    action drop() { counter.count(); md.unit_id = 0; md.flow_drop = 1; }
    action to_unit(bit<8> unit_id) { counter.count(); md.unit_id = unit_id; }

    table flows {
        key = {
            md.frame_class        : ternary @name("frame_class");
            md.lkp.ipv4_src       : ternary @name("ipv4_src");
            md.lkp.ipv4_dst       : ternary @name("ipv4_dst");
            md.lkp.ip_proto       : ternary @name("ip_proto");
            md.lkp.l4_src_port    : ternary @name("l4_src_port");
            md.lkp.l4_dst_port    : ternary @name("l4_dst_port");
        }
        actions = { bypass; drop; to_unit; }
        default_action = bypass();
        counters = counter;
        size = FLOWS_IPV4_SIZE;
    }

    apply { flows.apply(); }
}

control FlowsIpv6(inout headers_t hdr, inout ig_metadata_t md) {
    DirectCounter<bit<64>>(CounterType_t.PACKETS_AND_BYTES) counter;

    action bypass() { counter.count(); md.unit_id = 0; }
    action drop() { counter.count(); md.unit_id = 0; md.flow_drop = 1; }
    action to_unit(bit<8> unit_id) { counter.count(); md.unit_id = unit_id; }

    table flows {
        key = {
            md.frame_class        : ternary @name("frame_class");
            md.lkp.ipv6_src       : ternary @name("ipv6_src");
            md.lkp.ipv6_dst       : ternary @name("ipv6_dst");
            md.lkp.ip_proto       : ternary @name("ip_proto");
            md.lkp.l4_src_port    : ternary @name("l4_src_port");
            md.lkp.l4_dst_port    : ternary @name("l4_dst_port");
        }
        actions = { bypass; drop; to_unit; }
        default_action = bypass();
        counters = counter;
        size = FLOWS_IPV6_SIZE;
    }

    apply { flows.apply(); }
}

control FlowsOther(inout headers_t hdr, inout ig_metadata_t md) {
    DirectCounter<bit<64>>(CounterType_t.PACKETS_AND_BYTES) counter;

    action bypass() { counter.count(); md.unit_id = 0; }
    action drop() { counter.count(); md.unit_id = 0; md.flow_drop = 1; }

    table flows {
        key = {
            md.frame_class        : ternary @name("frame_class");
            hdr.llc.isValid()     : ternary @name("llc_valid");
            hdr.llc.dsap          : ternary @name("llc_dsap");
            hdr.llc.ssap          : ternary @name("llc_ssap");
        }
        /* Frames without IP never go to a filter: to_unit has nothing to hash. */
        actions = { bypass; drop; }
        default_action = bypass();
        counters = counter;
        size = FLOWS_OTHER_SIZE;
    }

    apply { flows.apply(); }
}

/* ---------------------------------------------------------------- ingress */

control EfbIngress(inout headers_t hdr,
                   inout ig_metadata_t md,
                   in ingress_intrinsic_metadata_t ig_intr_md,
                   in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                   inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                   inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {

    Counter<bit<64>, bit<3>>(8, CounterType_t.PACKETS_AND_BYTES) drop_reasons;

    /* CRC-32/ISO-HDLC (zlib): reflected 0x04C11DB7, init and final xor 0xFFFFFFFF.
     * The key is symmetric by construction (XOR), as MODEL.md version 2 defines it. */
    CRCPolynomial<bit<32>>(32w0x04C11DB7, true, false, false, 32w0xFFFFFFFF, 32w0xFFFFFFFF) crc32;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, crc32) hash_v4_l3;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, crc32) hash_v4_l4;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, crc32) hash_v4_dst;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, crc32) hash_v6_l3;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, crc32) hash_v6_l4;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, crc32) hash_v6_dst;

    FlowsIpv4() flows_ipv4;
    FlowsIpv6() flows_ipv6;
    FlowsOther() flows_other;

    /* Drops are decided anywhere and counted in one place (an indexed counter lives in
     * one stage): `mark_drop` notes the reason, the end of `apply` counts and drops. */
    action mark_drop(bit<3> reason) {
        md.drop = 1;
        md.drop_reason = reason;
    }

    action count_drop() {
        drop_reasons.count(md.drop_reason);
        ig_dprsr_md.drop_ctl = 1;
    }

    /* ---- ingress_port: what the port is */

    action from_link_lan(bit<8> link_id) { md.from_link = 1; md.link_id = link_id; md.side_wan = 0; }
    action from_link_wan(bit<8> link_id) { md.from_link = 1; md.link_id = link_id; md.side_wan = 1; }
    /* A frame from a filter names its link in the tag (when it has one). */
    action from_pair_lan(bit<8> pair_id) {
        md.from_pair = 1; md.pair_id = pair_id; md.side_wan = 0; md.link_id = hdr.efb_tag.link_id;
    }
    action from_pair_wan(bit<8> pair_id) {
        md.from_pair = 1; md.pair_id = pair_id; md.side_wan = 1; md.link_id = hdr.efb_tag.link_id;
    }
    action from_cpu() { md.from_cpu = 1; }
    action unknown_port() { mark_drop(DROP_UNKNOWN_PORT); }

    table ingress_port {
        key = { ig_intr_md.ingress_port : exact @name("ingress_port"); }
        actions = {
            @tableonly from_link_lan;
            @tableonly from_link_wan;
            @tableonly from_pair_lan;
            @tableonly from_pair_wan;
            @tableonly from_cpu;
            @defaultonly unknown_port;
        }
        const default_action = unknown_port();
        size = 512;
    }

    /* ---- platform: the board's CPU port (packet-ins go there) */

    action set_cpu_port(PortId_t port) { md.cpu_port = port; }

    table platform {
        actions = { @defaultonly set_cpu_port; }
        default_action = set_cpu_port(CPU_PORT_2_PIPES);
        size = 1;
    }

    /* ---- link_ports: a link's two operator ports */

    action set_link_ports(PortId_t lan_port, PortId_t wan_port) {
        md.lan_port = lan_port;
        md.wan_port = wan_port;
    }
    action link_missing() { mark_drop(DROP_LINK_MISSING); }

    table link_ports {
        key = { md.link_id : exact @name("link_id"); }
        actions = { @tableonly set_link_ports; @defaultonly link_missing; }
        const default_action = link_missing();
        size = 256;
    }


    /* ---- frame_classes: the Ethernet layers, the link and the L4 header, as one class */
    action set_frame_class(bit<8> frame_class) { md.frame_class = frame_class; }
    action no_frame_class() { md.frame_class = 0; }

    table frame_classes {
        key = {
            md.link_id            : ternary @name("link_id");
            md.lkp.vlan_depth     : ternary @name("vlan_depth");
            md.lkp.vlan0_vid      : ternary @name("vlan0_vid");
            md.lkp.vlan1_vid      : ternary @name("vlan1_vid");
            md.lkp.vlan2_vid      : ternary @name("vlan2_vid");
            md.lkp.mpls_depth     : ternary @name("mpls_depth");
            hdr.ethernet.src_addr : ternary @name("src_mac");
            hdr.ethernet.dst_addr : ternary @name("dst_mac");
            md.lkp.ether_type     : ternary @name("ether_type");
            md.lkp.l4_valid       : ternary @name("l4_valid");
        }
        actions = { @tableonly set_frame_class; @defaultonly no_frame_class; }
        const default_action = no_frame_class();
        size = FRAME_CLASSES_SIZE;
    }

    /* ---- balancing: the box's method, as the default action of a keyless table */

    action hash_layer3() { md.method = METHOD_LAYER3; }
    action hash_layer4() { md.method = METHOD_LAYER4; }
    action hash_dst_ip() { md.method = METHOD_DST_IP; }

    table balancing {
        actions = { @defaultonly hash_layer3; @defaultonly hash_layer4; @defaultonly hash_dst_ip; }
        default_action = EFB_DEFAULT_METHOD();
        size = 1;
    }

    /* ---- units, buckets, pairs */

    /* The bucket, computed by the unit's own action: one stage less. A unit owns a region
     * of the bucket table, aligned to its power-of-two size, so that base | bucket is the
     * slot (the controller places the regions). */
    action unit_active(bit<16> bucket_mask, bit<18> bucket_base) {
        md.bucket = md.hash[15:0] & bucket_mask;
        md.bucket_base = bucket_base;
    }
    action unit_bypass() { md.unit_id = 0; }

    table units {
        key = { md.unit_id : exact @name("unit_id"); }
        actions = { @tableonly unit_active; unit_bypass; }
        default_action = unit_bypass();
        size = 256;
    }

    action to_pair(bit<8> pair_id, bit<8> core) { md.pair_id = pair_id; md.core = core; }

    /* Direct-indexed (a hash-action table: the key is the address, no cuckoo ways), so that
     * every one of its slots can be written. It never misses: a slot never written holds
     * the default, pair 0, which the pairs table never holds (its miss is pair_down). */
    @use_hash_action(1)
    table buckets {
        key = { md.bucket_index : exact @name("index"); }
        actions = { to_pair; }
        default_action = to_pair(0, 0);
        size = BUCKETS_SIZE;
    }

    /* Keyed by pair and the side the frame entered by: the action sends the frame out of
     * that side's port of the pair, tagged, in the stage of the lookup. */
    action pair_up(PortId_t port) {
        ig_tm_md.ucast_egress_port = port;
        hdr.efb_tag.setValid();
        hdr.efb_tag.link_id = md.link_id;
        hdr.efb_tag.core = md.core;
        hdr.efb_tag.ether_type = hdr.ethernet.ether_type;
        hdr.ethernet.ether_type = ETHERTYPE_EFB_TAG;
    }
    /* A pair without traffic (down, or not in the table): the frame keeps the link's
     * other port. */
    action pair_down() { }

    table pairs {
        key = { md.pair_id : exact @name("pair_id"); md.side_wan : exact @name("side_wan"); }
        actions = { @tableonly pair_up; pair_down; }
        const default_action = pair_down();
        size = 512;
    }

    /* ---- the Ethernet layers: tags, their VLAN ids, the EtherType after them, labels.
     * Constant tables on which headers the parser found (it cannot count for us). */

    action no_tags() { md.lkp.ether_type = hdr.ethernet.ether_type; }
    action one_tag() {
        md.lkp.vlan_depth = 1;
        md.lkp.vlan0_vid = hdr.vlan[0].vid;
        md.lkp.ether_type = hdr.vlan[0].ether_type;
    }
    action two_tags() {
        md.lkp.vlan_depth = 2;
        md.lkp.vlan0_vid = hdr.vlan[0].vid;
        md.lkp.vlan1_vid = hdr.vlan[1].vid;
        md.lkp.ether_type = hdr.vlan[1].ether_type;
    }
    action three_tags() {
        md.lkp.vlan_depth = 3;
        md.lkp.vlan0_vid = hdr.vlan[0].vid;
        md.lkp.vlan1_vid = hdr.vlan[1].vid;
        md.lkp.vlan2_vid = hdr.vlan[2].vid;
        md.lkp.ether_type = hdr.vlan[2].ether_type;
    }

    table vlan_tags {
        key = {
            hdr.vlan[0].isValid() : exact;
            hdr.vlan[1].isValid() : exact;
            hdr.vlan[2].isValid() : exact;
        }
        actions = { no_tags; one_tag; two_tags; three_tags; }
        default_action = no_tags();
        const entries = {
            (true, false, false) : one_tag();
            (true, true, false)  : two_tags();
            (true, true, true)   : three_tags();
        }
        size = 4;
    }

    action set_mpls_depth(bit<3> depth) { md.lkp.mpls_depth = depth; }

    table mpls_labels {
        key = {
            hdr.mpls[0].isValid() : exact;
            hdr.mpls[1].isValid() : exact;
            hdr.mpls[2].isValid() : exact;
            hdr.mpls[3].isValid() : exact;
            hdr.mpls[4].isValid() : exact;
            hdr.mpls[5].isValid() : exact;
        }
        actions = { set_mpls_depth; }
        default_action = set_mpls_depth(0);
        const entries = {
            (true, false, false, false, false, false) : set_mpls_depth(1);
            (true, true, false, false, false, false)  : set_mpls_depth(2);
            (true, true, true, false, false, false)   : set_mpls_depth(3);
            (true, true, true, true, false, false)    : set_mpls_depth(4);
            (true, true, true, true, true, false)     : set_mpls_depth(5);
            (true, true, true, true, true, true)      : set_mpls_depth(6);
        }
        size = 8;
    }

    action pppoe_present() { md.pppoe = 1; }

    /* ---- where the outer IP header starts, plus the 4-byte FCS (see check_length):
     * Ethernet 14, each VLAN tag or MPLS label 4, PPPoE and PPP 8. A constant table,
     * because the parser may not add. */

    action set_ip_offset(bit<16> offset) { md.ip_offset = offset; }

    table ip_offset {
        key = {
            md.lkp.vlan_depth : exact;
            md.lkp.mpls_depth : exact;
            md.pppoe          : exact;
        }
        actions = { set_ip_offset; }
        default_action = set_ip_offset(18);
        const entries = {
            (0, 0, 0) : set_ip_offset(18); (0, 0, 1) : set_ip_offset(26);
            (1, 0, 0) : set_ip_offset(22); (1, 0, 1) : set_ip_offset(30);
            (2, 0, 0) : set_ip_offset(26); (2, 0, 1) : set_ip_offset(34);
            (3, 0, 0) : set_ip_offset(30); (3, 0, 1) : set_ip_offset(38);
            (0, 1, 0) : set_ip_offset(22); (1, 1, 0) : set_ip_offset(26);
            (2, 1, 0) : set_ip_offset(30); (3, 1, 0) : set_ip_offset(34);
            (0, 2, 0) : set_ip_offset(26); (1, 2, 0) : set_ip_offset(30);
            (2, 2, 0) : set_ip_offset(34); (3, 2, 0) : set_ip_offset(38);
            (0, 3, 0) : set_ip_offset(30); (1, 3, 0) : set_ip_offset(34);
            (2, 3, 0) : set_ip_offset(38); (3, 3, 0) : set_ip_offset(42);
            (0, 4, 0) : set_ip_offset(34); (1, 4, 0) : set_ip_offset(38);
            (2, 4, 0) : set_ip_offset(42); (3, 4, 0) : set_ip_offset(46);
            (0, 5, 0) : set_ip_offset(38); (1, 5, 0) : set_ip_offset(42);
            (2, 5, 0) : set_ip_offset(46); (3, 5, 0) : set_ip_offset(50);
            (0, 6, 0) : set_ip_offset(42); (1, 6, 0) : set_ip_offset(46);
            (2, 6, 0) : set_ip_offset(50); (3, 6, 0) : set_ip_offset(54);
        }
        size = 64;
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

    /* A packet-out from the controller: out of the port it names, as it is. */
    action send_packet_out() {
        ig_tm_md.ucast_egress_port = (PortId_t)hdr.packet_out.egress_port;
        hdr.packet_out.setInvalid();
        hdr.bridged.is_keepalive_out = 1;
    }

    /* A keep-alive round: one packet-out, a copy out of every port of the group the
     * controller keeps (each pair port of a unit); egress writes each copy's port. */
    action replicate_packet_out() {
        ig_tm_md.mcast_grp_a = hdr.packet_out.mcast_grp;
        hdr.packet_out.setInvalid();
        hdr.bridged.is_keepalive_out = 1;
        hdr.bridged.round = 1;
    }

    /* A keep-alive back from a filter, not asked for by the controller: towards the CPU
     * port, whose egress records it and drops it (the registers are egress's, which has
     * stages to spare; ingress has none). */
    action return_keepalive() {
        ig_tm_md.ucast_egress_port = md.cpu_port;
        hdr.bridged.ka_return = 1;
    }

    /* A keep-alive back from a filter: to the controller with where and when it came.
     * Arrival on the parser's global clock, the clock egress stamps departures with
     * (the MAC's 1588 timestamp is a clock of its own). */
    action send_packet_in() {
        ig_tm_md.ucast_egress_port = md.cpu_port;
        hdr.bridged.ka_return = 1;
        hdr.bridged.punted = 1;
        hdr.packet_in.setValid();
        hdr.packet_in.ingress_port = (bit<16>)ig_intr_md.ingress_port;
        hdr.packet_in.rx_tstamp = ig_prsr_md.global_tstamp;
    }

    /* Back from a filter: strip the tag; the tag's link is looked up next. */
    action strip_tag() {
        hdr.ethernet.ether_type = hdr.efb_tag.ether_type;
        hdr.efb_tag.setInvalid();
    }

    action out_lan() { ig_tm_md.ucast_egress_port = md.lan_port; }
    action out_wan() { ig_tm_md.ucast_egress_port = md.wan_port; }

    action l4_ports() {
        md.lkp.l4_valid = 1;
        md.lkp.l4_src_port = hdr.l4.src_port;
        md.lkp.l4_dst_port = hdr.l4.dst_port;
    }

    /* Where the outer IP packet ends, plus the 4-byte FCS that pkt_length counts (the
     * offsets of table ip_offset include it): egress compares it with the frame. The sums
     * saturate: a length near 65535 must not wrap round to a small end that fits. */
    action ipv4_length() { md.ip_len = hdr.ipv4.total_len; }
    action ipv6_length() { md.ip_len = hdr.ipv6.payload_len |+| 40; }
    action check_length() {
        hdr.bridged.check_length = 1;
        hdr.bridged.ip_end = md.ip_offset |+| md.ip_len;
    }

    /* The symmetric key of MODEL.md version 2: A XOR B (and PA XOR PB), the same in both
     * directions without any comparison, then CRC-32 over the field list. Protocols
     * without ports leave the ports 0. */
    action xor_ipv4() {
        md.xor_v4 = md.lkp.ipv4_src ^ md.lkp.ipv4_dst;
        md.xor_port = md.lkp.l4_src_port ^ md.lkp.l4_dst_port;
    }
    action xor_ipv6() {
        md.xor_v6 = md.lkp.ipv6_src ^ md.lkp.ipv6_dst;
        md.xor_port = md.lkp.l4_src_port ^ md.lkp.l4_dst_port;
    }

    /* The order is the chip's: what depends on no table (the lookup fields, the hash)
     * for every frame at once, then the few lookups that depend on each other (flows ->
     * unit -> bucket -> pair), so that the chain fits the twelve stages. */
    apply {
        /* Every frame carries the bridged header to egress, which always parses it. */
        hdr.bridged.setValid();
        hdr.bridged.is_keepalive_out = 0;
        hdr.bridged.check_length = 0;
        hdr.bridged.round = 0;
        hdr.bridged.ka_return = 0;
        hdr.bridged.punted = 0;
        hdr.bridged.pad = 0;
        hdr.bridged.ip_end = 0;
        md.drop = 0;
        md.drop_reason = 0;
        md.flow_drop = 0;
        md.unit_id = 0;

        ingress_port.apply();
        balancing.apply();

        /* Lookup fields: the Ethernet layers and the innermost IP header reached. */
        vlan_tags.apply();
        mpls_labels.apply();
        if (hdr.pppoe.isValid()) { pppoe_present(); }
        if (hdr.inner_ipv4.isValid()) {
            lookup_ipv4(hdr.inner_ipv4.src_addr, hdr.inner_ipv4.dst_addr, hdr.inner_ipv4.protocol);
        } else if (hdr.inner_ipv6.isValid()) {
            lookup_ipv6(hdr.inner_ipv6.src_addr, hdr.inner_ipv6.dst_addr, hdr.inner_ipv6.next_hdr);
        } else if (hdr.ipv4.isValid()) {
            lookup_ipv4(hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4.protocol);
        } else if (hdr.ipv6.isValid()) {
            lookup_ipv6(hdr.ipv6.src_addr, hdr.ipv6.dst_addr, hdr.ipv6.next_hdr);
        }
        if (hdr.l4.isValid()) { l4_ports(); }

        /* The session's hash, by the box's method (used only if a flow sends the frame
         * to a unit). */
        if (md.lkp.ip_version == 4) {
            xor_ipv4();
            if (md.method == METHOD_LAYER4) {
                md.hash = hash_v4_l4.get({ md.xor_v4, md.lkp.ip_proto, md.xor_port });
            } else if (md.method == METHOD_DST_IP) {
                md.hash = hash_v4_dst.get({ md.lkp.ipv4_dst });
            } else {
                md.hash = hash_v4_l3.get({ md.xor_v4, md.lkp.ip_proto });
            }
        } else if (md.lkp.ip_version == 6) {
            xor_ipv6();
            if (md.method == METHOD_LAYER4) {
                md.hash = hash_v6_l4.get({ md.xor_v6, md.lkp.ip_proto, md.xor_port });
            } else if (md.method == METHOD_DST_IP) {
                md.hash = hash_v6_dst.get({ md.lkp.ipv6_dst });
            } else {
                md.hash = hash_v6_l3.get({ md.xor_v6, md.lkp.ip_proto });
            }
        }

        /* The link's ports, looked up once (a table applies in one place on the chip):
         * for a frame from a link, and for one back from a filter (the tag's link, which
         * ingress_port copied). */
        bool link_frame = md.from_link == 1 && ig_prsr_md.parser_err == 0 && md.malformed == 0;
        bool returning = md.from_pair == 1 && hdr.efb_tag.isValid();
        if (link_frame || returning) {
            link_ports.apply();
        }
        if (link_frame) {
            if (hdr.ipv4.isValid()) {
                ipv4_length();
            } else if (hdr.ipv6.isValid()) {
                ipv6_length();
            }
            if (hdr.ipv4.isValid() || hdr.ipv6.isValid()) {
                ip_offset.apply();
                check_length();
            }
            frame_classes.apply();
            if (md.lkp.ip_version == 4) {
                flows_ipv4.apply(hdr, md);
            } else if (md.lkp.ip_version == 6) {
                flows_ipv6.apply(hdr, md);
            } else {
                flows_other.apply(hdr, md);
            }
        }

        if (md.drop == 1) {
            /* unknown port or link: counted below */
        } else if (hdr.packet_out.isValid()) {
            if (md.from_cpu == 0) {
                /* By the other board's CPU port number: not ours. */
                mark_drop(DROP_PACKET_OUT_PORT);
            } else if (hdr.packet_out.mcast_grp == 0) {
                send_packet_out();
            } else {
                replicate_packet_out();
            }
        } else if (returning) {
            strip_tag();
            if (md.side_wan == 0) { out_lan(); } else { out_wan(); }
        } else if (md.from_pair == 1) {
            if (ig_prsr_md.parser_err != 0) {
                /* It ends inside a header (a keep-alive or a tag cut short). */
                mark_drop(DROP_MALFORMED);
            } else if (hdr.keepalive.isValid()) {
                platform.apply();
                if (hdr.keepalive.flags[0:0] == 1) {
                    send_packet_in();
                } else {
                    return_keepalive();
                }
            } else {
                mark_drop(DROP_FROM_FILTER_UNTAGGED);
            }
        } else if (!link_frame) {
            mark_drop(DROP_MALFORMED);
        } else {
            /* From an operator link: bypass (the link's other port) unless the flow
             * sends the frame to a unit, and a live pair takes its bucket. */
            if (md.side_wan == 0) { out_wan(); } else { out_lan(); }
            if (md.flow_drop == 1) {
                mark_drop(DROP_FLOW);
            } else if (md.unit_id != 0) {
                units.apply();
                md.bucket_index = md.bucket_base | (bit<18>) md.bucket;
                if (md.unit_id != 0) {
                    buckets.apply();
                }
                if (md.unit_id != 0) {
                    pairs.apply();
                }
            }
        }

        if (md.drop == 1) { count_drop(); }
    }
}

control EfbIngressDeparser(packet_out pkt,
                           inout headers_t hdr,
                           in ig_metadata_t md,
                           in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    apply {
        pkt.emit(hdr.bridged);
        pkt.emit(hdr.packet_in);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.efb_tag);
        pkt.emit(hdr.keepalive);
        pkt.emit(hdr.vlan);
        pkt.emit(hdr.mpls);
        pkt.emit(hdr.pppoe);
        pkt.emit(hdr.llc);
        pkt.emit(hdr.ipv4);
        /* The parser fills the option stacks from the top down (the first word into
         * the highest element it uses): emitted from the top, they leave in the order they
         * came. */
        pkt.emit(hdr.ipv4_options[9]);
        pkt.emit(hdr.ipv4_options[8]);
        pkt.emit(hdr.ipv4_options[7]);
        pkt.emit(hdr.ipv4_options[6]);
        pkt.emit(hdr.ipv4_options[5]);
        pkt.emit(hdr.ipv4_options[4]);
        pkt.emit(hdr.ipv4_options[3]);
        pkt.emit(hdr.ipv4_options[2]);
        pkt.emit(hdr.ipv4_options[1]);
        pkt.emit(hdr.ipv4_options[0]);
        pkt.emit(hdr.ipv6);
        pkt.emit(hdr.gre);
        pkt.emit(hdr.gre_options[2]);
        pkt.emit(hdr.gre_options[1]);
        pkt.emit(hdr.gre_options[0]);
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
        pkt.extract(hdr.bridged);
        transition select(hdr.bridged.is_keepalive_out, hdr.bridged.ka_return,
                          hdr.bridged.punted) {
            (1, _, _) : parse_keepalive_out;
            (0, 1, 1) : parse_punted_return;
            (0, 1, 0) : parse_keepalive_out;
            default   : accept;
        }
    }

    /* A return the controller asked for: the packet-in header ingress put first. */
    state parse_punted_return {
        pkt.extract(hdr.packet_in);
        transition parse_keepalive_out;
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
    /* How far the outer IP packet runs past the frame, by a saturating subtraction
     * (the chip compares no two variables): 0 when it fits. */
    action measure_overrun() {
        md.ip_end_over = hdr.bridged.ip_end |-| eg_intr_md.pkt_length;
    }

    action length_ok() { }
    action too_short() { eg_dprsr_md.drop_ctl = 1; }

    /* A gateway cannot test a value computed in the same pass: a table can. */
    table ip_length {
        key = { md.ip_end_over : exact; }
        actions = { length_ok; too_short; }
        default_action = too_short();
        const entries = { 0 : length_ok(); }
        size = 1;
    }

    /* ---- keep-alives, recorded per port they left by (the cell: a pair's LAN port for
     * the direction out of it, its WAN port for the other) so that the controller reads
     * them once a round instead of handling every return. The clock is the chip's: the
     * global timestamp egress stamps departures with; 32 bits of nanoseconds (4.29 s) hold
     * any time on path a round can wait for. */
    Register<bit<32>, bit<9>>(KEEPALIVE_CELLS, 0) keepalive_seq;      /* newest round back */
    Register<bit<32>, bit<9>>(KEEPALIVE_CELLS, 0) keepalive_returns;  /* rounds back, counted */
    Register<bit<32>, bit<9>>(KEEPALIVE_CELLS, 0) keepalive_path;     /* its time on path, ns */
    Register<bit<32>, bit<9>>(KEEPALIVE_CELLS, 0) keepalive_arrival;  /* when, in ka_now units */
    /* Per unit: the newest round that entered (left) the chip. A round has until the next
     * one enters (the controller sends the next one round-timeout after a round whose loss
     * would take a pair down): a return after that is late, and not counted. */
    Register<bit<32>, bit<8>>(KEEPALIVE_UNITS, 0) keepalive_rounds;
    /* Per unit, rounds numbered even and odd apart (the controller alternates them): the
     * copies of its rounds that left, and the returns counted. Once the next round entered,
     * a round's tally no longer moves, so the controller reads two cells a unit instead of
     * every pair's, and every pair's only when a round's copies and returns differ. */
    Register<bit<32>, bit<9>>(KEEPALIVE_TALLIES, 0) keepalive_copies;
    Register<bit<32>, bit<9>>(KEEPALIVE_TALLIES, 0) keepalive_counted;

    /* A return counts once, only while its round is its unit's newest, and only if it is
     * newer than the last one counted: late, duplicated or overtaken, it is not a return. */
    RegisterAction<bit<32>, bit<9>, bit<1>>(keepalive_seq) keepalive_newer = {
        void apply(inout bit<32> newest, out bit<1> newer) {
            newer = 0;
            if (md.ka_behind == 0 && hdr.keepalive.seq > newest) {
                newest = hdr.keepalive.seq;
                newer = 1;
            }
        }
    };
    RegisterAction<bit<32>, bit<9>, bit<32>>(keepalive_returns) keepalive_count = {
        void apply(inout bit<32> returns) { returns = returns + 1; }
    };
    RegisterAction<bit<32>, bit<9>, bit<32>>(keepalive_path) keepalive_path_write = {
        void apply(inout bit<32> path) { path = md.ka_path; }
    };
    RegisterAction<bit<32>, bit<9>, bit<32>>(keepalive_arrival) keepalive_arrival_write = {
        void apply(inout bit<32> arrival) { arrival = md.ka_now; }
    };
    RegisterAction<bit<32>, bit<8>, bit<32>>(keepalive_rounds) keepalive_round_enter = {
        void apply(inout bit<32> seq) { seq = hdr.keepalive.seq; }
    };
    RegisterAction<bit<32>, bit<8>, bit<32>>(keepalive_rounds) keepalive_round_read = {
        void apply(inout bit<32> seq, out bit<32> newest) { newest = seq; }
    };
    RegisterAction<bit<32>, bit<9>, bit<32>>(keepalive_copies) keepalive_copy_tally = {
        void apply(inout bit<32> copies) { copies = copies + 1; }
    };
    RegisterAction<bit<32>, bit<9>, bit<32>>(keepalive_counted) keepalive_return_tally = {
        void apply(inout bit<32> returns) { returns = returns + 1; }
    };

    action keepalive_cell() {
        md.ka_cell = hdr.keepalive.out_port[8:0];
        md.ka_path = eg_prsr_md.global_tstamp[31:0] - hdr.keepalive.tx_tstamp[31:0];
        md.ka_now = eg_prsr_md.global_tstamp[41:10];
    }

    action keepalive_tally() {
        md.ka_tally = hdr.keepalive.unit_id ++ hdr.keepalive.seq[0:0];
    }

    /* 0 when the return's round is still its unit's newest (a subtraction: the chip
     * compares no two variables outside a register action). */
    action keepalive_behind() { md.ka_behind = md.ka_round - hdr.keepalive.seq; }

    /* Recorded, and not asked for by the controller: the return ends here. */
    action consume_keepalive() { eg_dprsr_md.drop_ctl = 1; }

    apply {
        if (hdr.bridged.ka_return == 1) {
            /* Back from a filter (ingress sent it to the CPU port). */
            keepalive_cell();
            keepalive_tally();
            md.ka_round = keepalive_round_read.execute(hdr.keepalive.unit_id);
            keepalive_behind();
            md.ka_newer = keepalive_newer.execute(md.ka_cell);
            if (md.ka_newer == 1) {
                keepalive_count.execute(md.ka_cell);
                keepalive_path_write.execute(md.ka_cell);
                keepalive_arrival_write.execute(md.ka_cell);
                keepalive_return_tally.execute(md.ka_tally);
            }
            if (hdr.bridged.punted == 0) {
                consume_keepalive();
            }
        } else if (hdr.keepalive.isValid()) {
            /* Leaving (a packet-out): the departure time on the chip's clock, so that
             * time on path uses one clock, and the port it leaves by, which names the copy
             * of a round (the replica's id would too, but p4testgen's Tofino model misplaces
             * the egress metadata of a program that reads egress_rid). A round's copy also
             * makes it its unit's newest. */
            hdr.keepalive.tx_tstamp = (bit<64>)eg_prsr_md.global_tstamp;
            hdr.keepalive.out_port = (bit<16>)eg_intr_md.egress_port;
            if (hdr.bridged.round == 1) {
                keepalive_tally();
                keepalive_round_enter.execute(hdr.keepalive.unit_id);
                keepalive_copy_tally.execute(md.ka_tally);
            }
        }
        /* Wrong lengths: an IP length past the frame (pkt_length counts the 4-byte FCS).
         * A saturating subtraction says by how much, without comparing two variables. */
        if (hdr.bridged.check_length == 1) {
            measure_overrun();
            ip_length.apply();
        }
        hdr.bridged.setInvalid();
    }
}

control EfbEgressDeparser(packet_out pkt,
                          inout headers_t hdr,
                          in eg_metadata_t md,
                          in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    apply {
        pkt.emit(hdr.packet_in);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.keepalive);
    }
}

Pipeline(EfbIngressParser(), EfbIngress(), EfbIngressDeparser(),
         EfbEgressParser(), EfbEgress(), EfbEgressDeparser()) pipe;

Switch(pipe) main;
