//! IP protocols by name. The model keeps a protocol a number (typedef `ip-protocol`, a
//! uint8, as the chip matches it and gNMI clients send it); every reader of set lines
//! (typed, piped, loaded from a file, `efb-config`) also takes the names engineers type
//! (`tcp`, `udp`) through [`crate::Schema::value`], and the shell offers them.

/// Names of the common IP protocols (IANA's keywords, lower case), their numbers and what
/// they are.
pub const PROTOCOLS: &[(&str, u8, &str)] = &[
    ("icmp", 1, "Internet Control Message Protocol"),
    ("igmp", 2, "Internet Group Management Protocol"),
    ("tcp", 6, "Transmission Control Protocol"),
    ("udp", 17, "User Datagram Protocol"),
    ("gre", 47, "Generic Routing Encapsulation"),
    ("esp", 50, "IPsec Encapsulating Security Payload"),
    ("ah", 51, "IPsec Authentication Header"),
    ("icmpv6", 58, "ICMP for IPv6"),
    ("ospf", 89, "Open Shortest Path First"),
    ("pim", 103, "Protocol Independent Multicast"),
    ("vrrp", 112, "Virtual Router Redundancy Protocol"),
    ("sctp", 132, "Stream Control Transmission Protocol"),
];

/// What a protocol leaf takes, for errors and `?`.
pub const ACCEPTED: &str = "a protocol number 0-255 or one of icmp, igmp, tcp, udp, gre, esp, \
                            ah, icmpv6, ospf, pim, vrrp, sctp";

/// The number a word names: digits (0 to 255), or a protocol's name in any case.
pub fn number(word: &str) -> Option<u8> {
    if word.bytes().all(|b| b.is_ascii_digit()) {
        return word.parse().ok();
    }
    PROTOCOLS
        .iter()
        .find(|(name, _, _)| name.eq_ignore_ascii_case(word))
        .map(|(_, n, _)| *n)
}

/// The typedef of the model's protocol leaves: leaves of this type take the names too.
pub const TYPEDEF: &str = "ip-protocol";

/// The number a protocol word names, when it is a name (digits are left to the type).
pub fn name_to_number(word: &str) -> Option<u8> {
    if word.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    number(word)
}
