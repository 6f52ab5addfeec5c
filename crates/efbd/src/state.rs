//! Operational state, served through the same model as configuration: the running
//! configuration plus the `config false` values the daemon actually knows. What it does not
//! know (pair liveness before keep-alives run, counters when the chip is not reachable) is
//! left out, so that clients show it as unknown rather than made up.

use efb_balancing::{BypassMode, LiveState, Session};
use efb_datastore::Running;
use efb_yang::path::quote;
use efb_yang::rpc::{self, Input};
use efb_yang::{DataPath, DataTree, Problem, Schema};
use tonic::{Code, Status};
use tracing::info;

use std::collections::BTreeMap;

use efb_liveness::PairState;

use crate::chip::Counters;
use crate::errors;
use crate::liveness;
use crate::owner::{OwnerState, log_unit_changes};

const BALANCER: &str = "/ecofilter-balancer:ecofilter-balancer";

/// What the daemon knows beyond the configuration.
#[derive(Clone, Copy)]
pub struct Known<'a> {
    pub live: &'a LiveState,
    /// As read from the chip for this request, if it was.
    pub counters: Option<&'a Counters>,
    /// Every probed pair.
    pub pairs: &'a [PairState],
}

/// Sets leaves of `tree` by path and text; a value the schema refuses is left out.
fn putter<'a>(schema: &'a Schema, tree: &'a mut DataTree) -> impl FnMut(String, &str) + 'a {
    move |path: String, text: &str| {
        if let Ok(path) = DataPath::parse(schema, &path)
            && let Some(node) = path.node()
            && let Ok(value) = schema.value(node, text)
        {
            let _ = tree.set(schema, &path, Some(value));
        }
    }
}

/// An operational tree with the chip's counters put in.
pub fn with_counters(schema: &Schema, tree: &DataTree, counters: &Counters) -> DataTree {
    let mut tree = tree.clone();
    put_counters(counters, &mut putter(schema, &mut tree));
    tree
}

/// Running configuration plus known state.
pub fn operational_tree(schema: &Schema, running: &Running, known: Known<'_>) -> DataTree {
    let mut tree = running.tree.clone();
    let mut put = putter(schema, &mut tree);
    put(
        format!("{BALANCER}/balancing-config-hash"),
        &efb_balancing::config_hash(&running.config),
    );
    let statuses = liveness::unit_statuses(&running.config, known.live);
    for (unit, (active, live_pairs)) in &statuses {
        let state = format!("{BALANCER}/ecofilter-unit[name={}]/state", quote(unit));
        put(
            format!("{state}/bypass-mode"),
            known.live.mode(unit).as_str(),
        );
        put(
            format!("{state}/status"),
            liveness::unit_status_name(*active),
        );
        put(format!("{state}/active-pairs"), &live_pairs.to_string());
    }
    put_pairs(known.pairs, &statuses, &mut put);
    if let Some(counters) = known.counters {
        put_counters(counters, &mut put);
    }
    drop(put);
    tree
}

/// Pair state under the unit, and the same seen per port under /liveness/profile-status.
fn put_pairs(
    pairs: &[PairState],
    statuses: &BTreeMap<String, (bool, usize)>,
    put: &mut impl FnMut(String, &str),
) {
    for p in pairs {
        let state = format!(
            "{BALANCER}/ecofilter-unit[name={}]/pair[name={}]/state",
            quote(&p.unit),
            quote(&p.pair)
        );
        put(format!("{state}/status"), p.status.as_str());
        put(format!("{state}/probes-lost"), &p.probes_lost().to_string());
        put(format!("{state}/status-changes"), &p.changes.to_string());
        // A keep-alive that left by the WAN port came back on the LAN side: "to LAN".
        let [out_of_lan, out_of_wan] = p.time_on_path_ns;
        if let Some(ns) = out_of_wan {
            put(format!("{state}/time-on-path-to-lan-ns"), &ns.to_string());
        }
        if let Some(ns) = out_of_lan {
            put(format!("{state}/time-on-path-to-wan-ns"), &ns.to_string());
        }
        if let Some(when) = p.last_change {
            put(
                format!("{state}/last-change"),
                &humantime::format_rfc3339_millis(when).to_string(),
            );
        }
        let unit = format!(
            "/ecofilter-balancer:liveness/profile-status/ecofilter-unit[name={}]",
            quote(&p.unit)
        );
        put(format!("{unit}/profile"), &p.profile);
        if let Some((active, _)) = statuses.get(&p.unit) {
            put(
                format!("{unit}/status"),
                liveness::unit_status_name(*active),
            );
        }
        let pair = format!("{unit}/pair[name={}]", quote(&p.pair));
        put(format!("{pair}/status"), p.status.as_str());
        for (side, sent_out_of, back_on) in [("lan", 0, 1), ("wan", 1, 0)] {
            let port = format!("{pair}/port[name={}]", quote(&p.ports[sent_out_of]));
            put(format!("{port}/side"), side);
            put(
                format!("{port}/probes-sent"),
                &p.sent[sent_out_of].to_string(),
            );
            put(
                format!("{port}/probes-lost"),
                &p.lost[sent_out_of].to_string(),
            );
            // What came back on this port left by the other one.
            if let Some(ns) = p.time_on_path_ns[back_on] {
                put(format!("{port}/time-on-path-ns"), &ns.to_string());
            }
        }
    }
}

