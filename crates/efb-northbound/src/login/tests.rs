#![allow(clippy::unwrap_used)]

use std::net::{IpAddr, SocketAddr};

use super::*;

fn peer(text: &str) -> Peer {
    Peer::of_addr(Some(SocketAddr::new(
        text.parse().unwrap_or(IpAddr::from([0, 0, 0, 0])),
        1,
    )))
}

fn budgets() -> Budgets {
    Budgets::new(LoginLimits {
        checks: 1,
        failures_per_user_address: 2,
        failures_per_address: 4,
        failures_per_user: 3,
        failures_total: 6,
        window: Duration::from_secs(60),
        slowdown: Duration::from_millis(100),
    })
}

#[test]
fn the_limit_spends_the_key_only() {
    let failures = Failures::new(3, Duration::from_secs(60));
    let (a, b) = (peer("10.0.0.1"), peer("10.0.0.2"));
    assert!(!failures.failed(a).spent_now);
    assert!(!failures.failed(a).spent_now);
    assert!(failures.spent(&a).is_none());
    assert!(failures.failed(a).spent_now);
    assert!(
        failures
            .spent(&a)
            .is_some_and(|d| d > Duration::from_secs(59))
    );
    assert!(failures.spent(&b).is_none());
    failures.forget(&a);
    assert!(failures.spent(&a).is_none());
}

#[test]
fn ipv6_counts_per_prefix_and_zero_is_no_limit() {
    assert_eq!(peer("2001:db8::1"), peer("2001:db8::ffff:1"));
    assert_ne!(peer("2001:db8::1"), peer("2001:db8:0:1::1"));
    assert_eq!(peer("::ffff:10.0.0.1"), peer("10.0.0.1"));
    assert_eq!(peer("2001:db8::1").to_string(), "2001:db8::/64");
    let unlimited = Failures::new(0, Duration::from_secs(60));
    for _ in 0..100 {
        assert!(!unlimited.failed(Peer::Unknown).spent_now);
    }
    assert!(unlimited.spent(&Peer::Unknown).is_none());
}

#[test]
fn records_are_bounded() {
    let failures = Failures::new(3, Duration::from_secs(60));
    for i in 0..(MAX_PEERS as u32 + 10) {
        failures.failed(Peer::Address(IpAddr::from(i.to_be_bytes())));
    }
    assert!(failures.records.lock().unwrap().len() <= MAX_PEERS);
}

#[test]
fn a_user_at_a_peer_then_the_peer_are_refused() {
    let budgets = budgets();
    let (a, b) = (peer("10.0.0.1"), peer("10.0.0.2"));
    budgets.failed("ada", a);
    assert_eq!(budgets.refusal("ada", a), None);
    budgets.failed("ada", a);
    let refused = budgets.refusal("ada", a).unwrap();
    assert!(
        matches!(&refused, LoginRefused::UserAtPeer { user, limit: 2, .. } if user == "\"ada\""),
        "{refused:?}"
    );
    let message = refused.to_string();
    assert!(
        message.contains("10.0.0.1")
            && message.contains("gnmi.login_failures_per_user_address")
            && message.contains("retry in"),
        "{message}"
    );
    // Another user from there, and the same user from elsewhere, still have their turn.
    assert_eq!(budgets.refusal("vic", a), None);
    assert_eq!(budgets.refusal("ada", b), None);
    // A peer guessing names: four failures whatever the names.
    budgets.failed("x1", a);
    budgets.failed("x2", a);
    let refused = budgets.refusal("vic", a).unwrap();
    assert!(
        matches!(refused, LoginRefused::Peer { limit: 4, .. }),
        "{refused:?}"
    );
    assert!(
        refused
            .to_string()
            .contains("gnmi.login_failures_per_address"),
        "{refused}"
    );
    assert_eq!(budgets.refusal("vic", b), None);
}

#[test]
fn a_user_and_everyone_are_slowed_not_refused() {
    let budgets = budgets();
    for i in 0..3 {
        budgets.failed("ada", peer(&format!("10.0.1.{i}")));
    }
    let fresh = peer("10.0.2.1");
    assert_eq!(budgets.refusal("ada", fresh), None, "slowed, not refused");
    let slowed = budgets.slowed("ada").unwrap();
    assert!(
        matches!(
            &slowed,
            Slowed::User {
                limit: 3,
                delay_ms: 100,
                ..
            }
        ),
        "{slowed:?}"
    );
    assert!(
        slowed.to_string().contains("gnmi.login_failures_per_user")
            && slowed.to_string().contains("gnmi.login_slowdown_ms"),
        "{slowed}"
    );
    assert_eq!(budgets.slowed("vic"), None, "other users are not held up");
    for i in 0..3 {
        budgets.failed(&format!("x{i}"), peer(&format!("10.0.3.{i}")));
    }
    let slowed = budgets.slowed("vic").unwrap();
    assert!(
        matches!(slowed, Slowed::Everyone { limit: 6, .. }),
        "{slowed:?}"
    );
    assert!(
        slowed.to_string().contains("gnmi.login_failures_total"),
        "{slowed}"
    );
    assert_eq!(budgets.refusal("vic", fresh), None);
}

