//! Who before what: a request's caller is identified and judged against what its method
//! needs from the request's head alone (method, metadata, connection), before a byte of
//! its body is read. A caller who may not make the request is refused at once, and the
//! body a client may have started sending is dropped unread: an unauthenticated 200 MiB
//! Set costs efbd nothing. A method the service does not have is refused before anything
//! else (it proves nothing of its connection). An admitted request gets its caller in its
//! extensions (the handlers read it there instead of identifying again), proves its
//! connection ([`crate::listen::ConnHandle::prove`]), and may send messages up to the size
//! the judge gives: large only for the requests that carry configuration, which only
//! admins make.
//!
//! Memory: the head is held against the [`Budget`] while it is judged (as its peer's);
//! then each message of the body, as its header announces it, then what it inflates to
//! (gzip, up to the method's own limit) and what it decodes to ([`crate::decoded`]), all
//! before tonic takes it in; the handler adds what it builds ([`Spend`]); everything is
//! given back when the response has left. A message that would pass the budget is refused
//! with RESOURCE_EXHAUSTED, nothing of it built.
//!
//! [`Guard`] wraps a tonic service (it keeps the service's name, so a server routes to it
//! as before); a [`Judge`] decides for it, a [`Door`] says what it holds against. efbd's
//! management API and gNMI each have one.

use std::collections::VecDeque;
use std::io::Read;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use http_body::{Body as HttpBody, Frame, SizeHint};
use prost_reflect::MessageDescriptor;
use tonic::Status;
use tonic::body::Body;
use tonic::server::NamedService;

use crate::budget::{Account, Budget, Holder, Spend};
use crate::decoded::Methods;
use crate::listen::Peer;

/// A request the judge lets through: who makes it, and the largest message it may send.
pub struct Admitted<C> {
    pub caller: C,
    /// Whose budget the request spends: the user or Unix account.
    pub account: String,
    /// Admins' connections may take the places kept for them, and admins the memory.
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

    /// A call of a method the service does not have was refused (UNIMPLEMENTED) before it
    /// was judged: judges audit it as far as the head tells who called, without a login.
    async fn refused_unknown(&self, _head: &tonic::Request<()>, _method: &str) {}
}

/// What a guard's requests are held against: the daemon's budget, the methods of the
/// service (what their messages decode to), and whether it takes gzip.
#[derive(Debug)]
pub struct Door {
    pub budget: Arc<Budget>,
    pub methods: Arc<Methods>,
    /// The service takes gzip-compressed requests: the guard inflates them itself, up to
    /// the method's limit, and hands them on uncompressed.
    pub gzip: bool,
}

/// A service behind its judge.
pub struct Guard<S, J> {
    inner: S,
    judge: Arc<J>,
    door: Arc<Door>,
}

impl<S, J> Guard<S, J> {
    pub fn new(inner: S, judge: Arc<J>, door: Arc<Door>) -> Guard<S, J> {
        Guard { inner, judge, door }
    }
}

impl<S: Clone, J> Clone for Guard<S, J> {
    fn clone(&self) -> Self {
        Guard {
            inner: self.inner.clone(),
            judge: self.judge.clone(),
            door: self.door.clone(),
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
        let door = self.door.clone();
        Box::pin(async move {
            let (mut parts, body) = request.into_parts();
            let head = tonic::Request::from_http(http::Request::from_parts(parts.clone(), ()));
            let path = parts.uri.path().to_string();
            let Some(input) = door.methods.input(&path).cloned() else {
                judge.refused_unknown(&head, &path).await;
                drain(body).await;
                return Ok(Status::unimplemented(format!(
                    "there is no method {} here",
                    efb_yang::text::logged(&path)
                ))
                .into_http());
            };
            let conn = crate::listen::conn_of(&parts.extensions);
            let connection = conn.as_ref().map(|c| c.key());
            // The head is in memory while it is judged: the peer's, until it says who. It is
            // counted, never refused (it is here already, at most 16 KiB a call): refusing
            // it by the budget of non-admins would refuse an admin not known yet.
            let mut head_held = door.budget.holding(Holder {
                account: Account::Peer(conn.as_ref().map_or(Peer::Unknown, |c| c.peer())),
                connection,
                admin: false,
            });
            head_held.grow_anyway(head_size(&parts));
            let judging = conn.as_ref().map(|c| c.judging());
            let verdict = judge.judge(&head, &path).await;
            drop(judging);
            drop(head_held);
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
            let spend = Spend::new(door.budget.holding(Holder {
                account: Account::User(admitted.account.clone()),
                connection,
                admin: admitted.admin,
            }));
            parts.extensions.insert(admitted.caller);
            parts.extensions.insert(spend.clone());
            let body = Body::new(Gate::new(body, admitted.max_message, input, &door, &spend));
            let response = inner.call(http::Request::from_parts(parts, body)).await?;
            Ok(response.map(|body| Body::new(Outgoing::new(body, spend))))
        })
    }
}

/// What a request's head takes in memory, as HTTP/2 counts it (32 bytes a field besides
/// its name and value).
fn head_size(parts: &http::request::Parts) -> usize {
    let fields: usize = parts
        .headers
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 32)
        .sum();
    fields + parts.uri.to_string().len() + 256
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
    let mut framing = Framing::default();
    let mut read = 0;
    let reading = async {
        while read < DRAINED_BYTES {
            let frame = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await;
            let Some(Ok(frame)) = frame else {
                return;
            };
            if let Some(data) = frame.data_ref() {
                read += data.len();
                if framing.follow(data) {
                    return;
                }
            }
        }
    };
    let _ = tokio::time::timeout(DRAINED_FOR, reading).await;
}

