//! gNMI and the management API against hostile clients, through a real efbd: wrong
//! passwords in bulk (bounded memory, limited per user and peer, slowed not refused for
//! a user guessed at from many addresses, logged, refused in the same time for unknown
//! names), subscriptions past their caps, subscribers that do not hold up
//! commits, and connections that never handshake or come in too many.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use efb_tests::figures::{peak_resident_kib, resident_kib};
use efb_tests::gnmi_io::{authed, connect, with_password};
use efb_tests::{Daemon, repo};
use gnmi_proto::gnmi::g_nmi_client::GNmiClient;
use gnmi_proto::gnmi::{
    GetRequest, Path as GnmiPath, SubscribeRequest, SubscribeResponse, Subscription,
    SubscriptionList, subscribe_request, subscribe_response,
};
use tonic::transport::Channel;
use tonic::{Code, Status, Streaming};

/// efbd with the demo users (standard Argon2 cost), plain-text gNMI unless `tls`, and
/// `settings` as its TOML settings file; its log (level info) in `log` if given.
fn started(dir: &Path, settings: &str, tls: bool, log: Option<&Path>) -> Daemon {
    let file = dir.join("efbd.toml");
    std::fs::write(&file, settings).unwrap();
    let users = repo().join("examples/users.demo.toml");
    let mut args = vec![
        "--config",
        file.to_str().unwrap(),
        "--gnmi-users",
        users.to_str().unwrap(),
    ];
    if !tls {
        args.push("--gnmi-plaintext");
    }
    let datastore = dir.join("datastore");
    match log {
        Some(log) => Daemon::start_logging(&datastore, &args, log),
        None => Daemon::start(&datastore, &args),
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Runtime::new().unwrap()
}

async fn get(channel: &Channel, user: &str, password: &str) -> Result<(), Status> {
    GNmiClient::new(channel.clone())
        .get(with_password(GetRequest::default(), user, password))
        .await
        .map(|_| ())
}

/// A STREAM subscription of the whole tree (ON_CHANGE), as `user`: the response stream,
/// unread.
async fn subscribe(channel: &Channel, user: &str) -> Result<Streaming<SubscribeResponse>, Status> {
    let list = SubscriptionList {
        subscription: vec![Subscription {
            path: Some(GnmiPath::default()),
            ..Subscription::default()
        }],
        ..SubscriptionList::default()
    };
    let first = SubscribeRequest {
        request: Some(subscribe_request::Request::Subscribe(list)),
        ..SubscribeRequest::default()
    };
    let mut client = GNmiClient::new(channel.clone());
    let stream = client
        .subscribe(authed(tokio_stream::iter(vec![first]), user))
        .await?;
    Ok(stream.into_inner())
}

/// Reads up to the first sync_response: the subscription is served.
async fn synced(stream: &mut Streaming<SubscribeResponse>) {
    loop {
        let m = stream.message().await.unwrap().unwrap();
        if matches!(
            m.response,
            Some(subscribe_response::Response::SyncResponse(true))
        ) {
            return;
        }
    }
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

#[test]
fn wrong_passwords_in_bulk_run_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    // Connections that never log in are closed after first_request_timeout_s: longer than
    // the slow checks of a debug build take here; the 30 come from one address.
    let settings = "[gnmi]\npassword_checks = 2\nlogin_failures_per_user_address = 0\n\
                    login_failures_per_address = 0\n[gnmi.connections]\n\
                    first_request_timeout_s = 600\nunproven_per_peer = 30\n";
    let daemon = started(dir.path(), settings, false, None);
    let rt = runtime();
    let connection = rt.block_on(connect(&daemon));
    rt.block_on(get(&connection, "viewer", "viewer")).unwrap();
    let before = resident_kib(daemon.pid());
    // 30 clients at once, each its own connection, admin and viewer with wrong passwords.
    let refused = rt.block_on(async {
        let mut tasks = Vec::new();
        for i in 0..30 {
            let connection = connect(&daemon).await;
            let user = if i % 2 == 0 { "admin" } else { "viewer" };
            tasks.push(tokio::spawn(async move {
                get(&connection, user, &format!("guess{i}")).await
            }));
        }
        let mut refused = 0;
        for task in tasks {
            let err = task.await.unwrap().unwrap_err();
            assert_eq!(err.code(), Code::Unauthenticated, "{err:?}");
            refused += 1;
        }
        refused
    });
    assert_eq!(refused, 30);
    let (peak, after) = (peak_resident_kib(daemon.pid()), resident_kib(daemon.pid()));
    // Two checks at a time, 19 MiB each: about 40 MiB more, not one 19 MiB per client.
    let bound = 100 * 1024;
    assert!(
        peak < before + bound,
        "peak resident memory {peak} KiB from {before} KiB before"
    );
    assert!(
        after < before + bound,
        "{after} KiB after, {before} KiB before"
    );
    assert!(daemon.stop());
}

/// A Set of `bytes` spaces as a JSON value, `ports` replaced by it.
fn huge_set(bytes: usize) -> gnmi_proto::gnmi::SetRequest {
    use gnmi_proto::gnmi::{TypedValue, Update, typed_value};
    gnmi_proto::gnmi::SetRequest {
        update: vec![Update {
            path: Some(efb_tests::gnmi_io::path(&[("ports", None)])),
            val: Some(TypedValue {
                value: Some(typed_value::Value::JsonIetfVal(vec![b' '; bytes])),
            }),
            ..Update::default()
        }],
        ..gnmi_proto::gnmi::SetRequest::default()
    }
}

#[test]
fn a_set_is_judged_before_its_body_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = started(dir.path(), "", false, None);
    let rt = runtime();
    let connection = rt.block_on(connect(&daemon));
    rt.block_on(get(&connection, "viewer", "viewer")).unwrap();
    let before = peak_resident_kib(daemon.pid());
    let mut client = GNmiClient::new(connection).max_encoding_message_size(usize::MAX);
    // Without credentials, and from a viewer: refused by the request's head alone.
    let err = rt
        .block_on(client.set(tonic::Request::new(huge_set(10 << 20))))
        .unwrap_err();
    assert_eq!(err.code(), Code::Unauthenticated, "{err:?}");
    let err = rt
        .block_on(client.set(with_password(huge_set(10 << 20), "viewer", "viewer")))
        .unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied, "{err:?}");
    assert!(
        err.message().contains("commit needs the admin role"),
        "{err:?}"
    );
    // 200 MiB: refused as well (the client may see its stream reset while still sending).
    let started = Instant::now();
    let err = rt
        .block_on(client.set(tonic::Request::new(huge_set(200 << 20))))
        .unwrap_err();
    assert!(
        matches!(
            err.code(),
            Code::Unauthenticated | Code::Unknown | Code::Unavailable
        ),
        "{err:?}"
    );
    let peak = peak_resident_kib(daemon.pid());
    println!(
        "efbd's peak memory before and after unauthenticated Sets of 10 and 200 MiB: {} / {} MiB ({} ms for the 200 MiB one)",
        before / 1024,
        peak / 1024,
        started.elapsed().as_millis()
    );
    assert!(peak < before + 64 * 1024, "{before} KiB -> {peak} KiB");
    assert!(daemon.stop());
}

