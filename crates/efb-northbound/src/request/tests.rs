#![allow(clippy::unwrap_used)]

use super::*;
use crate::access::may;
use crate::auth::Role;

/// One request of every kind, with a body where the kind has one.
fn one_of_each() -> Vec<Request> {
    vec![
        Request::Hello,
        Request::Status,
        Request::OpenSession,
        Request::OpenSessionAs { user: "ops".into() },
        Request::CloseSession,
        Request::Logout { session: 7 },
        Request::EditLines {
            lines: "set a\nset b".into(),
        },
        Request::Load { bytes: 12 },
        Request::Discard,
        Request::Rollback { index: 3 },
        Request::Compare,
        Request::Commit(CommitAsk::default()),
        Request::Confirm,
        Request::Save,
        Request::History,
        Request::CommitChanges,
        Request::Show {
            path: "/ports".into(),
        },
        Request::ListKeys,
        Request::Lookup {
            rpc: "lookup-session".into(),
            input: "{}".into(),
        },
        Request::Call {
            rpc: "set-bypass".into(),
            input: "{}".into(),
        },
        Request::Audit,
        Request::RecentEvents,
        Request::WatchEvents,
        Request::ClearStatistics {
            counters: Counters::Flows,
            names: vec![],
        },
        Request::Set {
            operations: vec!["delete /ports".into()],
        },
    ]
}

#[test]
fn every_kind_has_a_request_and_no_request_needs_less_than_its_kind() {
    let requests = one_of_each();
    // gNMI's reads are judged by their kind alone and audited only when refused.
    let bodiless = [Kind::Capabilities, Kind::Subscribe];
    for kind in Kind::ALL.into_iter().filter(|k| !bodiless.contains(k)) {
        assert!(
            requests.iter().any(|r| r.kind() == kind),
            "{kind:?} has no request"
        );
    }
    // Admitting by kind before the body is read must never refuse what the request,
    // once read, would allow: the kind needs at most what each of its requests needs.
    for request in &requests {
        for role in [Role::Viewer, Role::Operator, Role::Admin] {
            if may(Some(role), request.operation()).is_ok() {
                assert!(
                    may(Some(role), request.kind().operation()).is_ok(),
                    "{request:?}: its kind refuses {role:?}"
                );
            }
        }
    }
}

#[test]
fn the_roles_of_requests_are_the_access_table() {
    let needs = |r: Request| r.operation().needs();
    assert_eq!(needs(Request::Show { path: "/".into() }), Role::Viewer);
    assert_eq!(
        needs(Request::Lookup {
            rpc: "lookup-session".into(),
            input: String::new()
        }),
        Role::Viewer
    );
    assert_eq!(
        needs(Request::Call {
            rpc: "set-bypass".into(),
            input: String::new()
        }),
        Role::Operator
    );
    assert_eq!(
        needs(Request::ClearStatistics {
            counters: Counters::Ports,
            names: vec![]
        }),
        Role::Operator
    );
    assert_eq!(needs(Request::Load { bytes: 1 }), Role::Admin);
    assert_eq!(needs(Request::Commit(CommitAsk::default())), Role::Admin);
    assert_eq!(needs(Request::Logout { session: 1 }), Role::Admin);
    assert_eq!(
        needs(Request::OpenSessionAs { user: "x".into() }),
        Role::Admin
    );
    assert_eq!(needs(Request::OpenSession), Role::Viewer);
    let large: Vec<Kind> = Kind::ALL.into_iter().filter(|k| k.large()).collect();
    assert_eq!(large, [Kind::EditLines, Kind::Load, Kind::Set]);
    assert_eq!(Kind::Set.operation().needs(), Role::Admin);
    assert_eq!(Kind::Subscribe.operation().needs(), Role::Viewer);
}

#[test]
fn the_audit_names_a_request_in_the_shells_words_and_cuts_what_clients_sent() {
    let commit = Request::Commit(CommitAsk {
        check_only: false,
        confirm_seconds: 300,
        offline: true,
        comment: "maintenance\nsecond line".into(),
    });
    assert_eq!(
        commit.describe(),
        "commit confirmed 300 s offline comment \"maintenance...\""
    );
    let check = Request::Commit(CommitAsk {
        check_only: true,
        ..CommitAsk::default()
    });
    assert_eq!(check.describe(), "commit check");
    assert_eq!(
        Request::EditLines {
            lines: "set a\nset b".into()
        }
        .describe(),
        "edit: set a..."
    );
    assert_eq!(
        Request::Logout { session: 7 }.describe(),
        "request system logout session 7"
    );
    assert_eq!(Request::Confirm.describe(), "commit confirm");
    assert_eq!(Request::Hello.describe(), "connect a shell");
    let long = "x".repeat(500);
    assert_eq!(
        Request::Show { path: long }.describe().chars().count(),
        "show ".len() + 200 + "...".len()
    );
    let names: Vec<String> = (0..25).map(|i| format!("f{i}")).collect();
    let clear = Request::ClearStatistics {
        counters: Counters::Flows,
        names,
    }
    .describe();
    assert!(
        clear.starts_with("clear ecofilter-balancer flow statistics f0 f1 "),
        "{clear}"
    );
    assert!(clear.ends_with(" f19 ... (25 names)"), "{clear}");
    let set = |n: usize| Request::Set {
        operations: (0..n)
            .map(|i| format!("update /ports/port[name=p{i}]"))
            .collect(),
    };
    assert_eq!(set(0).describe(), "Set: nothing");
    assert_eq!(
        set(2).describe(),
        "Set: update /ports/port[name=p0], update /ports/port[name=p1]"
    );
    assert!(set(7).describe().ends_with("[name=p4] and 2 more"));
}
