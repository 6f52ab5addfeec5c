//! The management API from the tests, as programs (and the shell) use it.

use efb_mgmt_proto::v1::management_client::ManagementClient;
use efb_mgmt_proto::v1::{CommitReply, CommitRequest, EditLinesRequest, OpenSessionRequest};
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

/// A new session of `user`.
pub fn open(
    rt: &tokio::runtime::Runtime,
    client: &mut ManagementClient<Channel>,
    user: &str,
) -> u64 {
    rt.block_on(client.open_session(OpenSessionRequest { user: user.into() }))
        .expect("a session opens")
        .into_inner()
        .session
}

/// `set` lines committed in a session of their own: the commit's reply, or its status.
pub fn commit_lines(
    rt: &tokio::runtime::Runtime,
    client: &mut ManagementClient<Channel>,
    lines: &str,
) -> Result<CommitReply, tonic::Status> {
    let session = open(rt, client, "tester");
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
