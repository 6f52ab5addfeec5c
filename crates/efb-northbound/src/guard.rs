//! Who before what: a request's caller is identified and judged against what its method
//! needs from the request's head alone (method, metadata, connection), before a byte of
//! its body is read. A caller who may not make the request is refused at once, and the
//! body a client may have started sending is dropped unread: an unauthenticated 200 MiB
//! Set costs efbd nothing. An admitted request gets its caller in its extensions (the
//! handlers read it there instead of identifying again), proves its connection
//! ([`crate::listen::ConnHandle::prove`]), and may send messages up to the size the judge
//! gives: large only for the requests that carry configuration, which only admins make.
//!
//! [`Guard`] wraps a tonic service (it keeps the service's name, so a server routes to it
//! as before); a [`Judge`] decides for it. efbd's management API and gNMI each have one.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use http_body::{Body as HttpBody, Frame, SizeHint};
use tonic::Status;
use tonic::body::Body;
use tonic::server::NamedService;

/// A request the judge lets through: who makes it, and the largest message it may send.
pub struct Admitted<C> {
    pub caller: C,
    /// Admins' connections may take the places kept for them.
    pub admin: bool,
    pub max_message: usize,
}

/// Decides, from a request's head, who calls and whether they may call `method` (the gRPC
/// path, "/gnmi.gNMI/Set"). A refusal is the status the client gets; judges audit it.
#[tonic::async_trait]
pub trait Judge: Send + Sync + 'static {
    type Caller: Clone + Send + Sync + 'static;

    async fn judge(
        &self,
        head: &tonic::Request<()>,
        method: &str,
    ) -> Result<Admitted<Self::Caller>, Status>;
}

/// A service behind its judge.
pub struct Guard<S, J> {
    inner: S,
    judge: Arc<J>,
}

impl<S, J> Guard<S, J> {
    pub fn new(inner: S, judge: Arc<J>) -> Guard<S, J> {
        Guard { inner, judge }
    }
}

impl<S: Clone, J> Clone for Guard<S, J> {
    fn clone(&self) -> Self {
        Guard {
            inner: self.inner.clone(),
            judge: self.judge.clone(),
        }
    }
}

impl<S: NamedService, J> NamedService for Guard<S, J> {
    const NAME: &'static str = S::NAME;
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, J> tower_service::Service<http::Request<Body>> for Guard<S, J>
where
    S: tower_service::Service<http::Request<Body>, Response = http::Response<Body>>
        + Clone
        + Send
        + 'static,
    S::Future: Send,
    J: Judge,
{
    type Response = http::Response<Body>;
    type Error = S::Error;
    type Future = BoxFuture<Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        // The service polled ready is the one that serves; a clone stays for the next call.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let judge = self.judge.clone();
        Box::pin(async move {
            let (mut parts, body) = request.into_parts();
            let head = tonic::Request::from_http(http::Request::from_parts(parts.clone(), ()));
            let conn = crate::listen::conn_of(&parts.extensions);
            let judging = conn.as_ref().map(|c| c.judging());
            let verdict = judge.judge(&head, parts.uri.path()).await;
            drop(judging);
            let admitted = match verdict {
                Ok(admitted) => admitted,
                Err(refused) => {
                    drain(body).await;
                    return Ok(refused.into_http());
                }
            };
            if let Some(conn) = conn
                && let Err(full) = conn.prove(admitted.admin)
            {
                conn.close();
                return Ok(Status::resource_exhausted(full.to_string()).into_http());
            }
            parts.extensions.insert(admitted.caller);
            let body = Body::new(MessageLimit::new(body, admitted.max_message));
            inner.call(http::Request::from_parts(parts, body)).await
        })
    }
}

/// gRPC's message header: a compression flag, then the length (4 bytes, big-endian).
const HEADER: usize = 5;

/// What a refused request's body is read of, at most, before the refusal goes out.
const DRAINED_BYTES: usize = 64 * 1024 * 1024;
const DRAINED_FOR: std::time::Duration = std::time::Duration::from_secs(2);

