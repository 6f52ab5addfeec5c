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
use crate::backend::Backend;
use crate::defaults;
use crate::encode::{Encoder, Encoding, Filter, json_typed};
use crate::errors;
use crate::message::{
    check_models, check_read_extensions, encoding, now_ns, read_stamp, reflected_prefix,
};
use crate::path::{Pattern, to_gnmi};
use crate::set::SetState;
use crate::set_audit::{asked, record_set};
use crate::subscribe::Subscriptions;
use efb_northbound::budget::Spend;
use efb_northbound::caller::Caller;
use efb_northbound::judge::{Protocol, RoleJudge, SMALL_MESSAGE};
use efb_northbound::request::Kind;
use prost::Message;

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

    /// The caller [`GnmiJudge`] admitted (identified again when the service runs without
    /// its guard).
    async fn caller<T>(&self, request: &Request<T>) -> Result<Caller, Status> {
        if let Some(caller) = request.extensions().get::<Caller>() {
            return Ok(caller.clone());
        }
        let caller = identify(&self.config, request).await?;
        let show = efb_northbound::access::may(caller.role, Kind::Show.operation());
        show.map_err(|denied| denied.status(&caller.name))?;
        Ok(caller)
    }
}

/// Largest message of a server reflection request: a symbol's or a file's name.
const REFLECTION_MESSAGE: usize = 64 * 1024;

/// The request a gNMI or reflection method makes (the guard refuses other methods before
/// they get here), and the largest message it may send.
fn kind(method: &str) -> (Kind, usize) {
    match method {
        "/gnmi.gNMI/Set" => (Kind::Set, usize::MAX),
        "/gnmi.gNMI/Subscribe" => (Kind::Subscribe, SMALL_MESSAGE),
        "/gnmi.gNMI/Capabilities" => (Kind::Capabilities, SMALL_MESSAGE),
        "/gnmi.gNMI/Get" => (Kind::Show, SMALL_MESSAGE),
        // Server reflection tells what the server speaks, as Capabilities does.
        _ => (Kind::Capabilities, REFLECTION_MESSAGE),
    }
}

/// gNMI as its judge sees it ([`efb_northbound::judge`], the management API's too): the
/// user logged in (client certificate, or username and password), the methods' kinds above.
pub struct Gnmi {
    config: ServerConfig,
}

/// Judges gNMI requests from their heads ([`crate::guard`]): the user, with a role that may
/// call the method; refusals audited.
pub type GnmiJudge = RoleJudge<Gnmi>;

/// The judge of a gNMI server.
pub fn judge(config: ServerConfig) -> GnmiJudge {
    let audit = config.audit.clone();
    RoleJudge::new(Gnmi { config }, audit)
}

#[tonic::async_trait]
impl Protocol for Gnmi {
    fn method(&self, path: &str) -> Option<(Kind, usize)> {
        let (kind, largest) = kind(path);
        Some((kind, largest.min(self.config.max_message_bytes)))
    }

    async fn identify(&self, head: &Request<()>) -> Result<Caller, Status> {
        identify(&self.config, head).await
    }

    async fn known_without_login(
        &self,
        head: &Request<()>,
    ) -> (String, Option<efb_northbound::Role>, String) {
        let from = gnmi_from(efb_northbound::listen::remote_addr(head));
        ("(not logged in)".into(), None, from)
    }

    fn service(&self) -> &'static str {
        "gNMI"
    }
}

/// The user a gNMI request's head names (a login or a client certificate), as a caller
/// from "gNMI 10.0.0.1:5000".
async fn identify<T>(config: &ServerConfig, request: &Request<T>) -> Result<Caller, Status> {
    let login = config
        .users
        .identify(request)
        .await
        .map_err(errors::bounded)?;
    let from = gnmi_from(login.peer);
    Ok(Caller::logged_in(login, from))
}

/// "gNMI 10.0.0.1:5000", as the audit says where a gNMI caller came from.
pub(crate) fn gnmi_from(peer: Option<std::net::SocketAddr>) -> String {
    match peer {
        Some(peer) => format!("gNMI {peer}"),
        None => "gNMI".to_string(),
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
        let span = info_span!("gnmi", rpc = "Capabilities", user = %caller.name);
        let _entered = span.enter();
        let module = self.schema.module();
        let mut supported_models = vec![ModelData {
            name: module.name.clone(),
            organization: module.organization.clone(),
            version: module.revision.clone(),
        }];
        if self.backend.interfaces().is_some() {
            supported_models.extend(efb_openconfig::server::models());
        }
        Ok(Response::new(CapabilityResponse {
            supported_models,
            supported_encodings: vec![
                gnmi::Encoding::Json as i32,
                gnmi::Encoding::JsonIetf as i32,
                gnmi::Encoding::Proto as i32,
            ],
            g_nmi_version: gnmi_proto::GNMI_VERSION.to_string(),
            extension: Vec::new(),
        }))
    }

    async fn get(&self, request: Request<GetRequest>) -> Result<Response<GetResponse>, Status> {
        let caller = self.caller(&request).await?;
        let span = info_span!("gnmi", rpc = "Get", user = %caller.name);
        let reply = Reply::new(Spend::of(&request), self.config.max_message_bytes);
        self.get(request.into_inner(), reply)
            .instrument(span)
            .await
            .map(Response::new)
            .map_err(errors::bounded)
    }

    async fn set(&self, request: Request<SetRequest>) -> Result<Response<SetResponse>, Status> {
        let caller = self.caller(&request).await?;
        let span = info_span!("gnmi", rpc = "Set", user = %caller.name, role = caller.role_name());
        let asked = asked(request.get_ref());
        let result = match crate::openconfig::refuse_set(request.get_ref()) {
            Ok(()) => crate::set::set(&self.set, &caller, request.into_inner())
                .instrument(span)
                .await
                .map_err(errors::bounded),
            Err(refused) => Err(refused),
        };
        record_set(&self.config.audit, &caller, &asked, &result);
        result
    }

    type SubscribeStream = SubscribeStream;

    async fn subscribe(
        &self,
        request: Request<Streaming<SubscribeRequest>>,
    ) -> Result<Response<Self::SubscribeStream>, Status> {
        let caller = self.caller(&request).await?;
        let span = info_span!("gnmi", rpc = "Subscribe", user = %caller.name);
        let spend = Spend::of(&request);
        let stream =
            crate::subscribe::start(&self.subscriptions, &caller, spend, request.into_inner())
                .instrument(span)
                .await
                .map_err(errors::bounded)?;
        let stream = stream.map(|item| item.map_err(errors::bounded));
        Ok(Response::new(Box::pin(stream)))
    }
}

