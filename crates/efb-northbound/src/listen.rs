//! Accepted connections, bounded, for any gRPC listener (gNMI, the management API; TCP or
//! Unix sockets). Without bounds, a client that opens connections and sends nothing holds
//! them for ever, one file descriptor each, and locks everyone else out.
//!
//! - At most `max` open at a time, and `per_peer` from one peer: a Unix account (the
//!   kernel says which), an address, or an IPv6 /64; of those, `unproven_per_peer` may not
//!   have made an admitted request yet.
//! - Each has `handshake_timeout` from its accept to finish its handshake (TLS when there
//!   is one, then HTTP/2's client preface) and `first_request_timeout` to make a first
//!   request its server admits (a caller identified, with a role that may make it: see
//!   [`crate::guard`], which calls [`ConnHandle::prove`]). Until then the connection is
//!   *unproven*; when all `max` places are taken, the oldest unproven connection is closed
//!   to make room, so connections that never logged in cannot keep out the ones that do.
//!   It is closed at once, even in the middle of its TLS handshake, and counts until it
//!   is: past `max / 8` connections still closing, new ones are refused.
//! - Of the proven connections, the last `kept_for_admins` places are for admins.
//! - After that, HTTP/2 keepalive pings find peers that stopped answering.
//! - Each connection has at most `streams` calls open at once and flow-control windows of
//!   `window` bytes: what a client may send before efbd reads it, so what HTTP/2 buffers
//!   for a connection whatever it sends.
//!
//! [`incoming`] wraps a stream of accepted connections into one to give tonic's
//! `serve_with_incoming`; [`server`] is a tonic server with the keepalive set. A request
//! served on them carries [`ConnInfo`]: the transport's own (peer address, or the Unix
//! peer's credentials), the client certificate of a TLS connection that sent one, and the
//! connection's [`ConnHandle`].

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::task::AtomicWaker;
use futures::{Stream, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::mpsc;
use tokio::time::{Instant, Sleep};
pub use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::pki_types::CertificateDer;
use tokio_rustls::server::TlsStream;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Request;
use tonic::transport::server::{Connected, TcpConnectInfo, UdsConnectInfo};
use tracing::{debug, warn};

/// What an HTTP/2 client sends first ("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"): the handshake
/// is done when that much has arrived.
const PREFACE_BYTES: usize = 24;

/// How long a connection past its first-request deadline stays after a verdict, so that
/// the refusal reaches the client before the connection closes.
const VERDICT_GRACE: Duration = Duration::from_millis(500);

/// How often refusals and accept errors are logged at most (they come in floods).
const LOG_EVERY: Duration = Duration::from_secs(10);

/// The bounds of one listener.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Connections open at once.
    pub max: usize,
    /// Connections one peer (a Unix account, an address, an IPv6 /64) may have open.
    pub per_peer: usize,
    /// Of those, how many may be unproven (no admitted request yet).
    pub unproven_per_peer: usize,
    /// Of `max`, the places only admins' connections may take once proven.
    pub kept_for_admins: usize,
    /// From accept to the end of the handshake (TLS, then the HTTP/2 preface).
    pub handshake_timeout: Duration,
    /// From accept to the first request the server admits.
    pub first_request_timeout: Duration,
    /// A connection silent this long is pinged; one that does not answer within the
    /// same time is closed. `None`: no pings, for clients that answer them only while
    /// they run a call (efb-cli waiting at its prompt).
    pub keepalive: Option<Duration>,
    /// Calls one connection may have open at once (HTTP/2's SETTINGS_MAX_CONCURRENT_STREAMS).
    pub streams: u32,
    /// HTTP/2's flow-control windows, of a connection and of each of its calls, in bytes.
    pub window: u32,
    /// What the log calls the listener ("gNMI").
    pub name: &'static str,
    /// Where its settings are ("gnmi.connections"), for the log.
    pub settings: &'static str,
}

impl Limits {
    /// File descriptors the listener may hold at worst: its open connections and those
    /// closed to make room that are not gone yet.
    pub fn descriptors(&self) -> usize {
        self.max + max_closing(self.max)
    }
}

