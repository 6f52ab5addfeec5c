//! efb-attack: the attacks of issue 43, as a separate process (so that the memory measured is
//! efbd's alone), for tests/hostile_memory.rs. Each prints one line of results and, where it
//! holds something open, waits for its standard input to close before letting go.
//!
//! ```text
//! efb-attack TARGET [--user U --password P] half-sent METHOD CONNS STREAMS BYTES
//!     CONNS connections of STREAMS streams each calling METHOD ("/gnmi.gNMI/Get"), each
//!     announcing a message of BYTES bytes and sending all but its last byte
//! efb-attack TARGET [--user U --password P] get-repeat K
//!     one gNMI Get of the root path repeated K times
//! efb-attack TARGET [--user U --password P] gzip-get PATHS
//!     one gNMI Get of PATHS tiny paths, gzip-compressed (a few KB on the wire)
//! efb-attack TARGET [--user U --password P] unread METHOD CONNS STREAMS
//!     CONNS connections of STREAMS streams each calling METHOD with an empty message (the
//!     management API's Get: the whole running configuration) and never reading a reply
//! efb-attack TARGET hold-tcp CONNS ADDRESSES
//!     CONNS TCP connections from 127.0.0.2 and the next ADDRESSES - 1 addresses, that
//!     send nothing (no TLS handshake), held; how many efbd closed by the end
//! efb-attack TARGET [--user U --password P] unknown-method N
//!     N calls of a method the API does not have, each on a connection of its own, held
//! ```
//! TARGET: `unix:PATH`, `tcp:ADDR` (plaintext) or `tls:ADDR:CA_FILE`.

use std::io::{Read, Write};
use std::process::ExitCode;
use std::sync::Arc;

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName, pem::PemObject};
use tokio_rustls::rustls::{ClientConfig, RootCertStore};

trait Io: AsyncRead + AsyncWrite + Unpin + Send + 'static {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> Io for T {}

#[derive(Clone)]
enum Target {
    Unix(String),
    Tcp(String),
    Tls(String, Arc<ClientConfig>),
}

struct Login {
    user: Option<String>,
    password: Option<String>,
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Ok(runtime) = tokio::runtime::Runtime::new() else {
        println!("error: no runtime");
        return ExitCode::FAILURE;
    };
    match runtime.block_on(run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            println!("error: {message}");
            ExitCode::from(2)
        }
    }
}

async fn run(mut args: Vec<String>) -> Result<(), String> {
    if args.is_empty() {
        return Err("usage: efb-attack TARGET [--user U --password P] COMMAND ARGS".into());
    }
    let target = target(&args.remove(0))?;
    let login = Login {
        user: option(&mut args, "--user"),
        password: option(&mut args, "--password"),
    };
    let number = |i: usize| -> Result<usize, String> {
        args.get(i)
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| format!("argument {i} must be a number"))
    };
    match args.first().map(String::as_str) {
        Some("half-sent") => {
            let method = args.get(1).ok_or("half-sent needs a METHOD")?.clone();
            half_sent(&target, &login, &method, number(2)?, number(3)?, number(4)?).await
        }
        Some("unread") => {
            let method = args.get(1).ok_or("unread needs a METHOD")?.clone();
            unread(&target, &login, &method, number(2)?, number(3)?).await
        }
        Some("get-repeat") => get_repeat(&target, &login, number(1)?).await,
        Some("gzip-get") => gzip_get(&target, &login, number(1)?).await,
        Some("hold-tcp") => hold_tcp(&target, number(1)?, number(2)?).await,
        Some("unknown-method") => unknown_method(&target, &login, number(1)?).await,
        other => Err(format!("unknown command {other:?}")),
    }
}

fn option(args: &mut Vec<String>, name: &str) -> Option<String> {
    let at = args.iter().position(|a| a == name)?;
    args.remove(at);
    (at < args.len()).then(|| args.remove(at))
}

