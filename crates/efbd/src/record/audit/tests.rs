#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use efb_northbound::audit::Audit;

use super::*;

fn bounds(max_kib: u64, keep_files: u32) -> settings::Audit {
    settings::Audit {
        max_kib,
        keep_files,
        access_per_minute: 20,
    }
}

fn record(n: usize, kind: Kind) -> Record {
    Record {
        time_ms: n as u64,
        user: "ada".into(),
        role: None,
        from: "unix socket, uid 1001, pid 1".into(),
        what: format!("commit {n}"),
        accepted: true,
        result: "x".repeat(200),
        kind,
    }
}

fn lines(dir: &Path, name: &str) -> Vec<String> {
    std::fs::read_to_string(dir.join(name))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

fn size(dir: &Path, name: &str) -> u64 {
    std::fs::metadata(dir.join(name)).map_or(0, |m| m.len())
}

/// efbd's log while `run` runs, as text.
fn logged(run: impl FnOnce()) -> String {
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);
    impl Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    tracing::subscriber::with_default(subscriber, run);
    let bytes = captured.0.lock().unwrap().clone();
    String::from_utf8(bytes).unwrap()
}

#[test]
fn rotation_keeps_every_change_until_keep_files_are_full_then_says_what_it_removed() {
    let dir = tempfile::tempdir().unwrap();
    let log = AuditLog::open(dir.path(), &bounds(16, 4)).unwrap();
    // Numbers of one width: every line has the same length.
    let first = 10_000;
    let per_file = 16 * 1024 / json_line(&record(first, Kind::Change)).unwrap().len();
    let fill = 4 * per_file;
    for n in first..first + fill {
        log.record(&record(n, Kind::Change));
    }
    let kept = log.last(usize::MAX);
    assert_eq!(kept.len(), fill, "every change of 4 files is kept");
    assert_eq!(kept[0].what, format!("commit {first}"));
    assert!(!dir.path().join("audit.log.4").exists());

    let warned = logged(|| log.record(&record(first + fill, Kind::Change)));
    let top = lines(dir.path(), FILE);
    let removal: Record = serde_json::from_str(&top[0]).unwrap();
    let oldest = dir.path().join("audit.log.3").display().to_string();
    let expected = format!(
        "{oldest} removed to keep audit.keep_files = 4 files of audit.max_kib = 16 KiB: \
         {per_file} records, from 1970-01-01T00:00:10Z to 1970-01-01T00:00:10Z"
    );
    assert_eq!(removal.what, expected);
    assert_eq!(
        (removal.user.as_str(), removal.kind),
        ("efbd", Kind::Change)
    );
    assert!(
        warned.contains("WARN") && warned.contains(&expected),
        "{warned}"
    );
    let kept = log.last(usize::MAX);
    assert_eq!(
        kept.len(),
        3 * per_file + 2,
        "3 files, the removal, the new one"
    );
    assert_eq!(kept[0].what, format!("commit {}", first + per_file));
    for name in [FILE, "audit.log.1", "audit.log.2", "audit.log.3"] {
        assert!(size(dir.path(), name) <= 16 * 1024, "{name}");
    }
    assert!(!dir.path().join("audit.log.4").exists());
}

#[test]
fn the_log_stays_bounded_and_keeps_the_newest_records() {
    let dir = tempfile::tempdir().unwrap();
    let log = AuditLog::open(dir.path(), &bounds(16, 2)).unwrap();
    for n in 0..1000 {
        log.record(&record(n, Kind::Change));
    }
    assert!(size(dir.path(), FILE) <= 16 * 1024);
    assert!(size(dir.path(), "audit.log.1") <= 16 * 1024);
    assert!(!dir.path().join("audit.log.2").exists());
    let last = log.last(5);
    assert_eq!(
        last.iter().map(|r| r.time_ms).collect::<Vec<_>>(),
        [995, 996, 997, 998, 999]
    );
    // Reopened (efbd restarted): the records are still there, and appended to.
    drop(log);
    let log = AuditLog::open(dir.path(), &bounds(16, 2)).unwrap();
    log.record(&record(1000, Kind::Change));
    assert_eq!(log.last(2)[1].time_ms, 1000);
    assert_eq!(log.last(2)[0].time_ms, 999);
}

#[test]
fn a_link_planted_as_a_log_is_refused_and_what_it_names_is_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("precious");
    std::fs::write(&target, "root's\n").unwrap();
    std::os::unix::fs::symlink(&target, dir.path().join(ACCESS_FILE)).unwrap();
    let err = AuditLog::open(dir.path(), &bounds(16, 2)).err().unwrap();
    assert!(err.to_string().contains("link"), "{err}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "root's\n");
}

