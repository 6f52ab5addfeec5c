//! The audit's records and the daemon's events as the API answers them.

use std::time::{Duration, UNIX_EPOCH};

use efb_mgmt_proto::v1::*;
use efb_northbound::audit::{Kind, Record};

use crate::record::events::Recorded;

pub(super) fn audit_record(r: Record) -> AuditRecord {
    let time = UNIX_EPOCH + Duration::from_millis(r.time_ms);
    AuditRecord {
        time: humantime::format_rfc3339_seconds(time).to_string(),
        user: r.user,
        role: r
            .role
            .map_or("none", efb_northbound::Role::as_str)
            .to_string(),
        from: r.from,
        what: r.what,
        accepted: r.accepted,
        result: r.result,
        kind: match r.kind {
            Kind::Change => "change",
            Kind::Access => "access",
        }
        .to_string(),
    }
}

pub(super) fn log_event(r: Recorded) -> LogEvent {
    LogEvent {
        time: humantime::format_rfc3339_millis(r.time).to_string(),
        kind: r.event.kind().to_string(),
        fields: r
            .event
            .fields()
            .into_iter()
            .map(|(name, value)| EventField { name, value })
            .collect(),
    }
}
