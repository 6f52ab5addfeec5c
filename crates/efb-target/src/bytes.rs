//! P4Runtime byte strings (section "Bytestrings"): big-endian, the value must fit the
//! P4Info width, an empty string is refused; the canonical form is the shortest one.

use tonic::Code;

use crate::error::TargetError;

/// Checks a byte string against a bit width and returns its canonical form. With
/// `canonical` set, a zero-padded string is refused instead of shortened.
pub fn check(value: &[u8], bitwidth: u32, canonical: bool) -> Result<Vec<u8>, TargetError> {
    if value.is_empty() {
        return Err(TargetError::new(Code::OutOfRange, "empty byte string"));
    }
    let first = value
        .iter()
        .position(|b| *b != 0)
        .unwrap_or(value.len() - 1);
    let short = &value[first..];
    let bits = significant_bits(short);
    if bits > bitwidth {
        return Err(TargetError::new(
            Code::OutOfRange,
            format!("value 0x{} does not fit in {bitwidth} bits", hex(short)),
        ));
    }
    if canonical && short.len() != value.len() {
        return Err(TargetError::invalid(format!(
            "byte string 0x{} is not canonical (shortest form 0x{})",
            hex(value),
            hex(short)
        )));
    }
    Ok(short.to_vec())
}

fn significant_bits(short: &[u8]) -> u32 {
    match short.first() {
        None | Some(0) => 0,
        Some(b) => 8 * (short.len() as u32 - 1) + (8 - b.leading_zeros()),
    }
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Bytes needed for a width.
pub fn width_bytes(bitwidth: u32) -> usize {
    bitwidth.div_ceil(8) as usize
}

/// The value padded (or cut, for values already checked to fit) to `len` bytes.
pub fn fixed(canonical: &[u8], len: usize) -> Vec<u8> {
    let mut out = vec![0u8; len];
    let take = canonical.len().min(len);
    out[len - take..].copy_from_slice(&canonical[canonical.len() - take..]);
    out
}

/// The value as a number (values wider than 128 bits keep their low 128 bits; the
/// program this target emulates has none).
pub fn to_u128(bytes: &[u8]) -> u128 {
    bytes
        .iter()
        .fold(0u128, |acc, b| (acc << 8) | u128::from(*b))
}

/// The canonical byte string of a number.
pub fn from_u128(value: u128) -> Vec<u8> {
    let bytes = value.to_be_bytes();
    let first = bytes.iter().position(|b| *b != 0).unwrap_or(15);
    bytes[first..].to_vec()
}

/// Numbers wider than 128 bits compare as big-endian strings of equal length.
pub fn cmp_be(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    let len = a.len().max(b.len());
    fixed(a, len).cmp(&fixed(b, len))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn spec_examples() {
        // Valid and canonical.
        assert_eq!(check(&[0x63], 8, true).unwrap(), vec![0x63]);
        assert_eq!(check(&[0x30, 0x64], 16, true).unwrap(), vec![0x30, 0x64]);
        assert_eq!(check(&[0x00], 16, true).unwrap(), vec![0x00]);
        // Valid, padded: accepted by the spec profile, refused by the strict one.
        assert_eq!(check(&[0x00, 0x63], 12, false).unwrap(), vec![0x63]);
        assert_eq!(
            check(&[0x00, 0x63], 12, true).unwrap_err().code,
            Code::InvalidArgument
        );
        // Invalid whatever the profile.
        assert_eq!(
            check(&[0x01, 0x63], 8, false).unwrap_err().code,
            Code::OutOfRange
        );
        assert_eq!(check(&[], 8, false).unwrap_err().code, Code::OutOfRange);
        assert_eq!(
            check(&[0x10, 0x63], 12, false).unwrap_err().code,
            Code::OutOfRange
        );
        assert_eq!(
            check(&[0x00, 0x40, 0x63], 12, false).unwrap_err().code,
            Code::OutOfRange
        );
    }

    #[test]
    fn numbers_round_trip() {
        assert_eq!(from_u128(0), vec![0]);
        assert_eq!(from_u128(0x1ff), vec![1, 0xff]);
        assert_eq!(to_u128(&fixed(&[1, 0xff], 4)), 0x1ff);
    }
}
