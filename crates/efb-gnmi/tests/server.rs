//! The gNMI server in process, in front of a fake backend whose snapshots the test makes:
//! how a Set becomes one list of edits, and what a slow subscriber does (and does not do)
//! to the others.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use efb_datastore::Edit;
use efb_gnmi::backend::{Backend, BackendError, Committed, Pending, Snapshot};
use efb_gnmi::{ServerConfig, service};
use efb_northbound::auth::{Cost, Users, hash_password};
use efb_yang::json::{Check, from_json};
use efb_yang::{DataTree, Schema};
use gnmi_proto::gnmi::g_nmi_client::GNmiClient;
use gnmi_proto::gnmi::{
    Path, PathElem, SetRequest, SubscribeRequest, SubscribeResponse, Subscription,
    SubscriptionList, TypedValue, Update, subscribe_request, subscribe_response, typed_value,
    update_result,
};
use tokio::sync::{broadcast, watch};
use tonic::transport::Channel;
use tonic::{Request, Streaming};

struct Fake {
    schema: Arc<Schema>,
    latest: Mutex<Arc<Snapshot>>,
    changes: broadcast::Sender<Arc<Snapshot>>,
    commits: Mutex<Vec<Vec<Edit>>>,
}

impl Fake {
    fn new(capacity: usize) -> Arc<Fake> {
        let schema = Arc::new(Schema::load().unwrap());
        let tree = site(&schema, "start");
        let (changes, _) = broadcast::channel(capacity);
        Arc::new(Fake {
            latest: Mutex::new(Arc::new(snapshot(1, tree))),
            schema,
            changes,
            commits: Mutex::new(Vec::new()),
        })
    }

    /// A new snapshot, as efbd's owner publishes one after a commit. Never blocks.
    fn publish(&self, tree: DataTree) {
        let mut latest = self.latest.lock().unwrap();
        let next = Arc::new(snapshot(latest.commit_id + 1, tree));
        *latest = next.clone();
        let _ = self.changes.send(next);
    }
}

fn snapshot(commit_id: u64, tree: DataTree) -> Snapshot {
    Snapshot {
        commit_id,
        state_version: 0,
        timestamp_ns: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64,
        running: tree.clone(),
        operational: tree,
    }
}

fn site(schema: &Schema, description: &str) -> DataTree {
    site_with(schema, description, None)
}

fn site_with(schema: &Schema, description: &str, second: Option<&str>) -> DataTree {
    let mut p2 = serde_json::json!({"name": "p2", "number": 2, "speed": "100g"});
    if let Some(text) = second {
        p2["description"] = text.into();
    }
    let text = serde_json::json!({"ecofilter-balancer:ports": {"port": [
        {"name": "p1", "number": 1, "speed": "100g", "description": description}, p2]}});
    from_json(schema, &text.to_string(), Check::Types).unwrap()
}

#[tonic::async_trait]
impl Backend for Fake {
    fn schema(&self) -> Arc<Schema> {
        self.schema.clone()
    }

    async fn snapshot(&self) -> Result<Arc<Snapshot>, BackendError> {
        Ok(self.latest.lock().unwrap().clone())
    }

    fn changes(&self) -> broadcast::Receiver<Arc<Snapshot>> {
        self.changes.subscribe()
    }

    async fn commit(
        &self,
        _user: &str,
        edits: Vec<Edit>,
        _confirm: Option<Duration>,
    ) -> Result<Committed, BackendError> {
        let mut tree = self.latest.lock().unwrap().running.clone();
        for edit in &edits {
            match edit {
                Edit::Remove { path } => {
                    tree.remove(path);
                }
                Edit::Replace { path, data } => tree.replace(&self.schema, path, data),
                Edit::Merge { path, data } => tree.merge(&self.schema, &data.subtree(path)),
                other => panic!("gNMI made an edit it should not: {other:?}"),
            }
        }
        self.commits.lock().unwrap().push(edits);
        self.publish(tree);
        Ok(Committed::default())
    }

    async fn confirm(&self) -> Result<Option<u64>, BackendError> {
        Ok(None)
    }

    async fn cancel(&self) -> Result<Option<u64>, BackendError> {
        Ok(None)
    }

    async fn pending(&self) -> Result<Option<Pending>, BackendError> {
        Ok(None)
    }
}

/// Serves the fake on a loopback port; returns its address.
async fn serve(backend: Arc<Fake>, subscriber_queue: usize) -> (String, watch::Sender<bool>) {
    let hash = hash_password("secret", Cost::Test).unwrap();
    let users = Users::parse(&format!(
        "[[user]]\nname = \"ada\"\npassword = \"{hash}\"\nrole = \"admin\"\n"
    ))
    .unwrap();
    let config = ServerConfig {
        users: Arc::new(users),
        subscriber_queue,
        ..ServerConfig::default()
    };
    let (stop, stopped) = watch::channel(false);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let door = efb_gnmi::door(&config).unwrap();
    let svc = service(backend, &config, stopped, &door);
    tokio::spawn(async move {
        tonic::transport::Server::builder()
            .add_service(svc)
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener))
            .await
    });
    (format!("http://{address}"), stop)
}

/// A connection of its own, with HTTP/2's default windows (64 KiB) rather than
/// hyper's large ones, so that a client that stops reading pushes back soon.
async fn connect(address: &str) -> Channel {
    Channel::from_shared(address.to_string())
        .unwrap()
        .initial_stream_window_size(65_535)
        .initial_connection_window_size(65_535)
        .connect()
        .await
        .unwrap()
}

fn authed<T>(message: T) -> Request<T> {
    let mut request = Request::new(message);
    request
        .metadata_mut()
        .insert("username", "ada".parse().unwrap());
    request
        .metadata_mut()
        .insert("password", "secret".parse().unwrap());
    request
}

