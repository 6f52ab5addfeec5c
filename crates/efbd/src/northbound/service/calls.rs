//! The model's operations (`request ...`), called with JSON input.

use efb_mgmt_proto::v1::*;
use efb_northbound::caller::Caller;
use tonic::Status;

use super::Service;
use crate::northbound::errors::bounded;
use crate::northbound::rpcs::{self, Operation};
use crate::owner::Request as R;

impl Service {
    /// Reads the operation's input, asks the owner, shapes its output; empty input is no
    /// input (JSON null).
    pub(super) async fn call_rpc(
        &self,
        caller: &Caller,
        request: CallRequest,
    ) -> Result<CallReply, Status> {
        let input: serde_json::Value = if request.input_json.trim().is_empty() {
            serde_json::Value::Null
        } else {
            serde_json::from_str(&request.input_json)
                .map_err(|e| bounded(Status::invalid_argument(format!("input is not JSON: {e}"))))?
        };
        let name = request.rpc;
        let reader = (caller, 0);
        let output = match rpcs::operation(&self.schema, &name, &input)? {
            Operation::SetBypass(unit, mode) => {
                let set = self.ask("Call", reader, |to| R::SetBypass(unit, mode, to));
                rpcs::bypass_set(set.await?)?
            }
            Operation::LookupSession(session) => {
                let route = self.ask("Call", reader, |to| R::LookupSession(session, to));
                rpcs::route(route.await?)?
            }
        };
        Ok(CallReply {
            output_json: efb_yang::rpc::shape_output(&self.schema, &name, &output).to_string(),
        })
    }
}
