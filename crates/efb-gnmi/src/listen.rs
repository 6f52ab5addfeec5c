//! Accepted connections, bounded, for any gRPC listener (gNMI, the management API; TCP or
//! Unix sockets): at most `max` open at a time, more are closed as soon as accepted (and
//! logged); each has `handshake_timeout` from its accept to finish its handshake, TLS when
//! there is one and then HTTP/2's client preface, or it is closed; after that, HTTP/2
//! keepalive pings find peers that stopped answering. Without this, a client that opens
//! connections and sends nothing holds them for ever, one file descriptor each.
//!
//! [`incoming`] wraps a stream of accepted connections into one to give tonic's
//! `serve_with_incoming`; [`server`] is a tonic server with the keepalive set. A request
//! served on them carries [`ConnInfo`]: the transport's own (peer address, or the Unix
//! peer's credentials) and the client certificate of a TLS connection that sent one.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::{Stream, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::time::{Instant, Sleep};
pub use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::pki_types::CertificateDer;
use tokio_rustls::server::TlsStream;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Request;
use tonic::transport::server::{Connected, TcpConnectInfo};
use tracing::{debug, warn};

/// What an HTTP/2 client sends first ("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"): the handshake
/// is done when that much has arrived.
const PREFACE_BYTES: usize = 24;

/// How often refusals and accept errors are logged at most (they come in floods).
const LOG_EVERY: Duration = Duration::from_secs(10);

/// The bounds of one listener.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Connections open at once.
    pub max: usize,
    /// From accept to the end of the handshake (TLS, then the HTTP/2 preface).
    pub handshake_timeout: Duration,
    /// A connection silent this long is pinged; one that does not answer within the
    /// same time is closed. `None`: no pings, for clients that answer them only while
    /// they run a call (efb-cli waiting at its prompt).
    pub keepalive: Option<Duration>,
    /// What the log calls the listener ("gNMI").
    pub name: &'static str,
    /// Where its settings are ("gnmi.connections"), for the log.
    pub settings: &'static str,
}

/// A tonic server builder with HTTP/2 keepalive as `limits` say.
pub fn server(limits: &Limits) -> tonic::transport::Server {
    tonic::transport::Server::builder()
        .http2_keepalive_interval(limits.keepalive)
        .http2_keepalive_timeout(limits.keepalive)
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
{
    let (ready, out) = mpsc::channel(16);
    tokio::spawn(accept_loop(accepted, limits, tls, ready, open.clone()));
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

/// A connection's place among the `max`, and in the count of open ones.
struct Place {
    _permit: OwnedSemaphorePermit,
    _open: OpenGuard,
}

async fn accept_loop<S, IO>(
    mut accepted: S,
    limits: Limits,
    tls: Option<TlsAcceptor>,
    ready: mpsc::Sender<io::Result<Conn<IO>>>,
    open: Open,
) where
    S: Stream<Item = io::Result<IO>> + Send + Unpin + 'static,
    IO: AsyncRead + AsyncWrite + Connected + Unpin + Send + 'static,
{
    let permits = Arc::new(Semaphore::new(limits.max));
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
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            drop(io);
            if let Some(count) = refused.note() {
                warn!(
                    listener = limits.name,
                    max = limits.max,
                    refused = count,
                    "connections refused: as many are open as {}.max allows",
                    limits.settings
                );
            }
            continue;
        };
        let place = Place {
            _permit: permit,
            _open: open.enter(),
        };
        let deadline = Instant::now() + limits.handshake_timeout;
        tokio::spawn(handshake(io, place, deadline, tls.clone(), ready.clone()));
    }
}