#[test]
fn failed_logins_are_limited_per_user_and_peer_and_logged() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("efbd.log");
    let settings = "[gnmi]\nlogin_failures_per_user_address = 3\nlogin_window_s = 60\n";
    let daemon = started(dir.path(), settings, false, Some(&log));
    let rt = runtime();
    let connection = rt.block_on(connect(&daemon));
    for guess in ["a", "b", "c"] {
        let err = rt.block_on(get(&connection, "admin", guess)).unwrap_err();
        assert_eq!(err.code(), Code::Unauthenticated, "{err:?}");
    }
    // Now even the right password is refused, without a check, saying when to retry.
    let err = rt.block_on(get(&connection, "admin", "admin")).unwrap_err();
    assert_eq!(err.code(), Code::ResourceExhausted, "{err:?}");
    assert!(
        err.message().contains("127.0.0.1")
            && err.message().contains("retry in")
            && err
                .message()
                .contains("gnmi.login_failures_per_user_address"),
        "{}",
        err.message()
    );
    // Another user from the same address is not held up.
    rt.block_on(get(&connection, "viewer", "viewer")).unwrap();
    assert!(daemon.stop());
    let log = std::fs::read_to_string(&log).unwrap();
    let failures: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("WARN") && l.contains("gNMI login failed"))
        .collect();
    assert_eq!(failures.len(), 3, "{log}");
    assert!(
        failures[0].contains("user=\"admin\"") && failures[0].contains("peer=127.0.0.1"),
        "{}",
        failures[0]
    );
    assert!(
        log.lines()
            .any(|l| l.contains("WARN") && l.contains("logins as this user from this peer refused")),
        "{log}"
    );
}