impl GnmiService {
    async fn get(&self, request: GetRequest, mut reply: Reply) -> Result<GetResponse, Status> {
        check_path_count(request.path.len(), self.config.max_paths)?;
        let paths = request.path.iter().map(Some);
        if let Some(interfaces) =
            crate::openconfig::route(self.backend.as_ref(), request.prefix.as_ref(), paths)?
        {
            return efb_openconfig::server::get(interfaces.as_ref(), &request).await;
        }
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
        let read_at = now_ns();
        let mut snapshot = self.backend.snapshot().await.map_err(errors::backend)?;
        if filter != Filter::Config {
            snapshot = self
                .backend
                .with_counters(snapshot, &patterns)
                .await
                .map_err(errors::backend)?;
        }
        let schema = self.schema.clone();
        let prefix = reflected_prefix(request.prefix.as_ref());
        let timestamp = read_stamp(read_at, snapshot.timestamp_ns);
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
                .map(|p| {
                    Ok(Notification {
                        timestamp,
                        prefix: prefix.clone(),
                        update: get_one(&encoder, tree, p, &mut reply)?,
                        ..Notification::default()
                    })
                })
                .collect::<Result<Vec<_>, Status>>()?;
            Ok(GetResponse {
                notification,
                ..GetResponse::default()
            })
        })
        .await
        .map_err(|_| Status::internal("Get failed"))?
    }
}

/// The updates of one path: the node it names (NOT_FOUND if there is none), or each node
/// a wildcard path selects (maybe none). A leaf at its default reads as the default. In
/// PROTO, each leaf under the nodes selected, one update each.
fn get_one(
    encoder: &Encoder<'_>,
    tree: &efb_yang::DataTree,
    pattern: &Pattern,
    reply: &mut Reply,
) -> Result<Vec<Update>, Status> {
    let schema = encoder.schema;
    let paths = if pattern.has_wildcards() {
        pattern.expand(schema, tree)
    } else {
        let path = pattern.data_path(schema).map_err(|e| errors::path("", e))?;
        if !defaults::exists(schema, tree, &path) {
            return Err(Status::not_found(format!(
                "no data at {}",
                path.display(schema)
            )));
        }
        vec![path]
    };
    if encoder.encoding == Encoding::Proto {
        let mut leaves = Vec::new();
        for path in &paths {
            encoder.leaves(tree, path, &mut leaves);
        }
        return leaves
            .iter()
            .map(|(path, value)| {
                reply.add(Update {
                    path: Some(to_gnmi(schema, path, &pattern.style)),
                    val: Some(encoder.typed(value)),
                    ..Update::default()
                })
            })
            .collect();
    }
    paths
        .iter()
        .filter_map(|path| {
            encoder.node(tree, path).map(|json| {
                reply.add(Update {
                    path: Some(to_gnmi(schema, path, &pattern.style)),
                    val: Some(json_typed(encoder.encoding, json)),
                    ..Update::default()
                })
            })
        })
        .collect()
}

/// A Get or a subscription list naming more paths than the server takes is refused.
pub(crate) fn check_path_count(count: usize, max: usize) -> Result<(), Status> {
    if count > max {
        return Err(Status::invalid_argument(format!(
            "{count} paths: one request may name {max} at most (gnmi.max_paths); ask for a common prefix, or in several requests"
        )));
    }
    Ok(())
}

/// A reply as it is built: each update held against the request's budget, and the whole
/// under the largest message, so that a reply too large is refused before the rest of it
/// is built.
pub(crate) struct Reply {
    spend: Option<Spend>,
    max: usize,
    size: usize,
}

/// What an update costs besides its encoded bytes (its structs).
const UPDATE_STRUCTS: usize = 256;

impl Reply {
    pub(crate) fn new(spend: Option<Spend>, max: usize) -> Reply {
        Reply {
            spend,
            max,
            size: 0,
        }
    }

    fn add(&mut self, update: Update) -> Result<Update, Status> {
        let bytes = update.encoded_len() + UPDATE_STRUCTS;
        self.size += bytes;
        if self.size > self.max {
            return Err(Status::resource_exhausted(format!(
                "the reply would be larger than {} MiB (gnmi.max_message_mib); ask for less, or Subscribe ONCE, which sends it in parts",
                self.max / (1024 * 1024)
            )));
        }
        if let Some(spend) = &self.spend {
            spend.take(bytes)?;
        }
        Ok(update)
    }
}