async fn handshake<IO>(
    io: IO,
    place: Place,
    deadline: Instant,
    tls: Option<TlsAcceptor>,
    ready: mpsc::Sender<io::Result<Conn<IO>>>,
) where
    IO: AsyncRead + AsyncWrite + Connected + Unpin + Send + 'static,
{
    let io = match tls {
        None => Io::Plain(io),
        Some(tls) => match tokio::time::timeout_at(deadline, tls.accept(io)).await {
            Ok(Ok(stream)) => Io::Tls(Box::new(stream)),
            Ok(Err(e)) => {
                debug!(error = %e, "TLS handshake failed");
                return;
            }
            Err(_) => {
                debug!("TLS handshake timed out");
                return;
            }
        },
    };
    let conn = Conn {
        io,
        _place: place,
        preface: Some((PREFACE_BYTES, Box::pin(tokio::time::sleep_until(deadline)))),
    };
    let _ = ready.send(Ok(conn)).await;
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

/// An accepted connection: its place among the `max` (given back when it closes), and,
/// until the HTTP/2 preface has arrived, the handshake's deadline.
pub struct Conn<IO> {
    io: Io<IO>,
    _place: Place,
    /// Preface bytes still to come, and the deadline for them.
    preface: Option<(usize, Pin<Box<Sleep>>)>,
}

/// What a request knows of its connection.
#[derive(Clone, Debug)]
pub struct ConnInfo<I> {
    /// The transport's: `TcpConnectInfo`, or `UdsConnectInfo` (the peer's uid, gid, pid).
    pub transport: I,
    /// The client's certificate (the end-entity one), verified against the client CA.
    pub client_certificate: Option<CertificateDer<'static>>,
}

impl<IO: Connected> Connected for Conn<IO> {
    type ConnectInfo = ConnInfo<IO::ConnectInfo>;

    fn connect_info(&self) -> Self::ConnectInfo {
        match &self.io {
            Io::Plain(io) => ConnInfo {
                transport: io.connect_info(),
                client_certificate: None,
            },
            Io::Tls(tls) => {
                let (io, session) = tls.get_ref();
                ConnInfo {
                    transport: io.connect_info(),
                    client_certificate: session
                        .peer_certificates()
                        .and_then(<[_]>::first)
                        .map(|c| c.clone().into_owned()),
                }
            }
        }
    }
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

impl<IO: AsyncRead + AsyncWrite + Unpin> AsyncRead for Conn<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
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
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};
    use tokio_stream::wrappers::TcpListenerStream;

    async fn listening(max: usize) -> (String, ReceiverStream<io::Result<Conn<TcpStream>>>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let limits = Limits {
            max,
            handshake_timeout: Duration::from_millis(300),
            keepalive: Some(Duration::from_secs(30)),
            name: "test",
            settings: "test.connections",
        };
        (
            address,
            incoming(TcpListenerStream::new(listener), limits, None),
        )
    }

    /// True when the peer closed the connection within `within`.
    async fn closed(stream: &mut TcpStream, within: Duration) -> bool {
        let mut byte = [0u8; 1];
        matches!(
            tokio::time::timeout(within, stream.read(&mut byte)).await,
            Ok(Ok(0) | Err(_))
        )
    }

    #[tokio::test]
    async fn a_silent_connection_is_closed_after_the_handshake_timeout() {
        let (address, mut conns) = listening(4).await;
        let server = tokio::spawn(async move {
            let mut conn = conns.next().await.unwrap().unwrap();
            let mut buf = [0u8; 64];
            conn.read(&mut buf).await
        });
        let mut client = TcpStream::connect(&address).await.unwrap();
        let started = std::time::Instant::now();
        let read = server.await.unwrap();
        assert_eq!(read.unwrap_err().kind(), io::ErrorKind::TimedOut);
        assert!(started.elapsed() < Duration::from_secs(2));
        assert!(closed(&mut client, Duration::from_secs(2)).await);
    }

    #[tokio::test]
    async fn a_connection_that_sent_its_preface_stays() {
        let (address, mut conns) = listening(4).await;
        let mut client = TcpStream::connect(&address).await.unwrap();
        client
            .write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
            .await
            .unwrap();
        let mut conn = conns.next().await.unwrap().unwrap();
        let mut buf = [0u8; 64];
        let mut got = 0;
        while got < PREFACE_BYTES {
            got += conn.read(&mut buf).await.unwrap();
        }
        let later = tokio::time::timeout(Duration::from_millis(600), conn.read(&mut buf)).await;
        assert!(
            later.is_err(),
            "still open and waiting after the handshake timeout"
        );
    }

    #[tokio::test]
    async fn connections_beyond_the_limit_are_closed_and_places_come_back() {
        let (address, mut conns) = listening(2).await;
        let mut kept = Vec::new();
        for _ in 0..2 {
            let client = TcpStream::connect(&address).await.unwrap();
            kept.push((client, conns.next().await.unwrap().unwrap()));
        }
        let mut third = TcpStream::connect(&address).await.unwrap();
        assert!(closed(&mut third, Duration::from_secs(1)).await);
        drop(kept.pop());
        // The place is given back when the connection is dropped.
        let _fourth = TcpStream::connect(&address).await.unwrap();
        assert!(
            tokio::time::timeout(Duration::from_secs(1), conns.next())
                .await
                .is_ok()
        );
    }
}
