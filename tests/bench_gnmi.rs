//! gNMI's speed through a real efbd (release build, gRPC on loopback, plain text so the
//! figures are the server's, not TLS's): Get of the whole configuration with 10 000 flows,
//! Set of one leaf end to end, 100 STREAM subscribers receiving one change (delivery
//! latency from the Set being sent), and memory per subscriber (efbd's resident memory).
//! Prints figures: `cargo bench -p efb-tests --bench gnmi`; `EFB_BENCH_QUICK=1` runs one
//! tiny round.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use efb_tests::figures::{resident_kib, site_with_flows, summary};
use efb_tests::gnmi_io::{authed, connect, path};
use efb_tests::{Daemon, repo};
use gnmi_proto::gnmi::g_nmi_client::GNmiClient;
use gnmi_proto::gnmi::{
    Encoding, GetRequest, Path, SetRequest, SubscribeRequest, SubscribeResponse, Subscription,
    SubscriptionList, TypedValue, Update, subscribe_request, subscribe_response, typed_value,
};
use tonic::Streaming;
use tonic::transport::Channel;

struct Size {
    flows: usize,
    rounds: usize,
    subscribers: usize,
    changes: usize,
    /// Subscribers opened to measure memory (on a daemon of its own, small configuration).
    memory_subscribers: usize,
}

fn size() -> Size {
    if std::env::var_os("EFB_BENCH_QUICK").is_some() {
        Size {
            flows: 100,
            rounds: 3,
            subscribers: 10,
            changes: 2,
            memory_subscribers: 20,
        }
    } else {
        Size {
            flows: 10_000,
            rounds: 30,
            subscribers: 100,
            changes: 20,
            memory_subscribers: 1000,
        }
    }
}

/// A flow's description: validated with only that flow of the flows.
fn flow_description() -> Path {
    path(&[
        ("ecofilter-balancer", None),
        ("flow", Some(("name", "sub1"))),
        ("description", None),
    ])
}

/// A port's description: validated with none of the flows (they do not name ports).
fn port_description() -> Path {
    path(&[
        ("ports", None),
        ("port", Some(("name", "p1"))),
        ("description", None),
    ])
}

fn set_description(at: Path, text: &str) -> SetRequest {
    SetRequest {
        update: vec![Update {
            path: Some(at),
            val: Some(TypedValue {
                value: Some(typed_value::Value::JsonIetfVal(
                    serde_json::to_vec(text).unwrap(),
                )),
            }),
            ..Update::default()
        }],
        ..SetRequest::default()
    }
}

async fn subscriber(mut client: GNmiClient<Channel>) -> Streaming<SubscribeResponse> {
    let list = SubscriptionList {
        subscription: vec![Subscription {
            path: Some(flow_description()),
            ..Subscription::default()
        }],
        encoding: Encoding::JsonIetf as i32,
        ..SubscriptionList::default()
    };
    let first = SubscribeRequest {
        request: Some(subscribe_request::Request::Subscribe(list)),
        ..SubscribeRequest::default()
    };
    let mut stream = client
        .subscribe(authed(tokio_stream::iter(vec![first]), "admin"))
        .await
        .unwrap()
        .into_inner();
    loop {
        let m = stream.message().await.unwrap().unwrap();
        if matches!(
            m.response,
            Some(subscribe_response::Response::SyncResponse(true))
        ) {
            return stream;
        }
    }
}

fn started(dir: &std::path::Path, flows: usize) -> Daemon {
    let users = repo().join("examples/users.demo.toml");
    // One user holds every subscriber here: above efbd's default caps (64 per user).
    let settings = dir.join("efbd.toml");
    std::fs::write(
        &settings,
        "[gnmi]\nmax_subscriptions = 5000\nmax_subscriptions_per_user = 5000\n",
    )
    .unwrap();
    let daemon = Daemon::start(
        &dir.join("datastore"),
        &[
            "--gnmi-plaintext",
            "--gnmi-users",
            users.to_str().unwrap(),
            "--config",
            settings.to_str().unwrap(),
        ],
    );
    let site = dir.join("site.json");
    std::fs::write(&site, site_with_flows(flows)).unwrap();
    daemon.commit_file(&site);
    daemon
}

