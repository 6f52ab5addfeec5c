//! Every refusal of the gNMI server becomes a gRPC status here, in one place; so do the
//! datastore's and the chip's refusals of efbd's management API ([`code`]).
//!
//! | what                                              | code                |
//! |---------------------------------------------------|---------------------|
//! | no or wrong credentials                           | UNAUTHENTICATED     |
//! | a role that may not do it (a viewer's Set)        | PERMISSION_DENIED   |
//! | a path that cannot be read, origins that disagree | INVALID_ARGUMENT    |
//! | a node the schema does not have (nearest names)   | NOT_FOUND           |
//! | data that is not there (Get of a concrete path)   | NOT_FOUND           |
//! | a value of the wrong type or shape                | INVALID_ARGUMENT    |
//! | an encoding or extension not supported            | UNIMPLEMENTED       |
//! | a commit confirmed waiting                        | FAILED_PRECONDITION |
//! | a wrong commit confirmed id                       | INVALID_ARGUMENT    |
//! | a subscriber that fell behind                     | RESOURCE_EXHAUSTED  |
//! | too many subscriptions, too many failed logins    | RESOURCE_EXHAUSTED  |
//! | efbd stopping                                     | UNAVAILABLE         |
//! | the datastore's and the chip's refusals           | see [`code`]        |
//!
//! Every status an RPC returns passes through [`bounded`] (the service calls it on every reply): a
//! message quoting a 10 MB value is cut to a few KiB, saying how long it was, so that the
//! client gets the reason and not a protocol error about an oversized header.

pub use efb_northbound::status::{bounded, code};
use tonic::Status;

use crate::backend::BackendError;
use crate::decode::DecodeError;
use crate::path::PathError;

/// A status whose message starts with what was being done (`update /ports/...: `).
pub fn path(context: &str, e: PathError) -> Status {
    match e {
        PathError::Invalid(m) => Status::invalid_argument(format!("{context}{m}")),
        PathError::NotInSchema(m) => Status::not_found(format!("{context}{m}")),
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
        BackendError::Datastore(e) => Status::new(code(e.kind()), e.to_string()),
        BackendError::Unavailable(m) => Status::unavailable(m),
        BackendError::Unsupported(m) => Status::unimplemented(m),
    }
}

pub fn encoding(number: i32) -> Status {
    match gnmi_proto::gnmi::Encoding::try_from(number) {
        Ok(e) => Status::unimplemented(format!(
            "encoding {} is not supported; use JSON, JSON_IETF or PROTO",
            e.as_str_name()
        )),
        Err(_) => Status::invalid_argument(format!(
            "encoding {number} is not a gNMI encoding; use JSON (0), PROTO (2) or JSON_IETF (4)"
        )),
    }
}
