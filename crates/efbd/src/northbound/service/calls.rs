//! The model's operations (`request ...`), called with JSON input.

use efb_mgmt_proto::v1::*;
use tonic::Status;

use super::Service;
use crate::northbound::errors::bounded;
use crate::northbound::rpcs;

impl Service {
    /// Runs the operation on the owner; empty input is no input (JSON null).
    pub(super) async fn call_rpc(&self, request: CallRequest) -> Result<CallReply, Status> {
        let input: serde_json::Value = if request.input_json.trim().is_empty() {
            serde_json::Value::Null
        } else {
            serde_json::from_str(&request.input_json)
                .map_err(|e| bounded(Status::invalid_argument(format!("input is not JSON: {e}"))))?
        };
        let name = request.rpc;
        let output = self
            .run("Call", move |s| rpcs::call(s, &name, &input))
            .await?;
        Ok(CallReply {
            output_json: output.to_string(),
        })
    }
}
