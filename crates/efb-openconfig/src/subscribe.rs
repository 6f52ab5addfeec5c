//! Subscribe: ONCE, POLL, and STREAM with ON_CHANGE, SAMPLE and TARGET_DEFINED.
//!
//! Leaves that change by events (enabled, admin- and oper-status, last-change,
//! carrier-transitions) are sent when [`Source::events`] ticks and they differ from what
//! was last sent. Counters change with every frame: under ON_CHANGE and TARGET_DEFINED
//! they are sampled every [`COUNTERS_EVERY`] and sent when they changed; SAMPLE sends
//! them at the interval asked (at least [`LEAST_SAMPLE`]), on multiples of it from the
//! subscription's arrival (the first dump is the sample at 0), as efbd's own gNMI does. Each subscription runs in a
//! task of its own until the client goes.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt};
use gnmi_proto::gnmi::{
    Notification, Path, SubscribeRequest, SubscribeResponse, Subscription, SubscriptionList,
    SubscriptionMode, Update, subscribe_request, subscribe_response, subscription_list,
};
use tokio::sync::mpsc;
use tokio::time::{Interval, MissedTickBehavior};
use tokio_stream::wrappers::ReceiverStream;
use tonic::Status;

use crate::encode::{Wire, encode};
use crate::interface::{Changes, Leaf, Value};
use crate::query::{Query, leaf_path};
use crate::server::{Source, now_ns, queries, values};

/// How often counters are looked at when the client let the target choose.
pub const COUNTERS_EVERY: Duration = Duration::from_secs(10);
/// The shortest sample interval served.
pub const LEAST_SAMPLE: Duration = Duration::from_millis(100);

type Out = mpsc::Sender<Result<SubscribeResponse, Status>>;
pub type Responses = ReceiverStream<Result<SubscribeResponse, Status>>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Trigger {
    OnEvent,
    Sample { every: Duration, suppress: bool },
}

#[derive(Clone)]
struct Sub {
    query: Query,
    trigger: Trigger,
    heartbeat: Option<Duration>,
    /// Which of the query's leaves this subscription sends.
    changes: Option<Changes>,
}

impl Sub {
    fn keeps(&self, leaf: &Leaf) -> bool {
        self.changes.is_none_or(|c| leaf.changes == c)
    }
}

/// What was last sent, by interface and leaf, so that a later round sends only what
/// changed.
type Sent = BTreeMap<(String, &'static [&'static str]), Value>;

/// Starts a subscription from its first request; `rest` carries the client's later
/// requests (polls). Errors in the request come back at once.
pub fn start<R>(
    source: Arc<dyn Source>,
    first: SubscribeRequest,
    rest: R,
) -> Result<Responses, Status>
where
    R: Stream<Item = Result<SubscribeRequest, Status>> + Send + Unpin + 'static,
{
    let Some(subscribe_request::Request::Subscribe(list)) = first.request else {
        return Err(Status::invalid_argument(
            "the first SubscribeRequest must carry a SubscriptionList",
        ));
    };
    let wire = Wire::of(list.encoding)?;
    let mode = subscription_list::Mode::try_from(list.mode)
        .map_err(|_| Status::invalid_argument(format!("unknown mode {}", list.mode)))?;
    let subs = subs(&list, mode)?;
    let (out, responses) = mpsc::channel(64);
    let session = Session {
        source,
        wire,
        out,
        updates_only: list.updates_only,
        started: tokio::time::Instant::now(),
    };
    tokio::spawn(async move {
        match mode {
            subscription_list::Mode::Once => session.once(&subs).await,
            subscription_list::Mode::Poll => session.poll(&subs, rest).await,
            subscription_list::Mode::Stream => session.stream(subs).await,
        }
    });
    Ok(ReceiverStream::new(responses))
}

