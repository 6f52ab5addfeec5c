//! The shell's side of the management API: a blocking wrapper, since the shell itself is a
//! simple read-eval-print loop.

use std::time::Duration;

use efb_mgmt_proto::v1::management_client::ManagementClient;
use efb_mgmt_proto::v1::*;
use tonic::transport::Channel;

/// Message size limit: a 100 000-flow configuration in JSON is about 20 MiB.
const MAX_MESSAGE: usize = 512 * 1024 * 1024;

/// An error from the daemon (its message is meant for people) or from the connection.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("{0}")]
    Daemon(String),
    #[error("efbd at {address}: {message}")]
    Connection { address: String, message: String },
}

impl From<tonic::Status> for ClientError {
    fn from(status: tonic::Status) -> ClientError {
        match status.code() {
            tonic::Code::Unavailable | tonic::Code::Unknown
                if status.message().contains("transport") =>
            {
                ClientError::Daemon(format!("lost the connection to efbd: {}", status.message()))
            }
            _ => ClientError::Daemon(status.message().to_string()),
        }
    }
}

pub type Result<T> = std::result::Result<T, ClientError>;

/// efbd does not have the session a request named: closed for being idle, or efbd was
/// restarted since it was opened.
fn session_lost(status: &tonic::Status) -> bool {
    status.code() == tonic::Code::NotFound
        && (status.message().starts_with("session expired")
            || status.message().starts_with("no session "))
}

/// A connection to efbd with an open session.
pub struct Client {
    runtime: tokio::runtime::Runtime,
    inner: ManagementClient<Channel>,
    pub session: u64,
    pub hello: HelloReply,
    user: String,
    /// The session was lost (expired, or efbd restarted) and a new one opened: what to
    /// tell the user, once, if the request that found out was not theirs (a Tab).
    notice: Option<String>,
}

impl Client {
    pub fn connect(address: &str, user: &str) -> Result<Client> {
        let fail = |message: String| ClientError::Connection {
            address: address.to_string(),
            message,
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| fail(e.to_string()))?;
        let uri = if address.contains("://") {
            address.to_string()
        } else {
            format!("http://{address}")
        };
        let endpoint = Channel::from_shared(uri)
            .map_err(|e| fail(e.to_string()))?
            .connect_timeout(Duration::from_secs(5));
        let channel = runtime
            .block_on(endpoint.connect())
            .map_err(|e| fail(format!("cannot connect ({e}); is efbd running?")))?;
        let mut inner = ManagementClient::new(channel)
            .max_decoding_message_size(MAX_MESSAGE)
            .max_encoding_message_size(MAX_MESSAGE);
        let hello = runtime.block_on(inner.hello(HelloRequest {}))?.into_inner();
        let session = runtime
            .block_on(inner.open_session(OpenSessionRequest {
                user: user.to_string(),
            }))?
            .into_inner()
            .session;
        Ok(Client {
            runtime,
            inner,
            session,
            hello,
            user: user.to_string(),
            notice: None,
        })
    }

    fn call<T, F, Fut>(&mut self, f: F) -> Result<T>
    where
        F: FnOnce(ManagementClient<Channel>) -> Fut,
        Fut: std::future::Future<Output = std::result::Result<tonic::Response<T>, tonic::Status>>,
    {
        let client = self.inner.clone();
        match self.runtime.block_on(f(client)) {
            Ok(response) => Ok(response.into_inner()),
            Err(status) if session_lost(&status) => Err(self.reopen(&status)),
            Err(status) => Err(status.into()),
        }
    }

    /// Opens a new session after efbd closed ours (idle too long) or forgot it (restarted):
    /// the uncommitted changes are gone, and the user is told so rather than finding an
    /// empty candidate later. The command that found out is not run again: it was meant
    /// for the lost candidate.
    fn reopen(&mut self, lost: &tonic::Status) -> ClientError {
        let why = if lost.message().starts_with("session expired") {
            lost.message().to_string()
        } else {
            format!(
                "efbd no longer knows this shell's session ({}; was it restarted?): uncommitted changes are lost",
                lost.message()
            )
        };
        let request = OpenSessionRequest {
            user: self.user.clone(),
        };
        let mut client = self.inner.clone();
        let message = match self.runtime.block_on(client.open_session(request)) {
            Ok(reply) => {
                self.session = reply.into_inner().session;
                format!(
                    "{why}\na new session is open: the candidate is the running configuration; the command was not run"
                )
            }
            Err(e) => format!("{why}\nno new session could be opened: {}", e.message()),
        };
        self.notice = Some(message.clone());
        ClientError::Daemon(message)
    }

