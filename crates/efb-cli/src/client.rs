//! The shell's side of the management API: a blocking wrapper, since the shell itself is a
//! simple read-eval-print loop. efbd listens on a Unix socket (the kernel tells it who
//! connects), and optionally on TCP with TLS, where the shell logs in as a user of the
//! users file (a password, or a client certificate).

use std::path::{Path, PathBuf};
use std::time::Duration;

use efb_mgmt_proto::v1::management_client::ManagementClient;
use efb_mgmt_proto::v1::*;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::Interceptor;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};

/// Where efbd's management API listens when `--connect` is not given: the socket of an
/// efbd started with its defaults in the same directory (as `./run.sh` does).
pub const DEFAULT_ADDRESS: &str = "datastore/efbd.sock";

/// The management API, each call carrying the credentials (over TCP).
pub type Api = ManagementClient<InterceptedService<Channel, Credentials>>;

/// Where efbd listens, as `--connect` names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Address {
    /// `unix:PATH`, or a path.
    Unix(PathBuf),
    /// `HOST:PORT` or `https://HOST:PORT`: TCP with TLS.
    Tcp { host: String, port: String },
}

impl Address {
    pub fn parse(text: &str) -> Address {
        if let Some(path) = text.strip_prefix("unix:") {
            return Address::Unix(PathBuf::from(path));
        }
        let tcp = text.strip_prefix("https://").unwrap_or(text);
        match tcp.rsplit_once(':') {
            Some((host, port)) if !text.contains('/') || text.starts_with("https://") => {
                Address::Tcp {
                    host: host.trim_matches(['[', ']']).to_string(),
                    port: port.to_string(),
                }
            }
            _ => Address::Unix(PathBuf::from(text)),
        }
    }
}

/// How the shell logs in over TCP; unused on the Unix socket.
#[derive(Clone, Debug, Default)]
pub struct Login {
    /// The CA (or the server's own certificate) that signed efbd's certificate.
    pub ca: Option<PathBuf>,
    /// A client certificate and its key (mTLS): its subject CN is the user.
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    pub password: Option<String>,
}

/// The `username` and `password` every call carries over TCP.
#[derive(Clone, Debug, Default)]
pub struct Credentials {
    username: Option<MetadataValue<Ascii>>,
    password: Option<MetadataValue<Ascii>>,
}

impl Interceptor for Credentials {
    fn call(
        &mut self,
        mut request: tonic::Request<()>,
    ) -> std::result::Result<tonic::Request<()>, tonic::Status> {
        let metadata = request.metadata_mut();
        if let Some(user) = &self.username {
            metadata.insert("username", user.clone());
        }
        if let Some(password) = &self.password {
            metadata.insert("password", password.clone());
        }
        Ok(request)
    }
}

/// A channel to efbd's Unix socket at `path`.
pub async fn unix_channel(path: &Path) -> std::result::Result<Channel, tonic::transport::Error> {
    let path = path.to_path_buf();
    // The URI is not used: every connection goes to the socket.
    Endpoint::from_static("http://efbd.sock")
        .connect_timeout(Duration::from_secs(5))
        .connect_with_connector(tower::service_fn(move |_: tonic::transport::Uri| {
            let path = path.clone();
            async move {
                let stream = tokio::net::UnixStream::connect(path).await?;
                Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(stream))
            }
        }))
        .await
}

/// Why a connection to efbd's TCP listener could not be set up, in terms of the options
/// that decide it.
#[derive(Debug, thiserror::Error)]
pub enum TcpSetupError {
    #[error(
        "the management API over TCP uses TLS: give the CA (or efbd's certificate) with --ca FILE"
    )]
    NoCa,
    #[error("cannot read {path}: {error}")]
    Unreadable { path: String, error: std::io::Error },
    #[error("--cert and --key go together")]
    CertWithoutKey,
    #[error("{what}: only visible ASCII characters can be sent")]
    NotAscii { what: &'static str },
    /// The address as a URI (its causes in one line).
    #[error("{0}")]
    Address(String),
    #[error("TLS settings (--ca, --cert, --key): {0}")]
    Tls(String),
    #[error("cannot connect ({0}); is efbd listening there (management.listen)?")]
    Unreachable(String),
}