#[test]
fn no_slowdown_when_its_delay_is_zero() {
    let budgets = Budgets::new(LoginLimits {
        failures_per_user: 1,
        slowdown: Duration::ZERO,
        ..LoginLimits::default()
    });
    budgets.failed("ada", peer("10.0.0.1"));
    assert_eq!(budgets.slowed("ada"), None);
}

#[test]
fn a_success_renews_the_user_at_the_peer_only() {
    let budgets = budgets();
    let a = peer("10.0.0.1");
    budgets.failed("ada", a);
    budgets.failed("vic", a);
    budgets.failed("vic", a);
    budgets.succeeded("vic", a);
    assert_eq!(budgets.refusal("vic", a), None);
    // The peer's count stays (3 failures): vic's right password does not buy more guesses
    // at others, so a fourth failure, whatever the name, spends the peer's budget.
    budgets.failed("bob", a);
    assert!(matches!(
        budgets.refusal("vic", a),
        Some(LoginRefused::Peer { .. })
    ));
}

fn why() -> Slowed {
    Slowed::Everyone {
        limit: 6,
        window: 60,
        delay_ms: 100,
    }
}

#[test]
fn one_slowed_login_per_user_and_peer() {
    let budgets = budgets();
    let (a, b) = (peer("10.0.0.1"), peer("10.0.0.2"));
    let place = |user: &str, peer| budgets.take_place(budgets.name(user), user, peer, why());
    let first = place("ada", a).unwrap();
    let again = place("ada", a).err().unwrap();
    assert!(
        matches!(&again, LoginRefused::AlreadyWaiting { user, .. } if user == "\"ada\""),
        "{again:?}"
    );
    assert!(
        again.to_string().contains("waiting already")
            && again.to_string().contains("gnmi.login_failures_total"),
        "{again}"
    );
    let elsewhere = place("ada", b).unwrap();
    let other_user = place("vic", a).unwrap();
    drop(first);
    let renewed = place("ada", a).unwrap();
    // A peer cannot take every place with many names.
    let names: Vec<_> = (2..MAX_SLOWED_PER_PEER)
        .map(|i| place(&format!("x{i}"), a).unwrap())
        .collect();
    let full = place("y", a).err().unwrap();
    assert!(
        matches!(full, LoginRefused::PeerWaiting { waiting, .. } if waiting == MAX_SLOWED_PER_PEER),
        "{full:?}"
    );
    drop((elsewhere, other_user, renewed, names));
    let waiting = budgets.slowed.lock().unwrap();
    assert_eq!(
        (waiting.count, waiting.by_peer.len()),
        (0, 0),
        "left when dropped"
    );
}

#[test]
fn slowed_logins_are_bounded_in_all() {
    let budgets = budgets();
    let places: Vec<_> = (0..MAX_SLOWED as u32)
        .map(|i| {
            let peer = Peer::Address(IpAddr::from(i.to_be_bytes()));
            budgets
                .take_place(budgets.name("ada"), "ada", peer, why())
                .unwrap()
        })
        .collect();
    let refused = budgets
        .take_place(budgets.name("ada"), "ada", peer("10.9.9.9"), why())
        .err()
        .unwrap();
    assert!(
        matches!(refused, LoginRefused::TooManyWaiting { waiting, .. } if waiting == MAX_SLOWED),
        "{refused:?}"
    );
    drop(places);
}

#[tokio::test]
async fn a_slowed_login_waits_its_delay_and_a_second_from_the_peer_does_not() {
    let budgets = std::sync::Arc::new(budgets());
    let a = peer("10.0.0.1");
    let started = Instant::now();
    let waiting = {
        let budgets = budgets.clone();
        tokio::spawn(async move { budgets.slow_down("ada", a, why()).await })
    };
    tokio::time::sleep(Duration::from_millis(20)).await;
    let second = budgets.slow_down("ada", a, why()).await;
    assert!(matches!(second, Err(LoginRefused::AlreadyWaiting { .. })));
    assert!(
        started.elapsed() < Duration::from_millis(90),
        "refused at once"
    );
    waiting.await.unwrap().unwrap();
    assert!(started.elapsed() >= Duration::from_millis(100));
    budgets.slow_down("ada", a, why()).await.unwrap();
}

#[test]
fn names_are_keyed_digests() {
    let budgets = budgets();
    let long = "x".repeat(16 * 1024);
    assert_ne!(budgets.name(&long), budgets.name(&long[1..]));
    assert_eq!(budgets.name("ada"), budgets.name("ada"));
    assert_ne!(
        budgets.name("ada"),
        self::budgets().name("ada"),
        "random per process"
    );
}

#[test]
fn logged_names_are_escaped_and_cut() {
    assert_eq!(shown("ada"), "\"ada\"");
    assert!(shown(&"x".repeat(1000)).len() < 80);
}
