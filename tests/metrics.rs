//! Metrics end to end: a real Prometheus server (Debian's `prometheus`, which
//! `.ci/setup.sh` installs) scrapes efbd and efb-target every second while the shell
//! commits, a `commit confirmed` times out and a filter dies; PromQL through Prometheus'
//! HTTP API must then see it all. And a metrics port in use stops efbd with the setting named.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use efb_mgmt_proto::v1::{CommitRequest, EditLinesRequest};
use efb_tests::chip_io::{Chip, FAST_PROBING, configure, daemon_with_demo_users};
use efb_tests::gnmi_io::{self, authed, path};
use efb_tests::{Daemon, Target, binary, http_get, mgmt_io, run_cli};
use gnmi_proto::gnmi::g_nmi_client::GNmiClient;
use gnmi_proto::gnmi::{
    SetRequest, SubscribeRequest, Subscription, SubscriptionList, SubscriptionMode, TypedValue,
    Update, subscribe_request, typed_value,
};

/// A Prometheus server of its own, on a free loopback port, scraping `targets` (job name,
/// address) every second; stopped (by its process id) when dropped.
struct Prometheus {
    child: Child,
    address: String,
    log: std::path::PathBuf,
}

impl Prometheus {
    fn start(dir: &Path, targets: &[(&str, &str)]) -> Prometheus {
        let mut config =
            String::from("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n");
        for (job, address) in targets {
            config += &format!(
                "  - job_name: {job}\n    static_configs:\n      - targets: ['{address}']\n"
            );
        }
        let file = dir.join("prometheus.yml");
        std::fs::write(&file, config).unwrap();
        let address = free_address();
        let log = dir.join("prometheus.log");
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", file.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("tsdb").display()
            ))
            .arg(format!("--web.listen-address={address}"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("prometheus runs: .ci/setup.sh installs the Debian package");
        let server = Prometheus {
            child,
            address,
            log,
        };
        server.wait_ready();
        server
    }

    fn wait_ready(&self) {
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(30) {
            if http_get(&self.address, "/-/ready").is_some_and(|(status, _)| status == 200) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("prometheus never got ready:\n{}", self.log());
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The instant vector `promql` gives now: each series' labels and value.
    fn query(&self, promql: &str) -> Vec<(serde_json::Value, f64)> {
        let path = format!("/api/v1/query?query={}", percent_encoded(promql));
        let (status, body) = http_get(&self.address, &path).expect("prometheus answers");
        let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(status, 200, "{promql}: {answer}");
        answer["data"]["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|series| {
                let value = series["value"][1].as_str().unwrap().parse().unwrap();
                (series["metric"].clone(), value)
            })
            .collect()
    }

    /// Waits (a scrape a second) until `promql` gives exactly `expected` as its one value.
    fn wait_value(&self, promql: &str, expected: f64) {
        let started = Instant::now();
        let mut last = Vec::new();
        while started.elapsed() < Duration::from_secs(30) {
            last = self.query(promql);
            if matches!(last.as_slice(), [(_, value)] if *value == expected) {
                return;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        panic!(
            "{promql}: expected {expected}, Prometheus says {last:?}\n{}",
            self.log()
        );
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A loopback address no one listens on (now).
fn free_address() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}

fn percent_encoded(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `set` lines committed through the management API with a `commit confirmed` of one
/// second that nobody confirms.
fn commit_unconfirmed(daemon: &Daemon, lines: &str) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut client = mgmt_io::connect(&rt, daemon);
    let held = mgmt_io::open(&rt, &mut client, "tester");
    let session = held.id;
    rt.block_on(client.edit_lines(EditLinesRequest {
        session,
        lines: lines.into(),
    }))
    .unwrap();
    rt.block_on(client.commit(CommitRequest {
        session,
        confirm_seconds: 1,
        ..CommitRequest::default()
    }))
    .unwrap();
}

/// A gNMI Set as admin (a port's description), then a subscription of the viewer left open
/// on `rt` until efbd ends it.
fn gnmi_set_then_subscribe(rt: &tokio::runtime::Runtime, daemon: &Daemon) {
    let port = path(&[("ports", None), ("port", Some(("name", "p1")))]);
    let mut description = port.clone();
    description.elem.extend(path(&[("description", None)]).elem);
    let set = SetRequest {
        update: vec![Update {
            path: Some(description),
            val: Some(TypedValue {
                value: Some(typed_value::Value::JsonIetfVal(b"\"from gNMI\"".to_vec())),
            }),
            ..Update::default()
        }],
        ..SetRequest::default()
    };
    let channel = rt.block_on(gnmi_io::connect(daemon));
    let mut client = GNmiClient::new(channel);
    rt.block_on(client.set(authed(set, "admin"))).unwrap();
    let list = SubscribeRequest {
        request: Some(subscribe_request::Request::Subscribe(SubscriptionList {
            subscription: vec![Subscription {
                path: Some(port),
                mode: SubscriptionMode::OnChange as i32,
                ..Subscription::default()
            }],
            ..SubscriptionList::default()
        })),
        ..SubscribeRequest::default()
    };
    rt.spawn(async move {
        let (requests, outgoing) = tokio::sync::mpsc::channel(1);
        requests.send(list).await.unwrap();
        let outgoing = tokio_stream::wrappers::ReceiverStream::new(outgoing);
        let mut stream = client
            .subscribe(authed(outgoing, "viewer"))
            .await
            .unwrap()
            .into_inner();
        while let Ok(Some(_)) = stream.message().await {
            let _open = &requests;
        }
    });
}

#[test]
fn prometheus_sees_commits_by_origin_a_dead_pair_and_the_target_s_ports() {
    let dir = tempfile::tempdir().unwrap();
    let target = Target::start(&["--metrics-listen", "127.0.0.1:0"]);
    // Two flows' counters exported of the site's six: the bound is a setting.
    let settings = dir.path().join("efbd.toml");
    std::fs::write(&settings, "[metrics]\nmax_flows = 2\n").unwrap();
    let daemon = daemon_with_demo_users(
        dir.path(),
        &target,
        &[
            "--metrics-listen",
            "127.0.0.1:0",
            "--config",
            settings.to_str().unwrap(),
            "--gnmi-plaintext",
        ],
    );
    let efbd = daemon.metrics.clone().unwrap();
    let chip = target.metrics.clone().unwrap();
    let prometheus = Prometheus::start(dir.path(), &[("efbd", &efbd), ("efb-target", &chip)]);

    configure(&daemon, FAST_PROBING);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut client = mgmt_io::connect(&rt, &daemon);
    // A 100g port has no lanes: refused by validation.
    let refused = mgmt_io::commit_lines(
        &rt,
        &mut client,
        "set ports port p99 number 30 speed 100g lane 1",
    );
    assert!(refused.is_err(), "{refused:?}");
    // gNMI refuses a Set while a commit confirmed waits: before it.
    gnmi_set_then_subscribe(&rt, &daemon);
    commit_unconfirmed(&daemon, "set ecofilter-balancer balancing-method layer-4");

    prometheus.wait_value(r#"up{job="efbd"}"#, 1.0);
    prometheus.wait_value(r#"up{job="efb-target"}"#, 1.0);
    let commits = |origin: &str, result: &str| {
        format!(r#"efb_commits_total{{origin="{origin}",result="{result}"}}"#)
    };
    prometheus.wait_value(&commits("confirm_timeout", "ok"), 1.0);
    prometheus.wait_value(&commits("shell", "ok"), 2.0);
    prometheus.wait_value(&commits("shell", "refused"), 1.0);
    prometheus.wait_value(&commits("gnmi", "ok"), 1.0);
    prometheus.wait_value(&commits("cancel", "ok"), 0.0);
    prometheus.wait_value("efb_commit_duration_seconds_count", 5.0);
    prometheus.wait_value("efb_gnmi_subscriptions", 1.0);
    prometheus.wait_value("efb_gnmi_connections", 1.0);
    prometheus.wait_value("efb_validation_duration_seconds_count >= bool 3", 1.0);
    prometheus.wait_value(
        "efb_chip_connected * efb_chip_primary * efb_chip_in_sync",
        1.0,
    );
    prometheus.wait_value("efb_flows", 6.0);
    prometheus.wait_value("count(efb_flow_packets_total)", 2.0);
    prometheus.wait_value(r#"efb_unit_active_pairs{unit="ef1"}"#, 8.0);
    // Keep-alives come back: their round trips are counted, every one under a quarter second.
    prometheus.wait_value("efb_keepalive_round_trip_seconds_count > bool 0", 1.0);
    prometheus.wait_value(
        r#"efb_keepalive_round_trip_seconds_bucket{le="0.25"} == bool ignoring(le) efb_keepalive_round_trip_seconds_count"#,
        1.0,
    );

    // The first pair's filter (p9-0 <-> p9-1) stops answering its keep-alives.
    let mut control = Chip::connect(&target);
    control.set_filter_dead("p9-0", "p9-1", true);
    prometheus.wait_value(r#"count(efb_pair_status{status="down"} == 1)"#, 1.0);
    let down = prometheus.query(r#"efb_pair_status{status="down"} == 1"#);
    assert_eq!(
        (&down[0].0["unit"], &down[0].0["pair"]),
        (&"ef1".into(), &"f1-te1-te2".into()),
        "{down:?}"
    );
    prometheus.wait_value(r#"efb_unit_active_pairs{unit="ef1"}"#, 7.0);
    prometheus.wait_value(r#"efb_unit_status{unit="ef1",status="active"}"#, 1.0);
    // Keep-alives still leave by the dead pair's LAN port; nothing comes back on its WAN
    // port any more.
    let sent = prometheus.query(r#"efb_target_port_tx_frames_total{port="p9-0"}"#);
    assert!(sent.first().is_some_and(|(_, v)| *v > 0.0), "{sent:?}");
    prometheus.wait_value(
        r#"increase(efb_target_port_rx_frames_total{port="p9-1"}[3s])"#,
        0.0,
    );
    let on_path = prometheus.query(r#"efb_pair_time_on_path_seconds{pair="f1-te3-te4"}"#);
    assert!(
        on_path.len() == 2 && on_path.iter().all(|(_, s)| *s > 0.0 && *s < 1.0),
        "{on_path:?}"
    );
    prometheus.wait_value("efb_process_resident_memory_bytes > bool 1e6", 1.0);
    // Prometheus keeps its connection open between scrapes: efbd still stops cleanly.
    assert!(daemon.stop(), "efbd did not stop cleanly");
}

/// Waits for `child` to exit (at most 30 s): its exit code.
fn exit_code(mut child: Child) -> (i32, String, String) {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(30) {
        if child.try_wait().unwrap().is_some() {
            let out = child.wait_with_output().unwrap();
            return (
                out.status.code().unwrap_or(-1),
                String::from_utf8_lossy(&out.stdout).into_owned(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    panic!("still running after 30 s");
}

#[test]
fn a_metrics_port_in_use_stops_efbd_and_efb_target_naming_the_setting() {
    let dir = tempfile::tempdir().unwrap();
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap().to_string();
    let mut efbd = Command::new(binary("efbd"));
    efbd.arg("--datastore")
        .arg(dir.path().join("datastore"))
        .args(["--no-data-plane", "--no-gnmi", "--metrics-listen", &address]);
    let (code, out, err) = run_cli(efbd, "");
    assert!(
        code == 1
            && err.contains(&format!("metrics.listen: {address} is in use"))
            && err.contains("--no-metrics"),
        "exit {code}\n{err}"
    );
    assert!(out.is_empty(), "efbd said it serves: {out}");
    assert!(
        !dir.path().join("datastore/efbd.sock").exists(),
        "efbd left its socket behind"
    );

    let target = Command::new(binary("efb-target"))
        .args(["--listen", "127.0.0.1:0", "--metrics-listen", &address])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (code, _, err) = exit_code(target);
    assert!(
        code != 0 && err.contains(&format!("--metrics-listen: {address} is in use")),
        "exit {code}\n{err}"
    );
}