/// A header block's size at most (gRPC's metadata: a few hundred bytes).
pub const MAX_HEADER_BYTES: u32 = 16 * 1024;

/// A tonic server builder with HTTP/2 as `limits` say: keepalive, calls per connection,
/// windows (fixed: an adaptive window would grow past them), headers.
pub fn server(limits: &Limits) -> tonic::transport::Server {
    tonic::transport::Server::builder()
        .http2_keepalive_interval(limits.keepalive)
        .http2_keepalive_timeout(limits.keepalive)
        .max_concurrent_streams(limits.streams)
        .initial_stream_window_size(limits.window)
        .initial_connection_window_size(limits.window)
        .http2_adaptive_window(Some(false))
        .http2_max_header_list_size(MAX_HEADER_BYTES)
        .max_frame_size(16 * 1024)
        // Streams a client opens and resets at once (the "rapid reset" attack), and
        // errors of its own making, end the connection past these.
        .http2_max_pending_accept_reset_streams(Some(32))
        .http2_max_local_error_reset_streams(Some(256))
}

/// The connections of `accepted` that fit `limits`, after their TLS handshake when `tls`
/// is given. The listener is dropped when the returned stream is (the server stopped).
pub fn incoming<S, IO>(
    accepted: S,
    limits: Limits,
    tls: Option<TlsAcceptor>,
) -> ReceiverStream<io::Result<Conn<IO>>>
where
    S: Stream<Item = io::Result<IO>> + Send + Unpin + 'static,
    IO: AsyncRead + AsyncWrite + Connected + Unpin + Send + 'static,
    IO::ConnectInfo: PeerOf,
{
    incoming_counted(accepted, limits, tls, &Open::default())
}

/// [`incoming`], with the connections open at each moment (handshakes included) in `open`.
pub fn incoming_counted<S, IO>(
    accepted: S,
    limits: Limits,
    tls: Option<TlsAcceptor>,
    open: &Open,
) -> ReceiverStream<io::Result<Conn<IO>>>
where
    S: Stream<Item = io::Result<IO>> + Send + Unpin + 'static,
    IO: AsyncRead + AsyncWrite + Connected + Unpin + Send + 'static,
    IO::ConnectInfo: PeerOf,
{
    let (ready, out) = mpsc::channel(16);
    let pool = Arc::new(Pool {
        limits,
        state: Mutex::default(),
        open: open.clone(),
    });
    tokio::spawn(accept_loop(accepted, pool, tls, ready));
    ReceiverStream::new(out)
}

/// How many of something are open now (connections, subscriptions), for metrics; clones
/// share the count.
#[derive(Clone, Debug, Default)]
pub struct Open(Arc<AtomicUsize>);

impl Open {
    pub fn now(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }

    /// One more, until the returned guard is dropped.
    pub fn enter(&self) -> OpenGuard {
        self.0.fetch_add(1, Ordering::Relaxed);
        OpenGuard(self.0.clone())
    }
}

/// One of an [`Open`] count.
#[derive(Debug)]
pub struct OpenGuard(Arc<AtomicUsize>);

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Who a connection comes from, for the per-peer limit: a Unix account, or an address
/// (IPv6 by /64: one host usually has the whole prefix).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Peer {
    Account(u32),
    Address(IpAddr),
    Unknown,
}

impl Peer {
    pub fn of_addr(addr: Option<SocketAddr>) -> Peer {
        match addr.map(|a| a.ip().to_canonical()) {
            Some(IpAddr::V6(v6)) => {
                let prefix = u128::from(v6) & !((1u128 << 64) - 1);
                Peer::Address(IpAddr::V6(Ipv6Addr::from(prefix)))
            }
            Some(ip) => Peer::Address(ip),
            None => Peer::Unknown,
        }
    }
}

impl std::fmt::Display for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Peer::Account(uid) => write!(f, "uid {uid}"),
            Peer::Address(IpAddr::V6(prefix)) => write!(f, "{prefix}/64"),
            Peer::Address(ip) => write!(f, "{ip}"),
            Peer::Unknown => f.write_str("an unknown peer"),
        }
    }
}

