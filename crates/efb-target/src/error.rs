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
        tonic::Status::new(self.code, self.message.clone())
    }

    pub fn to_p4_error(&self) -> P4Error {
        P4Error {
            canonical_code: self.code as i32,
            message: self.message.clone(),
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
    let details = results
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
    tonic::Status::with_details(Code::Unknown, message, status.encode_to_vec().into())
}
