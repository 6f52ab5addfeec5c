//! The `show system` views: the commit history and a commit's changes, the open sessions,
//! the audit, the daemon's status (with the units in a manual mode).

use serde_json::Value as Json;

use super::numbering::{self, Numbering};
use super::{Flow, Output, Result, Shell, ShellError, unix_ms_text};

impl Shell {
    /// `show system commit ID`: what that commit changed.
    pub(super) fn commit_changes(&mut self, id: &str) -> Result<(Output, Flow)> {
        let history = Numbering::new(self.client().history()?);
        let commit = history.by_id("show system commit", id)?;
        let changes = self.client().commit_changes(commit.index)?;
        let data = serde_json::json!({
            "id": commit.id, "rollback": commit.index, "changes": changes
        });
        // The changes as set lines that could be typed again, under a line naming the commit.
        let mut lines = vec![format!("# {}", numbering::described(commit))];
        if changes.is_empty() {
            lines.push("# it changed nothing".to_string());
        }
        lines.extend(changes.iter().cloned());
        Ok((Output::facts(lines, data), Flow::Continue))
    }

    /// `show system rollback N compare M`: what changed from commit M to commit N (Junos's
    /// words), as `show | compare` draws it, under a line naming both commits.
    pub(super) fn rollbacks_compared(&mut self, rest: &[String]) -> Result<Output> {
        let [new, compare, old] = rest else {
            return Err(ShellError(
                "usage: show system rollback N compare M (what changed from commit M to commit N; \
                 rollback numbers count commits back from running, show system commit lists them)"
                    .into(),
            ));
        };
        if compare != "compare" {
            return Err(ShellError(format!(
                "show system rollback {}: expected compare M after the number, not \"{}\"",
                efb_yang::text::excerpt(new),
                efb_yang::text::excerpt(compare)
            )));
        }
        let history = Numbering::new(self.client().history()?);
        let (new, old) = (history.by_rollback(new)?, history.by_rollback(old)?);
        let lines = self.client().compare_commits(
            efb_mgmt_proto::v1::Format::Hierarchy,
            Some(old.index),
            Some(new.index),
        )?;
        let mut out = vec![
            format!(
                "# from rollback {}, {}",
                old.index,
                numbering::described(old)
            ),
            format!("# to rollback {}, {}", new.index, numbering::described(new)),
        ];
        if lines.is_empty() {
            out.push("# they are the same configuration".into());
        }
        out.extend(lines);
        Ok(Output::lines(out))
    }

    pub(super) fn history(&mut self) -> Result<Output> {
        let commits = self.client().history()?;
        let mut rows = vec![vec![
            "Id".to_string(),
            "Rollback".into(),
            "Time".into(),
            "User".into(),
            "Kind".into(),
            "Comment".into(),
        ]];
        for c in &commits {
            let kind = if c.pending_confirm {
                format!("{} (unconfirmed)", c.kind)
            } else {
                c.kind.clone()
            };
            rows.push(vec![
                c.id.to_string(),
                c.index.to_string(),
                c.time.clone(),
                c.user.clone(),
                kind,
                c.comment.clone(),
            ]);
        }
        let data: Vec<Json> = commits
            .iter()
            .map(|c| {
                serde_json::json!({
                    "rollback": c.index, "id": c.id, "time": c.time, "user": c.user,
                    "kind": c.kind, "pending-confirm": c.pending_confirm,
                    "comment": c.comment, "records": c.records,
                })
            })
            .collect();
        Ok(Output::facts(
            efb_text_table::align(&rows, &[]),
            serde_json::json!({ "commits": data }),
        ))
    }

    /// `show system users` / `sessions`: who has a session open, from where, for how long,
    /// idle how long, editing or not; `*` marks this shell's own.
    pub(super) fn users(&mut self) -> Result<Output> {
        let status = self.client().status()?;
        let mine = self.client().session;
        let mut rows = vec![vec![
            "Session".to_string(),
            "User".into(),
            "From".into(),
            "Age".into(),
            "Idle".into(),
            "Candidate".into(),
        ]];
        for s in &status.open_sessions {
            // This shell's own session: another of the same account is someone else's shell.
            let mark = if s.session == mine { "*" } else { "" };
            rows.push(vec![
                format!("{}{mark}", s.session),
                s.user.clone(),
                s.from.clone(),
                idle_text(s.age_seconds),
                idle_text(s.idle_seconds),
                if s.uncommitted {
                    "uncommitted changes".to_string()
                } else {
                    "as running".to_string()
                },
            ]);
        }
        let data: Vec<Json> = status
            .open_sessions
            .iter()
            .map(|s| session_json(s, mine))
            .collect();
        Ok(Output::facts(
            efb_text_table::align(&rows, &[]),
            serde_json::json!({ "sessions": data }),
        ))
    }

    /// `request system logout session N`: an admin closes anyone's session.
    pub(super) fn logout(&mut self, rest: &[String]) -> Result<(Output, Flow)> {
        let [number] = rest else {
            return Err(ShellError(
                "request system logout session: give one session number (show system sessions lists them)"
                    .to_string(),
            ));
        };
        let session: u64 = number.parse().map_err(|_| {
            ShellError(format!(
                "request system logout session: \"{}\" is not a session number (show system sessions lists them)",
                efb_yang::text::excerpt(number)
            ))
        })?;
        self.client().logout(session)?;
        let line = format!("session {session} closed: its candidate is dropped, its shell ends");
        let data = serde_json::json!({ "logged-out": session });
        Ok((Output::facts(vec![line], data), Flow::Continue))
    }

