//! The one place where our errors become gRPC statuses (and so the shell's messages).

use efb_datastore::DatastoreError;
use efb_yang::Problem;
use tonic::Status;

use crate::owner::OwnerGone;

pub fn status(e: DatastoreError) -> Status {
    match &e {
        DatastoreError::Invalid { .. } | DatastoreError::Edit(_) => {
            Status::invalid_argument(e.to_string())
        }
        DatastoreError::Conflict { .. } => Status::aborted(e.to_string()),
        DatastoreError::UnknownSession(_) | DatastoreError::NotFound(_) => {
            Status::not_found(e.to_string())
        }
        DatastoreError::Locked { .. } => Status::unavailable(e.to_string()),
        DatastoreError::Southbound(_) => Status::failed_precondition(e.to_string()),
        DatastoreError::Storage(_) => Status::internal(e.to_string()),
    }
}

pub fn problems(code: tonic::Code, problems: &[Problem]) -> Status {
    let text = problems
        .iter()
        .map(Problem::to_string)
        .collect::<Vec<_>>()
        .join("\n");
    Status::new(code, text)
}

impl From<OwnerGone> for Status {
    fn from(e: OwnerGone) -> Status {
        Status::unavailable(e.to_string())
    }
}