/// Reads, keeping none of it, what the client sends of a request refused before its body
/// was read, until the body ends or its first message is whole (at most 64 MiB, 2 s: it
/// costs time, not memory): an HTTP/2 client still sending when the answer comes reports
/// the reset of its stream ("broken pipe"), not the answer. A larger body is cut off.
async fn drain(mut body: Body) {
    let mut framing = MessageLimit::new(Body::empty(), usize::MAX);
    let mut read = 0;
    let reading = async {
        while read < DRAINED_BYTES {
            let frame = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await;
            let Some(Ok(frame)) = frame else {
                return;
            };
            if let Some(data) = frame.data_ref() {
                read += data.len();
                if framing.check(data).is_err() || framing.whole() {
                    return;
                }
            }
        }
    };
    let _ = tokio::time::timeout(DRAINED_FOR, reading).await;
}

/// A request body whose gRPC messages may be `max` bytes each: a larger one is refused
/// when its header arrives, before its bytes are taken in (RESOURCE_EXHAUSTED, which
/// tonic hands on as it is).
struct MessageLimit {
    inner: Body,
    max: usize,
    /// Bytes of the current message's header seen so far, and the header.
    header: ([u8; HEADER], usize),
    /// Bytes of the current message still to come.
    rest: usize,
    /// A message header was seen.
    began: bool,
}

impl MessageLimit {
    fn new(inner: Body, max: usize) -> MessageLimit {
        MessageLimit {
            inner,
            max,
            header: ([0; HEADER], 0),
            rest: 0,
            began: false,
        }
    }

    /// Every message that began is whole (and one began).
    fn whole(&self) -> bool {
        self.rest == 0 && self.header.1 == 0 && self.began
    }

    /// Follows the messages through `data`; refuses one past the limit.
    fn check(&mut self, mut data: &[u8]) -> Result<(), Status> {
        while !data.is_empty() {
            if self.rest > 0 {
                let taken = self.rest.min(data.len());
                self.rest -= taken;
                data = &data[taken..];
                continue;
            }
            let (header, seen) = &mut self.header;
            let taken = (HEADER - *seen).min(data.len());
            header[*seen..*seen + taken].copy_from_slice(&data[..taken]);
            *seen += taken;
            data = &data[taken..];
            if *seen < HEADER {
                break;
            }
            *seen = 0;
            self.began = true;
            let length = u32::from_be_bytes([header[1], header[2], header[3], header[4]]) as usize;
            if length > self.max {
                return Err(Status::resource_exhausted(format!(
                    "a message of {length} bytes is more than this request may send ({} bytes at most)",
                    self.max
                )));
            }
            self.rest = length;
        }
        Ok(())
    }
}

impl HttpBody for MessageLimit {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        let Poll::Ready(Some(Ok(frame))) = polled else {
            return polled;
        };
        let frame = frame.map_data(|mut data| data.copy_to_bytes(data.remaining()));
        if let Some(data) = frame.data_ref()
            && let Err(refused) = self.check(data)
        {
            return Poll::Ready(Some(Err(refused)));
        }
        Poll::Ready(Some(Ok(frame)))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn message(length: u32) -> Vec<u8> {
        let mut bytes = vec![0u8];
        bytes.extend(length.to_be_bytes());
        bytes.extend(std::iter::repeat_n(7u8, length as usize));
        bytes
    }

    #[test]
    fn messages_are_followed_across_chunks_and_a_large_one_is_refused_by_its_header() {
        let mut limit = MessageLimit::new(Body::empty(), 10);
        let mut stream = message(10);
        stream.extend(message(3));
        // Cut anywhere, even inside a header.
        for chunk in stream.chunks(3) {
            limit.check(chunk).unwrap();
        }
        assert_eq!((limit.rest, limit.header.1), (0, 0));
        let big = &message(11)[..HEADER];
        let refused = limit.check(big).unwrap_err();
        assert_eq!(refused.code(), tonic::Code::ResourceExhausted);
        assert!(
            refused.message().contains("11 bytes"),
            "{}",
            refused.message()
        );
    }
}
