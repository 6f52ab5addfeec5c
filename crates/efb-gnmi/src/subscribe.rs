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

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use efb_yang::diff::{Change, diff};
use efb_yang::{DataPath, DataTree, NodeKind, NodeRef, Schema, Segment};
use gnmi_proto::gnmi::{
    Notification, SubscribeRequest, SubscribeResponse, SubscriptionList, SubscriptionMode, Update,
    subscribe_request, subscribe_response, subscription_list,
};
use tokio::sync::{broadcast, mpsc, watch};
use tokio::time::{Instant, Interval, MissedTickBehavior};
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Status, Streaming};
use tracing::{Instrument, Span, debug, info, warn};

use crate::ServerConfig;
use crate::auth::Caller;
use crate::backend::{Backend, Snapshot};
use crate::defaults;
use crate::encode::{Encoder, Encoding, Filter, LeafValue, leaves};
use crate::errors;
use crate::listen;
use crate::message::{
    check_models, check_read_extensions, encoding, now_ns, read_stamp, reflected_prefix,
};
use crate::path::{Pattern, Relation, Style, to_gnmi};

type Out = mpsc::Sender<Result<SubscribeResponse, Status>>;

/// When a subscription's values are sent (STREAM).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Trigger {
    OnChange,
    Sample { interval: Duration, suppress: bool },
}

struct Sub {
    pattern: Pattern,
    trigger: Trigger,
    heartbeat: Option<Duration>,
    /// The samples' schedule (SAMPLE): fixed from the start of the stream, a sample that
    /// could not be taken in time is skipped rather than shifting the ones after it.
    sample_timer: Option<Interval>,
    /// When every value is to be sent again (heartbeat_interval), on the same terms.
    heartbeat_timer: Option<Interval>,
    /// What the last sample saw (suppress_redundant sends the difference).
    sampled: Option<Arc<Snapshot>>,
}

struct Session {
    backend: Arc<dyn Backend>,
    schema: Arc<Schema>,
    encoding: Encoding,
    style: Style,
    /// The subscription list's target, reflected in every notification.
    prefix: Option<gnmi_proto::gnmi::Path>,
    subs: Vec<Sub>,
    out: Out,
    per_notification: usize,
}

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
        }
    }
}

/// Subscribe RPCs under way, in all and per user, within their maximums.
struct Count {
    max: usize,
    per_user: usize,
    /// In all, and per user.
    open: Mutex<(usize, HashMap<String, usize>)>,
    /// The total again, where metrics read it without the lock.
    shown: listen::Open,
}

impl Count {
    fn new(max: usize, per_user: usize, shown: listen::Open) -> Count {
        Count {
            max,
            per_user,
            open: Mutex::new((0, HashMap::new())),
            shown,
        }
    }

    /// A place for one more subscription of `user`, held until the slot is dropped.
    fn admit(self: &Arc<Self>, user: &str) -> Result<Slot, Status> {
        let mut open = self
            .open
            .lock()
            .map_err(|_| Status::internal("subscription count unavailable"))?;
        let (total, users) = &mut *open;
        let mine = users.get(user).copied().unwrap_or(0);
        let refusal = if mine >= self.per_user {
            format!(
                "user {user} has {mine} subscriptions open, the most one user may have \
                 (gnmi.max_subscriptions_per_user = {}): close one first",
                self.per_user
            )
        } else if *total >= self.max {
            format!(
                "efbd serves {total} subscriptions, the most it serves at once \
                 (gnmi.max_subscriptions = {}): retry later",
                self.max
            )
        } else {
            *total += 1;
            users.insert(user.to_string(), mine + 1);
            return Ok(Slot {
                count: self.clone(),
                user: user.to_string(),
                _shown: self.shown.enter(),
            });
        };
        warn!(
            user,
            total = *total,
            of_user = mine,
            "subscription refused: {refusal}"
        );
        Err(Status::resource_exhausted(refusal))
    }
}

/// One subscription's place in the [`Count`].
struct Slot {
    count: Arc<Count>,
    user: String,
    _shown: listen::OpenGuard,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let Ok(mut open) = self.count.open.lock() else {
            return;
        };
        let (total, users) = &mut *open;
        *total = total.saturating_sub(1);
        if let Some(mine) = users.get_mut(&self.user) {
            *mine = mine.saturating_sub(1);
            if *mine == 0 {
                users.remove(&self.user);
            }
        }
    }
}

