//! Subscribe: ONCE, POLL and STREAM (ON_CHANGE, SAMPLE, TARGET_DEFINED = ON_CHANGE).
//!
//! Each subscription runs in a task of its own, fed by the daemon's snapshots (published
//! after each commit or state change, never before the commit is durable). Changes are the
//! path-level diff of consecutive snapshots (cheap: the trees share what did not change)
//! restricted to the subscribed paths; updates name single leaves (a leaf-list is one
//! value), deletes name the node removed. Responses go through a bounded queue: a slow
//! client holds up its own task only; one that falls further behind than the daemon's
//! snapshot queue is ended with RESOURCE_EXHAUSTED. A client closing its sending side
//! (pygnmi does) leaves a STREAM running; the RPC ends when the client cancels it, or
//! with UNAVAILABLE when efbd stops. Subscribe RPCs under way are counted in all and per
//! user; past either maximum, a new one is refused with RESOURCE_EXHAUSTED.

use std::sync::Arc;
use std::time::Duration;

use efb_yang::Schema;
use gnmi_proto::gnmi::{
    SubscribeRequest, SubscribeResponse, SubscriptionList, SubscriptionMode, subscribe_request,
    subscription_list,
};
use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Status, Streaming};
use tracing::{Instrument, Span, debug, info};

use crate::ServerConfig;
use crate::backend::Backend;
use crate::errors;
use crate::message::{check_models, check_read_extensions, encoding, reflected_prefix};
use crate::path::Pattern;
use efb_northbound::budget::Spend;
use efb_northbound::caller::Caller;
use futures::StreamExt;

mod changes;
mod count;
mod session;

use count::{Count, Slot};
use session::{Ended, Session, Sub, Trigger, stopped};

/// What Subscribe needs: the backend, the settings, the Subscribe RPCs under way, and
/// the signal that efbd stops.
pub(crate) struct Subscriptions {
    backend: Arc<dyn Backend>,
    schema: Arc<Schema>,
    count: Arc<Count>,
    /// Turns true when efbd stops: subscriptions end.
    stop: watch::Receiver<bool>,
    subscriber_queue: usize,
    updates_per_notification: usize,
    min_sample_interval: Duration,
    max_paths: usize,
}

impl Subscriptions {
    pub(crate) fn new(
        backend: Arc<dyn Backend>,
        config: &ServerConfig,
        stop: watch::Receiver<bool>,
    ) -> Subscriptions {
        Subscriptions {
            schema: backend.schema(),
            backend,
            count: Arc::new(Count::new(
                config.max_subscriptions,
                config.max_subscriptions_per_user,
                config.activity.subscriptions.clone(),
            )),
            stop,
            subscriber_queue: config.subscriber_queue,
            updates_per_notification: config.updates_per_notification,
            min_sample_interval: config.min_sample_interval,
            max_paths: config.max_paths,
        }
    }
}

/// Reads the subscription list, then runs the subscription in a task of its own.
pub(crate) async fn start(
    state: &Subscriptions,
    caller: &Caller,
    spend: Option<Spend>,
    mut inbound: Streaming<SubscribeRequest>,
) -> Result<Responses, Status> {
    let slot = state.count.admit(&caller.name)?;
    let first = inbound
        .message()
        .await?
        .ok_or_else(|| Status::invalid_argument("the stream ended before a subscription list"))?;
    let list = match first.request {
        Some(subscribe_request::Request::Subscribe(list)) => list,
        _ => {
            return Err(Status::invalid_argument(
                "the first message of Subscribe must be a subscription list",
            ));
        }
    };
    check_read_extensions(&first.extension)?;
    let paths = list.subscription.iter().map(|s| s.path.as_ref());
    if let Some(interfaces) =
        crate::openconfig::route(state.backend.as_ref(), list.prefix.as_ref(), paths)?
    {
        let first = SubscribeRequest {
            request: Some(subscribe_request::Request::Subscribe(list)),
            ..first
        };
        let stream = interfaces_subscription(interfaces, first, inbound, slot, state.stop.clone())?;
        return Ok(Box::pin(stream));
    }
    let mode = subscription_list::Mode::try_from(list.mode).map_err(|_| {
        Status::invalid_argument(format!("unknown subscription mode {}", list.mode))
    })?;
    let subs = subscriptions(state, &list, mode)?;
    let (out, responses) = mpsc::channel(state.subscriber_queue.max(1));
    let session = Session {
        backend: state.backend.clone(),
        schema: state.schema.clone(),
        encoding: encoding(list.encoding)?,
        style: subs
            .first()
            .map(|s| s.pattern.style.clone())
            .unwrap_or_default(),
        prefix: reflected_prefix(list.prefix.as_ref()),
        subs,
        out,
        spend,
        per_notification: state.updates_per_notification.max(1),
    };
    let updates_only = list.updates_only;
    let stop = state.stop.clone();
    let inbound = forward(inbound);
    info!(
        ?mode,
        paths = session.subs.len(),
        updates_only,
        "subscription started"
    );
    tokio::spawn(
        async move {
            let _slot = slot;
            let result = match mode {
                subscription_list::Mode::Once => session.once(updates_only).await,
                subscription_list::Mode::Poll => session.poll(updates_only, inbound, stop).await,
                subscription_list::Mode::Stream => {
                    session.stream(updates_only, inbound, stop).await
                }
            };
            match result {
                Ended::Done => debug!("subscription done"),
                Ended::ClientGone => debug!("subscriber went away"),
                Ended::Error(status) => {
                    info!(code = ?status.code(), message = status.message(), "subscription ended")
                }
            }
        }
        .instrument(Span::current()),
    );
    // A response's memory is given back as tonic takes it to send (the guard then counts
    // the frame until HTTP/2 has sent it).
    Ok(Box::pin(
        ReceiverStream::new(responses).map(|(response, _held)| response),
    ))
}

