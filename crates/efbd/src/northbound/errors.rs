//! Where the management API's errors become gRPC statuses (and so the shell's messages).
//! The code of each kind of error is gNMI's too: [`efb_northbound::status::code`] is the one
//! table. Every status the management API returns passes through [`bounded`]: its message
//! never grows past [`efb_yang::text::MESSAGE_BYTES`], whatever input it quotes, so it
//! always reaches the client.

use efb_chip::ChipError;
use efb_datastore::{DatastoreError, ErrorKind, SessionLimit};
use efb_northbound::status::code;
use efb_yang::Problem;
use efb_yang::text;
use tonic::Status;

pub use efb_northbound::status::bounded;

use crate::owner::OwnerGone;

/// The settings named by the session errors (efbd's, not the datastore's).
pub const IDLE_TIMEOUT_SETTING: &str = "management.session_idle_timeout_s";

/// The setting behind a session limit.
fn limit_setting(limit: &SessionLimit) -> &'static str {
    match limit {
        SessionLimit::All { .. } => "management.max_sessions",
        SessionLimit::KeptForAdmins { .. } => "management.sessions_kept_for_admins",
        SessionLimit::PerAccount { .. } => "management.max_sessions_per_account",
    }
}

pub fn status(e: DatastoreError) -> Status {
    let message = match &e {
        DatastoreError::SessionExpired { .. } => format!("{e} ({IDLE_TIMEOUT_SETTING})"),
        DatastoreError::TooManySessions(limit) => format!("{e} ({})", limit_setting(limit)),
        _ => e.to_string(),
    };
    bounded(Status::new(code(e.kind()), message))
}

/// The chip did not take a change of state (a bypass mode).
pub fn chip(e: ChipError) -> Status {
    bounded(Status::new(code(ErrorKind::from(e.kind())), e.to_string()))
}

pub fn problems(code: tonic::Code, problems: &[Problem]) -> Status {
    bounded(Status::new(code, text::problem_lines(problems, "")))
}

impl From<OwnerGone> for Status {
    fn from(e: OwnerGone) -> Status {
        Status::unavailable(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use efb_chip::Refusals;
    use efb_yang::text::MESSAGE_BYTES;

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
        let full = status(DatastoreError::TooManySessions(SessionLimit::All {
            max: 3,
        }));
        assert_eq!(full.code(), tonic::Code::ResourceExhausted);
        assert!(full.message().ends_with("(management.max_sessions)"));
        let own = status(DatastoreError::TooManySessions(SessionLimit::PerAccount {
            max: 3,
        }));
        assert!(
            own.message().contains("this account has 3 open")
                && own
                    .message()
                    .ends_with("(management.max_sessions_per_account)"),
            "{}",
            own.message()
        );
        let expired = status(DatastoreError::SessionExpired {
            session: 7,
            idle: std::time::Duration::from_secs(3600),
        });
        assert_eq!(expired.code(), tonic::Code::NotFound);
        assert!(expired.message().starts_with("session expired"));
    }

    /// One of each kind the datastore and the chip give.
    fn every_kind() -> Vec<DatastoreError> {
        vec![
            DatastoreError::Edit(vec![Problem::new("/x", "bad")]),
            DatastoreError::Refused("comment too long".into()),
            DatastoreError::Conflict {
                paths: vec!["/x".into()],
                since: "2 by a".into(),
            },
            DatastoreError::UnknownSession(3),
            DatastoreError::NotFound("rollback 9".into()),
            DatastoreError::TooManySessions(SessionLimit::All { max: 2 }),
            DatastoreError::Locked { path: "db".into() },
            DatastoreError::Storage("disk".into()),
            DatastoreError::Southbound(ChipError::Unreachable {
                address: "chip:9559".into(),
                message: "nothing was changed".into(),
            }),
            DatastoreError::Southbound(ChipError::Lost("gone".into())),
            DatastoreError::Southbound(ChipError::TableFull {
                table: "flows".into(),
                refusals: Refusals::default(),
            }),
            DatastoreError::Southbound(ChipError::Refused(Refusals::default())),
            DatastoreError::Southbound(ChipError::WriteRefused("no".into())),
        ]
    }

    #[test]
    fn gnmi_and_the_management_api_give_each_kind_the_same_code() {
        use efb_gnmi::backend::BackendError;
        use tonic::Code;

        let management: Vec<Code> = every_kind().into_iter().map(|e| status(e).code()).collect();
        let gnmi: Vec<Code> = every_kind()
            .into_iter()
            .map(|e| efb_gnmi::errors::backend(BackendError::from(e)).code())
            .collect();
        assert_eq!(management, gnmi);
        assert_eq!(
            management,
            [
                Code::InvalidArgument,
                Code::InvalidArgument,
                Code::Aborted,
                Code::NotFound,
                Code::NotFound,
                Code::ResourceExhausted,
                Code::Unavailable,
                Code::Internal,
                Code::Unavailable,
                Code::Unavailable,
                Code::ResourceExhausted,
                Code::FailedPrecondition,
                Code::FailedPrecondition,
            ]
        );
    }
}