fn target(text: &str) -> Result<Target, String> {
    if let Some(path) = text.strip_prefix("unix:") {
        return Ok(Target::Unix(path.to_string()));
    }
    if let Some(addr) = text.strip_prefix("tcp:") {
        return Ok(Target::Tcp(addr.to_string()));
    }
    let rest = text
        .strip_prefix("tls:")
        .ok_or("TARGET: unix:, tcp: or tls:")?;
    let (addr, ca) = rest.rsplit_once(':').ok_or("tls:ADDR:CA_FILE")?;
    let mut roots = RootCertStore::empty();
    let pem = std::fs::read(ca).map_err(|e| format!("{ca}: {e}"))?;
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|e| format!("{ca}: {e}"))?;
        roots.add(cert).map_err(|e| format!("{ca}: {e}"))?;
    }
    let mut config = ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Target::Tls(addr.to_string(), Arc::new(config)))
}

async fn connect(target: &Target) -> Result<Box<dyn Io>, String> {
    let failed = |e: std::io::Error| format!("cannot connect: {e}");
    Ok(match target {
        Target::Unix(path) => Box::new(
            tokio::net::UnixStream::connect(path)
                .await
                .map_err(failed)?,
        ),
        Target::Tcp(addr) => Box::new(tokio::net::TcpStream::connect(addr).await.map_err(failed)?),
        Target::Tls(addr, config) => {
            let tcp = tokio::net::TcpStream::connect(addr).await.map_err(failed)?;
            let name = ServerName::try_from("localhost").map_err(|e| e.to_string())?;
            let tls = TlsConnector::from(config.clone()).connect(name, tcp).await;
            Box::new(tls.map_err(failed)?)
        }
    })
}

type Sender = h2::client::SendRequest<Bytes>;

/// An HTTP/2 connection to the target, driven in the background.
async fn h2_connection(target: &Target) -> Result<Sender, String> {
    let io = connect(target).await?;
    let (sender, connection) = h2::client::Builder::new()
        .initial_window_size(16 * 1024 * 1024)
        .handshake(io)
        .await
        .map_err(|e| format!("HTTP/2 handshake: {e}"))?;
    tokio::spawn(connection);
    Ok(sender)
}

