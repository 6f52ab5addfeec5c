//! What a server of the interfaces needs ([`Source`]) and the answers to Capabilities,
//! Get and Set made from it. Replies name single leaves, as Stratum's do, in every
//! encoding: a client reads each value under its full path.

use std::time::{SystemTime, UNIX_EPOCH};

use gnmi_proto::gnmi::{
    GetRequest, GetResponse, ModelData, Notification, SetRequest, SetResponse, Update,
    UpdateResult, get_request, update_result,
};
use tokio::sync::watch;
use tonic::Status;

use crate::encode::{Wire, decode, encode};
use crate::interface::{Interface, Leaf, Part, Value};
use crate::query::{Query, QueryError, modules};

/// Where the interfaces come from: the chip's ports (efb-target) or the box's (efbd).
#[tonic::async_trait]
pub trait Source: Send + Sync + 'static {
    /// Every interface with its state now, in the order they are listed.
    async fn interfaces(&self) -> Result<Vec<Interface>, Status>;

    /// Changes each time a leaf that changes by events (enabled, oper-status...) may
    /// have changed: ON_CHANGE subscriptions read the interfaces again then.
    fn events(&self) -> watch::Receiver<u64>;

    /// Sets `config/enabled` of the named interfaces, all or none.
    async fn set_enabled(&self, changes: &[(String, bool)]) -> Result<(), Status>;
}

impl From<QueryError> for Status {
    fn from(e: QueryError) -> Status {
        Status::invalid_argument(e.to_string())
    }
}

pub fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or_default()
}

/// The models served, for Capabilities, with their organization and version.
pub fn models() -> Vec<ModelData> {
    modules()
        .into_iter()
        .map(|name| ModelData {
            name: name.into(),
            organization: "OpenConfig working group".into(),
            version: crate::query::MODULES
                .iter()
                .find(|(module, _)| *module == name)
                .map(|(_, version)| version.to_string())
                .unwrap_or_default(),
        })
        .collect()
}

/// A leaf's value of one interface.
pub struct LeafValue<'a> {
    pub interface: &'a str,
    pub leaf: &'static Leaf,
    pub value: Value,
}

/// The values of the leaves `query` covers, of the interfaces it names. `keep` chooses
/// among the leaves (a data type, counters only...).
pub fn values<'a>(
    query: &Query,
    interfaces: &'a [Interface],
    keep: impl Fn(&Leaf) -> bool,
) -> Vec<LeafValue<'a>> {
    let mut out = Vec::new();
    for interface in interfaces.iter().filter(|i| query.names_interface(&i.name)) {
        for leaf in query.leaves().filter(|l| keep(l)) {
            if let Some(value) = (leaf.read)(interface) {
                out.push(LeafValue {
                    interface: &interface.name,
                    leaf,
                    value,
                });
            }
        }
    }
    out
}

/// The values as updates under full leaf paths.
pub fn updates(
    query: &Query,
    interfaces: &[Interface],
    wire: Wire,
    keep: impl Fn(&Leaf) -> bool,
) -> Vec<Update> {
    values(query, interfaces, keep)
        .into_iter()
        .map(|v| Update {
            path: Some(query.path_of(v.interface, v.leaf)),
            val: Some(encode(&v.value, wire)),
            ..Update::default()
        })
        .collect()
}

fn part_filter(data_type: i32) -> Result<fn(&Leaf) -> bool, Status> {
    match get_request::DataType::try_from(data_type) {
        Ok(get_request::DataType::All) => Ok(|_| true),
        Ok(get_request::DataType::Config) => Ok(|l| l.part == Part::Config),
        Ok(get_request::DataType::State) => Ok(|l| l.part != Part::Config),
        Ok(get_request::DataType::Operational) => Ok(|l| l.part == Part::Operational),
        Err(_) => Err(Status::invalid_argument(format!(
            "unknown data type {data_type}: use ALL, CONFIG, STATE or OPERATIONAL"
        ))),
    }
}

/// Get: one notification per path asked, NOT_FOUND when a path names no interface.
pub async fn get(source: &dyn Source, request: &GetRequest) -> Result<GetResponse, Status> {
    let wire = Wire::of(request.encoding)?;
    let keep = part_filter(request.r#type)?;
    let queries = queries(request.prefix.as_ref(), &request.path)?;
    let interfaces = source.interfaces().await?;
    let timestamp = now_ns();
    let mut notification = Vec::new();
    for query in &queries {
        let update = updates(query, &interfaces, wire, keep);
        if update.is_empty() && query.name.is_some() {
            return Err(Status::not_found(format!(
                "{}: no interface {:?} (interfaces: {})",
                query.text(),
                query.name.as_deref().unwrap_or_default(),
                names(&interfaces)
            )));
        }
        notification.push(Notification {
            timestamp,
            update,
            ..Notification::default()
        });
    }
    Ok(GetResponse {
        notification,
        ..GetResponse::default()
    })
}

fn names(interfaces: &[Interface]) -> String {
    let shown: Vec<&str> = interfaces.iter().take(8).map(|i| i.name.as_str()).collect();
    let more = interfaces.len().saturating_sub(shown.len());
    if more > 0 {
        format!("{} and {more} more", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

/// The queries of a request's paths (the root when there are none).
pub fn queries(
    prefix: Option<&gnmi_proto::gnmi::Path>,
    paths: &[gnmi_proto::gnmi::Path],
) -> Result<Vec<Query>, Status> {
    if paths.is_empty() {
        return Ok(vec![Query::new(prefix, None)?]);
    }
    paths
        .iter()
        .map(|p| Query::new(prefix, Some(p)).map_err(Status::from))
        .collect()
}

/// Set: only `config/enabled` of an interface (what admin-status follows), by update or
/// replace; all or nothing.
pub async fn set(source: &dyn Source, request: &SetRequest) -> Result<SetResponse, Status> {
    if !request.delete.is_empty() {
        return Err(Status::invalid_argument(
            "delete is not served: set /interfaces/interface[name=NAME]/config/enabled to \
             false to take an interface down",
        ));
    }
    let mut changes = Vec::new();
    let mut response = Vec::new();
    for (op, update) in request
        .replace
        .iter()
        .map(|u| (update_result::Operation::Replace, u))
        .chain(
            request
                .update
                .iter()
                .map(|u| (update_result::Operation::Update, u)),
        )
    {
        changes.push(enabled_change(request.prefix.as_ref(), update)?);
        response.push(UpdateResult {
            path: update.path.clone(),
            op: op as i32,
            ..UpdateResult::default()
        });
    }
    source.set_enabled(&changes).await?;
    Ok(SetResponse {
        prefix: request.prefix.clone(),
        response,
        timestamp: now_ns(),
        ..SetResponse::default()
    })
}

fn enabled_change(
    prefix: Option<&gnmi_proto::gnmi::Path>,
    update: &Update,
) -> Result<(String, bool), Status> {
    let query = Query::new(prefix, update.path.as_ref())?;
    let refuse = || {
        Status::invalid_argument(format!(
            "{}: only /interfaces/interface[name=NAME]/config/enabled (a boolean) may be set",
            query.text()
        ))
    };
    let mut leaves = query.leaves();
    let (Some(leaf), None) = (leaves.next(), leaves.next()) else {
        return Err(refuse());
    };
    let Some(name) = query.name.clone() else {
        return Err(refuse());
    };
    match (leaf.path, update.val.as_ref().and_then(decode)) {
        (["config", "enabled"], Some(Value::Bool(enabled))) => Ok((name, enabled)),
        _ => Err(refuse()),
    }
}
