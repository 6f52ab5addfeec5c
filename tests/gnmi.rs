//! gNMI as automation uses it: a real efbd, real clients. pygnmi (Capabilities, Get, Set,
//! Subscribe, users and roles) and grpcio with the gnmi-pb definitions (commit confirmed,
//! gzip) run from `tests/gnmi/clients.py` in the virtualenv `./test.sh` prepares; a tonic
//! client checks what needs a look inside (no users file, stopping with open streams).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use efb_tests::gnmi_io::authed;
use efb_tests::{Daemon, repo, venv_tool};
use gnmi_proto::gnmi::g_nmi_client::GNmiClient;
use gnmi_proto::gnmi::{
    CapabilityRequest, Path as GnmiPath, PathElem, SubscribeRequest, Subscription,
    SubscriptionList, subscribe_request, subscribe_response,
};

fn users_file() -> PathBuf {
    repo().join("examples/users.demo.toml")
}

/// efbd with the demo users and the one-filter example site committed.
fn site(dir: &Path, extra: &[&str]) -> Daemon {
    let users = users_file();
    let mut args = vec!["--gnmi-users", users.to_str().unwrap()];
    args.extend_from_slice(extra);
    let daemon = Daemon::start(&dir.join("datastore"), &args);
    let example = repo().join("examples/one-filter-site.json");
    let (code, out, err) = daemon.cli(
        &[],
        &format!("edit\nload override {}\ncommit\n", example.display()),
    );
    assert_eq!(code, 0, "loading the example: {out}{err}");
    daemon
}

fn clients(daemon: &Daemon, scenario: &str) {
    daemon.gnmi_clients(scenario);
}

#[test]
fn proto_transcription_matches_the_gnmi_pb_definitions() {
    let out = Command::new(venv_tool("python"))
        .arg(repo().join("tests/gnmi/proto_check.py"))
        .arg(repo().join("proto"))
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("ours 0.10.0, gnmi-pb 0.10.0"), "{stdout}");
}

#[test]
fn pygnmi_capabilities_get_and_set_over_tls() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = site(dir.path(), &[]);
    assert!(daemon.gnmi_tls, "TLS is the default");
    clients(&daemon, "read_write");
    assert!(daemon.stop());
}

#[test]
fn pygnmi_subscriptions_stream_sample_poll_once() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = site(dir.path(), &[]);
    clients(&daemon, "subscribe");
    assert!(daemon.stop());
}

#[test]
fn users_and_roles_in_plain_text_mode() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = site(dir.path(), &["--gnmi-plaintext"]);
    assert!(!daemon.gnmi_tls);
    clients(&daemon, "auth");
    assert!(daemon.stop());
}

#[test]
fn commit_confirmed_extension_with_grpcio() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = site(dir.path(), &[]);
    clients(&daemon, "confirmed");
    assert!(daemon.stop());
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn without_a_users_file_no_login_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(&dir.path().join("datastore"), &["--gnmi-plaintext"]);
    let address = format!("http://{}", daemon.gnmi.clone().unwrap());
    runtime().block_on(async {
        let mut client = GNmiClient::connect(address).await.unwrap();
        let err = client
            .capabilities(authed(CapabilityRequest::default(), "admin"))
            .await
            .unwrap_err();
        assert_eq!(err.code(), tonic::Code::Unauthenticated);
        assert!(err.message().contains("no gNMI users"), "{}", err.message());
    });
    assert!(daemon.stop());
}

#[test]
fn efbd_stops_promptly_with_streams_open_and_says_so_to_them() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = site(dir.path(), &["--gnmi-plaintext"]);
    let address = format!("http://{}", daemon.gnmi.clone().unwrap());
    // Threads of its own: the client's connection is served while the test waits.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut stream = rt.block_on(async {
        let mut client = GNmiClient::connect(address).await.unwrap();
        let list = SubscriptionList {
            subscription: vec![Subscription {
                path: Some(GnmiPath {
                    elem: vec![PathElem {
                        name: "ports".into(),
                        ..PathElem::default()
                    }],
                    ..GnmiPath::default()
                }),
                ..Subscription::default()
            }],
            ..SubscriptionList::default()
        };
        let first = SubscribeRequest {
            request: Some(subscribe_request::Request::Subscribe(list)),
            ..SubscribeRequest::default()
        };
        // The client keeps its side open (a channel it never closes).
        let (tx, rx) = tokio::sync::mpsc::channel(1);
        tx.send(first).await.unwrap();
        std::mem::forget(tx);
        let requests = tokio_stream::wrappers::ReceiverStream::new(rx);
        let mut stream = client
            .subscribe(authed(requests, "viewer"))
            .await
            .unwrap()
            .into_inner();
        loop {
            let m = stream.message().await.unwrap().unwrap();
            if matches!(
                m.response,
                Some(subscribe_response::Response::SyncResponse(true))
            ) {
                break;
            }
        }
        stream
    });
    let started = Instant::now();
    let stopping = std::thread::spawn(move || daemon.stop());
    let end = rt
        .block_on(async { tokio::time::timeout(Duration::from_secs(10), stream.message()).await });
    let status = end.expect("the stream ends").expect_err("with a status");
    assert_eq!(status.code(), tonic::Code::Unavailable, "{status:?}");
    assert!(stopping.join().unwrap(), "efbd stopped cleanly");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "stopped in {:?}",
        started.elapsed()
    );
}

#[test]
fn unsupported_encodings_and_disagreeing_origins_are_refused() {
    use gnmi_proto::gnmi::{Encoding, GetRequest};
    let dir = tempfile::tempdir().unwrap();
    let daemon = site(dir.path(), &["--gnmi-plaintext"]);
    let address = format!("http://{}", daemon.gnmi.clone().unwrap());
    let ports = |origin: &str| GnmiPath {
        origin: origin.into(),
        elem: vec![PathElem {
            name: "ports".into(),
            ..PathElem::default()
        }],
        ..GnmiPath::default()
    };
    runtime().block_on(async {
        let mut client = GNmiClient::connect(address).await.unwrap();
        let ascii = GetRequest {
            path: vec![ports("")],
            encoding: Encoding::Ascii as i32,
            ..GetRequest::default()
        };
        let err = client.get(authed(ascii, "viewer")).await.unwrap_err();
        assert_eq!(err.code(), tonic::Code::Unimplemented, "{err:?}");
        assert!(err.message().contains("ASCII"), "{}", err.message());
        let unknown = GetRequest {
            path: vec![ports("")],
            encoding: 42,
            ..GetRequest::default()
        };
        let err = client.get(authed(unknown, "viewer")).await.unwrap_err();
        assert_eq!(err.code(), tonic::Code::InvalidArgument, "{err:?}");
        let disagree = GetRequest {
            prefix: Some(GnmiPath {
                origin: "ecofilter-balancer".into(),
                ..GnmiPath::default()
            }),
            path: vec![ports("openconfig")],
            ..GetRequest::default()
        };
        let err = client.get(authed(disagree, "viewer")).await.unwrap_err();
        assert_eq!(err.code(), tonic::Code::InvalidArgument, "{err:?}");
        assert!(err.message().contains("disagree"), "{}", err.message());
    });
    assert!(daemon.stop());
}
