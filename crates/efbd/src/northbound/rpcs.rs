//! The model's operations (YANG `rpc`s): their input checked against the schema and made
//! into the owner's request, the answer shaped as the model's output.

use efb_balancing::{BalancingError, BypassMode, Session};
use efb_yang::rpc::{self, Input};
use efb_yang::{Problem, Schema};
use tonic::{Code, Status};

use crate::northbound::errors;
use crate::owner::live::{BypassError, SessionRoute};

const SET_BYPASS: &str = "set-bypass-ecofilter-unit";
pub const LOOKUP_SESSION: &str = "lookup-session";

/// An operation of the model, its input read.
pub enum Operation {
    /// The bypass mode of one unit, or of every unit (none).
    SetBypass(Option<String>, BypassMode),
    LookupSession(Session),
}

/// The operation `name` with `input`, checked against the schema.
pub fn operation(
    schema: &Schema,
    name: &str,
    input: &serde_json::Value,
) -> Result<Operation, Status> {
    let params = rpc::parse_input(schema, name, input).map_err(|p| {
        let code = if p.iter().any(|x| x.message.starts_with("no such operation")) {
            Code::Unimplemented
        } else {
            Code::InvalidArgument
        };
        errors::problems(code, &p)
    })?;
    match name {
        SET_BYPASS => {
            let mode = text(&params, "mode")
                .and_then(BypassMode::parse)
                .ok_or_else(|| {
                    Status::invalid_argument("mode: expected auto, bypass or primary")
                })?;
            let unit = text(&params, "ecofilter-unit").map(str::to_string);
            Ok(Operation::SetBypass(unit, mode))
        }
        LOOKUP_SESSION => session(&params).map(Operation::LookupSession),
        other => Err(Status::unimplemented(format!(
            "operation {other} is not implemented"
        ))),
    }
}

fn text<'a>(params: &'a Input, name: &str) -> Option<&'a str> {
    params.get(name).map(|v| v.as_str())
}

/// `set-bypass-ecofilter-unit`'s output (empty), or why the mode was not set.
pub fn bypass_set(result: Result<(), BypassError>) -> Result<serde_json::Value, Status> {
    match result {
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

fn session(params: &Input) -> Result<Session, Status> {
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
    Ok(Session {
        src: parse_ip("src")?,
        dst: parse_ip("dst")?,
        ip_proto: u8::try_from(number("ip-proto")).unwrap_or(0),
        src_port: number("src-port"),
        dst_port: number("dst-port"),
        link: text(params, "link").map(str::to_string),
    })
}

/// `lookup-session`'s output: where the session goes and how keep-alives found its pair.
pub fn route(result: Result<SessionRoute, BalancingError>) -> Result<serde_json::Value, Status> {
    let route = result.map_err(|e| match e {
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