fn main() {
    let size = size();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let daemon = started(dir.path(), size.flows);
    rt.block_on(run(&daemon, &size));
    assert!(daemon.stop());
    // Memory on a daemon whose heap holds no freed 10 000-flow load to reuse.
    let small = tempfile::tempdir().unwrap();
    let daemon = started(small.path(), 0);
    let pid = daemon.pid();
    rt.block_on(memory(&daemon, size.memory_subscribers, pid));
    assert!(daemon.stop());
}

async fn memory(daemon: &Daemon, count: usize, pid: u32) {
    let channel = connect(daemon).await;
    // One first, so that the connection and the first task's buffers are counted out.
    let first = subscriber(GNmiClient::new(channel.clone())).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = resident_kib(pid);
    let mut streams = vec![first];
    for _ in 0..count {
        streams.push(subscriber(GNmiClient::new(channel.clone())).await);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = resident_kib(pid);
    println!(
        "memory per STREAM subscriber (efbd VmRSS over {count})          {:.1} KiB",
        after.saturating_sub(before) as f64 / count as f64
    );
}

async fn run(daemon: &Daemon, size: &Size) {
    let channel = connect(daemon).await;
    let mut client = GNmiClient::new(channel.clone()).max_decoding_message_size(512 * 1024 * 1024);
    println!(
        "gNMI, {} flows, release build, loopback, plain text",
        size.flows
    );

    let mut times = Vec::new();
    let mut bytes = 0;
    for _ in 0..size.rounds {
        let get = GetRequest {
            path: vec![Path::default()],
            r#type: 1, // CONFIG
            encoding: Encoding::JsonIetf as i32,
            ..GetRequest::default()
        };
        let started = Instant::now();
        let response = client.get(authed(get, "admin")).await.unwrap().into_inner();
        times.push(started.elapsed());
        bytes = response.notification[0].update[0]
            .val
            .as_ref()
            .map(|v| match &v.value {
                Some(typed_value::Value::JsonIetfVal(b)) => b.len(),
                _ => 0,
            })
            .unwrap_or(0);
    }
    summary(
        &format!(
            "Get of the whole configuration ({:.1} MiB JSON_IETF)",
            bytes as f64 / 1048576.0
        ),
        times,
    );

    for (name, at) in [
        (
            "Set of one leaf of a flow, end to end",
            flow_description as fn() -> Path,
        ),
        ("Set of one leaf of a port, end to end", port_description),
    ] {
        let mut times = Vec::new();
        for i in 0..size.rounds {
            let started = Instant::now();
            client
                .set(authed(set_description(at(), &format!("set {i}")), "admin"))
                .await
                .unwrap();
            times.push(started.elapsed());
        }
        summary(name, times);
    }

    let mut streams = Vec::new();
    for _ in 0..size.subscribers {
        streams.push(subscriber(GNmiClient::new(channel.clone())).await);
    }
    let mut latencies = Vec::new();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(usize, Instant)>();
    for (i, mut stream) in streams.into_iter().enumerate() {
        let tx = tx.clone();
        tokio::spawn(async move {
            while let Ok(Some(m)) = stream.message().await {
                if let Some(subscribe_response::Response::Update(n)) = m.response
                    && !n.update.is_empty()
                {
                    let _ = tx.send((i, Instant::now()));
                }
            }
        });
    }
    for change in 0..size.changes {
        let started = Instant::now();
        client
            .set(authed(
                set_description(flow_description(), &format!("change {change}")),
                "admin",
            ))
            .await
            .unwrap();
        for _ in 0..size.subscribers {
            let (_, at) = rx.recv().await.unwrap();
            latencies.push(at - started);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    summary(
        &format!(
            "{} STREAM subscribers: delivery from Set sent",
            size.subscribers
        ),
        latencies,
    );
}
