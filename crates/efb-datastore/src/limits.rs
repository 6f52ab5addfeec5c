//! What a user gives besides the configuration (a user name, a commit comment, a
//! `commit confirmed` wait): each bounded, each refused with what would be accepted.

use std::time::Duration;

use crate::error::DatastoreError;
use crate::types::CommitRequest;

/// `commit confirmed` without minutes waits this long (Junos' default).
pub const DEFAULT_CONFIRM_TIMEOUT: Duration = Duration::from_secs(10 * 60);
/// The longest `commit confirmed` wait: 65 535 minutes, as Junos takes.
pub const MAX_CONFIRM_TIMEOUT: Duration = Duration::from_secs(65_535 * 60);
/// Characters of a user name at most (Junos' limit for login names).
pub const MAX_USER_CHARS: usize = 64;
/// Characters of a commit comment at most.
pub const MAX_COMMENT_CHARS: usize = 512;

/// A user name as the history records it: 1 to [`MAX_USER_CHARS`] characters, none of
/// them a control character (a name is shown to every other user: ESC or a newline in it
/// would act on their terminals).
pub fn check_user(user: &str) -> Result<(), DatastoreError> {
    check_text("user name", user, MAX_USER_CHARS)?;
    if user.is_empty() {
        return Err(DatastoreError::Refused(format!(
            "user name: empty; give 1 to {MAX_USER_CHARS} printable characters"
        )));
    }
    Ok(())
}

/// A commit comment: at most [`MAX_COMMENT_CHARS`] characters, no control characters.
pub fn check_comment(comment: &str) -> Result<(), DatastoreError> {
    check_text("commit comment", comment, MAX_COMMENT_CHARS)
}

/// A `commit confirmed` wait: at most 65 535 minutes, as Junos takes (the shell asks in
/// whole minutes; programs may ask for seconds).
pub fn check_confirm_timeout(timeout: Duration) -> Result<(), DatastoreError> {
    if timeout.is_zero() || timeout > MAX_CONFIRM_TIMEOUT {
        return Err(DatastoreError::Refused(format!(
            "commit confirmed: a wait of {} seconds is out of range; it is 1 second to 65535 minutes ({} seconds)",
            efb_yang::text::grouped(timeout.as_secs() as usize),
            efb_yang::text::grouped(MAX_CONFIRM_TIMEOUT.as_secs() as usize)
        )));
    }
    Ok(())
}

pub(crate) fn check_request(user: &str, request: &CommitRequest) -> Result<(), DatastoreError> {
    check_user(user)?;
    if let Some(comment) = &request.comment {
        check_comment(comment)?;
    }
    if let Some(timeout) = request.confirm_timeout {
        check_confirm_timeout(timeout)?;
    }
    Ok(())
}

/// Text other users will see: bounded, without control characters or characters that
/// reorder what follows (bidirectional overrides).
fn check_text(what: &str, text: &str, max: usize) -> Result<(), DatastoreError> {
    let chars = text.chars().count();
    if chars > max {
        return Err(DatastoreError::Refused(format!(
            "{what}: {} characters; at most {max} are accepted",
            efb_yang::text::grouped(chars)
        )));
    }
    if let Some(c) = text.chars().find(|c| efb_text_table::unsafe_char(*c)) {
        return Err(DatastoreError::Refused(format!(
            "{what}: contains the control character {:?}; only printable characters are accepted",
            c
        )));
    }
    Ok(())
}
