//! Metrics end to end: a real Prometheus server (Debian's `prometheus`, which
//! `.ci/setup.sh` installs) scrapes efbd and efb-target every second while the shell
//! commits, a `commit confirmed` times out and a filter dies; PromQL through Prometheus'
//! HTTP API must then see it all. And a metrics port in use stops efbd with the setting named.
//!
//! The endpoint off loopback: idle connections do not keep scrapes out; with the web
//! configuration of `examples/metrics-web-config.yml` (TLS, basic authentication) the real
//! Prometheus scrapes, curl without or with wrong credentials gets 401, and `promtool check
//! web-config` accepts the example; a bad web configuration stops efbd naming the setting.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use efb_mgmt_proto::v1::{CommitRequest, EditLinesRequest};
use efb_tests::chip_io::{Chip, FAST_PROBING, configure, daemon_with_demo_users};
use efb_tests::gnmi_io::{self, authed, path};
use efb_tests::{Daemon, Target, binary, http_get, mgmt_io, repo, run_cli};
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
        let jobs: Vec<String> = targets
            .iter()
            .map(|(job, address)| job_config(job, address, ""))
            .collect();
        Prometheus::start_jobs(dir, &jobs)
    }

    /// Scraping with the jobs given as YAML (see [`job_config`]).
    fn start_jobs(dir: &Path, jobs: &[String]) -> Prometheus {
        let mut config =
            String::from("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n");
        for job in jobs {
            config += job;
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

/// A scrape job of Prometheus' configuration: `job` scrapes `address`, with `more` (YAML
/// lines indented by four, such as `scheme: https`).
fn job_config(job: &str, address: &str, more: &str) -> String {
    format!("  - job_name: {job}\n{more}    static_configs:\n      - targets: ['{address}']\n")
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
    prometheus.wait_value(&commits("boot", "ok"), 0.0);
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
    prometheus.wait_value(r#"count(efb_link_status{status="up"} == 1)"#, 2.0);
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

#[test]
fn idle_connections_do_not_keep_scrapes_out() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(
        &dir.path().join("datastore"),
        &["--no-gnmi", "--metrics-listen", "127.0.0.1:0"],
    );
    let address = daemon.metrics.clone().unwrap();
    // More than the 16 places: connected and silent, or half a request and silent.
    let idle: Vec<TcpStream> = (0..24)
        .map(|i| {
            let mut stream = TcpStream::connect(&address).unwrap();
            if i % 2 == 1 {
                stream.write_all(b"GET /metrics HTTP/1.1\r\n").unwrap();
            }
            stream
        })
        .collect();
    let mut took = Vec::new();
    for _ in 0..30 {
        let started = Instant::now();
        let (status, body) = http_get(&address, "/metrics").expect("a scrape is answered");
        took.push(started.elapsed());
        assert!(status == 200 && body.contains("efb_build_info"), "{status}");
    }
    took.sort();
    eprintln!(
        "30 scrapes beside 24 idle connections: p50 {:?}, max {:?}",
        took[15], took[29]
    );
    assert!(took[29] < Duration::from_secs(1), "{took:?}");
    drop(idle);
    assert!(daemon.stop(), "efbd did not stop cleanly");
}

/// bcrypt of "secret" at cost 4 (the cheapest: the test does not wait for bcrypt).
const SECRET_HASH: &str = "$2b$04$/l0SF84cDoOLnP7rQH88pOeSWlwaP4TdzULq8j3iB7NXzxBqsYfne";

/// The documented web configuration in `dir` with what it names: a CA (ca.pem), the
/// server's certificate for 127.0.0.1 signed by it and its key, under the example's file
/// names. The example's user, `prometheus`, has the password "secret" here. Returns the
/// file and the CA.
fn example_web_config(dir: &Path) -> (PathBuf, rcgen::Issuer<'static, rcgen::KeyPair>) {
    use rcgen::{CertificateParams, KeyPair};
    let issuer = efb_tests::certs::ca(dir);
    let params = CertificateParams::new(vec!["127.0.0.1".into(), "localhost".into()]).unwrap();
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &issuer).unwrap();
    std::fs::write(dir.join("metrics-cert.pem"), cert.pem()).unwrap();
    let key_file = dir.join("metrics-key.pem");
    std::fs::write(&key_file, key.serialize_pem()).unwrap();
    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let example = std::fs::read_to_string(repo().join("examples/metrics-web-config.yml")).unwrap();
    let file = dir.join("metrics-web-config.yml");
    std::fs::write(&file, &example).unwrap();
    let (code, out) = promtool_check_web_config(&file);
    assert!(code == 0 && out.contains("SUCCESS"), "promtool: {out}");
    let hash = example
        .lines()
        .find_map(|line| line.trim().strip_prefix("prometheus: "))
        .expect("the example has a user prometheus");
    std::fs::write(&file, example.replace(hash, SECRET_HASH)).unwrap();
    (file, issuer)
}

/// `promtool check web-config FILE`: its exit code and what it said.
fn promtool_check_web_config(file: &Path) -> (i32, String) {
    let out = Command::new("promtool")
        .args(["check", "web-config"])
        .arg(file)
        .output()
        .expect("promtool runs: .ci/setup.sh installs the Debian package prometheus");
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), said)
}

