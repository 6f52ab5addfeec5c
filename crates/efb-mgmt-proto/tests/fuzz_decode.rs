//! Property-based fuzzing of the management API's requests as efbd's server reads them:
//! any bytes, and bytes shaped like protobuf (fields of every wire type, lengths that lie,
//! text that is not UTF-8), decoded with prost as each request message. Never a panic; a
//! message decoded is decoded again the same from its own encoding, which is at most twice
//! what came in (nothing is made up while reading). The case count keeps this binary
//! under a second (`EFB_FUZZ_CASES` for more, see efb-fuzz).

#![allow(clippy::unwrap_used)]

use efb_fuzz::config;
use efb_mgmt_proto::v1::*;
use proptest::prelude::*;
use prost::Message;

/// One field as protobuf writes it, or nearly: any number, any wire type (groups too,
/// which proto3 refuses), lengths that may run past the end.
fn field() -> impl Strategy<Value = Vec<u8>> {
    (
        prop_oneof![4 => 1u32..10, 1 => any::<u32>()],
        0u8..6,
        any::<u64>(),
        prop_oneof![
            ".{0,24}".prop_map(String::into_bytes),
            proptest::collection::vec(any::<u8>(), 0..24),
        ],
        any::<bool>(),
    )
        .prop_map(|(number, wire, n, payload, lie)| {
            let mut out = Vec::new();
            varint(&mut out, (u64::from(number) << 3) | u64::from(wire));
            match wire {
                0 => varint(&mut out, n),
                1 => out.extend(n.to_le_bytes()),
                5 => out.extend((n as u32).to_le_bytes()),
                2 => {
                    let len = if lie {
                        n % 1_000_000
                    } else {
                        payload.len() as u64
                    };
                    varint(&mut out, len);
                    out.extend(payload);
                }
                _ => {}
            }
            out
        })
}

fn varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..64),
        proptest::collection::vec(field(), 0..8).prop_map(|fields| fields.concat()),
    ]
}

/// Decodes `bytes` as `M`; what decodes re-encodes to no more bytes and decodes the same.
fn decodes_properly<M: Message + Default + PartialEq + std::fmt::Debug>(
    bytes: &[u8],
) -> Result<(), TestCaseError> {
    let Ok(message) = M::decode(bytes) else {
        return Ok(());
    };
    let again = message.encode_to_vec();
    // Proportional: a negative int32 (an enum) read from a 5-byte varint is written in 10.
    prop_assert!(
        again.len() <= 2 * bytes.len(),
        "{} bytes from {}: {message:?}",
        again.len(),
        bytes.len()
    );
    prop_assert_eq!(M::decode(again.as_slice()).unwrap(), message);
    Ok(())
}

proptest! {
    #![proptest_config(config(20000))]

    /// Every request of the management API, from any bytes.
    #[test]
    fn every_request_decodes_or_is_refused(bytes in bytes()) {
        decodes_properly::<HelloRequest>(&bytes)?;
        decodes_properly::<Empty>(&bytes)?;
        decodes_properly::<OpenSessionRequest>(&bytes)?;
        decodes_properly::<SessionRef>(&bytes)?;
        decodes_properly::<EditLinesRequest>(&bytes)?;
        decodes_properly::<LoadRequest>(&bytes)?;
        decodes_properly::<RollbackRequest>(&bytes)?;
        decodes_properly::<CompareRequest>(&bytes)?;
        decodes_properly::<CommitRequest>(&bytes)?;
        decodes_properly::<CommitChangesRequest>(&bytes)?;
        decodes_properly::<GetRequest>(&bytes)?;
        decodes_properly::<ListKeysRequest>(&bytes)?;
        decodes_properly::<CallRequest>(&bytes)?;
        decodes_properly::<AuditRequest>(&bytes)?;
        decodes_properly::<RecentEventsRequest>(&bytes)?;
        decodes_properly::<ClearStatisticsRequest>(&bytes)?;
    }
}
