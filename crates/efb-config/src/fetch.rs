//! Reading one balancer's balancing configuration: from a saved file, or from a running
//! efbd over gNMI (Get of exactly what the hash covers, plus the hash efbd computed).

use std::path::Path;
use std::time::Duration;

use efb_model::Config;
use efb_model::validation::Validator;
use efb_yang::input::{self, Format, InputError, Limit};
use efb_yang::json::{self, Check};
use gnmi_proto::gnmi::g_nmi_client::GNmiClient;
use gnmi_proto::gnmi::{
    Encoding, GetRequest, GetResponse, Path as GnmiPath, PathElem, get_request, typed_value,
};
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};

use crate::difference::Balancing;
use crate::inventory::{GnmiTarget, Source};

/// What was read of one balancer.
#[derive(Clone, Debug)]
pub struct Fetched {
    pub balancing: Balancing,
    /// The balancing-config-hash the balancer itself reports (gNMI only).
    pub reported_hash: Option<String>,
}

/// Why a balancer could not be compared. The kind tells monitoring what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("cannot read {path}: {message}")]
    File { path: String, message: String },
    /// A file that is not one to read (not a regular file, too large, empty).
    #[error(transparent)]
    Input(#[from] InputError),
    #[error("not a configuration: {0}")]
    Invalid(String),
    #[error("cannot reach {address}: {message}")]
    Unreachable { address: String, message: String },
    #[error("{address} refused the login of user {user}: {message}")]
    Unauthenticated {
        address: String,
        user: String,
        message: String,
    },
    /// Something on this side: no user name or password, a CA file that cannot be read.
    #[error("{0}")]
    Setup(String),
    #[error("{address}: gNMI Get failed ({code}): {message}")]
    Gnmi {
        address: String,
        code: String,
        message: String,
    },
    #[error("{address}: no answer within {seconds} s")]
    Timeout { address: String, seconds: f64 },
}

impl FetchError {
    /// One word for the table and the JSON report.
    pub fn status(&self) -> &'static str {
        match self {
            FetchError::Unreachable { .. } | FetchError::Timeout { .. } => "unreachable",
            FetchError::Unauthenticated { .. } => "unauthenticated",
            FetchError::File { .. }
            | FetchError::Input(_)
            | FetchError::Invalid(_)
            | FetchError::Gnmi { .. }
            | FetchError::Setup(_) => "error",
        }
    }
}

/// Reads one balancer; never panics on what a file or a balancer sends.
pub async fn fetch(
    validator: &Validator,
    source: &Source,
    timeout: Duration,
    limit: &Limit,
) -> Result<Fetched, FetchError> {
    match source {
        Source::File(path) => fetch_file(validator, path, limit),
        Source::Gnmi(target) => {
            match tokio::time::timeout(timeout, fetch_gnmi(validator, target, timeout)).await {
                Ok(result) => result,
                Err(_) => Err(FetchError::Timeout {
                    address: target.address.clone(),
                    seconds: timeout.as_secs_f64(),
                }),
            }
        }
    }
}

/// A file as every configuration file is read; JSON with a member named twice is refused
/// as every reader refuses it, though only the balancing part is parsed (so that 100 000
/// flows cost a fraction of a second).
fn fetch_file(validator: &Validator, path: &Path, limit: &Limit) -> Result<Fetched, FetchError> {
    let content = input::read_file(path, limit)?;
    let config = match content.format {
        Format::Json => {
            // The check reads the whole file; the balancing part is picked out meanwhile.
            let (checked, part) = std::thread::scope(|scope| {
                let checking = scope.spawn(|| input::check_json(&content.text));
                let part = balancing_part(&content.text);
                (checking.join(), part)
            });
            match checked {
                Ok(Ok(())) => {}
                Ok(Err(problem)) => return Err(FetchError::Invalid(problem.to_string())),
                Err(_) => return Err(FetchError::Invalid("the JSON check failed".into())),
            }
            read_config(validator, &part?)?
        }
        Format::SetLines => {
            let tree = content
                .tree(validator.schema(), Check::Types)
                .map_err(|e| FetchError::Invalid(e.to_string()))?;
            validator
                .read(&tree)
                .map_err(|e| FetchError::Invalid(e.to_string()))?
        }
    };
    Ok(Fetched {
        balancing: Balancing::of(&config),
        reported_hash: None,
    })
}

