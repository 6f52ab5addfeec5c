//! What a server of the interfaces needs ([`Source`]) and the answers to Capabilities,
//! Get and Set made from it. A Get of a container in JSON or JSON_IETF is answered with
//! its subtree as one object; PROTO names single leaves, as Stratum's replies do.

use std::time::{SystemTime, UNIX_EPOCH};

use gnmi_proto::gnmi::{
    GetRequest, GetResponse, ModelData, Notification, SetRequest, SetResponse, TypedValue, Update,
    UpdateResult, get_request, typed_value, update_result,
};
use tokio::sync::watch;
use tonic::Status;

use crate::encode::{Wire, decode, encode, encode_json};
use crate::interface::{Interface, Leaf, Part, Value, speed_identity, speed_of};
use crate::object::{entries, object};
use crate::query::{Node, Query, QueryError, modules};

/// Where the interfaces come from: the chip's ports (efb-target) or the box's (efbd).
#[tonic::async_trait]
pub trait Source: Send + Sync + 'static {
    /// Every interface with its state now, in the order they are listed.
    async fn interfaces(&self) -> Result<Vec<Interface>, Status>;

    /// Changes each time a leaf that changes by events (enabled, oper-status...) may
    /// have changed: ON_CHANGE subscriptions read the interfaces again then.
    fn events(&self) -> watch::Receiver<u64>;

    /// Writes the settings of the named interfaces, all or none.
    async fn set(&self, changes: &[Change]) -> Result<(), Status>;
}

impl From<QueryError> for Status {
    fn from(e: QueryError) -> Status {
        Status::invalid_argument(e.to_string())
    }
}

/// What a client may set on an interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Setting {
    /// `config/enabled`: admin-status.
    Enabled(bool),
    /// `ethernet/config/port-speed`, in Gbit/s, as Stratum takes a port's speed.
    SpeedGbps(u32),
}

/// A setting of one interface.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    pub interface: String,
    pub setting: Setting,
}

/// The leaves a Set may write, as the refusal names them.
const SETTABLE: &str = "config/enabled (a boolean) and ethernet/config/port-speed (an identity \
                        such as openconfig-if-ethernet:SPEED_100GB)";