fn subs(list: &SubscriptionList, mode: subscription_list::Mode) -> Result<Vec<Sub>, Status> {
    let mut out = Vec::new();
    let paths: Vec<Path> = list
        .subscription
        .iter()
        .map(|s| s.path.clone().unwrap_or_default())
        .collect();
    let queries = queries(list.prefix.as_ref(), &paths)?;
    let defaults = [Subscription::default()];
    let subscriptions = if list.subscription.is_empty() {
        &defaults[..]
    } else {
        &list.subscription[..]
    };
    for (query, s) in queries.into_iter().zip(subscriptions) {
        let heartbeat =
            (s.heartbeat_interval > 0).then(|| Duration::from_nanos(s.heartbeat_interval));
        let sub = |trigger, changes| Sub {
            query: query.clone(),
            trigger,
            heartbeat,
            changes,
        };
        let counters = Trigger::Sample {
            every: COUNTERS_EVERY,
            suppress: true,
        };
        if mode != subscription_list::Mode::Stream {
            out.push(sub(Trigger::OnEvent, None));
            continue;
        }
        interval_only_for_sample(s)?;
        match SubscriptionMode::try_from(s.mode) {
            Ok(SubscriptionMode::OnChange | SubscriptionMode::TargetDefined) => {
                if query.covers_events() {
                    out.push(sub(Trigger::OnEvent, Some(Changes::OnEvent)));
                }
                if query.covers_counters() {
                    out.push(sub(counters, Some(Changes::Continuously)));
                }
            }
            Ok(SubscriptionMode::Sample) => {
                let every = sample_interval(s.sample_interval)?;
                out.push(sub(
                    Trigger::Sample {
                        every,
                        suppress: s.suppress_redundant,
                    },
                    None,
                ));
            }
            Err(_) => {
                return Err(Status::invalid_argument(format!(
                    "unknown subscription mode {}: use ON_CHANGE, SAMPLE or TARGET_DEFINED",
                    s.mode
                )));
            }
        }
    }
    Ok(out)
}

/// A `sample_interval` belongs to SAMPLE: with ON_CHANGE or TARGET_DEFINED (where the
/// target chooses) it asks for something the mode does not do, so it is refused rather
/// than silently ignored, as the gNMI specification recommends. (Shared by efbd's gNMI.)
pub fn interval_only_for_sample(s: &Subscription) -> Result<(), Status> {
    let mode = SubscriptionMode::try_from(s.mode);
    if s.sample_interval == 0 || mode == Ok(SubscriptionMode::Sample) || mode.is_err() {
        return Ok(());
    }
    Err(Status::invalid_argument(format!(
        "sample_interval {} ns is for SAMPLE subscriptions, not {}: leave it 0, or use SAMPLE",
        s.sample_interval,
        mode.map_or("this mode", |m| m.as_str_name())
    )))
}

fn sample_interval(ns: u64) -> Result<Duration, Status> {
    if ns == 0 {
        return Ok(COUNTERS_EVERY);
    }
    let every = Duration::from_nanos(ns);
    if every < LEAST_SAMPLE {
        return Err(Status::invalid_argument(format!(
            "sample_interval {every:?} is shorter than the shortest served, {LEAST_SAMPLE:?}"
        )));
    }
    Ok(every)
}

struct Session {
    source: Arc<dyn Source>,
    wire: Wire,
    out: Out,
    updates_only: bool,
    /// When the subscription came: samples and heartbeats fall on multiples of their
    /// interval from here, the first dump being the sample at 0, however long it took.
    started: tokio::time::Instant,
}

/// The client went, or the source failed (then the client was told).
struct Ended;

impl Session {
    async fn send(&self, response: subscribe_response::Response) -> Result<(), Ended> {
        self.out
            .send(Ok(SubscribeResponse {
                response: Some(response),
                ..SubscribeResponse::default()
            }))
            .await
            .map_err(|_| Ended)
    }

    async fn sync(&self) -> Result<(), Ended> {
        self.send(subscribe_response::Response::SyncResponse(true))
            .await
    }

