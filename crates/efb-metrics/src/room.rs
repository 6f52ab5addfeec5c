//! Places for connections: at most `max` are open. When all are taken, a new connection
//! takes the place of the oldest one that is idle (in its TLS handshake, before its first
//! request, between requests) rather than being turned away: clients that connect and say
//! nothing cannot keep a scraper out, since each connection after them closes one of them.
//! A connection answering a scrape is never closed for another; when every place is
//! answering, the next connection waits (in the listener's backlog) for one to finish.
//!
//! A connection answers from the moment its request is read until its answer has left
//! hyper's buffer ([`Place::begin`], [`Place::handed`] when the body is dropped,
//! [`Place::flushed`] when the transport is flushed after that).

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// The places of one server.
pub struct Room {
    max: usize,
    open: Mutex<Open>,
    /// Told when a place is left or becomes idle: a connection waiting may get in.
    changed: Arc<Notify>,
}

struct Open {
    /// Taken in order; the oldest first.
    places: Vec<Arc<Place>>,
    next: u64,
}

/// One connection's place.
pub struct Place {
    order: u64,
    state: Mutex<State>,
    /// Told when the connection must close to make room.
    close: Notify,
    changed: Arc<Notify>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Idle,
    /// Since then: a request read, its answer not yet handed to hyper.
    Answering(Instant),
    /// Since then: the answer handed to hyper, not yet flushed to the client.
    Handed(Instant),
    /// Closed to make room for a newer connection.
    Closing,
}

/// A place held; left when dropped.
pub struct Seat {
    room: Arc<Room>,
    pub place: Arc<Place>,
}

impl Room {
    pub fn new(max: usize) -> Arc<Room> {
        Arc::new(Room {
            max: max.max(1),
            open: Mutex::new(Open {
                places: Vec::new(),
                next: 0,
            }),
            changed: Arc::new(Notify::new()),
        })
    }

    /// Connections open now.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.open().places.len()
    }

    /// A place for a new connection, waiting while every place answers a scrape.
    pub async fn seat(self: &Arc<Room>) -> Seat {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            // Registered before looking, so a change in between is not missed.
            changed.as_mut().enable();
            if let Some(seat) = self.try_seat() {
                return seat;
            }
            changed.await;
        }
    }

    /// A free place, or the place of the oldest idle connection, which is told to close.
    fn try_seat(self: &Arc<Room>) -> Option<Seat> {
        let mut open = self.open();
        if open.places.len() >= self.max {
            let oldest_idle = open.places.iter().position(|p| p.evict())?;
            open.places.remove(oldest_idle);
        }
        let place = Arc::new(Place {
            order: open.next,
            state: Mutex::new(State::Idle),
            close: Notify::new(),
            changed: self.changed.clone(),
        });
        open.next += 1;
        open.places.push(place.clone());
        Some(Seat {
            room: self.clone(),
            place,
        })
    }

    fn open(&self) -> MutexGuard<'_, Open> {
        // A panic while holding the lock leaves the list whole (no step can half-change
        // it): keep going with it.
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Drop for Seat {
    fn drop(&mut self) {
        let order = self.place.order;
        self.room.open().places.retain(|p| p.order != order);
        self.room.changed.notify_waiters();
    }
}

impl Place {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A request was read: the connection answers. False if it is closing (the request
    /// came as it was chosen to make room; it goes unanswered with the connection).
    pub fn begin(&self) -> bool {
        let mut state = self.state();
        if *state == State::Closing {
            return false;
        }
        *state = State::Answering(Instant::now());
        true
    }

    /// The answer was handed to hyper (its body dropped).
    pub fn handed(&self) {
        let mut state = self.state();
        if let State::Answering(since) = *state {
            *state = State::Handed(since);
        }
    }

    /// The transport was flushed: an answer handed is on its way, and the connection idle.
    pub fn flushed(&self) {
        let mut state = self.state();
        if let State::Handed(_) = *state {
            *state = State::Idle;
            self.changed.notify_waiters();
        }
    }

    /// Whether the connection has been answering for longer than `limit` (a client that
    /// does not read its answer).
    pub fn overdue(&self, limit: Duration) -> bool {
        match *self.state() {
            State::Answering(since) | State::Handed(since) => since.elapsed() > limit,
            State::Idle | State::Closing => false,
        }
    }

    /// Completes when the connection must close to make room.
    pub async fn closing(&self) {
        self.close.notified().await;
    }

    /// Closes the connection if it is idle: whether it was.
    fn evict(&self) -> bool {
        let mut state = self.state();
        if *state != State::Idle {
            return false;
        }
        *state = State::Closing;
        // notify_one keeps the news for a task not waiting yet.
        self.close.notify_one();
        true
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[tokio::test]
    async fn the_oldest_idle_connection_makes_room_never_one_answering() {
        let room = Room::new(3);
        let first = room.seat().await;
        let second = room.seat().await;
        let third = room.seat().await;
        assert!(first.place.begin(), "the oldest answers a scrape");
        let fourth = room.seat().await;
        // The second (the oldest idle) was told to close and lost its place.
        assert_eq!(room.len(), 3);
        tokio::time::timeout(Duration::from_millis(100), second.place.closing())
            .await
            .expect("the second is told to close");
        assert!(!second.place.begin(), "too late to answer");
        assert!(
            tokio::time::timeout(Duration::from_millis(50), first.place.closing())
                .await
                .is_err(),
            "the first answers on"
        );
        drop(second);
        assert_eq!(room.len(), 3, "leaving after eviction frees nothing twice");
        // The first's answer handed but not flushed: still answering.
        first.place.handed();
        assert!(fourth.place.begin() && third.place.begin());
        let waiting = tokio::spawn({
            let room = room.clone();
            async move { room.seat().await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            !waiting.is_finished(),
            "every place answers: the fifth waits"
        );
        first.place.flushed();
        let fifth = tokio::time::timeout(Duration::from_secs(1), waiting)
            .await
            .expect("a place became idle")
            .unwrap();
        assert_eq!(room.len(), 3);
        drop((first, third, fourth, fifth));
        assert_eq!(room.len(), 0);
    }

    #[tokio::test]
    async fn an_answer_not_read_is_overdue() {
        let room = Room::new(1);
        let seat = room.seat().await;
        assert!(!seat.place.overdue(Duration::ZERO));
        seat.place.begin();
        seat.place.handed();
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert!(seat.place.overdue(Duration::from_millis(1)));
        assert!(!seat.place.overdue(Duration::from_secs(60)));
        seat.place.flushed();
        assert!(!seat.place.overdue(Duration::ZERO));
    }
}