/// Reads the subscription list, then runs the subscription in a task of its own.
pub(crate) async fn start(
    state: &Subscriptions,
    caller: &Caller,
    mut inbound: Streaming<SubscribeRequest>,
) -> Result<ReceiverStream<Result<SubscribeResponse, Status>>, Status> {
    let slot = state.count.admit(&caller.user)?;
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
        return interfaces_subscription(interfaces, first, inbound, slot, state.stop.clone());
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
    Ok(ReceiverStream::new(responses))
}

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

/// Why a session stopped (for the log).
enum Ended {
    Done,
    ClientGone,
    Error(Status),
}

impl Session {
    async fn send(&self, response: subscribe_response::Response) -> Result<(), Ended> {
        self.out
            .send(Ok(SubscribeResponse {
                response: Some(response),
                extension: Vec::new(),
            }))
            .await
            .map_err(|_| Ended::ClientGone)
    }

    async fn fail(&self, status: Status) -> Ended {
        let _ = self.out.send(Err(status.clone())).await;
        Ended::Error(status)
    }

    async fn sync(&self) -> Result<(), Ended> {
        self.send(subscribe_response::Response::SyncResponse(true))
            .await
    }

    /// Sends updates and deletes, split into notifications of bounded size.
    async fn notify(
        &self,
        timestamp: i64,
        updates: Vec<(DataPath, LeafValue)>,
        deletes: Vec<DataPath>,
    ) -> Result<(), Ended> {
        if updates.is_empty() && deletes.is_empty() {
            return Ok(());
        }
        let encoder = Encoder {
            schema: &self.schema,
            encoding: self.encoding,
            filter: Filter::All,
        };
        let delete: Vec<_> = deletes
            .iter()
            .map(|p| to_gnmi(&self.schema, p, &self.style))
            .collect();
        let mut first = Some(delete);
        let mut chunks = updates.chunks(self.per_notification).peekable();
        if chunks.peek().is_none() {
            return self
                .send_notification(timestamp, Vec::new(), first.take().unwrap_or_default())
                .await;
        }
        for chunk in chunks {
            let update = chunk
                .iter()
                .map(|(path, value)| Update {
                    path: Some(to_gnmi(&self.schema, path, &self.style)),
                    val: Some(encoder.typed(value)),
                    ..Update::default()
                })
                .collect();
            self.send_notification(timestamp, update, first.take().unwrap_or_default())
                .await?;
        }
        Ok(())
    }

    async fn send_notification(
        &self,
        timestamp: i64,
        update: Vec<Update>,
        delete: Vec<gnmi_proto::gnmi::Path>,
    ) -> Result<(), Ended> {
        self.send(subscribe_response::Response::Update(Notification {
            timestamp,
            prefix: self.prefix.clone(),
            update,
            delete,
            ..Notification::default()
        }))
        .await
    }

    /// Every value under the subscriptions `which` selects, as they are in `snapshot`
    /// (leaves at their default with it, as Get shows them).
    async fn dump(
        &self,
        snapshot: &Snapshot,
        which: &[usize],
        timestamp: i64,
    ) -> Result<(), Ended> {
        let mut updates = Vec::new();
        for &i in which {
            for path in self.subs[i]
                .pattern
                .expand(&self.schema, &snapshot.operational)
            {
                leaves(&self.schema, &snapshot.operational, &path, &mut updates);
            }
        }
        self.notify(timestamp, updates, Vec::new()).await
    }

    fn all(&self) -> Vec<usize> {
        (0..self.subs.len()).collect()
    }

    async fn snapshot(&self) -> Result<Arc<Snapshot>, Ended> {
        match self.backend.snapshot().await {
            Ok(s) => Ok(s),
            Err(e) => Err(self.fail(errors::backend(e)).await),
        }
    }