/// A connection to the gNMI address from the loopback address 127.0.1.`host`.
async fn connect_from(gnmi: &str, host: u8) -> Channel {
    Channel::from_shared(format!("http://{gnmi}"))
        .unwrap()
        .local_address(Some(std::net::IpAddr::from([127, 0, 1, host])))
        .connect()
        .await
        .unwrap()
}

/// `count` wrong guesses at admin's password from 127.0.1.`host`, one after another: the
/// answers.
async fn guess_from(gnmi: String, host: u8, count: usize) -> Vec<Status> {
    let channel = connect_from(&gnmi, host).await;
    let mut answers = Vec::new();
    for g in 0..count {
        let guess = format!("guess-{host}-{g}");
        answers.push(get(&channel, "admin", &guess).await.unwrap_err());
    }
    answers
}

/// How long `user` takes to log in with the right password from 127.0.1.`host`.
async fn timed_login(gnmi: String, host: u8, user: &str) -> Duration {
    let channel = connect_from(&gnmi, host).await;
    let started = Instant::now();
    get(&channel, user, user).await.unwrap();
    started.elapsed()
}

#[test]
fn guesses_from_many_addresses_cannot_lock_the_admin_out() {
    let dir = tempfile::tempdir().unwrap();
    // The default budgets and slowdown, but a total budget the guesses below pass.
    let settings = "[gnmi]\nlogin_failures_total = 40\n\
                    [gnmi.connections]\nfirst_request_timeout_s = 600\n";
    let daemon = started(dir.path(), settings, false, None);
    let gnmi = daemon.gnmi.clone().unwrap();
    let rt = runtime();
    // A client logged in before the guessing starts (the operator: a password efbd
    // verified before is not slowed, and the admin's must be checked afresh below).
    let operator = rt.block_on(connect(&daemon));
    rt.block_on(get(&operator, "operator", "operator")).unwrap();
    // 10 addresses, 12 guesses each; the admin logs in from an 11th while they go on.
    let started = Instant::now();
    let (answers, admin_in) = rt.block_on(async {
        let guessers: Vec<_> = (2..12u8)
            .map(|host| tokio::spawn(guess_from(gnmi.clone(), host, 12)))
            .collect();
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let admin_in = timed_login(gnmi.clone(), 12, "admin").await;
        let mut answers = Vec::new();
        for guesser in guessers {
            answers.push(guesser.await.unwrap());
        }
        (answers, admin_in)
    });
    let attack = started.elapsed();
    let mut wrong = 0;
    for from_one in &answers {
        let checked = from_one
            .iter()
            .filter(|s| s.code() == Code::Unauthenticated)
            .count();
        // Each address meets its budget as admin (5); its later guesses are refused unchecked.
        assert_eq!(checked, 5, "{from_one:?}");
        for refused in &from_one[5..] {
            assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
            assert!(
                refused
                    .message()
                    .contains("gnmi.login_failures_per_user_address"),
                "{refused:?}"
            );
        }
        wrong += checked;
    }
    // Past the total budget, another user with no failures of its own is slowed, not refused.
    let viewer_in = rt.block_on(timed_login(gnmi.clone(), 13, "viewer"));
    println!(
        "120 guesses from 10 addresses in {:.1} s: {wrong} checked, {} refused unchecked; \
         admin from an 11th address in {:.2} s during the guesses, viewer from a 12th in {:.2} s after",
        attack.as_secs_f64(),
        120 - wrong,
        admin_in.as_secs_f64(),
        viewer_in.as_secs_f64()
    );
    assert!(admin_in < Duration::from_secs(3), "{admin_in:?}");
    assert!(viewer_in < Duration::from_secs(3), "{viewer_in:?}");
    // The client already in is not held up.
    rt.block_on(get(&operator, "operator", "operator")).unwrap();
    assert!(daemon.stop());
}