/// A TLS channel to efbd's TCP listener.
async fn tls_channel(
    host: &str,
    port: &str,
    login: &Login,
) -> std::result::Result<Channel, TcpSetupError> {
    let read = |path: &PathBuf| {
        std::fs::read_to_string(path).map_err(|error| TcpSetupError::Unreadable {
            path: path.display().to_string(),
            error,
        })
    };
    let ca = login.ca.as_ref().ok_or(TcpSetupError::NoCa)?;
    let mut tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(read(ca)?))
        .domain_name(host);
    match (&login.cert, &login.key) {
        (Some(cert), Some(key)) => tls = tls.identity(Identity::from_pem(read(cert)?, read(key)?)),
        (None, None) => {}
        _ => return Err(TcpSetupError::CertWithoutKey),
    }
    let host = if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_string()
    };
    Endpoint::from_shared(format!("https://{host}:{port}"))
        .map_err(|e| TcpSetupError::Address(causes(&e)))?
        .connect_timeout(Duration::from_secs(5))
        .tls_config(tls)
        .map_err(|e| TcpSetupError::Tls(causes(&e)))?
        .connect()
        .await
        .map_err(|e| TcpSetupError::Unreachable(causes(&e)))
}

/// Why the socket cannot be used, in terms of the settings that decide it.
fn unix_failure(error: &std::io::Error) -> String {
    match error.kind() {
        std::io::ErrorKind::NotFound => "no socket there: is efbd running? (its socket is \
            management.socket, DIR/efbd.sock by default; give it with --connect PATH or \
            $EFB_CONNECT)"
            .to_string(),
        std::io::ErrorKind::PermissionDenied => format!(
            "this account may not connect ({error}): efbd's management.socket_mode and \
             management.socket_group say who may, and the socket's directories must let \
             the account through"
        ),
        _ => format!("cannot connect: {error}"),
    }
}

/// A failed connection to the socket: said as [`unix_failure`] when the system said why.
fn unix_connect_failure(error: &tonic::transport::Error) -> String {
    let mut next: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(error);
    while let Some(cause) = next {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            return unix_failure(io);
        }
        next = cause.source();
    }
    format!("cannot connect: {}", causes(error))
}

/// An error and its causes in one line ("transport error: Permission denied (os error 13)").
fn causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut next = error.source();
    while let Some(cause) = next {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        next = cause.source();
    }
    text
}

fn metadata(
    what: &'static str,
    text: &str,
) -> std::result::Result<MetadataValue<Ascii>, TcpSetupError> {
    text.parse().map_err(|_| TcpSetupError::NotAscii { what })
}

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
                let mut text = status.message().to_string();
                let mut next = std::error::Error::source(&status);
                while let Some(cause) = next {
                    text = format!("{text}: {cause}");
                    next = cause.source();
                }
                ClientError::Daemon(format!("lost the connection to efbd: {text}"))
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

/// How long a watch of efbd's events waits before it starts again (efbd restarting).
const WATCH_RETRY: Duration = Duration::from_secs(1);

/// A connection to efbd with an open session.
pub struct Client {
    runtime: tokio::runtime::Runtime,
    inner: Api,
    pub session: u64,
    pub hello: HelloReply,
    /// The name asked for (`--user`; empty: the caller's own).
    user: String,
    /// The session was lost (expired, or efbd restarted) and a new one opened: what to
    /// tell the user, once, if the request that found out was not theirs (a Tab).
    notice: Option<String>,
    /// Why an admin logged this client's session out, once efbd says so.
    logout: tokio::sync::watch::Receiver<Option<String>>,
    logout_sender: tokio::sync::watch::Sender<Option<String>>,
}

/// Opens a session held by a stream this process keeps: efbd closes the session as soon
/// as the stream goes (this process ends, however it ends). A logout efbd announces on the
/// stream is handed to `logout`.
async fn open_held(
    client: &mut Api,
    user: &str,
    logout: tokio::sync::watch::Sender<Option<String>>,
) -> std::result::Result<u64, tonic::Status> {
    let request = OpenSessionRequest {
        user: user.to_string(),
    };
    let mut notices = client.open_session(request).await?.into_inner();
    let first = notices.message().await?.ok_or_else(|| {
        tonic::Status::unavailable("efbd ended the session's stream before naming the session")
    })?;
    let session = first.session;
    tokio::spawn(async move {
        while let Ok(Some(notice)) = notices.message().await {
            if notice.logout && notice.session == session {
                let _ = logout.send(Some(notice.closed));
            }
        }
    });
    Ok(session)
}

impl Client {
    /// Connects to efbd's Unix socket (or TCP without a login: it will be refused) and
    /// opens a session recorded as `user` (empty: the caller's own name).
    pub fn connect(address: &str, user: &str) -> Result<Client> {
        Client::connect_with(address, user, &Login::default())
    }