fn grpc_request(method: &str, login: &Login) -> Result<http::Request<()>, String> {
    let mut request = http::Request::post(format!("http://localhost{method}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    if let Some(user) = &login.user {
        request = request.header("username", user.as_str());
    }
    if let Some(password) = &login.password {
        request = request.header("password", password.as_str());
    }
    request.body(()).map_err(|e| e.to_string())
}

/// A gRPC message's frame: not compressed, its length, then `payload`.
fn frame(compressed: bool, announced: usize, payload: &[u8]) -> Bytes {
    let mut bytes = vec![u8::from(compressed)];
    bytes.extend((announced as u32).to_be_bytes());
    bytes.extend_from_slice(payload);
    Bytes::from(bytes)
}

async fn half_sent(
    target: &Target,
    login: &Login,
    method: &str,
    conns: usize,
    streams: usize,
    bytes: usize,
) -> Result<(), String> {
    let body = frame(false, bytes, &vec![0u8; bytes.saturating_sub(1)]);
    calls_held(target, login, method, (conns, streams), body, false).await
}

async fn unread(
    target: &Target,
    login: &Login,
    method: &str,
    conns: usize,
    streams: usize,
) -> Result<(), String> {
    calls_held(
        target,
        login,
        method,
        (conns, streams),
        frame(false, 0, &[]),
        true,
    )
    .await
}

/// CONNS x STREAMS calls of `method` sending `body` (the end of the request when `whole`),
/// their answers counted (headers only: no reply is read), held until the test lets go.
async fn calls_held(
    target: &Target,
    login: &Login,
    method: &str,
    (conns, streams): (usize, usize),
    body: Bytes,
    whole: bool,
) -> Result<(), String> {
    let mut held = Vec::new();
    let answers: Answers = Arc::default();
    let unread: Unread = Arc::default();
    let (mut opened, mut refused) = (0, 0);
    for _ in 0..conns {
        let Ok(sender) = h2_connection(target).await else {
            refused += 1;
            continue;
        };
        for _ in 0..streams {
            let ready =
                tokio::time::timeout(std::time::Duration::from_secs(1), sender.clone().ready())
                    .await;
            let Ok(Ok(mut ready)) = ready else {
                break;
            };
            let request = grpc_request(method, login)?;
            let Ok((response, mut stream)) = ready.send_request(request, false) else {
                break;
            };
            if stream.send_data(body.clone(), whole).is_err() {
                break;
            }
            opened += 1;
            tokio::spawn(count_answer(response, answers.clone(), unread.clone()));
            held.push(stream);
        }
    }
    // Refusals come at once, or after efbd read what the client sends of the message (at
    // most 2 s); what efbd takes in waits for the last byte.
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    let answers = answers.lock().map(|a| a.clone()).unwrap_or_default();
    println!("opened {opened} streams ({refused} connections refused); answered: {answers:?}");
    let _ = std::io::stdout().flush();
    tokio::task::block_in_place(hold);
    Ok(())
}

type Answers = Arc<std::sync::Mutex<std::collections::BTreeMap<String, usize>>>;
type Unread = Arc<std::sync::Mutex<Vec<h2::RecvStream>>>;

/// Counts the answer of a call by its gRPC status; its body is kept unread (a body dropped
/// would let HTTP/2 take in the rest of the reply).
async fn count_answer(response: h2::client::ResponseFuture, answers: Answers, unread: Unread) {
    let key = match response.await {
        Ok(response) => {
            let status = response
                .headers()
                .get("grpc-status")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("(none yet)")
                .to_string();
            if let Ok(mut unread) = unread.lock() {
                unread.push(response.into_body());
            }
            format!("status {status}")
        }
        Err(e) => format!("reset: {e}"),
    };
    if let Ok(mut answers) = answers.lock() {
        *answers.entry(key).or_insert(0usize) += 1;
    }
}

/// A unary gRPC call with `message` as its one message: the status and the reply's size.
async fn unary(target: &Target, login: &Login, method: &str, message: Bytes) -> String {
    let result = async {
        let sender = h2_connection(target).await?;
        let mut ready = sender.ready().await.map_err(|e| e.to_string())?;
        let (response, mut stream) = ready
            .send_request(grpc_request(method, login)?, false)
            .map_err(|e| e.to_string())?;
        stream.send_data(message, true).map_err(|e| e.to_string())?;
        let response = response.await.map_err(|e| e.to_string())?;
        let (head, mut body) = response.into_parts();
        let mut received = 0;
        while let Some(data) = body.data().await {
            let data = data.map_err(|e| e.to_string())?;
            received += data.len();
            let _ = body.flow_control().release_capacity(data.len());
        }
        let trailers = body.trailers().await.map_err(|e| e.to_string())?;
        let status = trailers
            .as_ref()
            .and_then(|t| t.get("grpc-status"))
            .or_else(|| head.headers.get("grpc-status"));
        let message = trailers
            .as_ref()
            .and_then(|t| t.get("grpc-message"))
            .or_else(|| head.headers.get("grpc-message"));
        let text = |v: Option<&http::HeaderValue>| {
            v.and_then(|v| v.to_str().ok()).unwrap_or("").to_string()
        };
        Ok::<_, String>(format!(
            "status {} ({} bytes received) {}",
            text(status),
            received,
            text(message)
        ))
    };
    result.await.unwrap_or_else(|e| format!("error {e}"))
}

/// A GetRequest of `count` root paths (an empty Path: field 2, length 0).
fn root_paths(count: usize, encoding_json_ietf: bool) -> Vec<u8> {
    let mut message: Vec<u8> = std::iter::repeat_n([0x12u8, 0x00], count)
        .flatten()
        .collect();
    if encoding_json_ietf {
        // encoding (field 5) = JSON_IETF (4)
        message.extend([0x28, 0x04]);
    }
    message
}

async fn get_repeat(target: &Target, login: &Login, k: usize) -> Result<(), String> {
    let message = root_paths(k, true);
    let body = frame(false, message.len(), &message);
    println!("{}", unary(target, login, "/gnmi.gNMI/Get", body).await);
    Ok(())
}

async fn gzip_get(target: &Target, login: &Login, paths: usize) -> Result<(), String> {
    // Paths of one empty element each (field 2 { field 3 {} }): the most decoded memory per
    // byte of the wire.
    let message: Vec<u8> = std::iter::repeat_n([0x12u8, 0x02, 0x1a, 0x00], paths)
        .flatten()
        .collect();
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gzip.write_all(&message).map_err(|e| e.to_string())?;
    let compressed = gzip.finish().map_err(|e| e.to_string())?;
    println!("{} bytes inflating to {}", compressed.len(), message.len());
    let body = frame(true, compressed.len(), &compressed);
    let mut request = grpc_request("/gnmi.gNMI/Get", login)?;
    request
        .headers_mut()
        .insert("grpc-encoding", http::HeaderValue::from_static("gzip"));
    let reply = async {
        let sender = h2_connection(target).await?;
        let mut ready = sender.ready().await.map_err(|e| e.to_string())?;
        let (response, mut stream) = ready
            .send_request(request, false)
            .map_err(|e| e.to_string())?;
        stream.send_data(body, true).map_err(|e| e.to_string())?;
        let response = response.await.map_err(|e| e.to_string())?;
        let (head, mut body) = response.into_parts();
        while let Some(data) = body.data().await {
            let _ = data.map_err(|e| e.to_string())?;
        }
        let trailers = body.trailers().await.map_err(|e| e.to_string())?;
        let header = |name| {
            trailers
                .as_ref()
                .and_then(|t| t.get(name))
                .or_else(|| head.headers.get(name))
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string()
        };
        Ok::<_, String>(format!(
            "status {} {}",
            header("grpc-status"),
            header("grpc-message")
        ))
    };
    println!("{}", reply.await.unwrap_or_else(|e| format!("error {e}")));
    Ok(())
}

async fn hold_tcp(target: &Target, conns: usize, addresses: usize) -> Result<(), String> {
    let addr = match target {
        Target::Tcp(addr) | Target::Tls(addr, _) => addr.clone(),
        Target::Unix(_) => return Err("hold-tcp needs a TCP target".into()),
    };
    let addr: std::net::SocketAddr = addr.parse().map_err(|e| format!("{addr}: {e}"))?;
    let mut held = Vec::new();
    let mut failed = 0;
    for i in 0..conns {
        let from = std::net::Ipv4Addr::new(127, 0, 0, 2 + (i % addresses.max(1)) as u8);
        let socket = tokio::net::TcpSocket::new_v4().map_err(|e| e.to_string())?;
        if socket.bind((from, 0).into()).is_err() {
            failed += 1;
            continue;
        }
        match socket.connect(addr).await {
            Ok(stream) => held.push(stream),
            Err(_) => failed += 1,
        }
    }
    println!("{} connections held, {failed} failed", held.len());
    let _ = std::io::stdout().flush();
    tokio::task::block_in_place(hold);
    let mut closed = 0;
    for stream in &held {
        let mut byte = [0u8; 1];
        match stream.try_read(&mut byte) {
            Ok(0) => closed += 1,
            Err(e) if e.kind() != std::io::ErrorKind::WouldBlock => closed += 1,
            _ => {}
        }
    }
    println!("{closed} of them closed by efbd");
    Ok(())
}

async fn unknown_method(target: &Target, login: &Login, count: usize) -> Result<(), String> {
    let mut held = Vec::new();
    let mut results = std::collections::BTreeMap::<String, usize>::new();
    for _ in 0..count {
        let Ok(sender) = h2_connection(target).await else {
            *results.entry("connection refused".into()).or_default() += 1;
            continue;
        };
        let outcome = async {
            let mut ready = sender.clone().ready().await.map_err(|e| e.to_string())?;
            let request = grpc_request("/efb.mgmt.v1.Management/NoSuchMethod", login)?;
            let (response, mut stream) = ready
                .send_request(request, false)
                .map_err(|e| e.to_string())?;
            stream
                .send_data(frame(false, 0, &[]), true)
                .map_err(|e| e.to_string())?;
            let response = response.await.map_err(|e| e.to_string())?;
            let status = response
                .headers()
                .get("grpc-status")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("?")
                .to_string();
            Ok::<_, String>(status)
        };
        let key = match outcome.await {
            Ok(status) => format!("status {status}"),
            Err(e) => format!("error {e}"),
        };
        *results.entry(key).or_default() += 1;
        held.push(sender);
    }
    println!("{results:?}");
    let _ = std::io::stdout().flush();
    tokio::task::block_in_place(hold);
    Ok(())
}

/// Waits until the test closes our standard input.
fn hold() {
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
}
