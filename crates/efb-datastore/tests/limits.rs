//! What a careless or hostile client sends is refused with a clear error and changes
//! nothing: rollback past history, names and comments past their limits or with control
//! characters, a commit confirmed for centuries, sessions past the cap or left idle.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use efb_datastore::{
    CommitRequest, Datastore, DatastoreError, LoadMode, OpenOptions, SessionLimits,
};
use efb_yang::Schema;

fn open(dir: &std::path::Path) -> Datastore {
    let mut options = OpenOptions::new(dir);
    options.boot_id = Some("boot-1".to_string());
    Datastore::open(Arc::new(Schema::load().unwrap()), options).unwrap()
}

fn example() -> String {
    std::fs::read_to_string(format!(
        "{}/../../examples/one-filter-site.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// A datastore with `commits` commits in history (the first loads the example site).
fn with_history(dir: &std::path::Path, commits: usize) -> Datastore {
    let mut ds = open(dir);
    let s = ds.open_session("alice");
    ds.load_json(s, LoadMode::Override, &example()).unwrap();
    ds.commit(s, CommitRequest::default()).unwrap();
    for i in 1..commits {
        ds.edit_lines(
            s,
            &format!("set ecofilter-balancer flow bgp-to priority {}", 400 + i),
        )
        .unwrap();
        ds.commit(s, CommitRequest::default()).unwrap();
    }
    ds.close_session(s);
    ds
}

#[test]
fn rollback_loads_only_what_history_lists() {
    let dir = tempfile::tempdir().unwrap();
    let mut ds = with_history(dir.path(), 5);
    assert_eq!(ds.history().len(), 5);
    let s = ds.open_session("bob");
    ds.edit_lines(s, "set ecofilter-balancer flow bgp-to priority 999")
        .unwrap();
    let before = ds.candidate(s).unwrap().clone();
    let err = ds.rollback(s, 5).unwrap_err().to_string();
    assert!(
        err.contains("rollback 5: no such commit")
            && err.contains("rollback 0 (the running configuration) to rollback 4"),
        "{err}"
    );
    assert!(
        ds.candidate(s).unwrap() == &before,
        "the candidate is as it was"
    );
    ds.rollback(s, 4).unwrap();
    assert!(
        !ds.candidate(s).unwrap().is_empty(),
        "the oldest listed commit"
    );
    let err = ds.commit_changes(5).unwrap_err().to_string();
    assert!(err.contains("0 to 4"), "{err}");
    assert!(ds.commit_changes(4).is_ok());
}

#[test]
fn rollback_0_without_history_is_running() {
    let dir = tempfile::tempdir().unwrap();
    let mut ds = open(dir.path());
    assert!(ds.history().is_empty());
    let s = ds.open_session("bob");
    ds.rollback(s, 0).unwrap();
    let err = ds.rollback(s, 1).unwrap_err().to_string();
    assert!(err.contains("only rollback 0"), "{err}");
}

#[test]
fn user_names_and_comments_are_bounded_and_printable() {
    let dir = tempfile::tempdir().unwrap();
    let mut ds = with_history(dir.path(), 1);
    let long = "u".repeat(70_000);
    let err = ds.open_client_session(&long).unwrap_err().to_string();
    assert!(
        err.contains("70 000 characters") && err.contains("at most 64"),
        "{err}"
    );
    let err = ds
        .open_client_session("eve\x1b[2J")
        .unwrap_err()
        .to_string();
    assert!(err.contains("control character"), "{err}");
    assert_eq!(ds.session_count(), 0, "no session was opened");
    // The daemon's own sessions (a gNMI Set) carry the name it was given: checked at commit.
    let s = ds.open_session(&long);
    ds.edit_lines(s, "set ecofilter-balancer flow bgp-to priority 998")
        .unwrap();
    let err = ds.commit(s, CommitRequest::default()).unwrap_err();
    assert!(matches!(err, DatastoreError::Refused(_)), "{err}");
    ds.close_session(s);
    let s = ds.open_client_session("carol").unwrap();
    ds.edit_lines(s, "set ecofilter-balancer flow bgp-to priority 997")
        .unwrap();
    for comment in ["\x1b[2Jgotcha".to_string(), "c".repeat(513)] {
        let err = ds
            .commit(
                s,
                CommitRequest {
                    comment: Some(comment),
                    ..CommitRequest::default()
                },
            )
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("commit comment: "), "{err}");
    }
    assert_eq!(ds.history().len(), 1, "nothing was committed");
    assert!(ds.has_changes(s).unwrap(), "the candidate keeps its change");
}

#[test]
fn commit_confirmed_waits_at_most_65535_minutes() {
    let dir = tempfile::tempdir().unwrap();
    let mut ds = with_history(dir.path(), 1);
    let s = ds.open_session("dave");
    ds.edit_lines(s, "set ecofilter-balancer flow bgp-to priority 996")
        .unwrap();
    for seconds in [u64::from(u32::MAX), 65_536 * 60] {
        let err = ds
            .commit(
                s,
                CommitRequest {
                    confirm_timeout: Some(Duration::from_secs(seconds)),
                    ..CommitRequest::default()
                },
            )
            .unwrap_err()
            .to_string();
        assert!(err.contains("1 second to 65535 minutes"), "{err}");
    }
    assert!(ds.pending_confirm_deadline().is_none());
    ds.commit(
        s,
        CommitRequest {
            confirm_timeout: Some(Duration::from_secs(65_535 * 60)),
            ..CommitRequest::default()
        },
    )
    .unwrap();
    assert!(ds.pending_confirm_deadline().is_some());
}

#[test]
fn sessions_past_the_cap_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut ds = with_history(dir.path(), 1);
    ds.set_session_limits(SessionLimits {
        max_sessions: 2,
        idle_timeout: None,
    });
    let a = ds.open_client_session("a").unwrap();
    ds.open_client_session("b").unwrap();
    let err = ds.open_client_session("c").unwrap_err();
    assert!(
        matches!(err, DatastoreError::TooManySessions { max: 2 }),
        "{err}"
    );
    ds.close_session(a);
    ds.open_client_session("c").unwrap();
}

#[test]
fn an_idle_session_expires_and_its_client_is_told_why() {
    let dir = tempfile::tempdir().unwrap();
    let mut ds = with_history(dir.path(), 1);
    ds.set_session_limits(SessionLimits {
        max_sessions: 10,
        idle_timeout: Some(Duration::from_millis(50)),
    });
    let idle = ds.open_client_session("idle").unwrap();
    ds.edit_lines(idle, "set ecofilter-balancer flow bgp-to priority 995")
        .unwrap();
    let busy = ds.open_client_session("busy").unwrap();
    std::thread::sleep(Duration::from_millis(120));
    ds.touch(busy);
    assert_eq!(ds.expire_idle_sessions(), 1);
    assert_eq!(ds.session_count(), 1);
    let err = ds.compare(idle).unwrap_err();
    assert!(
        matches!(err, DatastoreError::SessionExpired { session, .. } if session == idle),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("your uncommitted changes were dropped"),
        "{err}"
    );
    assert!(ds.compare(busy).is_ok());
    assert!(matches!(
        ds.compare(9999),
        Err(DatastoreError::UnknownSession(9999))
    ));
}