/// `curl` of https://`address`/metrics trusting `dir`/ca.pem, with `args` more: its exit
/// code and the answer's head and body.
fn curl(dir: &Path, address: &str, args: &[&str]) -> (i32, String) {
    let out = Command::new("curl")
        .args(["--silent", "--include", "--max-time", "5", "--cacert"])
        .arg(dir.join("ca.pem"))
        .args(args)
        .arg(format!("https://{address}/metrics"))
        .output()
        .expect("curl runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn prometheus_scrapes_over_tls_with_a_password_and_others_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (web, _) = example_web_config(dir.path());
    let daemon = Daemon::start(
        &dir.path().join("datastore"),
        &[
            "--no-gnmi",
            "--metrics-listen",
            "127.0.0.1:0",
            "--web-config-file",
            web.to_str().unwrap(),
        ],
    );
    let address = daemon.metrics.clone().unwrap();
    let ca = dir.path().join("ca.pem");
    let job = |name: &str, password: Option<&str>| {
        let login = password.map_or(String::new(), |password| {
            format!("    basic_auth:\n      username: prometheus\n      password: {password}\n")
        });
        let tls = format!(
            "    scheme: https\n    tls_config:\n      ca_file: {}\n{login}",
            ca.display()
        );
        job_config(name, &address, &tls)
    };
    let prometheus = Prometheus::start_jobs(
        dir.path(),
        &[
            job("efbd", Some("secret")),
            job("wrong", Some("guess")),
            job("anonymous", None),
        ],
    );
    prometheus.wait_value(r#"up{job="efbd"}"#, 1.0);
    prometheus.wait_value(r#"efb_build_info{job="efbd"}"#, 1.0);
    prometheus.wait_value(r#"up{job="wrong"}"#, 0.0);
    prometheus.wait_value(r#"up{job="anonymous"}"#, 0.0);

    let (code, answer) = curl(dir.path(), &address, &[]);
    assert!(
        code == 0
            && answer.starts_with("HTTP/1.1 401")
            && answer.contains("www-authenticate: Basic"),
        "exit {code}: {answer}"
    );
    let (code, answer) = curl(dir.path(), &address, &["--user", "prometheus:guess"]);
    assert!(code == 0 && answer.starts_with("HTTP/1.1 401"), "{answer}");
    let (code, answer) = curl(dir.path(), &address, &["--user", "nobody:secret"]);
    assert!(code == 0 && answer.starts_with("HTTP/1.1 401"), "{answer}");
    let (code, answer) = curl(dir.path(), &address, &["--user", "prometheus:secret"]);
    assert!(
        code == 0 && answer.starts_with("HTTP/1.1 200") && answer.contains("efb_build_info"),
        "{answer}"
    );
    // Plain HTTP to the TLS port gets no metrics.
    assert!(http_get(&address, "/metrics").is_none_or(|(status, _)| status != 200));
    assert!(daemon.stop(), "efbd did not stop cleanly");
}

#[test]
fn efb_target_takes_the_same_web_configuration_with_client_certificates() {
    use rcgen::{CertificateParams, DnType, KeyPair};
    let dir = tempfile::tempdir().unwrap();
    let (web, issuer) = example_web_config(dir.path());
    // The example's commented lines: client certificates signed by the CA, no password.
    let text = std::fs::read_to_string(&web)
        .unwrap()
        .replace("  # client_auth_type:", "  client_auth_type:")
        .replace(
            "  # client_ca_file: metrics-client-ca.pem",
            "  client_ca_file: ca.pem",
        );
    let without_users = text.split("basic_auth_users:").next().unwrap();
    std::fs::write(&web, without_users).unwrap();
    let (code, out) = promtool_check_web_config(&web);
    assert!(code == 0, "promtool: {out}");
    let mut params = CertificateParams::new(Vec::new()).unwrap();
    params
        .distinguished_name
        .push(DnType::CommonName, "scraper");
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &issuer).unwrap();
    std::fs::write(dir.path().join("client.pem"), cert.pem()).unwrap();
    std::fs::write(dir.path().join("client-key.pem"), key.serialize_pem()).unwrap();

    let target = Target::start(&[
        "--metrics-listen",
        "127.0.0.1:0",
        "--web-config-file",
        web.to_str().unwrap(),
    ]);
    let address = target.metrics.clone().unwrap();
    let client = dir.path().join("client.pem");
    let client_key = dir.path().join("client-key.pem");
    let (code, answer) = curl(
        dir.path(),
        &address,
        &[
            "--cert",
            client.to_str().unwrap(),
            "--key",
            client_key.to_str().unwrap(),
        ],
    );
    assert!(
        code == 0 && answer.starts_with("HTTP/1.1 200") && answer.contains("efb_target_port_up"),
        "exit {code}: {answer}"
    );
    let (code, answer) = curl(dir.path(), &address, &[]);
    assert!(
        code != 0 && !answer.contains("HTTP/1.1 200"),
        "exit {code}: {answer}"
    );
}

#[test]
fn a_bad_web_configuration_stops_efbd_naming_the_setting_the_file_and_the_fault() {
    let dir = tempfile::tempdir().unwrap();
    let (web, _) = example_web_config(dir.path());
    let start = |extra: &[&str]| {
        let mut efbd = Command::new(binary("efbd"));
        efbd.arg("--datastore")
            .arg(dir.path().join("datastore"))
            .args(["--no-data-plane", "--no-gnmi"])
            .args(["--metrics-listen", "127.0.0.1:0", "--web-config-file"])
            .arg(&web)
            .args(extra);
        let (code, out, err) = run_cli(efbd, "");
        assert!(out.is_empty(), "efbd said it serves: {out}");
        assert_eq!(code, 1, "{err}");
        err
    };
    let setting = format!("metrics.web_config (--web-config-file): {}", web.display());
    let good = std::fs::read_to_string(&web).unwrap();
    std::fs::write(&web, good.replace("key_file:", "keyfile:")).unwrap();
    let err = start(&[]);
    assert!(
        err.contains(&format!(
            "{setting}: tls_server_config: unknown field `keyfile`"
        )),
        "{err}"
    );
    std::fs::write(&web, good.replace(SECRET_HASH, "secret")).unwrap();
    let err = start(&[]);
    assert!(
        err.contains(&format!(
            "{setting}: basic_auth_users: user \"prometheus\": the password is not a bcrypt hash"
        )),
        "{err}"
    );
    std::fs::write(&web, &good).unwrap();
    std::fs::set_permissions(&web, std::fs::Permissions::from_mode(0o666)).unwrap();
    let err = start(&[]);
    assert!(
        err.contains(&format!("{setting}: writable by group and others")),
        "{err}"
    );
    std::fs::set_permissions(&web, std::fs::Permissions::from_mode(0o644)).unwrap();
    let key = dir.path().join("metrics-key.pem");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o620)).unwrap();
    let err = start(&[]);
    assert!(
        err.contains(&format!(
            "metrics.web_config (--web-config-file): tls_server_config.key_file: {}: writable by group",
            key.display()
        )),
        "{err}"
    );
}