fn put_counters(counters: &Counters, put: &mut impl FnMut(String, &str)) {
    for (flow, entries) in &counters.entries {
        let state = format!("{BALANCER}/flow[name={}]/state", quote(flow));
        put(format!("{state}/entries"), &entries.to_string());
        // Unread counters stay unknown; read ones of a flow no packet hit are zero.
        if let Some(flows) = &counters.flows {
            let (packets, bytes) = flows.get(flow).copied().unwrap_or_default();
            put(format!("{state}/packets"), &packets.to_string());
            put(format!("{state}/bytes"), &bytes.to_string());
        }
    }
    for (port, c) in &counters.ports {
        let state = format!("/ecofilter-balancer:ports/port[name={}]/state", quote(port));
        put(
            format!("{state}/oper-status"),
            if c.up { "up" } else { "down" },
        );
        for (leaf, value) in [
            ("in-frames", c.in_frames),
            ("in-bytes", c.in_bytes),
            ("in-discards", c.in_discards),
            ("out-frames", c.out_frames),
            ("out-bytes", c.out_bytes),
        ] {
            put(format!("{state}/counters/{leaf}"), &value.to_string());
        }
    }
}

/// Runs an operation of the model.
pub fn call(
    state: &mut OwnerState,
    name: &str,
    input: &serde_json::Value,
) -> Result<serde_json::Value, Status> {
    let schema = state.datastore.schema().clone();
    let params = rpc::parse_input(&schema, name, input).map_err(|p| {
        let code = if p.iter().any(|x| x.message.starts_with("no such operation")) {
            Code::Unimplemented
        } else {
            Code::InvalidArgument
        };
        errors::problems(code, &p)
    })?;
    let output = match name {
        "set-bypass-ecofilter-unit" => set_bypass(state, &params)?,
        "lookup-session" => lookup_session(state, &params)?,
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
    let config = state.datastore.running().config.clone();
    let units: Vec<String> = match text(params, "ecofilter-unit") {
        Some(unit) if config.units.contains_key(unit) => vec![unit.to_string()],
        Some(unit) => {
            let known: Vec<&str> = config.units.keys().map(String::as_str).collect();
            return Err(errors::problems(
                Code::NotFound,
                &[Problem::new(
                    "/ecofilter-balancer:set-bypass-ecofilter-unit/ecofilter-unit",
                    format!("no unit {unit}; units are: {}", known.join(", ")),
                )],
            ));
        }
        None => config.units.keys().cloned().collect(),
    };
    let previous = state.live.clone();
    let before = liveness::unit_statuses(&config, &state.live);
    for unit in &units {
        if mode == BypassMode::Auto {
            state.live.modes.remove(unit);
        } else {
            state.live.modes.insert(unit.clone(), mode);
        }
    }
    if let Err(e) = state.program_live() {
        state.live = previous;
        return Err(Status::unavailable(e));
    }
    for unit in units {
        let old = previous.mode(&unit);
        info!(unit = %unit, old = old.as_str(), new = mode.as_str(), "bypass mode set");
    }
    let reason = format!("bypass mode set to {}", mode.as_str());
    log_unit_changes(
        &before,
        &liveness::unit_statuses(&config, &state.live),
        &reason,
    );
    Ok(serde_json::json!({}))
}

fn lookup_session(state: &mut OwnerState, params: &Input) -> Result<serde_json::Value, Status> {
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
    let config = state.datastore.running().config.clone();
    if let Some(link) = &session.link
        && !config.links.contains_key(link)
    {
        let known: Vec<&str> = config.links.keys().map(String::as_str).collect();
        return Err(Status::not_found(format!(
            "link {link}: no such link; links are: {}",
            known.join(", ")
        )));
    }
    let found = efb_balancing::lookup_session(&config, &session, &state.live)
        .map_err(|e| Status::invalid_argument(e.to_string()))?;
    let mut output = serde_json::to_value(&found).map_err(|e| Status::internal(e.to_string()))?;
    // The pair's status as keep-alives found it; a pair of a unit without a liveness
    // profile is not probed, and its status is not known.
    let status = match (&found.unit, &found.pair, &state.liveness) {
        (Some(unit), Some(pair), Some(liveness)) => liveness
            .pairs()
            .into_iter()
            .find(|p| &p.unit == unit && &p.pair == pair)
            .map(|p| p.status.as_str()),
        _ => None,
    };
    if let Some(object) = output.as_object_mut() {
        object.remove("pair-live");
        if let Some(status) = status {
            object.insert("pair-status".into(), status.into());
        }
    }
    Ok(output)
}