/// Follows gRPC messages through a body without keeping them.
#[derive(Default)]
struct Framing {
    header: ([u8; HEADER], usize),
    /// Bytes of the current message still to come.
    rest: usize,
}

impl Framing {
    /// Follows `data`; true once a message is whole.
    fn follow(&mut self, mut data: &[u8]) -> bool {
        while !data.is_empty() {
            if self.rest > 0 {
                let taken = self.rest.min(data.len());
                self.rest -= taken;
                data = &data[taken..];
                if self.rest == 0 {
                    return true;
                }
                continue;
            }
            let (header, seen) = &mut self.header;
            let taken = (HEADER - *seen).min(data.len());
            header[*seen..*seen + taken].copy_from_slice(&data[..taken]);
            *seen += taken;
            data = &data[taken..];
            if *seen == HEADER {
                *seen = 0;
                self.rest = announced(header);
                if self.rest == 0 {
                    return true;
                }
            }
        }
        false
    }
}

fn announced(header: &[u8; HEADER]) -> usize {
    u32::from_be_bytes([header[1], header[2], header[3], header[4]]) as usize
}

/// A message being received: its header said this much. Its bytes are copied out of
/// HTTP/2's frames as they come, so that what it holds is exactly what was counted (a
/// frame's bytes share a block with other streams' frames, which keeping them would pin).
struct Incoming {
    compressed: bool,
    announced: usize,
    bytes: Vec<u8>,
}

/// A request body whose gRPC messages are each held against the budget before tonic takes
/// them: refused by its header past the method's limit (RESOURCE_EXHAUSTED, which tonic
/// hands on as it is), gathered whole, inflated (gzip) up to the limit, its decoded size
/// held, then handed on uncompressed.
struct Gate {
    inner: Body,
    max: usize,
    input: MessageDescriptor,
    methods: Arc<Methods>,
    inflate: bool,
    spend: Spend,
    header: ([u8; HEADER], usize),
    message: Option<Incoming>,
    ready: VecDeque<Bytes>,
    /// What the message handed on last holds: given back when the next one begins (tonic
    /// has decoded it by then).
    handed: usize,
}

impl Gate {
    fn new(inner: Body, max: usize, input: MessageDescriptor, door: &Door, spend: &Spend) -> Gate {
        Gate {
            inner,
            max,
            input,
            methods: door.methods.clone(),
            inflate: door.gzip,
            spend: spend.clone(),
            header: ([0; HEADER], 0),
            message: None,
            ready: VecDeque::new(),
            handed: 0,
        }
    }

    /// Takes in `data`: headers, then the bytes of each message.
    fn feed(&mut self, mut data: Bytes) -> Result<(), Status> {
        while !data.is_empty() {
            if let Some(message) = &mut self.message {
                let taken = (message.announced - message.bytes.len()).min(data.len());
                message.bytes.extend_from_slice(&data[..taken]);
                data.advance(taken);
                if message.bytes.len() == message.announced {
                    self.finish()?;
                }
                continue;
            }
            let (header, seen) = &mut self.header;
            let taken = (HEADER - *seen).min(data.len());
            header[*seen..*seen + taken].copy_from_slice(&data[..taken]);
            *seen += taken;
            data.advance(taken);
            if *seen == HEADER {
                *seen = 0;
                let (compressed, length) = (header[0] != 0, announced(header));
                self.begin(compressed, length)?;
                if length == 0 {
                    self.finish()?;
                }
            }
        }
        Ok(())
    }

