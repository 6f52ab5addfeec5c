#![allow(clippy::unwrap_used)]

use super::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_stream::wrappers::TcpListenerStream;

async fn listening(max: usize) -> (String, ReceiverStream<io::Result<Conn<TcpStream>>>) {
    listening_with(Limits {
        max,
        ..test_limits()
    })
    .await
}

fn test_limits() -> Limits {
    Limits {
        max: 8,
        per_peer: 8,
        unproven_per_peer: 8,
        kept_for_admins: 0,
        handshake_timeout: Duration::from_millis(300),
        first_request_timeout: Duration::from_secs(30),
        keepalive: Some(Duration::from_secs(30)),
        streams: 16,
        window: 65535,
        name: "test",
        settings: "test.connections",
    }
}

async fn listening_with(limits: Limits) -> (String, ReceiverStream<io::Result<Conn<TcpStream>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    (
        address,
        incoming(TcpListenerStream::new(listener), limits, None),
    )
}

/// True when the peer closed the connection within `within`.
async fn closed(stream: &mut TcpStream, within: Duration) -> bool {
    let mut byte = [0u8; 1];
    matches!(
        tokio::time::timeout(within, stream.read(&mut byte)).await,
        Ok(Ok(0) | Err(_))
    )
}

#[tokio::test]
async fn a_silent_connection_is_closed_after_the_handshake_timeout() {
    let (address, mut conns) = listening(4).await;
    let server = tokio::spawn(async move {
        let mut conn = conns.next().await.unwrap().unwrap();
        let mut buf = [0u8; 64];
        conn.read(&mut buf).await
    });
    let mut client = TcpStream::connect(&address).await.unwrap();
    let started = std::time::Instant::now();
    let read = server.await.unwrap();
    assert_eq!(read.unwrap_err().kind(), io::ErrorKind::TimedOut);
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(closed(&mut client, Duration::from_secs(2)).await);
}

#[tokio::test]
async fn a_connection_that_sent_its_preface_stays() {
    let (address, mut conns) = listening(4).await;
    let mut client = TcpStream::connect(&address).await.unwrap();
    client
        .write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        .await
        .unwrap();
    let mut conn = conns.next().await.unwrap().unwrap();
    let mut buf = [0u8; 64];
    let mut got = 0;
    while got < PREFACE_BYTES {
        got += conn.read(&mut buf).await.unwrap();
    }
    let later = tokio::time::timeout(Duration::from_millis(600), conn.read(&mut buf)).await;
    assert!(
        later.is_err(),
        "still open and waiting after the handshake timeout"
    );
}

/// A connection that sent its preface, as the server holds it.
async fn connected(
    address: &str,
    conns: &mut ReceiverStream<io::Result<Conn<TcpStream>>>,
) -> (TcpStream, Conn<TcpStream>) {
    let mut client = TcpStream::connect(address).await.unwrap();
    client
        .write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        .await
        .unwrap();
    let conn = conns.next().await.unwrap().unwrap();
    (client, conn)
}

/// Reads what the connection has, as hyper would: the error that ends it, if any.
async fn read_error(conn: &mut Conn<TcpStream>, within: Duration) -> Option<io::ErrorKind> {
    let mut buf = [0u8; 64];
    loop {
        match tokio::time::timeout(within, conn.read(&mut buf)).await {
            Err(_) => return None,
            Ok(Ok(0)) => return Some(io::ErrorKind::UnexpectedEof),
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Some(e.kind()),
        }
    }
}

