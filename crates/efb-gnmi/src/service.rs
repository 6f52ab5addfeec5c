//! The gNMI RPCs: authentication and a tracing span for each, Capabilities and Get here,
//! Set in [`crate::set`], Subscribe in [`crate::subscribe`].

use std::pin::Pin;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use efb_yang::Schema;
use futures::{Stream, StreamExt};
use gnmi_proto::gnmi::{
    self, CapabilityRequest, CapabilityResponse, GetRequest, GetResponse, ModelData, Notification,
    SetRequest, SetResponse, SubscribeRequest, SubscribeResponse, Update, get_request,
};
use gnmi_proto::gnmi_ext::extension::Ext;
use tokio::sync::watch;
use tonic::{Request, Response, Status, Streaming};
use tracing::{Instrument, info_span};

use crate::ServerConfig;
use crate::auth::Caller;
use crate::backend::Backend;
use crate::encode::{Encoder, Encoding, Filter};
use crate::errors;
use crate::path::{Pattern, to_gnmi};

/// The gNMI service of one efbd.
pub struct GnmiService {
    pub(crate) backend: Arc<dyn Backend>,
    pub(crate) schema: Arc<Schema>,
    pub(crate) config: ServerConfig,
    /// Turns true when efbd stops: subscriptions end.
    pub(crate) stop: watch::Receiver<bool>,
    /// The commit confirmed made over gNMI that waits, and the client's id for it.
    pub(crate) waiting: tokio::sync::Mutex<Option<crate::set::Waiting>>,
    /// Subscribe RPCs under way, per user.
    pub(crate) subscriptions: Arc<crate::subscribe::Count>,
}

impl GnmiService {
    pub fn new(
        backend: Arc<dyn Backend>,
        config: ServerConfig,
        stop: watch::Receiver<bool>,
    ) -> GnmiService {
        GnmiService {
            schema: backend.schema(),
            backend,
            subscriptions: Arc::new(crate::subscribe::Count::new(
                config.max_subscriptions,
                config.max_subscriptions_per_user,
            )),
            config,
            stop,
            waiting: tokio::sync::Mutex::new(None),
        }
    }

    async fn caller<T>(&self, request: &Request<T>) -> Result<Caller, Status> {
        self.config
            .users
            .authenticate(request.metadata(), request.remote_addr())
            .await
            .map_err(errors::bounded)
    }
}

pub(crate) fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// JSON or JSON_IETF; anything else refused as the specification says.
pub(crate) fn encoding(number: i32) -> Result<Encoding, Status> {
    match gnmi::Encoding::try_from(number) {
        Ok(gnmi::Encoding::Json) => Ok(Encoding::Json),
        Ok(gnmi::Encoding::JsonIetf) => Ok(Encoding::JsonIetf),
        _ => Err(errors::encoding(number)),
    }
}

/// A JSON value in the field its encoding calls for.
pub(crate) fn typed(encoding: Encoding, json: String) -> gnmi::TypedValue {
    use gnmi::typed_value::Value;
    gnmi::TypedValue {
        value: Some(match encoding {
            Encoding::Json => Value::JsonVal(json.into_bytes()),
            Encoding::JsonIetf => Value::JsonIetfVal(json.into_bytes()),
        }),
    }
}

/// `use_models` may only name the model this target serves.
pub(crate) fn check_models(schema: &Schema, models: &[ModelData]) -> Result<(), Status> {
    let module = &schema.module().name;
    match models.iter().find(|m| m.name != *module) {
        Some(other) => Err(Status::invalid_argument(format!(
            "use_models: this target serves model {module} only, not {}",
            other.name
        ))),
        None => Ok(()),
    }
}

