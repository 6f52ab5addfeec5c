//! One subscription's task: its dumps, polls, samples, heartbeats and changes, sent in
//! notifications of bounded size.

use std::sync::Arc;
use std::time::Duration;

use efb_northbound::budget::{Held, Spend};
use efb_yang::{DataPath, Schema};
use gnmi_proto::gnmi::{
    Notification, SubscribeRequest, SubscribeResponse, Update, subscribe_request,
    subscribe_response,
};
use prost::Message;
use tokio::sync::{broadcast, mpsc, watch};
use tokio::time::{Instant, Interval, MissedTickBehavior};
use tonic::Status;

use crate::backend::{Backend, Snapshot};
use crate::encode::{Encoder, Encoding, Filter, LeafValue, leaves};
use crate::errors;
use crate::message::{now_ns, read_stamp};
use crate::path::{Pattern, Style, to_gnmi};

use super::changes::between;

/// Responses on their way to tonic, each with the memory it holds.
pub(super) type Out = mpsc::Sender<(Result<SubscribeResponse, Status>, Option<Held>)>;

/// When a subscription's values are sent (STREAM).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Trigger {
    OnChange,
    Sample { interval: Duration, suppress: bool },
}

pub(super) struct Sub {
    pub(super) pattern: Pattern,
    pub(super) trigger: Trigger,
    pub(super) heartbeat: Option<Duration>,
    /// The samples' schedule (SAMPLE): fixed from the start of the stream, a sample that
    /// could not be taken in time is skipped rather than shifting the ones after it.
    pub(super) sample_timer: Option<Interval>,
    /// When every value is to be sent again (heartbeat_interval), on the same terms.
    pub(super) heartbeat_timer: Option<Interval>,
    /// What the last sample saw (suppress_redundant sends the difference).
    pub(super) sampled: Option<Arc<Snapshot>>,
}

pub(super) struct Session {
    pub(super) backend: Arc<dyn Backend>,
    pub(super) schema: Arc<Schema>,
    pub(super) encoding: Encoding,
    pub(super) style: Style,
    /// The subscription list's target, reflected in every notification.
    pub(super) prefix: Option<gnmi_proto::gnmi::Path>,
    pub(super) subs: Vec<Sub>,
    pub(super) out: Out,
    /// The Subscribe request's budget: what waits in `out` is held against it.
    pub(super) spend: Option<Spend>,
    pub(super) per_notification: usize,
}

/// Why a session stopped (for the log).
pub(super) enum Ended {
    Done,
    ClientGone,
    Error(Status),
}

impl Session {
    /// Queues a response, holding its size until tonic takes it; a response the budget
    /// cannot hold ends the subscription (RESOURCE_EXHAUSTED naming the limit).
    async fn send(&self, response: subscribe_response::Response) -> Result<(), Ended> {
        let response = SubscribeResponse {
            response: Some(response),
            extension: Vec::new(),
        };
        let held = match &self.spend {
            Some(spend) => match spend.split(response.encoded_len()) {
                Ok(held) => Some(held),
                Err(over) => return Err(self.fail(over.status()).await),
            },
            None => None,
        };
        self.out
            .send((Ok(response), held))
            .await
            .map_err(|_| Ended::ClientGone)
    }

    async fn fail(&self, status: Status) -> Ended {
        let _ = self.out.send((Err(status.clone()), None)).await;
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

    pub(super) async fn once(self, updates_only: bool) -> Ended {
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

    pub(super) async fn poll(
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

    pub(super) async fn stream(
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
pub(super) async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await.map(|_| ());
}

fn stamp(snapshot: &Snapshot) -> i64 {
    i64::try_from(snapshot.timestamp_ns).unwrap_or(i64::MAX)
}