#[tokio::test]
async fn connections_beyond_the_limit_are_closed_and_places_come_back() {
    let (address, mut conns) = listening(2).await;
    let mut kept = Vec::new();
    for _ in 0..2 {
        let (client, conn) = connected(&address, &mut conns).await;
        conn.place.conn.prove(false).unwrap();
        kept.push((client, conn));
    }
    let mut third = TcpStream::connect(&address).await.unwrap();
    assert!(closed(&mut third, Duration::from_secs(1)).await);
    drop(kept.pop());
    // The place is given back when the connection is dropped.
    let _fourth = TcpStream::connect(&address).await.unwrap();
    assert!(
        tokio::time::timeout(Duration::from_secs(1), conns.next())
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn one_peer_gets_only_its_share() {
    let (address, mut conns) = listening_with(Limits {
        per_peer: 2,
        ..test_limits()
    })
    .await;
    let _a = connected(&address, &mut conns).await;
    let _b = connected(&address, &mut conns).await;
    let mut third = TcpStream::connect(&address).await.unwrap();
    assert!(
        closed(&mut third, Duration::from_secs(1)).await,
        "a third from the same address is refused"
    );
}

#[tokio::test]
async fn a_connection_without_an_admitted_request_is_closed_at_its_deadline() {
    let (address, mut conns) = listening_with(Limits {
        first_request_timeout: Duration::from_millis(400),
        ..test_limits()
    })
    .await;
    let (_client, mut silent) = connected(&address, &mut conns).await;
    let (_other, mut proven) = connected(&address, &mut conns).await;
    proven.place.conn.prove(false).unwrap();
    assert_eq!(
        read_error(&mut silent, Duration::from_secs(3)).await,
        Some(io::ErrorKind::TimedOut)
    );
    assert_eq!(
        read_error(&mut proven, Duration::from_millis(800)).await,
        None,
        "a proven connection stays"
    );
}

#[tokio::test]
async fn a_request_waiting_for_its_verdict_keeps_the_connection_past_the_deadline() {
    let (address, mut conns) = listening_with(Limits {
        first_request_timeout: Duration::from_millis(300),
        ..test_limits()
    })
    .await;
    let (_client, mut conn) = connected(&address, &mut conns).await;
    let judging = conn.place.conn.judging();
    assert_eq!(
        read_error(&mut conn, Duration::from_millis(800)).await,
        None
    );
    drop(judging);
    assert_eq!(
        read_error(&mut conn, Duration::from_secs(1)).await,
        Some(io::ErrorKind::TimedOut),
        "refused, and past its deadline: closed at once"
    );
}

#[tokio::test]
async fn when_full_the_oldest_unproven_connection_makes_room() {
    let (address, mut conns) = listening(3).await;
    let (_a, mut oldest) = connected(&address, &mut conns).await;
    let (_b, proven) = connected(&address, &mut conns).await;
    proven.place.conn.prove(false).unwrap();
    let (_c, _newer) = connected(&address, &mut conns).await;
    let (_d, _newest) = connected(&address, &mut conns).await;
    assert_eq!(
        read_error(&mut oldest, Duration::from_secs(2)).await,
        Some(io::ErrorKind::ConnectionAborted)
    );
    assert!(proven.place.conn.is_proven());
}

#[tokio::test]
async fn the_last_places_are_kept_for_admins() {
    let (address, mut conns) = listening_with(Limits {
        max: 3,
        kept_for_admins: 1,
        ..test_limits()
    })
    .await;
    let (_a, a) = connected(&address, &mut conns).await;
    let (_b, b) = connected(&address, &mut conns).await;
    let (_c, c) = connected(&address, &mut conns).await;
    a.place.conn.prove(false).unwrap();
    b.place.conn.prove(false).unwrap();
    let refused = c.place.conn.prove(false).unwrap_err().to_string();
    assert!(
        refused.contains("the last 1 places are kept for admins"),
        "{refused}"
    );
    c.place.conn.prove(true).unwrap();
}

#[test]
fn peers_are_accounts_addresses_or_ipv6_prefixes() {
    let addr = |text: &str| Some(SocketAddr::new(text.parse().unwrap(), 1));
    assert_eq!(
        Peer::of_addr(addr("2001:db8::1")),
        Peer::of_addr(addr("2001:db8::ff"))
    );
    assert_eq!(
        Peer::of_addr(addr("::ffff:10.0.0.1")),
        Peer::of_addr(addr("10.0.0.1"))
    );
    assert_eq!(
        Peer::of_addr(addr("2001:db8::1")).to_string(),
        "2001:db8::/64"
    );
    assert_eq!(Peer::Account(1001).to_string(), "uid 1001");
}