    /// `snapshot` with the counters the subscriptions cover, read now (for dumps and
    /// samples; ON_CHANGE compares snapshots without them).
    async fn counted(&self, snapshot: Arc<Snapshot>) -> Result<Arc<Snapshot>, Ended> {
        let patterns: Vec<Pattern> = self.subs.iter().map(|s| s.pattern.clone()).collect();
        match self.backend.with_counters(snapshot, &patterns).await {
            Ok(s) => Ok(s),
            Err(e) => Err(self.fail(errors::backend(e)).await),
        }
    }

    /// The latest snapshot with its counters, and the time of the read.
    async fn counted_snapshot(&self) -> Result<(Arc<Snapshot>, i64), Ended> {
        let read_at = now_ns();
        let snapshot = self.snapshot().await?;
        let counted = self.counted(snapshot).await?;
        let stamp = read_stamp(read_at, counted.timestamp_ns);
        Ok((counted, stamp))
    }

    async fn once(self, updates_only: bool) -> Ended {
        let (snapshot, stamp) = match self.counted_snapshot().await {
            Ok(s) => s,
            Err(e) => return e,
        };
        if !updates_only && let Err(e) = self.dump(&snapshot, &self.all(), stamp).await {
            return e;
        }
        match self.sync().await {
            Ok(()) => Ended::Done,
            Err(e) => e,
        }
    }

    async fn poll(
        self,
        updates_only: bool,
        mut inbound: mpsc::Receiver<Result<SubscribeRequest, Status>>,
        mut stop: watch::Receiver<bool>,
    ) -> Ended {
        let mut skip_dump = updates_only;
        loop {
            let (snapshot, stamp) = match self.counted_snapshot().await {
                Ok(s) => s,
                Err(e) => return e,
            };
            if !skip_dump && let Err(e) = self.dump(&snapshot, &self.all(), stamp).await {
                return e;
            }
            skip_dump = false;
            if let Err(e) = self.sync().await {
                return e;
            }
            let message = tokio::select! {
                m = inbound.recv() => m,
                () = stopped(&mut stop) => return self.fail(Status::unavailable("efbd is stopping")).await,
                () = self.out.closed() => return Ended::ClientGone,
            };
            match message {
                None => return Ended::Done,
                Some(Err(_)) => return Ended::ClientGone,
                Some(Ok(m)) => match m.request {
                    Some(subscribe_request::Request::Poll(_)) => {}
                    _ => {
                        return self
                            .fail(Status::invalid_argument(
                                "a POLL subscription takes only Poll messages after its subscription list",
                            ))
                            .await;
                    }
                },
            }
        }
    }

    async fn stream(
        mut self,
        updates_only: bool,
        mut inbound: mpsc::Receiver<Result<SubscribeRequest, Status>>,
        mut stop: watch::Receiver<bool>,
    ) -> Ended {
        // Listen before looking: no change can fall between the dump and the first
        // snapshot received.
        let mut changes = self.backend.changes();
        let start = Instant::now();
        let read_at = now_ns();
        let mut latest = match self.snapshot().await {
            Ok(s) => s,
            Err(e) => return e,
        };
        let counted = match self.counted(latest.clone()).await {
            Ok(s) => s,
            Err(e) => return e,
        };
        let stamp = read_stamp(read_at, counted.timestamp_ns);
        if !updates_only && let Err(e) = self.dump(&counted, &self.all(), stamp).await {
            return e;
        }
        if let Err(e) = self.sync().await {
            return e;
        }
        for sub in &mut self.subs {
            sub.sampled = Some(counted.clone());
            sub.sample_timer = sub.interval().map(|i| schedule(start, i));
            sub.heartbeat_timer = sub.heartbeat.map(|h| schedule(start, h));
        }
        let mut inbound_open = true;
        loop {
            let step = tokio::select! {
                () = stopped(&mut stop) => return self.fail(Status::unavailable("efbd is stopping")).await,
                () = self.out.closed() => return Ended::ClientGone,
                next = changes.recv() => self.changed(next, &mut latest).await,
                fired = ticks(&mut self.subs) => {
                    let read_at = now_ns();
                    match self.counted(latest.clone()).await {
                        Ok(counted) => {
                            let stamp = read_stamp(read_at, counted.timestamp_ns);
                            self.timers(&fired, &counted, stamp).await
                        }
                        Err(e) => Err(e),
                    }
                },
                message = inbound.recv(), if inbound_open => match message {
                    // The client closed its side: the subscription goes on.
                    None => {
                        inbound_open = false;
                        Ok(())
                    }
                    Some(Err(_)) => return Ended::ClientGone,
                    Some(Ok(_)) => Err(self
                        .fail(Status::invalid_argument(
                            "a STREAM subscription takes no further messages (polls or subscription lists)",
                        ))
                        .await),
                },
            };
            if let Err(e) = step {
                return e;
            }
        }
    }