fn path(elems: &[(&str, Option<&str>)]) -> Path {
    Path {
        elem: elems
            .iter()
            .map(|(name, key)| PathElem {
                name: name.to_string(),
                key: key
                    .iter()
                    .map(|v| ("name".to_string(), v.to_string()))
                    .collect(),
            })
            .collect(),
        ..Path::default()
    }
}

fn json(text: &str) -> Option<TypedValue> {
    Some(TypedValue {
        value: Some(typed_value::Value::JsonIetfVal(text.as_bytes().to_vec())),
    })
}

#[tokio::test]
async fn a_set_is_one_commit_deletes_then_replaces_then_updates() {
    let fake = Fake::new(16);
    let (address, _stop) = serve(fake.clone(), 64).await;
    let mut client = GNmiClient::new(connect(&address).await);
    let p1_description = path(&[("ports", None), ("port", Some("p1")), ("description", None)]);
    let request = SetRequest {
        prefix: None,
        update: vec![Update {
            path: Some(p1_description.clone()),
            val: json(r#""updated""#),
            ..Update::default()
        }],
        replace: vec![Update {
            path: Some(path(&[("ports", None), ("port", Some("p2"))])),
            val: json(r#"{"number": 2, "speed": "40g"}"#),
            ..Update::default()
        }],
        delete: vec![p1_description.clone()],
        ..SetRequest::default()
    };
    let response = client.set(authed(request)).await.unwrap().into_inner();
    let ops: Vec<i32> = response.response.iter().map(|r| r.op).collect();
    use update_result::Operation;
    assert_eq!(
        ops,
        [
            Operation::Delete as i32,
            Operation::Replace as i32,
            Operation::Update as i32
        ]
    );
    let commits = fake.commits.lock().unwrap().clone();
    assert_eq!(commits.len(), 1, "one transaction");
    let kinds: Vec<&str> = commits[0]
        .iter()
        .map(|e| match e {
            Edit::Remove { .. } => "remove",
            Edit::Replace { .. } => "replace",
            Edit::Merge { .. } => "merge",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["remove", "replace", "merge"]);
    // The update came last, so the description is there after the delete.
    let latest = fake.latest.lock().unwrap().clone();
    let text = efb_yang::json::to_json(&fake.schema, &latest.running, Default::default());
    assert!(text.contains(r#""description":"updated""#), "{text}");
    assert!(text.contains(r#""speed":"40g""#), "{text}");
}

async fn on_change(client: &mut GNmiClient<Channel>) -> Streaming<SubscribeResponse> {
    let list = SubscriptionList {
        subscription: vec![Subscription {
            path: Some(path(&[("ports", None)])),
            ..Subscription::default()
        }],
        ..SubscriptionList::default()
    };
    let first = SubscribeRequest {
        request: Some(subscribe_request::Request::Subscribe(list)),
        ..SubscribeRequest::default()
    };
    // A client that keeps its side open.
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    tx.send(first).await.unwrap();
    tokio::spawn(async move {
        tx.closed().await;
    });
    let mut stream = client
        .subscribe(authed(tokio_stream::wrappers::ReceiverStream::new(rx)))
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

fn description_in(message: &SubscribeResponse) -> Option<String> {
    let Some(subscribe_response::Response::Update(n)) = &message.response else {
        return None;
    };
    n.update.iter().find_map(|u| match &u.val.as_ref()?.value {
        Some(typed_value::Value::JsonVal(b)) => serde_json::from_slice(b).ok(),
        _ => None,
    })
}

/// Changes published: enough to fill what HTTP/2 buffers for the slow client on both
/// ends (the server's send buffer holds 400 KiB per stream).
const COUNT: usize = 3000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_subscriber_is_dropped_with_a_clear_error_and_holds_up_nobody() {
    let fake = Fake::new(256);
    let (address, _stop) = serve(fake.clone(), 4).await;
    // Connections of their own: on a shared one, HTTP/2 flow control would make the
    // fast client wait for the slow one's unread data, on the client side.
    let mut slow = on_change(&mut GNmiClient::new(connect(&address).await)).await;
    let mut fast = on_change(&mut GNmiClient::new(connect(&address).await)).await;
    let reader = tokio::spawn(async move {
        let mut last = None;
        while let Ok(Some(m)) = fast.message().await {
            if let Some(d) = description_in(&m) {
                let done = d.ends_with(" 2999");
                last = Some(d);
                if done {
                    break;
                }
            }
        }
        last
    });
    // Big values fill the slow client's HTTP/2 window after a few dozen changes.
    let filler = "x".repeat(230);
    let started = std::time::Instant::now();
    for i in 0..COUNT {
        let text = format!("{filler} {i}");
        fake.publish(site_with(&fake.schema, &text, Some(&text)));
        if i % 2 == 1 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "publishing never waits for subscribers"
    );
    let last = tokio::time::timeout(Duration::from_secs(20), reader)
        .await
        .expect("the fast subscriber keeps up")
        .unwrap();
    assert!(
        last.is_some_and(|d| d.ends_with(" 2999")),
        "the fast subscriber saw every change"
    );
    // The slow one finds the updates that were queued, then the reason it was dropped.
    let status = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match slow.message().await {
                Ok(Some(_)) => continue,
                Ok(None) => panic!("the slow subscriber's stream ended without a status"),
                Err(status) => break status,
            }
        }
    })
    .await
    .expect("the slow subscriber was dropped");
    assert_eq!(status.code(), tonic::Code::ResourceExhausted, "{status:?}");
    assert!(status.message().contains("fell"), "{}", status.message());
}
