//! Writing a plan to the chip: phase by phase in batches, and undoing what was written
//! when the chip refuses an update, with the refusal in the configuration's words.

use efb_chip::{ChipError, Refusal, Refusals};
use tracing::error;

use super::{Counts, Inner};
use crate::client::WriteFailure;
use crate::plan::{Op, Plan, Tables};

impl Inner {
    /// Writes a plan phase by phase, in batches. If an update is refused, every update
    /// already applied is undone (in reverse order) and the refusal is returned, naming the
    /// configuration path of the entry.
    pub(super) async fn write_plan(&mut self, plan: &Plan) -> Result<(), ChipError> {
        let batch = self.settings.batch.max(1);
        let mut applied: Vec<Op> = Vec::new();
        for phase in &plan.phases {
            for chunk in phase.chunks(batch) {
                let conn = self
                    .conn
                    .as_mut()
                    .ok_or_else(|| ChipError::Lost("the connection to the chip was lost".into()))?;
                match conn.write(chunk).await {
                    Ok(()) => {
                        Counts::add(&self.counts.entries_written, chunk.len());
                        applied.extend(chunk.iter().cloned());
                    }
                    Err(failure) => {
                        let (done, error) = describe_failure(&self.tables, chunk, failure);
                        Counts::add(&self.counts.entries_written, done.len());
                        if !matches!(error, ChipError::Lost(_)) {
                            Counts::add(&self.counts.refusals, 1);
                        }
                        applied.extend(done);
                        self.undo(applied).await;
                        return Err(error);
                    }
                }
            }
        }
        Ok(())
    }

    pub(super) async fn undo(&mut self, applied: Vec<Op>) {
        let inverse: Vec<Op> = applied.iter().rev().map(Op::inverse).collect();
        let Some(conn) = self.conn.as_mut() else {
            error!(
                "cannot undo {} writes: not connected; the next reconcile will",
                inverse.len()
            );
            return;
        };
        for chunk in inverse.chunks(self.settings.batch.max(1)) {
            if let Err(failure) = conn.write(chunk).await {
                error!(?failure.overall, "undoing a refused commit failed; the next reconcile will repair the chip");
                return;
            }
            Counts::add(&self.counts.entries_written, chunk.len());
        }
    }
}

/// The updates of a failed batch that were applied, and why the others were not.
fn describe_failure(tables: &Tables, chunk: &[Op], failure: WriteFailure) -> (Vec<Op>, ChipError) {
    if let Some(status) = failure.overall {
        return (Vec::new(), whole_write_failed(&status));
    }
    let mut done = Vec::new();
    let mut refused = Vec::new();
    for (op, outcome) in chunk.iter().zip(failure.errors) {
        match outcome {
            None => done.push(op.clone()),
            Some((code, message)) => refused.push((
                code,
                Refusal {
                    path: op.entry().source.clone(),
                    update: op.kind(),
                    table: tables.name(op.entry().entry.table_id).to_string(),
                    code: format!("{code:?}"),
                    message,
                },
            )),
        }
    }
    (done, refusal_error(refused))
}

/// A full table when room is the only reason given: P4Runtime says RESOURCE_EXHAUSTED for
/// a table without room, and ABORTED for the updates of an atomic batch left undone
/// because of another.
fn refusal_error(refused: Vec<(tonic::Code, Refusal)>) -> ChipError {
    use tonic::Code;
    let full = refused
        .iter()
        .find(|(code, _)| *code == Code::ResourceExhausted)
        .map(|(_, r)| r.table.clone());
    let other_reason = refused
        .iter()
        .any(|(code, _)| !matches!(code, Code::ResourceExhausted | Code::Aborted));
    // The first few say why; a full table would otherwise print a line per flow.
    let refusals = Refusals {
        more: refused.len().saturating_sub(REFUSALS_SHOWN),
        shown: refused
            .into_iter()
            .take(REFUSALS_SHOWN)
            .map(|(_, r)| r)
            .collect(),
    };
    match full {
        Some(table) if !other_reason => ChipError::TableFull { table, refusals },
        _ => ChipError::Refused(refusals),
    }
}

/// A write the chip answered as a whole: the chip gone, or efbd no longer its primary
/// controller, is not a refusal of the configuration (the words stay those of a refusal).
fn whole_write_failed(status: &tonic::Status) -> ChipError {
    let message = status.message().to_string();
    match status.code() {
        tonic::Code::Unavailable
        | tonic::Code::DeadlineExceeded
        | tonic::Code::Cancelled
        | tonic::Code::PermissionDenied => {
            ChipError::Lost(format!("the chip refused the write: {message}"))
        }
        _ => ChipError::WriteRefused(message),
    }
}

/// Refused updates named in a commit's error.
const REFUSALS_SHOWN: usize = 10;