#[test]
fn unknown_names_take_as_long_to_refuse_as_wrong_passwords() {
    let dir = tempfile::tempdir().unwrap();
    let settings = "[gnmi]\nlogin_failures_per_user_address = 0\nlogin_failures_per_address = 0\n\
                    login_failures_per_user = 0\n[gnmi.connections]\nfirst_request_timeout_s = 600\n";
    let daemon = started(dir.path(), settings, false, None);
    let rt = runtime();
    let (known, unknown) = rt.block_on(async {
        let connection = connect(&daemon).await;
        let timed = |user: String| {
            let connection = connection.clone();
            async move {
                let started = Instant::now();
                let err = get(&connection, &user, "not-the-password")
                    .await
                    .unwrap_err();
                assert_eq!(err.code(), Code::Unauthenticated);
                started.elapsed()
            }
        };
        let (mut known, mut unknown) = (Vec::new(), Vec::new());
        // Alternating, so that whatever else the machine does weighs on both alike.
        for i in 0..7 {
            known.push(timed("admin".to_string()).await);
            unknown.push(timed(format!("nobody{i}")).await);
        }
        (median(known), median(unknown))
    });
    let ratio = known.as_secs_f64() / unknown.as_secs_f64();
    assert!(
        (0.4..2.5).contains(&ratio),
        "a wrong password is refused in {known:?}, an unknown name in {unknown:?}"
    );
    assert!(daemon.stop());
}

#[test]
fn subscriptions_past_their_caps_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let settings = "[gnmi]\nmax_subscriptions = 4\nmax_subscriptions_per_user = 2\n";
    let daemon = started(dir.path(), settings, false, None);
    let rt = runtime();
    rt.block_on(async {
        let connection = connect(&daemon).await;
        let mut viewer = Vec::new();
        for _ in 0..2 {
            let mut stream = subscribe(&connection, "viewer").await.unwrap();
            synced(&mut stream).await;
            viewer.push(stream);
        }
        let err = subscribe(&connection, "viewer").await.unwrap_err();
        assert_eq!(err.code(), Code::ResourceExhausted, "{err:?}");
        assert!(
            err.message()
                .contains("gnmi.max_subscriptions_per_user = 2"),
            "{}",
            err.message()
        );
        let mut operator = Vec::new();
        for _ in 0..2 {
            operator.push(subscribe(&connection, "operator").await.unwrap());
        }
        let err = subscribe(&connection, "admin").await.unwrap_err();
        assert_eq!(err.code(), Code::ResourceExhausted, "{err:?}");
        assert!(
            err.message().contains("gnmi.max_subscriptions = 4"),
            "{}",
            err.message()
        );
        // A subscription that ends gives its place back.
        drop(viewer.pop());
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match subscribe(&connection, "viewer").await {
                Ok(_) => break,
                Err(e) if Instant::now() < deadline => {
                    assert_eq!(e.code(), Code::ResourceExhausted);
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => panic!("the place did not come back: {e:?}"),
            }
        }
    });
    assert!(daemon.stop());
}

/// Commits one change through the shell; how long it took.
fn commit(daemon: &Daemon, n: usize) -> Duration {
    let started = Instant::now();
    let (code, out, err) = daemon.cli(
        &[],
        &format!("edit\nset ports port p1 description change{n}\ncommit\n"),
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("commit complete"), "{out}");
    started.elapsed()
}

#[test]
fn commits_do_not_wait_for_subscribers() {
    let dir = tempfile::tempdir().unwrap();
    let settings = "[gnmi]\nmax_subscriptions = 1000\nmax_subscriptions_per_user = 1000\n";
    let daemon = started(dir.path(), settings, false, None);
    let example = repo().join("examples/one-filter-site.json");
    daemon.commit_file(&example);
    let rt = runtime();
    // 200 whole-tree subscriptions logging in at once, never read: on 8 connections, as
    // one allows 32 calls at a time (gnmi.connections.streams).
    let connections: Vec<_> = (0..8).map(|_| rt.block_on(connect(&daemon))).collect();
    let tasks: Vec<_> = (0..200)
        .map(|n| {
            let connection = connections[n % connections.len()].clone();
            rt.spawn(async move { subscribe(&connection, "viewer").await })
        })
        .collect();
    let during = commit(&daemon, 1);
    let streams: Vec<_> = rt.block_on(async {
        let mut streams = Vec::new();
        for task in tasks {
            streams.push(task.await.unwrap().unwrap());
        }
        streams
    });
    let after = commit(&daemon, 2);
    let bound = Duration::from_secs(2);
    assert!(
        during < bound && after < bound,
        "commits took {during:?} while 200 subscribers logged in and {after:?} with them unread"
    );
    drop(streams);
    assert!(daemon.stop());
}

