//! The management API from the tests, as programs (and the shell) use it.

use efb_mgmt_proto::v1::management_client::ManagementClient;
use efb_mgmt_proto::v1::{
    CommitReply, CommitRequest, EditLinesRequest, OpenSessionRequest, SessionNotice,
};
use tonic::Streaming;
use tonic::transport::Channel;

use crate::Daemon;

/// A management API client of `daemon`, on its Unix socket.
pub fn connect(rt: &tokio::runtime::Runtime, daemon: &Daemon) -> ManagementClient<Channel> {
    let channel = rt
        .block_on(efb_cli::client::unix_channel(std::path::Path::new(
            &daemon.address,
        )))
        .expect("efbd's management API answers");
    ManagementClient::new(channel)
}

/// A session and the stream that holds it: efbd closes the session when this is dropped.
pub struct Held {
    pub id: u64,
    pub notices: Streaming<SessionNotice>,
}

/// A new session of `user`, held until the returned value is dropped.
pub fn open(
    rt: &tokio::runtime::Runtime,
    client: &mut ManagementClient<Channel>,
    user: &str,
) -> Held {
    try_open(rt, client, user).expect("a session opens")
}

/// [`open`], or why efbd refused.
pub fn try_open(
    rt: &tokio::runtime::Runtime,
    client: &mut ManagementClient<Channel>,
    user: &str,
) -> Result<Held, tonic::Status> {
    rt.block_on(async {
        let request = OpenSessionRequest { user: user.into() };
        let mut notices = client.open_session(request).await?.into_inner();
        let first = notices
            .message()
            .await?
            .expect("efbd names the session first");
        Ok(Held {
            id: first.session,
            notices,
        })
    })
}

/// `set` lines committed in a session of their own: the commit's reply, or its status.
pub fn commit_lines(
    rt: &tokio::runtime::Runtime,
    client: &mut ManagementClient<Channel>,
    lines: &str,
) -> Result<CommitReply, tonic::Status> {
    let held = open(rt, client, "tester");
    let session = held.id;
    rt.block_on(client.edit_lines(EditLinesRequest {
        session,
        lines: lines.into(),
    }))?;
    rt.block_on(client.commit(CommitRequest {
        session,
        ..CommitRequest::default()
    }))
    .map(tonic::Response::into_inner)
}
