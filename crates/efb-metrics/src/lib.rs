//! Prometheus metrics over HTTP, for efbd and efb-target: the listener, bound with an error
//! that names the setting, and `GET /metrics`, which answers each scrape with what the
//! caller's scrape function gathers at that moment. The answer is OpenMetrics when the
//! scraper asks for it (Prometheus does), Prometheus' text format otherwise (curl).
//!
//! The metric definitions stay with their owners (efbd's `metrics` module, efb-target's);
//! this crate only serves them.

pub use prometheus_client;
pub use values::{Labels, Values};

mod values;

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{ACCEPT, ALLOW, CONTENT_TYPE, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use prometheus_client::encoding::{prometheus_text, text};
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;
use tracing::{debug, warn};

/// The only path served.
pub const PATH: &str = "/metrics";

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Scrapers served at once: Prometheus uses one connection per target; more would be a
/// client gone wrong, and each scrape costs a walk over the daemon's state.
const MAX_CONNECTIONS: usize = 16;

/// A connection must send its request headers within this (also while idle between
/// requests), so that silent clients do not keep the places of real scrapers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

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

/// Serves `GET /metrics` on `listener` until `shutdown` completes, then waits for the
/// connections under way to close: nothing `scrape` holds outlives the server.
pub async fn serve<F, Fut>(listener: TcpListener, scrape: F, shutdown: impl Future<Output = ()>)
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Scraped> + Send + 'static,
{
    let scrape = Arc::new(scrape);
    let places = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let (stop, stopped) = watch::channel(false);
    let mut connections = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors, mostly: waiting lets connections close.
                    warn!(error = %e, "metrics: cannot accept connections");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
        };
        let Ok(place) = places.clone().try_acquire_owned() else {
            debug!("metrics: connection refused, {MAX_CONNECTIONS} are open");
            continue;
        };
        let scrape = scrape.clone();
        let mut stopped = stopped.clone();
        connections.spawn(async move {
            let service = service_fn(move |request| answer(request, scrape.clone()));
            let connection = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service);
            tokio::select! {
                _ = connection => {}
                _ = stopped.wait_for(|stop| *stop) => {}
            }
            drop(place);
        });
    }
    let _ = stop.send(true);
    while connections.join_next().await.is_some() {}
}

async fn answer<F, Fut>(
    request: Request<Incoming>,
    scrape: Arc<F>,
) -> Result<Response<Full<Bytes>>, Infallible>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Scraped>,
{
    if request.uri().path() != PATH {
        return Ok(plain(
            StatusCode::NOT_FOUND,
            format!("not found: metrics are at GET {PATH}\n"),
        ));
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        let mut response = plain(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("{PATH} takes GET (or HEAD)\n"),
        );
        response
            .headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return Ok(response);
    }
    let openmetrics = request
        .headers()
        .get(ACCEPT)
        .and_then(|accept| accept.to_str().ok())
        .is_some_and(|accept| accept.contains("application/openmetrics-text"));
    let registries = scrape().await;
    Ok(match render(&registries, openmetrics) {
        Ok(body) => {
            let mut response = Response::new(Full::new(Bytes::from(body)));
            let kind = if openmetrics {
                OPENMETRICS
            } else {
                prometheus_text::CONTENT_TYPE
            };
            response
                .headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static(kind));
            response
        }
        Err(e) => plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the metrics could not be encoded: {e}\n"),
        ),
    })
}

fn plain(status: StatusCode, text: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(text)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
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

    async fn get(addr: SocketAddr, request: &str) -> String {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        answer
    }

    #[tokio::test]
    async fn serves_get_metrics_only_and_stops_when_told() {
        let listener = bind("127.0.0.1:0".parse().unwrap(), "test.listen", "")
            .await
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(
            listener,
            || async { vec![registry("efb_scrapes", 7)] },
            async {
                let _ = stopped.await;
            },
        ));
        let close = "Connection: close\r\n\r\n";
        let metrics = get(
            addr,
            &format!("GET /metrics HTTP/1.1\r\nHost: x\r\n{close}"),
        )
        .await;
        assert!(
            metrics.starts_with("HTTP/1.1 200") && metrics.contains("efb_scrapes_total 7"),
            "{metrics}"
        );
        let open = get(
            addr,
            &format!("GET /metrics HTTP/1.1\r\nAccept: application/openmetrics-text\r\n{close}"),
        )
        .await;
        assert!(
            open.contains("application/openmetrics-text") && open.contains("# EOF"),
            "{open}"
        );
        let elsewhere = get(addr, &format!("GET / HTTP/1.1\r\n{close}")).await;
        assert!(elsewhere.starts_with("HTTP/1.1 404"), "{elsewhere}");
        let post = get(addr, &format!("POST /metrics HTTP/1.1\r\n{close}")).await;
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
