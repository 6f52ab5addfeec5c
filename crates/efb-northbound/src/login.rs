//! Failed logins counted by what they came from: a peer (an address; IPv6 per /64, one
//! host usually has the whole prefix), a user name, or everyone together. After `limit`
//! failures within `window`, logins of that key are refused at once, without an Argon2
//! run, for `window`.

use std::collections::HashMap;
use std::hash::Hash;
#[cfg(test)]
use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Keys remembered at most; beyond, the oldest record is forgotten first.
const MAX_PEERS: usize = 4096;

pub(crate) use crate::listen::Peer;

struct Record {
    count: u32,
    first: Instant,
    blocked_until: Option<Instant>,
}

impl Record {
    fn relevant(&self, now: Instant, window: Duration) -> bool {
        self.first + window > now || self.blocked_until.is_some_and(|b| b > now)
    }
}

pub(crate) struct Failures<K = Peer> {
    /// 0: no limit.
    limit: u32,
    window: Duration,
    peers: Mutex<HashMap<K, Record>>,
}

/// One failure, as counted.
pub(crate) struct Failure {
    pub count: u32,
    /// This failure reached the limit: the peer is refused for this long.
    pub blocks_for: Option<Duration>,
}

impl<K: Hash + Eq + Clone> Failures<K> {
    pub fn new(limit: u32, window: Duration) -> Failures<K> {
        Failures {
            limit,
            window,
            peers: Mutex::new(HashMap::new()),
        }
    }

    /// How long the peer's logins are still refused, if they are.
    pub fn blocked(&self, peer: &K) -> Option<Duration> {
        let now = Instant::now();
        let peers = self.peers.lock().ok()?;
        let until = peers.get(peer)?.blocked_until?;
        (until > now).then(|| until - now)
    }

    pub fn failed(&self, peer: K) -> Failure {
        let now = Instant::now();
        let Ok(mut peers) = self.peers.lock() else {
            return Failure {
                count: 0,
                blocks_for: None,
            };
        };
        if !peers.contains_key(&peer) && peers.len() >= MAX_PEERS {
            make_room(&mut peers, now, self.window);
        }
        let record = peers.entry(peer).or_insert(Record {
            count: 0,
            first: now,
            blocked_until: None,
        });
        if !record.relevant(now, self.window) {
            *record = Record {
                count: 0,
                first: now,
                blocked_until: None,
            };
        }
        record.count += 1;
        let reached =
            self.limit > 0 && record.count >= self.limit && record.blocked_until.is_none();
        if reached {
            record.blocked_until = Some(now + self.window);
        }
        Failure {
            count: record.count,
            blocks_for: reached.then_some(self.window),
        }
    }

    /// A login from the peer succeeded: its failures are forgotten.
    pub fn succeeded(&self, peer: &K) {
        if let Ok(mut peers) = self.peers.lock() {
            peers.remove(peer);
        }
    }
}

fn make_room<K: Hash + Eq + Clone>(peers: &mut HashMap<K, Record>, now: Instant, window: Duration) {
    peers.retain(|_, r| r.relevant(now, window));
    if peers.len() >= MAX_PEERS
        && let Some(oldest) = peers
            .iter()
            .min_by_key(|(_, r)| r.first)
            .map(|(p, _)| p.clone())
    {
        peers.remove(&oldest);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(text: &str) -> Peer {
        Peer::of_addr(Some(SocketAddr::new(
            text.parse().unwrap_or(IpAddr::from([0, 0, 0, 0])),
            1,
        )))
    }

    #[test]
    fn the_limit_blocks_the_peer_only() {
        let failures = Failures::new(3, Duration::from_secs(60));
        let (a, b) = (peer("10.0.0.1"), peer("10.0.0.2"));
        assert!(failures.failed(a).blocks_for.is_none());
        assert!(failures.failed(a).blocks_for.is_none());
        assert!(failures.blocked(&a).is_none());
        assert_eq!(failures.failed(a).blocks_for, Some(Duration::from_secs(60)));
        assert!(
            failures
                .blocked(&a)
                .is_some_and(|d| d > Duration::from_secs(59))
        );
        assert!(failures.blocked(&b).is_none());
        failures.succeeded(&a);
        assert!(failures.blocked(&a).is_none());
    }

    #[test]
    fn ipv6_counts_per_prefix_and_zero_is_no_limit() {
        assert_eq!(peer("2001:db8::1"), peer("2001:db8::ffff:1"));
        assert_ne!(peer("2001:db8::1"), peer("2001:db8:0:1::1"));
        assert_eq!(peer("::ffff:10.0.0.1"), peer("10.0.0.1"));
        assert_eq!(peer("2001:db8::1").to_string(), "2001:db8::/64");
        let unlimited = Failures::new(0, Duration::from_secs(60));
        for _ in 0..100 {
            assert!(unlimited.failed(Peer::Unknown).blocks_for.is_none());
        }
        assert!(unlimited.blocked(&Peer::Unknown).is_none());
    }

    #[test]
    fn records_are_bounded() {
        let failures = Failures::new(3, Duration::from_secs(60));
        for i in 0..(MAX_PEERS as u32 + 10) {
            failures.failed(Peer::Address(IpAddr::from(i.to_be_bytes())));
        }
        assert!(failures.peers.lock().unwrap().len() <= MAX_PEERS);
    }
}