/// Extensions a read RPC cannot honour are refused rather than ignored.
pub(crate) fn check_read_extensions(
    extensions: &[gnmi_proto::gnmi_ext::Extension],
) -> Result<(), Status> {
    for ext in extensions {
        match &ext.ext {
            Some(Ext::Depth(_)) => {
                return Err(Status::unimplemented(
                    "the depth extension is not supported",
                ));
            }
            Some(Ext::History(_)) => {
                return Err(Status::unimplemented(
                    "the history extension is not supported",
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

type SubscribeStream = Pin<Box<dyn Stream<Item = Result<SubscribeResponse, Status>> + Send>>;

#[tonic::async_trait]
impl gnmi::g_nmi_server::GNmi for GnmiService {
    async fn capabilities(
        &self,
        request: Request<CapabilityRequest>,
    ) -> Result<Response<CapabilityResponse>, Status> {
        let caller = self.caller(&request).await?;
        let span = info_span!("gnmi", rpc = "Capabilities", user = %caller.user);
        let _entered = span.enter();
        let module = self.schema.module();
        Ok(Response::new(CapabilityResponse {
            supported_models: vec![ModelData {
                name: module.name.clone(),
                organization: module.organization.clone(),
                version: module.revision.clone(),
            }],
            supported_encodings: vec![gnmi::Encoding::Json as i32, gnmi::Encoding::JsonIetf as i32],
            g_nmi_version: gnmi_proto::GNMI_VERSION.to_string(),
            extension: Vec::new(),
        }))
    }

    async fn get(&self, request: Request<GetRequest>) -> Result<Response<GetResponse>, Status> {
        let caller = self.caller(&request).await?;
        let span = info_span!("gnmi", rpc = "Get", user = %caller.user);
        self.get(request.into_inner())
            .instrument(span)
            .await
            .map(Response::new)
            .map_err(errors::bounded)
    }

    async fn set(&self, request: Request<SetRequest>) -> Result<Response<SetResponse>, Status> {
        let caller = self.caller(&request).await?;
        let span =
            info_span!("gnmi", rpc = "Set", user = %caller.user, role = caller.role.as_str());
        crate::set::set(self, &caller, request.into_inner())
            .instrument(span)
            .await
            .map_err(errors::bounded)
    }

    type SubscribeStream = SubscribeStream;

    async fn subscribe(
        &self,
        request: Request<Streaming<SubscribeRequest>>,
    ) -> Result<Response<Self::SubscribeStream>, Status> {
        let caller = self.caller(&request).await?;
        let span = info_span!("gnmi", rpc = "Subscribe", user = %caller.user);
        let stream = crate::subscribe::start(self, &caller, request.into_inner())
            .instrument(span)
            .await
            .map_err(errors::bounded)?;
        let stream = stream.map(|item| item.map_err(errors::bounded));
        Ok(Response::new(Box::pin(stream)))
    }
}

impl GnmiService {
    async fn get(&self, request: GetRequest) -> Result<GetResponse, Status> {
        let encoding = encoding(request.encoding)?;
        let filter = match get_request::DataType::try_from(request.r#type) {
            Ok(get_request::DataType::All) => Filter::All,
            Ok(get_request::DataType::Config) => Filter::Config,
            // The model does not tell operational state from other state: both are all
            // the `config false` data.
            Ok(get_request::DataType::State | get_request::DataType::Operational) => Filter::State,
            Err(_) => {
                return Err(Status::invalid_argument(format!(
                    "unknown data type {}",
                    request.r#type
                )));
            }
        };
        check_models(&self.schema, &request.use_models)?;
        check_read_extensions(&request.extension)?;
        let mut patterns = Vec::new();
        if request.path.is_empty() {
            patterns.push(
                Pattern::parse(&self.schema, request.prefix.as_ref(), None)
                    .map_err(|e| errors::path("", e))?,
            );
        }
        for path in &request.path {
            let pattern = Pattern::parse(&self.schema, request.prefix.as_ref(), Some(path))
                .map_err(|e| errors::path("", e))?;
            patterns.push(pattern);
        }
        let mut snapshot = self.backend.snapshot().await.map_err(errors::backend)?;
        if filter != Filter::Config {
            snapshot = self
                .backend
                .with_counters(snapshot, &patterns)
                .await
                .map_err(errors::backend)?;
        }
        let schema = self.schema.clone();
        // Printing a large configuration takes milliseconds: off the async threads.
        tokio::task::spawn_blocking(move || {
            let tree = match filter {
                Filter::Config => &snapshot.running,
                _ => &snapshot.operational,
            };
            let encoder = Encoder {
                schema: &schema,
                encoding,
                filter,
            };
            let notification = patterns
                .iter()
                .map(|p| get_one(&encoder, tree, p, snapshot.timestamp_ns))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(GetResponse {
                notification,
                ..GetResponse::default()
            })
        })
        .await
        .map_err(|_| Status::internal("Get failed"))?
    }
}

/// One notification: the node a path names (NOT_FOUND if there is none), or each node a
/// wildcard path selects (maybe none).
fn get_one(
    encoder: &Encoder<'_>,
    tree: &efb_yang::DataTree,
    pattern: &Pattern,
    timestamp_ns: u64,
) -> Result<Notification, Status> {
    let schema = encoder.schema;
    let paths = if pattern.has_wildcards() {
        pattern.expand(schema, tree)
    } else {
        let path = pattern.data_path(schema).map_err(|e| errors::path("", e))?;
        if !tree.contains(schema, &path) && !path.is_root() {
            let value = default_leaf(encoder, tree, &path)
                .ok_or_else(|| Status::not_found(format!("no data at {}", path.display(schema))))?;
            return Ok(Notification {
                timestamp: i64::try_from(timestamp_ns).unwrap_or(i64::MAX),
                update: vec![Update {
                    path: Some(to_gnmi(schema, &path, &pattern.style)),
                    val: Some(typed(encoder.encoding, value)),
                    ..Update::default()
                }],
                ..Notification::default()
            });
        }
        vec![path]
    };
    let update = paths
        .iter()
        .filter_map(|path| {
            encoder.node(tree, path).map(|json| Update {
                path: Some(to_gnmi(schema, path, &pattern.style)),
                val: Some(typed(encoder.encoding, json)),
                ..Update::default()
            })
        })
        .collect();
    Ok(Notification {
        timestamp: i64::try_from(timestamp_ns).unwrap_or(i64::MAX),
        update,
        ..Notification::default()
    })
}

/// A leaf asked for by itself and left at its default: its default, when the list
/// entries on its way exist (containers hold nothing until something is set in them).
fn default_leaf(
    encoder: &Encoder<'_>,
    tree: &efb_yang::DataTree,
    path: &efb_yang::DataPath,
) -> Option<String> {
    let schema = encoder.schema;
    let id = path.node()?;
    let info = schema.node(id);
    let default = info.default.as_deref()?;
    if info.kind != efb_yang::NodeKind::Leaf || !info.cases.is_empty() {
        return None;
    }
    let mut at = path.parent();
    while !at.is_root() {
        let seg = at.last()?;
        if schema.node(seg.node).kind == efb_yang::NodeKind::List {
            if !tree.contains(schema, &at) {
                return None;
            }
            break;
        }
        at = at.parent();
    }
    let value = schema.value(id, default).ok()?;
    Some(encoder.scalar(id, &value))
}