#[test]
fn a_log_or_an_older_file_others_may_write_is_refused_at_start() {
    use std::os::unix::fs::PermissionsExt;
    for name in [FILE.to_string(), format!("{ACCESS_FILE}.2")] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(&name);
        std::fs::write(&path, "").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
        let err = AuditLog::open(dir.path(), &bounds(16, 3)).err().unwrap();
        assert_eq!(
            err.to_string(),
            format!(
                "{path}: writable by group and others (mode 0666), so another account \
                 could change what efbd trusts in it; chmod go-w {path}",
                path = path.display()
            )
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        AuditLog::open(dir.path(), &bounds(16, 3)).unwrap();
    }
}

/// An operator's refused call of set-bypass (bad input), as the management API makes it.
fn refused_call(at: u64, n: usize) -> Record {
    Record {
        time_ms: at,
        user: "otto".into(),
        role: Some(efb_northbound::Role::Operator),
        from: "unix socket, uid 1002, pid 7".into(),
        what: format!("call set-bypass-ecofilter-unit {{\"mode\":\"sideways{n}\"}}"),
        accepted: false,
        result: "InvalidArgument: mode: expected auto, bypass or primary".into(),
        kind: Kind::Change,
    }
}

#[test]
fn refusals_never_reach_the_change_log_and_a_flood_of_them_keeps_twenty_a_minute() {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(AuditLog::open(dir.path(), &bounds(16, 2)).unwrap());
    let audit = Audit::new(log.clone());
    let now = now_ms();
    audit.record(Record {
        what: "commit comment \"the change\"".into(),
        ..record(now as usize, Kind::Change)
    });
    for n in 0..12_000 {
        audit.record(refused_call(now + 1, n));
    }
    let changes = lines(dir.path(), FILE);
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert!(changes[0].contains("the change") && !changes[0].contains("\"accepted\":false"));
    assert!(!dir.path().join("audit.log.1").exists());
    assert_eq!(lines(dir.path(), ACCESS_FILE).len(), 20);
    let shown = log.last(100);
    assert!(shown.iter().any(|r| r.what.contains("the change")));
    assert!(shown.iter().all(|r| r.accepted || r.kind == Kind::Access));
}

#[test]
fn summaries_are_written_when_efbd_stops_within_the_minute() {
    let dir = tempfile::tempdir().unwrap();
    let now = now_ms();
    let log = AuditLog::open(dir.path(), &bounds(16, 2)).unwrap();
    for n in 0..50 {
        log.record(&Record {
            kind: Kind::Access,
            ..refused_call(now, n)
        });
    }
    // Stopped (the last handle dropped) within the minute: the count is written.
    drop(log);
    let kept = lines(dir.path(), ACCESS_FILE);
    assert_eq!(kept.len(), 21, "{kept:?}");
    assert!(
        kept[20].contains("30 more accesses of otto within a minute")
            && kept[20].contains("sideways49"),
        "{}",
        kept[20]
    );
    // The explicit flush at the end of efbd's run, then the drop: one summary, not two.
    let log = AuditLog::open(dir.path(), &bounds(16, 2)).unwrap();
    for n in 0..25 {
        log.record(&Record {
            user: "eve".into(),
            kind: Kind::Access,
            ..refused_call(now, n)
        });
    }
    log.flush();
    drop(log);
    let summaries = lines(dir.path(), ACCESS_FILE)
        .into_iter()
        .filter(|l| l.contains("5 more accesses of eve"))
        .count();
    assert_eq!(summaries, 1);
}

#[test]
fn a_flood_of_accesses_neither_pushes_changes_out_nor_fills_the_access_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = AuditLog::open(dir.path(), &bounds(16, 2)).unwrap();
    let now = now_ms() as usize;
    log.record(&Record {
        what: "commit 0".into(),
        ..record(now, Kind::Change)
    });
    let refused = |n: usize| Record {
        user: "mallory".into(),
        accepted: false,
        what: format!("commit {n}"),
        ..record(now + n, Kind::Access)
    };
    for n in 1..6001 {
        log.record(&refused(n));
    }
    let records = log.last(10_000);
    assert_eq!(records[0].what, "commit 0", "the change is still there");
    let kept = records.iter().filter(|r| r.user == "mallory").count();
    assert_eq!(kept, 20, "one minute's worth in full, the rest counted");
    // A minute later, the count comes out as one record.
    log.record(&refused(60_001));
    assert!(now_ms() < (now + 60_000) as u64, "the test took a minute");
    let records = log.last(10_000);
    let summary = records
        .iter()
        .find(|r| r.what.starts_with("5980 more accesses of mallory"))
        .expect("a summary of the dropped ones");
    assert!(
        summary.what.contains("(the last: commit 6000)"),
        "{}",
        summary.what
    );
}