/// The setting a value of a leaf makes, or why it makes none.
fn setting(path: &[&str], value: &Value) -> Result<Setting, String> {
    match (path, value) {
        (["config", "enabled"], Value::Bool(enabled)) => Ok(Setting::Enabled(*enabled)),
        (["config", "enabled"], _) => Err("enabled takes a boolean".into()),
        (["ethernet", "config", "port-speed"], v) => speed_of(v)
            .filter(|gbps| speed_identity(*gbps).is_some())
            .map(Setting::SpeedGbps)
            .ok_or_else(|| "port-speed takes SPEED_10GB, _25GB, _40GB, _50GB or _100GB".into()),
        _ => Err(format!("{} cannot be set", path.join("/"))),
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

/// A Get's answer to one path: in JSON and JSON_IETF a node that is not a leaf is one
/// object (one per interface below `/interfaces`, as gNMI 2.3.1 asks: the value of a
/// path is its whole subtree); PROTO and paths with wildcards below the interface answer
/// leaf by leaf.
pub fn get_updates(
    query: &Query,
    interfaces: &[Interface],
    wire: Wire,
    keep: impl Fn(&Leaf) -> bool,
) -> Vec<Update> {
    let node = match query.node() {
        Some(node) if wire != Wire::Proto => node,
        _ => return updates(query, interfaces, wire, keep),
    };
    let named = interfaces.iter().filter(|i| query.names_interface(&i.name));
    let top = |key: &str, value: serde_json::Value| {
        let mut object = serde_json::Map::new();
        object.insert(key.into(), value);
        vec![Update {
            path: Some(query.top_path()),
            val: Some(encode_json(&object.into(), wire)),
            ..Update::default()
        }]
    };
    let qualified = |name: &str| match wire {
        Wire::JsonIetf => format!("openconfig-interfaces:{name}"),
        _ => name.to_string(),
    };
    match node {
        Node::Leaf(_) => updates(query, interfaces, wire, keep),
        Node::Root => {
            let mut list = serde_json::Map::new();
            list.insert("interface".into(), entries(interfaces, wire, &keep));
            top(&qualified("interfaces"), list.into())
        }
        Node::Interfaces => top(&qualified("interface"), entries(interfaces, wire, &keep)),
        Node::Container(below) => named
            .filter_map(|interface| {
                let value = object(interface, below, wire, true, &keep)?;
                Some(Update {
                    path: Some(query.node_path(&interface.name, below)),
                    val: Some(encode_json(&value, wire)),
                    ..Update::default()
                })
            })
            .collect(),
    }
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
        if let Some(name) = query.name.as_deref()
            && !interfaces.iter().any(|i| i.name == name)
        {
            return Err(Status::not_found(format!(
                "{}: no interface {name:?} (interfaces: {})",
                query.text(),
                names(&interfaces)
            )));
        }
        let update = get_updates(query, &interfaces, wire, keep);
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

/// Set: the settable leaves of an interface ([`SETTABLE`]), each by its value or by an
/// update of a container above it with a JSON object; all or nothing.
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
        changes.extend(changes_of(request.prefix.as_ref(), update, op)?);
        response.push(UpdateResult {
            path: update.path.clone(),
            op: op as i32,
            ..UpdateResult::default()
        });
    }
    source.set(&changes).await?;
    Ok(SetResponse {
        prefix: request.prefix.clone(),
        response,
        timestamp: now_ns(),
        ..SetResponse::default()
    })
}

/// What an update sets: a settable leaf by its value (in any encoding), or the settable
/// leaves in a JSON object given for a container above them (the interface's own `name`
/// may come along, as a client that read `config` sends it back).
fn changes_of(
    prefix: Option<&gnmi_proto::gnmi::Path>,
    update: &Update,
    op: update_result::Operation,
) -> Result<Vec<Change>, Status> {
    let query = Query::new(prefix, update.path.as_ref())?;
    let refuse = |why: &str| {
        Status::invalid_argument(format!(
            "{}: {why}; only {SETTABLE} of one interface may be set, by value or by an \
             update of a container holding them (config: {{\"openconfig-interfaces:enabled\": \
             BOOL}})",
            query.text()
        ))
    };
    let Some(name) = query.name.clone() else {
        return Err(refuse("name one interface"));
    };
    let value = update.val.as_ref();
    let settings = match query.node() {
        Some(Node::Leaf(leaf)) => match value.and_then(decode) {
            Some(v) => vec![setting(leaf.path, &v).map_err(|why| refuse(&why))?],
            None => return Err(refuse("no value")),
        },
        Some(Node::Container(below)) => {
            if op == update_result::Operation::Replace {
                return Err(refuse(
                    "replace of a container would remove its other leaves, which are not \
                     set here; use update",
                ));
            }
            settings_of_object(value, below, &name).map_err(|why| refuse(&why))?
        }
        _ => return Err(refuse("name one leaf or container")),
    };
    Ok(settings
        .into_iter()
        .map(|setting| Change {
            interface: name.clone(),
            setting,
        })
        .collect())
}

/// The settings a JSON object for the container at `below` holds; members that are not
/// settable are refused by name.
fn settings_of_object(
    value: Option<&TypedValue>,
    below: &[String],
    name: &str,
) -> Result<Vec<Setting>, String> {
    let bytes = match value.and_then(|v| v.value.as_ref()) {
        Some(typed_value::Value::JsonIetfVal(b) | typed_value::Value::JsonVal(b)) => b,
        _ => return Err("a container takes a JSON or JSON_IETF object".into()),
    };
    let object: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
    let mut leaves = Vec::new();
    flatten(below.to_vec(), &object, &mut leaves)?;
    let mut settings = Vec::new();
    for (path, json) in leaves {
        let path: Vec<&str> = path.iter().map(String::as_str).collect();
        let value = match json {
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::String(s) if matches!(path.last(), Some(&"name")) && s == name => {
                continue;
            }
            serde_json::Value::String(s) => Value::Text(s.clone()),
            other => return Err(format!("{} = {other} cannot be set", path.join("/"))),
        };
        settings.push(setting(&path, &value)?);
    }
    if settings.is_empty() {
        return Err("the object sets nothing".into());
    }
    Ok(settings)
}

/// The leaves of a JSON object under their paths (member names without their module).
fn flatten<'a>(
    path: Vec<String>,
    json: &'a serde_json::Value,
    out: &mut Vec<(Vec<String>, &'a serde_json::Value)>,
) -> Result<(), String> {
    let serde_json::Value::Object(members) = json else {
        out.push((path, json));
        return Ok(());
    };
    for (member, value) in members {
        let bare = member.rsplit(':').next().unwrap_or(member);
        let mut below = path.clone();
        below.push(bare.to_string());
        flatten(below, value, out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::leaf_path;

    fn update(path: &[&str], value: TypedValue) -> Update {
        Update {
            path: Some(leaf_path("", "p1-0", path)),
            val: Some(value),
            ..Update::default()
        }
    }

    fn ietf(json: &str) -> TypedValue {
        TypedValue {
            value: Some(typed_value::Value::JsonIetfVal(json.as_bytes().to_vec())),
        }
    }

    fn changes(path: &[&str], value: TypedValue) -> Result<Vec<Setting>, String> {
        changes_of(None, &update(path, value), update_result::Operation::Update)
            .map(|c| c.into_iter().map(|c| c.setting).collect())
            .map_err(|s| s.message().to_string())
    }

    #[test]
    fn a_leaf_or_a_container_above_it_sets_the_same() {
        assert_eq!(
            changes(&["config", "enabled"], ietf("false")),
            Ok(vec![Setting::Enabled(false)])
        );
        let config = r#"{"openconfig-interfaces:enabled": false, "name": "p1-0"}"#;
        assert_eq!(
            changes(&["config"], ietf(config)),
            Ok(vec![Setting::Enabled(false)])
        );
        let speed = r#"{"openconfig-if-ethernet:config": {"port-speed": "openconfig-if-ethernet:SPEED_25GB"}}"#;
        assert_eq!(
            changes(&["ethernet"], ietf(speed)),
            Ok(vec![Setting::SpeedGbps(25)])
        );
    }

    #[test]
    fn what_cannot_be_set_is_refused_by_name_and_replace_of_a_container_too() {
        let err = changes(&["config"], ietf(r#"{"mtu": 9000}"#)).unwrap_err();
        assert!(err.contains("config/mtu = 9000 cannot be set"), "{err}");
        let err = changes(&["config"], ietf(r#"{"name": "p7-0", "enabled": true}"#)).unwrap_err();
        assert!(err.contains("config/name"), "{err}");
        let err = changes(
            &["ethernet", "config", "port-speed"],
            ietf(r#""openconfig-if-ethernet:SPEED_7GB""#),
        )
        .unwrap_err();
        assert!(err.contains("SPEED_10GB"), "{err}");
        let replace = changes_of(
            None,
            &update(&["config"], ietf(r#"{"enabled": true}"#)),
            update_result::Operation::Replace,
        )
        .unwrap_err();
        assert!(replace.message().contains("use update"), "{replace:?}");
        let err = changes(&["state", "oper-status"], ietf(r#""DOWN""#)).unwrap_err();
        assert!(err.contains("config/enabled"), "{err}");
    }
}
