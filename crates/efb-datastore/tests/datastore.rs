//! The datastore as its clients use it: sessions, commits, history, startup, persistence.

#![allow(clippy::unwrap_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use efb_datastore::{CommitKind, CommitRequest, Datastore, DatastoreError, LoadMode, OpenOptions};
use efb_yang::json::{self, PrintOptions};
use efb_yang::{DataTree, Schema};

fn schema() -> Arc<Schema> {
    Arc::new(Schema::load().unwrap())
}

fn example(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/../../examples/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

fn open(dir: &std::path::Path, boot: &str) -> Datastore {
    let mut options = OpenOptions::new(dir);
    options.boot_id = Some(boot.to_string());
    Datastore::open(schema(), options).unwrap()
}

/// Writes `DIR/factory-default.json` with mode 0644 (what an administrator would leave;
/// under a umask of 002 it would be writable by the group, and refused).
fn factory_default(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("factory-default.json");
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    path
}

fn text(ds: &Datastore, tree: &DataTree) -> String {
    json::to_json(ds.schema(), tree, PrintOptions::default())
}

fn site_datastore(dir: &std::path::Path) -> Datastore {
    let mut ds = open(dir, "boot-1");
    let s = ds.open_session("alice");
    ds.load_json(s, LoadMode::Override, &example("one-filter-site.json"))
        .unwrap();
    ds.commit(
        s,
        CommitRequest {
            comment: Some("site".into()),
            ..Default::default()
        },
    )
    .unwrap();
    ds.close_session(s);
    ds
}

#[test]
fn a_fresh_datastore_boots_the_factory_default() {
    let dir = tempfile::tempdir().unwrap();
    factory_default(
        dir.path(),
        r#"{"ecofilter-balancer:ecofilter-balancer": {"balancing-method": "layer-4"}}"#,
    );
    let ds = open(dir.path(), "boot-1");
    assert!(text(&ds, &ds.running().tree).contains("layer-4"));
    let history = ds.history();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].kind, CommitKind::Boot);
    assert_eq!(history[0].user, "system");
}

#[test]
fn an_invalid_factory_default_is_refused_with_its_path() {
    let dir = tempfile::tempdir().unwrap();
    factory_default(
        dir.path(),
        r#"{"ecofilter-balancer:ecofilter-balancer": {"balancing-method": "layer-9"}}"#,
    );
    let mut options = OpenOptions::new(dir.path());
    options.boot_id = Some("b".into());
    let err = Datastore::open(schema(), options)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("factory-default.json") && err.contains("balancing-method"),
        "{err}"
    );
}

#[test]
fn commit_persists_and_a_restart_keeps_running() {
    let dir = tempfile::tempdir().unwrap();
    let before = {
        let ds = site_datastore(dir.path());
        text(&ds, &ds.running().tree)
    };
    let ds = open(dir.path(), "boot-1");
    assert_eq!(text(&ds, &ds.running().tree), before);
    assert_eq!(ds.running().config.flows.len(), 6);
    let history = ds.history();
    assert_eq!(history[0].comment.as_deref(), Some("site"));
    assert_eq!(history[0].user, "alice");
}

#[test]
fn a_second_process_on_the_same_datastore_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let _first = open(dir.path(), "boot-1");
    let mut options = OpenOptions::new(dir.path());
    options.boot_id = Some("boot-1".into());
    match Datastore::open(schema(), options) {
        Err(DatastoreError::Locked { path }) => {
            assert!(path.contains(dir.path().to_str().unwrap()))
        }
        Err(other) => panic!("wrong error: {other}"),
        Ok(_) => panic!("a second open must fail"),
    }
}

