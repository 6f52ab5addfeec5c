//! The gNMI RPCs: authentication and a tracing span for each, Capabilities and Get here,
//! Set in [`crate::set`], Subscribe in [`crate::subscribe`].

use std::pin::Pin;
use std::sync::Arc;

use efb_yang::Schema;
use futures::{Stream, StreamExt};
use gnmi_proto::gnmi::{
    self, CapabilityRequest, CapabilityResponse, GetRequest, GetResponse, ModelData, Notification,
    SetRequest, SetResponse, SubscribeRequest, SubscribeResponse, Update, get_request,
};
use tokio::sync::watch;
use tonic::{Request, Response, Status, Streaming};
use tracing::{Instrument, info_span};

use crate::ServerConfig;
use crate::auth::Caller;
use crate::backend::Backend;
use crate::encode::{Encoder, Filter};
use crate::errors;
use crate::message::{check_models, check_read_extensions, encoding, typed};
use crate::path::{Pattern, to_gnmi};
use crate::set::SetState;
use crate::subscribe::Subscriptions;

/// The gNMI service of one efbd.
pub struct GnmiService {
    backend: Arc<dyn Backend>,
    schema: Arc<Schema>,
    config: ServerConfig,
    set: SetState,
    subscriptions: Subscriptions,
}

impl GnmiService {
    pub fn new(
        backend: Arc<dyn Backend>,
        config: ServerConfig,
        stop: watch::Receiver<bool>,
    ) -> GnmiService {
        GnmiService {
            schema: backend.schema(),
            set: SetState::new(backend.clone()),
            subscriptions: Subscriptions::new(backend.clone(), &config, stop),
            backend,
            config,
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
        crate::set::set(&self.set, &caller, request.into_inner())
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
        let stream = crate::subscribe::start(&self.subscriptions, &caller, request.into_inner())
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
