//! Prometheus metrics over HTTP, for efbd and efb-target: the listener, bound with an error
//! that names the setting, and `GET /metrics`, which answers each scrape with what the
//! caller's scrape function gathers at that moment. The answer is OpenMetrics when the
//! scraper asks for it (Prometheus does), Prometheus' text format otherwise (curl).
//!
//! The server is meant to be reachable beyond loopback: a web configuration file in the
//! format exporters take ([`web`]) adds TLS and users with passwords, and connections are
//! bounded so that idle clients cannot keep a scraper out (room.rs): at most
//! [`Options::max_connections`], each closed when it sends no request within
//! [`HEADER_TIMEOUT`], and the oldest idle one closed when a new one needs its place.
//!
//! The metric definitions stay with their owners (efbd's `metrics` module, efb-target's);
//! this crate only serves them.

pub use connection::ANSWER_TIMEOUT;
pub use prometheus_client;
pub use values::{Labels, Values};
pub use web::{Web, WebConfigError};

mod answer;
mod basic;
mod connection;
mod room;
mod tls;
mod values;
pub mod web;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::{prometheus_text, text};
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tracing::warn;

use crate::answer::Shared;
use crate::room::Room;

/// The only path served.
pub const PATH: &str = "/metrics";

/// Connections open at once by default: Prometheus uses one per target, and a few more
/// leave room for a second Prometheus and a person with curl.
pub const DEFAULT_MAX_CONNECTIONS: usize = 16;

/// A connection must send its TLS handshake, and each request's headers, within this;
/// between requests, a kept-alive connection is closed after this. Prometheus sends its
/// request as soon as it connects, and connects again when it finds the connection closed.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(5);

/// How the server is reached and bounded.
#[derive(Clone, Debug)]
pub struct Options {
    /// Connections open at once; a new one beyond closes the oldest idle one.
    pub max_connections: usize,
    /// [`HEADER_TIMEOUT`], shorter in tests.
    pub header_timeout: Duration,
    /// TLS and users, from the web configuration file.
    pub web: Option<Web>,
}

impl Options {
    /// `https` with TLS, else `http`: how a scraper reaches the server.
    pub fn scheme(&self) -> &'static str {
        match self.web.as_ref().and_then(|w| w.tls.as_ref()) {
            Some(_) => "https",
            None => "http",
        }
    }

    /// What serving on `addr` this way exposes, if anything: said at start, as a warning.
    /// Loopback is for local accounts, which the host's administrator chooses.
    pub fn exposure(&self, addr: SocketAddr) -> Option<&'static str> {
        if addr.ip().is_loopback() {
            return None;
        }
        let web = self.web.as_ref();
        let login = web.is_some_and(|w| w.users.is_some() || w.client_certificates);
        let tls = web.is_some_and(|w| w.tls.is_some());
        match (login, tls) {
            (false, _) => Some(
                "anyone who reaches this address reads the metrics (flow names and counters, \
                 liveness, pending commits): give a web configuration with basic_auth_users \
                 or required client certificates",
            ),
            (true, false) => Some(
                "the scrapers' passwords cross the network in clear: give the web \
                 configuration a tls_server_config",
            ),
            (true, true) => None,
        }
    }
}

impl Default for Options {
    fn default() -> Options {
        Options {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            header_timeout: HEADER_TIMEOUT,
            web: None,
        }
    }
}

/// What one scrape shows: the registries, encoded one after the other (long-lived counters
/// in one, values read at scrape time in another).
pub type Scraped = Vec<Arc<Registry>>;

/// The metrics address could not be listened on.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    #[error(
        "{setting}: {addr} is in use (another program, or another efbd, listens there); {hint}"
    )]
    InUse {
        setting: String,
        addr: SocketAddr,
        hint: String,
    },
    #[error("{setting}: cannot listen on {addr}: {source}; {hint}")]
    Other {
        setting: String,
        addr: SocketAddr,
        source: std::io::Error,
        hint: String,
    },
}

/// Listens on `addr`. An error names `setting` (where the address comes from) and ends
/// with `hint` (what to do instead).
pub async fn bind(addr: SocketAddr, setting: &str, hint: &str) -> Result<TcpListener, BindError> {
    TcpListener::bind(addr).await.map_err(|source| {
        let (setting, hint) = (setting.to_string(), hint.to_string());
        if source.kind() == std::io::ErrorKind::AddrInUse {
            BindError::InUse {
                setting,
                addr,
                hint,
            }
        } else {
            BindError::Other {
                setting,
                addr,
                source,
                hint,
            }
        }
    })
}

