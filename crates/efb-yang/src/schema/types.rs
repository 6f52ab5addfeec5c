//! Leaf types in the shell's words: what a leaf accepts, and why a value was refused
//! (libyang's own sentences name C types).

use crate::ly::{BaseType, TypeInfo};

/// Why a leaf refused a text, in the shell's words and decided by the leaf's type
/// (libyang's own sentences name C types and "min/max bounds"); the caller adds what the
/// leaf accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    OutOfRange,
    NotAnInteger,
    NotAProtocol,
    NotADecimalInRange,
    NotOneOfTheNames,
    NeitherTrueNorFalse,
    TakesNoValue,
    NotAccepted,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::OutOfRange => "is out of range",
            Verdict::NotAnInteger => "is not an integer",
            Verdict::NotAProtocol => "is not a protocol",
            Verdict::NotADecimalInRange => "is not a decimal number in range",
            Verdict::NotOneOfTheNames => "is not one of the names",
            Verdict::NeitherTrueNorFalse => "is neither true nor false",
            Verdict::TakesNoValue => "takes no value",
            Verdict::NotAccepted => "is not accepted",
        }
    }
}

/// A text a node refused as its value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    /// A container or a list: it holds no value of its own.
    #[error("{node} takes no value")]
    NotALeaf { node: String },
    /// Not a value of the leaf's type.
    #[error("\"{}\" {}", crate::text::excerpt(text), verdict.as_str())]
    Refused { text: String, verdict: Verdict },
}

pub(super) fn refusal(t: Option<&TypeInfo>, text: &str) -> ValueError {
    let protocol = t.and_then(|t| t.typedef.as_deref()) == Some(crate::protocols::TYPEDEF);
    let verdict = match t.map(effective_base) {
        _ if protocol => Verdict::NotAProtocol,
        Some(b) if b.is_integer() => match text.trim().parse::<i128>() {
            Ok(_) => Verdict::OutOfRange,
            Err(_) => Verdict::NotAnInteger,
        },
        Some(BaseType::Decimal64) => Verdict::NotADecimalInRange,
        Some(BaseType::Enumeration) => Verdict::NotOneOfTheNames,
        Some(BaseType::Bool) => Verdict::NeitherTrueNorFalse,
        Some(BaseType::Empty) => Verdict::TakesNoValue,
        _ => Verdict::NotAccepted,
    };
    ValueError::Refused {
        text: text.to_string(),
        verdict,
    }
}

pub(super) fn effective_base(t: &TypeInfo) -> BaseType {
    match (&t.base, &t.leafref_real) {
        (BaseType::LeafRef, Some(real)) => effective_base(real),
        (base, _) => *base,
    }
}

/// Describes what a type accepts, in words an engineer reads at the prompt.
pub fn describe_type(t: &TypeInfo) -> String {
    if let Some(known) = t.typedef.as_deref().and_then(describe_known_typedef) {
        return known.to_string();
    }
    match t.base {
        b if b.is_integer() => match &t.range {
            Some(range) => format!("an integer in {range}"),
            None => format!("an integer in {}", integer_bounds(b)),
        },
        BaseType::Bool => "true or false".to_string(),
        BaseType::Empty => "no value".to_string(),
        BaseType::Enumeration => {
            let names: Vec<&str> = t.enums.iter().map(|e| e.name.as_str()).collect();
            format!("one of {}", names.join(", "))
        }
        BaseType::LeafRef => match &t.leafref_path {
            Some(path) => format!("the name of an existing {}", leafref_target_words(path)),
            None => "a reference".to_string(),
        },
        BaseType::Union => t
            .members
            .iter()
            .map(describe_type)
            .collect::<Vec<_>>()
            .join(", or "),
        BaseType::String => {
            let mut text = "a string".to_string();
            if let Some(length) = &t.range {
                text.push_str(&format!(" of length {length}"));
            }
            if !t.patterns.is_empty() {
                text.push_str(&format!(" matching {}", t.patterns.join(" and ")));
            }
            text
        }
        BaseType::Decimal64 => "a decimal number".to_string(),
        _ => format!("a value of type {:?}", t.base).to_lowercase(),
    }
}

fn integer_bounds(base: BaseType) -> &'static str {
    match base {
        BaseType::Uint8 => "0..255",
        BaseType::Uint16 => "0..65535",
        BaseType::Uint32 => "0..4294967295",
        BaseType::Uint64 => "0..18446744073709551615",
        BaseType::Int8 => "-128..127",
        BaseType::Int16 => "-32768..32767",
        BaseType::Int32 => "-2147483648..2147483647",
        _ => "-9223372036854775808..9223372036854775807",
    }
}

fn describe_known_typedef(name: &str) -> Option<&'static str> {
    Some(match name {
        "ipv4-prefix" => "an IPv4 prefix such as 192.0.2.0/24",
        "ipv6-prefix" => "an IPv6 prefix such as 2001:db8::/32",
        "ip-address" | "ip-address-no-zone" => "an IPv4 or IPv6 address",
        "ipv4-address" | "ipv4-address-no-zone" => "an IPv4 address",
        "ipv6-address" | "ipv6-address-no-zone" => "an IPv6 address",
        "mac-address" => "a MAC address such as 00:11:22:33:44:55",
        "port-number" => "a port number in 0..65535",
        "l4-port-or-range" => "a port (179) or a range of ports (1024-65535)",
        "ip-protocol" => crate::protocols::ACCEPTED,
        "counter64" => "a 64-bit counter",
        "date-and-time" => "a date and time such as 2026-11-30T12:00:00Z",
        _ => return None,
    })
}

/// `/efb:ports/efb:port/efb:name` -> `port` (the list whose key the reference names).
fn leafref_target_words(path: &str) -> String {
    let steps: Vec<&str> = path
        .split('/')
        .filter(|s| !s.is_empty() && !s.starts_with(".."))
        .map(|s| s.rsplit(':').next().unwrap_or(s))
        .collect();
    match steps.len() {
        0 => path.to_string(),
        1 => steps[0].to_string(),
        n => steps[n - 2].to_string(),
    }
}
