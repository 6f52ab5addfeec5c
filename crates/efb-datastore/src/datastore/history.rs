//! Reading history: the configuration a commit left, and what a commit changed.

use super::*;

impl Datastore {
    /// The configuration as commit `index` of history left it (0: running, also when
    /// history is empty). Only what history lists: the configuration before the oldest
    /// commit is not one anybody committed to come back to (before the boot commit it is
    /// the empty configuration).
    pub fn configuration_at(&self, index: usize) -> Result<DataTree, DatastoreError> {
        self.in_history(index)?;
        self.configuration_before(index)
    }

    /// [`Self::configuration_at`] with what that configuration kept inactive.
    pub fn written_at(&self, index: usize) -> Result<Written, DatastoreError> {
        self.in_history(index)?;
        self.written_before(index)
    }

    /// Refuses a commit number history does not list, saying which it does.
    pub(super) fn in_history(&self, index: usize) -> Result<(), DatastoreError> {
        let held = self.history.len();
        if index == 0 || index < held {
            return Ok(());
        }
        let listed = match held {
            0 | 1 => "only rollback 0 (the running configuration)".to_string(),
            _ => format!(
                "rollback 0 (the running configuration) to rollback {}",
                held - 1
            ),
        };
        Err(DatastoreError::NotFound(format!(
            "rollback {index}: no such commit; history holds {held} commit{}: {listed}",
            if held == 1 { "" } else { "s" }
        )))
    }

    /// The configuration after reverting the `index` newest commits of history; `index`
    /// may be the whole history (the rollback of an unconfirmed first commit needs that).
    pub(super) fn configuration_before(&self, index: usize) -> Result<DataTree, DatastoreError> {
        self.written_before(index).map(|(tree, _)| tree)
    }

    /// [`Self::configuration_before`] with what it kept inactive.
    pub(super) fn written_before(&self, index: usize) -> Result<Written, DatastoreError> {
        if index > self.history.len() {
            return Err(DatastoreError::NotFound(format!(
                "history holds {} commits, not {index}",
                self.history.len()
            )));
        }
        let schema = self.schema().clone();
        let mut tree = self.running.tree.clone();
        let mut inactive = self.running.inactive.clone();
        for entry in self.store.history()?.iter().take(index) {
            revert(&schema, &mut tree, entry)?;
            if let Some(change) = &entry.inactive {
                inactive = Inactive::from_json(&schema, &change.before)?;
            }
        }
        Ok((tree, inactive))
    }

    /// The path-level changes commit `index` made.
    pub fn commit_changes(&self, index: usize) -> Result<Vec<Change>, DatastoreError> {
        if index >= self.history.len() {
            return Err(DatastoreError::NotFound(format!(
                "commit {index}: no such commit in history ({})",
                match self.history.len() {
                    0 => "history is empty".to_string(),
                    n => format!("0 to {}", n - 1),
                }
            )));
        }
        let after = self.configuration_before(index)?;
        let entries = self.store.history()?;
        let entry = entries
            .get(index)
            .ok_or_else(|| DatastoreError::NotFound(format!("no commit {index} in history")))?;
        let mut before = after.clone();
        revert(self.schema(), &mut before, entry)?;
        Ok(diff::diff(self.schema(), &before, &after))
    }

    pub fn history(&self) -> Vec<CommitInfo> {
        self.history.iter().cloned().collect()
    }

    // ----- commit -----
}