/// The peer of a transport's connection.
pub trait PeerOf {
    fn peer(&self) -> Peer;
}

impl PeerOf for TcpConnectInfo {
    fn peer(&self) -> Peer {
        Peer::of_addr(self.remote_addr())
    }
}

impl PeerOf for UdsConnectInfo {
    fn peer(&self) -> Peer {
        self.peer_cred
            .map_or(Peer::Unknown, |cred| Peer::Account(cred.uid()))
    }
}

/// The connections of one listener, counted.
struct Pool {
    limits: Limits,
    state: Mutex<PoolState>,
    /// Open now, for metrics.
    open: Open,
}

#[derive(Default)]
struct PoolState {
    open: usize,
    by_peer: HashMap<Peer, usize>,
    unproven_by_peer: HashMap<Peer, usize>,
    /// Closed to make room, not gone yet.
    closing: usize,
    /// Unproven connections, oldest first (by accept number).
    unproven: BTreeMap<u64, Weak<ConnState>>,
    /// Proven connections of callers who are not admins.
    proven_others: usize,
    accepted: u64,
}

/// Why a connection was not taken.
enum Refused {
    Full,
    PeerFull(Peer),
    PeerUnproven(Peer),
    Closing(usize),
}

impl Pool {
    /// A place for a new connection of `peer`: refused past the peer's limit; past `max`,
    /// the oldest unproven connection is closed to make room (refused if there is none).
    fn admit(self: &Arc<Self>, peer: Peer) -> Result<Place, Refused> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let of_peer = state.by_peer.get(&peer).copied().unwrap_or(0);
        if of_peer >= self.limits.per_peer {
            return Err(Refused::PeerFull(peer));
        }
        let unproven = state.unproven_by_peer.get(&peer).copied().unwrap_or(0);
        if unproven >= self.limits.unproven_per_peer {
            return Err(Refused::PeerUnproven(peer));
        }
        if state.closing >= max_closing(self.limits.max) {
            return Err(Refused::Closing(state.closing));
        }
        if state.open >= self.limits.max && !evict_oldest_unproven(&mut state) {
            return Err(Refused::Full);
        }
        state.open += 1;
        state.accepted += 1;
        *state.by_peer.entry(peer).or_default() += 1;
        *state.unproven_by_peer.entry(peer).or_default() += 1;
        let conn = Arc::new(ConnState {
            number: state.accepted,
            peer,
            proven: AtomicU8::new(UNPROVEN),
            closed: AtomicBool::new(false),
            waker: AtomicWaker::new(),
            pool: Arc::downgrade(self),
            login: Mutex::new(None),
            judging: AtomicUsize::new(0),
            verdict: Mutex::new(None),
        });
        state.unproven.insert(conn.number, Arc::downgrade(&conn));
        Ok(Place {
            conn,
            _open: self.open.enter(),
        })
    }

    fn release(&self, conn: &ConnState) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        match conn.proven.load(Ordering::SeqCst) {
            EVICTED => {
                state.closing = state.closing.saturating_sub(1);
                return;
            }
            UNPROVEN => uncount(&mut state.unproven_by_peer, &conn.peer),
            PROVEN_OTHER => state.proven_others = state.proven_others.saturating_sub(1),
            _ => {}
        }
        state.open = state.open.saturating_sub(1);
        uncount(&mut state.by_peer, &conn.peer);
        state.unproven.remove(&conn.number);
    }
}

/// Connections closed to make room that may still be closing (each holds a file
/// descriptor until it is gone): past these, new ones wait.
fn max_closing(max: usize) -> usize {
    (max / 8).max(4)
}

fn uncount(counts: &mut HashMap<Peer, usize>, peer: &Peer) {
    if let Some(count) = counts.get_mut(peer) {
        *count = count.saturating_sub(1);
        if *count == 0 {
            counts.remove(peer);
        }
    }
}

