//! efb-probe: raw management API calls, for the tests that play a hostile or careless
//! local account (run as that account with runuser). Each prints one line a result
//! ("ok ..." or "CODE: message") and, where it holds something open, waits for its standard
//! input to close before letting go.
//!
//! ```text
//! efb-probe SOCKET sessions N          open N sessions and hold them
//! efb-probe SOCKET compare|candidate|close|commit|logout SESSION
//! efb-probe SOCKET prefaces N          N connections that send only HTTP/2's preface
//! efb-probe SOCKET load MIB            one Load of MIB MiB, naming no session
//! efb-probe SOCKET watch               watch efbd's events until the stream ends
//! efb-probe SOCKET flood N             N Hello calls as fast as they go, counted by result
//! efb-probe SOCKET bypass-flood N      N calls of set-bypass-ecofilter-unit with a mode
//!                                      that does not exist, counted by result
//! ```

use std::io::Read;
use std::path::Path;
use std::process::ExitCode;

use efb_mgmt_proto::v1::management_client::ManagementClient;
use efb_mgmt_proto::v1::{
    CallRequest, CommitRequest, CompareRequest, GetRequest, LoadRequest, OpenSessionRequest,
    RecentEventsRequest, SessionRef,
};
use tokio::io::AsyncWriteExt;
use tonic::transport::Channel;

type Client = ManagementClient<Channel>;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Ok(runtime) = tokio::runtime::Runtime::new() else {
        println!("error: no runtime");
        return ExitCode::FAILURE;
    };
    match runtime.block_on(run(&args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            println!("error: {message}");
            ExitCode::from(2)
        }
    }
}

async fn run(args: &[String]) -> Result<(), String> {
    let [socket, command, rest @ ..] = args else {
        return Err("usage: efb-probe SOCKET COMMAND [ARG]".into());
    };
    let number = || -> Result<u64, String> {
        rest.first()
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| format!("{command} needs a number"))
    };
    if command == "prefaces" {
        return prefaces(socket, number()?).await;
    }
    let channel = efb_cli::client::unix_channel(Path::new(socket))
        .await
        .map_err(|e| format!("cannot connect: {e}"))?;
    let mut client = ManagementClient::new(channel)
        .max_decoding_message_size(1 << 30)
        .max_encoding_message_size(1 << 30);
    match command.as_str() {
        "sessions" => sessions(&mut client, number()?).await,
        "load" => load(&mut client, number()?).await,
        "watch" => watch(&mut client).await,
        "flood" => flood(&mut client, number()?).await,
        "bypass-flood" => bypass_flood(&client, number()?).await,
        other => call(&mut client, other, number()?).await,
    }
}

fn say<T>(result: Result<tonic::Response<T>, tonic::Status>, ok: impl FnOnce(T) -> String) {
    match result {
        Ok(reply) => println!("ok {}", ok(reply.into_inner())),
        Err(status) => println!("{:?}: {}", status.code(), status.message()),
    }
}

/// Waits until the test closes our standard input.
fn hold() {
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
}

async fn sessions(client: &mut Client, count: u64) -> Result<(), String> {
    let mut held = Vec::new();
    let mut refused = None;
    for _ in 0..count {
        let request = OpenSessionRequest::default();
        match client.open_session(request).await {
            Ok(reply) => {
                let mut notices = reply.into_inner();
                let first = notices.message().await.map_err(|e| e.to_string())?;
                held.push((first.map_or(0, |n| n.session), notices));
            }
            Err(status) => {
                refused = Some(format!("{:?}: {}", status.code(), status.message()));
                break;
            }
        }
    }
    let ids: Vec<String> = held.iter().map(|(id, _)| id.to_string()).collect();
    println!("opened {} [{}]", held.len(), ids.join(" "));
    if let Some(refused) = refused {
        println!("{refused}");
    }
    tokio::task::block_in_place(hold);
    Ok(())
}

