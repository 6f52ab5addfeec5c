//! The model's operations (YANG `rpc`s): their input checked against the schema, the
//! owner's method that does the work, the answer shaped as the model's output.

use efb_balancing::{BalancingError, BypassMode, Session};
use efb_yang::Problem;
use efb_yang::rpc::{self, Input};
use tonic::{Code, Status};

use crate::northbound::errors;
use crate::owner::OwnerState;
use crate::owner::live::BypassError;

const SET_BYPASS: &str = "set-bypass-ecofilter-unit";
pub const LOOKUP_SESSION: &str = "lookup-session";

/// Runs an operation of the model.
pub fn call(
    state: &mut OwnerState,
    name: &str,
    input: &serde_json::Value,
) -> Result<serde_json::Value, Status> {
    let schema = state.schema().clone();
    let params = rpc::parse_input(&schema, name, input).map_err(|p| {
        let code = if p.iter().any(|x| x.message.starts_with("no such operation")) {
            Code::Unimplemented
        } else {
            Code::InvalidArgument
        };
        errors::problems(code, &p)
    })?;
    let output = match name {
        SET_BYPASS => set_bypass(state, &params)?,
        LOOKUP_SESSION => lookup_session(state, &params)?,
        other => {
            return Err(Status::unimplemented(format!(
                "operation {other} is not implemented"
            )));
        }
    };
    Ok(rpc::shape_output(&schema, name, &output))
}

fn text<'a>(params: &'a Input, name: &str) -> Option<&'a str> {
    params.get(name).map(|v| v.as_str())
}

fn set_bypass(state: &mut OwnerState, params: &Input) -> Result<serde_json::Value, Status> {
    let mode = text(params, "mode")
        .and_then(BypassMode::parse)
        .ok_or_else(|| Status::invalid_argument("mode: expected auto, bypass or primary"))?;
    match state.set_bypass(text(params, "ecofilter-unit"), mode) {
        Ok(()) => Ok(serde_json::json!({})),
        Err(e @ BypassError::NoSuchUnit { .. }) => Err(errors::problems(
            Code::NotFound,
            &[Problem::new(
                format!("/ecofilter-balancer:{SET_BYPASS}/ecofilter-unit"),
                e.to_string(),
            )],
        )),
        Err(BypassError::Chip(e)) => Err(errors::chip(e)),
    }
}

fn lookup_session(state: &OwnerState, params: &Input) -> Result<serde_json::Value, Status> {
    let parse_ip = |name: &str| {
        text(params, name)
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| {
                Status::invalid_argument(format!("{name}: expected an IPv4 or IPv6 address"))
            })
    };
    let number = |name: &str| {
        text(params, name)
            .and_then(|t| t.parse::<u16>().ok())
            .unwrap_or(0)
    };
    let session = Session {
        src: parse_ip("src")?,
        dst: parse_ip("dst")?,
        ip_proto: u8::try_from(number("ip-proto")).unwrap_or(0),
        src_port: number("src-port"),
        dst_port: number("dst-port"),
        link: text(params, "link").map(str::to_string),
    };
    let route = state.lookup(&session).map_err(|e| match e {
        BalancingError::UnknownLink { .. } => Status::not_found(e.to_string()),
        _ => Status::invalid_argument(e.to_string()),
    })?;
    let mut output =
        serde_json::to_value(&route.lookup).map_err(|e| Status::internal(e.to_string()))?;
    if let Some(object) = output.as_object_mut() {
        // The model says how keep-alives found the pair, not whether the chip takes it.
        object.remove("pair-live");
        if let Some(status) = route.pair_status {
            object.insert("pair-status".into(), status.as_str().into());
        }
    }
    Ok(output)
}