/// Closes the oldest unproven connection still open; false when there is none. Its place
/// goes to the new one now; it counts as closing until it is gone.
fn evict_oldest_unproven(state: &mut PoolState) -> bool {
    while let Some((_, weak)) = state.unproven.pop_first() {
        if let Some(conn) = weak.upgrade() {
            conn.proven.store(EVICTED, Ordering::SeqCst);
            conn.close();
            state.open = state.open.saturating_sub(1);
            uncount(&mut state.by_peer, &conn.peer);
            uncount(&mut state.unproven_by_peer, &conn.peer);
            state.closing += 1;
            return true;
        }
    }
    false
}

const UNPROVEN: u8 = 0;
const PROVEN_ADMIN: u8 = 1;
const PROVEN_OTHER: u8 = 2;
/// Closed to make room: its counts were given back already.
const EVICTED: u8 = 3;

/// One connection as the pool and the requests served on it see it.
#[derive(Debug)]
pub struct ConnState {
    number: u64,
    peer: Peer,
    proven: AtomicU8,
    closed: AtomicBool,
    waker: AtomicWaker,
    pool: Weak<Pool>,
    /// The digest of the credentials a password login made on this connection.
    login: Mutex<Option<[u8; 32]>>,
    /// Requests being judged now: a connection is not closed for its first-request
    /// deadline while its request waits for a password check.
    judging: AtomicUsize,
    /// When the last verdict was given: a connection past its deadline stays a moment
    /// more, for a refusal to reach its client.
    verdict: Mutex<Option<Instant>>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.limits.name)
    }
}

/// A request's handle on its connection.
pub type ConnHandle = Arc<ConnState>;

/// Why a proven connection has no place.
#[derive(Debug, thiserror::Error)]
#[error(
    "{open} connections of other roles are open and the last {kept} places are kept for admins ({settings}.kept_for_admins); close one and try again"
)]
pub struct KeptForAdmins {
    open: usize,
    kept: usize,
    settings: &'static str,
}

impl ConnState {
    /// The server admitted a request on this connection from a caller who is an admin or
    /// not: the connection is proven (no longer closed for its first-request deadline, nor
    /// to make room). Refused for a non-admin when the places left are kept for admins.
    pub fn prove(&self, admin: bool) -> Result<(), KeptForAdmins> {
        if self.proven.load(Ordering::SeqCst) != UNPROVEN {
            return Ok(());
        }
        let Some(pool) = self.pool.upgrade() else {
            return Ok(());
        };
        let limits = &pool.limits;
        let mut state = pool.state.lock().unwrap_or_else(|p| p.into_inner());
        let for_others = limits.max.saturating_sub(limits.kept_for_admins);
        if !admin && state.proven_others >= for_others {
            return Err(KeptForAdmins {
                open: state.proven_others,
                kept: limits.kept_for_admins,
                settings: limits.settings,
            });
        }
        if self
            .proven
            .compare_exchange(
                UNPROVEN,
                if admin { PROVEN_ADMIN } else { PROVEN_OTHER },
                Ordering::SeqCst,
                Ordering::SeqCst,
            )
            .is_ok()
        {
            state.unproven.remove(&self.number);
            uncount(&mut state.unproven_by_peer, &self.peer);
            if !admin {
                state.proven_others += 1;
            }
        }
        Ok(())
    }

    pub fn is_proven(&self) -> bool {
        matches!(
            self.proven.load(Ordering::SeqCst),
            PROVEN_ADMIN | PROVEN_OTHER
        )
    }

    pub fn peer(&self) -> Peer {
        self.peer
    }

    /// The connection among all of the daemon's: its listener's name and its number there.
    pub fn key(&self) -> (&'static str, u64) {
        let listener = self.pool.upgrade().map_or("", |pool| pool.limits.name);
        (listener, self.number)
    }

    /// A request of this connection is being judged until the returned guard is dropped.
    pub fn judging(self: &Arc<Self>) -> Judging {
        self.judging.fetch_add(1, Ordering::SeqCst);
        Judging(self.clone())
    }