    /// A new snapshot: ON_CHANGE subscriptions get what changed.
    async fn changed(
        &mut self,
        next: Result<Arc<Snapshot>, broadcast::error::RecvError>,
        latest: &mut Arc<Snapshot>,
    ) -> Result<(), Ended> {
        let snapshot = match next {
            Ok(s) => s,
            Err(broadcast::error::RecvError::Lagged(n)) => {
                return Err(self
                    .fail(Status::resource_exhausted(format!(
                        "this subscriber fell {n} changes behind and was dropped; subscribe again"
                    )))
                    .await);
            }
            Err(broadcast::error::RecvError::Closed) => {
                return Err(self.fail(Status::unavailable("efbd is stopping")).await);
            }
        };
        if snapshot.commit_id <= latest.commit_id && snapshot.state_version <= latest.state_version
        {
            return Ok(());
        }
        let old = std::mem::replace(latest, snapshot);
        let on_change: Vec<&Pattern> = self
            .subs
            .iter()
            .filter(|s| s.trigger == Trigger::OnChange)
            .map(|s| &s.pattern)
            .collect();
        if on_change.is_empty() {
            return Ok(());
        }
        let (updates, deletes) = between(
            &self.schema,
            &on_change,
            &old.operational,
            &latest.operational,
        );
        self.notify(stamp(latest), updates, deletes).await
    }

    /// Samples and heartbeats that fired. A heartbeat sends every value of its
    /// subscription; a sample with suppress_redundant sends what changed since the last
    /// one, without it every value.
    async fn timers(
        &mut self,
        fired: &[Fired],
        latest: &Arc<Snapshot>,
        timestamp: i64,
    ) -> Result<(), Ended> {
        let mut full = Vec::new();
        let mut updates = Vec::new();
        let mut deletes = Vec::new();
        for f in fired {
            let Some(sub) = self.subs.get_mut(f.sub) else {
                continue;
            };
            let suppress = matches!(sub.trigger, Trigger::Sample { suppress: true, .. });
            if f.heartbeat || (f.sample && !suppress) {
                full.push(f.sub);
            } else if let Some(old) = &sub.sampled {
                let (u, d) = between(
                    &self.schema,
                    &[&sub.pattern],
                    &old.operational,
                    &latest.operational,
                );
                updates.extend(u);
                deletes.extend(d);
            }
            sub.sampled = Some(latest.clone());
        }
        self.notify(timestamp, updates, deletes).await?;
        if !full.is_empty() {
            self.dump(latest, &full, timestamp).await?;
        }
        Ok(())
    }
}

impl Sub {
    fn interval(&self) -> Option<Duration> {
        match self.trigger {
            Trigger::Sample { interval, .. } => Some(interval),
            Trigger::OnChange => None,
        }
    }
}

/// A timer firing every `period` after `start`, on that grid whatever a tick costs.
fn schedule(start: Instant, period: Duration) -> Interval {
    let mut timer = tokio::time::interval_at(start + period, period);
    timer.set_missed_tick_behavior(MissedTickBehavior::Skip);
    timer
}

/// Which timers of one subscription fired.
struct Fired {
    sub: usize,
    sample: bool,
    heartbeat: bool,
}

/// The samples and heartbeats due next (pending forever when there are no timers).
async fn ticks(subs: &mut [Sub]) -> Vec<Fired> {
    std::future::poll_fn(|cx| {
        let mut fired = Vec::new();
        for (i, sub) in subs.iter_mut().enumerate() {
            let mut tick = |timer: &mut Option<Interval>| {
                timer.as_mut().is_some_and(|t| t.poll_tick(cx).is_ready())
            };
            let sample = tick(&mut sub.sample_timer);
            let heartbeat = tick(&mut sub.heartbeat_timer);
            if sample || heartbeat {
                fired.push(Fired {
                    sub: i,
                    sample,
                    heartbeat,
                });
            }
        }
        if fired.is_empty() {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(fired)
        }
    })
    .await
}

