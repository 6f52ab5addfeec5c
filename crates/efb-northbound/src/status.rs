//! The gRPC code of each kind of refusal, and the bound on a status's message: one table
//! for every API (gNMI and efbd's management API), so that a client sees the same code for
//! the same refusal whichever way it came.

use efb_datastore::ErrorKind;
use efb_yang::text::{self, MESSAGE_BYTES};
use tonic::{Code, Status};

/// The code of each kind of the datastore's and the chip's refusals, for gNMI and for
/// efbd's management API alike (gNMI specification 3.4.7, and the gRPC codes' meaning):
///
/// | kind                                                   | code                |
/// |--------------------------------------------------------|---------------------|
/// | a configuration, an edit or an input that is not valid | INVALID_ARGUMENT    |
/// | others committed to the same paths meanwhile           | ABORTED             |
/// | a session, a commit, a rollback number not there       | NOT_FOUND           |
/// | as many sessions as allowed are open                   | RESOURCE_EXHAUSTED  |
/// | the datastore held by another process                  | UNAVAILABLE         |
/// | the datastore's database failing                       | INTERNAL            |
/// | the chip not reachable, its connection lost            | UNAVAILABLE         |
/// | a table of the chip without room                       | RESOURCE_EXHAUSTED  |
/// | the chip refusing an update (the path in the message)  | FAILED_PRECONDITION |
///
/// A conflict is ABORTED: the client may start again from the new running
/// configuration. Storage is INTERNAL, not UNAVAILABLE: a disk that fails a write is not
/// mended by sending the request again, and nothing was committed. The chip refusing a
/// valid configuration is FAILED_PRECONDITION: the configuration is not at fault, what the
/// chip holds or can hold is (INVALID_ARGUMENT would say the request is wrong whatever the
/// state).
pub fn code(kind: ErrorKind) -> Code {
    match kind {
        ErrorKind::Invalid => Code::InvalidArgument,
        ErrorKind::Conflict => Code::Aborted,
        ErrorKind::NotFound => Code::NotFound,
        ErrorKind::TooMany | ErrorKind::ChipFull => Code::ResourceExhausted,
        ErrorKind::Locked | ErrorKind::ChipUnreachable => Code::Unavailable,
        ErrorKind::Storage => Code::Internal,
        ErrorKind::ChipRefused => Code::FailedPrecondition,
    }
}

/// `status` with its message cut to [`MESSAGE_BYTES`] (saying how long it was).
pub fn bounded(status: Status) -> Status {
    match text::bound(status.message(), MESSAGE_BYTES) {
        std::borrow::Cow::Borrowed(_) => status,
        std::borrow::Cow::Owned(message) => Status::new(status.code(), message),
    }
}
