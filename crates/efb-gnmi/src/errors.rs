//! Every refusal of the gNMI server becomes a gRPC status here, in one place.
//!
//! | what                                              | code                |
//! |---------------------------------------------------|---------------------|
//! | no or wrong credentials                           | UNAUTHENTICATED     |
//! | a role that may not do it (a viewer's Set)        | PERMISSION_DENIED   |
//! | a path that cannot be read, origins that disagree | INVALID_ARGUMENT    |
//! | a node the schema does not have, data not there   | NOT_FOUND           |
//! | a value of the wrong type or shape                | INVALID_ARGUMENT    |
//! | a configuration the commit finds not valid        | INVALID_ARGUMENT    |
//! | an encoding or extension not supported            | UNIMPLEMENTED       |
//! | a commit confirmed waiting, a commit conflict     | FAILED_PRECONDITION |
//! | a wrong commit confirmed id                       | INVALID_ARGUMENT    |
//! | a subscriber that fell behind                     | RESOURCE_EXHAUSTED  |
//! | too many subscriptions, too many failed logins    | RESOURCE_EXHAUSTED  |
//! | efbd stopping, storage failing                    | UNAVAILABLE         |
//!
//! Every status an RPC returns passes through [`bounded`] (in [`crate::service`]): a
//! message quoting a 10 MB value is cut to a few KiB, saying how long it was, so that the
//! client gets the reason and not a protocol error about an oversized header.

use efb_yang::text::{self, MESSAGE_BYTES};
use tonic::Status;

use crate::backend::BackendError;
use crate::decode::DecodeError;
use crate::path::PathError;

/// A status whose message starts with what was being done (`update /ports/...: `).
pub fn path(context: &str, e: PathError) -> Status {
    match e {
        PathError::Invalid(m) => Status::invalid_argument(format!("{context}{m}")),
        PathError::NotFound(m) => Status::not_found(format!("{context}{m}")),
    }
}

pub fn decode(context: &str, e: DecodeError) -> Status {
    match e {
        DecodeError::Invalid(m) => Status::invalid_argument(format!("{context}{m}")),
        DecodeError::Unsupported(m) => Status::unimplemented(format!("{context}{m}")),
    }
}

pub fn backend(e: BackendError) -> Status {
    match e {
        BackendError::Invalid(_) => Status::invalid_argument(format!(
            "the configuration would not be valid; nothing was changed:\n{e}"
        )),
        BackendError::Precondition(m) => Status::failed_precondition(m),
        BackendError::Refused(m) => Status::invalid_argument(m),
        BackendError::NotFound(m) => Status::not_found(m),
        BackendError::Unavailable(m) => Status::unavailable(m),
    }
}

/// `status` with its message cut to [`MESSAGE_BYTES`] (saying how long it was).
pub fn bounded(status: Status) -> Status {
    match text::bound(status.message(), MESSAGE_BYTES) {
        std::borrow::Cow::Borrowed(_) => status,
        std::borrow::Cow::Owned(message) => Status::new(status.code(), message),
    }
}

pub fn encoding(number: i32) -> Status {
    match gnmi_proto::gnmi::Encoding::try_from(number) {
        Ok(e) => Status::unimplemented(format!(
            "encoding {} is not supported; use JSON or JSON_IETF",
            e.as_str_name()
        )),
        Err(_) => Status::invalid_argument(format!(
            "encoding {number} is not a gNMI encoding; use JSON (0) or JSON_IETF (4)"
        )),
    }
}