/// Serves `GET /metrics` on `listener` as `options` say until `shutdown` completes, then
/// waits for the connections under way to close: nothing `scrape` holds outlives the
/// server.
pub async fn serve<F, Fut>(
    listener: TcpListener,
    options: Options,
    scrape: F,
    shutdown: impl Future<Output = ()>,
) where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Scraped> + Send + 'static,
{
    let web = options.web.as_ref();
    let shared = Arc::new(Shared {
        scrape,
        users: web.and_then(|w| w.users.clone()),
        tls: web.and_then(|w| w.tls.clone()),
        header_timeout: options.header_timeout,
    });
    let room = Room::new(options.max_connections);
    let (stop, stopped) = watch::channel(false);
    let mut connections = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors, mostly: waiting lets connections close.
                    warn!(error = %e, "metrics: cannot accept connections");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
        };
        let seat = tokio::select! {
            () = &mut shutdown => break,
            seat = room.seat() => seat,
        };
        connections.spawn(connection::serve(
            stream,
            peer,
            shared.clone(),
            seat,
            stopped.clone(),
        ));
    }
    let _ = stop.send(true);
    while connections.join_next().await.is_some() {}
}

/// The registries as one exposition: OpenMetrics (ended by `# EOF`), or Prometheus'
/// text format 0.0.4.
pub fn render(registries: &[Arc<Registry>], openmetrics: bool) -> Result<String, std::fmt::Error> {
    let mut out = String::new();
    for registry in registries {
        if openmetrics {
            text::encode_registry(&mut out, registry)?;
        } else {
            prometheus_text::encode(&mut out, registry)?;
        }
    }
    if openmetrics {
        text::encode_eof(&mut out)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use prometheus_client::metrics::counter::Counter;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    fn registry(name: &str, value: u64) -> Arc<Registry> {
        let mut registry = Registry::default();
        let counter: Counter = Counter::default();
        counter.inc_by(value);
        registry.register(name, "a test counter", counter);
        Arc::new(registry)
    }

    #[test]
    fn registries_render_one_after_the_other_in_both_formats() {
        let both = [registry("efb_a", 1), registry("efb_b", 2)];
        let classic = render(&both, false).unwrap();
        assert!(
            classic.contains("efb_a_total 1\n") && classic.contains("efb_b_total 2\n"),
            "{classic}"
        );
        assert!(!classic.contains("# EOF"), "{classic}");
        let open = render(&both, true).unwrap();
        assert!(open.ends_with("# EOF\n"), "{open}");
        assert_eq!(open.matches("# EOF").count(), 1, "{open}");
    }

    const CLOSE: &str = "Connection: close\r\n\r\n";

    async fn get(addr: SocketAddr, request: impl AsRef<str>) -> String {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream.write_all(request.as_ref().as_bytes()).await.unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        answer
    }

    /// A server on a free loopback port, scraped with `scrape`; it stops when the sender
    /// is dropped or used.
    struct Running {
        addr: SocketAddr,
        stop: tokio::sync::oneshot::Sender<()>,
        server: tokio::task::JoinHandle<()>,
    }

    async fn start<F, Fut>(options: Options, scrape: F) -> Running
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Scraped> + Send + 'static,
    {
        let listener = bind("127.0.0.1:0".parse().unwrap(), "test.listen", "")
            .await
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(listener, options, scrape, async {
            let _ = stopped.await;
        }));
        Running { addr, stop, server }
    }

    async fn counting() -> Scraped {
        vec![registry("efb_scrapes", 7)]
    }

    #[tokio::test]
    async fn serves_get_metrics_only_and_stops_when_told() {
        let Running { addr, stop, server } = start(Options::default(), counting).await;
        let metrics = get(
            addr,
            &format!("GET /metrics HTTP/1.1\r\nHost: x\r\n{CLOSE}"),
        )
        .await;
        assert!(
            metrics.starts_with("HTTP/1.1 200") && metrics.contains("efb_scrapes_total 7"),
            "{metrics}"
        );
        let open = get(
            addr,
            &format!("GET /metrics HTTP/1.1\r\nAccept: application/openmetrics-text\r\n{CLOSE}"),
        )
        .await;
        assert!(
            open.contains("application/openmetrics-text") && open.contains("# EOF"),
            "{open}"
        );
        let elsewhere = get(addr, &format!("GET / HTTP/1.1\r\n{CLOSE}")).await;
        assert!(elsewhere.starts_with("HTTP/1.1 404"), "{elsewhere}");
        let post = get(addr, &format!("POST /metrics HTTP/1.1\r\n{CLOSE}")).await;
        assert!(post.starts_with("HTTP/1.1 405"), "{post}");
        // A scraper keeping its connection open does not keep the server from stopping.
        let _idle = tokio::net::TcpStream::connect(addr).await.unwrap();
        stop.send(()).unwrap();
        tokio::time::timeout(Duration::from_secs(5), server)
            .await
            .expect("the server stops")
            .unwrap();
    }

    #[tokio::test]
    async fn heads_are_bounded_and_bodies_never_read() {
        let running = start(Options::default(), counting).await;
        let huge = "x".repeat(32 * 1024);
        let answer = get(
            running.addr,
            &format!("GET /metrics HTTP/1.1\r\nX-Big: {huge}\r\n{CLOSE}"),
        )
        .await;
        assert!(answer.starts_with("HTTP/1.1 431"), "{answer}");
        let many: String = (0..100).map(|i| format!("X-{i}: y\r\n")).collect();
        let answer = get(
            running.addr,
            &format!("GET /metrics HTTP/1.1\r\n{many}{CLOSE}"),
        )
        .await;
        assert!(answer.starts_with("HTTP/1.1 431"), "{answer}");
        // A body announced but never sent: answered at once, the connection closed.
        let answer = tokio::time::timeout(
            Duration::from_secs(2),
            get(
                running.addr,
                "POST /metrics HTTP/1.1\r\nContent-Length: 1000000000\r\n\r\n",
            ),
        )
        .await
        .expect("answered without the body");
        assert!(answer.starts_with("HTTP/1.1 405"), "{answer}");
    }

    /// Scrapes answered within a second each, the server's every place held by clients
    /// that connected and say nothing (or half a request).
    async fn scrapes_get_in(addr: SocketAddr, scrapes: usize) {
        for _ in 0..scrapes {
            let answer = tokio::time::timeout(
                Duration::from_secs(1),
                get(addr, &format!("GET /metrics HTTP/1.1\r\n{CLOSE}")),
            )
            .await
            .expect("a scrape answered within a second");
            assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        }
    }

    #[tokio::test]
    async fn idle_connections_cannot_keep_scrapes_out() {
        let running = start(Options::default(), counting).await;
        let mut idle = Vec::new();
        for i in 0..24 {
            let mut stream = tokio::net::TcpStream::connect(running.addr).await.unwrap();
            if i % 2 == 0 {
                stream
                    .write_all(b"GET /metrics HTTP/1.1\r\n")
                    .await
                    .unwrap();
            }
            idle.push(stream);
        }
        scrapes_get_in(running.addr, 30).await;
        // The idle ones made room: most of them are closed (read gives end of file).
        let mut closed = 0;
        for stream in &mut idle {
            let mut byte = [0u8; 1];
            let read = tokio::time::timeout(Duration::from_millis(10), stream.read(&mut byte));
            if matches!(read.await, Ok(Ok(0) | Err(_))) {
                closed += 1;
            }
        }
        assert!(closed >= 24 - DEFAULT_MAX_CONNECTIONS, "{closed} closed");
    }

    #[tokio::test]
    async fn a_connection_answering_a_scrape_is_not_closed_to_make_room() {
        // Scrapes wait at the gate until the test opens it.
        let gate = Arc::new(tokio::sync::Semaphore::new(0));
        let scrape = {
            let gate = gate.clone();
            move || {
                let gate = gate.clone();
                async move {
                    let _pass = gate.acquire().await;
                    counting().await
                }
            }
        };
        let options = Options {
            max_connections: 2,
            ..Options::default()
        };
        let running = start(options, scrape).await;
        let request = format!("GET /metrics HTTP/1.1\r\n{CLOSE}");
        let answering = tokio::spawn(get(running.addr, request.clone()));
        tokio::time::sleep(Duration::from_millis(50)).await;
        let mut idle = tokio::net::TcpStream::connect(running.addr).await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        // The third takes the idle one's place, not the one answering.
        let third = tokio::spawn(get(running.addr, request.clone()));
        let mut byte = [0u8; 1];
        let read = tokio::time::timeout(Duration::from_secs(1), idle.read(&mut byte));
        assert!(
            matches!(read.await, Ok(Ok(0) | Err(_))),
            "the idle one closed"
        );
        gate.add_permits(2);
        for scrape in [answering, third] {
            let answer = scrape.await.unwrap();
            assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        }
    }

    #[tokio::test]
    async fn scrapes_need_a_user_s_password_and_guessers_hold_no_place() {
        use base64::Engine;
        let hash = bcrypt::hash("secret", 4).unwrap();
        let users = Arc::new(basic::Users::new([("prometheus".to_string(), hash)].into()));
        let options = Options {
            max_connections: 1,
            web: Some(Web {
                tls: None,
                users: Some(users.clone()),
                client_certificates: false,
            }),
            ..Options::default()
        };
        let running = start(options, counting).await;
        let with = |credentials: &str| {
            let encoded = base64::engine::general_purpose::STANDARD.encode(credentials);
            format!("GET /metrics HTTP/1.1\r\nAuthorization: Basic {encoded}\r\n{CLOSE}")
        };
        let refused = get(running.addr, format!("GET /metrics HTTP/1.1\r\n{CLOSE}")).await;
        assert!(
            refused.starts_with("HTTP/1.1 401")
                && refused.contains("www-authenticate: Basic realm=\"metrics\""),
            "{refused}"
        );
        let wrong = get(running.addr, with("prometheus:guess")).await;
        assert!(wrong.starts_with("HTTP/1.1 401"), "{wrong}");
        // Refused before the path is looked at: nothing is told without a login.
        let elsewhere = get(running.addr, format!("GET /other HTTP/1.1\r\n{CLOSE}")).await;
        assert!(elsewhere.starts_with("HTTP/1.1 401"), "{elsewhere}");
        let right = get(running.addr, with("prometheus:secret")).await;
        assert!(right.starts_with("HTTP/1.1 200"), "{right}");
        // A guess waiting for its bcrypt turn holds the only place; the scraper, whose
        // password is remembered, takes it.
        let turns = users.hold_checks().await;
        let mut guess = tokio::net::TcpStream::connect(running.addr).await.unwrap();
        guess
            .write_all(with("prometheus:guess2").as_bytes())
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        let scrape = tokio::time::timeout(
            Duration::from_secs(1),
            get(running.addr, with("prometheus:secret")),
        )
        .await
        .expect("the scraper gets in");
        assert!(scrape.starts_with("HTTP/1.1 200"), "{scrape}");
        let mut answer = String::new();
        // Closed (end of file, or reset): never answered.
        let _ = guess.read_to_string(&mut answer).await;
        assert_eq!(answer, "", "the guess was closed unanswered");
        drop(turns);
    }

    #[tokio::test]
    async fn a_kept_alive_connection_is_idle_once_answered_and_closed_when_silent() {
        let options = Options {
            max_connections: 1,
            header_timeout: Duration::from_millis(300),
            ..Options::default()
        };
        let running = start(options, counting).await;
        let mut kept = tokio::net::TcpStream::connect(running.addr).await.unwrap();
        kept.write_all(b"GET /metrics HTTP/1.1\r\n\r\n")
            .await
            .unwrap();
        let mut buf = vec![0u8; 64 * 1024];
        let n = kept.read(&mut buf).await.unwrap();
        assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
        // Answered and flushed: idle, so the next connection takes its place.
        scrapes_get_in(running.addr, 1).await;
        assert_eq!(kept.read(&mut buf).await.unwrap(), 0, "closed to make room");
        // Alone, a silent connection is closed after the header timeout.
        let mut silent = tokio::net::TcpStream::connect(running.addr).await.unwrap();
        let read = tokio::time::timeout(Duration::from_secs(2), silent.read(&mut buf));
        assert!(matches!(read.await, Ok(Ok(_) | Err(_))), "closed in time");
    }

    #[tokio::test]
    async fn an_address_in_use_is_named_with_its_setting() {
        let taken = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = taken.local_addr().unwrap();
        let err = bind(addr, "metrics.listen", "choose another")
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(&format!("metrics.listen: {addr} is in use"))
                && err.ends_with("choose another"),
            "{err}"
        );
    }
}