    fn begin(&mut self, compressed: bool, announced: usize) -> Result<(), Status> {
        if announced > self.max {
            return Err(too_large(announced, self.max));
        }
        self.spend.give_back(std::mem::take(&mut self.handed));
        self.spend.take(HEADER + announced)?;
        self.message = Some(Incoming {
            compressed,
            announced,
            // Room for what was counted; untouched pages cost nothing until written.
            bytes: Vec::with_capacity(announced),
        });
        Ok(())
    }

    /// The message is whole: inflated, its decoded size held, handed on.
    fn finish(&mut self) -> Result<(), Status> {
        let Some(message) = self.message.take() else {
            return Ok(());
        };
        let mut held = HEADER + message.announced;
        let (compressed, bytes) = if message.compressed && self.inflate {
            let inflated = inflate(&message.bytes, self.max, &self.spend)?;
            held += inflated.len();
            // The compressed bytes go now.
            self.spend.give_back(HEADER + message.announced);
            held -= HEADER + message.announced;
            (false, Bytes::from(inflated))
        } else {
            (message.compressed, Bytes::from(message.bytes))
        };
        if !compressed {
            let decoded = self
                .methods
                .decoded_size(&self.input, std::slice::from_ref(&bytes));
            self.spend.take(decoded)?;
            held += decoded;
        }
        let mut header = vec![u8::from(compressed)];
        header.extend((bytes.len() as u32).to_be_bytes());
        self.ready.push_back(Bytes::from(header));
        self.ready.push_back(bytes);
        self.handed = held;
        Ok(())
    }
}

fn too_large(length: usize, max: usize) -> Status {
    Status::resource_exhausted(format!(
        "a message of {length} bytes is more than this request may send ({max} bytes at most)"
    ))
}

/// Inflates a gzip message, at most `max` bytes, holding them as they come (what was held
/// is given back with the rest of the request when it is refused).
fn inflate(compressed: &[u8], max: usize, spend: &Spend) -> Result<Vec<u8>, Status> {
    const STEP: u64 = 64 * 1024;
    let mut gzip = flate2::read::GzDecoder::new(compressed);
    let mut out = Vec::new();
    loop {
        let read = (&mut gzip)
            .take(STEP)
            .read_to_end(&mut out)
            .map_err(|e| Status::invalid_argument(format!("the message is not gzip: {e}")))?;
        if read == 0 {
            return Ok(out);
        }
        if out.len() > max {
            return Err(Status::resource_exhausted(format!(
                "a message that inflates to more than {max} bytes is more than this request may send ({max} bytes at most once decompressed)"
            )));
        }
        spend.take(read)?;
    }
}

