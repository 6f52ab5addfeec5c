//! `commit` and its options (check, confirmed [MINUTES], comment, offline, and-quit), and
//! what it says: warnings, the consequences on the chip, the commit's number.

use efb_mgmt_proto::v1::CommitRequest;
use efb_yang::setlines;

use super::{Flow, Output, Result, Shell, fail, unix_ms_text};
use crate::commit_report;
use crate::complete::Mode;

impl Shell {
    pub(super) fn commit(&mut self, options: &[String]) -> Result<(Output, Flow)> {
        let request = CommitOptions::parse(options)?;
        let reply = self.client().commit(CommitRequest {
            comment: request.comment.clone(),
            check_only: request.check,
            confirm_seconds: request.confirm_minutes.map_or(0, |m| m * 60),
            offline: request.offline,
            ..CommitRequest::default()
        })?;
        let mut lines = Vec::new();
        for w in &reply.warnings {
            let said = format!("{}: {}", w.path, w.message);
            lines.push(format!(
                "warning: {}",
                setlines::paths_in_words(self.schema, &said)
            ));
        }
        if reply.earlier_warnings > 0 {
            let n = reply.earlier_warnings;
            lines.push(format!(
                "{n} warning{} told at an earlier commit still hold{} (commit check lists them)",
                if n == 1 { "" } else { "s" },
                if n == 1 { "s" } else { "" }
            ));
        }
        if request.check {
            lines.extend(
                commit_report::check(&reply)
                    .iter()
                    .map(|l| setlines::paths_in_words(self.schema, l)),
            );
            return Ok((Output::lines(lines), Flow::Continue));
        }
        if reply.commit_id != 0 {
            lines.extend(commit_report::consequences(
                &reply,
                commit_report::Mood::Commit,
            ));
        }
        lines.extend(commit_report::chip(&reply));
        if reply.confirmed_commit_id != 0 {
            lines.push(format!("commit {} confirmed", reply.confirmed_commit_id));
        }
        if reply.commit_id == 0 {
            if reply.confirmed_commit_id == 0 {
                lines.push("nothing to commit: the candidate is the running configuration".into());
            }
        } else {
            lines.push(format!(
                "commit complete (commit {}): {}",
                reply.commit_id,
                commit_report::counted_changes(reply.changes)
            ));
        }
        if reply.confirm_deadline_unix_ms != 0 {
            lines.push(format!(
                "commit confirmed: rolls back at {} unless confirmed (commit again to confirm)",
                unix_ms_text(reply.confirm_deadline_unix_ms)
            ));
        }
        self.exit_warned = false;
        if request.and_quit {
            self.mode = Mode::Operational;
            lines.push("Exiting configuration mode".into());
        }
        Ok((Output::lines(lines), Flow::Continue))
    }
}

/// `commit` options in any order: check, confirmed [MINUTES], comment "TEXT", offline,
/// and-quit.
struct CommitOptions {
    check: bool,
    offline: bool,
    confirm_minutes: Option<u32>,
    comment: String,
    and_quit: bool,
}

impl CommitOptions {
    fn parse(words: &[String]) -> Result<CommitOptions> {
        let mut options = CommitOptions {
            check: false,
            offline: false,
            confirm_minutes: None,
            comment: String::new(),
            and_quit: false,
        };
        let mut i = 0;
        while i < words.len() {
            match words[i].as_str() {
                "check" => options.check = true,
                "and-quit" => options.and_quit = true,
                "offline" => options.offline = true,
                "confirmed" => {
                    let number = words
                        .get(i + 1)
                        .filter(|w| !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit()));
                    if number.is_some() {
                        i += 1;
                    }
                    // Digits too many for a number are out of range too, not an "option".
                    let minutes = number.map_or(Some(10), |n| n.parse::<u32>().ok());
                    match minutes {
                        Some(m @ 1..=65535) => options.confirm_minutes = Some(m),
                        _ => {
                            return fail(format!(
                                "commit confirmed {}: minutes must be 1 to 65535",
                                efb_yang::text::excerpt(number.map_or("", |n| n.as_str()))
                            ));
                        }
                    }
                }
                "comment" => {
                    let Some(text) = words.get(i + 1) else {
                        return fail("commit comment: expected the comment, in quotes");
                    };
                    options.comment = text.clone();
                    i += 1;
                }
                other => {
                    return fail(format!(
                        "commit: unknown option \"{other}\"; expected check, confirmed [MINUTES], comment \"TEXT\", offline, and-quit"
                    ));
                }
            }
            i += 1;
        }
        if options.check
            && (options.confirm_minutes.is_some() || options.and_quit || options.offline)
        {
            return fail("commit check commits nothing: it takes no other option");
        }
        Ok(options)
    }
}
