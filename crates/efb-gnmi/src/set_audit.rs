//! A gNMI Set as the audit's one request ([`efb_northbound::request::Request::Set`]): its
//! operations and paths in gNMI's words. The wording of the record and the record itself
//! are the northbound's, shared with the management API.

use std::fmt::Write as _;

use efb_northbound::audit::Audit;
use efb_northbound::caller::Caller;
use efb_northbound::request::Request as Asked;
use gnmi_proto::gnmi::{Path, SetRequest};
use tonic::Status;

/// Records a Set by `caller` ([`asked`]) and how it ended.
pub fn record_set<T>(audit: &Audit, caller: &Caller, asked: &Asked, result: &Result<T, Status>) {
    let result = result.as_ref().map(|_| "committed".to_string());
    audit.request(caller, asked, result);
}

/// A Set as the audit's request: each delete, replace and update with its path.
pub fn asked(request: &SetRequest) -> Asked {
    let prefix = request.prefix.as_ref();
    let mut operations: Vec<String> = Vec::new();
    operations.extend(request.delete.iter().map(|p| text("delete", prefix, p)));
    for (op, updates) in [("replace", &request.replace), ("update", &request.update)] {
        operations.extend(
            updates
                .iter()
                .map(|u| text(op, prefix, u.path.as_ref().unwrap_or(&Path::default()))),
        );
    }
    Asked::Set { operations }
}

fn text(op: &str, prefix: Option<&Path>, path: &Path) -> String {
    let mut out = format!("{op} ");
    for elem in prefix.into_iter().chain([path]).flat_map(|p| &p.elem) {
        out.push('/');
        out.push_str(&elem.name);
        let mut keys: Vec<_> = elem.key.iter().collect();
        keys.sort();
        for (k, v) in keys {
            let _ = write!(out, "[{k}={v}]");
        }
    }
    if out.len() == op.len() + 1 {
        out.push('/');
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use efb_northbound::audit::{Kind, Record, Sink};
    use efb_northbound::auth::Role;
    use gnmi_proto::gnmi::{PathElem, Update};
    use std::sync::{Arc, Mutex};

    #[derive(Default)]
    struct Kept(Mutex<Vec<Record>>);

    impl Sink for Kept {
        fn record(&self, record: &Record) {
            self.0.lock().unwrap().push(record.clone());
        }
    }

    fn path(names: &[&str]) -> Path {
        Path {
            elem: names
                .iter()
                .map(|n| PathElem {
                    name: n.to_string(),
                    key: [("name".to_string(), "p1".to_string())]
                        .into_iter()
                        .filter(|_| *n == "port")
                        .collect(),
                })
                .collect(),
            ..Path::default()
        }
    }

    #[test]
    fn a_set_is_described_by_its_operations_and_paths() {
        let request = SetRequest {
            delete: vec![path(&["ports", "port"])],
            update: vec![Update {
                path: Some(path(&["ecofilter-balancer"])),
                ..Update::default()
            }],
            ..SetRequest::default()
        };
        assert_eq!(
            asked(&request).describe(),
            "Set: delete /ports/port[name=p1], update /ecofilter-balancer"
        );
        assert_eq!(asked(&SetRequest::default()).describe(), "Set: nothing");
    }

    /// A user of the users file logged in to gNMI, as the service makes its caller.
    fn gnmi_caller(user: &str, role: Role, peer: Option<std::net::SocketAddr>) -> Caller {
        let login = efb_northbound::Login {
            user: user.into(),
            role,
            peer,
            certificate: false,
        };
        Caller::logged_in(login, crate::service::gnmi_from(peer))
    }

    #[test]
    fn a_refused_set_is_recorded_as_from_gnmi_with_its_refusal() {
        let kept = Arc::new(Kept::default());
        let audit = Audit::new(kept.clone());
        let caller = gnmi_caller("ada", Role::Viewer, Some("10.0.0.1:5000".parse().unwrap()));
        let refused: Result<(), Status> = Err(Status::permission_denied("no\nmore"));
        let long = Asked::Set {
            operations: vec![format!("update /{}\x1b", "x".repeat(150)); 4],
        };
        record_set(&audit, &caller, &long, &refused);
        let records = kept.0.lock().unwrap();
        assert_eq!(records.len(), 1);
        let r = &records[0];
        assert_eq!(r.from, "gNMI 10.0.0.1:5000");
        assert_eq!(r.result, "PermissionDenied: no");
        assert_eq!(r.kind, Kind::Access);
        assert!(!r.accepted && r.what.len() < 420 && !r.what.contains('\x1b'));
    }

    #[test]
    fn a_set_refused_for_what_it_asked_is_an_access_and_an_accepted_one_a_change() {
        let kept = Arc::new(Kept::default());
        let audit = Audit::new(kept.clone());
        let caller = gnmi_caller("admin", Role::Admin, None);
        let invalid: Result<(), Status> = Err(Status::invalid_argument("no such leaf"));
        let set = |path: &str| Asked::Set {
            operations: vec![format!("update {path}")],
        };
        record_set(&audit, &caller, &set("/x"), &invalid);
        record_set(&audit, &caller, &set("/y"), &Ok(()));
        let kinds: Vec<Kind> = kept.0.lock().unwrap().iter().map(|r| r.kind).collect();
        assert_eq!(kinds, [Kind::Access, Kind::Change]);
    }
}
