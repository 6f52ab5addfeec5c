//! The one place where our errors become gRPC statuses (and so the shell's messages).
//! Every status the management API returns passes through [`bounded`]: its message never
//! grows past [`MESSAGE_BYTES`], whatever input it quotes, so it always reaches the client.

use efb_datastore::DatastoreError;
use efb_yang::Problem;
use efb_yang::text::{self, MESSAGE_BYTES};
use tonic::Status;

use crate::owner::OwnerGone;

/// The settings named by the session errors (efbd's, not the datastore's).
pub const MAX_SESSIONS_SETTING: &str = "management.max_sessions";
pub const IDLE_TIMEOUT_SETTING: &str = "management.session_idle_timeout_s";

pub fn status(e: DatastoreError) -> Status {
    let message = e.to_string();
    let status = match &e {
        DatastoreError::Invalid { .. } | DatastoreError::Edit(_) | DatastoreError::Refused(_) => {
            Status::invalid_argument(message)
        }
        DatastoreError::Conflict { .. } => Status::aborted(message),
        DatastoreError::UnknownSession(_) | DatastoreError::NotFound(_) => {
            Status::not_found(message)
        }
        DatastoreError::SessionExpired { .. } => {
            Status::not_found(format!("{message} ({IDLE_TIMEOUT_SETTING})"))
        }
        DatastoreError::TooManySessions { .. } => {
            Status::resource_exhausted(format!("{message} ({MAX_SESSIONS_SETTING})"))
        }
        DatastoreError::Locked { .. } => Status::unavailable(message),
        DatastoreError::Southbound(_) => Status::failed_precondition(message),
        DatastoreError::Storage(_) => Status::internal(message),
    };
    bounded(status)
}

pub fn problems(code: tonic::Code, problems: &[Problem]) -> Status {
    bounded(Status::new(code, text::problem_lines(problems, "")))
}

/// `status` with its message cut to [`MESSAGE_BYTES`] (saying how long it was).
pub fn bounded(status: Status) -> Status {
    match text::bound(status.message(), MESSAGE_BYTES) {
        std::borrow::Cow::Borrowed(_) => status,
        std::borrow::Cow::Owned(message) => Status::new(status.code(), message),
    }
}

impl From<OwnerGone> for Status {
    fn from(e: OwnerGone) -> Status {
        Status::unavailable(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_message_is_cut_and_says_how_long_it_was() {
        let problem = Problem::new("", format!("unknown word \"{}\"", "A".repeat(400_000)));
        let status = status(DatastoreError::Edit(vec![problem; 3]));
        assert_eq!(status.code(), tonic::Code::InvalidArgument);
        assert!(status.message().len() < MESSAGE_BYTES + 100);
        assert!(status.message().contains("bytes)"), "{}", status.message());
        let many: Vec<Problem> = (0..100_000)
            .map(|i| Problem::new(format!("/p{i}"), "refused"))
            .collect();
        let status = problems(tonic::Code::InvalidArgument, &many);
        assert!(
            status.message().ends_with("... and 99 980 more problems"),
            "{}",
            status.message()
        );
    }

    #[test]
    fn session_errors_name_their_setting() {
        let full = status(DatastoreError::TooManySessions { max: 3 });
        assert_eq!(full.code(), tonic::Code::ResourceExhausted);
        assert!(full.message().contains(MAX_SESSIONS_SETTING));
        let expired = status(DatastoreError::SessionExpired {
            session: 7,
            idle: std::time::Duration::from_secs(3600),
        });
        assert_eq!(expired.code(), tonic::Code::NotFound);
        assert!(expired.message().starts_with("session expired"));
    }
}
