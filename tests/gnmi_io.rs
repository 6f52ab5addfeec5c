//! gNMI from the tests and benchmarks: paths, logins of the demo users, JSON_IETF values.

use gnmi_proto::gnmi::{Path, PathElem, TypedValue, typed_value};
use tonic::Request;
use tonic::transport::Channel;

use crate::Daemon;

/// A path of elements, each with at most one key: `[("ports", None), ("port",
/// Some(("name", "p1")))]`.
pub fn path(elems: &[(&str, Option<(&str, &str)>)]) -> Path {
    Path {
        elem: elems
            .iter()
            .map(|(name, key)| PathElem {
                name: name.to_string(),
                key: key
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            })
            .collect(),
        ..Path::default()
    }
}

/// A request as one of the demo users of examples/users.demo.toml (password = name).
pub fn authed<T>(message: T, user: &str) -> Request<T> {
    with_password(message, user, user)
}

/// A request with these credentials in its metadata, as pygnmi and gnmic send them.
pub fn with_password<T>(message: T, user: &str, password: &str) -> Request<T> {
    let mut request = Request::new(message);
    for (key, value) in [("username", user), ("password", password)] {
        if let Ok(value) = value.parse() {
            request.metadata_mut().insert(key, value);
        }
    }
    request
}

/// A plain-text gNMI channel to a daemon started with `--gnmi-plaintext`.
pub async fn connect(daemon: &Daemon) -> Channel {
    let address = format!("http://{}", daemon.gnmi.clone().expect("gNMI is on"));
    Channel::from_shared(address)
        .expect("a gNMI address")
        .connect()
        .await
        .expect("efbd's gNMI port answers")
}

/// A JSON_IETF (or JSON) value as JSON; a value of another kind is a test failure.
pub fn json(value: Option<TypedValue>) -> serde_json::Value {
    match value.and_then(|v| v.value) {
        Some(typed_value::Value::JsonIetfVal(b) | typed_value::Value::JsonVal(b)) => {
            serde_json::from_slice(&b).unwrap_or_else(|e| panic!("not JSON: {e}"))
        }
        other => panic!("expected a JSON value, got {other:?}"),
    }
}
