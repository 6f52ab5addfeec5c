//! Sessions in the API's terms: the name a new one records, and the audit of one that
//! ends.

use std::time::Duration;

use efb_datastore::SessionInfo;
use efb_northbound::audit::{self, Kind, Record};
use efb_northbound::request::Request as Asked;
use tonic::Status;

use super::{Service, ds};
use crate::northbound::held::Ending;
use efb_northbound::caller::Caller;

impl Service {
    /// The name a new session records: the caller's own; another one (`efb-cli --user`)
    /// only from an admin, as "ACCOUNT as NAME".
    pub(super) fn recorded_user(&self, caller: &Caller, asked: &str) -> Result<String, Status> {
        if asked.is_empty() || asked == caller.name {
            return Ok(caller.name.clone());
        }
        ds(efb_datastore::check_user(asked))?;
        let as_user = Asked::OpenSessionAs {
            user: asked.to_string(),
        };
        self.check(caller, &as_user)?;
        let user = format!("{} as {asked}", caller.name);
        let length = user.chars().count();
        if length > efb_datastore::MAX_USER_CHARS {
            return Err(Status::invalid_argument(format!(
                "user name: recorded as \"{user}\", {length} characters; at most {} in all",
                efb_datastore::MAX_USER_CHARS
            )));
        }
        let recorded = format!("recorded as {user}");
        self.audit.request(caller, &as_user, Ok(recorded));
        Ok(user)
    }

    /// Audits a session efbd closed and tells its holder why.
    pub(super) fn session_ended(&self, info: &SessionInfo, why: &str) {
        let why = format!("{why}{}", dropped(info));
        let role = self.held.end(info.id, Ending::Closed(why.clone()));
        self.audit.record(session_record(info, role, &why));
    }
}

/// A session closed (`why`: "closed: ..."), for the audit, with how long it was open.
pub(super) fn session_record(
    info: &SessionInfo,
    role: Option<efb_northbound::Role>,
    why: &str,
) -> Record {
    let age = humantime::format_duration(Duration::from_secs(info.age.as_secs()));
    Record {
        time_ms: audit::now_ms(),
        user: info.user.clone(),
        role,
        from: info.from.clone(),
        what: format!("session {} (open {age}) {why}", info.id),
        accepted: true,
        result: String::new(),
        kind: Kind::Access,
    }
}

/// What a closed session lost, said after why it closed.
pub(super) fn dropped(info: &SessionInfo) -> &'static str {
    if info.uncommitted {
        "; its uncommitted changes were dropped"
    } else {
        ""
    }
}
