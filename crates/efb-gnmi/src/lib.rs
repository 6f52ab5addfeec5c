//! The balancer's gNMI server: Capabilities, Get, Set (with the commit confirmed
//! extension) and Subscribe (ONCE, POLL, STREAM with ON_CHANGE, SAMPLE, TARGET_DEFINED)
//! over the `ecofilter-balancer` model, in front of efbd's configuration owner.
//!
//! - [`backend`]: what the server needs from efbd (snapshots, changes, commit, and the
//!   ports as OpenConfig interfaces, to which `openconfig` routes those paths).
//! - [`path`]: gNMI paths against the schema (origins, keys, wildcards).
//! - [`encode`] / [`decode`]: JSON, JSON_IETF (RFC 7951) and PROTO scalars out of and
//!   into data trees, driven by the schema; [`defaults`]: leaves at their YANG default.
//! - Who the caller is, what it may do, what it did, and bounded connections are
//!   efb-northbound's, shared with efbd's management API: this crate only turns gNMI's
//!   requests into them (a Set's audit line is `set_audit`).
//!
//! efbd binds the listener (so it can print the address) and calls [`serve`].

pub mod backend;
mod config;
pub mod decode;
pub mod defaults;
pub mod encode;
pub mod errors;
mod message;
mod openconfig;
pub mod path;
mod service;
mod set;
mod set_audit;
mod subscribe;
#[cfg(test)]
mod testing;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use efb_northbound::{TlsIdentity, guard, listen, tls};
use futures::StreamExt;
use gnmi_proto::gnmi::g_nmi_server::GNmiServer;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_stream::wrappers::TcpListenerStream;
use tonic::codec::CompressionEncoding;

pub use backend::Backend;
pub use config::{Activity, ServerConfig};
pub use service::{GnmiJudge, GnmiService, judge};

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("gNMI TLS: {0}")]
    Tls(#[from] tls::TlsError),
    #[error("gNMI server: {0}")]
    Transport(#[from] tonic::transport::Error),
    #[error("gNMI server reflection: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
    #[error("gNMI: {0}")]
    Descriptors(#[from] efb_northbound::decoded::DescriptorsError),
}

/// What the server's requests are held against: the budget, and what the messages of gNMI
/// and of server reflection decode to. gzip requests are inflated by the guard.
pub fn door(config: &ServerConfig) -> Result<Arc<guard::Door>, ServeError> {
    let methods = efb_northbound::decoded::Methods::new(&[
        gnmi_proto::FILE_DESCRIPTOR_SET,
        tonic_reflection::pb::v1::FILE_DESCRIPTOR_SET,
        tonic_reflection::pb::v1alpha::FILE_DESCRIPTOR_SET,
    ])?;
    Ok(Arc::new(guard::Door {
        budget: config.budget.clone(),
        methods: Arc::new(methods),
        gzip: true,
    }))
}

/// The gNMI service as a tonic server (message limits, gzip both ways) behind its guard
/// (callers judged before a request's body is read, its messages held against `door`), for
/// [`serve`] and for tests that serve it themselves. Subscriptions end when `stop` turns
/// true.
pub fn service(
    backend: Arc<dyn Backend>,
    config: &ServerConfig,
    stop: watch::Receiver<bool>,
    door: &Arc<guard::Door>,
) -> guard::Guard<GNmiServer<GnmiService>, GnmiJudge> {
    // The guard inflates gzip requests itself (up to each method's limit): tonic sees them
    // plain, and needs to accept gzip only to say so to clients.
    let server = GNmiServer::new(GnmiService::new(backend, config.clone(), stop))
        .max_decoding_message_size(config.max_message_bytes)
        .max_encoding_message_size(config.max_message_bytes)
        .accept_compressed(CompressionEncoding::Gzip)
        .send_compressed(CompressionEncoding::Gzip);
    let judge = Arc::new(judge(config.clone()));
    guard::Guard::new(server, judge, door.clone())
}

/// Serves gNMI on `listener` until `shutdown` completes; streaming subscriptions are
/// ended then (with UNAVAILABLE), so the server stops promptly.
pub async fn serve(
    backend: Arc<dyn Backend>,
    config: ServerConfig,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let (stop, stopped) = watch::channel(false);
    tokio::spawn(async move {
        shutdown.await;
        let _ = stop.send(true);
    });
    let tls = config.tls.as_ref().map(TlsIdentity::acceptor).transpose()?;
    // Dead peers (a laptop that went away) are found by keepalive and their streams dropped.
    let mut builder = listen::server(&config.connections);
    let accepted = TcpListenerStream::new(listener).map(|stream| {
        // Fails only for a connection already reset, which its first read will find.
        stream.inspect(|s| {
            let _ = s.set_nodelay(true);
        })
    });
    let incoming = listen::incoming_counted(
        accepted,
        config.connections.clone(),
        tls,
        &config.activity.connections,
    );
    let mut until = stopped.clone();
    let mut grace = stopped.clone();
    let door = door(&config)?;
    let (reflection, reflection_alpha) = reflection()?;
    // Reflection tells only what the public protos tell, but its requests cost memory like
    // any other: behind the same login and budget.
    let judge = Arc::new(judge(config.clone()));
    let server = builder
        .add_service(service(backend, &config, stopped, &door))
        .add_service(guard::Guard::new(reflection, judge.clone(), door.clone()))
        .add_service(guard::Guard::new(reflection_alpha, judge, door))
        .serve_with_incoming_shutdown(incoming, async move {
            let _ = until.wait_for(|stop| *stop).await;
        });
    tokio::select! {
        served = server => served?,
        // Subscriptions are told to end at once; a client that still holds its
        // connection open does not keep efbd from stopping.
        () = async move {
            let _ = grace.wait_for(|stop| *stop).await;
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        } => tracing::warn!("gNMI clients still connected after {SHUTDOWN_GRACE:?}: closed"),
    }
    // A connection a client keeps open may outlive the server for a moment, and with it
    // the backend: the daemon stops what the backend reaches (efbd its configuration
    // owner, which then refuses as UNAVAILABLE), not the server.
    Ok(())
}

/// gRPC server reflection of gNMI (v1, and v1alpha for older clients such as grpcio's),
/// from the descriptors gnmi-proto was generated from: grpcurl and its kind list and call
/// gNMI without the proto files, once logged in (`-H username:... -H password:...`).
pub fn reflection() -> Result<
    (
        tonic_reflection::server::v1::ServerReflectionServer<
            impl tonic_reflection::server::v1::ServerReflection,
        >,
        tonic_reflection::server::v1alpha::ServerReflectionServer<
            impl tonic_reflection::server::v1alpha::ServerReflection,
        >,
    ),
    ServeError,
> {
    let builder = || {
        tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(gnmi_proto::FILE_DESCRIPTOR_SET)
    };
    Ok((builder().build_v1()?, builder().build_v1alpha()?))
}

/// How long stopping waits for gNMI connections to close by themselves.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);