/// The part of a configuration file the hash covers: the same subset a balancer is asked
/// for over gNMI, so that both read alike, and a file of 100 000 flows is compared in a
/// fraction of a second rather than parsed whole by libyang (members not named here are
/// skipped by the JSON reader without being built).
fn balancing_part(text: &str) -> Result<String, FetchError> {
    #[derive(serde::Deserialize)]
    struct Document {
        #[serde(rename = "ecofilter-balancer:ecofilter-balancer", default)]
        balancer: Option<BalancerPart>,
        #[serde(flatten)]
        others: std::collections::BTreeMap<String, serde::de::IgnoredAny>,
    }
    // Inner members may carry the module prefix too (RFC 7951 allows it).
    #[derive(serde::Deserialize)]
    struct BalancerPart {
        #[serde(
            rename = "balancing-method",
            alias = "ecofilter-balancer:balancing-method"
        )]
        method: Option<serde_json::Value>,
        #[serde(rename = "ecofilter-unit", alias = "ecofilter-balancer:ecofilter-unit")]
        units: Option<serde_json::Value>,
    }
    let document: Document =
        serde_json::from_str(text).map_err(|e| FetchError::Invalid(e.to_string()))?;
    // Skipping is not ignoring: a top-level name of another module (or none) would leave
    // the balancer looking empty, so it is refused as libyang would.
    if let Some(other) = document
        .others
        .keys()
        .find(|name| !name.starts_with("ecofilter-balancer:"))
    {
        return Err(FetchError::Invalid(format!(
            "top-level member {other:?}: expected ecofilter-balancer:ports, \
             ecofilter-balancer:ecofilter-balancer or ecofilter-balancer:liveness"
        )));
    }
    let mut kept = serde_json::Map::new();
    if let Some(part) = document.balancer {
        if let Some(method) = part.method {
            kept.insert("balancing-method".into(), method);
        }
        if let Some(units) = part.units {
            kept.insert("ecofilter-unit".into(), units);
        }
    }
    Ok(serde_json::json!({ BALANCER_MEMBER: kept }).to_string())
}

/// The module's top container as RFC 7951 JSON names it.
const BALANCER_MEMBER: &str = "ecofilter-balancer:ecofilter-balancer";

/// As `efb-config hash` reads a file: names and types checked, so that a configuration
/// still being written can be compared, and the hash is what efbd would compute for it.
fn read_config(validator: &Validator, text: &str) -> Result<Config, FetchError> {
    let tree = json::from_json(validator.schema(), text, Check::Types)
        .map_err(|e| FetchError::Invalid(e.to_string()))?;
    validator
        .read(&tree)
        .map_err(|e| FetchError::Invalid(e.to_string()))
}

/// The module's top container, where everything the hash covers lives.
const BALANCER: &str = "ecofilter-balancer";

fn path(elems: &[(&str, Option<&str>)]) -> GnmiPath {
    GnmiPath {
        elem: elems
            .iter()
            .map(|(name, key)| PathElem {
                name: (*name).to_string(),
                key: key
                    .map(|k| [("name".to_string(), k.to_string())].into())
                    .unwrap_or_default(),
            })
            .collect(),
        ..GnmiPath::default()
    }
}

struct Client {
    inner: GNmiClient<Channel>,
    address: String,
    user: String,
    password: String,
}

async fn fetch_gnmi(
    validator: &Validator,
    target: &GnmiTarget,
    timeout: Duration,
) -> Result<Fetched, FetchError> {
    let mut client = connect(target, timeout).await?;
    // Hash first, configuration second: if a commit lands in between, the hash of the
    // configuration read will not match and a second read of the hash settles it.
    let reported = client.reported_hash().await?;
    let config = client.config(validator).await?;
    let balancing = Balancing::of(&config);
    let reported_hash = match reported {
        Some(h) if h != balancing.hash => client.reported_hash().await?,
        other => other,
    };
    Ok(Fetched {
        balancing,
        reported_hash,
    })
}