impl HttpBody for Gate {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        loop {
            if let Some(ready) = self.ready.pop_front() {
                return Poll::Ready(Some(Ok(Frame::data(ready))));
            }
            let polled = Pin::new(&mut self.inner).poll_frame(cx);
            let Poll::Ready(Some(Ok(frame))) = polled else {
                return polled;
            };
            let data = match frame.into_data() {
                Ok(mut data) => data.copy_to_bytes(data.remaining()),
                Err(frame) => return Poll::Ready(Some(Ok(frame))),
            };
            if let Err(refused) = self.feed(data) {
                return Poll::Ready(Some(Err(refused)));
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.ready.is_empty() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

/// A response body holding its request's spending until it has been sent, and each frame
/// while hyper has it (hyper takes the next one when HTTP/2 has sent most of the last).
struct Outgoing {
    inner: Body,
    spend: Spend,
    in_flight: usize,
}

impl Outgoing {
    fn new(inner: Body, spend: Spend) -> Outgoing {
        Outgoing {
            inner,
            spend,
            in_flight: 0,
        }
    }
}

impl HttpBody for Outgoing {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(frame) = &polled {
            let sent = std::mem::take(&mut self.in_flight);
            self.spend.give_back(sent);
            if let Some(Ok(frame)) = frame
                && let Some(data) = frame.data_ref()
            {
                self.in_flight = data.len();
                self.spend.take_anyway(data.len());
            }
        }
        polled
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
    use crate::budget::Limits;
    use std::io::Write;

    fn message(flag: u8, payload: &[u8]) -> Vec<u8> {
        let mut bytes = vec![flag];
        bytes.extend((payload.len() as u32).to_be_bytes());
        bytes.extend_from_slice(payload);
        bytes
    }

    fn door(per_account: usize) -> (Door, Spend) {
        let budget = Budget::new(Limits {
            total: usize::MAX,
            per_account,
            per_connection: usize::MAX,
            kept_for_admins: 0,
        });
        let spend = Spend::new(budget.holding(Holder {
            account: Account::User("vic".into()),
            connection: None,
            admin: false,
        }));
        let methods = Methods::new(&[gnmi_proto::FILE_DESCRIPTOR_SET]).unwrap();
        let door = Door {
            budget,
            methods: Arc::new(methods),
            gzip: true,
        };
        (door, spend)
    }

    fn gate(max: usize, per_account: usize) -> Gate {
        let (door, spend) = door(per_account);
        let input = door.methods.input("/gnmi.gNMI/Get").unwrap().clone();
        Gate::new(Body::empty(), max, input, &door, &spend)
    }

    fn handed(gate: &mut Gate) -> Vec<u8> {
        gate.ready.drain(..).flat_map(|b| b.to_vec()).collect()
    }

    fn gzip(payload: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        encoder.write_all(payload).unwrap();
        encoder.finish().unwrap()
    }

    #[test]
    fn messages_are_followed_across_chunks_and_a_large_one_is_refused_by_its_header() {
        let mut gate = gate(10, usize::MAX);
        // Two GetRequests with an empty path (a field of 2 bytes).
        let mut stream = message(0, &[0x12, 0x00]);
        stream.extend(message(0, &[0x12, 0x00, 0x12, 0x00]));
        // Cut anywhere, even inside a header.
        for chunk in stream.chunks(3) {
            gate.feed(Bytes::copy_from_slice(chunk)).unwrap();
        }
        assert_eq!(handed(&mut gate), stream, "handed on as they came");
        let refused = gate.feed(Bytes::from(message(0, &[0; 11]))).unwrap_err();
        assert_eq!(refused.code(), tonic::Code::ResourceExhausted);
        assert!(
            refused.message().contains("11 bytes"),
            "{}",
            refused.message()
        );
    }

    #[test]
    fn gzip_is_inflated_up_to_the_limit_and_handed_on_plain() {
        let mut gate = gate(2000, usize::MAX);
        let plain = [0x12, 0x00].repeat(300);
        gate.feed(Bytes::from(message(1, &gzip(&plain)))).unwrap();
        assert_eq!(handed(&mut gate), message(0, &plain));
        // A bomb: a few hundred bytes on the wire, a megabyte inflated.
        let bomb = gzip(&[0x12, 0x00].repeat(512 * 1024));
        assert!(bomb.len() < 1500, "{}", bomb.len());
        let refused = gate.feed(Bytes::from(message(1, &bomb))).unwrap_err();
        assert_eq!(refused.code(), tonic::Code::ResourceExhausted);
        assert!(
            refused
                .message()
                .contains("inflates to more than 2000 bytes"),
            "{}",
            refused.message()
        );
        let refused = gate.feed(Bytes::from(message(1, b"not gzip"))).unwrap_err();
        assert_eq!(refused.code(), tonic::Code::InvalidArgument);
    }

    #[test]
    fn what_a_message_decodes_to_is_held_before_it_is_handed_on() {
        // 200 KB of empty paths decode to 10 MB or more: past a budget of 4 MiB.
        let mut gate = gate(1 << 20, 4 << 20);
        let paths = [0x12, 0x00].repeat(100_000);
        let refused = gate.feed(Bytes::from(message(0, &paths))).unwrap_err();
        assert_eq!(refused.code(), tonic::Code::ResourceExhausted);
        assert!(
            refused.message().contains("memory.per_account_mib"),
            "{}",
            refused.message()
        );
        assert!(gate.ready.is_empty(), "nothing handed on");
        // A small one passes, and what it holds is given back when the next one begins.
        let mut gate = self::gate(1 << 20, 4 << 20);
        gate.feed(Bytes::from(message(0, &[0x12, 0x00]))).unwrap();
        let first = gate.handed;
        assert!(first > 0);
        gate.feed(Bytes::from(message(0, &[0x12, 0x00]))).unwrap();
        assert_eq!(gate.handed, first);
    }
}