/// The responses of a subscription, as tonic sends them.
pub(crate) type Responses =
    std::pin::Pin<Box<dyn futures::Stream<Item = Result<SubscribeResponse, Status>> + Send>>;

/// An OpenConfig subscription, answered by efb-openconfig, counted like any other while
/// it lasts, and ended like any other when efbd stops.
fn interfaces_subscription(
    interfaces: Arc<dyn efb_openconfig::Source>,
    first: SubscribeRequest,
    inbound: Streaming<SubscribeRequest>,
    slot: Slot,
    mut stop: watch::Receiver<bool>,
) -> Result<ReceiverStream<Result<SubscribeResponse, Status>>, Status> {
    let mut responses = efb_openconfig::subscribe::start(interfaces, first, inbound)?;
    let (out, counted) = mpsc::channel(64);
    tokio::spawn(async move {
        let _slot = slot;
        loop {
            let response = tokio::select! {
                response = futures::StreamExt::next(&mut responses) => response,
                () = stopped(&mut stop) => Some(Err(Status::unavailable("efbd is stopping"))),
            };
            let Some(response) = response else {
                return;
            };
            let last = response.is_err();
            if out.send(response).await.is_err() || last {
                return;
            }
        }
    });
    Ok(ReceiverStream::new(counted))
}

fn subscriptions(
    state: &Subscriptions,
    list: &SubscriptionList,
    mode: subscription_list::Mode,
) -> Result<Vec<Sub>, Status> {
    check_models(&state.schema, &list.use_models)?;
    crate::service::check_path_count(list.subscription.len(), state.max_paths)?;
    if list.subscription.is_empty() {
        return Err(Status::invalid_argument(
            "the subscription list has no subscription",
        ));
    }
    let min = state.min_sample_interval;
    let mut subs = Vec::new();
    for s in &list.subscription {
        let pattern = Pattern::parse(&state.schema, list.prefix.as_ref(), s.path.as_ref())
            .map_err(|e| errors::path("", e))?;
        if mode == subscription_list::Mode::Stream {
            efb_openconfig::subscribe::interval_only_for_sample(s)?;
        }
        let trigger = match SubscriptionMode::try_from(s.mode) {
            _ if mode != subscription_list::Mode::Stream => Trigger::OnChange,
            Ok(SubscriptionMode::TargetDefined | SubscriptionMode::OnChange) => Trigger::OnChange,
            Ok(SubscriptionMode::Sample) => Trigger::Sample {
                interval: interval(s.sample_interval, min)?,
                suppress: s.suppress_redundant,
            },
            Err(_) => {
                return Err(Status::invalid_argument(format!(
                    "unknown subscription mode {}",
                    s.mode
                )));
            }
        };
        let heartbeat = match s.heartbeat_interval {
            0 => None,
            ns => Some(interval(ns, min)?),
        };
        subs.push(Sub {
            pattern,
            trigger,
            heartbeat,
            sample_timer: None,
            heartbeat_timer: None,
            sampled: None,
        });
    }
    Ok(subs)
}

/// An interval in ns: 0 is the shortest served; shorter ones are refused.
fn interval(ns: u64, min: Duration) -> Result<Duration, Status> {
    let d = Duration::from_nanos(ns);
    if ns == 0 {
        Ok(min)
    } else if d < min {
        Err(Status::invalid_argument(format!(
            "interval {} ms is below the shortest this target serves ({} ms)",
            d.as_millis(),
            min.as_millis()
        )))
    } else {
        Ok(d)
    }
}

/// Client messages after the subscription list, read by a task of their own so the
/// session's loop never cancels a half-read message. The channel closes when the client
/// closes its side.
fn forward(
    mut inbound: Streaming<SubscribeRequest>,
) -> mpsc::Receiver<Result<SubscribeRequest, Status>> {
    let (tx, rx) = mpsc::channel(8);
    tokio::spawn(async move {
        loop {
            // Stops when the session has ended too: dropping the request stream ends the
            // RPC for the client that keeps its side open, so efbd can stop.
            let next = tokio::select! {
                next = inbound.message() => next,
                () = tx.closed() => break,
            };
            let item = match next {
                Ok(Some(message)) => Ok(message),
                Ok(None) => break,
                Err(status) => Err(status),
            };
            let failed = item.is_err();
            if tx.send(item).await.is_err() || failed {
                break;
            }
        }
    });
    rx
}