/// True when the peer closed `stream` (end of file or reset) within `within`.
/// A connection whose reads can time out: gNMI's TCP, the management API's Unix socket.
trait Timed: Read {
    fn time_out(&self, within: Duration);
}

impl Timed for TcpStream {
    fn time_out(&self, within: Duration) {
        self.set_read_timeout(Some(within)).unwrap();
    }
}

impl Timed for UnixStream {
    fn time_out(&self, within: Duration) {
        self.set_read_timeout(Some(within)).unwrap();
    }
}

fn closed_within(stream: &mut impl Timed, within: Duration) -> bool {
    stream.time_out(within);
    let mut buf = [0u8; 256];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return true,
            // What the server sends first (its HTTP/2 settings) is not an answer.
            Ok(_) => continue,
            Err(e) => {
                return !matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                );
            }
        }
    }
}

#[test]
fn connections_that_never_handshake_are_closed() {
    let dir = tempfile::tempdir().unwrap();
    let settings = "[gnmi.connections]\nhandshake_timeout_s = 1\n\
                    [management.connections]\nhandshake_timeout_s = 1\n";
    let daemon = started(dir.path(), settings, true, None);
    let gnmi = daemon.gnmi.clone().unwrap();
    // No TLS ClientHello on gNMI; nothing, then half an HTTP/2 preface, on the
    // management API.
    let mut silent_tls = TcpStream::connect(&gnmi).unwrap();
    let mut silent = UnixStream::connect(&daemon.address).unwrap();
    let mut half = UnixStream::connect(&daemon.address).unwrap();
    half.write_all(b"PRI * HTTP/2.0\r\n").unwrap();
    let within = Duration::from_secs(10);
    assert!(
        closed_within(&mut silent_tls, within),
        "gNMI kept a silent connection"
    );
    assert!(
        closed_within(&mut silent, within),
        "the management API kept a silent connection"
    );
    assert!(
        closed_within(&mut half, within),
        "the management API kept half a handshake"
    );
    // Real clients are served as before.
    let (code, out, err) = daemon.cli(&["-c", "show system status"], "");
    assert_eq!(code, 0, "{out}{err}");
    assert!(daemon.stop());
}

#[test]
fn when_full_connections_that_made_no_request_make_room_and_the_rest_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let settings = "[gnmi.connections]\nmax = 3\nhandshake_timeout_s = 60\n\
                    [management.connections]\nmax = 2\nhandshake_timeout_s = 60\n";
    let daemon = started(dir.path(), settings, false, None);
    let gnmi = daemon.gnmi.clone().unwrap();
    let within = Duration::from_secs(5);
    // Three gNMI connections that say nothing fill the places; a fourth pushes out the
    // oldest of them, not itself.
    let mut held: Vec<TcpStream> = (0..3).map(|_| TcpStream::connect(&gnmi).unwrap()).collect();
    let mut extra = TcpStream::connect(&gnmi).unwrap();
    assert!(
        closed_within(&mut held[0], within),
        "the oldest silent connection made room"
    );
    assert!(
        !closed_within(&mut extra, Duration::from_millis(200)),
        "the newcomer stays"
    );
    // A real client gets in the same way and, once logged in, is never the one pushed out.
    let rt = runtime();
    let client = rt.block_on(connect(&daemon));
    rt.block_on(get(&client, "viewer", "viewer")).unwrap();
    let _more: Vec<TcpStream> = (0..4).map(|_| TcpStream::connect(&gnmi).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(300));
    rt.block_on(get(&client, "viewer", "viewer")).unwrap();

    // The management API's two places taken by shells that made requests: a third
    // connection is closed at once.
    let shells: Vec<_> = (0..2)
        .map(|_| {
            let mut api = efb_tests::mgmt_io::connect(&rt, &daemon);
            rt.block_on(api.hello(efb_mgmt_proto::v1::HelloRequest {}))
                .unwrap();
            api
        })
        .collect();
    let mut extra_mgmt = UnixStream::connect(&daemon.address).unwrap();
    assert!(
        closed_within(&mut extra_mgmt, within),
        "a third management connection was kept"
    );
    drop(shells);
    drop(held);
    assert!(daemon.stop());
}
