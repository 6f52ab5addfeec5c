//! `clear ... statistics`: baselines taken off the owner's thread, and the audit's words.

use efb_mgmt_proto::v1::*;
use tonic::Status;

use super::Service;
use super::accepted::{COUNTED, known};
use crate::northbound::errors::bounded;
use crate::owner::Request as R;
use crate::owner::baselines::{self, ClearError};
use efb_northbound::caller::Caller;

impl Service {
    /// Takes baselines of the counters now, off the owner's thread (it reads the chip).
    pub(super) async fn clear(
        &self,
        caller: &Caller,
        request: ClearStatisticsRequest,
    ) -> Result<ClearStatisticsReply, Status> {
        let counted = match known("what", request.what, &COUNTED, Counted::as_str_name)? {
            Counted::Ports => baselines::Counted::Ports,
            Counted::Flows => baselines::Counted::Flows,
        };
        let inputs = self
            .ask("ClearStatistics", (caller, 0), R::StateInputs)
            .await?;
        let names = request.names;
        let cleared = tokio::task::spawn_blocking(move || inputs.clear_counters(counted, &names))
            .await
            .map_err(|e| Status::internal(format!("reading the counters: {e}")))?;
        let cleared = cleared.map_err(|e| {
            let code = match e {
                ClearError::NotConfigured { .. } => tonic::Code::NotFound,
                ClearError::NoChip | ClearError::Unreadable { .. } => {
                    tonic::Code::FailedPrecondition
                }
            };
            bounded(Status::new(code, e.to_string()))
        })?;
        tracing::info!(cleared = cleared.len(), "statistics cleared");
        Ok(ClearStatisticsReply { cleared })
    }
}