async fn connect(target: &GnmiTarget, timeout: Duration) -> Result<Client, FetchError> {
    let address = target.address.clone();
    let user = target.username.clone().ok_or_else(|| {
        FetchError::Setup(format!(
            "{address}: no user name: gnmi://USER@HOST:PORT, --username, or username in the inventory"
        ))
    })?;
    let password = match &target.password {
        Some(source) => source
            .read()
            .map_err(|m| FetchError::Setup(format!("{address}: {m}")))?,
        None => String::new(),
    };
    let unreachable = |message: String| FetchError::Unreachable {
        address: address.clone(),
        message,
    };
    let scheme = if target.plaintext { "http" } else { "https" };
    let mut endpoint = Endpoint::from_shared(format!("{scheme}://{address}"))
        .map_err(|e| unreachable(chain(&e)))?
        .connect_timeout(timeout)
        .timeout(timeout);
    if !target.plaintext {
        endpoint = endpoint
            .tls_config(tls(target)?)
            .map_err(|e| unreachable(format!("TLS: {}", chain(&e))))?;
    }
    let channel = endpoint
        .connect()
        .await
        .map_err(|e| unreachable(chain(&e)))?;
    Ok(Client {
        inner: GNmiClient::new(channel),
        address,
        user,
        password,
    })
}

fn tls(target: &GnmiTarget) -> Result<ClientTlsConfig, FetchError> {
    let ca_file = target.ca_file.as_ref().ok_or_else(|| {
        FetchError::Setup(format!(
            "{}: TLS needs the certificate to trust: --ca-file FILE or ca-file in the inventory \
             (efbd's self-signed one is gnmi-cert.pem in its datastore), or plaintext if the balancer serves that",
            target.address
        ))
    })?;
    let pem = std::fs::read_to_string(ca_file).map_err(|e| {
        FetchError::Setup(format!(
            "{}: cannot read the CA file {}: {e}",
            target.address,
            ca_file.display()
        ))
    })?;
    let mut config = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(pem));
    if let Some(name) = &target.tls_server_name {
        config = config.domain_name(name.clone());
    }
    Ok(config)
}

/// tonic's transport errors say "transport error" and keep the reason in their sources.
fn chain(error: &dyn std::error::Error) -> String {
    let mut parts = vec![error.to_string()];
    let mut next = error.source();
    while let Some(e) = next {
        let text = e.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        next = e.source();
    }
    parts.join(": ")
}

impl Client {
    async fn get(
        &mut self,
        data_type: get_request::DataType,
        paths: Vec<GnmiPath>,
    ) -> Result<GetResponse, tonic::Status> {
        let mut request = tonic::Request::new(GetRequest {
            path: paths,
            r#type: data_type as i32,
            encoding: Encoding::JsonIetf as i32,
            ..GetRequest::default()
        });
        let credentials = [("username", &self.user), ("password", &self.password)];
        for (key, value) in credentials {
            let value = value.parse().map_err(|_| {
                tonic::Status::invalid_argument(format!(
                    "the {key} cannot be sent in gRPC metadata (printable ASCII only)"
                ))
            })?;
            request.metadata_mut().insert(key, value);
        }
        self.inner
            .get(request)
            .await
            .map(tonic::Response::into_inner)
    }

    fn failed(&self, status: tonic::Status) -> FetchError {
        // A status made of a transport error keeps the reason in its sources.
        let mut message = status.message().to_string();
        let mut next = std::error::Error::source(&status);
        while let Some(e) = next {
            let text = e.to_string();
            if !message.contains(&text) {
                message = format!("{message}: {text}");
            }
            next = e.source();
        }
        match status.code() {
            tonic::Code::Unauthenticated | tonic::Code::PermissionDenied => {
                FetchError::Unauthenticated {
                    address: self.address.clone(),
                    user: self.user.clone(),
                    message,
                }
            }
            tonic::Code::Unavailable => FetchError::Unreachable {
                address: self.address.clone(),
                message,
            },
            code => FetchError::Gnmi {
                address: self.address.clone(),
                code: format!("{code:?}"),
                message,
            },
        }
    }

    /// The state leaf, or `None` when the balancer has none to show.
    async fn reported_hash(&mut self) -> Result<Option<String>, FetchError> {
        let paths = vec![path(&[(BALANCER, None), ("balancing-config-hash", None)])];
        let response = match self.get(get_request::DataType::State, paths).await {
            Ok(r) => r,
            Err(status) if status.code() == tonic::Code::NotFound => return Ok(None),
            Err(status) => return Err(self.failed(status)),
        };
        let value = values(&response).next().transpose()?;
        match value {
            Some(serde_json::Value::String(hash)) => Ok(Some(hash)),
            None => Ok(None),
            Some(other) => Err(FetchError::Invalid(format!(
                "{}: balancing-config-hash is not a string: {other}",
                self.address
            ))),
        }
    }

