//! Commits have one name, their id (what `commit` prints, history, the audit, the log and
//! gNMI say); `rollback N` keeps Junos's meaning, N commits back from running. The shell
//! turns one into the other and, when a number is of the wrong kind, says both.

use efb_mgmt_proto::v1::CommitInfo;

use super::{Result, ShellError};

/// History as the shell names it: rollback 0 (running) first.
pub(super) struct Numbering(Vec<CommitInfo>);

impl Numbering {
    pub(super) fn new(history: Vec<CommitInfo>) -> Numbering {
        Numbering(history)
    }

    /// The commit whose id is `text` (`show system commit ID`).
    pub(super) fn by_id(&self, command: &str, text: &str) -> Result<&CommitInfo> {
        let id: u64 = text.parse().map_err(|_| {
            ShellError(format!(
                "{command}: \"{}\" is not a commit id; {}",
                efb_yang::text::excerpt(text),
                self.ids()
            ))
        })?;
        self.0.iter().find(|c| c.id == id).ok_or_else(|| {
            let mut message = format!("{command} {id}: no commit has id {id}; {}", self.ids());
            if let Some(back) = self.0.get(id as usize) {
                message.push_str(&format!(
                    "; rollback {id} (commits back from running) is commit {}",
                    back.id
                ));
            }
            ShellError(message)
        })
    }

    /// The commit `rollback N` goes back to.
    pub(super) fn by_rollback(&self, text: &str) -> Result<&CommitInfo> {
        let index: u32 = text.parse().map_err(|_| {
            ShellError(format!(
                "rollback {}: expected how many commits back (0 is running); {}",
                efb_yang::text::excerpt(text),
                self.rollbacks()
            ))
        })?;
        self.0.get(index as usize).ok_or_else(|| {
            let mut message = format!("rollback {index}: {}", self.rollbacks());
            if let Some(commit) = self.0.iter().find(|c| c.id == u64::from(index)) {
                message.push_str(&format!(
                    "; commit {index} (its id) is rollback {}",
                    commit.index
                ));
            }
            ShellError(message)
        })
    }

    fn ids(&self) -> String {
        match (self.0.last(), self.0.first()) {
            (Some(oldest), Some(newest)) if oldest.id != newest.id => format!(
                "history holds commits {} to {} (show system commit lists them)",
                oldest.id, newest.id
            ),
            (Some(only), _) => format!("history holds commit {} only", only.id),
            _ => "history is empty".to_string(),
        }
    }

    fn rollbacks(&self) -> String {
        match self.0.len() {
            0 => "history is empty".to_string(),
            1 => format!(
                "history holds one commit: rollback 0 (commit {})",
                self.0[0].id
            ),
            n => format!(
                "history goes back {} commits: rollback 0 (commit {}) to rollback {} (commit {})",
                n - 1,
                self.0[0].id,
                n - 1,
                self.0[n - 1].id
            ),
        }
    }
}

/// How the shell names a commit of history in one phrase.
pub(super) fn described(commit: &CommitInfo) -> String {
    let comment = if commit.comment.is_empty() {
        String::new()
    } else {
        format!(", \"{}\"", commit.comment)
    };
    format!(
        "commit {} by {} at {}{comment}",
        commit.id, commit.user, commit.time
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn history(ids: &[u64]) -> Numbering {
        Numbering::new(
            ids.iter()
                .enumerate()
                .map(|(index, id)| CommitInfo {
                    index: index as u32,
                    id: *id,
                    ..CommitInfo::default()
                })
                .collect(),
        )
    }

    #[test]
    fn ids_and_rollbacks_name_each_other_when_mistaken() {
        let h = history(&[9, 8, 7]);
        assert_eq!(h.by_id("show system commit", "8").unwrap().index, 1);
        assert_eq!(h.by_rollback("2").unwrap().id, 7);
        let e = h.by_id("show system commit", "1").unwrap_err().0;
        assert_eq!(
            e,
            "show system commit 1: no commit has id 1; history holds commits 7 to 9 (show system commit lists them); rollback 1 (commits back from running) is commit 8"
        );
        let e = h.by_rollback("8").unwrap_err().0;
        assert_eq!(
            e,
            "rollback 8: history goes back 2 commits: rollback 0 (commit 9) to rollback 2 (commit 7); commit 8 (its id) is rollback 1"
        );
        assert!(h.by_rollback("x").is_err());
        assert_eq!(
            history(&[]).by_id("show system commit", "2").unwrap_err().0,
            "show system commit 2: no commit has id 2; history is empty"
        );
    }
}
