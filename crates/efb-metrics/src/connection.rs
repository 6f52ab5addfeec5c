//! One connection, from its TLS handshake to its close: HTTP/1.1 with bounded headers and
//! a deadline for the handshake and each request's headers (which is also how long a
//! kept-alive connection may stay idle), closed early when its place is needed or its
//! answer is not read.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tracing::debug;

use crate::Scraped;
use crate::answer::{Shared, answer};
use crate::room::{Place, Seat};

/// An answer must have left within this (a client that does not read it holds a place).
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// The most a request's head (request line and headers) may take, in bytes; more is
/// answered 431. hyper's read buffer is bounded by it too (8 KiB is hyper's least).
const MAX_HEAD: usize = 16 * 1024;

/// The most headers a request may have.
const MAX_HEADERS: usize = 64;

/// Serves the connection `stream` from `peer` until it closes, must make room (its place
/// is taken), its answer is overdue, or the server stops.
pub async fn serve<F, Fut>(
    stream: TcpStream,
    peer: SocketAddr,
    shared: Arc<Shared<F>>,
    seat: Seat,
    mut stopped: watch::Receiver<bool>,
) where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Scraped> + Send + 'static,
{
    let place = seat.place.clone();
    let http = async {
        match shared.tls.clone() {
            None => http(stream, peer, shared, place.clone()).await,
            Some(acceptor) => {
                let handshake = acceptor.accept(stream);
                match tokio::time::timeout(shared.header_timeout, handshake).await {
                    Ok(Ok(stream)) => http(stream, peer, shared, place.clone()).await,
                    Ok(Err(e)) => debug!(%peer, error = %e, "metrics: TLS handshake failed"),
                    Err(_) => debug!(%peer, "metrics: no TLS handshake in time"),
                }
            }
        }
    };
    tokio::select! {
        () = http => {}
        () = place.closing() => debug!(%peer, "metrics: idle connection closed to make room"),
        () = overdue(&place) => debug!(%peer, "metrics: answer not read in time, connection closed"),
        _ = stopped.wait_for(|stop| *stop) => {}
    }
    drop(seat);
}

async fn http<S, F, Fut>(stream: S, peer: SocketAddr, shared: Arc<Shared<F>>, place: Arc<Place>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Scraped> + Send + 'static,
{
    let io = TokioIo::new(Tracked {
        inner: stream,
        place: place.clone(),
    });
    let header_timeout = shared.header_timeout;
    let service = service_fn(move |request| answer(request, shared.clone(), place.clone(), peer));
    let served = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout)
        .max_buf_size(MAX_HEAD)
        .max_headers(MAX_HEADERS)
        .serve_connection(io, service)
        .await;
    if let Err(e) = served {
        debug!(%peer, error = %e, "metrics: connection ended");
    }
}

/// Completes when the connection's answer is overdue.
async fn overdue(place: &Place) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tick.tick().await;
        if place.overdue(ANSWER_TIMEOUT) {
            return;
        }
    }
}

/// The connection's transport, telling its place when a flush completes (after an answer
/// was handed to hyper: the answer has left, the connection is idle).
struct Tracked<S> {
    inner: S,
    place: Arc<Place>,
}

impl<S: AsyncRead + Unpin> AsyncRead for Tracked<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Tracked<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let flushed = Pin::new(&mut this.inner).poll_flush(cx);
        if let Poll::Ready(Ok(())) = flushed {
            this.place.flushed();
        }
        flushed
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}
