//! What a careless or hostile client sends is refused with a clear error and changes
//! nothing: rollback past history, names and comments past their limits or with control
//! characters, a commit confirmed for centuries, sessions past the cap or left idle.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use efb_datastore::{
    CommitRequest, Datastore, DatastoreError, Holder, LoadMode, OpenOptions, Opener, SessionLimit,
    SessionLimits,
};
use efb_yang::Schema;

fn open(dir: &std::path::Path) -> Datastore {
    let mut options = OpenOptions::new(dir);
    options.boot_id = Some("boot-1".to_string());
    Datastore::open(Arc::new(Schema::load().unwrap()), options).unwrap()
}

/// A client opening a session, as account `holder`.
fn opener(user: &str, holder: &str, admin: bool) -> Opener {
    Opener {
        user: user.to_string(),
        holder: Holder::new(holder),
        from: format!("test, {holder}"),
        admin,
    }
}

/// A client session of `user`, held by an account of the same name.
fn client(ds: &mut Datastore, user: &str) -> Result<u64, DatastoreError> {
    ds.open_client_session(&opener(user, user, false))
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
    let err = client(&mut ds, &long).unwrap_err().to_string();
    assert!(
        err.contains("70 000 characters") && err.contains("at most 64"),
        "{err}"
    );
    let err = client(&mut ds, "eve\x1b[2J").unwrap_err().to_string();
    assert!(err.contains("control character"), "{err}");
    assert_eq!(ds.session_count(), 0, "no session was opened");
    // The daemon's own sessions (a gNMI Set) carry the name it was given: checked at commit.
    let s = ds.open_session(&long);
    ds.edit_lines(s, "set ecofilter-balancer flow bgp-to priority 998")
        .unwrap();
    let err = ds.commit(s, CommitRequest::default()).unwrap_err();
    assert!(matches!(err, DatastoreError::Refused(_)), "{err}");
    ds.close_session(s);
    let s = client(&mut ds, "carol").unwrap();
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
        ..SessionLimits::default()
    });
    let a = client(&mut ds, "a").unwrap();
    client(&mut ds, "b").unwrap();
    let err = client(&mut ds, "c").unwrap_err();
    assert!(
        matches!(
            err,
            DatastoreError::TooManySessions(SessionLimit::All { max: 2 })
        ),
        "{err}"
    );
    ds.close_session(a);
    client(&mut ds, "c").unwrap();
}

#[test]
fn one_account_cannot_take_every_session_and_admins_keep_room() {
    let dir = tempfile::tempdir().unwrap();
    let mut ds = with_history(dir.path(), 1);
    ds.set_session_limits(SessionLimits {
        max_sessions: 6,
        kept_for_admins: 2,
        max_per_holder: 3,
        idle_timeout: None,
    });
    let viewer = opener("vic", "uid 1001", false);
    for _ in 0..3 {
        ds.open_client_session(&viewer).unwrap();
    }
    let err = ds.open_client_session(&viewer).unwrap_err();
    assert!(
        matches!(
            err,
            DatastoreError::TooManySessions(SessionLimit::PerAccount { max: 3 })
        ),
        "{err}"
    );
    // Another account fills what is left for non-admins...
    ds.open_client_session(&opener("olga", "uid 1002", false))
        .unwrap();
    let err = ds
        .open_client_session(&opener("olga", "uid 1002", false))
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("4 are open and the last 2 are kept for admins"),
        "{err}"
    );
    // ...and an admin still gets in, up to the cap.
    let root = opener("root", "uid 0", true);
    ds.open_client_session(&root).unwrap();
    ds.open_client_session(&root).unwrap();
    let err = ds.open_client_session(&root).unwrap_err();
    assert!(
        matches!(
            err,
            DatastoreError::TooManySessions(SessionLimit::All { max: 6 })
        ),
        "{err}"
    );
}

#[test]
fn a_session_is_its_holder_s_alone() {
    let dir = tempfile::tempdir().unwrap();
    let mut ds = with_history(dir.path(), 1);
    let ada = Holder::new("uid 1001");
    let root = Holder::new("uid 0");
    let s = ds
        .open_client_session(&opener("ada", "uid 1001", true))
        .unwrap();
    ds.enter_session(s, &ada).unwrap();
    // Root too is told the session does not exist, as for an id never opened.
    let theirs = ds.enter_session(s, &root).unwrap_err();
    let never = ds.enter_session(9999, &root).unwrap_err();
    assert_eq!(theirs.to_string(), format!("no session {s}"));
    assert_eq!(never.to_string(), "no session 9999");
    let info = ds.close_session(s).unwrap();
    assert_eq!((info.user.as_str(), &info.holder), ("ada", &ada));
    assert!(ds.close_session(s).is_none(), "closed once");
}

#[test]
fn an_idle_session_expires_and_its_client_is_told_why() {
    let dir = tempfile::tempdir().unwrap();
    let mut ds = with_history(dir.path(), 1);
    ds.set_session_limits(SessionLimits {
        max_sessions: 10,
        idle_timeout: Some(Duration::from_millis(50)),
        ..SessionLimits::default()
    });
    let idle = client(&mut ds, "idle").unwrap();
    ds.edit_lines(idle, "set ecofilter-balancer flow bgp-to priority 995")
        .unwrap();
    let busy = client(&mut ds, "busy").unwrap();
    std::thread::sleep(Duration::from_millis(120));
    ds.enter_session(busy, &Holder::new("busy")).unwrap();
    let expired = ds.expire_idle_sessions();
    assert_eq!(expired.len(), 1);
    assert_eq!((expired[0].id, expired[0].uncommitted), (idle, true));
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
    // Its holder learns why; anyone else only that there is no such session.
    let holder = ds.enter_session(idle, &Holder::new("idle")).unwrap_err();
    assert!(
        matches!(holder, DatastoreError::SessionExpired { .. }),
        "{holder}"
    );
    let other = ds.enter_session(idle, &Holder::new("busy")).unwrap_err();
    assert!(
        matches!(other, DatastoreError::UnknownSession(_)),
        "{other}"
    );
}