    /// The method and the units, read as one configuration. Flows are left out: a site
    /// with 100 000 of them would cost seconds to fetch and parse for nothing.
    async fn config(&mut self, validator: &Validator) -> Result<Config, FetchError> {
        let paths = vec![
            path(&[(BALANCER, None), ("balancing-method", None)]),
            path(&[(BALANCER, None), ("ecofilter-unit", Some("*"))]),
        ];
        let response = self
            .get(get_request::DataType::Config, paths)
            .await
            .map_err(|status| self.failed(status))?;
        // Sorted by what each update names rather than by position: the answer is one
        // notification per path today, and nothing here should depend on that.
        let mut method = None;
        let mut units = Vec::new();
        for update in response.notification.iter().flat_map(|n| &n.update) {
            let name = update
                .path
                .as_ref()
                .and_then(|p| p.elem.last())
                .map(|e| e.name.rsplit(':').next().unwrap_or(&e.name));
            match name {
                Some("balancing-method") => method = Some(value(update.val.as_ref())?),
                Some("ecofilter-unit") => units.push(value(update.val.as_ref())?),
                other => {
                    return Err(FetchError::Invalid(format!(
                        "{}: an answer for a path not asked for ({})",
                        self.address,
                        other.unwrap_or("none")
                    )));
                }
            }
        }
        let mut balancer = serde_json::Map::new();
        if let Some(method) = method {
            balancer.insert("balancing-method".into(), method);
        }
        if !units.is_empty() {
            balancer.insert("ecofilter-unit".into(), serde_json::Value::Array(units));
        }
        let document = serde_json::json!({ BALANCER_MEMBER: balancer });
        read_config(validator, &document.to_string()).map_err(|e| match e {
            FetchError::Invalid(m) => {
                FetchError::Invalid(format!("{}: the configuration read: {m}", self.address))
            }
            other => other,
        })
    }
}

/// Every value of a response, in order.
fn values(
    response: &GetResponse,
) -> impl Iterator<Item = Result<serde_json::Value, FetchError>> + '_ {
    response
        .notification
        .iter()
        .flat_map(|n| &n.update)
        .map(|u| value(u.val.as_ref()))
}

fn value(val: Option<&gnmi_proto::gnmi::TypedValue>) -> Result<serde_json::Value, FetchError> {
    let bad = |what: &str| FetchError::Invalid(format!("the balancer answered {what}"));
    match val.and_then(|v| v.value.as_ref()) {
        Some(typed_value::Value::JsonIetfVal(bytes) | typed_value::Value::JsonVal(bytes)) => {
            serde_json::from_slice(bytes)
                .map_err(|e| bad(&format!("JSON that does not parse: {e}")))
        }
        Some(typed_value::Value::StringVal(s)) => Ok(serde_json::Value::String(s.clone())),
        Some(_) => Err(bad("a value in an encoding other than JSON_IETF")),
        None => Err(bad("an update without a value")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_read_for_its_balancing_part_only() {
        let part = balancing_part(
            r#"{"ecofilter-balancer:ports": {"port": [{"name": "p1"}]},
                "ecofilter-balancer:ecofilter-balancer": {
                    "ecofilter-balancer:balancing-method": "layer-4",
                    "link": [{"name": "l1"}],
                    "flow": [{"name": "f", "priority": "not even a number"}],
                    "ecofilter-unit": [{"name": "u", "cores": 3}]}}"#,
        )
        .unwrap();
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&part).unwrap(),
            serde_json::json!({"ecofilter-balancer:ecofilter-balancer": {
                "balancing-method": "layer-4",
                "ecofilter-unit": [{"name": "u", "cores": 3}]}})
        );
        let err = balancing_part(r#"{"ecofilter-balancer": {}}"#).unwrap_err();
        assert!(err.to_string().contains("top-level member"), "{err}");
        assert!(balancing_part("[1]").is_err());
        assert!(balancing_part("{\"ecofilter-balancer:ports\": ").is_err());
    }
}
