//! A commit (or a check) and its reply: what it changed, its warnings and consequences,
//! and the audit's words for it.

use std::time::Duration;

use efb_chip::ChipWrites;
use efb_datastore::CommitRequest as DsCommit;
use efb_mgmt_proto::v1 as proto;
use efb_mgmt_proto::v1::*;
use efb_yang::validate::Scope;
use tonic::Status;

use super::{Service, problem, unix_ms};
use crate::northbound::errors::{bounded, status};
use crate::owner::{Candidate, Commit, CommitRefused, Committed, Request as R};
use crate::record::events::Origin;
use efb_northbound::caller::Caller;

impl Service {
    pub(super) async fn commit_reply(
        &self,
        caller: &Caller,
        request: CommitRequest,
    ) -> Result<CommitReply, Status> {
        let session = request.session;
        let ds_request = DsCommit {
            comment: Some(request.comment).filter(|c| !c.is_empty()),
            confirm_timeout: (request.confirm_seconds > 0)
                .then(|| Duration::from_secs(u64::from(request.confirm_seconds))),
            check_only: request.check_only,
            offline: request.offline,
        };
        let commit = Box::new(Commit {
            origin: Origin::Shell,
            candidate: Candidate::Session(session),
            request: ds_request,
        });
        let committed = self
            .ask("Commit", (caller, session), |to| R::Commit(commit, to))
            .await?;
        let Committed {
            outcome,
            moves,
            hashes,
        } = committed.map_err(refused)?;
        // Asked for by a check; a commit does not pay it (15 ms at 100 000 flows, cargo bench
        // -p efb-balancing --bench moves).
        let consequences = outcome
            .configs()
            .filter(|_| request.check_only)
            .map(|(b, a)| efb_balancing::flow_consequences(b, a))
            .unwrap_or_default();
        let (config_hash_before, config_hash_after) = hashes;
        let digest = outcome.digest().clone();
        Ok(CommitReply {
            commit_id: outcome.commit_id.unwrap_or(0),
            changes: digest.count as u64,
            consequences,
            earlier_warnings: outcome.earlier_warnings as u32,
            warnings: outcome.warnings.into_iter().map(problem).collect(),
            change_lines: digest.lines,
            change_lines_total: digest.count as u64,
            confirm_deadline_unix_ms: unix_ms(outcome.confirm_deadline),
            confirmed_commit_id: outcome.confirmed.unwrap_or(0),
            validation_scope: validation_scope(outcome.scope),
            chip_writes: Some(chip_writes(outcome.chip)),
            config_hash_before,
            config_hash_after,
            change_summary: digest.summary,
            moves: moves
                .into_iter()
                .map(|m| BucketMoves {
                    unit: m.unit,
                    moved: m.moved as u64,
                    buckets: m.buckets as u64,
                    why: m.why,
                })
                .collect(),
        })
    }
}

/// A refused commit as the management API says it.
fn refused(e: CommitRefused) -> Status {
    match e {
        CommitRefused::Datastore(e) => status(e),
        waiting @ CommitRefused::ConfirmWaiting(_) => {
            bounded(Status::failed_precondition(waiting.to_string()))
        }
    }
}

/// What a commit validated, in words: flows the change does not concern are not validated
/// again (see `efb_yang::validate::validate_change`).
pub(super) fn validation_scope(scope: Scope) -> String {
    match scope {
        Scope::Full => "the whole configuration".to_string(),
        Scope::Entries(0) => "everything but the flows, none of which it concerns".to_string(),
        Scope::Entries(1) => "everything but the flows, and the 1 flow it concerns".to_string(),
        Scope::Entries(n) => format!("everything but the flows, and the {n} flows it concerns"),
    }
}

/// The chip's writes as the management API carries them.
fn chip_writes(writes: ChipWrites) -> proto::ChipWrites {
    use proto::chip_writes::Outcome;
    let mut reply = proto::ChipWrites::default();
    match writes {
        ChipWrites::NoChip => reply.set_outcome(Outcome::NoChip),
        ChipWrites::Written { entries } => {
            reply.set_outcome(Outcome::Written);
            reply.entries = entries as u64;
        }
        ChipWrites::Offline => reply.set_outcome(Outcome::Offline),
        ChipWrites::Planned(planned) => {
            reply.set_outcome(Outcome::Planned);
            reply.entries = planned.writes as u64;
            reply.tables = planned
                .per_table
                .into_iter()
                .map(|t| proto::TableWrites {
                    table: t.table,
                    update: t.update.as_str().to_string(),
                    count: t.count as u64,
                })
                .collect();
            reply.listed = planned
                .listed
                .into_iter()
                .map(|w| proto::EntryWrite {
                    source: w.source,
                    update: w.update.as_str().to_string(),
                    table: w.table,
                })
                .collect();
        }
        ChipWrites::NotCompiled(why) => {
            reply.set_outcome(Outcome::NotCompiled);
            reply.not_compiled = why;
        }
    }
    reply
}