    /// A password login with credentials of this digest succeeded on this connection.
    pub fn remember_login(&self, digest: [u8; 32]) {
        if let Ok(mut login) = self.login.lock() {
            *login = Some(digest);
        }
    }

    /// This connection logged in with credentials of this digest before.
    pub fn logged_in(&self, digest: &[u8; 32]) -> bool {
        self.login
            .lock()
            .ok()
            .and_then(|login| *login)
            .is_some_and(|known| crate::argon::same(&known, digest))
    }

    /// Closes the connection: its next read fails.
    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.waker.wake();
    }
}

/// A request being judged (see [`ConnState::judging`]).
pub struct Judging(Arc<ConnState>);

impl Drop for Judging {
    fn drop(&mut self) {
        if let Ok(mut verdict) = self.0.verdict.lock() {
            *verdict = Some(Instant::now());
        }
        self.0.judging.fetch_sub(1, Ordering::SeqCst);
        // Its deadline may have passed meanwhile: the connection looks again.
        self.0.waker.wake();
    }
}

/// A connection's place in its pool, given back when it closes.
struct Place {
    conn: Arc<ConnState>,
    _open: OpenGuard,
}

impl Drop for Place {
    fn drop(&mut self) {
        if let Some(pool) = self.conn.pool.upgrade() {
            pool.release(&self.conn);
        }
    }
}