async fn call(client: &mut Client, what: &str, session: u64) -> Result<(), String> {
    let reference = SessionRef { session };
    match what {
        "compare" => say(
            client
                .compare(CompareRequest {
                    session,
                    ..CompareRequest::default()
                })
                .await,
            |l| l.lines.join("; "),
        ),
        "candidate" => say(
            client
                .get(GetRequest {
                    session,
                    datastore: 1,
                    ..GetRequest::default()
                })
                .await,
            |r| format!("{} bytes", r.text.len()),
        ),
        "close" => say(client.close_session(reference).await, |_| String::new()),
        "logout" => say(client.logout(reference).await, |_| String::new()),
        "commit" => say(
            client
                .commit(CommitRequest {
                    session,
                    ..CommitRequest::default()
                })
                .await,
            |r| format!("commit {}", r.commit_id),
        ),
        other => return Err(format!("unknown command {other}")),
    }
    Ok(())
}

async fn load(client: &mut Client, mib: u64) -> Result<(), String> {
    let content = " ".repeat((mib * 1024 * 1024) as usize);
    let request = LoadRequest {
        content,
        ..LoadRequest::default()
    };
    say(client.load(request).await, |_| String::new());
    Ok(())
}

async fn watch(client: &mut Client) -> Result<(), String> {
    let mut events = match client.watch_events(RecentEventsRequest::default()).await {
        Ok(reply) => reply.into_inner(),
        Err(status) => {
            println!("{:?}: {}", status.code(), status.message());
            return Ok(());
        }
    };
    println!("watching");
    loop {
        match events.message().await {
            Ok(Some(event)) => println!("event {}", event.kind),
            Ok(None) => {
                println!("ended");
                return Ok(());
            }
            Err(status) => {
                println!("{:?}: {}", status.code(), status.message());
                return Ok(());
            }
        }
    }
}

async fn flood(client: &mut Client, count: u64) -> Result<(), String> {
    let (mut accepted, mut refused) = (0, 0);
    for _ in 0..count {
        match client.hello(efb_mgmt_proto::v1::HelloRequest {}).await {
            Ok(_) => accepted += 1,
            Err(_) => refused += 1,
        }
    }
    println!("{accepted} accepted, {refused} refused");
    Ok(())
}

/// Calls in flight at once: the flood is as fast as efbd answers, not as one round trip.
const IN_FLIGHT: u64 = 4;

/// `count` calls of set-bypass with bad input (an operator's refusals as fast as they go),
/// a few at once on one connection; one line: accepted, refused and the codes.
async fn bypass_flood(client: &Client, count: u64) -> Result<(), String> {
    let mut workers = tokio::task::JoinSet::new();
    for worker in 0..IN_FLIGHT {
        let mut client = client.clone();
        let calls = count / IN_FLIGHT + u64::from(worker < count % IN_FLIGHT);
        workers.spawn(async move {
            let mut results: Vec<Option<tonic::Code>> = Vec::new();
            for _ in 0..calls {
                let request = CallRequest {
                    rpc: "set-bypass-ecofilter-unit".into(),
                    input_json: r#"{"ecofilter-unit":"ef1","mode":"sideways"}"#.into(),
                };
                results.push(client.call(request).await.err().map(|s| s.code()));
            }
            results
        });
    }
    let mut codes = std::collections::BTreeMap::new();
    let (mut accepted, mut refused) = (0, 0);
    while let Some(results) = workers.join_next().await {
        for result in results.map_err(|e| e.to_string())? {
            match result {
                None => accepted += 1,
                Some(code) => {
                    refused += 1;
                    *codes.entry(format!("{code:?}")).or_insert(0) += 1;
                }
            }
        }
    }
    println!("{accepted} accepted, {refused} refused {codes:?}");
    Ok(())
}

/// Connections that send HTTP/2's preface and nothing more; how many efbd closed by the
/// time standard input closes.
async fn prefaces(socket: &str, count: u64) -> Result<(), String> {
    let mut held = Vec::new();
    for _ in 0..count {
        let Ok(mut stream) = tokio::net::UnixStream::connect(socket).await else {
            break;
        };
        let _ = stream.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").await;
        held.push(stream);
    }
    println!("connected {}", held.len());
    tokio::task::block_in_place(hold);
    Ok(())
}
