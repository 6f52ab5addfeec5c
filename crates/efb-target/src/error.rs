//! One error type for everything the P4Runtime service refuses, with the canonical code
//! the specification prescribes, and the one place that turns it into gRPC statuses and
//! per-update `p4.v1.Error`s.

use prost::Message;
use thiserror::Error;
use tonic::Code;

use p4runtime_proto::google::rpc::Status as RpcStatus;
use p4runtime_proto::p4::v1::Error as P4Error;

/// The error space reported in `p4.v1.Error.space`.
pub const ERROR_SPACE: &str = "efb-target";

/// Bytes of a status message at most: one that quotes a huge field is cut, saying how long
/// it was, so that it fits the trailer clients read.
const MESSAGE_BYTES: usize = 4096;
/// Bytes of one per-update error message at most.
const ITEM_MESSAGE_BYTES: usize = 300;
/// Bytes of trailer a gRPC client over hyper (tonic: efbd) accepts: its default HTTP/2
/// header list size. The per-update errors go there in base64, next to the status and its
/// message (256 bytes of names and HTTP/2's per-header overhead are left for those).
/// 100 000 failed updates take megabytes, which no client reads (it reports a protocol
/// error instead): past this they are left out, and the status message says so and gives
/// the first.
const TRAILER_BYTES: usize = 16 * 1024;

#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("{code:?}: {message}")]
pub struct TargetError {
    pub code: Code,
    pub message: String,
}

impl TargetError {
    pub fn new(code: Code, message: impl Into<String>) -> TargetError {
        TargetError {
            code,
            message: message.into(),
        }
    }
    pub fn invalid(message: impl Into<String>) -> TargetError {
        TargetError::new(Code::InvalidArgument, message)
    }
    pub fn not_found(message: impl Into<String>) -> TargetError {
        TargetError::new(Code::NotFound, message)
    }
    pub fn unimplemented(message: impl Into<String>) -> TargetError {
        TargetError::new(Code::Unimplemented, message)
    }
    pub fn permission(message: impl Into<String>) -> TargetError {
        TargetError::new(Code::PermissionDenied, message)
    }
    pub fn precondition(message: impl Into<String>) -> TargetError {
        TargetError::new(Code::FailedPrecondition, message)
    }
    pub fn out_of_range(message: impl Into<String>) -> TargetError {
        TargetError::new(Code::OutOfRange, message)
    }

    /// Prefixes the message with where the problem is (a field, a parameter).
    pub fn context(mut self, what: impl std::fmt::Display) -> TargetError {
        self.message = format!("{what}: {}", self.message);
        self
    }

    pub fn to_status(&self) -> tonic::Status {
        tonic::Status::new(self.code, cut(&self.message, MESSAGE_BYTES))
    }

    pub fn to_p4_error(&self) -> P4Error {
        P4Error {
            canonical_code: self.code as i32,
            message: cut(&self.message, ITEM_MESSAGE_BYTES),
            space: ERROR_SPACE.to_string(),
            code: 0,
            details: None,
        }
    }
}

impl From<TargetError> for tonic::Status {
    fn from(e: TargetError) -> tonic::Status {
        e.to_status()
    }
}

fn pack(error: &P4Error) -> prost_types::Any {
    prost_types::Any {
        type_url: "type.googleapis.com/p4.v1.Error".to_string(),
        value: error.encode_to_vec(),
    }
}

/// The status of a batch in which some updates (or read requests) failed: UNKNOWN, with
/// one `p4.v1.Error` per item, in order, in the grpc-status-details-bin trailer.
pub fn batch_status(results: &[Result<(), TargetError>], what: &str) -> tonic::Status {
    let failed = results.iter().filter(|r| r.is_err()).count();
    let message = format!("{what} failure: {failed} of {} failed", results.len());
    let details: Vec<prost_types::Any> = results
        .iter()
        .map(|r| match r {
            Ok(()) => pack(&P4Error {
                canonical_code: Code::Ok as i32,
                ..Default::default()
            }),
            Err(e) => pack(&e.to_p4_error()),
        })
        .collect();
    let status = RpcStatus {
        code: Code::Unknown as i32,
        message: message.clone(),
        details,
    };
    let size = status.encoded_len();
    let room = TRAILER_BYTES.saturating_sub(256 + message.len());
    if size.div_ceil(3) * 4 > room {
        return tonic::Status::new(Code::Unknown, too_many_details(&message, results, size));
    }
    tonic::Status::with_details(Code::Unknown, message, status.encode_to_vec().into())
}

/// The message of a batch whose per-update errors are too big for a trailer: the count,
/// why they are left out, and the first failure.
fn too_many_details(message: &str, results: &[Result<(), TargetError>], size: usize) -> String {
    let first = results
        .iter()
        .enumerate()
        .find_map(|(i, r)| r.as_ref().err().map(|e| (i, e)))
        .map(|(i, e)| {
            format!(
                "; the first: update {i}: {:?}: {}",
                e.code,
                cut(&e.message, ITEM_MESSAGE_BYTES)
            )
        })
        .unwrap_or_default();
    format!(
        "{message}; the per-update errors are left out: they take {size} bytes, more than a {TRAILER_BYTES}-byte status trailer carries in base64 (send fewer updates per batch to get them){first}"
    )
}

/// `text` cut to at most about `max` bytes, on a character boundary, saying how long it was.
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... ({} bytes)", &text[..end], text.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(n: usize) -> Vec<Result<(), TargetError>> {
        (0..n)
            .map(|i| {
                Err(TargetError::invalid(format!(
                    "match field 1 of update {i}: {}",
                    "x".repeat(1000)
                )))
            })
            .collect()
    }

    #[test]
    fn per_update_errors_stay_while_they_fit_a_trailer() {
        let status = batch_status(&refused(20), "Write");
        let details = RpcStatus::decode(status.details()).unwrap();
        assert_eq!(details.details.len(), 20, "one per update");
        let first = P4Error::decode(details.details[0].value.as_slice()).unwrap();
        assert!(first.message.len() < ITEM_MESSAGE_BYTES + 30);
        assert!(first.message.ends_with("bytes)"), "{}", first.message);
    }

    #[test]
    fn a_huge_failed_batch_says_why_its_details_are_left_out() {
        let status = batch_status(&refused(100_000), "Write");
        assert!(status.details().is_empty());
        assert!(status.message().len() < 1000, "{}", status.message());
        assert!(
            status.message().starts_with(
                "Write failure: 100000 of 100000 failed; the per-update errors are left out"
            ),
            "{}",
            status.message()
        );
        assert!(
            status
                .message()
                .contains("the first: update 0: InvalidArgument")
        );
    }
}