    /// Connects to `address`: over the Unix socket, `user` (when not empty and not the
    /// caller's own) is recorded as "ACCOUNT as USER", which only an admin may; over TCP,
    /// `user` logs in with `login`'s password or client certificate.
    pub fn connect_with(address: &str, user: &str, login: &Login) -> Result<Client> {
        let fail = |message: String| ClientError::Connection {
            address: address.to_string(),
            message,
        };
        let setup = |e: TcpSetupError| fail(e.to_string());
        // One worker thread: the connection (and a watch of efbd's events) keeps going while
        // the shell waits at its prompt.
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(|e| fail(e.to_string()))?;
        let mut credentials = Credentials::default();
        let (channel, session_user) = match Address::parse(address) {
            Address::Unix(path) => {
                if let Err(e) = std::fs::metadata(&path) {
                    return Err(fail(unix_failure(&e)));
                }
                let channel = runtime
                    .block_on(unix_channel(&path))
                    .map_err(|e| fail(unix_connect_failure(&e)))?;
                (channel, user.to_string())
            }
            Address::Tcp { host, port } => {
                if !user.is_empty() {
                    credentials.username = Some(metadata("--user", user).map_err(setup)?);
                }
                if let Some(password) = &login.password {
                    credentials.password = Some(metadata("the password", password).map_err(setup)?);
                }
                let channel = runtime
                    .block_on(tls_channel(&host, &port, login))
                    .map_err(setup)?;
                // The user logged in is the one recorded.
                (channel, String::new())
            }
        };
        let mut inner = ManagementClient::with_interceptor(channel, credentials)
            .max_decoding_message_size(MAX_MESSAGE)
            .max_encoding_message_size(MAX_MESSAGE);
        let hello = runtime.block_on(inner.hello(HelloRequest {}))?.into_inner();
        let user = session_user;
        let (logout_sender, logout) = tokio::sync::watch::channel(None);
        let session = runtime.block_on(open_held(&mut inner, &user, logout_sender.clone()))?;
        Ok(Client {
            runtime,
            inner,
            session,
            hello,
            user,
            notice: None,
            logout,
            logout_sender,
        })
    }

    fn call<T, F, Fut>(&mut self, f: F) -> Result<T>
    where
        F: FnOnce(Api) -> Fut,
        Fut: std::future::Future<Output = std::result::Result<tonic::Response<T>, tonic::Status>>,
    {
        if let Some(why) = self.logged_out() {
            return Err(ClientError::Daemon(format!(
                "efbd closed this shell's session: {why}"
            )));
        }
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
        let mut client = self.inner.clone();
        let held = open_held(&mut client, &self.user, self.logout_sender.clone());
        let message = match self.runtime.block_on(held) {
            Ok(session) => {
                self.session = session;
                format!(
                    "{why}\na new session is open: the candidate is the running configuration; the command was not run"
                )
            }
            Err(e) => format!("{why}\nno new session could be opened: {}", e.message()),
        };
        self.notice = Some(message.clone());
        ClientError::Daemon(message)
    }

    /// Why an admin logged this client's session out, if one did.
    pub fn logged_out(&self) -> Option<String> {
        self.logout.borrow().clone()
    }

    /// Calls `tell` once, in the background, when an admin logs this client's session out.
    pub fn when_logged_out(&self, tell: impl FnOnce(String) + Send + 'static) {
        let mut logout = self.logout.clone();
        self.runtime.spawn(async move {
            if let Ok(why) = logout.wait_for(Option::is_some).await
                && let Some(why) = why.clone()
            {
                tell(why);
            }
        });
    }

    /// What the user has not been told yet about a lost session.
    pub fn take_notice(&mut self) -> Option<String> {
        self.notice.take()
    }

    pub fn close(&mut self) {
        if self.logged_out().is_some() {
            return;
        }
        let session = self.session;
        let _ =
            self.call(move |mut c| async move { c.close_session(SessionRef { session }).await });
    }