#[test]
fn check_validates_without_committing_and_errors_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut ds = site_datastore(dir.path());
    let running = text(&ds, &ds.running().tree);
    let s = ds.open_session("bob");
    ds.edit_lines(
        s,
        "set ecofilter-balancer flow dns priority 500 match ip-proto 17 dst-port 53",
    )
    .unwrap();
    let check = ds
        .commit(
            s,
            CommitRequest {
                check_only: true,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(check.commit_id, None);
    assert!(check.change_count() > 0, "{:?}", check.digest());
    assert_eq!(text(&ds, &ds.running().tree), running);

    ds.edit_lines(s, "set ecofilter-balancer link l9 lan-port p2 wan-port p1")
        .unwrap();
    match ds.commit(s, CommitRequest::default()) {
        Err(DatastoreError::Invalid { errors, .. }) => {
            assert!(
                errors
                    .iter()
                    .any(|e| e.path.contains("link[name='l9']")
                        && e.message.contains("already used")),
                "{errors:?}"
            );
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(text(&ds, &ds.running().tree), running);
    drop(ds);
    let ds = open(dir.path(), "boot-1");
    assert_eq!(
        text(&ds, &ds.running().tree),
        running,
        "nothing reached the disk"
    );
}

#[test]
fn warnings_come_back_with_a_successful_commit() {
    let dir = tempfile::tempdir().unwrap();
    let mut ds = site_datastore(dir.path());
    let s = ds.open_session("bob");
    ds.edit_lines(s, "set ecofilter-balancer balancing-method dst-ip")
        .unwrap();
    let outcome = ds.commit(s, CommitRequest::default()).unwrap();
    assert!(outcome.commit_id.is_some());
    assert!(
        outcome
            .warnings
            .iter()
            .any(|w| w.message.contains("not session-symmetric"))
    );
}

#[test]
fn compare_discard_and_rollback() {
    let dir = tempfile::tempdir().unwrap();
    let mut ds = site_datastore(dir.path());
    let s = ds.open_session("carol");
    ds.edit_lines(
        s,
        "delete ecofilter-balancer flow bgp-from\nset ecofilter-balancer flow bgp-to priority 320",
    )
    .unwrap();
    let lines = ds.compare_lines(s).unwrap();
    assert_eq!(
        lines,
        vec![
            "delete ecofilter-balancer flow bgp-from".to_string(),
            "set ecofilter-balancer flow bgp-to priority 320".to_string()
        ]
    );
    ds.discard(s).unwrap();
    assert!(ds.compare(s).unwrap().is_empty());

    // Three commits, then roll back to the first.
    let first = text(&ds, &ds.running().tree);
    for priority in [321, 322, 323] {
        ds.edit_lines(
            s,
            &format!("set ecofilter-balancer flow bgp-to priority {priority}"),
        )
        .unwrap();
        ds.commit(s, CommitRequest::default()).unwrap();
    }
    ds.rollback(s, 3).unwrap();
    let compare = ds.compare_lines(s).unwrap();
    assert_eq!(
        compare,
        vec!["set ecofilter-balancer flow bgp-to priority 310".to_string()]
    );
    ds.commit(
        s,
        CommitRequest {
            comment: Some("back".into()),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(text(&ds, &ds.running().tree), first);
    // The change a commit made is kept in history.
    let changes = ds.commit_changes(1).unwrap();
    assert_eq!(changes.len(), 1);
    assert!(changes[0].describe(ds.schema()).contains("323 (was 322)"));
    assert!(
        ds.rollback(s, 99)
            .unwrap_err()
            .to_string()
            .contains("history holds")
    );
}

#[test]
fn history_keeps_the_last_fifty_commits() {
    let dir = tempfile::tempdir().unwrap();
    let mut ds = site_datastore(dir.path());
    let s = ds.open_session("dave");
    for i in 0..60 {
        ds.edit_lines(
            s,
            &format!("set ecofilter-balancer flow f{i} priority {}", 1000 + i),
        )
        .unwrap();
        ds.commit(s, CommitRequest::default()).unwrap();
    }
    let history = ds.history();
    assert_eq!(history.len(), 50);
    assert_eq!(history[0].index, 0);
    assert_eq!(history[49].index, 49);
    drop(ds);
    let mut ds = open(dir.path(), "boot-1");
    assert_eq!(ds.history().len(), 50, "trimmed on disk too");
    let s = ds.open_session("dave");
    ds.rollback(s, 49).unwrap();
    // Commit 49 back holds f0..f10 (the 11th commit of 60).
    assert!(
        ds.compare_lines(s)
            .unwrap()
            .contains(&"delete ecofilter-balancer flow f11".to_string())
    );
}

#[test]
fn commit_confirmed_rolls_back_unless_confirmed() {
    let dir = tempfile::tempdir().unwrap();
    let mut ds = site_datastore(dir.path());
    let before = text(&ds, &ds.running().tree);
    let s = ds.open_session("erin");
    ds.edit_lines(s, "set ecofilter-balancer flow tmp priority 999")
        .unwrap();
    let outcome = ds
        .commit(
            s,
            CommitRequest {
                confirm_timeout: Some(Duration::from_secs(60)),
                ..Default::default()
            },
        )
        .unwrap();
    let deadline = outcome.confirm_deadline.unwrap();
    assert!(ds.history()[0].pending_confirm);
    assert!(
        ds.expire_pending_confirm(SystemTime::now())
            .unwrap()
            .is_none(),
        "not yet"
    );
    let rolled = ds
        .expire_pending_confirm(deadline + Duration::from_millis(1))
        .unwrap()
        .unwrap();
    assert!(rolled.commit_id.is_some());
    assert_eq!(text(&ds, &ds.running().tree), before);
    assert_eq!(ds.history()[0].kind, CommitKind::ConfirmTimeout);

    // Confirmed in time: stays.
    ds.edit_lines(s, "set ecofilter-balancer flow tmp priority 999")
        .unwrap();
    ds.commit(
        s,
        CommitRequest {
            confirm_timeout: Some(Duration::from_secs(60)),
            ..Default::default()
        },
    )
    .unwrap();
    let confirmed = ds.commit(s, CommitRequest::default()).unwrap();
    assert!(confirmed.confirmed.is_some(), "a plain commit confirms");
    assert!(ds.pending_confirm_deadline().is_none());
    assert!(
        ds.expire_pending_confirm(SystemTime::now() + Duration::from_secs(3600))
            .unwrap()
            .is_none()
    );
}

#[test]
fn two_confirmed_commits_roll_back_to_before_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let mut ds = site_datastore(dir.path());
    let before = text(&ds, &ds.running().tree);
    let s = ds.open_session("erin");
    for priority in [990, 991] {
        ds.edit_lines(
            s,
            &format!("set ecofilter-balancer flow tmp priority {priority}"),
        )
        .unwrap();
        ds.commit(
            s,
            CommitRequest {
                confirm_timeout: Some(Duration::from_secs(60)),
                ..Default::default()
            },
        )
        .unwrap();
    }
    ds.expire_pending_confirm(SystemTime::now() + Duration::from_secs(61))
        .unwrap()
        .unwrap();
    assert_eq!(text(&ds, &ds.running().tree), before);
}

#[test]
fn commit_confirmed_rolls_back_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let before = {
        let mut ds = site_datastore(dir.path());
        let before = text(&ds, &ds.running().tree);
        let s = ds.open_session("frank");
        ds.edit_lines(s, "set ecofilter-balancer flow tmp priority 999")
            .unwrap();
        ds.commit(
            s,
            CommitRequest {
                confirm_timeout: Some(Duration::from_millis(300)),
                ..Default::default()
            },
        )
        .unwrap();
        before
        // efbd dies here, before anyone confirms.
    };
    std::thread::sleep(Duration::from_millis(400));
    let mut ds = open(dir.path(), "boot-1");
    assert_eq!(text(&ds, &ds.running().tree), before);
    assert_eq!(ds.history()[0].kind, CommitKind::ConfirmTimeout);
    // Handed to the owner once, to publish like the timer's rollback, naming what it undid.
    let opened = ds.take_opened();
    let kinds: Vec<CommitKind> = opened.iter().map(|o| o.kind).collect();
    assert_eq!(kinds, [CommitKind::ConfirmTimeout]);
    assert_eq!(opened[0].undone, Some(ds.history()[1].id));
    assert_eq!(opened[0].outcome.commit_id, Some(ds.history()[0].id));
    assert!(ds.take_opened().is_empty());
}

#[test]
fn save_then_reboot_loads_startup_and_unsaved_commits_are_lost() {
    let dir = tempfile::tempdir().unwrap();
    let saved = {
        let mut ds = site_datastore(dir.path());
        ds.save().unwrap();
        let saved = text(&ds, &ds.running().tree);
        let s = ds.open_session("gina");
        ds.edit_lines(s, "set ecofilter-balancer flow unsaved priority 1")
            .unwrap();
        ds.commit(s, CommitRequest::default()).unwrap();
        saved
    };
    // efbd restarted on the same boot: the unsaved commit is still running.
    let ds = open(dir.path(), "boot-1");
    assert!(text(&ds, &ds.running().tree).contains("unsaved"));
    drop(ds);
    // The machine rebooted: the box boots with what was saved.
    let ds = open(dir.path(), "boot-2");
    assert_eq!(text(&ds, &ds.running().tree), saved);
    assert_eq!(text(&ds, &ds.startup().unwrap().unwrap()), saved);
    assert_eq!(ds.history()[0].kind, CommitKind::Boot);
}

#[test]
fn reboot_without_save_loads_the_factory_default() {
    let dir = tempfile::tempdir().unwrap();
    drop(site_datastore(dir.path()));
    let ds = open(dir.path(), "boot-2");
    assert!(ds.running().tree.is_empty());
}

#[test]
fn load_merge_and_override() {
    let dir = tempfile::tempdir().unwrap();
    let mut ds = site_datastore(dir.path());
    let s = ds.open_session("hank");
    let extra = r#"{"ecofilter-balancer:ecofilter-balancer": {"flow": [{"name": "icmp", "priority": 50, "match": {"ip-proto": 1}}]}}"#;
    ds.load_json(s, LoadMode::Merge, extra).unwrap();
    assert_eq!(ds.compare(s).unwrap().len(), 3, "entry, priority, ip-proto");
    let incomplete = ds.load_json(s, LoadMode::Override, extra).unwrap();
    assert!(incomplete.incomplete.is_empty());
    assert!(
        ds.compare_lines(s)
            .unwrap()
            .iter()
            .any(|l| l == "delete ecofilter-balancer link")
    );
    // A file with a wrong type is refused and the candidate stays as it was.
    let before = text(&ds, ds.candidate(s).unwrap());
    let bad = r#"{"ecofilter-balancer:ecofilter-balancer": {"flow": [{"name": "x", "priority": "high"}]}}"#;
    let err = ds
        .load_json(s, LoadMode::Merge, bad)
        .unwrap_err()
        .to_string();
    assert!(err.contains("priority"), "{err}");
    assert_eq!(text(&ds, ds.candidate(s).unwrap()), before);
    assert!(ds.load_json(s, LoadMode::Merge, "{ not json").is_err());
    // A file missing references loads, and says what is missing.
    let dangling = r#"{"ecofilter-balancer:ecofilter-balancer": {"link": [{"name": "l1", "lan-port": "pX", "wan-port": "pY"}]}}"#;
    let outcome = ds.load_json(s, LoadMode::Override, dangling).unwrap();
    assert_eq!(outcome.incomplete.len(), 2, "{:?}", outcome.incomplete);
}

#[test]
fn two_sessions_on_different_paths_both_commit() {
    let dir = tempfile::tempdir().unwrap();
    let mut ds = site_datastore(dir.path());
    let a = ds.open_session("ann");
    let b = ds.open_session("ben");
    ds.edit_lines(a, "set ecofilter-balancer flow bgp-to priority 311")
        .unwrap();
    ds.edit_lines(b, "set ecofilter-balancer flow bgp-from priority 301")
        .unwrap();
    ds.commit(a, CommitRequest::default()).unwrap();
    ds.commit(b, CommitRequest::default()).unwrap();
    let config = &ds.running().config;
    assert_eq!(config.flows["bgp-to"].priority, 311);
    assert_eq!(config.flows["bgp-from"].priority, 301);
}

#[test]
fn a_conflicting_commit_is_refused_naming_the_paths() {
    let dir = tempfile::tempdir().unwrap();
    let mut ds = site_datastore(dir.path());
    let a = ds.open_session("ann");
    let b = ds.open_session("ben");
    ds.edit_lines(a, "set ecofilter-balancer flow bgp-to priority 311")
        .unwrap();
    ds.edit_lines(b, "set ecofilter-balancer flow bgp-to priority 312\nset ecofilter-balancer flow new priority 5").unwrap();
    ds.commit(a, CommitRequest::default()).unwrap();
    let running = text(&ds, &ds.running().tree);
    match ds.commit(b, CommitRequest::default()) {
        Err(DatastoreError::Conflict { paths, since }) => {
            assert_eq!(
                paths,
                vec![
                    "/ecofilter-balancer:ecofilter-balancer/flow[name='bgp-to']/priority"
                        .to_string()
                ]
            );
            assert!(since.contains("ann"), "{since}");
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert_eq!(
        text(&ds, &ds.running().tree),
        running,
        "nothing of ben's commit went in"
    );
    // The same change made by both is no conflict.
    let c = ds.open_session("cid");
    let d = ds.open_session("dan");
    ds.edit_lines(c, "set ecofilter-balancer flow same priority 9")
        .unwrap();
    ds.edit_lines(d, "set ecofilter-balancer flow same priority 9")
        .unwrap();
    ds.commit(c, CommitRequest::default()).unwrap();
    ds.commit(d, CommitRequest::default()).unwrap();
}

#[test]
fn unknown_sessions_and_missing_paths_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let mut ds = site_datastore(dir.path());
    assert!(matches!(
        ds.commit(42, CommitRequest::default()),
        Err(DatastoreError::UnknownSession(42))
    ));
    let s = ds.open_session("ivy");
    let err = ds
        .edit_lines(s, "delete ecofilter-balancer flow nope")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("flow[name='nope']") && err.contains("no such data"),
        "{err}"
    );
    assert!(!ds.has_changes(s).unwrap());
}

#[test]
fn edits_by_data_path_merge_replace_create_delete_remove() {
    use efb_datastore::Edit;
    use efb_yang::DataPath;
    let dir = tempfile::tempdir().unwrap();
    let mut ds = site_datastore(dir.path());
    let schema = ds.schema().clone();
    let path = |p: &str| DataPath::parse(&schema, p).unwrap();
    let fragment = |text: &str| json::from_json(&schema, text, json::Check::Types).unwrap();
    let s = ds.open_session("jay");
    let flow = path("/ecofilter-balancer:ecofilter-balancer/flow[name='bgp-to']");
    let priority = path("/ecofilter-balancer:ecofilter-balancer/flow[name='bgp-to']/priority");

    // Merge keeps what the fragment does not mention.
    let data = fragment(
        r#"{"ecofilter-balancer:ecofilter-balancer": {"flow": [{"name": "bgp-to", "priority": 1}]}}"#,
    );
    ds.edit(
        s,
        &[Edit::Merge {
            path: flow.clone(),
            data: data.clone(),
        }],
    )
    .unwrap();
    assert_eq!(
        ds.compare_lines(s).unwrap(),
        vec!["set ecofilter-balancer flow bgp-to priority 1"]
    );
    // Replace drops it.
    ds.edit(
        s,
        &[Edit::Replace {
            path: flow.clone(),
            data: data.clone(),
        }],
    )
    .unwrap();
    let lines = ds.compare_lines(s).unwrap();
    assert!(
        lines.contains(&"delete ecofilter-balancer flow bgp-to match".to_string()),
        "{lines:?}"
    );
    // Create refuses an existing entry, and a failed batch changes nothing.
    let before = ds.compare_lines(s).unwrap();
    let batch = [
        Edit::Set {
            path: priority.clone(),
            value: Some(schema.value(priority.node().unwrap(), "2").unwrap()),
        },
        Edit::Create {
            path: flow.clone(),
            data,
        },
    ];
    assert!(
        ds.edit(s, &batch)
            .unwrap_err()
            .to_string()
            .contains("already exists")
    );
    assert_eq!(ds.compare_lines(s).unwrap(), before);
    // Delete refuses what is missing; remove does not.
    let missing = path("/ecofilter-balancer:ecofilter-balancer/flow[name='nope']");
    assert!(
        ds.edit(
            s,
            &[Edit::Delete {
                path: missing.clone()
            }]
        )
        .is_err()
    );
    ds.edit(
        s,
        &[Edit::Remove { path: missing }, Edit::Delete { path: flow }],
    )
    .unwrap();
    assert!(
        ds.compare_lines(s)
            .unwrap()
            .contains(&"delete ecofilter-balancer flow bgp-to".to_string())
    );
}

#[test]
fn an_unconfirmed_first_commit_rolls_back_to_the_empty_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let mut ds = open(dir.path(), "boot-1");
    assert!(
        ds.history().is_empty(),
        "an empty factory default makes no commit"
    );
    let s = ds.open_session("kim");
    ds.edit_lines(s, "set ecofilter-balancer balancing-method layer-4")
        .unwrap();
    ds.commit(
        s,
        CommitRequest {
            confirm_timeout: Some(Duration::from_secs(1)),
            ..Default::default()
        },
    )
    .unwrap();
    ds.expire_pending_confirm(SystemTime::now() + Duration::from_secs(2))
        .unwrap()
        .unwrap();
    assert!(ds.running().tree.is_empty());
    assert!(ds.pending_confirm_deadline().is_none());
}

#[test]
fn loads_of_nothing_and_repeated_members_are_refused_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut ds = site_datastore(dir.path());
    let s = ds.open_session("mallory");
    let empty = ["", " \n\t "];
    for mode in [LoadMode::Override, LoadMode::Merge] {
        let mut refusals = Vec::new();
        for text in empty.iter().chain(&["# a comment and nothing else\n"]) {
            refusals.push((text, ds.load_lines(s, mode, text).map(|_| ())));
        }
        for text in &empty {
            refusals.push((text, ds.load_json(s, mode, text).map(|_| ())));
        }
        for (text, refused) in refusals {
            let message = refused.unwrap_err().to_string();
            assert!(
                message.starts_with("the content to load ") && message.contains("`{}`"),
                "{text:?}: {message}"
            );
        }
        assert!(ds.compare(s).unwrap().is_empty(), "nothing changed");
    }
    let repeated = r#"{"ecofilter-balancer:ecofilter-balancer": {"balancing-method": "layer-4", "balancing-method": "layer-3"}}"#;
    for mode in [LoadMode::Override, LoadMode::Merge] {
        let e = ds.load_json(s, mode, repeated).unwrap_err().to_string();
        assert!(
            e.contains("/ecofilter-balancer:ecofilter-balancer")
                && e.contains("\"balancing-method\" appears twice"),
            "{e}"
        );
    }
    assert!(ds.compare(s).unwrap().is_empty(), "nothing changed");
    // An explicit empty configuration is still how everything is removed.
    ds.load_json(s, LoadMode::Override, "{}").unwrap();
    assert!(ds.candidate(s).unwrap().is_empty());
}

#[test]
fn a_factory_default_that_is_empty_or_not_a_file_is_refused() {
    for (name, make, refusal) in [
        (
            "empty",
            (|p: &Path| std::fs::write(p, "")) as fn(&Path) -> std::io::Result<()>,
            "factory-default.json is empty",
        ),
        (
            "directory",
            |p: &Path| std::fs::create_dir(p),
            "factory-default.json: is a directory, where efbd expects a regular file",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        make(&dir.path().join("factory-default.json")).unwrap();
        let mut options = OpenOptions::new(dir.path());
        options.boot_id = Some("b".into());
        let err = Datastore::open(schema(), options)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains(refusal), "{name}: {err}");
    }
}

/// Opens a fresh datastore in `dir` (its factory default as the options say): the refusal.
fn refused(options: OpenOptions) -> DatastoreError {
    Datastore::open(schema(), options).err().unwrap()
}

#[test]
fn a_factory_default_others_may_write_is_refused_and_nothing_committed() {
    let dir = tempfile::tempdir().unwrap();
    let path = factory_default(
        dir.path(),
        r#"{"ecofilter-balancer:ecofilter-balancer": {"balancing-method": "layer-4"}}"#,
    );
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
    let mut options = OpenOptions::new(dir.path());
    options.boot_id = Some("b".into());
    let err = refused(options.clone());
    assert!(matches!(err, DatastoreError::Untrusted { .. }), "{err}");
    let shown = path.display();
    assert_eq!(
        err.to_string(),
        format!(
            "factory default (setting `factory_default`): {shown}: writable by group and others \
             (mode 0666), so another account could change what efbd trusts in it; chmod go-w {shown}"
        )
    );
    // Nothing was committed: fixed, the file boots as commit 1.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let ds = Datastore::open(schema(), options).unwrap();
    assert_eq!(ds.running().commit_id, 1);
    assert!(text(&ds, &ds.running().tree).contains("layer-4"));
}

#[test]
fn a_link_as_the_default_factory_default_is_refused_a_named_one_is_followed() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let target = factory_default(
        elsewhere.path(),
        r#"{"ecofilter-balancer:ecofilter-balancer": {"balancing-method": "layer-4"}}"#,
    );
    let link = dir.path().join("factory-default.json");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let mut options = OpenOptions::new(dir.path());
    options.boot_id = Some("b".into());
    let err = refused(options.clone()).to_string();
    let shown = link.display();
    assert!(
        err.starts_with(&format!(
            "factory default (setting `factory_default`): {shown}: is a symbolic link;"
        )) && err.ends_with(&format!(
            "remove the link (rm {shown}); to boot the file the link leads to, name that file \
             with --factory-default FILE instead"
        )),
        "{err}"
    );
    // Named (--factory-default), the link is followed and the file it leads to judged.
    options.factory_default = Some(link.clone());
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o646)).unwrap();
    let err = refused(options.clone()).to_string();
    assert!(
        err.contains(&format!(
            "{shown} (a link to {}): writable by others (mode 0646)",
            target.display()
        )),
        "{err}"
    );
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644)).unwrap();
    let ds = Datastore::open(schema(), options).unwrap();
    assert!(text(&ds, &ds.running().tree).contains("layer-4"));
}