async fn accept_loop<S, IO>(
    mut accepted: S,
    pool: Arc<Pool>,
    tls: Option<TlsAcceptor>,
    ready: mpsc::Sender<io::Result<Conn<IO>>>,
) where
    S: Stream<Item = io::Result<IO>> + Send + Unpin + 'static,
    IO: AsyncRead + AsyncWrite + Connected + Unpin + Send + 'static,
    IO::ConnectInfo: PeerOf,
{
    let limits = pool.limits.clone();
    let mut refused = Flood::default();
    let mut failed = Flood::default();
    loop {
        let next = tokio::select! {
            next = accepted.next() => next,
            () = ready.closed() => break,
        };
        let io = match next {
            None => break,
            Some(Ok(io)) => io,
            Some(Err(e)) => {
                // Out of file descriptors, mostly: waiting lets connections close.
                if let Some(count) = failed.note() {
                    warn!(listener = limits.name, error = %e, count, "cannot accept connections");
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let peer = io.connect_info().peer();
        let place = match pool.admit(peer) {
            Ok(place) => place,
            Err(why) => {
                drop(io);
                if let Some(count) = refused.note() {
                    log_refusal(&limits, &why, count);
                }
                continue;
            }
        };
        let now = Instant::now();
        let deadlines = Deadlines {
            handshake: now + limits.handshake_timeout,
            first_request: now + limits.first_request_timeout,
        };
        tokio::spawn(handshake(io, place, deadlines, tls.clone(), ready.clone()));
    }
}

fn log_refusal(limits: &Limits, why: &Refused, count: u64) {
    match why {
        Refused::Full => warn!(
            listener = limits.name,
            max = limits.max,
            refused = count,
            "connections refused: as many are open as {}.max allows, all of them in use",
            limits.settings
        ),
        Refused::PeerFull(peer) => warn!(
            listener = limits.name,
            %peer,
            per_peer = limits.per_peer,
            refused = count,
            "connections refused: the peer has as many open as {}.per_peer allows",
            limits.settings
        ),
        Refused::PeerUnproven(peer) => warn!(
            listener = limits.name,
            %peer,
            unproven_per_peer = limits.unproven_per_peer,
            refused = count,
            "connections refused: the peer has as many open without a request admitted yet as {}.unproven_per_peer allows",
            limits.settings
        ),
        Refused::Closing(closing) => warn!(
            listener = limits.name,
            closing,
            refused = count,
            "connections refused: {closing} connections closed to make room are still closing"
        ),
    }
}

/// When a connection must have done what.
#[derive(Clone, Copy)]
struct Deadlines {
    handshake: Instant,
    first_request: Instant,
}

async fn handshake<IO>(
    io: IO,
    place: Place,
    deadlines: Deadlines,
    tls: Option<TlsAcceptor>,
    ready: mpsc::Sender<io::Result<Conn<IO>>>,
) where
    IO: AsyncRead + AsyncWrite + Connected + Unpin + Send + 'static,
{
    let io = match tls {
        None => Io::Plain(io),
        Some(tls) => {
            let accepting = tokio::time::timeout_at(deadlines.handshake, tls.accept(io));
            // Closed to make room meanwhile: the handshake is dropped, and with it the
            // connection's descriptor, at once.
            let outcome = tokio::select! {
                outcome = accepting => outcome,
                () = closed(&place.conn) => {
                    debug!("closed to make room during its TLS handshake");
                    return;
                }
            };
            match outcome {
                Ok(Ok(stream)) => Io::Tls(Box::new(stream)),
                Ok(Err(e)) => {
                    debug!(error = %e, "TLS handshake failed");
                    return;
                }
                Err(_) => {
                    debug!("TLS handshake timed out");
                    return;
                }
            }
        }
    };
    let conn = Conn {
        io,
        preface: Some((
            PREFACE_BYTES,
            Box::pin(tokio::time::sleep_until(deadlines.handshake)),
        )),
        first_request: Some(Box::pin(tokio::time::sleep_until(deadlines.first_request))),
        place,
    };
    let _ = ready.send(Ok(conn)).await;
}

/// Completes when the connection is closed to make room.
async fn closed(conn: &ConnState) {
    std::future::poll_fn(|cx| {
        conn.waker.register(cx.waker());
        if conn.closed.load(Ordering::SeqCst) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
}

/// Counts events and says when to log them: the first, then at most one per
/// [`LOG_EVERY`], with how many there were.
#[derive(Default)]
struct Flood {
    count: u64,
    logged: Option<Instant>,
}

impl Flood {
    fn note(&mut self) -> Option<u64> {
        self.count += 1;
        let now = Instant::now();
        if self.logged.is_some_and(|at| now < at + LOG_EVERY) {
            return None;
        }
        self.logged = Some(now);
        Some(std::mem::take(&mut self.count))
    }
}

enum Io<IO> {
    Plain(IO),
    Tls(Box<TlsStream<IO>>),
}

/// An accepted connection: its place in the pool (given back when it closes), until the
/// HTTP/2 preface has arrived the handshake's deadline, and until it is proven the first
/// request's.
pub struct Conn<IO> {
    io: Io<IO>,
    place: Place,
    /// Preface bytes still to come, and the deadline for them.
    preface: Option<(usize, Pin<Box<Sleep>>)>,
    first_request: Option<Pin<Box<Sleep>>>,
}

/// What a request knows of its connection.
#[derive(Clone, Debug)]
pub struct ConnInfo<I> {
    /// The transport's: `TcpConnectInfo`, or `UdsConnectInfo` (the peer's uid, gid, pid).
    pub transport: I,
    /// The client's certificate (the end-entity one), verified against the client CA.
    pub client_certificate: Option<CertificateDer<'static>>,
    pub conn: ConnHandle,
}

impl<IO: Connected> Connected for Conn<IO> {
    type ConnectInfo = ConnInfo<IO::ConnectInfo>;

    fn connect_info(&self) -> Self::ConnectInfo {
        match &self.io {
            Io::Plain(io) => ConnInfo {
                transport: io.connect_info(),
                client_certificate: None,
                conn: self.place.conn.clone(),
            },
            Io::Tls(tls) => {
                let (io, session) = tls.get_ref();
                ConnInfo {
                    transport: io.connect_info(),
                    client_certificate: session
                        .peer_certificates()
                        .and_then(<[_]>::first)
                        .map(|c| c.clone().into_owned()),
                    conn: self.place.conn.clone(),
                }
            }
        }
    }
}

/// The connection a request came on, whatever its transport (none when it was not
/// accepted through [`incoming`]).
pub fn conn_of(extensions: &http::Extensions) -> Option<ConnHandle> {
    extensions
        .get::<ConnInfo<TcpConnectInfo>>()
        .map(|info| info.conn.clone())
        .or_else(|| {
            extensions
                .get::<ConnInfo<UdsConnectInfo>>()
                .map(|info| info.conn.clone())
        })
}

/// The peer address of a request served over TCP (through [`incoming`] or not).
pub fn remote_addr<T>(request: &Request<T>) -> Option<std::net::SocketAddr> {
    request
        .extensions()
        .get::<ConnInfo<TcpConnectInfo>>()
        .and_then(|info| info.transport.remote_addr())
        .or_else(|| request.remote_addr())
}

/// The verified client certificate of a request served over TLS, if the client sent one.
pub fn client_certificate<T>(request: &Request<T>) -> Option<CertificateDer<'static>> {
    request
        .extensions()
        .get::<ConnInfo<TcpConnectInfo>>()
        .and_then(|info| info.client_certificate.clone())
}

impl<IO> Conn<IO> {
    /// Why the connection must end now, if it must: closed to make room, or no request
    /// admitted before the deadline.
    fn ended(&mut self, cx: &mut Context<'_>) -> Option<io::Error> {
        let conn = &self.place.conn;
        conn.waker.register(cx.waker());
        if conn.closed.load(Ordering::SeqCst) {
            return Some(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "closed to make room: no request admitted yet",
            ));
        }
        if conn.is_proven() {
            self.first_request = None;
        }
        let deadline = self.first_request.as_mut()?;
        if deadline.as_mut().poll(cx).is_pending() || conn.judging.load(Ordering::SeqCst) > 0 {
            return None;
        }
        // A refusal just given goes out first.
        let verdict = conn.verdict.lock().ok().and_then(|v| *v);
        if let Some(at) = verdict
            && at + VERDICT_GRACE > Instant::now()
        {
            deadline.as_mut().reset(at + VERDICT_GRACE);
            let _ = deadline.as_mut().poll(cx);
            return None;
        }
        Some(io::Error::new(
            io::ErrorKind::TimedOut,
            "no request admitted in time",
        ))
    }
}

impl<IO: AsyncRead + AsyncWrite + Unpin> AsyncRead for Conn<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if let Some(error) = self.ended(cx) {
            return Poll::Ready(Err(error));
        }
        let before = buf.filled().len();
        let this = &mut *self;
        let read = match &mut this.io {
            Io::Plain(io) => Pin::new(io).poll_read(cx, buf),
            Io::Tls(tls) => Pin::new(tls.as_mut()).poll_read(cx, buf),
        };
        let Some((left, deadline)) = &mut this.preface else {
            return read;
        };
        match read {
            Poll::Ready(Ok(())) => {
                *left = left.saturating_sub(buf.filled().len() - before);
                if *left == 0 {
                    this.preface = None;
                }
                Poll::Ready(Ok(()))
            }
            Poll::Pending if deadline.as_mut().poll(cx).is_ready() => Poll::Ready(Err(
                io::Error::new(io::ErrorKind::TimedOut, "no HTTP/2 handshake in time"),
            )),
            other => other,
        }
    }
}

impl<IO: AsyncRead + AsyncWrite + Unpin> AsyncWrite for Conn<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match &mut self.io {
            Io::Plain(io) => Pin::new(io).poll_write(cx, buf),
            Io::Tls(tls) => Pin::new(tls.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match &mut self.io {
            Io::Plain(io) => Pin::new(io).poll_write_vectored(cx, bufs),
            Io::Tls(tls) => Pin::new(tls.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match &self.io {
            Io::Plain(io) => io.is_write_vectored(),
            Io::Tls(tls) => tls.is_write_vectored(),
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.io {
            Io::Plain(io) => Pin::new(io).poll_flush(cx),
            Io::Tls(tls) => Pin::new(tls.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.io {
            Io::Plain(io) => Pin::new(io).poll_shutdown(cx),
            Io::Tls(tls) => Pin::new(tls.as_mut()).poll_shutdown(cx),
        }
    }
}

#[cfg(test)]
mod tests;