    /// Closes anyone's session (an admin's `request system logout session N`).
    pub fn logout(&mut self, session: u64) -> Result<()> {
        self.call(move |mut c| async move { c.logout(SessionRef { session }).await })
            .map(|_| ())
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

    /// What commit `index` (0: the last) changed, as `set` / `delete` lines.
    pub fn commit_changes(&mut self, index: u32) -> Result<Vec<String>> {
        let request = CommitChangesRequest { index };
        self.call(move |mut c| async move { c.commit_changes(request).await })
            .map(|l| l.lines)
    }

    /// The candidate's changes since it started, or against commit `rollback` of history.
    pub fn compare(&mut self, format: Format, rollback: Option<u32>) -> Result<Vec<String>> {
        self.compare_commits(format, rollback, None)
    }

    /// `compare`, with `compared` (commit N of history) in the candidate's place.
    pub fn compare_commits(
        &mut self,
        format: Format,
        rollback: Option<u32>,
        compared: Option<u32>,
    ) -> Result<Vec<String>> {
        let request = CompareRequest {
            session: self.session,
            format: format as i32,
            rollback,
            compared,
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
            inactive: false,
        };
        self.call(move |mut c| async move { c.get(request).await })
            .map(|r| r.text)
    }

    /// The configuration at `path` as written (`show`): inactive nodes in place, their
    /// paths in the reply.
    pub fn get_written(&mut self, datastore: Datastore, path: &str) -> Result<GetReply> {
        let request = GetRequest {
            session: self.session,
            datastore: datastore as i32,
            path: path.to_string(),
            format: Format::Json as i32,
            with_defaults: false,
            inactive: true,
        };
        self.call(move |mut c| async move { c.get(request).await })
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

    /// The newest `last` records of the audit.
    pub fn audit(&mut self, last: u32) -> Result<Vec<AuditRecord>> {
        self.call(move |mut c| async move { c.audit(AuditRequest { last }).await })
            .map(|r| r.records)
    }

    /// efbd's newest `max` events (0: every one it keeps) of `kinds` (kinds or groups of
    /// kinds; empty: all), oldest first.
    pub fn recent_events(&mut self, max: u32, kinds: Vec<String>) -> Result<Vec<LogEvent>> {
        let request = RecentEventsRequest { max, kinds };
        self.call(move |mut c| async move { c.recent_events(request).await })
            .map(|r| r.events)
    }

    /// Calls `on_event` with each event of `kinds` as efbd emits it, in the background,
    /// for as long as this client lives: when efbd restarts, the watch starts again.
    pub fn watch_events(&self, kinds: Vec<String>, on_event: impl Fn(LogEvent) + Send + 'static) {
        let mut client = self.inner.clone();
        self.runtime.spawn(async move {
            loop {
                let request = RecentEventsRequest {
                    max: 0,
                    kinds: kinds.clone(),
                };
                if let Ok(reply) = client.watch_events(request).await {
                    let mut events = reply.into_inner();
                    while let Ok(Some(event)) = events.message().await {
                        on_event(event);
                    }
                }
                tokio::time::sleep(WATCH_RETRY).await;
            }
        });
    }

    /// `clear ... statistics`: the counters of `names` (none: all) count from zero again;
    /// the names cleared.
    pub fn clear_statistics(&mut self, what: Counted, names: Vec<String>) -> Result<Vec<String>> {
        let request = ClearStatisticsRequest {
            what: what as i32,
            names,
        };
        self.call(move |mut c| async move { c.clear_statistics(request).await })
            .map(|r| r.cleared)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tcp_setup_says_which_option_is_wrong_before_connecting() {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let setup = |login: Login| {
            runtime
                .block_on(tls_channel("127.0.0.1", "1", &login))
                .unwrap_err()
        };
        assert!(matches!(setup(Login::default()), TcpSetupError::NoCa));
        let missing = Login {
            ca: Some("/nonexistent/ca.pem".into()),
            ..Login::default()
        };
        let err = setup(missing);
        assert!(matches!(err, TcpSetupError::Unreadable { .. }), "{err}");
        assert!(
            err.to_string()
                .starts_with("cannot read /nonexistent/ca.pem: ")
        );
        assert!(matches!(
            metadata("--user", "ada\nlovelace"),
            Err(TcpSetupError::NotAscii { what: "--user" })
        ));
    }

    #[test]
    fn connect_names_a_socket_path_or_a_tcp_address() {
        let unix = |p: &str| Address::Unix(PathBuf::from(p));
        let tcp = |host: &str, port: &str| Address::Tcp {
            host: host.to_string(),
            port: port.to_string(),
        };
        assert_eq!(
            Address::parse("datastore/efbd.sock"),
            unix("datastore/efbd.sock")
        );
        assert_eq!(
            Address::parse("unix:/run/efbd/efbd.sock"),
            unix("/run/efbd/efbd.sock")
        );
        assert_eq!(
            Address::parse("/tmp/a:b/efbd.sock"),
            unix("/tmp/a:b/efbd.sock")
        );
        assert_eq!(Address::parse("efbd.sock"), unix("efbd.sock"));
        assert_eq!(Address::parse("balancer:50051"), tcp("balancer", "50051"));
        assert_eq!(
            Address::parse("https://10.0.0.1:50051"),
            tcp("10.0.0.1", "50051")
        );
        assert_eq!(Address::parse("[::1]:50051"), tcp("::1", "50051"));
    }
}
