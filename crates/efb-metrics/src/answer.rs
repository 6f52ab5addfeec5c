//! The answer to one request: login (when the web configuration names users), then
//! `GET /metrics` only, then the scrape. Request bodies are never read.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Body, Bytes, Frame, Incoming, SizeHint};
use hyper::header::{ACCEPT, ALLOW, AUTHORIZATION, CONTENT_TYPE, HeaderValue, WWW_AUTHENTICATE};
use hyper::{Method, Request, Response, StatusCode};
use prometheus_client::encoding::prometheus_text;
use tokio_rustls::TlsAcceptor;

use crate::basic::Users;
use crate::room::Place;
use crate::{PATH, Scraped, render};

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// What every connection and request of a server needs.
pub struct Shared<F> {
    pub scrape: F,
    pub users: Option<Arc<Users>>,
    pub tls: Option<TlsAcceptor>,
    /// See [`crate::Options::header_timeout`].
    pub header_timeout: Duration,
}

/// An answer's body; while hyper holds it, the connection counts as answering (unless
/// the request was refused).
pub struct Answer {
    body: Full<Bytes>,
    _answering: Option<Answering>,
}

/// Marks the connection answering until dropped (with the body, once hyper wrote it).
struct Answering(Arc<Place>);

impl Drop for Answering {
    fn drop(&mut self) {
        self.0.handed();
    }
}

impl Body for Answer {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// Answers `request`, which came from `peer` on the connection at `place`. Until its
/// credentials are checked the connection stays idle, so that it may be closed to make
/// room: a client guessing passwords (each guess a bcrypt run, in turn) must not hold the
/// places scrapers need.
pub async fn answer<F, Fut>(
    request: Request<Incoming>,
    shared: Arc<Shared<F>>,
    place: Arc<Place>,
    peer: SocketAddr,
) -> Result<Response<Answer>, Infallible>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Scraped>,
{
    if let Some(users) = &shared.users {
        let authorization = request.headers().get(AUTHORIZATION);
        if let Err(refused) = users.admit(authorization, peer).await {
            return Ok(unauthorized(&refused.to_string()).map(|body| Answer {
                body,
                _answering: None,
            }));
        }
    }
    place.begin();
    let answering = Answering(place);
    let response = respond(&request, &shared).await;
    Ok(response.map(|body| Answer {
        body,
        _answering: Some(answering),
    }))
}

/// The answer to a request let in.
async fn respond<F, Fut>(request: &Request<Incoming>, shared: &Shared<F>) -> Response<Full<Bytes>>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Scraped>,
{
    if request.uri().path() != PATH {
        return plain(
            StatusCode::NOT_FOUND,
            format!("not found: metrics are at GET {PATH}\n"),
        );
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        let mut response = plain(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("{PATH} takes GET (or HEAD)\n"),
        );
        response
            .headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    let openmetrics = request
        .headers()
        .get(ACCEPT)
        .and_then(|accept| accept.to_str().ok())
        .is_some_and(|accept| accept.contains("application/openmetrics-text"));
    metrics(&(shared.scrape)().await, openmetrics)
}

fn metrics(registries: &Scraped, openmetrics: bool) -> Response<Full<Bytes>> {
    match render(registries, openmetrics) {
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
    }
}

fn unauthorized(why: &str) -> Response<Full<Bytes>> {
    let mut response = plain(StatusCode::UNAUTHORIZED, format!("{why}\n"));
    response.headers_mut().insert(
        WWW_AUTHENTICATE,
        HeaderValue::from_static("Basic realm=\"metrics\", charset=\"UTF-8\""),
    );
    response
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