#[test]
fn a_factory_default_of_another_account_is_refused() {
    if !is_root() {
        println!("SKIPPED: giving a file to another account needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = factory_default(dir.path(), "{}");
    // nobody: neither root nor this process's account.
    std::os::unix::fs::chown(&path, Some(65534), None).unwrap();
    let mut options = OpenOptions::new(dir.path());
    options.boot_id = Some("b".into());
    let err = refused(options).to_string();
    assert!(
        err.contains("uid 65534")
            && err.contains("neither root nor efbd's account root (uid 0)")
            && err.ends_with(&format!("chown root {}", path.display())),
        "{err}"
    );
}

/// This test's effective uid is root's (/proc/self belongs to it).
fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").unwrap().uid() == 0
}

/// What `deactivate` keeps aside is committed, stored, kept through a restart and a new
/// boot (from startup), and follows a rollback; a commit that only changes what is
/// inactive is a commit.
#[test]
fn inactive_nodes_are_committed_stored_and_rolled_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut ds = site_datastore(dir.path());
    let flow = "ecofilter-balancer flow bgp-to";
    let s = ds.open_session("alice");
    ds.edit_lines(s, &format!("deactivate {flow}")).unwrap();
    assert!(ds.has_changes(s).unwrap());
    let deactivated = ds.commit(s, CommitRequest::default()).unwrap();
    let inactive_now = |ds: &Datastore| {
        ds.running()
            .inactive
            .deactivate_lines(ds.schema())
            .join("\n")
    };
    assert_eq!(inactive_now(&ds), format!("deactivate {flow}"));
    assert!(!ds.running().config.flows.contains_key("bgp-to"));
    ds.save().unwrap();

    // Only the inactive node changes: still a commit, in history.
    ds.edit_lines(s, &format!("set {flow} description aside"))
        .unwrap();
    assert!(ds.has_changes(s).unwrap());
    let described = ds.commit(s, CommitRequest::default()).unwrap();
    assert_eq!(described.commit_id, deactivated.commit_id.map(|id| id + 1));
    ds.close_session(s);
    drop(ds);

    // A restart in the same boot keeps running; rollback 2 is before the deactivate.
    let mut ds = open(dir.path(), "boot-1");
    assert_eq!(inactive_now(&ds), format!("deactivate {flow}"));
    let s = ds.open_session("bob");
    ds.rollback(s, 2).unwrap();
    ds.commit(s, CommitRequest::default()).unwrap();
    assert_eq!(inactive_now(&ds), "");
    assert!(ds.running().config.flows.contains_key("bgp-to"));
    ds.close_session(s);
    drop(ds);

    // A new boot loads startup, saved while the flow was inactive.
    let ds = open(dir.path(), "boot-2");
    assert_eq!(inactive_now(&ds), format!("deactivate {flow}"));
    assert!(!ds.running().config.flows.contains_key("bgp-to"));
}

/// A `commit confirmed` that deactivated a node and was not confirmed is rolled back to the
/// node applied again.
#[test]
fn an_unconfirmed_deactivate_is_rolled_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut ds = site_datastore(dir.path());
    let s = ds.open_session("alice");
    ds.edit_lines(s, "deactivate ecofilter-balancer flow bgp-to")
        .unwrap();
    ds.commit(
        s,
        CommitRequest {
            confirm_timeout: Some(Duration::from_secs(60)),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(!ds.running().inactive.is_empty());
    let later = SystemTime::now() + Duration::from_secs(61);
    ds.expire_pending_confirm(later).unwrap().unwrap();
    assert!(ds.running().inactive.is_empty());
    assert!(ds.running().config.flows.contains_key("bgp-to"));
}