    /// Reads the interfaces and sends what `sub` covers: everything, or only what differs
    /// from `sent` (with deletes for what is gone). Returns what the client now holds.
    async fn round(&self, sub: &Sub, sent: Option<&Sent>) -> Result<Sent, Ended> {
        let interfaces = match self.source.interfaces().await {
            Ok(interfaces) => interfaces,
            Err(status) => {
                let _ = self.out.send(Err(status)).await;
                return Err(Ended);
            }
        };
        let now: Sent = values(&sub.query, &interfaces, |l| sub.keeps(l))
            .into_iter()
            .map(|v| ((v.interface.to_string(), v.leaf.path), v.value))
            .collect();
        let changed = |key: &(String, &'static [&'static str]), value: &Value| {
            sent.is_none_or(|before| before.get(key) != Some(value))
        };
        let update: Vec<Update> = now
            .iter()
            .filter(|(key, value)| changed(key, value))
            .map(|((name, leaf), value)| Update {
                path: Some(leaf_path(&sub.query.origin, name, leaf)),
                val: Some(encode(value, self.wire)),
                ..Update::default()
            })
            .collect();
        let delete: Vec<Path> = sent
            .into_iter()
            .flat_map(|before| before.keys())
            .filter(|key| !now.contains_key(*key))
            .map(|(name, leaf)| leaf_path(&sub.query.origin, name, leaf))
            .collect();
        let held = now;
        if !update.is_empty() || !delete.is_empty() {
            self.send(subscribe_response::Response::Update(Notification {
                timestamp: now_ns(),
                update,
                delete,
                ..Notification::default()
            }))
            .await?;
        }
        Ok(held)
    }

    async fn first_rounds(&self, subs: &[Sub]) -> Result<Vec<Sent>, Ended> {
        let mut held = Vec::new();
        for sub in subs {
            held.push(if self.updates_only {
                self.quietly(sub).await?
            } else {
                self.round(sub, None).await?
            });
        }
        self.sync().await?;
        Ok(held)
    }

    /// What the client would hold, without sending it (updates_only).
    async fn quietly(&self, sub: &Sub) -> Result<Sent, Ended> {
        let interfaces = self.source.interfaces().await.map_err(|_| Ended)?;
        Ok(values(&sub.query, &interfaces, |l| sub.keeps(l))
            .into_iter()
            .map(|v| ((v.interface.to_string(), v.leaf.path), v.value))
            .collect())
    }

    async fn once(self, subs: &[Sub]) {
        let _ = self.first_rounds(subs).await;
    }

    async fn poll<R>(self, subs: &[Sub], mut rest: R)
    where
        R: Stream<Item = Result<SubscribeRequest, Status>> + Send + Unpin,
    {
        if self.first_rounds(subs).await.is_err() {
            return;
        }
        loop {
            let request = tokio::select! {
                next = rest.next() => next,
                () = self.out.closed() => return,
            };
            let Some(Ok(request)) = request else {
                return;
            };
            if !matches!(request.request, Some(subscribe_request::Request::Poll(_))) {
                let _ = self
                    .out
                    .send(Err(Status::invalid_argument(
                        "a POLL subscription takes only Poll requests after its SubscriptionList",
                    )))
                    .await;
                return;
            }
            for sub in subs {
                if self.round(sub, None).await.is_err() {
                    return;
                }
            }
            if self.sync().await.is_err() {
                return;
            }
        }
    }

    async fn stream(self, subs: Vec<Sub>) {
        let Ok(held) = self.first_rounds(&subs).await else {
            return;
        };
        let session = Arc::new(self);
        for (sub, sent) in subs.into_iter().zip(held) {
            tokio::spawn(session.clone().follow(sub, sent));
        }
    }

    /// Sends `sub`'s changes until the client goes.
    async fn follow(self: Arc<Self>, sub: Sub, mut sent: Sent) {
        let mut events = self.source.events();
        events.mark_unchanged();
        let mut sample = match sub.trigger {
            Trigger::Sample { every, .. } => Some(timer(self.started, every)),
            Trigger::OnEvent => None,
        };
        let mut heartbeat = sub.heartbeat.map(|every| timer(self.started, every));
        loop {
            let resend_all = tokio::select! {
                changed = events.changed(), if sub.trigger == Trigger::OnEvent => {
                    if changed.is_err() {
                        return;
                    }
                    false
                }
                () = tick(&mut sample) => {
                    matches!(sub.trigger, Trigger::Sample { suppress: false, .. })
                }
                () = tick(&mut heartbeat) => true,
                () = self.out.closed() => return,
            };
            let before = (!resend_all).then_some(&sent);
            match self.round(&sub, before).await {
                Ok(now) => sent = now,
                Err(Ended) => return,
            }
        }
    }
}