    /// `show system audit`: who changed what, or was refused, newest last.
    pub(super) fn audit(&mut self) -> Result<Output> {
        let records = self.client().audit(0)?;
        let mut rows = vec![vec![
            "Time".to_string(),
            "User".into(),
            "Role".into(),
            "From".into(),
            "What".into(),
            "Result".into(),
        ]];
        let mut data = Vec::new();
        for r in records {
            data.push(serde_json::json!({
                "time": r.time, "user": r.user, "role": r.role, "from": r.from,
                "what": r.what, "accepted": r.accepted, "result": r.result,
            }));
            let result = if r.accepted {
                format!("accepted: {}", r.result)
            } else {
                format!("refused: {}", r.result)
            };
            rows.push(vec![r.time, r.user, r.role, r.from, r.what, result]);
        }
        Ok(Output::facts(
            efb_text_table::align(&rows, &[]),
            serde_json::json!({ "records": data }),
        ))
    }

    pub(super) fn status(&mut self) -> Result<Output> {
        let s = self.client().status()?;
        let mine = self.client().session;
        let hello = self.client().hello.clone();
        let data = serde_json::json!({
            "daemon-version": s.daemon_version,
            "model": { "name": hello.module_name, "revision": hello.module_revision },
            "datastore": s.datastore,
            "uptime-seconds": s.uptime_seconds,
            "running-commit": s.running_commit_id,
            "confirm-deadline-unix-ms": (s.confirm_deadline_unix_ms != 0)
                .then_some(s.confirm_deadline_unix_ms),
            "sessions": s.sessions,
            "chip": s.chip,
            "manual-modes": s.manual_modes.iter()
                .map(|m| serde_json::json!({ "unit": m.unit, "mode": m.mode }))
                .collect::<Vec<_>>(),
            "open-sessions": s.open_sessions.iter().map(|o| session_json(o, mine)).collect::<Vec<_>>(),
        });
        let confirm = if s.confirm_deadline_unix_ms == 0 {
            "none".to_string()
        } else {
            format!("rolls back at {}", unix_ms_text(s.confirm_deadline_unix_ms))
        };
        let rows = vec![
            vec!["Daemon".to_string(), format!("efbd {}", s.daemon_version)],
            vec![
                "Model".into(),
                format!("{} {}", hello.module_name, hello.module_revision),
            ],
            vec!["Datastore".into(), s.datastore],
            vec!["Uptime".into(), format!("{} s", s.uptime_seconds)],
            vec!["Running commit".into(), s.running_commit_id.to_string()],
            vec!["Commit confirmed".into(), confirm],
            vec!["Sessions".into(), sessions_text(&s.open_sessions)],
            vec!["Chip".into(), s.chip],
            vec!["Manual modes".into(), manual_modes_text(&s.manual_modes)],
        ];
        Ok(Output::facts(efb_text_table::align(&rows, &[]), data))
    }
}

/// `3: alice (uncommitted changes), bob, carol`: who else may commit soon.
fn sessions_text(open: &[efb_mgmt_proto::v1::SessionSummary]) -> String {
    let who: Vec<String> = open
        .iter()
        .map(|s| {
            if s.uncommitted {
                format!("{} (uncommitted changes)", s.user)
            } else {
                s.user.clone()
            }
        })
        .collect();
    match who.as_slice() {
        [] => "0".to_string(),
        _ => format!("{}: {}", who.len(), who.join(", ")),
    }
}

/// Units an operator took out of `auto`: in bypass their sessions skip the filters.
fn manual_modes_text(modes: &[efb_mgmt_proto::v1::UnitMode]) -> String {
    if modes.is_empty() {
        return "none: every unit follows liveness (auto)".to_string();
    }
    modes
        .iter()
        .map(|m| format!("{} {}", m.unit, m.mode))
        .collect::<Vec<_>>()
        .join(", ")
}

fn session_json(s: &efb_mgmt_proto::v1::SessionSummary, mine: u64) -> Json {
    serde_json::json!({
        "session": s.session, "user": s.user, "from": s.from, "age-seconds": s.age_seconds,
        "idle-seconds": s.idle_seconds, "uncommitted": s.uncommitted,
        "yours": s.session == mine, "your-account": s.yours,
    })
}

/// `45 s`, `3 min`, `2 h 5 min`: ages and idle times as people say them.
fn idle_text(seconds: u64) -> String {
    match seconds {
        s if s < 60 => format!("{s} s"),
        s if s < 3600 => format!("{} min", s / 60),
        s => format!("{} h {} min", s / 3600, s % 3600 / 60),
    }
}

/// What `rollback ?` says of a commit: `2026-12-01T17:01:02Z by alice: new flows`.
pub(super) fn rollback_help(c: &efb_mgmt_proto::v1::CommitInfo) -> String {
    let mut said = format!("{} by {}", c.time, c.user);
    if c.kind != "commit" {
        said.push_str(&format!(" ({})", c.kind));
    }
    if !c.comment.is_empty() {
        said.push_str(&format!(": {}", c.comment));
    }
    said
}