/// Completes when efbd stops (the watch's guard is not held across awaits).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await.map(|_| ());
}

fn stamp(snapshot: &Snapshot) -> i64 {
    i64::try_from(snapshot.timestamp_ns).unwrap_or(i64::MAX)
}

/// What changed from `old` to `new` under any of `patterns`: leaf updates (a leaf-list as
/// a whole) and deleted nodes.
pub(crate) fn between(
    schema: &Schema,
    patterns: &[&Pattern],
    old: &DataTree,
    new: &DataTree,
) -> (Vec<(DataPath, LeafValue)>, Vec<DataPath>) {
    let relation = |path: &DataPath| {
        let mut best = Relation::Outside;
        for p in patterns {
            match p.relation(schema, path) {
                Relation::Inside => return Relation::Inside,
                Relation::Above => best = Relation::Above,
                Relation::Outside => {}
            }
        }
        best
    };
    let mut updates = Vec::new();
    let mut deletes = Vec::new();
    let mut leaf_lists = BTreeSet::new();
    for change in diff(schema, old, new) {
        let path = change.path();
        if let Some(list) = leaf_list_of(schema, path) {
            if relation(&list) == Relation::Inside {
                leaf_lists.insert(list);
            }
            continue;
        }
        match &change {
            Change::Set { path, new, .. } => {
                if relation(path) == Relation::Inside
                    && let Some(id) = path.node()
                {
                    updates.push((path.clone(), LeafValue::One(id, new.clone())));
                }
            }
            Change::Delete { path } => {
                if relation(path) == Relation::Outside {
                    continue;
                }
                // What is removed but has a default reads as the default again: an update.
                let mut back = Vec::new();
                defaults::leaves_below(schema, new, path, &mut back);
                let leaf_back = back.len() == 1 && back[0].0 == *path;
                if !leaf_back {
                    deletes.push(path.clone());
                }
                defaults_inside(back, &relation, &mut updates);
            }
            Change::Create { path } => {
                // The entry's keys are leaves too; what it holds comes as further changes,
                // and what it leaves at its default here.
                if let Some(seg) = path.last() {
                    for key in &schema.node(seg.node).keys {
                        let key_path = path.child(Segment::new(*key));
                        if relation(&key_path) == Relation::Inside
                            && let Some(NodeRef::Leaf(v)) = new.get(schema, &key_path)
                        {
                            updates.push((key_path, LeafValue::One(*key, v.clone())));
                        }
                    }
                }
                let mut defaulted = Vec::new();
                defaults::leaves_below(schema, new, path, &mut defaulted);
                defaults_inside(defaulted, &relation, &mut updates);
            }
        }
    }
    for list in leaf_lists {
        match (new.get(schema, &list), list.node()) {
            (Some(NodeRef::LeafList(items)), Some(id)) => {
                updates.push((list, LeafValue::Many(id, items.clone())))
            }
            _ => deletes.push(list),
        }
    }
    (updates, deletes)
}

/// Leaves at their default, as updates, where the subscription reaches.
fn defaults_inside(
    found: Vec<(DataPath, efb_yang::SchemaId, efb_yang::Value)>,
    relation: &impl Fn(&DataPath) -> Relation,
    updates: &mut Vec<(DataPath, LeafValue)>,
) {
    for (path, id, value) in found {
        if relation(&path) == Relation::Inside {
            updates.push((path, LeafValue::One(id, value)));
        }
    }
}

/// For a leaf-list item's path, the leaf-list's.
fn leaf_list_of(schema: &Schema, path: &DataPath) -> Option<DataPath> {
    let last = path.last()?;
    if schema.node(last.node).kind != NodeKind::LeafList {
        return None;
    }
    let mut list = path.clone();
    if let Some(seg) = list.segments.last_mut() {
        seg.keys.clear();
    }
    Some(list)
}