fn timer(started: tokio::time::Instant, every: Duration) -> Interval {
    let mut timer = tokio::time::interval_at(started + every, every);
    timer.set_missed_tick_behavior(MissedTickBehavior::Skip);
    timer
}

async fn tick(timer: &mut Option<Interval>) {
    match timer {
        Some(t) => {
            t.tick().await;
        }
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::interface::{Counters, Interface};
    use tokio::sync::watch;

    /// One interface, read in `read_takes` (a chip read that is slow).
    struct Slow {
        read_takes: Duration,
        events: watch::Sender<u64>,
    }

    #[tonic::async_trait]
    impl Source for Slow {
        async fn interfaces(&self) -> Result<Vec<Interface>, Status> {
            tokio::time::sleep(self.read_takes).await;
            Ok(vec![Interface {
                name: "p1".into(),
                description: None,
                enabled: true,
                oper_up: true,
                last_change_ns: 0,
                ifindex: Some(1),
                mtu: None,
                speed_gbps: Some(100),
                counters: Counters::default(),
            }])
        }

        fn events(&self) -> watch::Receiver<u64> {
            self.events.subscribe()
        }

        async fn set(&self, _: &[crate::Change]) -> Result<(), Status> {
            Ok(())
        }
    }

    fn sample_request(every: Duration) -> SubscribeRequest {
        let path = crate::query::leaf_path("", "p1", &["state", "counters"]);
        SubscribeRequest {
            request: Some(subscribe_request::Request::Subscribe(SubscriptionList {
                subscription: vec![Subscription {
                    path: Some(Path {
                        elem: path.elem[..path.elem.len() - 1].to_vec(),
                        ..path
                    }),
                    mode: SubscriptionMode::Sample as i32,
                    sample_interval: every.as_nanos() as u64,
                    ..Subscription::default()
                }],
                mode: subscription_list::Mode::Stream as i32,
                encoding: gnmi_proto::gnmi::Encoding::JsonIetf as i32,
                ..SubscriptionList::default()
            })),
            ..SubscribeRequest::default()
        }
    }

    /// Samples fall on multiples of the interval from the subscription's arrival, whatever
    /// the first dump took: with reads of 300 ms, the sample at 1 s arrives at 1.3 s, not
    /// at 1.6 s (a grid restarted after the dump), so that k samples come within k
    /// intervals of the request as clients that count them expect.
    #[tokio::test(start_paused = true)]
    async fn samples_keep_the_grid_of_the_subscription_not_of_the_first_dump() {
        let (events, _) = watch::channel(0);
        let source = Arc::new(Slow {
            read_takes: Duration::from_millis(300),
            events,
        });
        let started = tokio::time::Instant::now();
        let every = Duration::from_secs(1);
        let mut responses = start(source, sample_request(every), futures::stream::pending())
            .expect("a SAMPLE subscription");
        let mut updates = Vec::new();
        while updates.len() < 4 {
            let response = responses.next().await.unwrap().unwrap();
            if let Some(subscribe_response::Response::Update(_)) = response.response {
                updates.push(started.elapsed());
            }
        }
        for (k, at) in updates.iter().enumerate() {
            let due = every * k as u32 + Duration::from_millis(300);
            assert!(
                at.abs_diff(due) < Duration::from_millis(50),
                "update {k} at {at:?}, due at {due:?}: {updates:?}"
            );
        }
    }
}