    /// What the user has not been told yet about a lost session.
    pub fn take_notice(&mut self) -> Option<String> {
        self.notice.take()
    }

    pub fn close(&mut self) {
        let session = self.session;
        let _ =
            self.call(move |mut c| async move { c.close_session(SessionRef { session }).await });
    }

    pub fn edit_lines(&mut self, lines: &str) -> Result<EditReply> {
        let request = EditLinesRequest {
            session: self.session,
            lines: lines.to_string(),
        };
        self.call(move |mut c| async move { c.edit_lines(request).await })
    }

    pub fn load(&mut self, mode: LoadMode, format: Format, content: String) -> Result<EditReply> {
        let request = LoadRequest {
            session: self.session,
            mode: mode as i32,
            format: format as i32,
            content,
        };
        self.call(move |mut c| async move { c.load(request).await })
    }

    pub fn discard(&mut self) -> Result<()> {
        let session = self.session;
        self.call(move |mut c| async move { c.discard(SessionRef { session }).await })
            .map(|_| ())
    }

    pub fn rollback(&mut self, index: u32) -> Result<()> {
        let request = RollbackRequest {
            session: self.session,
            index,
        };
        self.call(move |mut c| async move { c.rollback(request).await })
            .map(|_| ())
    }

    pub fn compare(&mut self, format: Format) -> Result<Vec<String>> {
        let request = CompareRequest {
            session: self.session,
            format: format as i32,
        };
        self.call(move |mut c| async move { c.compare(request).await })
            .map(|l| l.lines)
    }

    /// Commits this session's candidate (`request.session` is set here).
    pub fn commit(&mut self, request: CommitRequest) -> Result<CommitReply> {
        let request = CommitRequest {
            session: self.session,
            ..request
        };
        self.call(move |mut c| async move { c.commit(request).await })
    }

    pub fn save(&mut self) -> Result<()> {
        self.call(|mut c| async move { c.save(Empty {}).await })
            .map(|_| ())
    }

    pub fn history(&mut self) -> Result<Vec<CommitInfo>> {
        self.call(|mut c| async move { c.history(Empty {}).await })
            .map(|h| h.commits)
    }

    pub fn status(&mut self) -> Result<StatusReply> {
        self.call(|mut c| async move { c.status(Empty {}).await })
    }

    pub fn get(
        &mut self,
        datastore: Datastore,
        path: &str,
        format: Format,
        with_defaults: bool,
    ) -> Result<String> {
        let request = GetRequest {
            session: self.session,
            datastore: datastore as i32,
            path: path.to_string(),
            format: format as i32,
            with_defaults,
        };
        self.call(move |mut c| async move { c.get(request).await })
            .map(|r| r.text)
    }

    pub fn list_keys(
        &mut self,
        datastore: Datastore,
        list_path: &str,
        prefix: &str,
        limit: u32,
    ) -> Result<ListKeysReply> {
        let request = ListKeysRequest {
            session: self.session,
            datastore: datastore as i32,
            list_path: list_path.to_string(),
            prefix: prefix.to_string(),
            limit,
        };
        self.call(move |mut c| async move { c.list_keys(request).await })
    }

    pub fn call_rpc(&mut self, rpc: &str, input: &serde_json::Value) -> Result<serde_json::Value> {
        let request = CallRequest {
            rpc: rpc.to_string(),
            input_json: input.to_string(),
        };
        let reply = self.call(move |mut c| async move { c.call(request).await })?;
        serde_json::from_str(&reply.output_json)
            .map_err(|e| ClientError::Daemon(format!("efbd answered with bad JSON: {e}")))
    }
}
